# Copyright 2026 The modelplane.serving authors
# Apache License 2.0 (see LICENSE)
"""Read, check and default a whole ServingStack manifest against its CRD (the module's documentation says what a
user sees of it).

``validate(manifest)`` never raises: whatever it is given (None, a list, an int, odd YAML), it returns a
``Validation`` whose ``errors`` hold every problem found, each ``<path>: <problem>`` naming the value and the rule
it breaks, and whose ``manifest`` is a defaulted deep copy when there are no errors.

The manifest is checked as the API server checks a live object: null fields pruned and the CRD's defaults applied
(``defaulted``), then jsonschema with the CRD's schema (unknown fields refused, as strict field validation does)
and its Kubernetes extensions as two more keywords: unique list-map keys, and the CEL rules
(``x-kubernetes-validations``, with cel-python). What the CRD does not say is here, and only here:

* ``PYTHON_ONLY_RULES``, the reference's rules no CEL rule can state (tests/integration/test_crd_differential.py
  lists the same).
* ObjectMeta (``METADATA``, ``_object_meta``), which the API server checks on every object and a CRD may not
  restate; ``metadata.namespace`` and each secret's defaulted (``DEFAULT_NAMESPACE``).
* What a live object carries beyond its desired state, ignored on input, never refused: its ``status`` (returned
  as it came: a Crossplane XR's has conditions our schema lacks), server-set metadata (``SERVER_SET``), and the
  fields Crossplane adds to an XR's spec (``CROSSPLANE_SPEC_FIELDS``), which are dropped.
* ``EMPTY_IS_DEFAULT`` fields, ``HIDDEN`` values (and PEM text anywhere) never quoted, a CEL rule not reported
  where the schema refused a value at or below its field (it would say the same again, or nothing sensible), and
  the pins for the other stack and the accepted but unwise values (``_ignored``, ``_warnings``).
"""

from __future__ import annotations

import copy
import difflib
import functools
import importlib.util
import json
import re
from collections.abc import Callable, Iterator
from dataclasses import dataclass, field
from typing import Any

from ansible_collections.modelplane.serving.plugins.module_utils.servingstack import bounds, schema, versions
from ansible_collections.modelplane.serving.plugins.module_utils.servingstack.components import DYNAMO, STANDARD
from ansible_collections.modelplane.serving.plugins.module_utils.servingstack.errors import (
    DOCUMENT,
    Problem,
    join_path,
    quote,
    sort_key,
)
from ansible_collections.modelplane.serving.plugins.module_utils.servingstack.plan import resolve

try:
    import jsonschema
except ImportError:  # reported by _unavailable(); the import sanity test runs without it
    jsonschema = None
try:
    from cryptography import x509
except ImportError:  # pragma: no cover - cryptography ships with ansible-core
    x509 = None

DEFAULT_NAMESPACE = "default"
INTERNAL_ERROR = "could not be checked because of an internal error"
# What a message calls each JSON type, in the order jsonschema's type checker is asked.
KINDS = {"null": "null", "boolean": "a boolean", "integer": "an integer", "number": "a number", "string": "a string",
         "object": "a mapping", "array": "a list"}
# Which spec group holds the pins of which stack.
STACK_GROUPS = {STANDARD: "standard", DYNAMO: "dynamo"}
EMPTY_IS_DEFAULT = frozenset({"spec.gateway.listeners", "spec.nvidiaDriverRoot"})
HIDDEN = frozenset({"spec.gateway.clientCAs[].certificate"})

# Fields Crossplane adds to a composite resource's spec (XR): v2 XRs nest them under spec.crossplane; legacy
# (v1-style) XRs and claims have them at the top.
CROSSPLANE_SPEC_FIELDS = (
    "crossplane",
    "compositionRef",
    "compositionSelector",
    "compositionRevisionRef",
    "compositionRevisionSelector",
    "compositionUpdatePolicy",
    "compositeDeletePolicy",
    "resourceRef",
    "resourceRefs",
    "writeConnectionSecretToRef",
    "publishConnectionDetailsTo",
    "claimRef",
    "environmentConfigRefs",
)

