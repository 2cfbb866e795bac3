# Copyright 2026 The modelplane.serving authors
# Apache License 2.0 (see LICENSE)
"""Check a value against a CRD's structural schema as the API server does, reporting every problem at once.

``Checker(schema, path).check(value)`` returns the defaulted value and its problems, in the API server's order of
work: null fields pruned and defaults applied (``defaulted``); then the OpenAPI schema, with jsonschema (unknown
fields refused, as strict field validation does); then the Kubernetes extensions: unique list-map keys and the CEL
rules (``x-kubernetes-validations``, with cel-python). A CEL rule is skipped where the schema already refused a value
at or below the field it reports on: it would say the same again, or nothing sensible.

Each problem is ``<path>: <message>``. A CEL rule's message on a scalar field follows the value
(``"West" is not a DNS-1123 subdomain...``); values at ``hidden`` fields are never quoted.
"""

from __future__ import annotations

import copy
import difflib
import functools
import importlib.util
import json
import re
from collections.abc import Iterator
from typing import Any

from ansible_collections.modelplane.serving.plugins.module_utils.servingstack.errors import (
    Problem,
    join_path,
    mismatch,
    quote,
)

try:
    import jsonschema
except ImportError:  # reported by missing(); the module's import sanity test runs without it
    jsonschema = None

# What a message calls each schema type.
KINDS = {"object": "a mapping", "array": "a list", "string": "a string", "integer": "an integer",
         "number": "a number", "boolean": "a boolean"}
_EMPTY = {"array": [], "string": ""}


def missing() -> list[str]:
    """The Python packages a check needs and this interpreter lacks (requirements.txt lists them)."""
    return [name for name, found in (("jsonschema", jsonschema is not None),
                                     ("cel-python", importlib.util.find_spec("celpy") is not None)) if not found]


def field_of(path: str) -> str:
    """The schema field a value's path is at: ``spec.secrets[1].name`` -> ``spec.secrets[].name``."""
    return re.sub(r"\[\d+\]", "[]", path)


def has_problem(problems: list[Problem], path: str) -> bool:
    """Whether a problem is at ``path`` or below it."""
    return any(problem.path == path or problem.path.startswith((f"{path}.", f"{path}[")) for problem in problems)


def unknown_field(key: object, known: list[str]) -> tuple[str, str]:
    """The path element and message of a field the schema does not have."""
    if not isinstance(key, str):
        return quote(key), f"{quote(key)} is not a valid field name (names are strings)"
    hint = difflib.get_close_matches(key, known, n=1, cutoff=0.75)
    suffix = f' (did you mean "{hint[0]}"?)' if hint else ""
    return key or quote(key), f"unknown field{suffix}; known fields: {', '.join(known) or 'none'}"


def _absent(schema: dict, value: object, path: str, empty_is_default: frozenset[str]) -> bool:
    """Whether ``value`` counts as absent: null (the API server prunes nulls), or empty where that is default."""
    empty = _EMPTY.get(schema.get("type"))
    return value is None or (field_of(path) in empty_is_default and type(value) is type(empty) and value == empty)


def defaulted(schema: dict, value: object, path: str, empty_is_default: frozenset[str] = frozenset()) -> object:
    """A copy of ``value`` with null (or empty-is-default) fields pruned and the schema's defaults applied."""
    if isinstance(value, list) and "items" in schema:
        return [defaulted(schema["items"], item, join_path(path, index), empty_is_default)
                for index, item in enumerate(value)]
    if not isinstance(value, dict) or "properties" not in schema:
        return copy.deepcopy(value)
    result: dict = {}
    for key, child in schema["properties"].items():
        item, child_path = value.get(key), join_path(path, key)
        if _absent(child, item, child_path, empty_is_default):
            if "default" not in child:
                continue
            item = copy.deepcopy(child["default"])
        result[key] = defaulted(child, item, child_path, empty_is_default)
    result.update({key: copy.deepcopy(item) for key, item in value.items() if key not in schema["properties"]})
    return result


