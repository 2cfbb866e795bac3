# Copyright 2026 The modelplane.serving authors
# Apache License 2.0 (see LICENSE)
"""Action plugin for servingstack_status_update: read the ServingStack on the controller, run the module to write.

Most runs find the status as it should be (a re-run with nothing changed): then the module, a process of its own
that imports the kubernetes client, does not run. The status is read on the controller only when a kubeconfig
(and context) alone says where the management cluster is; with any other connection option (a host and token,
client certificates, a proxy, certificate checks turned off) the module reads and writes as before. The logic is
``module_utils/servingstack/status.py``'s ``status_update``, shared with the module.
"""

from __future__ import annotations

from typing import Any

from ansible_collections.kubernetes.core.plugins.module_utils.args_common import AUTH_ARG_SPEC
from ansible_collections.modelplane.serving.plugins.module_utils.servingstack import kubeclient
from ansible_collections.modelplane.serving.plugins.module_utils.servingstack import status as stack_status
from ansible_collections.modelplane.serving.plugins.module_utils.servingstack.schema import API_VERSION, KIND
from ansible_collections.modelplane.serving.plugins.plugin_utils.cluster_action import ClusterReadAction

MODULE = "modelplane.serving.servingstack_status_update"


class ActionModule(ClusterReadAction):
    def run(self, tmp: Any = None, task_vars: dict[str, Any] | None = None) -> dict[str, Any]:
        result = super().run(tmp, task_vars)
        del tmp  # unused
        # The task's arguments include its module_defaults (group/modelplane.serving.servingstack).
        options = self.validate_argument_spec({**AUTH_ARG_SPEC, **stack_status.UPDATE_OPTIONS})[0].validated_parameters
        target, environ = self._controller_target(options)
        if target is not None:
            try:
                client = kubeclient.connect(*target, environ=environ)
                found = kubeclient.read(client, {"apiVersion": API_VERSION, "kind": KIND,
                                                 "metadata": {"name": options["name"],
                                                              "namespace": options["namespace"]}})
            except kubeclient.KubeReadError:
                found = None  # the module reads again, and says what is wrong
            if found is not None:
                update, patch = stack_status.status_update(dict(found.get("status") or {}), options, stack_status.now(),
                                                           diff=bool(self._play_context.diff))
                if not patch:
                    return {**result, **update}
        result.update(self._execute_module(module_name=MODULE, module_args=dict(self._task.args),
                                           task_vars=task_vars))
        return result