# ObjectMeta, as the API server checks it (k8s.io/apimachinery's validation), in the CRD's own vocabulary.
DNS1123_SUBDOMAIN = "[a-z0-9]([-a-z0-9]*[a-z0-9])?([.][a-z0-9]([-a-z0-9]*[a-z0-9])?)*"
DNS1123_LABEL = "^[a-z0-9]([-a-z0-9]{0,61}[a-z0-9])?$"
SERVER_SET = ("uid", "resourceVersion", "generation", "creationTimestamp", "deletionTimestamp",
              "deletionGracePeriodSeconds", "finalizers", "ownerReferences", "managedFields", "selfLink",
              "generateName")
QUALIFIED_NAME_RULE = ("a qualified name: an optional DNS-1123 subdomain prefix and '/', then at most 63 letters, "
                       "digits, '-', '_' and '.', starting and ending with a letter or digit")
METADATA: dict = {
    "type": "object",
    "required": ["name"],
    "properties": {
        "name": {"type": "string", "minLength": 1, "maxLength": 253, "x-kubernetes-validations": [{
            "rule": f"self.matches('^{DNS1123_SUBDOMAIN}$')",
            "message": "is not a DNS-1123 subdomain (an object name): lowercase letters, digits, '-' and '.', "
                       "starting and ending with a letter or digit"}]},
        "namespace": {"type": "string", "minLength": 1, "maxLength": 63, "default": DEFAULT_NAMESPACE,
                      "x-kubernetes-validations": [{
                          "rule": f"self.matches('{DNS1123_LABEL}')",
                          "message": "is not a DNS-1123 label (a namespace name): at most 63 lowercase letters, "
                                     "digits and '-', starting and ending with a letter or digit"}]},
        # Label values are checked in _object_meta: labels have no maxItems to bound a CEL rule's cost by.
        "labels": {"type": "object", "additionalProperties": {"type": "string"}},
        "annotations": {"type": "object", "additionalProperties": {"type": "string"}},
        # Set by the API server on a live object; accepted as they come.
        **{key: {} for key in SERVER_SET},
    },
}
# A label or annotation key; its prefix (before the /) is at most 253 characters.
_QUALIFIED_NAME = re.compile(f"({DNS1123_SUBDOMAIN}/)?[A-Za-z0-9]([-A-Za-z0-9_.]{{0,61}}[A-Za-z0-9])?")
_LABEL_VALUE = re.compile("(([A-Za-z0-9][-A-Za-z0-9_.]{0,61})?[A-Za-z0-9])?")
LABEL_VALUE_RULE = ("is not a label value: empty, or at most 63 letters, digits, '-', '_' and '.', starting and ending "
                    "with a letter or digit")
ANNOTATIONS_MAX = 256 * 1024
_PEM_BEGIN = re.compile(r"-----BEGIN ([A-Z0-9 ]+)-----")
_PEM_END = re.compile(r"-----END ([A-Z0-9 ]+)-----")


# --- the outcome and its messages ------------------------------------------------------------------------------------


@dataclass
class Validation:
    """The outcome of ``validate``: the defaulted manifest (None when invalid), the problems, the ignored pins
    and the warnings (accepted values that are unwise, each ``<path>: <value> <why>``)."""

    manifest: dict | None
    errors: list[Problem] = field(default_factory=list)
    ignored: list[dict] = field(default_factory=list)
    warnings: list[Problem] = field(default_factory=list)


