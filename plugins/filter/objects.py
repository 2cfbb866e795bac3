# Copyright 2026 The modelplane.serving authors
# Apache License 2.0 (see LICENSE)
"""Filters comparing the objects a role wants with the cluster's copies."""

from __future__ import annotations

from typing import Any

from ansible.errors import AnsibleFilterError
from ansible_collections.modelplane.serving.plugins.module_utils.servingstack import drift, k8s_objects


def servingstack_drifted(desired: list[dict[str, Any]], live: list[dict[str, Any] | None],
                         apply: bool = False) -> list[dict[str, Any]]:
    """The desired objects missing from the cluster or differing from it (``live`` from servingstack_objects).

    ``apply``: the objects are applied with ``kubernetes.core.k8s`` ``apply: true``, so what was
    last applied must match too.
    """
    try:
        return drift.drifted(list(desired or []), list(live or []), bool(apply))
    except ValueError as error:
        raise AnsibleFilterError(str(error)) from None


def servingstack_object_ref(obj: dict[str, Any]) -> dict[str, Any]:
    """``{apiVersion, kind, metadata: {name[, namespace]}}`` of an object: what a deletion needs."""
    return k8s_objects.ref(obj)


def servingstack_condition(obj: dict[str, Any] | None, condition: str) -> bool:
    """True when the object's status has ``condition`` with status "True" (for its current generation)."""
    return drift.condition_true(obj, condition)


class FilterModule:
    """modelplane.serving object filters."""

    def filters(self) -> dict[str, Any]:
        return {
            "servingstack_drifted": servingstack_drifted,
            "servingstack_object_ref": servingstack_object_ref,
            "servingstack_condition": servingstack_condition,
        }
