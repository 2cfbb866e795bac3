# Copyright 2026 The modelplane.serving authors
# Apache License 2.0 (see LICENSE)
"""Validate and default a whole ServingStack manifest.

``validate(manifest)`` never raises: whatever it is given (None, a list, an int, odd YAML), it
returns a ``Validation`` whose ``errors`` hold every problem found, each ``<path>: <problem>``
naming the value and the rule it breaks, and whose ``manifest`` is a defaulted deep copy when
there are no errors.

Decisions beyond the reference, each enforced here (and in the CRD where a schema can say it):

* ``metadata.namespace`` defaults to ``default`` for a manifest read from a file or given inline
  (a live object always has one). Each ``spec.secrets[].namespace`` defaults to that namespace.
* Unknown fields are errors at every level, with a "did you mean" hint for near misses.
* What a live object carries beyond its desired state is ignored on input, never refused: its
  ``status`` (returned as it came, unchecked: a Crossplane XR's has conditions our schema lacks),
  server-set metadata, and the fields Crossplane adds to an XR's spec (``spec.crossplane`` and the
  legacy top-level ones, ``schema.CROSSPLANE_SPEC_FIELDS``), which are dropped.
* A null value counts as absent (the API server prunes nulls before defaulting), and so does an
  empty ``gateway.listeners`` or ``nvidiaDriverRoot`` (the default listener, ``/``).
* Listener ports are unique: Gateway API treats listeners that share a port as conflicted
  (same protocol: indistinct; HTTP and TCP on one port: every listener on it is conflicted).
* With ``gateway.hostname`` no listener is named ``https`` or uses port 443: the envoy_gateway
  role adds its own HTTPS listener so named, on that port, next to a hostname.
* A client CA's name fits the ConfigMap the envoy_gateway role names after it
  (``mp-client-ca-<name>``, at most 253 characters).
* Pins for the other stack (``standard.*`` on Dynamo, ``dynamo.*`` on Standard) are reported in
  ``ignored`` and only type- and length-checked; the version rules apply to the pins in use.
* A pin in range but unwise (Envoy Gateway below v1.8.1) is reported in ``warnings``.
"""

from __future__ import annotations

import copy
import difflib
import functools
import ipaddress
import re
from dataclasses import dataclass, field

from ansible_collections.modelplane.serving.plugins.module_utils.servingstack import pem, versions
from ansible_collections.modelplane.serving.plugins.module_utils.servingstack.errors import (
    Problem,
    join_path,
    mismatch,
    quote,
    sort_key,
)
from ansible_collections.modelplane.serving.plugins.module_utils.servingstack.schema import (
    API_VERSION,
    CLIENT_CA_CONFIGMAP_PREFIX,
    CLIENT_CA_NAME_MAX,
    CONFIGMAP_NAME_MAX,
    CROSSPLANE_SPEC_FIELDS,
    DNS1123_SUBDOMAIN,
    DYNAMO,
    HTTPS_LISTENER_NAME,
    HTTPS_LISTENER_PORT,
    KIND,
    KUBECONFIG,
    METADATA,
    ROOT_FIELDS,
    SECRET_TYPES,
    SPEC,
    STANDARD,
)

DEFAULT_NAMESPACE = "default"
DOCUMENT = "(document)"
INTERNAL_ERROR = "could not be checked because of an internal error"

# Which spec group holds the pins of which stack.
STACK_GROUPS = {STANDARD: "standard", DYNAMO: "dynamo"}


def _is_empty(schema: dict, value: object) -> bool:
    """An empty value (of the field's own type) of a field whose empty value means its default."""
    kind = list if schema.get("type") == "array" else str
    return bool(schema.get("_empty_is_default")) and isinstance(value, kind) and not value


def without_crossplane_fields(spec: object) -> object:
    """``spec`` without the fields Crossplane adds to an XR (ignored on input, never refused)."""
    if not isinstance(spec, dict):
        return spec
    return {key: value for key, value in spec.items() if key not in CROSSPLANE_SPEC_FIELDS}


