# Copyright 2026 The modelplane.serving authors
# Apache License 2.0 (see LICENSE)
"""Validate and default a whole ServingStack manifest against its CRD.

``validate(manifest)`` never raises: whatever it is given (None, a list, an int, odd YAML), it returns a
``Validation`` whose ``errors`` hold every problem found, each ``<path>: <problem>`` naming the value and the rule
it breaks, and whose ``manifest`` is a defaulted deep copy when there are no errors.

The spec is checked as the API server checks a live object: against the CRD (``schema``), its schema, defaults,
list-map keys and CEL rules (``structural``). What the CRD does not say is here, and only here:

* ``PYTHON_ONLY_RULES``, the reference's rules no CEL rule can state (tests/integration/test_crd_differential.py
  lists the same): the client CA certificates are PEM CERTIFICATE blocks that parse as X.509, and Grove is
  v0.1.0-alpha.12-rc2 or later in release order.
* ObjectMeta (``METADATA`` and the label and annotation rules), which the API server checks on every object and a
  CRD may not restate.
* Decisions beyond the reference:

  - ``metadata.namespace`` defaults to ``default`` for a manifest read from a file or given inline (a live object
    always has one); each ``spec.secrets[].namespace`` defaults to that namespace.
  - What a live object carries beyond its desired state is ignored on input, never refused: its ``status``
    (returned as it came, unchecked: a Crossplane XR's has conditions our schema lacks), server-set metadata, and
    the fields Crossplane adds to an XR's spec (``CROSSPLANE_SPEC_FIELDS``), which are dropped.
  - An empty ``gateway.listeners`` or ``nvidiaDriverRoot`` means the default, as a null does (``EMPTY_IS_DEFAULT``).
  - Messages never quote a client CA certificate, where a key may have been pasted (``HIDDEN``).
  - Pins for the other stack are reported in ``ignored``; a pin in range but unwise (Envoy Gateway below v1.8.1)
    and client CAs without a hostname are reported in ``warnings``.
"""

from __future__ import annotations

import copy
import functools
import re
from collections.abc import Callable
from dataclasses import dataclass, field

from ansible_collections.modelplane.serving.plugins.module_utils.servingstack import pem, schema, structural, versions
from ansible_collections.modelplane.serving.plugins.module_utils.servingstack.components import DYNAMO, STANDARD
from ansible_collections.modelplane.serving.plugins.module_utils.servingstack.errors import (
    Problem,
    join_path,
    mismatch,
    quote,
    sort_key,
)
from ansible_collections.modelplane.serving.plugins.module_utils.servingstack.plan import resolve

DEFAULT_NAMESPACE = "default"
DOCUMENT = "(document)"
INTERNAL_ERROR = "could not be checked because of an internal error"
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
DNS1123_SUBDOMAIN = "^[a-z0-9]([-a-z0-9]*[a-z0-9])?([.][a-z0-9]([-a-z0-9]*[a-z0-9])?)*$"
DNS1123_LABEL = "^[a-z0-9]([-a-z0-9]{0,61}[a-z0-9])?$"
SERVER_SET = ("uid", "resourceVersion", "generation", "creationTimestamp", "deletionTimestamp",
              "deletionGracePeriodSeconds", "finalizers", "ownerReferences", "managedFields", "selfLink",
              "generateName")
METADATA: dict = {
    "type": "object",
    "required": ["name"],
    "properties": {
        "name": {"type": "string", "minLength": 1, "maxLength": 253, "x-kubernetes-validations": [{
            "rule": f"self.matches('{DNS1123_SUBDOMAIN}')",
            "message": "is not a DNS-1123 subdomain (an object name): lowercase letters, digits, '-' and '.', "
                       "starting and ending with a letter or digit"}]},
        "namespace": {"type": "string", "minLength": 1, "maxLength": 63, "default": DEFAULT_NAMESPACE,
                      "x-kubernetes-validations": [{
                          "rule": f"self.matches('{DNS1123_LABEL}')",
                          "message": "is not a DNS-1123 label (a namespace name): at most 63 lowercase letters, "
                                     "digits and '-', starting and ending with a letter or digit"}]},
        "labels": {"type": "object", "additionalProperties": {"type": "string"}},
        "annotations": {"type": "object", "additionalProperties": {"type": "string"}},
        # Set by the API server on a live object; accepted as they come.
        **{key: {} for key in SERVER_SET},
    },
}
_SUBDOMAIN = re.compile(DNS1123_SUBDOMAIN.replace("$", r"\Z"))
_QUALIFIED_NAME = re.compile(r"^([A-Za-z0-9][-A-Za-z0-9_.]*)?[A-Za-z0-9]\Z")
_LABEL_VALUE = re.compile(r"^(([A-Za-z0-9][-A-Za-z0-9_.]*)?[A-Za-z0-9])?\Z")
QUALIFIED_NAME_RULE = ("a qualified name: an optional DNS-1123 subdomain prefix and '/', then at most 63 letters, "
                       "digits, '-', '_' and '.', starting and ending with a letter or digit")
