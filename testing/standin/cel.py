"""CEL `x-kubernetes-validations` of custom resources, evaluated with cel-python.

A rule that cel-python cannot compile (Kubernetes-only syntax such as optional types, or a
library it lacks) never rejects an object: it is counted in `uncompiled` so tests can see
how much of a CRD's rule set is really enforced. Runtime evaluation errors are counted the
same way (`errors`) and do not reject either. Transition rules (`oldSelf`) run on updates
only, and only where the old value can be found through object properties.
"""

from __future__ import annotations

import ipaddress
import threading
from dataclasses import dataclass, field
from typing import Any
from urllib.parse import urlparse

from .schema import Cause, _type_name

try:  # cel-python is a test-only dependency (tests/requirements.txt)
    import celpy
    from celpy import celtypes
except ImportError:  # pragma: no cover - exercised only without the dependency
    celpy = None
    celtypes = None


def _ext_functions() -> dict[str, Any]:
    """The Kubernetes CEL libraries the CRDs we load use, where they map cleanly onto Python."""
    if celtypes is None:
        return {}
    s, b, i = celtypes.StringType, celtypes.BoolType, celtypes.IntType

    def is_ip(value: Any, *_a: Any) -> Any:
        try:
            ipaddress.ip_address(str(value))
        except ValueError:
            return b(False)
        return b(True)

    def is_cidr(value: Any) -> Any:
        try:
            ipaddress.ip_network(str(value), strict=False)
        except ValueError:
            return b(False)
        return b(True)

    def is_url(value: Any) -> Any:
        parsed = urlparse(str(value))
        return b(bool(parsed.scheme and (parsed.netloc or parsed.path)))

    def index_of(value: Any, sub: Any, start: Any = 0) -> Any:
        return i(str(value).find(str(sub), int(start)))

    def last_index_of(value: Any, sub: Any) -> Any:
        return i(str(value).rfind(str(sub)))

    def substring(value: Any, start: Any, end: Any = None) -> Any:
        text = str(value)
        return s(text[int(start):] if end is None else text[int(start):int(end)])

    def split(value: Any, sep: Any, limit: Any = -1) -> Any:
        parts = str(value).split(str(sep)) if int(limit) < 0 else str(value).split(str(sep), max(int(limit) - 1, 0))
        return celtypes.ListType([s(p) for p in parts])

    def join(value: Any, sep: Any = "") -> Any:
        return s(str(sep).join(str(v) for v in value))

    def replace(value: Any, old: Any, new: Any, count: Any = -1) -> Any:
        return s(str(value).replace(str(old), str(new), int(count)))

    return {
        "isIP": is_ip,
        "isCIDR": is_cidr,
        "isURL": is_url,
        "lowerAscii": lambda v: s(str(v).lower()),
        "upperAscii": lambda v: s(str(v).upper()),
        "trim": lambda v: s(str(v).strip()),
        "indexOf": index_of,
        "lastIndexOf": last_index_of,
        "substring": substring,
        "split": split,
        "join": join,
        "replace": replace,
    }


# Compiled programs by rule text, shared by every stand-in in the process (compiling is the slow part).
_PROGRAMS: dict[str, Any] = {}
_PROGRAMS_LOCK = threading.Lock()


@dataclass
class Rule:
    rule: str
    message: str
    field_path: str
    reason: str
    program: Any = None
    transition: bool = False


@dataclass
class CelStats:
    compiled: int = 0
    uncompiled: list[dict[str, str]] = field(default_factory=list)
    evaluated: int = 0
    rejected: int = 0
    errors: list[dict[str, str]] = field(default_factory=list)