@functools.cache
def go_pattern(pattern: str) -> re.Pattern:
    """A schema ``pattern`` as the API server matches it (Go's RE2): ``$`` is the end of the text. Python's ``$``
    also matches before a final newline, which let "kc\\n" pass as a DNS-1123 name the API server refuses."""
    return re.compile(re.sub(r"(?<!\\)\$", r"\\Z", pattern))


def _is_ip_address(text: str) -> bool:
    try:
        ipaddress.ip_address(text)
    except ValueError:
        return False
    return True


@dataclass
class Validation:
    """The outcome of ``validate``: the defaulted manifest (None when invalid), the problems, the ignored pins
    and the warnings (accepted values that are unwise, each ``<path>: <value> <why>``)."""

    manifest: dict | None
    errors: list[Problem] = field(default_factory=list)
    ignored: list[dict] = field(default_factory=list)
    warnings: list[Problem] = field(default_factory=list)


class _Walk:
    """Checks a value against a schema node and returns its defaulted copy, collecting problems."""

    def __init__(self) -> None:
        self.problems: list[Problem] = []

    def add(self, path: str, message: str) -> None:
        self.problems.append(Problem(path or DOCUMENT, message))

    def has_problem_at(self, path: str) -> bool:
        return any(problem.path == path or problem.path.startswith(path + ".") for problem in self.problems)

    def value(self, schema: dict, value: object, path: str) -> object:
        kind = schema.get("type")
        if kind == "object":
            return self.mapping(schema, value, path)
        if kind == "array":
            return self.array(schema, value, path)
        if kind == "string":
            return self.string(schema, value, path)
        if kind == "integer":
            return self.integer(schema, value, path)
        # No type: anything goes (server-set metadata).
        return copy.deepcopy(value)

    def mapping(self, schema: dict, value: object, path: str) -> dict | None:
        if not isinstance(value, dict):
            self.add(path, mismatch(value, "a mapping"))
            return None
        properties: dict = schema.get("properties", {})
        extra: dict | None = schema.get("additionalProperties")
        result: dict = {}
        for key in value:
            if not isinstance(key, str):
                self.add(join_path(path, quote(key)), f"{quote(key)} is not a valid field name (names are strings)")
                continue
            child = join_path(path, key)
            if key in properties or extra is not None:
                continue
            hint = difflib.get_close_matches(key, list(properties), n=1, cutoff=0.75)
            suffix = f' (did you mean "{hint[0]}"?)' if hint else ""
            self.add(child, f"unknown field{suffix}; known fields: {', '.join(properties) or 'none'}")
        for key, subschema in properties.items():
            child = join_path(path, key)
            present = key in value and value[key] is not None and not _is_empty(subschema, value[key])
            if present:
                result[key] = self.value(subschema, value[key], child)
            elif key in schema.get("required", ()):
                self.add(child, "required field is missing")
            elif "default" in subschema:
                result[key] = self.value(subschema, copy.deepcopy(subschema["default"]), child)
        if extra is not None:
            for key, item in value.items():
                if isinstance(key, str) and key not in properties:
                    result[key] = self.value(extra, item, join_path(path, key))
        return result

    def array(self, schema: dict, value: object, path: str) -> list | None:
        if not isinstance(value, list):
            self.add(path, mismatch(value, "a list"))
            return None
        count = len(value)
        if "minItems" in schema and count < schema["minItems"]:
            self.add(path, f"has {count} item{'s' if count != 1 else ''}, below the minimum {schema['minItems']}")
        if "maxItems" in schema and count > schema["maxItems"]:
            self.add(path, f"has {count} items, above the maximum {schema['maxItems']}")
        result = [self.value(schema["items"], item, join_path(path, index)) for index, item in enumerate(value)]
        if schema.get("x-kubernetes-list-type") == "map":
            self.unique_keys(schema["x-kubernetes-list-map-keys"], result, path)
        return result

    def unique_keys(self, keys: list[str], items: list, path: str) -> None:
        seen: dict[tuple, int] = {}
        for index, item in enumerate(items):
            if not isinstance(item, dict) or not all(isinstance(item.get(key), str | int) for key in keys):
                continue
            identity = tuple(item[key] for key in keys)
            if identity in seen:
                first = join_path(path, seen[identity])
                label = ", ".join(quote(item[key]) for key in keys)
                self.add(join_path(join_path(path, index), keys[0]), f"{label} is already used by "
                         f"{join_path(first, keys[0])}; {' and '.join(keys)} must be unique in the list")
            else:
                seen[identity] = index

    def string(self, schema: dict, value: object, path: str) -> str | None:
        if not isinstance(value, str):
            hint = f' (quote it in YAML: "{quote(value)}")' if isinstance(value, int | float) else ""
            self.add(path, mismatch(value, "a string") + hint)
            return None
        secret = schema.get("_secret", False)
        shown = "the value" if secret else quote(value)
        length = len(value)
        if "minLength" in schema and length < schema["minLength"]:
            minimum = schema["minLength"]
            self.add(path, f"{shown} is {length} characters long, below the minimum length {minimum}")
            return value
        if "maxLength" in schema and length > schema["maxLength"]:
            self.add(path, f"{shown} is {length} characters long, above the maximum length {schema['maxLength']}")
            return value
        if "enum" in schema and value not in schema["enum"]:
            self.add(path, f"{shown} is not one of {', '.join(schema['enum'])}")
            return value
        if "pattern" in schema and not go_pattern(schema["pattern"]).search(value):
            self.add(path, f"{shown} is not {schema.get('_rule', 'matching ' + schema['pattern'])}")
            return value
        check = schema.get("_check")
        if check == "pem":
            reason = pem.check_certificates(value)
            if reason:
                self.add(path, reason)
        elif check == "hostname" and _is_ip_address(value):
            self.add(path, f"{shown} is an IP address; a Gateway API Hostname must be a DNS name")
        elif check == "hostname" and any(len(label) > 63 for label in value.split(".")):
            self.add(path, f"{shown} has a label longer than 63 characters; a DNS name's labels are 1-63 characters")
        return value

    def integer(self, schema: dict, value: object, path: str) -> int | None:
        if isinstance(value, bool) or not isinstance(value, int):
            self.add(path, mismatch(value, "an integer"))
            return None
        if "minimum" in schema and value < schema["minimum"]:
            self.add(path, f"{value} is below the minimum {schema['minimum']}")
        elif "maximum" in schema and value > schema["maximum"]:
            self.add(path, f"{value} is above the maximum {schema['maximum']}")
        return value


