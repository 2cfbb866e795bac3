# Copyright 2026 The modelplane.serving authors
# Apache License 2.0 (see LICENSE)
"""Filters the helm_release role uses to compare the cluster's Helm releases with its own."""

from __future__ import annotations

from typing import Any

from ansible_collections.modelplane.serving.plugins.module_utils.servingstack import releases


def helm_release_records(secrets: list[dict[str, Any]]) -> list[dict[str, Any]]:
    """Helm release Secrets (as k8s_info returns them) -> one record per release, latest revision."""
    return releases.records(secrets)


def helm_release_changes(entries: list[dict[str, Any]], values: dict[str, Any],
                         records: list[dict[str, Any]]) -> dict[str, Any]:
    """``{todo, conflicts}``: our releases that need helm, and foreign releases of the same charts."""
    return releases.changes(entries, values or {}, records or [])


class FilterModule:
    """modelplane.serving Helm release filters."""

    def filters(self) -> dict[str, Any]:
        return {
            "helm_release_records": helm_release_records,
            "helm_release_changes": helm_release_changes,
        }
