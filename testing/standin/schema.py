"""Structural-schema handling for custom resources, as the API server does it.

Order on every write (like kube-apiserver): prune unknown fields (remembering them for a
`Warning` header or a `fieldValidation=Strict` refusal), apply `default`s, then validate.
Messages copy the API server's wording so tests can match on field paths.
"""

from __future__ import annotations

import base64
import binascii
import copy
import ipaddress
import json
import re
from dataclasses import dataclass
from datetime import datetime
from typing import Any

ROOT_FIELDS = ("apiVersion", "kind", "metadata")


@dataclass(frozen=True)
class Cause:
    """One `details.causes[]` entry of a 422 Status."""

    reason: str  # FieldValueInvalid, FieldValueRequired, FieldValueNotSupported, ...
    field: str
    message: str  # the full "<field>: <detail>" text


def show(value: Any) -> str:
    """Format a value the way the API server quotes it in messages (Go %#v-like)."""
    if isinstance(value, bool):
        return "true" if value else "false"
    if isinstance(value, str):
        return json.dumps(value)
    if value is None:
        return "null"
    if isinstance(value, int | float):
        return json.dumps(value)
    return json.dumps(value, sort_keys=True, separators=(",", ":"))


def _type_name(value: Any) -> str:
    if value is None:
        return "null"
    if isinstance(value, bool):
        return "boolean"
    if isinstance(value, int):
        return "integer"
    if isinstance(value, float):
        return "number"
    if isinstance(value, str):
        return "string"
    if isinstance(value, list):
        return "array"
    return "object"


def _join(path: str, key: str) -> str:
    return f"{path}.{key}" if path else key


# ---------------------------------------------------------------- pruning


def prune(obj: Any, schema: dict[str, Any], path: str = "", root: bool = True) -> list[str]:
    """Drop fields the schema does not know (in place); return their paths."""
    unknown: list[str] = []
    if not isinstance(schema, dict):
        return unknown
    if isinstance(obj, dict):
        if schema.get("x-kubernetes-preserve-unknown-fields") and not schema.get("properties"):
            return unknown
        props = schema.get("properties") or {}
        addl = schema.get("additionalProperties")
        keep_meta = root or schema.get("x-kubernetes-embedded-resource")
        for key in list(obj):
            if keep_meta and key in ROOT_FIELDS:
                continue
            sub = props.get(key)
            if sub is None and isinstance(addl, dict):
                sub = addl
            if sub is None:
                if schema.get("x-kubernetes-preserve-unknown-fields") or addl is True:
                    continue
                unknown.append(_join(path, key))
                del obj[key]
                continue
            if obj[key] is None and not sub.get("nullable"):
                del obj[key]  # null for a non-nullable field is pruned before defaulting
                continue
            child_path = _join(path, key) if sub is not addl else f"{path}[{key}]"
            unknown.extend(prune(obj[key], sub, child_path, root=False))
    elif isinstance(obj, list) and isinstance(schema.get("items"), dict):
        for i, item in enumerate(obj):
            unknown.extend(prune(item, schema["items"], f"{path}[{i}]", root=False))
    return unknown


# ---------------------------------------------------------------- defaulting


def apply_defaults(obj: Any, schema: dict[str, Any]) -> None:
    """Fill in `default` values of absent properties, recursively (in place)."""
    if not isinstance(schema, dict):
        return
    if isinstance(obj, dict):
        props = schema.get("properties") or {}
        for key, sub in props.items():
            if key not in obj and isinstance(sub, dict) and "default" in sub:
                obj[key] = copy.deepcopy(sub["default"])
            if key in obj:
                apply_defaults(obj[key], sub)
        addl = schema.get("additionalProperties")
        if isinstance(addl, dict):
            for key in obj:
                if key not in props:
                    apply_defaults(obj[key], addl)
    elif isinstance(obj, list) and isinstance(schema.get("items"), dict):
        for item in obj:
            apply_defaults(item, schema["items"])


# ---------------------------------------------------------------- validation

_FORMATS_CHECKED = {"date-time", "ipv4", "ipv6", "byte", "uuid", "int32", "int64", "hostname", "cidr"}
_UUID = re.compile(r"^[0-9a-fA-F]{8}-?[0-9a-fA-F]{4}-?[0-9a-fA-F]{4}-?[0-9a-fA-F]{4}-?[0-9a-fA-F]{12}$")
_HOSTNAME = re.compile(r"^[a-zA-Z0-9]([-a-zA-Z0-9]{0,61}[a-zA-Z0-9])?(\.[a-zA-Z0-9]([-a-zA-Z0-9]{0,61}[a-zA-Z0-9])?)*$")
_PATTERNS: dict[str, re.Pattern[str] | None] = {}


def _compile(pattern: str) -> re.Pattern[str] | None:
    if pattern not in _PATTERNS:
        try:
            _PATTERNS[pattern] = re.compile(pattern)
        except re.error:
            _PATTERNS[pattern] = None
    return _PATTERNS[pattern]