class CelRules:
    """Compiled rules per resource type, and the counters tests read through `/_standin/cel`."""

    def __init__(self) -> None:
        self.stats = CelStats()
        self._by_type: dict[tuple[str, str, str], list[tuple[tuple[Any, ...], Rule]]] = {}
        self._lock = threading.Lock()
        self._env = celpy.Environment() if celpy is not None else None
        self._functions = _ext_functions()

    @property
    def available(self) -> bool:
        return self._env is not None

    def _compile(self, text: str) -> Any:
        with _PROGRAMS_LOCK:
            if text not in _PROGRAMS:
                try:
                    ast = self._env.compile(text)
                    _PROGRAMS[text] = self._env.program(ast, functions=self._functions)
                except Exception as exc:  # cel-python raises several parser/compile error types
                    _PROGRAMS[text] = exc
            return _PROGRAMS[text]

    def load(self, rt: Any) -> None:
        """Collect and compile every rule of a CRD version's schema (keyed by group/version/plural)."""
        found: list[tuple[tuple[Any, ...], Rule]] = []
        _collect(rt.schema or {}, (), found)
        rules = []
        with self._lock:
            for path, rule in found:
                if self._env is None:
                    self.stats.uncompiled.append({"crd": rt.resource_key, "rule": rule.rule,
                                                  "error": "cel-python is not installed"})
                    continue
                program = self._compile(rule.rule)
                if isinstance(program, Exception):
                    self.stats.uncompiled.append({"crd": rt.resource_key, "version": rt.version, "rule": rule.rule,
                                                  "error": str(program).splitlines()[0][:200]})
                    continue
                rule.program = program
                self.stats.compiled += 1
                rules.append((path, rule))
            self._by_type[(rt.group, rt.version, rt.plural)] = rules

    def check(self, rt: Any, obj: dict[str, Any], old: dict[str, Any] | None) -> list[Cause]:
        rules = self._by_type.get((rt.group, rt.version, rt.plural)) or []
        causes: list[Cause] = []
        for path, rule in rules:
            for value, old_value, where in _targets(obj, old, path, ""):
                if rule.transition and old_value is _MISSING:
                    continue
                activation = {"self": celpy.json_to_cel(value)}
                if rule.transition:
                    activation["oldSelf"] = celpy.json_to_cel(old_value)
                with self._lock:
                    self.stats.evaluated += 1
                try:
                    result = rule.program.evaluate(activation)
                except Exception as exc:  # evaluation errors never reject
                    with self._lock:
                        self.stats.errors.append({"crd": rt.resource_key, "rule": rule.rule, "error": str(exc)[:200]})
                    continue
                if isinstance(result, Exception) or result is None:
                    with self._lock:
                        self.stats.errors.append({"crd": rt.resource_key, "rule": rule.rule, "error": str(result)})
                    continue
                if not bool(result):
                    with self._lock:
                        self.stats.rejected += 1
                    target = where + rule.field_path if rule.field_path else where
                    target = target.lstrip(".") or "<root>"
                    reason = rule.reason or "FieldValueInvalid"
                    detail = "Forbidden" if reason == "FieldValueForbidden" else (
                        "Required value" if reason == "FieldValueRequired" else
                        f'Invalid value: "{_type_name(value)}"')
                    causes.append(Cause(reason, target, f"{target}: {detail}: {rule.message}"))
        return causes

    def report(self) -> dict[str, Any]:
        with self._lock:
            return {"available": self.available, "compiled": self.stats.compiled,
                    "uncompiled": list(self.stats.uncompiled), "evaluated": self.stats.evaluated,
                    "rejected": self.stats.rejected, "errors": list(self.stats.errors[-200:]),
                    "error_count": len(self.stats.errors)}


_MISSING = object()


def _collect(node: dict[str, Any], path: tuple[Any, ...], out: list[tuple[tuple[Any, ...], Rule]]) -> None:
    if not isinstance(node, dict):
        return
    for item in node.get("x-kubernetes-validations") or []:
        text = item.get("rule", "")
        message = item.get("message") or f"failed rule: {text}"
        out.append((path, Rule(text, message, item.get("fieldPath", ""), item.get("reason", ""),
                               transition="oldSelf" in text)))
    for key, sub in (node.get("properties") or {}).items():
        _collect(sub, (*path, ("prop", key)), out)
    if isinstance(node.get("items"), dict):
        _collect(node["items"], (*path, ("items",)), out)
    if isinstance(node.get("additionalProperties"), dict):
        _collect(node["additionalProperties"], (*path, ("map",)), out)


def _targets(value: Any, old: Any, path: tuple[Any, ...], where: str) -> list[tuple[Any, Any, str]]:
    """Every (value, old value, field path) the rule at `path` applies to."""
    if old is None:
        old = _MISSING
    if not path:
        return [(value, old, where)]
    step, rest = path[0], path[1:]
    out: list[tuple[Any, Any, str]] = []
    if step[0] == "prop":
        if isinstance(value, dict) and step[1] in value:
            old_child = old.get(step[1], _MISSING) if isinstance(old, dict) else _MISSING
            out.extend(_targets(value[step[1]], old_child, rest, f"{where}.{step[1]}"))
    elif step[0] == "items":
        if isinstance(value, list):
            for n, item in enumerate(value):
                out.extend(_targets(item, _MISSING, rest, f"{where}[{n}]"))
    elif isinstance(value, dict):
        for key, item in value.items():
            old_child = old.get(key, _MISSING) if isinstance(old, dict) else _MISSING
            out.extend(_targets(item, old_child, rest, f"{where}[{key}]"))
    return out
