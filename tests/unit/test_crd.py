"""The ServingStack CRD: the file the collection reads, its facts, every field of the reference, its CEL rules, and
agreement with the module.

Agreement: every document of the corpus is judged by the CRD here, independently of the module's own checker: its
openAPIV3Schema through jsonschema (as the API server with strict field validation), then its CEL rules
(``x-kubernetes-validations``) evaluated with cel-python on the defaulted document, as the API server does. The
module must agree, except on the corpus's ``MODULE_ONLY`` cases: its PYTHON_ONLY_RULES and ObjectMeta.
"""

from __future__ import annotations

import copy
import functools
import re

import celpy  # cel-python (requirements.txt) evaluates the CRD's CEL rules
import pytest
import re2
import yaml
from ansible_collections.modelplane.serving.plugins.module_utils.servingstack import schema, spec, versions
from corpus import IGNORED, INVALID, KUBECONFIG, MODULE_ONLY, VALID
from hypothesis import given, settings
from hypothesis import strategies as st
from servingstack_docs import CRD_FILE, crd_validator, load_example, strip_nulls


@pytest.fixture(scope="module")
def definition() -> dict:
    return yaml.safe_load(CRD_FILE.read_text())


@pytest.fixture(scope="module")
def schema_(definition) -> dict:
    return definition["spec"]["versions"][0]["schema"]["openAPIV3Schema"]


@pytest.fixture(scope="module")
def validator(schema_):
    return crd_validator(schema_)


def test_the_collection_reads_the_crd_from_its_crds_folder():
    assert schema.CRD_FILE.resolve() == CRD_FILE.resolve()
    assert schema.definition() == yaml.safe_load(CRD_FILE.read_text())


def test_the_names_of_the_api_are_the_crds(definition):
    body = definition["spec"]
    assert (body["group"], body["names"]["kind"], body["names"]["plural"]) == (schema.GROUP, schema.KIND, schema.PLURAL)
    assert schema.API_VERSION == f"{body['group']}/{body['versions'][0]['name']}" == f"{schema.GROUP}/{schema.VERSION}"
    assert definition["spec"]["versions"][0]["schema"]["openAPIV3Schema"]["properties"]["spec"] == schema.SPEC


def test_crd_facts(definition):
    assert definition["apiVersion"] == "apiextensions.k8s.io/v1"
    assert definition["kind"] == "CustomResourceDefinition"
    assert definition["metadata"]["name"] == "servingstacks.infrastructure.modelplane.ai"
    body = definition["spec"]
    assert body["group"] == "infrastructure.modelplane.ai"
    assert body["scope"] == "Namespaced"
    assert body["names"]["kind"] == "ServingStack"
    assert body["names"]["plural"] == "servingstacks"
    assert body["names"]["shortNames"] == ["ss"]
    (version,) = body["versions"]
    assert (version["name"], version["served"], version["storage"]) == ("v1alpha1", True, True)
    assert version["subresources"] == {"status": {}}
    columns = {column["name"]: column for column in version["additionalPrinterColumns"]}
    assert columns["Address"]["jsonPath"] == ".status.gateway.address"
    assert columns["Stack"]["jsonPath"] == ".spec.stack"
    assert columns["Age"] == {"name": "Age", "type": "date", "jsonPath": ".metadata.creationTimestamp"}


