# Copyright 2026 The modelplane.serving authors
# Apache License 2.0 (see LICENSE)
"""Filters of the parallel converge of playbooks/site.yml: stages of lanes (module_utils/servingstack/schedule.py)."""

from __future__ import annotations

from typing import Any

from ansible_collections.modelplane.serving.plugins.module_utils.servingstack import schedule


def servingstack_not_converged(outcomes: dict[str, Any], plan: list[dict[str, Any]]) -> dict[str, str]:
    """The plan's components that did not converge, each with why (the converge's recorded outcomes)."""
    return schedule.not_converged(dict(outcomes or {}), plan)


class FilterModule:
    def filters(self) -> dict[str, Any]:
        return {
            "servingstack_not_converged": servingstack_not_converged,
        }
