# Copyright 2026 The modelplane.serving authors
# Apache License 2.0 (see LICENSE)
"""The decisions of one converge (roles/servingstack), each a small function its tasks call through a filter.

A converge keeps one mapping, the *outcomes*: component name -> ``{"state", "msg", "pending"}``. ``state`` is
``converged``, ``previewed`` (check mode installed nothing), ``failed`` or ``not attempted`` (a need did not
converge); ``msg`` says why when it is not converged; ``pending`` lists the releases installed without helm's
wait, whose workloads the converge waits for once at the end (``workloads``, ``with_readiness``).
"""

from __future__ import annotations

from collections.abc import Callable, Iterable, Mapping
from typing import Any

from ansible_collections.modelplane.serving.plugins.module_utils.servingstack.ownership import (
    RELEASE_NAME,
    RELEASE_NAMESPACE,
)

# The workloads helm's own --wait waits for, and kubernetes.core's waiter knows how to wait for.
WORKLOAD_KINDS = ("Deployment", "StatefulSet", "DaemonSet")
DONE = ("converged", "previewed")
NO_MESSAGE = "failed (see the failed task in the run's output)"

Outcomes = Mapping[str, Mapping[str, Any]]


def needs(entry: Mapping[str, Any], outcomes: Outcomes) -> dict[str, Any]:
    """``unmet``: the needs of the plan ``entry`` that did not converge (nor preview, in check mode), in its order:
    while there is one, the component is not attempted. ``previewed``: a need was only previewed (check mode), so
    its CRDs are not in the cluster for this component's objects."""
    state = {need: outcomes.get(need, {}).get("state") for need in entry.get("needs", [])}
    return {"unmet": [need for need in entry.get("needs", []) if state[need] not in DONE],
            "previewed": "previewed" in state.values()}


def failure(result: Mapping[str, Any] | None) -> str:
    """Why a failed task failed, on one line: a loop's first failed item's message (the loop's own says only "One
    or more items failed"), else the result's message."""
    result = result or {}
    items = [item for item in result.get("results") or [] if isinstance(item, Mapping) and item.get("failed")]
    for item in items:
        if item.get("msg"):
            return " ".join(str(item["msg"]).split())
    return " ".join(str(result.get("msg") or "").split()) or NO_MESSAGE


def pending_releases(helm: Mapping[str, Any] | None) -> list[dict[str, str]]:
    """The releases a component's helm task (its registered result, a loop over ``component_release``) installed or
    upgraded: ``{release, namespace}`` each, to wait for at the end when they were installed without helm's wait."""
    return [{"release": item["component_release"]["release"], "namespace": item["component_release"]["namespace"]}
            for item in (helm or {}).get("results") or [] if item.get("changed") and item.get("component_release")]


def outcome(outcomes: Outcomes, entry: Mapping[str, Any], unmet: Iterable[str] = (),
            helm: Mapping[str, Any] | None = None, failed: str | None = None,
            check_mode: bool = False, previewed: bool = False, waited: bool = True) -> dict:
    """``outcomes`` with the plan ``entry``'s: not attempted with ``unmet`` needs; failed with ``failed`` (why, as
    ``failure`` says it); else converged, or previewed in check mode when its releases would change or a need was
    only ``previewed``; unless ``waited`` (helm's wait), the releases its ``helm`` result installed are ``pending``."""
    unmet = list(unmet)
    if unmet:
        mine = {"state": "not attempted", "msg": f"not attempted: it needs {', '.join(unmet)}, which did not converge"}
    elif failed is not None:
        mine = {"state": "failed", "msg": failed or NO_MESSAGE}
    elif check_mode and (previewed or bool((helm or {}).get("changed"))):
        mine = {"state": "previewed", "msg": ""}
    else:
        mine = {"state": "converged", "msg": "", "pending": [] if check_mode or waited else pending_releases(helm)}
    return {**outcomes, entry["name"]: mine}


def failed_components(outcomes: Outcomes, plan: Iterable[Mapping[str, Any]]) -> dict[str, str]:
    """name -> why, in plan order, for every planned component that did not converge (one with no outcome did not
    run)."""
    found = {}
    for entry in plan:
        mine = outcomes.get(entry["name"], {"state": "missing", "msg": "did not run (see the run's output)"})
        if mine.get("state") not in DONE:
            found[entry["name"]] = mine.get("msg") or NO_MESSAGE
    return found


def summary(failed: Mapping[str, str], stopped: str = "", status_error: str = "") -> str:
    """The converge's last message: the components that did not converge, each with why, then why the converge
    stopped, then why its status could not be written, those that apply, joined by "; then "."""
    parts = []
    if failed:
        reasons = "; ".join(f"{name}: {why}" for name, why in failed.items())
        parts.append(f"{', '.join(failed)} did not converge: {reasons}")
    return "; then ".join(parts + [part for part in (stopped, status_error) if part])


