"""Field-level decoding of built-in kinds, using the `kubernetes` client's generated models as the schema.

The API server decodes built-in objects into Go structs: unknown fields are dropped (with a warning,
or refused under `fieldValidation=Strict`) at any depth, and a value of the wrong JSON type is a 400.
The Python client's models (`openapi_types`, `attribute_map`) describe those structs field by field.
Only unambiguous type errors are reported: numbers in string fields are left alone (Quantity fields
such as `resources.limits.cpu` accept numbers), except for the known string maps in `kinds.decode_errors`.
"""

from __future__ import annotations

import functools
import re
from typing import Any

try:
    from kubernetes.client import models as _models
except ImportError:  # pragma: no cover - the kubernetes client is a runtime dependency
    _models = None

_LIST = re.compile(r"^List\[(.+)\]$")
_DICT = re.compile(r"^Dict\[str, (.+)\]$")
_GO_TYPES = {"int": "int32", "bool": "bool", "str": "string", "float": "float64"}


def model_for(kind: str, version: str) -> str | None:
    """The client model name of a built-in kind (`V1Deployment`, `CoreV1Event`), or None."""
    if _models is None:
        return None
    for name in (f"{version.capitalize()}{kind}", f"Core{version.capitalize()}{kind}"):
        if hasattr(_models, name):
            return name
    return None


@functools.cache
def _fields(model: str) -> dict[str, str]:
    """JSON field name -> client type string of a model."""
    cls = getattr(_models, model)
    return {json_name: cls.openapi_types[attr] for attr, json_name in cls.attribute_map.items()}


def _json_type(value: Any) -> str:
    if isinstance(value, bool):
        return "bool"
    if isinstance(value, int | float):
        return "number"
    if isinstance(value, str):
        return "string"
    if isinstance(value, list):
        return "array"
    return "object" if isinstance(value, dict) else "null"


def _join(path: str, key: str) -> str:
    return f"{path}.{key}" if path else key


def walk(value: Any, type_str: str, path: str, unknown: list[str], errors: list[str]) -> None:
    """Prune unknown fields in place (collecting their paths) and collect type errors."""
    if value is None or type_str in ("object", "datetime"):
        return
    match = _LIST.match(type_str)
    if match:
        if not isinstance(value, list):
            errors.append(f"json: cannot unmarshal {_json_type(value)} into Go struct field {path} of type []")
            return
        for i, item in enumerate(value):
            walk(item, match.group(1), f"{path}[{i}]", unknown, errors)
        return
    match = _DICT.match(type_str)
    if match:
        if not isinstance(value, dict):
            errors.append(f"json: cannot unmarshal {_json_type(value)} into Go struct field {path} of type map")
            return
        for key, item in value.items():
            walk(item, match.group(1), f"{path}[{key}]", unknown, errors)
        return
    if type_str == "int":
        if isinstance(value, bool) or not isinstance(value, int | float) or (
                isinstance(value, float) and not value.is_integer()):
            errors.append(f"json: cannot unmarshal {_json_type(value)} into Go struct field {path} of type int32")
        return
    if type_str == "float":
        if isinstance(value, bool) or not isinstance(value, int | float):
            errors.append(f"json: cannot unmarshal {_json_type(value)} into Go struct field {path} of type float64")
        return
    if type_str == "bool":
        if not isinstance(value, bool):
            errors.append(f"json: cannot unmarshal {_json_type(value)} into Go struct field {path} of type bool")
        return
    if type_str in ("str", "bytes"):
        if isinstance(value, dict | list):
            errors.append(f"json: cannot unmarshal {_json_type(value)} into Go struct field {path} of type string")
        return
    if _models is None or not hasattr(_models, type_str):
        return
    if not isinstance(value, dict):
        errors.append(f"json: cannot unmarshal {_json_type(value)} into Go struct field {path} of type "
                      f"{type_str}")
        return
    fields = _fields(type_str)
    for key in list(value):
        if key not in fields:
            unknown.append(_join(path, key))
            del value[key]
            continue
        walk(value[key], fields[key], _join(path, key), unknown, errors)


def decode(kind: str, version: str, obj: dict[str, Any]) -> tuple[list[str], list[str]] | None:
    """(unknown field paths, type errors) for a built-in object, pruning in place; None if no model."""
    model = model_for(kind, version)
    if model is None:
        return None
    unknown: list[str] = []
    errors: list[str] = []
    fields = _fields(model)
    for key in list(obj):
        if key in ("apiVersion", "kind"):
            continue
        if key not in fields:
            unknown.append(key)
            del obj[key]
            continue
        walk(obj[key], fields[key], key, unknown, errors)
    return unknown, errors
