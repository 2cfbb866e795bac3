# Copyright 2026 The modelplane.serving authors
# Apache License 2.0 (see LICENSE)
"""The decisions of a converge (roles/servingstack): thin filters over module_utils/servingstack/converge.py."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from ansible_collections.modelplane.serving.plugins.module_utils.servingstack import converge

try:
    from ansible_collections.kubernetes.core.plugins.module_utils.k8s.waiter import RESOURCE_PREDICATES
    from kubernetes.dynamic.resource import ResourceInstance
except ImportError:  # without kubernetes.core or the kubernetes client, every workload is waited for
    RESOURCE_PREDICATES, ResourceInstance = {}, None


def ready(workload: Mapping[str, Any]) -> bool:
    """Whether kubernetes.core's waiter would find ``workload`` (a Deployment, StatefulSet or DaemonSet) ready."""
    predicate = RESOURCE_PREDICATES.get(workload.get("kind"))
    if predicate is None or ResourceInstance is None:
        return False
    try:
        return bool(predicate(ResourceInstance(None, dict(workload))))
    except (AttributeError, KeyError, TypeError):  # a status it cannot read yet: the wait itself decides
        return False


def workloads(found: Any, outcomes: Any) -> list[dict[str, Any]]:
    return converge.workloads(found, outcomes, ready)


class FilterModule:
    def filters(self) -> dict[str, Any]:
        return {
            "servingstack_needs": converge.needs,
            "servingstack_outcome": converge.outcome,
            "servingstack_failed": converge.failed_components,
            "servingstack_failure": converge.failure,
            "servingstack_failure_summary": converge.summary,
            "servingstack_pending": converge.waiting_for,
            "servingstack_workloads": workloads,
            "servingstack_readiness": converge.with_readiness,
            "servingstack_prune_queries": converge.prune_queries,
            "servingstack_prune_found": converge.installed,
            "servingstack_teardown": converge.teardown,
        }