def workloads(found: Iterable[Iterable[Mapping[str, Any]]], outcomes: Outcomes,
              ready: Callable[[Mapping[str, Any]], bool] = lambda workload: False) -> list[dict[str, Any]]:
    """The workloads to wait for at the end: the Deployments, StatefulSets and DaemonSets of each pending release, as
    ``{component, release, api_version, kind, name, namespace, ready}``. ``found``: the lists of those kinds labelled
    ``app.kubernetes.io/managed-by=Helm`` (servingstack_objects): helm labels every object it installs so, and
    annotates it with its release's name and namespace, which tell whose it is. ``ready``: whether a workload is ready
    already (kubernetes.core's waiter's test, bound by the filter), so that the wait skips it."""
    owner = {(pending["namespace"], pending["release"]): name
             for name, mine in outcomes.items() for pending in mine.get("pending") or []}
    chosen = []
    for listed in found:
        for workload in listed or []:
            metadata = workload.get("metadata") or {}
            annotations = metadata.get("annotations") or {}
            release = (annotations.get(RELEASE_NAMESPACE), annotations.get(RELEASE_NAME))
            if workload.get("kind") in WORKLOAD_KINDS and release in owner:
                chosen.append({"component": owner[release], "release": release[1],
                               "api_version": workload.get("apiVersion", "apps/v1"), "kind": workload["kind"],
                               "name": metadata.get("name", ""), "namespace": metadata.get("namespace", ""),
                               "ready": bool(ready(workload))})
    return chosen


def waiting_for(outcomes: Outcomes) -> list[dict[str, str]]:
    """Every release installed without helm's wait in this converge, ``{release, namespace}``, in outcome order."""
    return [pending for mine in outcomes.values() for pending in mine.get("pending") or []]


def with_readiness(outcomes: Outcomes, waits: Iterable[Mapping[str, Any]]) -> dict:
    """``outcomes`` after the one wait at the end: a component with a workload that did not become ready (``waits``:
    the results of kubernetes.core.k8s_info's wait over ``workloads``, each with its ``servingstack_workload``)
    fails, naming those workloads and why. The wait task registers with ``failed_when: false``, which sets every
    result's ``failed`` to false: a wait that timed out is told by its missing ``resources`` (the module failed
    before returning them), a workload that is gone by an empty list."""
    late: dict[str, list[str]] = {}
    for wait in waits:
        workload = wait.get("servingstack_workload") or {}
        if wait.get("skipped"):  # ready already
            continue
        if wait.get("failed") or not wait.get("resources"):
            why = " ".join(str(wait.get("msg") or "not found").split())
            late.setdefault(workload.get("component", ""), []).append(
                f"{workload.get('kind')} {workload.get('namespace')}/{workload.get('name')} ({why})")
    updated = {name: dict(mine) for name, mine in outcomes.items()}
    for name, which in late.items():
        updated[name] = {"state": "failed", "msg": "workloads not ready: " + ", ".join(which)}
    return updated


def installed(prune: Iterable[Mapping[str, Any]], found: Iterable[Iterable[Mapping[str, Any]]]) -> list[dict]:
    """The entries of ``prune`` (the other stack's components) that are installed: one of its releases has a release
    Secret, or, for a component without releases, its namespace exists. ``found``: what servingstack_objects read
    for each of ``prune_queries(prune)``, in that order. Where requests enter (``ingress``) first, else in ``prune``'s
    order."""
    prune = list(prune)
    releases: set[str] = set()
    namespaces: set[str] = set()
    found = list(found)
    for index, query in enumerate(prune_queries(prune)):
        for obj in (found[index] if index < len(found) else None) or []:
            metadata = obj.get("metadata") or {}
            if query["kind"] == "Secret":
                releases.add((metadata.get("labels") or {}).get("name", ""))
            else:
                namespaces.add(metadata.get("name", ""))
    chosen = [entry for entry in prune
              if any(release["release"] in releases for release in entry.get("releases") or [])
              or (not entry.get("releases") and entry.get("namespace") in namespaces)]
    return sorted(chosen, key=lambda entry: not entry.get("ingress"))


def teardown(plan: Iterable[Mapping[str, Any]], found: Iterable[Mapping[str, Any]]) -> list[dict]:
    """What a teardown uninstalls, in order: the ``plan``'s components, where requests enter (``ingress``) first so
    that none reaches a stack half torn down, then the rest in reverse install order; then the other stack's
    components ``found`` installed (``installed``: a stack switched by a converge that failed leaves them)."""
    down = sorted(reversed(list(plan)), key=lambda entry: not entry.get("ingress"))
    return [dict(entry) for entry in down] + [dict(entry) for entry in found]


def prune_queries(prune: Iterable[Mapping[str, Any]]) -> list[dict[str, Any]]:
    """servingstack_objects queries finding what of ``prune`` is installed: helm's release Secrets of its releases,
    and the namespaces (for a component without releases)."""
    prune = list(prune)
    names = [release["release"] for entry in prune for release in entry.get("releases") or []]
    queries: list[dict[str, Any]] = []
    if names:
        queries.append({"apiVersion": "v1", "kind": "Secret", "field_selector": "type=helm.sh/release.v1",
                        "label_selector": f"owner=helm,name in ({','.join(names)})"})
    if any(not entry.get("releases") for entry in prune):
        queries.append({"apiVersion": "v1", "kind": "Namespace"})
    return queries
