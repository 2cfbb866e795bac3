"""Variants on one cluster: a live ServingStack on the management cluster (kubeconfig from its Secret,
status written back) with the Dynamo stack, a hostname, client CAs and GKE's NVIDIA driver root; then
the same stack edited (one client CA and the driver root dropped). The tests run in order."""

from __future__ import annotations

import base64
import datetime
import json
import subprocess
import tempfile
from pathlib import Path

import pytest
import yaml
from stack_support import (
    DYNAMO,
    GATEWAY_NS,
    REPO,
    SITE,
    UPSTREAM,
    committed_writes,
    get,
    listed,
    manifest,
    output,
    releases,
    secret_text,
    stack_vars,
    write_verbs,
)

pytestmark = [
    pytest.mark.playbook,
    pytest.mark.slow,
    pytest.mark.skipif(not UPSTREAM.is_dir(), reason="needs ../shared/upstream (charts and CRDs)"),
]

HOSTNAME = "west.inference.example.com"
GKE_ROOT = "/home/kubernetes/bin/nvidia"
DRA_NS = "dra-driver-nvidia-gpu"
BUNDLE = "inference-gateway-client-cas"


def ca_pem(name: str) -> str:
    from cryptography import x509
    from cryptography.hazmat.primitives import hashes, serialization
    from cryptography.hazmat.primitives.asymmetric import ec
    from cryptography.x509.oid import NameOID

    key = ec.generate_private_key(ec.SECP256R1())
    subject = x509.Name([x509.NameAttribute(NameOID.COMMON_NAME, name)])
    now = datetime.datetime.now(datetime.UTC)
    cert = (x509.CertificateBuilder().subject_name(subject).issuer_name(subject).public_key(key.public_key())
            .serial_number(x509.random_serial_number()).not_valid_before(now)
            .not_valid_after(now + datetime.timedelta(days=30))
            .add_extension(x509.BasicConstraints(ca=True, path_length=None), critical=True).sign(key, hashes.SHA256()))
    return cert.public_bytes(serialization.Encoding.PEM).decode()


CAS = [{"name": "east-gateway", "certificate": ca_pem("east")},
       {"name": "fleet-gateway", "certificate": ca_pem("fleet")}]


def live_stack(**spec_changes) -> dict:
    """The Dynamo example as a live object; only its Kubeconfig secret (no cloud identity to call out to)."""
    doc = manifest(DYNAMO, **spec_changes)
    doc["spec"]["secrets"] = [s for s in doc["spec"]["secrets"] if s["type"] == "Kubeconfig"]
    return doc


def apply(cluster, doc: dict) -> None:
    """Create or replace the live ServingStack."""
    resource = cluster.dynamic().resources.get(api_version=doc["apiVersion"], kind=doc["kind"])
    current = get(cluster, doc["apiVersion"], doc["kind"], doc["metadata"]["name"], doc["metadata"]["namespace"])
    if current is None:
        resource.create(body=doc, namespace=doc["metadata"]["namespace"])
    else:
        body = {**doc, "metadata": {**doc["metadata"], "resourceVersion": current["metadata"]["resourceVersion"]}}
        resource.replace(body=body, namespace=doc["metadata"]["namespace"])


def helm_values(cluster, release: str, namespace: str) -> dict:
    proc = subprocess.run(["helm", "get", "values", release, "-n", namespace, "-o", "json"], env=cluster.env,
                          capture_output=True, text=True, check=True)
    return json.loads(proc.stdout) or {}


def run_live(cluster, check: bool = False):
    """site.yml on the live ServingStack: no servingstack_kubeconfig, so the Secret is read."""
    extra = stack_vars(cluster, servingstack_name="west-gke-stack", servingstack_namespace="platform")
    del extra["servingstack_definition"], extra["servingstack_kubeconfig"]
    private = Path(tempfile.mkdtemp(dir=cluster.workdir))
    result = cluster.run_playbook(SITE, extra_vars=extra, env={"TMPDIR": str(private)}, check=check)
    assert not list(private.glob("*kubeconfig*")), "the temporary kubeconfig was left behind"
    return result


def assert_client_cas(cluster, cas: list[dict]) -> None:
    """One ConfigMap per client CA (mp-client-ca-<InferenceGateway>), one bundle ConfigMap holding every CA in
    spec order, and exactly one ClientTrafficPolicy on the https listener trusting the bundle (Envoy Gateway lets
    only the oldest of several policies on one listener take effect, and takes a single CA reference)."""
    per_ca = {c["metadata"]["name"]: (c["metadata"]["annotations"]["modelplane.ai/inference-gateway"], c["data"])
              for c in listed(cluster, "v1", "ConfigMap", GATEWAY_NS)
              if c["metadata"].get("labels", {}).get("modelplane.ai/client-ca") == "true"}
    assert per_ca == {f"mp-client-ca-{entry['name']}": (entry["name"], {"ca.crt": entry["certificate"]})
                      for entry in cas}
    bundle = get(cluster, "v1", "ConfigMap", BUNDLE, GATEWAY_NS)["data"]["ca.crt"]
    pems = ["-----BEGIN CERTIFICATE-----" + block for block in bundle.split("-----BEGIN CERTIFICATE-----")[1:]]
    assert [pem.strip() for pem in pems] == [entry["certificate"].strip() for entry in cas]
    policies = listed(cluster, "gateway.envoyproxy.io/v1alpha1", "ClientTrafficPolicy", GATEWAY_NS)
    assert [p["metadata"]["name"] for p in policies] == [BUNDLE]
    assert policies[0]["spec"]["targetRefs"] == [{"group": "gateway.networking.k8s.io", "kind": "Gateway",
                                                  "name": "inference-gateway", "sectionName": "https"}]
    assert policies[0]["spec"]["tls"]["clientValidation"]["caCertificateRefs"] == \
        [{"group": "", "kind": "ConfigMap", "name": BUNDLE}]