def mismatch(value: object, expected: str) -> str:
    """A type error: ``"80" is a string, not an integer``; ``expected a mapping, got a list``."""
    if value is None:
        return f"is null; expected {expected}"
    kind = next((kind for name, kind in KINDS.items() if jsonschema.Draft4Validator.TYPE_CHECKER.is_type(value, name)),
                f"a {type(value).__name__}")
    if isinstance(value, str | int | float | bool):
        return f"{quote(value)} is {kind}, not {expected}"
    return f"expected {expected}, got {kind}"


def field_of(path: str) -> str:
    """The schema field a value's path is at: ``spec.secrets[1].name`` -> ``spec.secrets[].name``."""
    return re.sub(r"\[\d+\]", "[]", path)


def has_problem(problems: list[Problem], path: str) -> bool:
    """Whether a problem is at ``path`` or below it."""
    return any(problem.path == path or problem.path.startswith((f"{path}.", f"{path}[")) for problem in problems)


# --- the CRD's schema, defaults, list-map keys and CEL rules -------------------------------------------------


def defaulted(node: dict, value: object, path: str, empty_is_default: frozenset[str] = frozenset()) -> object:
    """A copy of ``value`` with null (or empty-is-default) fields pruned and the schema's defaults applied."""
    if isinstance(value, list) and "items" in node:
        return [defaulted(node["items"], item, join_path(path, index), empty_is_default)
                for index, item in enumerate(value)]
    if isinstance(value, dict) and node.get("additionalProperties", {}).get("type") == "string":
        # A null in a map of strings (labels, annotations) reads as "", as the API server decodes it.
        return {key: "" if item is None else copy.deepcopy(item) for key, item in value.items()}
    if not isinstance(value, dict) or "properties" not in node:
        return copy.deepcopy(value)
    result: dict = {}
    for key, child in node["properties"].items():
        item, child_path = value.get(key), join_path(path, key)
        # [] is never "" (nor the reverse): only the field's own empty value is absent.
        if item is None or (field_of(child_path) in empty_is_default
                            and item == {"array": [], "string": ""}.get(child.get("type"))):
            if "default" not in child:
                continue
            item = copy.deepcopy(child["default"])
        result[key] = defaulted(child, item, child_path, empty_is_default)
    result.update({key: copy.deepcopy(item) for key, item in value.items() if key not in node["properties"]})
    return result


def _required(validator: Any, names: list[str], instance: object, node: dict) -> Iterator[Any]:
    for name in names if validator.is_type(instance, "object") else ():
        if name not in instance:  # type: ignore[operator]
            enum = node.get("properties", {}).get(name, {}).get("enum", ())
            hint = f"; it must be {enum[0]}" if len(enum) == 1 else ""
            yield jsonschema.ValidationError(f"required field is missing{hint}", path=[name])


def _properties(validator: Any, properties: dict, instance: object, node: dict) -> Iterator[Any]:
    """Draft 4's ``properties``, refusing unknown fields where no ``additionalProperties`` is given (the API server's
    strict field validation)."""
    yield from jsonschema.Draft4Validator.VALIDATORS["properties"](validator, properties, instance, node)
    if "additionalProperties" not in node:
        yield from _additional(validator, False, instance, node)


def _additional(validator: Any, allowed: object, instance: object, node: dict) -> Iterator[Any]:
    if not validator.is_type(instance, "object"):
        return
    known = list(node.get("properties", {}))
    for key in [key for key in instance if key not in known]:  # type: ignore[attr-defined]
        if not isinstance(key, str):
            yield jsonschema.ValidationError(f"{quote(key)} is not a valid field name (names are strings)",
                                             path=[quote(key)])
        elif isinstance(allowed, dict):
            yield from validator.descend(instance[key], allowed, path=key)  # type: ignore[index]
        else:
            hint = difflib.get_close_matches(key, known, n=1, cutoff=0.75)
            suffix = f' (did you mean "{hint[0]}"?)' if hint else ""
            yield jsonschema.ValidationError(f"unknown field{suffix}; known fields: {', '.join(known) or 'none'}",
                                             path=[key or quote(key)])


