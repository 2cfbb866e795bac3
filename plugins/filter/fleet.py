# Copyright 2026 The modelplane.serving authors
# Apache License 2.0 (see LICENSE)
"""Filters for a fleet: which hosts are its clusters, one status summary per ServingStack (status.yml), failures on
one line."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from ansible_collections.modelplane.serving.plugins.module_utils.servingstack import status


def servingstack_cluster_hosts(groups: Mapping[str, Any], pattern: str | None = None) -> str:
    """The host pattern of the clusters a playbook converges: ``pattern`` (-e servingstack_hosts) if given, else every
    ServingStack of the inventory plugin (its group ``servingstacks``), else localhost (one spec); never a lane host
    an earlier play added (group ``servingstack_lanes``, roles/servingstack/tasks/handoff.yml)."""
    chosen = pattern or ("servingstacks" if "servingstacks" in groups else "localhost")
    return f"{chosen}:!servingstack_lanes" if "servingstack_lanes" in groups else chosen


def servingstack_status_summary(gateway_status: dict[str, Any] | None, conditions: list[dict[str, Any]] | None = None,
                                error: str | None = None) -> dict[str, Any]:
    """address, ca_fingerprint, ready and error of one ServingStack (see status.summary)."""
    return status.summary(gateway_status, conditions, error or None)


def servingstack_status_lines(summaries: dict[str, dict[str, Any]]) -> list[str]:
    """The lines status.yml prints, one per ServingStack (host name -> its summary), in host order."""
    return [status.summary_line(name, found) for name, found in summaries.items()]


def servingstack_task_error(message: Any) -> str:
    """A failed task's message on one line, without the layers Ansible wraps around a lookup's error."""
    return status.task_error(message)


class FilterModule:
    def filters(self) -> dict[str, Any]:
        return {
            "servingstack_cluster_hosts": servingstack_cluster_hosts,
            "servingstack_status_summary": servingstack_status_summary,
            "servingstack_status_lines": servingstack_status_lines,
            "servingstack_task_error": servingstack_task_error,
        }
