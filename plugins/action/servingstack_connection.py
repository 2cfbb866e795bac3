# Copyright 2026 The modelplane.serving authors
# Apache License 2.0 (see LICENSE)
"""Action plugin for servingstack_connection: read the target's kubeconfig on the controller.

The kubeconfig, the certificate files and the kubernetes.core tasks that read them are all on the controller
(ServingStack hosts use the local connection), so the options are made in the controller's own process instead of
shipping a module (half a second of every run, more on a busy controller). The options are checked first, against
the module's own argument spec.
"""

from __future__ import annotations

from typing import Any

from ansible.plugins.action import ActionBase
from ansible_collections.modelplane.serving.plugins.module_utils.servingstack import target


class ActionModule(ActionBase):
    TRANSFERS_FILES = False

    def run(self, tmp: Any = None, task_vars: dict[str, Any] | None = None) -> dict[str, Any]:
        result = super().run(tmp, task_vars)
        _validation, options = self.validate_argument_spec(argument_spec=target.CONNECTION_OPTIONS)
        try:
            result.update(target.connection(options["kubeconfig"], options["context"], options["dest"]))
        except target.TargetError as error:
            return {**result, "failed": True, "msg": str(error)}
        return {**result, "changed": False}