def _required(validator: Any, names: list[str], instance: object, schema: dict) -> Iterator[Any]:
    if validator.is_type(instance, "object"):
        for name in names:
            if name not in instance:  # type: ignore[operator]
                enum = schema.get("properties", {}).get(name, {}).get("enum", ())
                hint = f"; it must be {enum[0]}" if len(enum) == 1 else ""
                yield jsonschema.ValidationError(f"required field is missing{hint}", path=[name])


def _additional(validator: Any, allowed: object, instance: object, schema: dict) -> Iterator[Any]:
    if not validator.is_type(instance, "object"):
        return
    known = list(schema.get("properties", {}))
    for key in [key for key in instance if key not in known]:  # type: ignore[attr-defined]
        if isinstance(allowed, dict) and isinstance(key, str):
            yield from validator.descend(instance[key], allowed, path=key)  # type: ignore[index]
        else:
            element, message = unknown_field(key, known)
            yield jsonschema.ValidationError(message, path=[element])


def _properties(validator: Any, properties: dict, instance: object, schema: dict) -> Iterator[Any]:
    """Draft 4's ``properties``, refusing unknown fields where no ``additionalProperties`` is given (the API server's
    strict field validation)."""
    yield from jsonschema.Draft4Validator.VALIDATORS["properties"](validator, properties, instance, schema)
    if "additionalProperties" not in schema:
        yield from _additional(validator, False, instance, schema)


def _pattern(validator: Any, pattern: str, instance: object, schema: dict) -> Iterator[Any]:
    import re2  # cel-python's RE2, as the API server's Go regexp: Python's $ also matches before a final newline

    if validator.is_type(instance, "string") and not re2.search(pattern, instance):
        yield jsonschema.ValidationError(f"does not match {pattern}")


def _nodes(schema: dict, value: object, path: str) -> Iterator[tuple[dict, object, str]]:
    """Every node of ``value`` the schema describes, with its schema and path, parents first."""
    yield schema, value, path
    if isinstance(value, dict):
        for key, child in schema.get("properties", {}).items():
            if key in value:
                yield from _nodes(child, value[key], join_path(path, key))
    elif isinstance(value, list) and "items" in schema:
        for index, item in enumerate(value):
            yield from _nodes(schema["items"], item, join_path(path, index))


def _duplicate_keys(keys: list[str], items: list, path: str) -> Iterator[Problem]:
    """The items of a list-map (``x-kubernetes-list-type: map``) whose keys an earlier item has."""
    seen: dict[tuple, int] = {}
    for index, item in enumerate(items):
        if not isinstance(item, dict) or not all(isinstance(item.get(key), str | int) for key in keys):
            continue
        identity = tuple(item[key] for key in keys)
        if identity in seen:
            label = ", ".join(quote(item[key]) for key in keys)
            yield Problem(f"{path}[{index}].{keys[0]}", f"{label} is already used by {path}[{seen[identity]}]."
                          f"{keys[0]}; {' and '.join(keys)} must be unique in the list")
        else:
            seen[identity] = index


@functools.cache
def _program(rule: str) -> Any:
    import celpy  # imported when first needed: it takes longer to import than everything else here

    environment = celpy.Environment()  # cheap once the first has built cel-python's parser
    return environment.program(environment.compile(rule))


# cel-python interprets a rule in about half a millisecond, and the same values come back (defaults, a spec checked
# again by a later task): verdicts are kept, a rule being a pure function of its value.
@functools.lru_cache(maxsize=1024)
def holds(rule: str, value: str) -> bool | None:
    """Whether the CEL ``rule`` holds for ``value`` (JSON text); None when it cannot be evaluated on it."""
    import celpy

    try:
        result = _program(rule).evaluate({"self": celpy.json_to_cel(json.loads(value))})
    except (celpy.CELEvalError, TypeError, ValueError):
        return None  # a value the schema refused somewhere: of another type, or missing a field
    return bool(result) if isinstance(result, celpy.celtypes.BoolType) else None


def _at(value: object, field_path: str) -> object:
    """The value a rule's ``fieldPath`` (``.standard.leaderWorkerSet``) names in ``value``, or None."""
    for name in filter(None, field_path.split(".")):
        value = value.get(name) if isinstance(value, dict) else None
    return value