def _format_ok(fmt: str, value: Any) -> bool:
    if not isinstance(value, str):
        if fmt == "int32" and isinstance(value, int) and not isinstance(value, bool):
            return -(2**31) <= value < 2**31
        return True
    try:
        if fmt == "date-time":
            datetime.fromisoformat(value.replace("Z", "+00:00"))
        elif fmt == "ipv4":
            ipaddress.IPv4Address(value)
        elif fmt == "ipv6":
            ipaddress.IPv6Address(value)
        elif fmt == "cidr":
            ipaddress.ip_network(value, strict=False)
        elif fmt == "byte":
            base64.b64decode(value, validate=True)
        elif fmt == "uuid":
            return bool(_UUID.match(value))
        elif fmt == "hostname":
            return bool(_HOSTNAME.match(value)) and len(value) <= 255
    except (ValueError, binascii.Error):
        return False
    return True


def _type_ok(schema: dict[str, Any], value: Any) -> bool:
    if schema.get("x-kubernetes-int-or-string"):
        return isinstance(value, str) or (isinstance(value, int) and not isinstance(value, bool))
    want = schema.get("type")
    if not want:
        return True
    got = _type_name(value)
    if want == "number":
        return got in ("integer", "number")
    if want == "integer" and isinstance(value, float) and value.is_integer():
        return True
    return got == want


def validate(value: Any, schema: dict[str, Any], path: str = "") -> list[Cause]:
    """Check `value` against a structural schema; return the causes like the API server lists them."""
    causes: list[Cause] = []
    if not isinstance(schema, dict):
        return causes
    label = path or "<root>"
    if value is None:
        if schema.get("nullable"):
            return causes
        if schema.get("type") or schema.get("x-kubernetes-int-or-string"):
            causes.append(Cause("FieldValueInvalid", label,
                                f'{label}: Invalid value: "null": {label} in body must be of type '
                                f'{schema.get("type", "integer/string")}: "null"'))
        return causes
    if not _type_ok(schema, value):
        want = schema.get("type") or "integer or string"
        got = _type_name(value)
        causes.append(Cause("FieldValueInvalid", label,
                            f'{label}: Invalid value: "{got}": {label} in body must be of type {want}: "{got}"'))
        return causes
    enum = schema.get("enum")
    if enum is not None and value not in enum:
        supported = ", ".join(show(v) for v in enum)
        causes.append(Cause("FieldValueNotSupported", label,
                            f"{label}: Unsupported value: {show(value)}: supported values: {supported}"))
    if isinstance(value, int | float) and not isinstance(value, bool):
        causes.extend(_numeric(value, schema, label))
    if isinstance(value, str):
        causes.extend(_string(value, schema, label))
    if isinstance(value, list):
        causes.extend(_array(value, schema, path, label))
    if isinstance(value, dict):
        causes.extend(_object(value, schema, path, label))
    causes.extend(_combinators(value, schema, path, label))
    return causes


def _numeric(value: float, schema: dict[str, Any], label: str) -> list[Cause]:
    out = []
    minimum, maximum = schema.get("minimum"), schema.get("maximum")
    if minimum is not None:
        if schema.get("exclusiveMinimum") and value <= minimum:
            out.append(Cause("FieldValueInvalid", label,
                             f"{label}: Invalid value: {show(value)}: {label} in body should be greater than "
                             f"{show(minimum)}"))
        elif value < minimum:
            out.append(Cause("FieldValueInvalid", label,
                             f"{label}: Invalid value: {show(value)}: {label} in body should be greater than or "
                             f"equal to {show(minimum)}"))
    if maximum is not None:
        if schema.get("exclusiveMaximum") and value >= maximum:
            out.append(Cause("FieldValueInvalid", label,
                             f"{label}: Invalid value: {show(value)}: {label} in body should be less than "
                             f"{show(maximum)}"))
        elif value > maximum:
            out.append(Cause("FieldValueInvalid", label,
                             f"{label}: Invalid value: {show(value)}: {label} in body should be less than or "
                             f"equal to {show(maximum)}"))
    multiple = schema.get("multipleOf")
    if multiple and value % multiple:
        out.append(Cause("FieldValueInvalid", label,
                         f"{label}: Invalid value: {show(value)}: {label} in body should be a multiple of "
                         f"{show(multiple)}"))
    fmt = schema.get("format")
    if fmt == "int32" and not _format_ok(fmt, value):
        out.append(Cause("FieldValueInvalid", label,
                         f"{label}: Invalid value: {show(value)}: {label} in body must be of type int32"))
    return out


