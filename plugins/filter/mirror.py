# Copyright 2026 The modelplane.serving authors
# Apache License 2.0 (see LICENSE)
"""Filters that point a ServingStack plan's charts at a chart mirror (servingstack_chart_mirror)."""

from __future__ import annotations

from typing import Any

from ansible.errors import AnsibleFilterError
from ansible_collections.modelplane.serving.plugins.module_utils.servingstack import mirror
from ansible_collections.modelplane.serving.plugins.module_utils.servingstack.components import COMPONENTS

CHARTS = tuple(chart.name for component in COMPONENTS for chart in component.charts)


def _parsed(setting: Any) -> mirror.Mirror | None:
    try:
        return mirror.parse(setting, CHARTS)
    except mirror.MirrorError as error:
        raise AnsibleFilterError("; ".join(error.problems)) from None


def servingstack_chart_mirror_problems(setting: Any) -> list[str]:
    """Every problem of the mirror setting, each naming its key (none when it is fine or empty)."""
    return mirror.problems(setting, CHARTS)


def servingstack_mirrored_releases(releases: list[dict[str, Any]], setting: Any) -> list[dict[str, Any]]:
    """A component's release list with each chart taken from the mirror setting."""
    return mirror.apply_releases(releases or [], _parsed(setting))


def servingstack_chart_logins(setting: Any) -> list[dict[str, Any]]:
    """The mirror's logins (helm repo add / registry login), credentials included: use under no_log."""
    return mirror.logins(_parsed(setting))


class FilterModule:
    """modelplane.serving chart mirror filters."""

    def filters(self) -> dict[str, Any]:
        return {
            "servingstack_chart_mirror_problems": servingstack_chart_mirror_problems,
            "servingstack_chart_logins": servingstack_chart_logins,
            "servingstack_mirrored_releases": servingstack_mirrored_releases,
        }
