# Copyright 2026 The modelplane.serving authors
# Apache License 2.0 (see LICENSE)
"""Filter ordering plan entries for teardown, from the components table alone."""

from __future__ import annotations

from typing import Any

from ansible.errors import AnsibleFilterError
from ansible_collections.modelplane.serving.plugins.module_utils.servingstack import teardown


def servingstack_teardown_order(entries: list[dict[str, Any]]) -> list[dict[str, Any]]:
    """Plan entries (``servingstack_spec``'s ``plan`` or ``prune``) in teardown order: the components requests
    enter through first (the table's ``ingress``), then the rest in reverse install order."""
    by_name = {entry["name"]: entry for entry in entries or []}
    try:
        return [by_name[name] for name in teardown.teardown_order(by_name)]
    except ValueError as error:
        raise AnsibleFilterError(f"servingstack_teardown_order: {error}") from None


class FilterModule:
    """modelplane.serving teardown filter."""

    def filters(self) -> dict[str, Any]:
        return {"servingstack_teardown_order": servingstack_teardown_order}