def _unique_keys(validator: Any, keys: list[str], instance: object, node: dict) -> Iterator[Any]:
    """``x-kubernetes-list-map-keys``: each item whose keys an earlier item has. The error's message is the earlier
    item's index, which ``_message`` completes with the list's path (a keyword does not know where it is)."""
    seen: dict[tuple, int] = {}
    for index, item in enumerate(instance if validator.is_type(instance, "array") else ()):  # type: ignore[arg-type]
        if isinstance(item, dict) and all(isinstance(item.get(key), str | int) for key in keys):
            first = seen.setdefault(tuple(item[key] for key in keys), index)
            if first != index:
                yield jsonschema.ValidationError(str(first), path=[index, keys[0]], instance=item)


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


@functools.cache
def _types_only() -> Any:
    """Draft 4's validator class that checks types alone."""
    keywords = ("type", "properties", "items", "additionalProperties")
    return jsonschema.validators.create(meta_schema=jsonschema.Draft4Validator.META_SCHEMA, validators={
        keyword: jsonschema.Draft4Validator.VALIDATORS[keyword] for keyword in keywords})


def _rules(validator: Any, rules: list[dict], instance: object, node: dict) -> Iterator[Any]:
    """``x-kubernetes-validations``: each CEL rule ``instance`` breaks, at the field its ``fieldPath`` names.

    Rules run only on a value whose every field has its type. The API server checks no rule of an object with a type
    error (apiextensions-apiserver's customresource strategy, hasBlockingErr); here the other rules still run, for
    their problems to be told at once. A rule over a list would otherwise walk a string put in its place, character
    by character, at a cost no maxItems bounds (300 characters for spec.gateway.listeners took minutes and GBs)."""
    if not _types_only()(node).is_valid(instance):
        return  # the type problem is reported by the schema's own pass
    try:
        text = json.dumps(instance, allow_nan=False)
    except (TypeError, ValueError):
        return  # not JSON (NaN, a key of another type, a YAML date): the schema refuses it
    for rule in rules:
        if holds(rule["rule"], text) is False:
            names = [name for name in rule.get("fieldPath", "").split(".") if name]
            value = functools.reduce(lambda found, name: found.get(name) if isinstance(found, dict) else None,
                                     names, instance)
            yield jsonschema.ValidationError(rule["message"], path=names, instance=value)


def _message(error: Any, path: str) -> str:
    """A jsonschema error as a message naming the value and the rule."""
    value, rule, kind = error.instance, error.validator_value, error.validator
    shown = "the value" if field_of(path) in HIDDEN else quote(value)
    bound = "below the minimum" if kind.startswith("min") else "above the maximum"
    if kind == "type":
        hint = f' (quote it in YAML: "{quote(value)}")' if rule == "string" and type(value) in (int, float) else ""
        return mismatch(value, KINDS.get(rule, rule)) + hint
    if kind == "enum":
        return f"{shown} is not {'one of ' if len(rule) > 1 else ''}{', '.join(map(str, rule))}"
    if kind in ("minLength", "maxLength"):
        return f"{shown} is {len(value)} characters long, {bound} length {rule}"
    if kind in ("minimum", "maximum"):
        return f"{value} is {bound} {rule}"
    if kind in ("minItems", "maxItems"):
        return f"has {len(value)} item{'s' if len(value) != 1 else ''}, {bound} {rule}"
    if kind == "x-kubernetes-list-map-keys":
        first = f"{path.rsplit('[', 1)[0]}[{error.message}].{rule[0]}"
        return (f"{', '.join(quote(value[key]) for key in rule)} is already used by {first}; "
                f"{' and '.join(rule)} must be unique in the list")
    if kind == "x-kubernetes-validations" and isinstance(value, str | int | float):
        return f"{shown} {error.message}"  # a rule's message on a scalar follows the value
    return error.message


