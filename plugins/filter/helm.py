# Copyright 2026 The modelplane.serving authors
# Apache License 2.0 (see LICENSE)
"""Filter giving a component's Helm values by chart."""

from __future__ import annotations

from typing import Any

from ansible.errors import AnsibleFilterError
from ansible_collections.modelplane.serving.plugins.module_utils.servingstack import ownership


def servingstack_chart_values(own: Any, extra: Any, releases: list[dict[str, Any]],
                              source: str = "values") -> dict[str, Any]:
    """Helm values by chart name for a component's releases: the role's own (``own``, read from ``source``) with
    ``extra`` (the user's ``component_values``) merged over them recursively."""
    try:
        return ownership.chart_values(own, extra, releases or [], source)
    except ownership.ValuesError as error:
        raise AnsibleFilterError(str(error)) from None


class FilterModule:
    """modelplane.serving Helm values filter."""

    def filters(self) -> dict[str, Any]:
        return {"servingstack_chart_values": servingstack_chart_values}