class Checker:
    """Checks values against one structural schema, whose root ``path`` names in messages.

    ``hidden``: fields (``spec.clientCAs[].certificate``) whose values messages never quote.
    ``empty_is_default``: fields whose empty value ([] or "", of the field's own type) counts as absent.
    """

    def __init__(self, schema: dict, path: str, hidden: frozenset[str] = frozenset(),
                 empty_is_default: frozenset[str] = frozenset()) -> None:
        self.schema = schema
        self.path = path
        self.hidden = hidden
        self.empty_is_default = empty_is_default
        validator = jsonschema.validators.extend(
            jsonschema.Draft4Validator, {"required": _required, "properties": _properties,
                                         "additionalProperties": _additional, "pattern": _pattern})
        self.validator = validator(schema)

    def check(self, value: object) -> tuple[object, list[Problem]]:
        """The defaulted ``value`` and every problem with it."""
        result = defaulted(self.schema, value, self.path, self.empty_is_default)
        problems = self.schema_problems(result)
        nodes = list(_nodes(self.schema, result, self.path))
        for schema, node, path in nodes:
            if isinstance(node, list) and schema.get("x-kubernetes-list-type") == "map":
                problems += _duplicate_keys(schema["x-kubernetes-list-map-keys"], node, path)
        refused = list(problems)
        for schema, node, path in nodes:
            problems += self.rule_problems(schema.get("x-kubernetes-validations", ()), node, path, refused)
        return result, problems

    def schema_problems(self, value: object) -> list[Problem]:
        """The OpenAPI schema's problems with ``value``; a value of the wrong type gets that problem alone."""
        errors = [(functools.reduce(join_path, error.absolute_path, self.path), error)
                  for error in self.validator.iter_errors(value)]
        mistyped = {path for path, error in errors if error.validator == "type"}
        return [Problem(path, self.message(error, path)) for path, error in errors
                if path not in mistyped or error.validator == "type"]

    def shown(self, value: object, path: str) -> str:
        return "the value" if field_of(path) in self.hidden else quote(value)

    def message(self, error: Any, path: str) -> str:
        """A jsonschema error as a message naming the value and the rule."""
        value, rule, kind = error.instance, error.validator_value, error.validator
        if kind == "type":
            hint = f' (quote it in YAML: "{quote(value)}")' if rule == "string" and type(value) in (int, float) else ""
            return mismatch(value, KINDS.get(rule, rule)) + hint
        if kind == "enum":
            return f"{self.shown(value, path)} is not {'one of ' if len(rule) > 1 else ''}{', '.join(map(str, rule))}"
        bound = "below the minimum" if kind.startswith("min") else "above the maximum"
        if kind in ("minLength", "maxLength"):
            return f"{self.shown(value, path)} is {len(value)} characters long, {bound} length {rule}"
        if kind in ("minimum", "maximum"):
            return f"{value} is {bound} {rule}"
        if kind in ("minItems", "maxItems"):
            return f"has {len(value)} item{'s' if len(value) != 1 else ''}, {bound} {rule}"
        if kind == "pattern":
            return f"{self.shown(value, path)} {error.message}"
        return error.message

    def rule_problems(self, rules: list[dict], node: object, path: str, refused: list[Problem]) -> list[Problem]:
        """The CEL rules of one node that ``node`` breaks (skipped where ``refused`` has a problem)."""
        problems: list[Problem] = []
        try:
            text = json.dumps(node, allow_nan=False) if rules else ""
        except (TypeError, ValueError):
            return problems  # not JSON (NaN, a key of another type, a YAML date): the schema refused it already
        for rule in rules:
            target = path + rule.get("fieldPath", "")
            if has_problem(refused, target) or holds(rule["rule"], text) is not False:
                continue
            value = _at(node, rule.get("fieldPath", ""))
            scalar = isinstance(value, str | int | float)
            problems.append(Problem(target, f"{self.shown(value, target)} {rule['message']}" if scalar
                                    else rule["message"]))
        return problems