# The reference, field by field: type, bounds, enum, default (None: no such key in the schema).
S = "string"
REFERENCE = {
    "spec.dynamo": ("object", {}),
    "spec.dynamo.grove": (S, {"minLength": 1, "maxLength": 32, "default": "v0.1.0-alpha.12-rc2"}),
    "spec.dynamo.kaiScheduler": (S, {"minLength": 1, "maxLength": 32, "default": "v0.16.8"}),
    "spec.dynamo.modelExpress": (S, {"minLength": 1, "maxLength": 32, "default": "0.4.1"}),
    "spec.gateway": ("object", {}),
    "spec.gateway.className": (S, {"minLength": 1, "maxLength": 63, "default": "envoy"}),
    "spec.gateway.clientCAs": ("array", {"maxItems": 32, "minItems": None}),
    "spec.gateway.clientCAs[].certificate": (S, {"minLength": 1, "maxLength": 16384}),
    "spec.gateway.clientCAs[].name": (S, {"minLength": 1, "maxLength": 253}),
    "spec.gateway.hostname": (S, {"minLength": 1, "maxLength": 253}),
    "spec.gateway.listeners": ("array", {"maxItems": 8, "minItems": None,
                                         "default": [{"name": "http", "port": 80, "protocol": "HTTP"}]}),
    "spec.gateway.listeners[].name": (S, {"minLength": 1, "maxLength": 63}),
    "spec.gateway.listeners[].port": ("integer", {"minimum": 1, "maximum": 65535}),
    "spec.gateway.listeners[].protocol": (S, {"enum": ["HTTP", "TCP"]}),
    "spec.nvidiaDriverRoot": (S, {"maxLength": 512, "minLength": None, "default": "/"}),
    "spec.secrets": ("array", {"minItems": 1, "maxItems": 8}),
    "spec.secrets[].key": (S, {"maxLength": 253, "minLength": None}),
    "spec.secrets[].name": (S, {"maxLength": 253, "minLength": None}),
    "spec.secrets[].namespace": (S, {"maxLength": 253, "minLength": None}),
    "spec.secrets[].type": (S, {"enum": ["Kubeconfig", "GoogleApplicationCredentials", "AWSWebIdentityCredentials",
                                         "NebiusServiceAccountCredentials"]}),
    "spec.stack": (S, {"enum": ["Standard", "Dynamo"], "default": "Standard"}),
    "spec.standard": ("object", {}),
    "spec.standard.leaderWorkerSet": (S, {"minLength": 1, "maxLength": 32, "default": "v0.8.0"}),
    "spec.versions": ("object", {}),
    "spec.versions.certManager": (S, {"minLength": 1, "maxLength": 32, "default": "v1.21.1"}),
    "spec.versions.envoyGateway": (S, {"minLength": 1, "maxLength": 32, "default": "v1.8.4"}),
    "spec.versions.nodeFeatureDiscovery": (S, {"minLength": 1, "maxLength": 32, "default": "0.18.3"}),
    "spec.versions.nvidiaDraDriver": (S, {"minLength": 1, "maxLength": 32, "default": "0.4.0"}),
    "spec.versions.prometheus": (S, {"minLength": 1, "maxLength": 32, "default": "72.6.2"}),
    "spec.versions.trustManager": (S, {"minLength": 1, "maxLength": 32, "default": "v0.24.0"}),
    "status.gateway": ("object", {}),
    "status.gateway.address": (S, {"maxLength": 256}),
    "status.gateway.caCertificate": (S, {"maxLength": 16384}),
    # Not in the reference: what the collection reports about its converges (README "Status").
    "status.observedGeneration": ("integer", {"minimum": 0, "format": "int64"}),
    "status.conditions": ("array", {"maxItems": 8, "x-kubernetes-list-type": "map",
                                    "x-kubernetes-list-map-keys": ["type"]}),
    "status.conditions[].type": (S, {"maxLength": 316}),
    "status.conditions[].status": (S, {"enum": ["True", "False", "Unknown"]}),
    "status.conditions[].observedGeneration": ("integer", {"minimum": 0, "format": "int64"}),
    "status.conditions[].lastTransitionTime": (S, {"format": "date-time"}),
    "status.conditions[].reason": (S, {"minLength": 1, "maxLength": 1024}),
    "status.conditions[].message": (S, {"maxLength": 32768}),
    "status.components": ("array", {"maxItems": 32, "x-kubernetes-list-type": "map",
                                    "x-kubernetes-list-map-keys": ["name"]}),
    "status.components[].name": (S, {"minLength": 1, "maxLength": 63}),
    "status.components[].version": (S, {"maxLength": 64}),
    "status.components[].ready": ("boolean", {}),
}
REQUIRED = {
    "spec": {"secrets"},
    "spec.gateway.clientCAs[]": {"certificate", "name"},
    "spec.gateway.listeners[]": {"name", "port", "protocol"},
    "spec.secrets[]": {"key", "name", "type"},
}


def fields(node: dict, path: str) -> dict[str, dict]:
    found = {}
    for name, child in node.get("properties", {}).items():
        child_path = f"{path}.{name}"
        found[child_path] = child
        found.update(fields(child, child_path))
    if "items" in node:
        found[f"{path}[]"] = node["items"]
        found.update(fields(node["items"], f"{path}[]"))
    return found


def test_the_crd_has_exactly_the_reference_fields(schema_):
    every = fields(schema_["properties"]["spec"], "spec") | fields(schema_["properties"]["status"], "status")
    leaves = {path for path in every if not path.endswith("[]")}
    assert leaves == set(REFERENCE)


@pytest.mark.parametrize("path", sorted(REFERENCE))
def test_every_field_has_its_type_bounds_enum_default_and_description(schema_, path):
    every = fields(schema_["properties"]["spec"], "spec") | fields(schema_["properties"]["status"], "status")
    node = every[path]
    kind, facts = REFERENCE[path]
    assert node["type"] == kind
    assert len(node.get("description", "")) > 10
    for key, value in facts.items():
        assert node.get(key) == value, f"{path}.{key}"


@pytest.mark.parametrize("path", sorted(REQUIRED))
def test_required_fields(schema_, path):
    every = fields(schema_["properties"]["spec"], "spec") | {"spec": schema_["properties"]["spec"]}
    assert set(every[path]["required"]) == REQUIRED[path]


