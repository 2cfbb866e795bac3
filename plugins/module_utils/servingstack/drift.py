# Copyright 2026 The modelplane.serving authors
# Apache License 2.0 (see LICENSE)
"""Which desired objects differ from the cluster, so unchanged objects never reach a module.

``kubernetes.core.k8s`` (state present, no ``apply``) patches an existing object with the desired
one and reports a change when the result differs. Patching with values the object already holds
changes nothing, so an object whose every desired field is already set to the desired value is
left alone here. Anything else counts as drift and goes to the module, which stays the judge: a
false "drifted" costs one module run, never a wrong result: so list items are compared exactly
(a server-defaulted field inside one costs a module run on every re-run, nothing worse).
"""

from __future__ import annotations

import json
from typing import Any

# Where kubectl-style client-side apply (kubernetes.core.k8s with apply: true) keeps what it applied.
LAST_APPLIED = "kubectl.kubernetes.io/last-applied-configuration"

# Fields the API server owns; a desired object never sets them meaningfully.
_SERVER_FIELDS = frozenset({"status"})


def contains(live: Any, desired: Any, exact: bool = False) -> bool:
    """True when ``live`` already holds everything ``desired`` sets.

    Mappings: every desired key is present in ``live`` with a contained value (with ``exact``, and
    no other key). Lists: the same length, each element matching its counterpart exactly: a merge
    patch, and an apply outside the few lists it merges by key, replace a list whole, so a field a
    list item gained in the cluster is drift. Scalars: equal, with ``1`` and ``1.0`` equal but a bool
    never equal to a number.
    """
    if isinstance(desired, dict):
        if not isinstance(live, dict) or (exact and set(live) != set(desired)):
            return False
        return all(key in live and contains(live[key], value, exact) for key, value in desired.items())
    if isinstance(desired, list):
        return (isinstance(live, list) and len(live) == len(desired)
                and all(contains(live[index], want, exact=True) for index, want in enumerate(desired)))
    if isinstance(desired, bool) or isinstance(live, bool):
        return type(desired) is type(live) and desired == live
    return desired == live


def unchanged(desired: dict[str, Any], live: dict[str, Any] | None, apply: bool = False) -> bool:
    """True when patching ``live`` with ``desired`` would change nothing.

    With ``apply`` (client-side apply), a field applied before and left out of ``desired`` now is
    removed by the next apply, so the object only counts as unchanged when what was last applied
    is ``desired`` itself as well.
    """
    if live is None:
        return False
    wanted = {key: value for key, value in desired.items() if key not in _SERVER_FIELDS}
    if not contains(live, wanted):
        return False
    return not apply or _last_applied(live) == _without_last_applied(wanted)


def _last_applied(live: dict[str, Any]) -> Any:
    text = ((live.get("metadata") or {}).get("annotations") or {}).get(LAST_APPLIED)
    try:
        return json.loads(text) if text else None
    except ValueError:
        return None


def _without_last_applied(obj: dict[str, Any]) -> dict[str, Any]:
    annotations = (obj.get("metadata") or {}).get("annotations") or {}
    if LAST_APPLIED not in annotations:
        return obj
    rest = {key: value for key, value in annotations.items() if key != LAST_APPLIED}
    metadata = {key: value for key, value in obj["metadata"].items() if key != "annotations"}
    return {**obj, "metadata": {**metadata, **({"annotations": rest} if rest else {})}}


def drifted(desired: list[dict[str, Any]], live: list[dict[str, Any] | None],
            apply: bool = False) -> list[dict[str, Any]]:
    """The desired objects that are missing from the cluster or differ from it, in their order.

    ``live[i]`` is the cluster's copy of ``desired[i]`` (None when it does not exist); ``apply``
    as in :func:`unchanged`.
    """
    if len(desired) != len(live):
        raise ValueError(f"drifted: {len(desired)} desired objects but {len(live)} live ones")
    return [want for index, want in enumerate(desired) if not unchanged(want, live[index], apply)]


def condition_true(obj: dict[str, Any] | None, condition: str) -> bool:
    """True when ``status.conditions`` has ``condition`` with status "True".

    A condition that records an older ``observedGeneration`` than the object's ``generation``
    describes a spec that has since changed, so it does not count.
    """
    obj = obj or {}
    generation = (obj.get("metadata") or {}).get("generation")
    for entry in (obj.get("status") or {}).get("conditions") or []:
        if not isinstance(entry, dict) or entry.get("type") != condition:
            continue
        observed = entry.get("observedGeneration")
        stale = isinstance(observed, int) and isinstance(generation, int) and observed < generation
        return entry.get("status") == "True" and not stale
    return False
