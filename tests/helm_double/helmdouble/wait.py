"""``--wait``, ``--wait-for-jobs`` and ``uninstall --wait`` as helm 3 does them (pkg/kube/wait.go, ready.go).

After applying, helm polls the release's objects until each is ready or ``--timeout`` (default 5m0s)
expires, then fails with ``context deadline exceeded``. The readiness rules are helm 3's ReadyChecker
for the kinds listed in ``CHECKS``, read from the objects' status:

- Deployment: paused counts as ready (helm's ``--wait`` uses ``PausedAsReady``); otherwise
  ``observedGeneration == generation`` and at least ``replicas - maxUnavailable`` ready pods of the new
  ReplicaSet. The stand-in creates no ReplicaSets, so the new ReplicaSet's ready pods are estimated from
  the Deployment's own status: ``min(readyReplicas, updatedReplicas)`` (neither can be below them).
- DaemonSet: ``observedGeneration == generation``; an ``OnDelete`` strategy is ready at once; otherwise
  ``updatedNumberScheduled == desiredNumberScheduled`` and ``numberReady >= desired - maxUnavailable``.
  (With one node and the default ``maxUnavailable: 1`` that is 0: helm 3 does not wait for the pod.)
- StatefulSet: ``observedGeneration == generation``; ``OnDelete`` ready at once; otherwise
  ``updatedReplicas >= replicas - partition``, ``readyReplicas == replicas`` and, without a partition,
  ``currentRevision == updateRevision``.
- Job (``--wait-for-jobs`` only): ``succeeded >= completions`` (no completions: ready); more failures
  than ``backoffLimit`` fail the wait at once (``job is failed: <ns>/<name>``).

Helm 3 also waits for Pods, PVCs (bound), Services (cluster IP, LoadBalancer ingress), CRDs
(Established) and ReplicaSets/ReplicationControllers; the double does not (the catalogue charts render
only templated CRDs, which the stand-in establishes on creation, and their controller Deployments and
DaemonSets: ``catalog.ChartEntry.workloads``). Helm polls every 2 s; the double polls sooner
(``POLL_FIRST`` doubling to ``POLL_MAX``) because a simulated controller answers within milliseconds and
the tests should not pay helm's granularity.
"""

from __future__ import annotations

import math
import re
import time
from collections.abc import Callable
from typing import Any

from helmdouble.cli import Context, HelmError
from helmdouble.kube import KubeError, Unreachable

DEFAULT_TIMEOUT = 300.0  # helm's --timeout default, 5m0s
POLL_FIRST = 0.05
POLL_MAX = 0.4
DEADLINE = "context deadline exceeded"  # what Go's context says when the wait's deadline passes

_UNITS = {"ns": 1e-9, "us": 1e-6, "µs": 1e-6, "μs": 1e-6, "ms": 1e-3, "s": 1.0, "m": 60.0, "h": 3600.0}
_PART = re.compile(r"(\d+(?:\.\d*)?|\.\d+)(ns|us|µs|μs|ms|s|m|h)")


def parse_duration(text: str) -> float:
    """Seconds in a Go duration (``5m0s``, ``300s``, ``1.5h``, ``0``), as helm's ``--timeout`` takes it."""
    body = text[1:] if text[:1] in "+-" else text
    if body == "0":
        return 0.0
    parts = _PART.findall(body)
    if not body or "".join(number + unit for number, unit in parts) != body:
        raise HelmError(f'invalid argument "{text}" for "--timeout" flag: time: invalid duration "{text}"')
    seconds = sum(float(number) * _UNITS[unit] for number, unit in parts)
    return -seconds if text.startswith("-") else seconds


def timeout(ctx: Context) -> float:
    value = ctx.args.value("--timeout")
    return DEFAULT_TIMEOUT if value is None else parse_duration(value)


def _scaled(value: Any, total: int, round_up: bool) -> int:
    """intstr.GetScaledValueFromIntOrPercent: an int as is, ``"25%"`` of ``total`` rounded up or down."""
    if isinstance(value, int):
        return value
    text = str(value)
    if not text.endswith("%") or not text[:-1].isdigit():
        raise ValueError(f"invalid value for IntOrString: invalid type: string is not a percentage: {text}")
    exact = int(text[:-1]) * total / 100
    return math.ceil(exact) if round_up else math.floor(exact)


def _deployment_max_unavailable(dep: dict[str, Any]) -> int:
    """deploymentutil.MaxUnavailable (with ResolveFenceposts): surge rounds up, unavailable down, never both 0."""
    spec = dep.get("spec") or {}
    replicas = spec.get("replicas", 1)
    strategy = spec.get("strategy") or {}
    if strategy.get("type", "RollingUpdate") != "RollingUpdate" or replicas == 0:
        return 0
    rolling = strategy.get("rollingUpdate") or {}
    surge = _scaled(rolling.get("maxSurge", "25%"), replicas, round_up=True)
    unavailable = _scaled(rolling.get("maxUnavailable", "25%"), replicas, round_up=False)
    if surge == 0 and unavailable == 0:
        unavailable = 1
    return min(unavailable, replicas)


