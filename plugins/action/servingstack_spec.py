# Copyright 2026 The modelplane.serving authors
# Apache License 2.0 (see LICENSE)
"""Action plugin for servingstack_spec: validate every ServingStack on the controller.

Validating a ServingStack reads no cluster, so it runs in the controller's own process, against the collection's
CRD (crds/), instead of shipping the module to the host (about half a second of every run). Only ``name`` (a live
ServingStack read from the management cluster) runs the module, with the kubernetes.core options, to read it; it
is validated here as a file is. The options are checked first, against the module's own argument spec.
"""

from __future__ import annotations

from typing import Any

from ansible.plugins.action import ActionBase
from ansible_collections.modelplane.serving.plugins.module_utils.servingstack import source, spec_options
from ansible_collections.modelplane.serving.plugins.module_utils.servingstack.outcome import outcome

MODULE = "modelplane.serving.servingstack_spec"


class ActionModule(ActionBase):
    TRANSFERS_FILES = False

    def run(self, tmp: Any = None, task_vars: dict[str, Any] | None = None) -> dict[str, Any]:
        result = super().run(tmp, task_vars)
        # Fails the task (AnsibleActionFail) with AnsibleModule's own message for a wrong option.
        _validation, options = self.validate_argument_spec(argument_spec=spec_options.argument_spec(),
                                                           **spec_options.RULES)
        if options["name"] is not None:
            # The task's own arguments: the module applies its defaults and environment fallbacks on the host.
            read = self._execute_module(module_name=MODULE, module_args=dict(self._task.args), task_vars=task_vars)
            live = read.pop(spec_options.LIVE, None)
            result.update(read)
            if live is None:  # not read (no such ServingStack, no ServingStack API, no cluster): the module's failure
                return result
            found = outcome(live, [])
        elif options["src"] is not None:  # a controller path, ~ and $VARS already expanded
            found = outcome(*source.load_file(options["src"]))
        elif isinstance(options["definition"], str):
            found = outcome(*source.load_yaml(options["definition"], "definition"))
        else:
            found = outcome(options["definition"], [])
        warnings = found.pop("warnings")
        if warnings:
            result["warnings"] = [*result.get("warnings", ()), *warnings]
        result.update(found)
        return result
