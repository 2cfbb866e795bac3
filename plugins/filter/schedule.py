# Copyright 2026 The modelplane.serving authors
# Apache License 2.0 (see LICENSE)
"""Filters of the parallel converge of playbooks/site.yml: stages of lanes (module_utils/servingstack/schedule.py)."""

from __future__ import annotations

from typing import Any

from ansible_collections.modelplane.serving.plugins.module_utils.servingstack import schedule


def servingstack_lane_hosts(lanes: list[dict[str, Any]], plan: list[dict[str, Any]],
                            cluster: str) -> list[dict[str, Any]]:
    """The inventory hosts that converge one cluster's lanes (servingstack_spec's ``lanes``) in site.yml."""
    return schedule.lane_hosts(lanes, plan, cluster)


def servingstack_unmet_needs(outcomes: dict[str, Any], needs: list[str]) -> list[str]:
    """The needs of a component that have not converged (or previewed) by the recorded outcomes."""
    return schedule.unmet_needs(dict(outcomes or {}), list(needs or []))


class FilterModule:
    def filters(self) -> dict[str, Any]:
        return {
            "servingstack_lane_hosts": servingstack_lane_hosts,
            "servingstack_unmet_needs": servingstack_unmet_needs,
        }
