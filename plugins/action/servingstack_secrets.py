# Copyright 2026 The modelplane.serving authors
# Apache License 2.0 (see LICENSE)
"""Action plugin for servingstack_secrets: read the Secrets on the controller, or run the module.

When only a kubeconfig and context locate the management cluster (``kubeclient.controller_target``), the Secrets
are read in the controller's own process, which already holds the kubernetes client: no module process, which
would import it again. With any other connection option the module reads them, honouring every option.
"""

from __future__ import annotations

from typing import Any

from ansible_collections.kubernetes.core.plugins.module_utils.args_common import AUTH_ARG_SPEC
from ansible_collections.modelplane.serving.plugins.module_utils.servingstack import kubeclient
from ansible_collections.modelplane.serving.plugins.module_utils.servingstack.credentials import (
    SECRETS_OPTIONS,
    secret_refs,
)
from ansible_collections.modelplane.serving.plugins.plugin_utils.cluster_action import ClusterReadAction

MODULE = "modelplane.serving.servingstack_secrets"


class ActionModule(ClusterReadAction):
    def run(self, tmp: Any = None, task_vars: dict[str, Any] | None = None) -> dict[str, Any]:
        result = super().run(tmp, task_vars)
        del tmp  # unused
        # The task's arguments include its module_defaults (group/modelplane.serving.servingstack).
        options = self.validate_argument_spec({**AUTH_ARG_SPEC, **SECRETS_OPTIONS})[0].validated_parameters
        target, environ = self._controller_target(options)
        if target is None:
            result.update(self._execute_module(module_name=MODULE, module_args=dict(self._task.args),
                                               task_vars=task_vars))
            return result
        try:
            refs = secret_refs(options["refs"])
            client = kubeclient.connect(*target, environ=environ)
            found = [kubeclient.read(client, {"apiVersion": "v1", "kind": "Secret",
                                              "metadata": {"name": name, "namespace": namespace}})
                     for name, namespace in refs]
        except (ValueError, kubeclient.KubeReadError) as error:
            return {**result, "failed": True, "msg": f"servingstack_secrets: {error}"}
        return {**result, "changed": False, "secrets": found}
