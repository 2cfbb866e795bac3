# Copyright 2026 The modelplane.serving authors
# Apache License 2.0 (see LICENSE)
"""What ``servingstack_spec`` returns for a document, shared by its module and its action plugin."""

from __future__ import annotations

from typing import Any

from ansible_collections.modelplane.serving.plugins.module_utils.servingstack import plan, schedule, spec
from ansible_collections.modelplane.serving.plugins.module_utils.servingstack.errors import Problem, quote
from ansible_collections.modelplane.serving.plugins.module_utils.servingstack.status import INVALID_SPEC as PREFIX


def failure_message(problems: list[Problem]) -> str:
    """``invalid ServingStack:`` then one ``- path: message`` line per problem."""
    return PREFIX + "".join(f"\n- {problem}" for problem in problems)


def outcome(document: object, problems: list[Problem]) -> dict[str, Any]:
    """The result for ``document`` (read with ``problems``): ``failed``/``msg``/``errors`` or the spec and plan.

    ``warnings`` lists one line per ignored field and one per accepted but unwise value (``<path>: <value>
    <why>``); the caller reports them the way it reports warnings.
    """
    if problems:
        return {"failed": True, "msg": failure_message(problems), "errors": [problem.as_dict() for problem in problems],
                "ignored": [], "warnings": []}
    validation = spec.validate(document)
    warnings = [f"{item['path']}: {quote(item['value'])} is ignored ({item['reason']})" for item in validation.ignored]
    warnings += [str(problem) for problem in validation.warnings]
    if validation.errors:
        refused = {"failed": True, "msg": failure_message(validation.errors),
                   "errors": [problem.as_dict() for problem in validation.errors], "ignored": validation.ignored,
                   "warnings": warnings}
        # A live ServingStack's generation, for the status that says why it was refused.
        generation = ((document.get("metadata") if isinstance(document, dict) else None) or {}).get("generation")
        return {**refused, "generation": generation} if isinstance(generation, int) else refused
    manifest = validation.manifest
    components = plan.build_plan(manifest["spec"])
    return {"changed": False, "servingstack": manifest, "plan": components, "lanes": schedule.lanes(components),
            "prune": plan.prune_plan(manifest["spec"]), "ignored": validation.ignored, "warnings": warnings}