@pytest.fixture(scope="module")
def management(cluster):
    """The cluster is both the management and the target cluster."""
    cluster.kubectl("apply", "-f", str(REPO / "crds" / "servingstacks.infrastructure.modelplane.ai.yaml"))
    kubeconfig = base64.b64encode(Path(cluster.kubeconfig).read_bytes()).decode()
    cluster.kubectl("apply", "-f", "-", input=yaml.safe_dump_all([
        {"apiVersion": "v1", "kind": "Namespace", "metadata": {"name": "platform"}},
        {"apiVersion": "v1", "kind": "Secret", "metadata": {"name": "west-gke-kubeconfig", "namespace": "platform"},
         "type": "Opaque", "data": {"kubeconfig": kubeconfig}},
    ]))
    return cluster


def test_a_live_dynamo_stack_with_hostname_and_client_cas_converges(management):
    cluster = management
    apply(cluster, live_stack(gateway={"hostname": HOSTNAME, "clientCAs": CAS,
                                       "listeners": [{"name": "http", "port": 80, "protocol": "HTTP"}]},
                              nvidiaDriverRoot=GKE_ROOT))
    result = run_live(cluster)
    assert result.rc == 0, output(result)
    found = releases(cluster)
    assert {"mp-grove-charts", "mp-kai-scheduler"} <= set(found) and "mp-lws" not in found, found
    assert listed(cluster, "apps/v1", "Deployment", "modelexpress-system"), "no ModelExpress server"
    # The certificate chain: self-signed issuer -> CA (in the trust namespace) -> CA issuer -> serving cert.
    assert get(cluster, "cert-manager.io/v1", "ClusterIssuer", "mp-selfsigned")["spec"] == {"selfSigned": {}}
    ca = get(cluster, "cert-manager.io/v1", "Certificate", "mp-gateway-ca", "cert-manager")
    assert ca["spec"]["isCA"] is True and ca["spec"]["issuerRef"]["name"] == "mp-selfsigned"
    assert get(cluster, "cert-manager.io/v1", "ClusterIssuer", "mp-gateway-ca")["spec"] == \
        {"ca": {"secretName": "mp-gateway-ca"}}
    serving = get(cluster, "cert-manager.io/v1", "Certificate", "mp-gateway-tls", GATEWAY_NS)
    assert serving["spec"]["dnsNames"] == [HOSTNAME]
    assert {c["type"]: c["status"] for c in serving["status"]["conditions"]}["Ready"] == "True"
    gateway = get(cluster, "gateway.networking.k8s.io/v1", "Gateway", "inference-gateway", GATEWAY_NS)
    https = {listener["name"]: listener for listener in gateway["spec"]["listeners"]}["https"]
    assert (https["port"], https["protocol"], https["hostname"]) == (443, "HTTPS", HOSTNAME)
    assert https["tls"]["mode"] == "Terminate"
    assert https["tls"]["certificateRefs"][0]["name"] == "mp-gateway-tls"
    assert_client_cas(cluster, CAS)
    # GKE's driver root: passed to the DRA driver, plus the quota for its system-critical pods.
    assert helm_values(cluster, "mp-dra-driver-nvidia-gpu", DRA_NS).get("nvidiaDriverRoot") == GKE_ROOT
    assert listed(cluster, "v1", "ResourceQuota", DRA_NS)
    # Status written back: the address and the CA certificate only (what trust-manager publishes).
    status = get(cluster, "infrastructure.modelplane.ai/v1alpha1", "ServingStack", "west-gke-stack",
                 "platform")["status"]["gateway"]
    assert status["address"]
    ca_secret = get(cluster, "v1", "Secret", "mp-gateway-ca", "cert-manager")
    assert status["caCertificate"].strip() == secret_text(ca_secret, "ca.crt").strip()
    assert "PRIVATE KEY" not in status["caCertificate"]
    published = get(cluster, "v1", "ConfigMap", "mp-gateway-ca", "modelplane-system")
    assert published["data"]["ca.crt"].strip() == status["caCertificate"].strip()