# ObjectMeta's label and annotation rules, as the API server applies them (k8s.io/apimachinery validation).
_QUALIFIED_NAME = re.compile(r"^([A-Za-z0-9][-A-Za-z0-9_.]*)?[A-Za-z0-9]\Z")
_LABEL_VALUE = re.compile(r"^(([A-Za-z0-9][-A-Za-z0-9_.]*)?[A-Za-z0-9])?\Z")
QUALIFIED_NAME_RULE = ("a qualified name: an optional DNS-1123 subdomain prefix and '/', then at most 63 letters, "
                       "digits, '-', '_' and '.', starting and ending with a letter or digit")
LABEL_VALUE_RULE = "a label value: empty, or at most 63 letters, digits, '-', '_' and '.', starting and ending with " \
                   "a letter or digit"
ANNOTATIONS_MAX = 256 * 1024


def _is_qualified_name(key: str) -> bool:
    parts = key.split("/")
    if len(parts) == 2:
        prefix, name = parts
        if not prefix or len(prefix) > 253 or not go_pattern(DNS1123_SUBDOMAIN).search(prefix):
            return False
    elif len(parts) == 1:
        name = parts[0]
    else:
        return False
    return 0 < len(name) <= 63 and bool(_QUALIFIED_NAME.search(name))


def _null_values_as_empty(metadata: object) -> object:
    """``metadata`` with null label and annotation values read as "", as the API server decodes them into
    ObjectMeta's string maps (a CR it accepts so must not be refused here)."""
    if not isinstance(metadata, dict):
        return metadata
    cleaned = dict(metadata)
    for name in ("labels", "annotations"):
        if isinstance(metadata.get(name), dict):
            cleaned[name] = {key: "" if value is None else value for key, value in metadata[name].items()}
    return cleaned


