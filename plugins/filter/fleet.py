# Copyright 2026 The modelplane.serving authors
# Apache License 2.0 (see LICENSE)
"""Filters for a fleet: which hosts are its clusters, and one status summary per ServingStack (playbooks/status.yml)."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from ansible_collections.modelplane.serving.plugins.module_utils.servingstack import status


def servingstack_cluster_hosts(groups: Mapping[str, Any], pattern: str | None = None) -> str:
    """The host pattern of the clusters a playbook converges: ``pattern`` (-e servingstack_hosts) if given, else every
    ServingStack of the inventory plugin (its group ``servingstacks``), else localhost (one spec)."""
    return pattern or ("servingstacks" if "servingstacks" in groups else "localhost")


class FilterModule:
    def filters(self) -> dict[str, Any]:
        return {
            "servingstack_cluster_hosts": servingstack_cluster_hosts,
            "servingstack_status_summary": status.summary,
        }