@functools.cache
def _validator() -> Any:
    """The whole manifest's validator: the CRD's spec, ObjectMeta, and a live object's ``status`` (the server's, or
    Crossplane's, not input: returned as it came, unchecked)."""
    manifest = {"type": "object", "required": ["apiVersion", "kind", "metadata", "spec"], "properties": {
        "apiVersion": {"type": "string", "enum": [schema.API_VERSION]},
        "kind": {"type": "string", "enum": [schema.KIND]}, "metadata": METADATA, "spec": schema.SPEC, "status": {}}}
    keywords = {"required": _required, "properties": _properties, "additionalProperties": _additional,
                "x-kubernetes-list-map-keys": _unique_keys, "x-kubernetes-validations": _rules}
    return jsonschema.validators.extend(jsonschema.Draft4Validator, keywords)(manifest)


# --- the reference's rules the CRD cannot state --------------------------------------------------------------


def _pem_problem(text: str) -> str | None:
    """Why ``text`` is not one or more PEM CERTIFICATE blocks that parse as X.509 (the CRD refuses a pasted key)."""
    begins = _PEM_BEGIN.findall(text)
    if not begins:
        return "is not PEM: expected one or more -----BEGIN CERTIFICATE----- blocks (the value is not shown)"
    others = sorted(set(begins) - {"CERTIFICATE"})
    if others:
        return f"contains a PEM {', '.join(others)} block; only CERTIFICATE blocks are allowed"
    if _PEM_END.findall(text) != begins:
        return "has a -----BEGIN CERTIFICATE----- block without its matching -----END CERTIFICATE----- line"
    try:
        parsed = len(x509.load_pem_x509_certificates(text.encode("utf-8", "replace"))) if x509 else len(begins)
    except ValueError:
        parsed = 0
    return None if parsed == len(begins) else \
        "a CERTIFICATE block does not parse as an X.509 certificate (the value is not shown)"


def _client_ca_certificates(spec: dict) -> list[Problem]:
    """Each client CA certificate is PEM CERTIFICATE blocks that parse as X.509: no CEL function parses PEM."""
    cas = resolve(spec, "gateway.clientCAs")
    found = []
    for index, ca in enumerate(cas if isinstance(cas, list) else ()):
        certificate = ca.get("certificate") if isinstance(ca, dict) else None
        reason = _pem_problem(certificate) if isinstance(certificate, str) else None
        if reason:
            found.append(Problem(f"spec.gateway.clientCAs[{index}].certificate", reason))
    return found


def _grove_release_order(spec: dict) -> list[Problem]:
    """Grove is v0.1.0-alpha.12-rc2 or later in release order, where alpha.12-rc1 < alpha.12-rc2 < alpha.12: an
    order CEL cannot compare in (semantic-version precedence sorts those the other way)."""
    grove = resolve(spec, "dynamo.grove")
    reason = versions.check_grove(grove) if spec.get("stack") == DYNAMO and isinstance(grove, str) else None
    return [Problem("spec.dynamo.grove", f"{quote(grove)} {reason}")] if reason else []


# Each is reported unless the schema or a CEL rule refused the value already.
PYTHON_ONLY_RULES: tuple[Callable[[dict], list[Problem]], ...] = (_client_ca_certificates, _grove_release_order)


# --- the manifest --------------------------------------------------------------------------------------------


def without_crossplane_fields(spec: object) -> object:
    """``spec`` without the fields Crossplane adds to an XR (ignored on input, never refused)."""
    if not isinstance(spec, dict):
        return spec
    return {key: value for key, value in spec.items() if key not in CROSSPLANE_SPEC_FIELDS}


def _is_qualified_name(key: str) -> bool:
    return bool(_QUALIFIED_NAME.fullmatch(key)) and len(key.split("/")[0]) <= 253