def test_dropping_a_client_ca_and_the_driver_root_removes_their_objects(management):
    cluster = management
    # A per-CA policy as an earlier version of the role made it: it would conflict with the bundle's policy.
    cluster.kubectl("apply", "-f", "-", input=yaml.safe_dump({
        "apiVersion": "gateway.envoyproxy.io/v1alpha1", "kind": "ClientTrafficPolicy",
        "metadata": {"name": CAS[0]["name"], "namespace": GATEWAY_NS, "labels": {"modelplane.ai/client-ca": "true"}},
        "spec": {"targetRefs": [{"group": "gateway.networking.k8s.io", "kind": "Gateway", "name": "inference-gateway",
                                 "sectionName": "https"}],
                 "tls": {"clientValidation": {"caCertificateRefs": [{"kind": "ConfigMap", "name": CAS[0]["name"]}]}}}}))
    # Someone else's ConfigMap that happens to carry an InferenceGateway's name: never ours to touch.
    cluster.kubectl("apply", "-f", "-", input=yaml.safe_dump({
        "apiVersion": "v1", "kind": "ConfigMap", "metadata": {"name": CAS[1]["name"], "namespace": GATEWAY_NS},
        "data": {"owner": "someone else"}}))
    apply(cluster, live_stack(gateway={"hostname": HOSTNAME, "clientCAs": CAS[:1],
                                       "listeners": [{"name": "http", "port": 80, "protocol": "HTTP"}]},
                              nvidiaDriverRoot="/"))
    result = run_live(cluster)
    assert result.rc == 0, output(result)
    assert get(cluster, "v1", "ConfigMap", f"mp-client-ca-{CAS[1]['name']}", GATEWAY_NS) is None
    theirs = get(cluster, "v1", "ConfigMap", CAS[1]["name"], GATEWAY_NS)
    assert theirs is not None and theirs["data"] == {"owner": "someone else"}
    assert "modelplane.ai/client-ca" not in (theirs["metadata"].get("labels") or {})
    assert_client_cas(cluster, CAS[:1])
    assert "nvidiaDriverRoot" not in helm_values(cluster, "mp-dra-driver-nvidia-gpu", DRA_NS)
    assert listed(cluster, "v1", "ResourceQuota", DRA_NS) == []
    assert releases(cluster)["mp-dra-driver-nvidia-gpu"]["revision"] == 2


def test_the_live_stack_reconverges_without_changes(management):
    result = run_live(management)
    assert result.rc == 0 and result.changed == 0, output(result)
    # Only the PATCHes kubernetes.core.k8s's client-side apply sends for objects holding lists, which store nothing
    # (test_stack_standard.py's second run shows it): no create, update or delete, no status written again.
    assert set(write_verbs(result)) <= {"patch"}, result.requests


def test_dropping_the_client_cas_and_the_hostname_removes_their_objects(management):
    """Every client CA (the bundle and its policy go) and the hostname (its certificates, their Secrets and the issuer
    chain go) dropped at once; check mode first writes nothing."""
    cluster = management
    assert get(cluster, "cert-manager.io/v1", "Certificate", "mp-gateway-tls", GATEWAY_NS) is not None
    assert get(cluster, "cert-manager.io/v1", "ClusterIssuer", "mp-gateway-ca") is not None
    apply(cluster, live_stack(gateway={"listeners": [{"name": "http", "port": 80, "protocol": "HTTP"}]}))
    mark = cluster.audit_mark()
    preview = run_live(cluster, check=True)
    assert preview.rc == 0, output(preview)
    assert committed_writes(cluster, mark) == [], "check mode wrote to the cluster"
    assert_client_cas(cluster, CAS[:1])

    result = run_live(cluster)
    assert result.rc == 0, output(result)
    assert listed(cluster, "v1", "ConfigMap", GATEWAY_NS, label_selector="modelplane.ai/client-ca") == []
    assert listed(cluster, "gateway.envoyproxy.io/v1alpha1", "ClientTrafficPolicy", GATEWAY_NS) == []
    gateway = get(cluster, "gateway.networking.k8s.io/v1", "Gateway", "inference-gateway", GATEWAY_NS)
    assert [listener["name"] for listener in gateway["spec"]["listeners"]] == ["http"]
    for api, kind, name, namespace in (
            ("cert-manager.io/v1", "Certificate", "mp-gateway-tls", GATEWAY_NS),
            ("v1", "Secret", "mp-gateway-tls", GATEWAY_NS),
            ("cert-manager.io/v1", "Certificate", "mp-gateway-ca", "cert-manager"),
            ("v1", "Secret", "mp-gateway-ca", "cert-manager"),
            ("cert-manager.io/v1", "ClusterIssuer", "mp-gateway-ca", None),
            ("cert-manager.io/v1", "ClusterIssuer", "mp-selfsigned", None)):
        assert get(cluster, api, kind, name, namespace) is None, (kind, name)
    again = run_live(cluster)
    assert again.rc == 0 and again.changed == 0, output(again)


def test_a_missing_kubeconfig_secret_is_reported_by_name(cluster):
    doc = live_stack()
    doc["spec"]["secrets"][0]["name"] = "nope"
    result = cluster.run_playbook(SITE, extra_vars={**stack_vars(cluster, doc), "servingstack_kubeconfig": ""})
    assert result.rc != 0
    assert "Secret platform/nope was not found" in result.stdout, output(result)
