"""Helm values: ``--set`` parsing, merging, and the double's strict checks against a chart.

Checks, in the double's words (stricter than helm on purpose, see ../README.md):
- a chart with ``values.schema.json`` is validated like helm does (coalesced values against the schema);
- any other chart: every user key must exist in its ``values.yaml`` (or a local subchart's), except
  below a map that is empty (``{}``) or ``null`` there, below a list (items are free-form), below a
  remote dependency's key (its defaults were not collected), below ``global``, and below the paths in
  the catalog's allowlist; scalars are type checked where the default's type is unambiguous (a bool
  default takes only a bool, a number default only a number; maps and lists must stay maps and lists).
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import yaml


class ValuesError(Exception):
    """Bad ``--set`` syntax or an unreadable values file (helm's message, without ``Error: ``)."""


# --------------------------------------------------------------------------- --set parsing (strvals)


def _split_unescaped(text: str, sep: str, *, braces: bool = False) -> list[str]:
    """Split on ``sep`` not preceded by a backslash (and, with ``braces``, not inside ``{...}``)."""
    parts: list[str] = []
    current: list[str] = []
    depth = 0
    i = 0
    while i < len(text):
        char = text[i]
        if char == "\\" and i + 1 < len(text):
            current.append(text[i : i + 2])
            i += 2
            continue
        if braces and char == "{":
            depth += 1
        elif braces and char == "}":
            depth = max(0, depth - 1)
        if char == sep and depth == 0:
            parts.append("".join(current))
            current = []
        else:
            current.append(char)
        i += 1
    parts.append("".join(current))
    return parts


def _unescape(text: str) -> str:
    out: list[str] = []
    i = 0
    while i < len(text):
        if text[i] == "\\" and i + 1 < len(text):
            out.append(text[i + 1])
            i += 2
        else:
            out.append(text[i])
            i += 1
    return "".join(out)


def typed_value(raw: str) -> Any:
    """Helm's ``--set`` typing: true/false/null, and integers without a leading zero."""
    lowered = raw.lower()
    if lowered == "true":
        return True
    if lowered == "false":
        return False
    if lowered == "null":
        return None
    if raw == "0":
        return 0
    digits = raw[1:] if raw.startswith("-") else raw
    if digits.isdigit() and not digits.startswith("0"):
        return int(raw)
    return raw


def _key_steps(key: str) -> list[str | int]:
    """``a.b[0].c`` -> ["a", "b", 0, "c"] (dots escaped with a backslash stay in the name)."""
    steps: list[str | int] = []
    for part in _split_unescaped(key, "."):
        name = part
        indexes: list[int] = []
        while name.endswith("]") and "[" in name:
            name, _sep, index = name[:-1].rpartition("[")
            if not index.isdigit():
                raise ValuesError(f"failed parsing index: {key}")
            indexes.insert(0, int(index))
        if name:
            steps.append(_unescape(name))
        elif not indexes:
            raise ValuesError(f"key {key!r} has no value")
        steps.extend(indexes)
    return steps


def _assign(target: dict[str, Any], steps: list[str | int], value: Any) -> None:
    node: Any = target
    for position, step in enumerate(steps):
        last = position == len(steps) - 1
        nxt = None if last else steps[position + 1]
        if isinstance(step, int):
            if not isinstance(node, list):
                raise ValuesError("unable to parse key: index on a non-list")
            while len(node) <= step:
                node.append(None)
            if last:
                node[step] = value
            else:
                if not isinstance(node[step], (dict, list)):
                    node[step] = [] if isinstance(nxt, int) else {}
                node = node[step]
        else:
            if last:
                node[step] = value
            else:
                child = node.get(step)
                if isinstance(nxt, int):
                    if not isinstance(child, list):
                        child = []
                elif not isinstance(child, dict):
                    child = {}
                node[step] = child
                node = child


def parse_set(expr: str, mode: str = "raw", read_file: Any = None) -> dict[str, Any]:
    """Parse one ``--set``-family argument into a nested dict.

    ``mode`` is ``raw`` (--set), ``string`` (--set-string), ``json`` (--set-json),
    ``literal`` (--set-literal) or ``file`` (--set-file).
    """
    result: dict[str, Any] = {}
    pairs = [expr] if mode in ("json", "literal", "file") else _split_unescaped(expr, ",", braces=True)
    for pair in pairs:
        if not pair:
            continue
        key, sep, raw = pair.partition("=")
        if not sep:
            raise ValuesError(f"key {key!r} has no value")
        steps = _key_steps(key)
        value: Any
        if mode == "json":
            try:
                value = json.loads(raw)
            except json.JSONDecodeError as exc:
                raise ValuesError(f"failed parsing --set-json data {pair}: {exc}") from exc
        elif mode == "literal":
            value = raw
        elif mode == "file":
            value = read_file(raw) if read_file else Path(raw).read_text()
        elif raw.startswith("{") and raw.endswith("}"):
            items = [_unescape(item) for item in _split_unescaped(raw[1:-1], ",")] if raw != "{}" else []
            value = items if mode == "string" else [typed_value(item) for item in items]
        else:
            value = _unescape(raw) if mode == "string" else typed_value(_unescape(raw))
        _assign(result, steps, value)
    return result


# --------------------------------------------------------------------------- merging


def merge(base: dict[str, Any], override: dict[str, Any]) -> dict[str, Any]:
    """Helm's values merge: maps merge deeply, anything else is replaced."""
    out = dict(base)
    for key, value in override.items():
        if isinstance(value, dict) and isinstance(out.get(key), dict):
            out[key] = merge(out[key], value)
        else:
            out[key] = value
    return out


def coalesce(defaults: dict[str, Any], user: dict[str, Any]) -> dict[str, Any]:
    """Chart defaults overlaid with user values; a user ``null`` deletes the default key."""
    out = dict(defaults)
    for key, value in user.items():
        if value is None:
            out.pop(key, None)
        elif isinstance(value, dict) and isinstance(out.get(key), dict):
            out[key] = coalesce(out[key], value)
        else:
            out[key] = value
    return out


def load_values_file(path: str) -> dict[str, Any]:
    try:
        text = Path(path).read_text()
    except OSError as exc:
        raise ValuesError(f"open {path}: no such file or directory") from exc
    try:
        data = yaml.safe_load(text)
    except yaml.YAMLError as exc:
        raise ValuesError(f"failed to parse {path}: {exc}") from exc
    if data is None:
        return {}
    if not isinstance(data, dict):
        raise ValuesError(f"failed to parse {path}: error unmarshaling JSON: cannot unmarshal into map")
    return data


# --------------------------------------------------------------------------- checks


def _describe(value: Any) -> str:
    if isinstance(value, bool):
        return f"boolean {str(value).lower()}"
    if isinstance(value, (int, float)):
        return f"number {value}"
    if isinstance(value, str):
        shown = value if len(value) <= 40 else value[:37] + "..."
        return f"string {json.dumps(shown)}"
    if isinstance(value, dict):
        return "a map"
    if isinstance(value, list):
        return "a list"
    return type(value).__name__


def _type_problem(user: Any, default: Any) -> str | None:
    if default is None or user is None:
        return None
    if isinstance(default, dict):
        return None if isinstance(user, dict) else f"expected a map (values.yaml has a map), got {_describe(user)}"
    if isinstance(default, list):
        return None if isinstance(user, list) else f"expected a list (values.yaml has a list), got {_describe(user)}"
    if isinstance(user, (dict, list)):
        return f"expected a scalar (values.yaml has {_describe(default)}), got {_describe(user)}"
    if isinstance(default, bool):
        return (
            None
            if isinstance(user, bool)
            else f"expected a boolean (values.yaml has {_describe(default)}), got {_describe(user)}"
        )
    if isinstance(default, (int, float)):
        ok = isinstance(user, (int, float)) and not isinstance(user, bool)
        return None if ok else f"expected a number (values.yaml has {_describe(default)}), got {_describe(user)}"
    return None


def check_against_defaults(
    user: dict[str, Any],
    defaults: dict[str, Any],
    free_form: set[str] | frozenset[str] = frozenset(),
) -> list[str]:
    """``<path>: <problem>`` for every user key or type the chart's values.yaml does not know."""
    problems: list[str] = []

    def walk(node: dict[str, Any], ref: dict[str, Any], prefix: str) -> None:
        for key, value in node.items():
            path = f"{prefix}{key}"
            if path in free_form or (not prefix and key == "global"):
                continue
            if key not in ref:
                problems.append(f"{path}: unknown key (the chart's values.yaml has no such key)")
                continue
            default = ref[key]
            problem = _type_problem(value, default)
            if problem:
                problems.append(f"{path}: {problem}")
            elif isinstance(value, dict) and isinstance(default, dict) and default:
                walk(value, default, path + ".")

    walk(user, defaults, "")
    return problems


def check_against_schema(coalesced: dict[str, Any], schema: dict[str, Any]) -> list[str]:
    """Validate like helm: the coalesced values against values.schema.json."""
    import jsonschema  # only charts with a schema pay for this import

    validator = jsonschema.Draft7Validator(schema)
    problems = []
    for error in sorted(validator.iter_errors(coalesced), key=lambda e: [str(p) for p in e.absolute_path]):
        path = ".".join(str(p) for p in error.absolute_path) or "(root)"
        problems.append(f"{path}: {error.message}")
    return problems
