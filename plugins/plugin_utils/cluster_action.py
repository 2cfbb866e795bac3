# Copyright 2026 The modelplane.serving authors
# Apache License 2.0 (see LICENSE)
"""The base of this collection's action plugins that read a cluster on the controller (servingstack_k8s,
servingstack_secrets, servingstack_status_update): the environment a task's module would run with, and whether a
read here reaches the cluster that module would."""

from __future__ import annotations

import os
from typing import Any

from ansible.plugins.action import ActionBase
from ansible_collections.kubernetes.core.plugins.module_utils.args_common import AUTH_ARG_SPEC
from ansible_collections.modelplane.serving.plugins.module_utils.servingstack import kubeclient

# The strategies load an action plugin's class in Ansible's main process, before its tasks fork workers.
kubeclient.preload()


class ClusterReadAction(ActionBase):
    TRANSFERS_FILES = False

    def _task_environ(self) -> dict[str, str]:
        """The environment the task's module would get: the controller's, with the task's ``environment``."""
        task_environment: dict[str, Any] = {}
        self._compute_environment_string(task_environment)
        return {**os.environ, **{key: str(value) for key, value in task_environment.items()}}

    def _controller_target(self, options: dict[str, Any]) -> tuple[tuple[Any, str] | None, dict[str, str]]:
        """(``kubeclient.controller_target`` for the connection options in ``options``, the task's environment)."""
        environ = self._task_environ()
        return kubeclient.controller_target({name: options.get(name) for name in AUTH_ARG_SPEC}, environ), environ
