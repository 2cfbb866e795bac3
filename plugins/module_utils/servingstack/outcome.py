# Copyright 2026 The modelplane.serving authors
# Apache License 2.0 (see LICENSE)
"""What ``servingstack_spec`` (its action plugin) returns for a document."""

from __future__ import annotations

from dataclasses import asdict
from typing import Any

from ansible_collections.modelplane.serving.plugins.module_utils.servingstack import plan, spec
from ansible_collections.modelplane.serving.plugins.module_utils.servingstack.errors import Problem, quote
from ansible_collections.modelplane.serving.plugins.module_utils.servingstack.status import INVALID_SPEC as PREFIX


def outcome(document: object, problems: list[Problem]) -> dict[str, Any]:
    """The result for ``document`` (read with ``problems``): ``failed``, ``msg`` (``invalid ServingStack:`` then
    one ``- <path>: <message>`` line per problem) and ``errors``, or the spec and plan.

    ``warnings`` lists one line per ignored field and one per accepted but unwise value (``<path>: <value>
    <why>``); the caller reports them the way it reports warnings.
    """
    validation = spec.Validation(None, problems) if problems else spec.validate(document)
    warnings = [f"{item['path']}: {quote(item['value'])} is ignored ({item['reason']})" for item in validation.ignored]
    warnings += [str(problem) for problem in validation.warnings]
    if validation.errors:
        refused = {"failed": True, "msg": PREFIX + "".join(f"\n- {problem}" for problem in validation.errors),
                   "errors": [asdict(problem) for problem in validation.errors], "ignored": validation.ignored,
                   "warnings": warnings}
        # A live ServingStack's generation, for the status that says why it was refused.
        metadata = document.get("metadata") if isinstance(document, dict) else None
        generation = metadata.get("generation") if isinstance(metadata, dict) else None
        return {**refused, "generation": generation} if isinstance(generation, int) else refused
    manifest = validation.manifest
    components = plan.build_plan(manifest["spec"])
    return {"changed": False, "servingstack": manifest, "plan": components,
            "prune": plan.prune_plan(manifest["spec"]), "ignored": validation.ignored, "warnings": warnings}