def _labels_and_annotations(walk: _Walk, metadata: dict) -> None:
    """Label keys and values, and annotation keys, as the API server checks them (the walk checked the types)."""
    labels = metadata.get("labels")
    for key, value in (labels.items() if isinstance(labels, dict) else ()):
        path = join_path("metadata.labels", key)
        if isinstance(key, str) and not _is_qualified_name(key):
            walk.add(path, f"{quote(key)} is not {QUALIFIED_NAME_RULE} (a label key)")
        if isinstance(value, str) and (len(value) > 63 or not _LABEL_VALUE.search(value)):
            walk.add(path, f"{quote(value)} is not {LABEL_VALUE_RULE}")
    annotations = metadata.get("annotations")
    if not isinstance(annotations, dict):
        return
    for key in annotations:
        if isinstance(key, str) and not _is_qualified_name(key.lower()):
            walk.add(join_path("metadata.annotations", key), f"{quote(key)} is not {QUALIFIED_NAME_RULE} "
                     "(an annotation key)")
    size = sum(len(key.encode("utf-8")) + len(value.encode("utf-8")) for key, value in annotations.items()
               if isinstance(key, str) and isinstance(value, str))
    if size > ANNOTATIONS_MAX:
        walk.add("metadata.annotations", f"are {size} bytes long, above the maximum {ANNOTATIONS_MAX}")


def _root(walk: _Walk, manifest: dict) -> dict:
    result: dict = {}
    for key in manifest:
        if not isinstance(key, str):
            walk.add(quote(key), f"{quote(key)} is not a valid field name (names are strings)")
        elif key not in ROOT_FIELDS:
            hint = difflib.get_close_matches(key, ROOT_FIELDS, n=1, cutoff=0.75)
            suffix = f' (did you mean "{hint[0]}"?)' if hint else ""
            walk.add(key, f"unknown field{suffix}; known fields: {', '.join(ROOT_FIELDS)}")
    for key, expected in (("apiVersion", API_VERSION), ("kind", KIND)):
        value = manifest.get(key)
        if value is None:
            walk.add(key, f"required field is missing; it must be {expected}")
        elif value != expected:
            walk.add(key, f"{quote(value)} is not {expected}")
        result[key] = value
    metadata = manifest.get("metadata")
    if metadata is None:
        walk.add("metadata", "required field is missing (metadata.name names the ServingStack)")
    else:
        result["metadata"] = walk.mapping(METADATA, _null_values_as_empty(metadata), "metadata")
        if isinstance(result["metadata"], dict):
            _labels_and_annotations(walk, result["metadata"])
        if isinstance(result["metadata"], dict):
            result["metadata"].setdefault("namespace", DEFAULT_NAMESPACE)
    spec = manifest.get("spec")
    if spec is None:
        walk.add("spec", "required field is missing")
    else:
        result["spec"] = walk.mapping(SPEC, without_crossplane_fields(spec), "spec")
    if manifest.get("status") is not None:
        # A live object's status is the server's (or Crossplane's), not input: returned as it came, unchecked.
        result["status"] = copy.deepcopy(manifest["status"])
    return result


def _secrets(walk: _Walk, spec: dict, namespace: object) -> None:
    secrets = spec.get("secrets")
    if not isinstance(secrets, list) or not secrets:
        return
    kubeconfigs: list[str] = []
    identities: list[str] = []
    for index, secret in enumerate(secrets):
        if not isinstance(secret, dict):
            continue
        if isinstance(namespace, str) and "namespace" not in secret:
            secret["namespace"] = namespace
        kind = secret.get("type")
        item = f"spec.secrets[{index}]"
        if kind == KUBECONFIG:
            kubeconfigs.append(item)
        elif isinstance(kind, str) and not walk.has_problem_at(f"{item}.type"):
            identities.append(f"{item} ({kind})")
    typed = all(isinstance(secret, dict) and secret.get("type") in SECRET_TYPES for secret in secrets)
    if not kubeconfigs and typed:
        walk.add("spec.secrets", "has no Kubeconfig secret; exactly one entry must have type Kubeconfig")
    elif len(kubeconfigs) > 1:
        walk.add("spec.secrets", f"has {len(kubeconfigs)} Kubeconfig secrets ({', '.join(kubeconfigs)}); "
                 "exactly one entry must have type Kubeconfig")
    if len(identities) > 1:
        walk.add("spec.secrets", f"has {len(identities)} cloud identity secrets ({', '.join(identities)}); at most "
                 "one is allowed, since several are ambiguous about which identity the serving stack uses")