def test_structural_schema(schema_):
    def walk(node: dict, path: str) -> None:
        assert "type" in node, path
        if node["type"] == "object" and path != "metadata":
            assert "properties" in node, path
            assert "additionalProperties" not in node, path
        for name, child in node.get("properties", {}).items():
            walk(child, name if not path else f"{path}.{name}")
        if node["type"] == "array":
            walk(node["items"], f"{path}[]")
            if node.get("x-kubernetes-list-type") == "map":
                assert set(node["x-kubernetes-list-map-keys"]) <= set(node["items"]["required"]), path

    walk(schema_, "")
    listeners = schema_["properties"]["spec"]["properties"]["gateway"]["properties"]["listeners"]
    assert listeners["x-kubernetes-list-type"] == "map"
    assert listeners["x-kubernetes-list-map-keys"] == ["name"]


def test_defaults_are_valid_against_their_schemas(schema_):
    every = fields(schema_["properties"]["spec"], "spec")
    for node in every.values():
        if "default" in node:
            crd_validator(node).validate(node["default"])


def test_the_defaults_alone_pass_every_rule():
    # defaulted_spec() applies them unchecked.
    checked = spec.defaulted_spec({"secrets": [KUBECONFIG]})
    checked.pop("secrets")
    assert spec.defaulted_spec() == checked


# --- the CEL rules ---------------------------------------------------------------------------------------------


def cel_rules(node: dict, path: str = "") -> list[tuple[str, dict]]:
    """Every rule of the schema with the field it is on (``spec.secrets[].name``)."""
    found = [(path, rule) for rule in node.get("x-kubernetes-validations", ())]
    for name, child in node.get("properties", {}).items():
        found += cel_rules(child, f"{path}.{name}" if path else name)
    if "items" in node:
        found += cel_rules(node["items"], f"{path}[]")
    return found


def nodes(node: dict, value: object, path: str = "") -> list[tuple[dict, object]]:
    found = [(node, value)]
    if isinstance(value, dict):
        for name, child in node.get("properties", {}).items():
            if name in value:
                found += nodes(child, value[name])
    elif isinstance(value, list) and "items" in node:
        for item in value:
            found += nodes(node["items"], item)
    return found


ENVIRONMENT = celpy.Environment()


@functools.cache
def program(rule: str) -> celpy.Runner:
    return ENVIRONMENT.program(ENVIRONMENT.compile(rule))


def verdict(rule: str, value: object) -> bool | None:
    """The rule's verdict on ``value``, None when cel-python cannot evaluate it there."""
    try:
        result = program(rule).evaluate({"self": celpy.json_to_cel(value)})
    except celpy.CELEvalError:
        return None
    return bool(result) if isinstance(result, celpy.celtypes.BoolType) else None


def crd_refusals(schema_: dict, validator, document: dict) -> list[str]:
    """Why the API server would refuse ``document``: its schema's errors, then the CEL rules broken on the document
    as the API server defaults it (nulls pruned, defaults applied; an empty list or string stays)."""
    document = strip_nulls(document)
    refusals = [error.message for error in validator.iter_errors(document)]
    spec_schema = schema_["properties"]["spec"]
    defaulted = spec.defaulted(spec_schema, document.get("spec"), "spec")
    for node, value in nodes(spec_schema, defaulted):
        refusals += [rule["message"] for rule in node.get("x-kubernetes-validations", ())
                     if verdict(rule["rule"], value) is False]
    return refusals


def test_every_cel_rule_compiles_and_every_field_path_is_a_field(schema_):
    rules = cel_rules(schema_)
    assert len(rules) >= 20
    for path, rule in rules:
        program(rule["rule"])
        assert rule["message"] and "\n" not in rule["message"], path
        node = schema_
        for name in (path + rule.get("fieldPath", "")).replace("[]", "").split("."):
            node = node.get("items", node)["properties"][name]
        assert node["type"], path


@pytest.mark.parametrize("case", VALID, ids=lambda case: case.id)
def test_every_cel_rule_holds_on_the_valid_corpus(schema_, case):
    # Evaluated, not skipped: a function cel-python lacks (Kubernetes's CEL libraries) would show here.
    manifest = spec.validate(case.document()).manifest
    for node, value in nodes(schema_["properties"]["spec"], manifest["spec"]):
        for rule in node.get("x-kubernetes-validations", ()):
            assert verdict(rule["rule"], value) is True, rule["message"]


def semver_patterns(schema_: dict) -> set[str]:
    return {match for _path, rule in cel_rules(schema_)
            for match in re.findall(r"matches\('(\^v\?\(0[^']*)'\)", rule["rule"])}


