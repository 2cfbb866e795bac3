"""The ServingStack CRD: its file, its facts, every field of the reference, and agreement with the module.

Agreement: every document of the corpus is checked by both the CRD's openAPIV3Schema (through
jsonschema, as the API server would with strict field validation) and ``spec.validate``. The CRD's
CEL rules (``x-kubernetes-validations``) are evaluated with cel-python where it is installed; the
checks no schema can express (PEM parsing, version rules, ObjectMeta) are the module's alone and the
corpus lists them as ``MODULE_ONLY``.
"""

from __future__ import annotations

import importlib.util
import subprocess
import sys

import celpy  # cel-python (tests/requirements.txt) evaluates the CRD's CEL rules
import pytest
import yaml
from ansible_collections.modelplane.serving.plugins.module_utils.servingstack import spec
from corpus import IGNORED, INVALID, MODULE_ONLY, VALID
from servingstack_docs import CRD_FILE, REPO, crd_validator, strip_nulls

# The generator is a build-time tool (tools/, left out of the built collection), not part of the collection.
TOOL = REPO / "tools" / "render_crd.py"
_spec = importlib.util.spec_from_file_location("render_crd", TOOL)
assert _spec and _spec.loader
render_crd = importlib.util.module_from_spec(_spec)
_spec.loader.exec_module(render_crd)


@pytest.fixture(scope="module")
def definition() -> dict:
    return yaml.safe_load(CRD_FILE.read_text())


@pytest.fixture(scope="module")
def schema(definition) -> dict:
    return definition["spec"]["versions"][0]["schema"]["openAPIV3Schema"]


@pytest.fixture(scope="module")
def validator(schema):
    return crd_validator(schema)


def test_the_file_is_the_rendering_of_schema_py():
    assert render_crd.CRD_FILE == CRD_FILE
    assert CRD_FILE.read_text() == render_crd.render_yaml(), "crds/ is stale: regenerate it with tools/render_crd.py"


def test_the_tool_checks_and_rewrites_the_file(tmp_path, monkeypatch):
    stale = tmp_path / "servingstacks.yaml"
    stale.write_text(CRD_FILE.read_text().replace("minLength: 1", "minLength: 2", 1))
    monkeypatch.setattr(render_crd, "CRD_FILE", stale)
    monkeypatch.setattr(render_crd, "REPO", tmp_path)
    assert render_crd.main(["--check"]) == 1
    assert render_crd.main([]) == 0
    assert stale.read_text() == CRD_FILE.read_text()
    assert render_crd.main(["--check"]) == 0


def test_the_tool_runs_as_a_script():
    # As `make crd` runs it: a plain interpreter, no conftest, the collection found through .collections.
    completed = subprocess.run([sys.executable, str(TOOL), "--check"], cwd=REPO, capture_output=True, text=True,
                               timeout=60, check=False)
    assert completed.returncode == 0, completed.stderr


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


def test_the_crd_has_exactly_the_reference_fields(schema):
    every = fields(schema["properties"]["spec"], "spec") | fields(schema["properties"]["status"], "status")
    leaves = {path for path in every if not path.endswith("[]")}
    assert leaves == set(REFERENCE)


@pytest.mark.parametrize("path", sorted(REFERENCE))
def test_every_field_has_its_type_bounds_enum_default_and_description(schema, path):
    every = fields(schema["properties"]["spec"], "spec") | fields(schema["properties"]["status"], "status")
    node = every[path]
    kind, facts = REFERENCE[path]
    assert node["type"] == kind
    assert len(node.get("description", "")) > 10
    for key, value in facts.items():
        assert node.get(key) == value, f"{path}.{key}"


@pytest.mark.parametrize("path", sorted(REQUIRED))
def test_required_fields(schema, path):
    every = fields(schema["properties"]["spec"], "spec") | {"spec": schema["properties"]["spec"]}
    assert set(every[path]["required"]) == REQUIRED[path]


