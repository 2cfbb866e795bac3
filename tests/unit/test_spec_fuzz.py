"""Property tests: whatever the document, ``spec.validate`` returns clean problems or a valid result.

Documents are the reference example with random edits (values of any JSON/YAML kind at known and
unknown paths, deletions, odd keys), plus wholly random values. Each run also checks that the
module is never looser than the CRD schema on what it reads: a document the module accepts, the CRD
accepts too, once what the module ignores (a live object's status, Crossplane's XR fields) is left out.
"""

from __future__ import annotations

import copy

import yaml
from ansible_collections.modelplane.serving.plugins.module_utils.servingstack import plan, spec
from ansible_collections.modelplane.serving.plugins.module_utils.servingstack.errors import Problem
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from servingstack_docs import CERTIFICATE, CRD_FILE, crd_validator, load_example, steps, strip_nulls

MARKER = "SECRETMARKER"
EXAMPLE = load_example()
VALIDATOR = crd_validator(
    yaml.safe_load(CRD_FILE.read_text())["spec"]["versions"][0]["schema"]["openAPIV3Schema"])

PATHS = [
    "apiVersion", "kind", "metadata", "metadata.name", "metadata.namespace", "metadata.labels", "spec", "status",
    "status.gateway", "status.gateway.address", "spec.stack", "spec.secrets", "spec.secrets[0]",
    "spec.secrets[0].type", "spec.secrets[0].name", "spec.secrets[0].key", "spec.secrets[0].namespace",
    "spec.secrets[1]", "spec.secrets[1].type", "spec.secrets[2]", "spec.versions", "spec.versions.certManager",
    "spec.versions.envoyGateway", "spec.versions.prometheus", "spec.standard", "spec.standard.leaderWorkerSet",
    "spec.dynamo", "spec.dynamo.grove", "spec.dynamo.kaiScheduler", "spec.gateway", "spec.gateway.className",
    "spec.gateway.hostname", "spec.gateway.listeners", "spec.gateway.listeners[0]", "spec.gateway.listeners[0].name",
    "spec.gateway.listeners[0].port", "spec.gateway.listeners[0].protocol", "spec.gateway.listeners[1]",
    "spec.gateway.clientCAs", "spec.gateway.clientCAs[0]", "spec.gateway.clientCAs[0].certificate",
    "spec.gateway.clientCAs[0].name", "spec.nvidiaDriverRoot", "spec.gatway", "spec.versions.bogus",
    "spec.crossplane", "spec.compositionRef",
]
NAMES = ["¹", "١٢", ".", "[0]", "spec", "secrets", "type", "name", "key", "port", "protocol", "listeners",
         "Kubeconfig", "stack", ""]
STRINGS = [
    "", "v1.8.4", "v1.9.0", "v0.1.0-alpha.12-rc1", "latest", "Dynamo", "Standard", "HTTP", "TCP", "Kubeconfig",
    "GoogleApplicationCredentials", "http", "*.example.com", "10.0.0.1", "/", "a" * 300, "-----BEGIN CERTIFICATE-----",
    f"-----BEGIN CERTIFICATE-----\n{MARKER}\n-----END CERTIFICATE-----\n",
    f"-----BEGIN PRIVATE KEY-----\n{MARKER}\n-----END PRIVATE KEY-----\n", CERTIFICATE, "\x00", "é", "\n",
]
scalars = (st.none() | st.booleans() | st.integers(min_value=-(2**70), max_value=2**70)
           | st.floats(allow_nan=True, allow_infinity=True) | st.text(max_size=20) | st.sampled_from(STRINGS))
values = st.recursive(
    scalars,
    lambda children: st.lists(children, max_size=4)
    | st.dictionaries(st.sampled_from(NAMES) | st.text(max_size=8), children, max_size=4)
    | st.dictionaries(st.integers() | st.booleans() | st.none(), children, max_size=2),
    max_leaves=12,
)
DELETE = object()
edits = st.lists(st.tuples(st.sampled_from(PATHS), values | st.just(DELETE)), min_size=1, max_size=5)


def apply(document: dict, path: str, value: object) -> None:
    node: object = document
    parts = steps(path)
    for part in parts[:-1]:
        if isinstance(node, dict) and isinstance(part, str):
            node = node.setdefault(part, {})
        elif isinstance(node, list) and isinstance(part, int) and part < len(node):
            node = node[part]
        else:
            return
    last = parts[-1]
    if isinstance(node, dict) and isinstance(last, str):
        if value is DELETE:
            node.pop(last, None)
        else:
            node[last] = value
    elif isinstance(node, list) and isinstance(last, int):
        if value is DELETE:
            if last < len(node):
                del node[last]
        elif last < len(node):
            node[last] = value
        else:
            node.append(value)