def _observed(obj: dict[str, Any]) -> bool:
    return (obj.get("status") or {}).get("observedGeneration") == (obj.get("metadata") or {}).get("generation")


def deployment_ready(dep: dict[str, Any]) -> bool:
    spec, status = dep.get("spec") or {}, dep.get("status") or {}
    if spec.get("paused"):
        return True
    if not _observed(dep):
        return False
    new_ready = min(status.get("readyReplicas", 0), status.get("updatedReplicas", 0))
    return new_ready >= spec.get("replicas", 1) - _deployment_max_unavailable(dep)


def daemonset_ready(ds: dict[str, Any]) -> bool:
    spec, status = ds.get("spec") or {}, ds.get("status") or {}
    if not _observed(ds):
        return False
    strategy = spec.get("updateStrategy") or {}
    if strategy.get("type", "RollingUpdate") != "RollingUpdate":
        return True
    desired = status.get("desiredNumberScheduled", 0)
    if status.get("updatedNumberScheduled", 0) != desired:
        return False
    try:
        max_unavailable = _scaled((strategy.get("rollingUpdate") or {}).get("maxUnavailable", 1), desired, True)
    except ValueError:
        max_unavailable = desired  # helm's fallback for an invalid value
    return status.get("numberReady", 0) >= desired - max_unavailable


def statefulset_ready(sts: dict[str, Any]) -> bool:
    spec, status = sts.get("spec") or {}, sts.get("status") or {}
    if not _observed(sts):
        return False
    strategy = spec.get("updateStrategy") or {}
    if strategy.get("type", "RollingUpdate") != "RollingUpdate":
        return True
    partition = (strategy.get("rollingUpdate") or {}).get("partition") or 0
    replicas = spec.get("replicas", 1)
    if status.get("updatedReplicas", 0) < replicas - partition or status.get("readyReplicas", 0) != replicas:
        return False
    return partition != 0 or status.get("currentRevision") == status.get("updateRevision")


def job_ready(job: dict[str, Any]) -> bool:
    spec, status = job.get("spec") or {}, job.get("status") or {}
    if status.get("failed", 0) > spec.get("backoffLimit", 6):
        meta = job.get("metadata") or {}
        raise HelmError(f"job is failed: {meta.get('namespace')}/{meta.get('name')}")
    completions = spec.get("completions")
    return completions is None or status.get("succeeded", 0) >= completions


CHECKS: dict[tuple[str, str], Callable[[dict[str, Any]], bool]] = {
    ("apps/v1", "Deployment"): deployment_ready,
    ("apps/v1", "DaemonSet"): daemonset_ready,
    ("apps/v1", "StatefulSet"): statefulset_ready,
    ("batch/v1", "Job"): job_ready,
}


def _poll(condition: Callable[[], bool], seconds: float) -> None:
    """wait.PollUntilContextCancel(immediate=true): check at once, then until the deadline passes."""
    deadline = time.monotonic() + seconds
    interval = POLL_FIRST
    while not condition():
        remaining = deadline - time.monotonic()
        if remaining <= 0:
            raise HelmError(DEADLINE)
        time.sleep(min(interval, remaining))
        interval = min(interval * 2, POLL_MAX)


def _is_ready(ctx: Context, obj: dict[str, Any], namespace: str, check: Callable[[dict[str, Any]], bool]) -> bool:
    try:
        live = ctx.kube.request("GET", ctx.kube.path(obj, namespace))
    except Unreachable:
        return False  # helm retries connection failures (and 429/5xx) until the deadline
    except KubeError as exc:
        if exc.status == 429 or exc.status >= 500:
            return False
        raise HelmError(str(exc)) from exc  # e.g. deleted meanwhile: helm stops waiting with the API error
    return check(live)


def wait_ready(ctx: Context, objects: list[dict[str, Any]], namespace: str, seconds: float, jobs: bool) -> None:
    """Block until every workload of ``objects`` is ready (Jobs complete when ``jobs``), or fail at the deadline."""
    watched = [
        (obj, check)
        for obj in objects
        if (check := CHECKS.get((obj.get("apiVersion", ""), obj.get("kind", "")))) and (jobs or check is not job_ready)
    ]
    if watched:
        _poll(lambda: all(_is_ready(ctx, obj, namespace, check) for obj, check in watched), seconds)


def _gone(ctx: Context, obj: dict[str, Any], namespace: str) -> bool:
    try:
        return ctx.kube.get(obj, namespace) is None
    except KubeError as exc:
        if exc.status == 404:  # its type is no longer served (CRD deleted): NotFound to helm too
            return True
        raise HelmError(str(exc)) from exc  # helm: any error but NotFound ends the wait
    except Unreachable as exc:
        raise HelmError(str(exc)) from exc


def wait_deleted(ctx: Context, objects: list[dict[str, Any]], namespace: str, seconds: float) -> None:
    """Block until every object is gone (finalizers done), or fail at the deadline."""
    if objects:
        _poll(lambda: all(_gone(ctx, obj, namespace) for obj in objects), seconds)