def _listeners(walk: _Walk, spec: dict) -> None:
    gateway = spec.get("gateway")
    listeners = gateway.get("listeners") if isinstance(gateway, dict) else None
    if not isinstance(listeners, list):
        return
    first: dict[int, int] = {}
    for index, listener in enumerate(listeners):
        port = listener.get("port") if isinstance(listener, dict) else None
        if not isinstance(port, int) or isinstance(port, bool):
            continue
        if port in first:
            other = listeners[first[port]]
            walk.add(
                f"spec.gateway.listeners[{index}].port",
                f"{port} is already used by spec.gateway.listeners[{first[port]}] "
                f"({quote(other.get('name'))}, {quote(other.get('protocol'))}); each listener needs its own port, "
                "because Gateway API treats listeners sharing a port as conflicted (same protocol: indistinct; "
                "TCP with HTTP: every listener on the port is conflicted)",
            )
        else:
            first[port] = index


def _https_listener(walk: _Walk, spec: dict) -> None:
    """With a hostname, no listener may take the name or port of the HTTPS listener the role adds for it."""
    gateway = spec.get("gateway")
    if not isinstance(gateway, dict) or not isinstance(gateway.get("hostname"), str) or not gateway["hostname"]:
        return
    listeners = gateway.get("listeners")
    if not isinstance(listeners, list):
        return
    # roles/envoy_gateway/templates/gateway.yaml.j2 adds this listener to the Gateway after the spec's.
    taken = (f"is taken by the HTTPS listener ({HTTPS_LISTENER_NAME}, port {HTTPS_LISTENER_PORT}) the envoy_gateway "
             "role adds to the Gateway when spec.gateway.hostname is set")
    for index, listener in enumerate(listeners):
        if not isinstance(listener, dict):
            continue
        path = f"spec.gateway.listeners[{index}]"
        if listener.get("name") == HTTPS_LISTENER_NAME:
            walk.add(f"{path}.name", f"{quote(HTTPS_LISTENER_NAME)} {taken}; rename this listener")
        port = listener.get("port")
        if isinstance(port, int) and not isinstance(port, bool) and port == HTTPS_LISTENER_PORT:
            walk.add(f"{path}.port", f"{port} {taken}; move this listener to another port")


def _client_ca_names(walk: _Walk, spec: dict) -> None:
    """Each client CA's name fits the ConfigMap name the envoy_gateway role derives from it."""
    gateway = spec.get("gateway")
    cas = gateway.get("clientCAs") if isinstance(gateway, dict) else None
    if not isinstance(cas, list):
        return
    for index, ca in enumerate(cas):
        name = ca.get("name") if isinstance(ca, dict) else None
        path = f"spec.gateway.clientCAs[{index}].name"
        # A name that is not a DNS-1123 subdomain is refused already; with the prefix it stays one.
        if not isinstance(name, str) or walk.has_problem_at(path) or len(name) <= CLIENT_CA_NAME_MAX:
            continue
        walk.add(path, f"{quote(name)} is {len(name)} characters long, above the maximum {CLIENT_CA_NAME_MAX} for a "
                 "client CA: the envoy_gateway role stores it in a ConfigMap named "
                 f"{CLIENT_CA_CONFIGMAP_PREFIX}<name>, and a ConfigMap name is a DNS-1123 subdomain of at most "
                 f"{CONFIGMAP_NAME_MAX} characters")


def _gateway(walk: _Walk, spec: dict) -> None:
    """The rules on gateway listeners and client CAs beyond the schema."""
    _listeners(walk, spec)
    _https_listener(walk, spec)
    _client_ca_names(walk, spec)


def _cautions(walk: _Walk, spec: dict) -> list[Problem]:
    """Warnings for pins that are in range but unwise (see ``versions.CAUTIONS``)."""
    found: list[Problem] = []
    for key, caution in versions.CAUTIONS.items():
        group, name = key.split(".")
        values = spec.get(group)
        path = f"spec.{key}"
        if not isinstance(values, dict) or not isinstance(values.get(name), str) or walk.has_problem_at(path):
            continue
        reason = caution(values[name])
        if reason:
            found.append(Problem(path, f"{quote(values[name])} {reason}"))
    return found