def test_every_pin_has_the_one_semver_pattern(schema_):
    (pattern,) = semver_patterns(schema_)
    pins = {path for path, rule in cel_rules(schema_) if pattern in rule["rule"]}
    pins |= {f"spec{rule['fieldPath']}" for path, rule in cel_rules(schema_) if pattern in rule["rule"]
             and "fieldPath" in rule}
    assert {"spec.versions.certManager", "spec.versions.envoyGateway", "spec.versions.nodeFeatureDiscovery",
            "spec.versions.nvidiaDraDriver", "spec.versions.prometheus", "spec.versions.trustManager",
            "spec.standard.leaderWorkerSet", "spec.dynamo.grove", "spec.dynamo.kaiScheduler",
            "spec.dynamo.modelExpress"} <= pins


VERSIONS = st.one_of(
    st.from_regex(versions.SEMVER_PATTERN.replace("$", r"\Z")),
    st.from_regex(r"\Av?1\.[7-9]\.[0-9]{1,2}(-(rc|alpha)\.[0-9])?(\+b)?\Z"),
    st.text(alphabet="v0123456789.-+arc\n", max_size=16),
)


@settings(max_examples=300, deadline=None)
@given(VERSIONS)
def test_the_crd_pins_are_the_semantic_versions_versions_py_parses(text):
    (pattern,) = semver_patterns(schema.definition()["spec"]["versions"][0]["schema"]["openAPIV3Schema"])
    assert (re2.search(pattern, text) is not None) == (versions.parse(text) is not None)


@settings(max_examples=300, deadline=None)
@given(VERSIONS)
def test_the_envoy_gateway_rule_is_the_range_versions_py_checks(text):
    node = schema.SPEC["properties"]["versions"]["properties"]["envoyGateway"]
    version = versions.parse(text)
    if version is None:
        return
    accepted = all(verdict(rule["rule"], text) for rule in node["x-kubernetes-validations"])
    # v1.8.0 and every later v1.8.x in release order (v1.8.1-rc.1 is in, v1.8.0-rc.1 is not).
    in_range = (version.major, version.minor) == (1, 8) and version.release_key() >= versions.release_key("v1.8.0")
    assert accepted == in_range


# --- agreement with the module --------------------------------------------------------------------------------


@pytest.mark.parametrize("case", VALID, ids=lambda case: case.id)
def test_valid_corpus_passes_both(schema_, validator, case):
    document = case.document()
    assert spec.validate(document).errors == []
    assert crd_refusals(schema_, validator, document) == []


@pytest.mark.parametrize("case", INVALID, ids=lambda case: case.id)
def test_invalid_corpus_fails_both(schema_, validator, case):
    document = case.document()
    assert spec.validate(document).errors
    assert crd_refusals(schema_, validator, document), "the CRD accepts what the module refuses"


@pytest.mark.parametrize("case", MODULE_ONLY, ids=lambda case: case.id)
def test_module_only_corpus_passes_the_crd_and_fails_the_module(schema_, validator, case):
    document = case.document()
    assert spec.validate(document).errors
    if case.path.startswith("spec."):
        assert crd_refusals(schema_, validator, document) == [], "now a CRD rule: move the case to INVALID"


@pytest.mark.parametrize("case", IGNORED, ids=lambda case: case.id)
def test_ignored_corpus_passes_the_module_and_the_crd_without_what_it_ignores(schema_, validator, case):
    # The shipped CRD is a plain CRD: a live object's status is the server's, and a Crossplane XR's
    # fields belong to the CRD Crossplane generates from its XRD; the module reads neither.
    document = case.document()
    assert spec.validate(document).errors == []
    document.pop("status", None)
    for key in case.dropped:
        document["spec"].pop(key)
    assert crd_refusals(schema_, validator, document) == []


def test_the_module_enforces_what_the_crd_says(monkeypatch):
    """Change the CRD and the module's verdict follows: a bound, and a CEL rule."""
    text = CRD_FILE.read_text().replace("maxLength: 63\n                      default: envoy",
                                        "maxLength: 5\n                      default: envoy")
    text = text.replace("l.port != 443", "l.port != 8080")
    assert text.count("maxLength: 5\n") == 1 and "l.port != 8080" in text
    monkeypatch.setattr(schema, "definition", lambda: yaml.safe_load(text))
    document = copy.deepcopy(load_example())
    document["spec"]["gateway"].update(className="envoy-ai", hostname="gw.example.com",
                                       listeners=[{"name": "web", "port": 8080, "protocol": "HTTP"}])
    try:
        spec._validator.cache_clear()
        paths = [problem.path for problem in spec.validate(document).errors]
        assert paths == ["spec.gateway.className", "spec.gateway.listeners"]
        monkeypatch.undo()
        spec._validator.cache_clear()
        assert spec.validate(document).errors == []
    finally:
        spec._validator.cache_clear()
