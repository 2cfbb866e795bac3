# Copyright 2026 The modelplane.serving authors
# Apache License 2.0 (see LICENSE)
"""Action plugin for servingstack_spec: validate a file or definition on the controller.

Validating a ServingStack reads no cluster, so it runs in the controller's own process instead of
shipping the module to the host (about half a second of every run). Only ``name`` (a live
ServingStack read from the management cluster) runs the module, with the kubernetes.core options.
"""

from __future__ import annotations

import os
from typing import Any

from ansible.plugins.action import ActionBase
from ansible_collections.kubernetes.core.plugins.module_utils.args_common import AUTH_ARG_SPEC
from ansible_collections.modelplane.serving.plugins.module_utils.servingstack import source
from ansible_collections.modelplane.serving.plugins.module_utils.servingstack.outcome import outcome

MODULE = "modelplane.serving.servingstack_spec"
SOURCES = ("definition", "src", "name")


def source_problem(args: dict[str, Any]) -> str | None:
    """The message AnsibleModule would give for the source options, or None when they are fine."""
    given = [option for option in SOURCES if args.get(option) is not None]
    if len(given) > 1:
        return f"parameters are mutually exclusive: {'|'.join(SOURCES)}"
    if not given:
        return f"one of the following is required: {', '.join(SOURCES)}"
    if args.get("namespace") is not None and given != ["name"]:
        return "namespace is used only with name; a manifest names its own namespace"
    return None


def read_document(args: dict[str, Any]) -> tuple[object, list]:
    """The document from ``src`` (a controller path, ~ and $VARS expanded as for a module path) or ``definition``."""
    if args.get("src") is not None:
        return source.load_file(os.path.expanduser(os.path.expandvars(str(args["src"]))))
    definition = args["definition"]
    if isinstance(definition, str):
        return source.load_yaml(definition, "definition")
    return definition, []


class ActionModule(ActionBase):
    TRANSFERS_FILES = False
    # The module's options: unknown ones fail here as the module would fail them.
    _VALID_ARGS = (frozenset(AUTH_ARG_SPEC) | frozenset({*SOURCES, "namespace"})
                   | frozenset(alias for option in AUTH_ARG_SPEC.values() for alias in option.get("aliases", ())))

    def run(self, tmp: Any = None, task_vars: dict[str, Any] | None = None) -> dict[str, Any]:
        result = super().run(tmp, task_vars)
        args = dict(self._task.args)
        if args.get("name") is not None:
            result.update(self._execute_module(module_name=MODULE, module_args=args, task_vars=task_vars))
            return result
        problem = source_problem(args)
        if problem:
            result.update(failed=True, msg=problem)
            return result
        found = outcome(*read_document(args))
        warnings = found.pop("warnings")
        if warnings:
            result["warnings"] = warnings
        result.update(found)
        return result
