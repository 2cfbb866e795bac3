"""Label and field selectors as the API server parses them."""

from __future__ import annotations

import re
from collections.abc import Callable
from typing import Any

Matcher = Callable[[dict[str, Any]], bool]

_SET_RE = re.compile(r"^\s*(!?)\s*([A-Za-z0-9._/-]+)\s*(?:(notin|in)\s*\(([^)]*)\))?\s*$")


class SelectorError(ValueError):
    """A selector the server refuses (answered with 400 BadRequest)."""


def _split(selector: str) -> list[str]:
    parts, depth, cur = [], 0, ""
    for ch in selector:
        if ch == "(":
            depth += 1
        elif ch == ")":
            depth -= 1
        if ch == "," and depth == 0:
            parts.append(cur)
            cur = ""
        else:
            cur += ch
    if cur.strip():
        parts.append(cur)
    return [p.strip() for p in parts if p.strip()]


def label_matcher(selector: str | None) -> Matcher:
    """Compile `a=b,c!=d,e in (x,y),f notin (z),g,!h` into a predicate on an object."""
    if not selector:
        return lambda obj: True
    tests: list[Callable[[dict[str, str]], bool]] = []
    for req in _split(selector):
        m = re.match(r"^([A-Za-z0-9._/-]+)\s*(==|=|!=)\s*([A-Za-z0-9._-]*)$", req)
        if m:
            key, op, value = m.groups()
            if op == "!=":
                tests.append(lambda labels, k=key, v=value: labels.get(k) != v)
            else:
                tests.append(lambda labels, k=key, v=value: labels.get(k) == v)
            continue
        m = _SET_RE.match(req)
        if not m:
            raise SelectorError(f"unable to parse requirement: {req!r}")
        neg, key, op, values = m.groups()
        if op:
            if neg:
                raise SelectorError(f"unable to parse requirement: {req!r}")
            allowed = {v.strip() for v in values.split(",") if v.strip()}
            if op == "in":
                tests.append(lambda labels, k=key, a=allowed: labels.get(k) in a)
            else:
                tests.append(lambda labels, k=key, a=allowed: labels.get(k) not in a)
        elif neg:
            tests.append(lambda labels, k=key: k not in labels)
        else:
            tests.append(lambda labels, k=key: k in labels)

    def match(obj: dict[str, Any]) -> bool:
        labels = (obj.get("metadata") or {}).get("labels") or {}
        return all(t(labels) for t in tests)

    return match


# Fields every kind supports, plus the few extra ones the API server registers per kind.
_FIELDS: dict[str, set[str]] = {
    "*": {"metadata.name", "metadata.namespace"},
    "Secret": {"type"},
    "Pod": {"spec.nodeName", "status.phase", "spec.restartPolicy", "spec.schedulerName", "spec.serviceAccountName"},
    "Namespace": {"status.phase"},
    "Event": {"involvedObject.kind", "involvedObject.name", "involvedObject.namespace", "involvedObject.uid",
              "reason", "type", "source"},
    "Job": {"status.successful"},
}


def _lookup(obj: dict[str, Any], dotted: str) -> str:
    cur: Any = obj
    for part in dotted.split("."):
        cur = cur.get(part) if isinstance(cur, dict) else None
    return "" if cur is None else str(cur)


def field_matcher(selector: str | None, kind: str) -> Matcher:
    if not selector:
        return lambda obj: True
    allowed = _FIELDS["*"] | _FIELDS.get(kind, set())
    tests: list[tuple[str, bool, str]] = []
    for req in _split(selector):
        m = re.match(r"^([A-Za-z0-9._-]+)\s*(==|=|!=)\s*(.*)$", req)
        if not m:
            raise SelectorError(f"invalid selector: {req!r}; can't understand {req!r}")
        key, op, value = m.groups()
        if key not in allowed:
            raise SelectorError(f'field label not supported: {key}')
        tests.append((key, op == "!=", value))

    def match(obj: dict[str, Any]) -> bool:
        return all((_lookup(obj, key) != value) if neg else (_lookup(obj, key) == value) for key, neg, value in tests)

    return match
