# Copyright 2026 The modelplane.serving authors
# Apache License 2.0 (see LICENSE)
"""Action plugin for servingstack_private_dir: the directory is on the controller, so it is made and removed in the
controller's own process instead of by a shipped module. The options are checked against the module's argument spec.
"""

from __future__ import annotations

from typing import Any

from ansible.plugins.action import ActionBase
from ansible_collections.modelplane.serving.plugins.module_utils.servingstack import target


class ActionModule(ActionBase):
    TRANSFERS_FILES = False

    def run(self, tmp: Any = None, task_vars: dict[str, Any] | None = None) -> dict[str, Any]:
        result = super().run(tmp, task_vars)
        _validation, options = self.validate_argument_spec(argument_spec=target.PRIVATE_DIR_OPTIONS,
                                                           **target.PRIVATE_DIR_RULES)
        try:
            result.update(target.private_dir(options["state"], options["path"]))
        except target.TargetError as error:
            return {**result, "failed": True, "msg": str(error)}
        return {**result, "changed": False}
