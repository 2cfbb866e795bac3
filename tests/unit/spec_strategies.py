"""Hypothesis strategies for ServingStack documents, shared by the property tests (tests/unit/test_spec_fuzz.py)
and the differential test against a real API server (tests/integration/test_crd_differential.py).

``edits`` are random edits of the reference example (values of any JSON/YAML kind at known and unknown
paths, deletions, odd keys; ``apply`` makes one), ``values`` wholly random values, and ``valid_documents``
documents that pass both the module and the CRD.
"""

from __future__ import annotations

from ansible_collections.modelplane.serving.plugins.module_utils.servingstack import spec
from hypothesis import strategies as st
from servingstack_docs import CERTIFICATE, steps

MARKER = "SECRETMARKER"

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
    """Set ``path`` of ``document`` to ``value`` in place (``DELETE``: remove it); a path through a missing list
    item or a non-container is left alone."""
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