def what_the_module_reads(document: object) -> object:
    """``document`` without what the module ignores: a live object's status and Crossplane's XR fields."""
    if not isinstance(document, dict):
        return document
    read = {key: value for key, value in document.items() if key != "status"}
    if isinstance(read.get("spec"), dict):
        read["spec"] = spec.without_crossplane_fields(read["spec"])
    return read


def check(document: object) -> None:
    before = copy.deepcopy(document)
    validation = spec.validate(document)
    # unchanged; a generated NaN compares unequal to itself, so compare the printed forms too
    assert document == before or repr(document) == repr(before)
    assert isinstance(validation, spec.Validation)
    assert isinstance(validation.ignored, list)
    for problem in validation.errors:
        assert isinstance(problem, Problem)
        assert isinstance(problem.path, str) and problem.path
        assert isinstance(problem.message, str) and problem.message
        assert "\n" not in problem.message
        assert MARKER not in problem.message
        assert "Traceback" not in problem.message
        assert spec.INTERNAL_ERROR not in problem.message
    if validation.errors:
        assert validation.manifest is None
    else:
        assert isinstance(validation.manifest, dict)
        assert plan.build_plan(validation.manifest["spec"])
        assert VALIDATOR.is_valid(strip_nulls(what_the_module_reads(document))), \
            "the module accepted what the CRD refuses"


@settings(max_examples=1000, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(edits)
def test_edited_examples_yield_problems_or_a_valid_result(changes):
    document = copy.deepcopy(EXAMPLE)
    for path, value in changes:
        apply(document, path, value)
    check(document)


@settings(max_examples=300, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(values)
def test_arbitrary_values_yield_problems(document):
    check(document)
    if not isinstance(document, dict):
        assert spec.validate(document).errors


label = st.from_regex(r"\A[a-z0-9]([-a-z0-9]{0,10}[a-z0-9])?\Z")
subdomain = st.lists(label, min_size=1, max_size=3).map(".".join)
semver = st.builds(
    lambda v, major, minor, patch, pre: f"{v}{major}.{minor}.{patch}{pre}",
    st.sampled_from(["", "v"]), st.integers(0, 99), st.integers(0, 99), st.integers(0, 99),
    st.sampled_from(["", "-rc.1", "-alpha.12-rc2", "-beta"]),
)
secret_types = st.sampled_from(["GoogleApplicationCredentials", "AWSWebIdentityCredentials",
                                "NebiusServiceAccountCredentials"])


@st.composite
def valid_documents(draw) -> dict:
    secret = {"type": "Kubeconfig", "name": draw(subdomain), "key": draw(st.from_regex(r"\A[-._a-zA-Z0-9]{1,20}\Z"))}
    secrets = [secret]
    if draw(st.booleans()):
        secrets.insert(draw(st.integers(0, 1)), {"type": draw(secret_types), "name": draw(subdomain), "key": "k",
                                                 "namespace": draw(label)})
    names = draw(st.lists(label, min_size=1, max_size=8, unique=True))
    ports = draw(st.lists(st.integers(1, 65535), min_size=len(names), max_size=len(names), unique=True))
    gateway = {"listeners": [{"name": name, "port": port, "protocol": draw(st.sampled_from(["HTTP", "TCP"]))}
                             for name, port in zip(names, ports, strict=True)]}
    # With a hostname the gateway adds its own HTTPS listener (https, 443): a listener of that name or port is
    # refused (spec rule and CRD CEL rule), so a valid document with a hostname has none.
    if draw(st.booleans()) and not any(n == "https" or p == 443 for n, p in zip(names, ports, strict=True)):
        gateway["hostname"] = draw(st.sampled_from(["", "*."])) + draw(subdomain)
    if draw(st.booleans()):
        gateway["className"] = draw(label)
    stack = draw(st.sampled_from(["Standard", "Dynamo"]))
    spec_ = {"stack": stack, "secrets": secrets, "gateway": gateway,
             "versions": {"certManager": draw(semver), "prometheus": draw(semver), "envoyGateway": "v1.8.4"},
             "nvidiaDriverRoot": "/" + draw(st.from_regex(r"\A[a-z/]{0,40}\Z"))}
    if stack == "Standard":
        spec_["standard"] = {"leaderWorkerSet": draw(semver)}
    else:
        spec_["dynamo"] = {"kaiScheduler": draw(semver), "grove": "v0.1.0-alpha.13"}
    return {"apiVersion": "infrastructure.modelplane.ai/v1alpha1", "kind": "ServingStack",
            "metadata": {"name": draw(subdomain), "namespace": draw(label)}, "spec": spec_}


@settings(max_examples=300, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(valid_documents())
def test_generated_valid_documents_pass_the_module_and_the_crd(document):
    validation = spec.validate(document)
    assert validation.errors == []
    assert validation.ignored == []
    assert VALIDATOR.is_valid(document)
    assert len(plan.build_plan(validation.manifest["spec"])) == (7 if document["spec"]["stack"] == "Standard" else 8)