LABEL_VALUE_RULE = ("a label value: empty, or at most 63 letters, digits, '-', '_' and '.', starting and ending with "
                    "a letter or digit")
ANNOTATIONS_MAX = 256 * 1024


@dataclass
class Validation:
    """The outcome of ``validate``: the defaulted manifest (None when invalid), the problems, the ignored pins
    and the warnings (accepted values that are unwise, each ``<path>: <value> <why>``)."""

    manifest: dict | None
    errors: list[Problem] = field(default_factory=list)
    ignored: list[dict] = field(default_factory=list)
    warnings: list[Problem] = field(default_factory=list)


@functools.cache
def _checker() -> structural.Checker:
    """The whole manifest's checker: the CRD's spec, ObjectMeta, and a live object's ``status`` (the server's, or
    Crossplane's, not input: returned as it came, unchecked)."""
    manifest = {"type": "object", "required": ["apiVersion", "kind", "metadata", "spec"], "properties": {
        "apiVersion": {"type": "string", "enum": [schema.API_VERSION]},
        "kind": {"type": "string", "enum": [schema.KIND]}, "metadata": METADATA, "spec": schema.SPEC, "status": {}}}
    return structural.Checker(manifest, "", hidden=HIDDEN, empty_is_default=EMPTY_IS_DEFAULT)


def without_crossplane_fields(spec: object) -> object:
    """``spec`` without the fields Crossplane adds to an XR (ignored on input, never refused)."""
    if not isinstance(spec, dict):
        return spec
    return {key: value for key, value in spec.items() if key not in CROSSPLANE_SPEC_FIELDS}


# --- the reference's rules the CRD cannot state --------------------------------------------------------------


def _client_ca_certificates(spec: dict, problems: list[Problem]) -> list[Problem]:
    """Each client CA certificate is PEM CERTIFICATE blocks that parse as X.509 (the CRD bounds its length and
    refuses a pasted key; no CEL function parses PEM)."""
    cas = resolve(spec, "gateway.clientCAs")
    found = []
    for index, ca in enumerate(cas if isinstance(cas, list) else ()):
        path = f"spec.gateway.clientCAs[{index}].certificate"
        certificate = ca.get("certificate") if isinstance(ca, dict) else None
        reason = pem.check_certificates(certificate) if isinstance(certificate, str) else None
        if reason and not structural.has_problem(problems, path):
            found.append(Problem(path, reason))
    return found


def _grove_release_order(spec: dict, problems: list[Problem]) -> list[Problem]:
    """Grove is v0.1.0-alpha.12-rc2 or later in release order, where alpha.12-rc1 < alpha.12-rc2 < alpha.12: an
    order CEL cannot compare in (semantic-version precedence sorts those the other way)."""
    grove = resolve(spec, "dynamo.grove")
    reason = versions.check_grove(grove) if spec.get("stack") == DYNAMO and isinstance(grove, str) else None
    if reason and not structural.has_problem(problems, "spec.dynamo.grove"):
        return [Problem("spec.dynamo.grove", f"{quote(grove)} {reason}")]
    return []


PYTHON_ONLY_RULES: tuple[Callable[[dict, list[Problem]], list[Problem]], ...] = (
    _client_ca_certificates,
    _grove_release_order,
)


# --- ObjectMeta ----------------------------------------------------------------------------------------------


def _is_qualified_name(key: str) -> bool:
    *prefix, name = key.split("/")
    if len(prefix) > 1 or (prefix and (len(prefix[0]) > 253 or not _SUBDOMAIN.search(prefix[0]))):
        return False
    return 0 < len(name) <= 63 and bool(_QUALIFIED_NAME.search(name))


def _labels_and_annotations(metadata: object) -> list[Problem]:
    """Label keys and values, and annotation keys and size, as the API server checks them (types are checked)."""
    found = []
    labels = metadata.get("labels") if isinstance(metadata, dict) else None
    for key, value in labels.items() if isinstance(labels, dict) else ():
        path = join_path("metadata.labels", key)
        if isinstance(key, str) and not _is_qualified_name(key):
            found.append(Problem(path, f"{quote(key)} is not {QUALIFIED_NAME_RULE} (a label key)"))
        if isinstance(value, str) and (len(value) > 63 or not _LABEL_VALUE.search(value)):
            found.append(Problem(path, f"{quote(value)} is not {LABEL_VALUE_RULE}"))
    annotations = metadata.get("annotations") if isinstance(metadata, dict) else None
    if not isinstance(annotations, dict):
        return found
    found += [Problem(join_path("metadata.annotations", key), f"{quote(key)} is not {QUALIFIED_NAME_RULE} "
                      "(an annotation key)") for key in annotations
              if isinstance(key, str) and not _is_qualified_name(key.lower())]
    size = sum(len(key.encode("utf-8")) + len(value.encode("utf-8")) for key, value in annotations.items()
               if isinstance(key, str) and isinstance(value, str))
    if size > ANNOTATIONS_MAX:
        found.append(Problem("metadata.annotations", f"are {size} bytes long, above the maximum {ANNOTATIONS_MAX}"))
    return found