def _object_meta(metadata: object) -> list[Problem]:
    """Label and annotation keys, label values, and the annotations' size, as the API server checks them (METADATA
    checks the rest)."""
    found = []
    for name, what in (("labels", "a label key"), ("annotations", "an annotation key")):
        given = metadata.get(name) if isinstance(metadata, dict) else None
        for key in given if isinstance(given, dict) else ():
            # The API server lowercases an annotation key before checking it.
            if isinstance(key, str) and not _is_qualified_name(key.lower() if name == "annotations" else key):
                found.append(Problem(join_path(f"metadata.{name}", key), f"{quote(key)} is not {QUALIFIED_NAME_RULE} "
                                     f"({what})"))
    labels = metadata.get("labels") if isinstance(metadata, dict) else None
    found += [Problem(join_path("metadata.labels", key), f"{quote(value)} {LABEL_VALUE_RULE}")
              for key, value in (labels.items() if isinstance(labels, dict) else ())
              if isinstance(value, str) and not _LABEL_VALUE.fullmatch(value)]
    annotations = metadata.get("annotations") if isinstance(metadata, dict) else None
    size = sum(len(key.encode("utf-8")) + len(value.encode("utf-8")) for key, value in annotations.items()
               if isinstance(key, str) and isinstance(value, str)) if isinstance(annotations, dict) else 0
    if size > ANNOTATIONS_MAX:
        found.append(Problem("metadata.annotations", f"are {size} bytes long, above the maximum {ANNOTATIONS_MAX}"))
    return found


def _check(manifest: dict) -> tuple[dict, list[Problem]]:
    """The defaulted manifest and its problems: the CRD's and ObjectMeta's, then those of PYTHON_ONLY_RULES.

    The fields Crossplane adds to an XR's spec are dropped first. Cheap checks first: a manifest that breaks one of
    ``bounds`` gets those problems alone, so that what follows never walks more than the bounds allow (a CEL rule
    over a list runs on no more items than its ``maxItems``)."""
    given = {**manifest, "spec": without_crossplane_fields(manifest.get("spec"))}
    validator = _validator()
    exceeded = bounds.exceeded(given, validator.schema)
    if exceeded:
        return {}, exceeded
    result: dict = defaulted(validator.schema, given, "", EMPTY_IS_DEFAULT)  # type: ignore[assignment]
    errors = [(functools.reduce(join_path, error.absolute_path, ""), error) for error in validator.iter_errors(result)]
    # A value of the wrong type gets that problem alone; a CEL rule is skipped where the schema refused a value at
    # or below its field.
    mistyped = {path for path, error in errors if error.validator == "type"}
    refused = [Problem(path, _message(error, path)) for path, error in errors
               if error.validator != "x-kubernetes-validations" and (path not in mistyped or error.validator == "type")]
    problems = refused + [Problem(path, _message(error, path)) for path, error in errors
                          if error.validator == "x-kubernetes-validations" and not has_problem(refused, path)]
    problems += _object_meta(result.get("metadata"))
    if isinstance(result.get("spec"), dict):
        problems += [problem for rule in PYTHON_ONLY_RULES for problem in rule(result["spec"])
                     if not has_problem(problems, problem.path)]
    return result, problems


def _ignored(raw: object, spec: dict) -> list[dict]:
    """The user's pins for the stack not chosen."""
    others = [stack for stack in STACK_GROUPS if stack != spec.get("stack")]
    if len(others) != 1:  # no stack of the two: refused already
        return []
    group = STACK_GROUPS[others[0]]
    given = raw.get(group) if isinstance(raw, dict) else None
    if not isinstance(given, dict) or not isinstance(spec.get(group), dict):
        return []
    return [{"path": f"spec.{group}.{key}", "value": copy.deepcopy(given[key]),
             "reason": f"stack is {spec['stack']}: {others[0]}-stack pins are ignored"}
            for key in spec[group] if given.get(key) is not None]