def test_structural_schema(schema):
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

    walk(schema, "")
    listeners = schema["properties"]["spec"]["properties"]["gateway"]["properties"]["listeners"]
    assert listeners["x-kubernetes-list-type"] == "map"
    assert listeners["x-kubernetes-list-map-keys"] == ["name"]


def test_defaults_are_valid_against_their_schemas(schema):
    every = fields(schema["properties"]["spec"], "spec")
    for node in every.values():
        if "default" in node:
            crd_validator(node).validate(node["default"])


def test_cel_rule_for_the_kubeconfig_secret(schema):
    rules = [rule["rule"] for rule in schema["properties"]["spec"]["properties"]["secrets"]["x-kubernetes-validations"]]
    assert "self.filter(s, s.type == 'Kubeconfig').size() == 1" in rules


@pytest.mark.parametrize("case", VALID, ids=lambda case: case.id)
def test_valid_corpus_passes_both(validator, case):
    document = case.document()
    assert spec.validate(document).errors == []
    assert list(validator.iter_errors(strip_nulls(document))) == []


@pytest.mark.parametrize("case", INVALID, ids=lambda case: case.id)
def test_invalid_corpus_fails_both(validator, case):
    document = case.document()
    assert spec.validate(document).errors
    assert not validator.is_valid(strip_nulls(document)), "the CRD schema accepts what the module refuses"


@pytest.mark.parametrize("case", MODULE_ONLY, ids=lambda case: case.id)
def test_module_only_corpus_passes_the_schema_and_fails_the_module(validator, case):
    document = case.document()
    assert spec.validate(document).errors
    assert validator.is_valid(strip_nulls(document)), "now a schema rule: move the case to INVALID"


@pytest.mark.parametrize("case", IGNORED, ids=lambda case: case.id)
def test_ignored_corpus_passes_the_module_and_the_crd_without_what_it_ignores(validator, case):
    # The shipped CRD is a plain CRD: a live object's status is the server's, and a Crossplane XR's
    # fields belong to the CRD Crossplane generates from its XRD; the module reads neither.
    document = case.document()
    assert spec.validate(document).errors == []
    document.pop("status", None)
    for key in case.dropped:
        document["spec"].pop(key)
    assert list(validator.iter_errors(strip_nulls(document))) == []


def cel_rules(schema: dict) -> list[tuple[tuple[str, ...], str, str]]:
    found = []

    def walk(node: dict, path: tuple[str, ...]) -> None:
        for rule in node.get("x-kubernetes-validations", ()):
            found.append((path, rule["rule"], rule["message"]))
        for name, child in node.get("properties", {}).items():
            walk(child, (*path, name))

    walk(schema, ())
    return found


def cel_failures(schema: dict, document: dict) -> list[str]:
    environment = celpy.Environment()
    failures = []
    for path, rule, message in cel_rules(schema):
        node: object = document
        for name in path:
            node = node.get(name) if isinstance(node, dict) else None
        if node is None:
            continue
        program = environment.program(environment.compile(rule))
        if not program.evaluate({"self": celpy.json_to_cel(node)}):
            failures.append(message)
    return failures


def test_every_cel_rule_compiles(schema):
    environment = celpy.Environment()
    rules = cel_rules(schema)
    assert len(rules) == 5
    for _path, rule, _message in rules:
        environment.program(environment.compile(rule))


@pytest.mark.parametrize("case", VALID, ids=lambda case: case.id)
def test_cel_rules_accept_the_valid_corpus(schema, case):
    # The API server applies defaults before CEL: evaluate the defaulted manifest.
    assert cel_failures(schema, spec.validate(case.document()).manifest) == []


@pytest.mark.parametrize("case", [case for case in MODULE_ONLY if case.why == "CEL"], ids=lambda case: case.id)
def test_cel_rules_refuse_what_the_module_refuses_for_them(schema, case):
    assert cel_failures(schema, strip_nulls(case.document()))