# --- the manifest --------------------------------------------------------------------------------------------


def _check(manifest: dict) -> tuple[dict, list[Problem]]:
    """The defaulted manifest and its problems: the CRD's and ObjectMeta's, then those of PYTHON_ONLY_RULES.

    The fields Crossplane adds to an XR's spec are dropped first, and null label and annotation values read as "",
    as the API server decodes them into ObjectMeta's string maps (a CR it accepts must not be refused here)."""
    given = {**manifest, "spec": without_crossplane_fields(manifest.get("spec"))}
    metadata = manifest.get("metadata")
    if isinstance(metadata, dict):
        given["metadata"] = dict(metadata)
        for name in ("labels", "annotations"):
            if isinstance(metadata.get(name), dict):
                given["metadata"][name] = {key: "" if value is None else value for key, value in metadata[name].items()}
    result, problems = _checker().check(given)
    problems += _labels_and_annotations(result.get("metadata"))
    if isinstance(result.get("spec"), dict):
        problems += [problem for rule in PYTHON_ONLY_RULES for problem in rule(result["spec"], problems)]
    return result, problems  # type: ignore[return-value]


def _ignored(raw: object, spec: dict) -> list[dict]:
    """The user's pins that the chosen stack ignores."""
    stack = spec.get("stack")
    if not isinstance(stack, str) or stack not in STACK_GROUPS:
        return []
    found = []
    for group_stack, group in STACK_GROUPS.items():
        given = raw.get(group) if isinstance(raw, dict) else None
        values = spec.get(group)
        if group_stack == stack or not isinstance(given, dict) or not isinstance(values, dict):
            continue
        found += [{"path": f"spec.{group}.{key}", "value": copy.deepcopy(given[key]),
                   "reason": f"stack is {stack}: {group_stack}-stack pins are ignored"}
                  for key in values if given.get(key) is not None]
    return found


def _warnings(spec: dict, problems: list[Problem]) -> list[Problem]:
    """Accepted but unwise: an Envoy Gateway pin below v1.8.1 (``versions.caution_envoy_gateway``), and client CAs
    without a hostname: the envoy_gateway role stores them, but with no HTTPS listener there is nothing to require
    client certificates on (it makes no ClientTrafficPolicy)."""
    found = []
    pin = resolve(spec, "versions.envoyGateway")
    reason = versions.caution_envoy_gateway(pin)
    if reason and not structural.has_problem(problems, "spec.versions.envoyGateway"):
        found.append(Problem("spec.versions.envoyGateway", f"{quote(pin)} {reason}"))
    path = "spec.gateway.clientCAs"
    if resolve(spec, "gateway.clientCAs") and not resolve(spec, "gateway.hostname") \
            and not structural.has_problem(problems, path):
        found.append(Problem(path, "set without spec.gateway.hostname, so the gateway has no HTTPS listener to "
                             "require client certificates on: the CAs are stored but not enforced; set "
                             "spec.gateway.hostname to enforce them"))
    return found


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


def _unavailable() -> Problem | None:
    """Why nothing can be checked here: the Python packages the checks need and this interpreter lacks."""
    missing = structural.missing() + ([] if schema.yaml else ["PyYAML"])
    if not missing:
        return None
    return Problem(DOCUMENT, f"cannot be checked: this Python lacks {', '.join(missing)} (see the requirements.txt "
                   "of modelplane.serving)")


def validate(manifest: object) -> Validation:
    """Validate and default a whole ServingStack manifest. Never raises."""
    unavailable = _unavailable()
    if unavailable:
        return Validation(None, [unavailable])
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
        return structural.defaulted(schema.SPEC, {}, "spec")
    unavailable = _unavailable()
    manifest = {"apiVersion": schema.API_VERSION, "kind": schema.KIND, "metadata": {"name": "spec"}, "spec": spec}
    result, problems = ({}, [unavailable]) if unavailable else _check(manifest)
    if problems:
        listed = "\n".join(f"- {problem}" for problem in sorted(problems, key=sort_key))
        raise ValueError("invalid ServingStack spec:\n" + listed)
    return result["spec"]