def _client_cas_without_hostname(walk: _Walk, spec: dict) -> list[Problem]:
    """A warning for client CAs without a hostname: the envoy_gateway role stores them, but with no HTTPS listener
    there is nothing to require client certificates on (it makes no ClientTrafficPolicy)."""
    gateway = spec.get("gateway")
    if not isinstance(gateway, dict) or not gateway.get("clientCAs") or gateway.get("hostname"):
        return []
    path = "spec.gateway.clientCAs"
    if walk.has_problem_at(path):
        return []
    return [Problem(path, "set without spec.gateway.hostname, so the gateway has no HTTPS listener to require client "
                    "certificates on: the CAs are stored but not enforced; set spec.gateway.hostname to enforce them")]


def _pins(walk: _Walk, raw_spec: object, spec: dict) -> list[dict]:
    """Apply the version rules to the pins in use; return the user's pins the stack ignores."""
    stack = spec.get("stack")
    if stack not in STACK_GROUPS:
        return []
    ignored: list[dict] = []
    for group_stack, group in STACK_GROUPS.items():
        values = spec.get(group)
        if not isinstance(values, dict):
            continue
        raw_group = raw_spec.get(group) if isinstance(raw_spec, dict) else None
        for key, value in values.items():
            path = f"spec.{group}.{key}"
            if group_stack != stack:
                if isinstance(raw_group, dict) and raw_group.get(key) is not None:
                    ignored.append({
                        "path": path,
                        "value": copy.deepcopy(raw_group[key]),
                        "reason": f"stack is {stack}: {group_stack}-stack pins are ignored",
                    })
                continue
            if walk.has_problem_at(path) or not isinstance(value, str):
                continue
            if versions.parse(value) is None:
                walk.add(path, f"{quote(value)} is not {versions.SEMVER_RULE}")
    for key, rule in versions.RULES.items():
        group, name = key.split(".")
        values = spec.get(group)
        path = f"spec.{key}"
        if group in STACK_GROUPS.values() and STACK_GROUPS[stack] != group:
            continue
        if not isinstance(values, dict) or not isinstance(values.get(name), str) or walk.has_problem_at(path):
            continue
        reason = rule(values[name])
        if reason:
            walk.add(path, f"{quote(values[name])} {reason}")
    return ignored


def _validate(manifest: object) -> Validation:
    walk = _Walk()
    if not isinstance(manifest, dict):
        walk.add(DOCUMENT, mismatch(manifest, "a ServingStack manifest (a mapping with apiVersion, kind, metadata "
                 "and spec)"))
        return Validation(None, walk.problems)
    result = _root(walk, manifest)
    spec = result.get("spec")
    ignored: list[dict] = []
    warnings: list[Problem] = []
    if isinstance(spec, dict):
        metadata = result.get("metadata")
        namespace = metadata.get("namespace") if isinstance(metadata, dict) else None
        _secrets(walk, spec, namespace)
        _gateway(walk, spec)
        ignored = _pins(walk, manifest.get("spec"), spec)
        warnings = _cautions(walk, spec) + _client_cas_without_hostname(walk, spec)
    if walk.problems:
        return Validation(None, sorted(walk.problems, key=sort_key), ignored, warnings)
    return Validation(result, [], ignored, warnings)


def validate(manifest: object) -> Validation:
    """Validate and default a whole ServingStack manifest. Never raises."""
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
    walk = _Walk()
    source: object = {"secrets": [{"type": KUBECONFIG, "name": "kubeconfig", "key": "kubeconfig"}]} if spec is None \
        else without_crossplane_fields(spec)
    result = walk.mapping(SPEC, source, "spec")
    if isinstance(result, dict):
        _secrets(walk, result, None)
        _gateway(walk, result)
        _pins(walk, source, result)
    if walk.problems or not isinstance(result, dict):
        raise ValueError("invalid ServingStack spec:\n" + "\n".join(f"- {problem}" for problem in walk.problems))
    if spec is None:
        # No secrets were given: leave them out rather than invent one.
        result.pop("secrets")
    return result
