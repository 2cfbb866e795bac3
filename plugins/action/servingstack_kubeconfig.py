# Copyright 2026 The modelplane.serving authors
# Apache License 2.0 (see LICENSE)
"""Action plugin for servingstack_kubeconfig: a kubeconfig without a cloud identity is checked and written on the
controller, in the controller's own process, instead of by a shipped module (the file is on the controller either
way: the ServingStack hosts are local). With a cloud identity the module runs: it mints the first token and writes
the identity plugin. The options are checked first, against the module's own argument spec.
"""

from __future__ import annotations

from typing import Any

from ansible.plugins.action import ActionBase
from ansible_collections.modelplane.serving.plugins.module_utils.servingstack.cloud_identity import write_private
from ansible_collections.modelplane.serving.plugins.module_utils.servingstack.credentials import (
    KUBECONFIG_OPTIONS,
    KUBECONFIG_RULES,
    check_kubeconfig,
)

MODULE = "modelplane.serving.servingstack_kubeconfig"


class ActionModule(ActionBase):
    TRANSFERS_FILES = False

    def run(self, tmp: Any = None, task_vars: dict[str, Any] | None = None) -> dict[str, Any]:
        result = super().run(tmp, task_vars)
        del tmp  # unused
        _validation, options = self.validate_argument_spec(argument_spec=KUBECONFIG_OPTIONS, **KUBECONFIG_RULES)
        if options["identity_type"]:
            result.update(self._execute_module(module_name=MODULE, module_args=dict(self._task.args),
                                               task_vars=task_vars))
            return result
        try:
            check_kubeconfig(options["kubeconfig"], "kubeconfig")
            write_private(options["dest"], options["kubeconfig"])
        except (ValueError, OSError) as error:  # names the option or the file, never the kubeconfig
            return {**result, "failed": True, "msg": str(error)}
        return {**result, "changed": False, "dest": options["dest"], "authenticated_as": "kubeconfig"}
