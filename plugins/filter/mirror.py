# Copyright 2026 The modelplane.serving authors
# Apache License 2.0 (see LICENSE)
"""Filter checking a chart mirror setting (servingstack_chart_mirror)."""

from __future__ import annotations

from typing import Any

from ansible_collections.modelplane.serving.plugins.module_utils.servingstack import mirror
from ansible_collections.modelplane.serving.plugins.module_utils.servingstack.components import COMPONENTS

CHARTS = tuple(chart.name for component in COMPONENTS for chart in component.charts)


def servingstack_chart_mirror_problems(setting: Any) -> list[str]:
    """Every problem of the mirror setting, each naming its key (none when it is fine or empty)."""
    return mirror.problems(setting, CHARTS)


class FilterModule:
    """modelplane.serving chart mirror filter."""

    def filters(self) -> dict[str, Any]:
        return {
            "servingstack_chart_mirror_problems": servingstack_chart_mirror_problems,
        }