def _string(value: str, schema: dict[str, Any], label: str) -> list[Cause]:
    out = []
    min_len, max_len = schema.get("minLength"), schema.get("maxLength")
    if min_len is not None and len(value) < min_len:
        out.append(Cause("FieldValueInvalid", label,
                         f"{label}: Invalid value: {show(value)}: {label} in body should be at least {min_len} "
                         "chars long"))
    if max_len is not None and len(value) > max_len:
        out.append(Cause("FieldValueTooLong", label, f"{label}: Too long: may not be more than {max_len} bytes"))
    pattern = schema.get("pattern")
    if pattern:
        regex = _compile(pattern)
        if regex is not None and not regex.search(value):
            out.append(Cause("FieldValueInvalid", label,
                             f"{label}: Invalid value: {show(value)}: {label} in body should match '{pattern}'"))
    fmt = schema.get("format")
    if fmt in _FORMATS_CHECKED and not _format_ok(fmt, value):
        out.append(Cause("FieldValueInvalid", label,
                         f"{label}: Invalid value: {show(value)}: {label} in body must be of type {fmt}: "
                         f"{show(value)}"))
    return out


def _array(value: list[Any], schema: dict[str, Any], path: str, label: str) -> list[Cause]:
    out = []
    min_items, max_items = schema.get("minItems"), schema.get("maxItems")
    if min_items is not None and len(value) < min_items:
        out.append(Cause("FieldValueInvalid", label,
                         f"{label}: Invalid value: {len(value)}: {label} in body should have at least {min_items} "
                         "items"))
    if max_items is not None and len(value) > max_items:
        out.append(Cause("FieldValueTooMany", label,
                         f"{label}: Too many: {len(value)}: must have at most {max_items} items"))
    list_type = schema.get("x-kubernetes-list-type")
    if list_type in ("set", "map"):
        keys = schema.get("x-kubernetes-list-map-keys") or []
        seen: set[str] = set()
        for i, item in enumerate(value):
            ident = item
            if list_type == "map" and isinstance(item, dict):
                ident = {k: item.get(k) for k in keys}
            marker = json.dumps(ident, sort_keys=True)
            if marker in seen:
                out.append(Cause("FieldValueDuplicate", f"{path}[{i}]",
                                 f"{path}[{i}]: Duplicate value: {show(ident)}"))
            seen.add(marker)
    items = schema.get("items")
    if isinstance(items, dict):
        for i, item in enumerate(value):
            out.extend(validate(item, items, f"{path}[{i}]"))
    return out


def _object(value: dict[str, Any], schema: dict[str, Any], path: str, label: str) -> list[Cause]:
    out = []
    props = schema.get("properties") or {}
    for key in schema.get("required") or []:
        if key not in value:
            field = _join(path, key)
            out.append(Cause("FieldValueRequired", field, f"{field}: Required value"))
    min_p, max_p = schema.get("minProperties"), schema.get("maxProperties")
    if min_p is not None and len(value) < min_p:
        out.append(Cause("FieldValueInvalid", label,
                         f"{label}: Invalid value: {len(value)}: {label} in body should have at least {min_p} "
                         "properties"))
    if max_p is not None and len(value) > max_p:
        out.append(Cause("FieldValueTooMany", label,
                         f"{label}: Too many: {len(value)}: must have at most {max_p} items"))
    if schema.get("x-kubernetes-embedded-resource"):
        for key in ("apiVersion", "kind"):
            if not value.get(key):
                field = _join(path, key)
                out.append(Cause("FieldValueRequired", field, f"{field}: Required value: must not be empty"))
    addl = schema.get("additionalProperties")
    for key, item in value.items():
        if key in props:
            out.extend(validate(item, props[key], _join(path, key)))
        elif isinstance(addl, dict):
            out.extend(validate(item, addl, f"{path}[{key}]"))
    return out


def _combinators(value: Any, schema: dict[str, Any], path: str, label: str) -> list[Cause]:
    out: list[Cause] = []
    for sub in schema.get("allOf") or []:
        out.extend(_value_only(value, sub, path))
    any_of = schema.get("anyOf")
    if any_of and not any(not _value_only(value, sub, path) for sub in any_of):
        out.append(Cause("FieldValueInvalid", label,
                         f"{label}: Invalid value: {show(value)}: {label} in body must match at least one "
                         "schema in anyOf"))
    one_of = schema.get("oneOf")
    if one_of:
        matches = sum(1 for sub in one_of if not _value_only(value, sub, path))
        if matches != 1:
            out.append(Cause("FieldValueInvalid", label,
                             f"{label}: Invalid value: {show(value)}: {label} in body must match exactly one "
                             "schema in oneOf"))
    if isinstance(schema.get("not"), dict) and not _value_only(value, schema["not"], path):
        out.append(Cause("FieldValueInvalid", label,
                         f"{label}: Invalid value: {show(value)}: {label} in body must not match the schema in not"))
    return out


def _value_only(value: Any, sub: dict[str, Any], path: str) -> list[Cause]:
    """Validate against a value-validation branch (no type needed, like structural schemas allow)."""
    return validate(value, sub, path)


def message(qualified: str, name: str, causes: list[Cause]) -> str:
    """`Gateway.gateway.networking.k8s.io "x" is invalid: <cause>` (bracketed when several)."""
    texts = [c.message for c in causes]
    body = texts[0] if len(texts) == 1 else "[" + ", ".join(texts) + "]"
    return f'{qualified} "{name}" is invalid: {body}'