def _warnings(spec: dict, problems: list[Problem]) -> list[Problem]:
    """Accepted but unwise: an Envoy Gateway pin below v1.8.1 (``versions.caution_envoy_gateway``), and client CAs
    without a hostname: the envoy_gateway role stores them, but with no HTTPS listener there is nothing to require
    client certificates on (it makes no ClientTrafficPolicy)."""
    found = []
    pin = resolve(spec, "versions.envoyGateway")
    reason = versions.caution_envoy_gateway(pin)
    if reason:
        found.append(Problem("spec.versions.envoyGateway", f"{quote(pin)} {reason}"))
    if resolve(spec, "gateway.clientCAs") and not resolve(spec, "gateway.hostname"):
        found.append(Problem("spec.gateway.clientCAs", "set without spec.gateway.hostname, so the gateway has no "
                             "HTTPS listener to require client certificates on: the CAs are stored but not enforced; "
                             "set spec.gateway.hostname to enforce them"))
    return [warning for warning in found if not has_problem(problems, warning.path)]


def _validate(manifest: object) -> Validation:
    if not isinstance(manifest, dict):
        wanted = "a ServingStack manifest (a mapping with apiVersion, kind, metadata and spec)"
        return Validation(None, [Problem(DOCUMENT, mismatch(manifest, wanted))])
    result, problems = _check(manifest)
    spec = result.get("spec")
    ignored = _ignored(manifest.get("spec"), spec) if isinstance(spec, dict) else []
    warnings = _warnings(spec, problems) if isinstance(spec, dict) else []
    if problems:
        return Validation(None, sorted(problems, key=sort_key), ignored, warnings)
    for secret in spec["secrets"]:
        secret.setdefault("namespace", result["metadata"]["namespace"])
    return Validation(result, [], ignored, warnings)


def _unavailable() -> list[Problem]:
    """Why nothing can be checked here: the Python packages the checks need and this interpreter lacks."""
    needed = {"jsonschema": jsonschema, "cel-python": importlib.util.find_spec("celpy"), "PyYAML": schema.yaml}
    names = [name for name, found in needed.items() if found is None]
    return [Problem(DOCUMENT, f"cannot be checked: this Python lacks {', '.join(names)} (see the requirements.txt "
                    "of modelplane.serving)")] if names else []


def validate(manifest: object) -> Validation:
    """Validate and default a whole ServingStack manifest. Never raises."""
    unavailable = _unavailable()
    if unavailable:
        return Validation(None, unavailable)
    try:
        return _validate(manifest)
    except RecursionError:
        return Validation(None, [Problem(DOCUMENT, "is nested too deeply to be a ServingStack manifest")])
    except Exception as error:  # the promise is "never raises"; the fuzz tests fail on this text
        return Validation(None, [Problem(DOCUMENT, f"{INTERNAL_ERROR} ({type(error).__name__}); please report it")])


def defaulted_spec(spec: dict | None = None) -> dict:
    """``spec`` with every default of the reference applied (all defaults when None).

    For callers without a whole manifest. Raises ValueError listing the problems when ``spec`` is invalid.
    Secrets keep their namespace unset when absent: only a manifest knows its namespace. The fields
    Crossplane adds to an XR's spec are ignored, as ``validate`` ignores them.
    """
    if spec is None:
        # The defaults alone, no secret invented: tests/unit/test_crd.py checks that they are valid.
        return defaulted(schema.SPEC, {}, "spec")  # type: ignore[return-value]
    manifest = {"apiVersion": schema.API_VERSION, "kind": schema.KIND, "metadata": {"name": "spec"}, "spec": spec}
    unavailable = _unavailable()
    result, problems = ({}, unavailable) if unavailable else _check(manifest)
    if problems:
        listed = "\n".join(f"- {problem}" for problem in sorted(problems, key=sort_key))
        raise ValueError("invalid ServingStack spec:\n" + listed)
    return result["spec"]
