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

import datetime
import os
from typing import Any

from ansible.plugins.action import ActionBase
from ansible_collections.kubernetes.core.plugins.module_utils.args_common import AUTH_ARG_SPEC
from ansible_collections.modelplane.serving.plugins.module_utils.servingstack import kubeclient
from ansible_collections.modelplane.serving.plugins.module_utils.servingstack import status as stack_status
from ansible_collections.modelplane.serving.plugins.module_utils.servingstack.schema import API_VERSION, KIND

MODULE = "modelplane.serving.servingstack_status_update"


class ActionModule(ActionBase):
    TRANSFERS_FILES = False

    def run(self, tmp: Any = None, task_vars: dict[str, Any] | None = None) -> dict[str, Any]:
        result = super().run(tmp, task_vars)
        del tmp  # unused
        # The task's arguments include its module_defaults (group/modelplane.serving.servingstack).
        options = self.validate_argument_spec({**AUTH_ARG_SPEC, **stack_status.UPDATE_OPTIONS})[0].validated_parameters
        task_environment: dict[str, Any] = {}
        self._compute_environment_string(task_environment)
        environ = {**os.environ, **{key: str(value) for key, value in task_environment.items()}}
        target = kubeclient.controller_target({name: options[name] for name in AUTH_ARG_SPEC}, environ)
        if target is not None:
            try:
                client = kubeclient.connect(*target, environ=environ)
                found = kubeclient.read(client, {"apiVersion": API_VERSION, "kind": KIND,
                                                 "metadata": {"name": options["name"],
                                                              "namespace": options["namespace"]}})
            except kubeclient.KubeReadError:
                found = None  # the module reads again, and says what is wrong
            if found is not None:
                now = datetime.datetime.now(datetime.timezone.utc).strftime("%Y-%m-%dT%H:%M:%SZ")  # noqa: UP017
                update, patch = stack_status.status_update(dict(found.get("status") or {}), options, now,
                                                           diff=bool(self._play_context.diff))
                if not patch:
                    return {**result, **update}
        result.update(self._execute_module(module_name=MODULE, module_args=dict(self._task.args),
                                           task_vars=task_vars))
        return result
