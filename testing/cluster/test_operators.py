"""The operators built beside the control plane (binaries.operator_bin_dir()): each program starts and reports the
release it was built from; trust-manager, run out of cluster against a test cluster the way its pod runs it,
reconciles a Bundle into ConfigMaps and reports it Synced; cert-manager's controller (a main of ours over its public
packages) issues SelfSigned and CA certificates, and its cainjector puts a Certificate's CA in a webhook
configuration."""

from __future__ import annotations

import base64
import datetime
import json
import socket
import subprocess
import time
import urllib.request
from pathlib import Path
from typing import Any

import pytest
import yaml
from cryptography import x509
from cryptography.hazmat.primitives import hashes, serialization
from cryptography.hazmat.primitives.asymmetric import ec
from cryptography.x509.oid import NameOID

from cluster import binaries
from cluster.fixtures import running_cluster

UPSTREAM = Path(__file__).resolve().parents[2].parent / "shared" / "upstream"
BUNDLE_CRD = UPSTREAM / "trust-manager" / "crds" / "trust.cert-manager.io_bundles.yaml"

# binary -> (arguments, what its output must hold: {version} is the version its module pins)
STARTS = {
    "trust-manager": (["--help"], "--trust-namespace"),
    "envoy-gateway": (["version"], "{version}"),
    "lws-controller": (["--version"], "{version}"),
    "prometheus-operator": (["--version"], "version {bare}"),
    "metallb-controller": (["--help"], "-namespace"),
    # Mains of ours over cert-manager's public packages (README.md, "cert-manager"): no version of their own.
    "cert-manager-controller": (["--help"], "-cluster-resource-namespace"),
    "cert-manager-cainjector": (["--help"], "-leader-election-namespace"),
}


@pytest.fixture(scope="module")
def bin_dir() -> Path:
    return binaries.operator_bin_dir(quiet=False)


def test_every_operator_has_a_start_check() -> None:
    assert set(STARTS) == set(binaries.OPERATOR_PACKAGES)


@pytest.mark.parametrize("name", sorted(STARTS))
def test_operator_binary_starts_and_reports_its_release(bin_dir: Path, name: str) -> None:
    args, expected = STARTS[name]
    version = binaries.operator_versions()[name]
    result = subprocess.run([str(bin_dir / name), *args], capture_output=True, text=True, timeout=60, check=False)
    output = result.stdout + result.stderr
    assert result.returncode == 0, output
    assert expected.format(version=version, bare=version.lstrip("v")) in output, output


def _free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return sock.getsockname()[1]


def _self_signed(common_name: str, ca: bool) -> tuple[bytes, bytes]:
    """(certificate PEM, key PEM) of a self-signed certificate for ``common_name``."""
    key = ec.generate_private_key(ec.SECP256R1())
    name = x509.Name([x509.NameAttribute(NameOID.COMMON_NAME, common_name)])
    now = datetime.datetime.now(datetime.UTC)
    builder = (
        x509.CertificateBuilder().subject_name(name).issuer_name(name).public_key(key.public_key())
        .serial_number(x509.random_serial_number()).not_valid_before(now - datetime.timedelta(minutes=1))
        .not_valid_after(now + datetime.timedelta(days=1))
        .add_extension(x509.BasicConstraints(ca=ca, path_length=None), critical=True)
    )
    if not ca:
        builder = builder.add_extension(x509.SubjectAlternativeName([x509.DNSName(common_name)]), critical=False)
    cert = builder.sign(key, hashes.SHA256())
    key_pem = key.private_bytes(serialization.Encoding.PEM, serialization.PrivateFormat.PKCS8,
                                serialization.NoEncryption())
    return cert.public_bytes(serialization.Encoding.PEM), key_pem


def _wait(what: str, check: object, timeout: float = 60.0) -> object:
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        result = check()  # type: ignore[operator]
        if result:
            return result
        time.sleep(0.5)
    raise AssertionError(f"{what}: not within {timeout:.0f} s")


def _ready(url: str) -> bool:
    try:
        with urllib.request.urlopen(url, timeout=2) as response:
            return response.status == 200
    except OSError:
        return False


@pytest.mark.slow
def test_trust_manager_reconciles_a_bundle(bin_dir: Path, tmp_path: Path) -> None:
    """The chart's flags (the webhook serving its certificate directory), with the ports moved to free loopback ones
    and leader election off (out of cluster it needs the ServiceAccount's namespace file: README.md, Operators): the
    Bundle's source CA reaches a ConfigMap of the Bundle's name in every namespace, and the Bundle reports Synced."""
    if not BUNDLE_CRD.is_file():
        pytest.skip(f"{BUNDLE_CRD} is absent: the Bundle CRD comes from ../shared/upstream")
    tls = tmp_path / "tls"
    tls.mkdir(mode=0o700)
    cert, key = _self_signed("trust-manager.trust.svc", ca=False)
    (tls / "tls.crt").write_bytes(cert)
    (tls / "tls.key").write_bytes(key)
    (tls / "tls.key").chmod(0o600)
    ca_pem = _self_signed("test root", ca=True)[0].decode()
    with running_cluster(tmp_path / "cluster", operator_double=False, nodes=1, gpu_nodes=0) as cluster:
        cluster.kubectl("apply", "--server-side", "-f", str(BUNDLE_CRD))
        cluster.wait_established("bundles.trust.cert-manager.io")
        cluster.kubectl("create", "namespace", "trust")
        cluster.kubectl("create", "configmap", "source", "-n", "trust", f"--from-literal=ca.crt={ca_pem}")
        ready = _free_port()
        log = (tmp_path / "trust-manager.log").open("w")
        process = subprocess.Popen(
            [str(bin_dir / "trust-manager"), f"--kubeconfig={cluster.kubeconfig}", "--trust-namespace=trust",
             "--leader-elect=false", f"--metrics-port={_free_port()}", f"--readiness-probe-port={ready}",
             "--readiness-probe-path=/readyz", "--webhook-host=127.0.0.1", f"--webhook-port={_free_port()}",
             f"--webhook-certificate-dir={tls}"],
            stdout=log, stderr=subprocess.STDOUT,
        )
        try:
            _wait("trust-manager ready", lambda: _ready(f"http://127.0.0.1:{ready}/readyz"))
            bundle = {
                "apiVersion": "trust.cert-manager.io/v1alpha1", "kind": "Bundle", "metadata": {"name": "roots"},
                "spec": {"sources": [{"configMap": {"name": "source", "key": "ca.crt"}}],
                         "target": {"configMap": {"key": "roots.pem"}}},
            }
            cluster.kubectl("apply", "-f", "-", input=yaml.safe_dump(bundle))

            def target() -> str:
                got = cluster.kubectl("get", "configmap", "roots", "-n", "default", "-o",
                                      "jsonpath={.data.roots\\.pem}", check=False)
                return got.stdout if got.returncode == 0 else ""

            assert _wait("the Bundle's ConfigMap in default", target).strip() == ca_pem.strip()

            def synced() -> bool:
                status = cluster.kubectl("get", "bundle", "roots", "-o",
                                         "jsonpath={.status.conditions[?(@.type=='Synced')].status}").stdout
                return status == "True"

            _wait("Bundle Synced", synced)
            assert process.poll() is None, (tmp_path / "trust-manager.log").read_text()[-2000:]
        finally:
            process.terminate()
            process.wait(timeout=30)
            log.close()


def _ready_status(cluster: Any, kind: str, name: str, namespace: str | None) -> str:
    """The status of the Ready condition of an object, or "" while it has none (or does not exist)."""
    where = ["-n", namespace] if namespace else []
    got = cluster.kubectl("get", kind, name, *where, "-o", "jsonpath={.status.conditions[?(@.type=='Ready')].status}",
                          check=False)
    return got.stdout if got.returncode == 0 else ""


def _secret(cluster: Any, name: str, namespace: str) -> dict[str, bytes]:
    got = cluster.kubectl("get", "secret", name, "-n", namespace, "-o", "json")
    return {key: base64.b64decode(value) for key, value in (json.loads(got.stdout).get("data") or {}).items()}


# What the test applies, one after the other as each is Ready: (kind, name, namespace).
ISSUED = (("clusterissuer", "selfsigned", None), ("certificate", "root", "cert-manager"),
          ("clusterissuer", "root", None), ("certificate", "web", "default"))


@pytest.mark.slow
def test_cert_manager_issues_self_signed_and_ca_certificates_and_its_cainjector_injects_the_ca(
        bin_dir: Path, tmp_path: Path) -> None:
    """The chart's flags for both containers, run out of cluster with a kubeconfig: a SelfSigned ClusterIssuer signs a
    CA Certificate, a CA ClusterIssuer over its Secret signs a leaf Certificate for a DNS name, each Ready, the leaf
    verifying against the CA; a ValidatingWebhookConfiguration annotated cert-manager.io/inject-ca-from the leaf's
    Certificate gets the CA as its caBundle. The CRDs are those of the cert-manager module the binaries are built
    from (deploy/crds in the Go module cache)."""
    module = binaries.module_info(binaries.OPERATORS / "cert-manager", "github.com/cert-manager/cert-manager")
    crds = Path(module["Dir"]) / "deploy" / "crds"
    with running_cluster(tmp_path / "cluster", operator_double=False, nodes=1, gpu_nodes=0) as cluster:
        for kind in ("certificaterequests", "certificates", "clusterissuers", "issuers"):
            cluster.kubectl("apply", "--server-side", "-f", str(crds / f"cert-manager.io_{kind}.yaml"))
        cluster.wait_established(*(f"{kind}.cert-manager.io" for kind in
                                   ("certificaterequests", "certificates", "clusterissuers", "issuers")))
        cluster.kubectl("create", "namespace", "cert-manager")
        logs, processes = [], []
        for name, args in (("cert-manager-controller", ["--v=2", "--cluster-resource-namespace=cert-manager",
                                                        "--leader-election-namespace=kube-system",
                                                        "--acme-http01-solver-image=quay.io/jetstack/acmesolver:v1",
                                                        "--max-concurrent-challenges=60"]),
                           ("cert-manager-cainjector", ["--v=2", "--leader-election-namespace=kube-system",
                                                        "--metrics-listen-address=0"])):
            logs.append((tmp_path / f"{name}.log").open("w"))
            processes.append(subprocess.Popen([str(bin_dir / name), f"--kubeconfig={cluster.kubeconfig}", *args],
                                              stdout=logs[-1], stderr=subprocess.STDOUT))
        try:
            objects = [
                {"apiVersion": "cert-manager.io/v1", "kind": "ClusterIssuer", "metadata": {"name": "selfsigned"},
                 "spec": {"selfSigned": {}}},
                {"apiVersion": "cert-manager.io/v1", "kind": "Certificate",
                 "metadata": {"name": "root", "namespace": "cert-manager"},
                 "spec": {"isCA": True, "commonName": "test root", "secretName": "root",
                          "privateKey": {"algorithm": "ECDSA", "size": 256},
                          "issuerRef": {"name": "selfsigned", "kind": "ClusterIssuer"}}},
                {"apiVersion": "cert-manager.io/v1", "kind": "ClusterIssuer", "metadata": {"name": "root"},
                 "spec": {"ca": {"secretName": "root"}}},
                {"apiVersion": "cert-manager.io/v1", "kind": "Certificate",
                 "metadata": {"name": "web", "namespace": "default"},
                 "spec": {"dnsNames": ["web.default.svc"], "secretName": "web-tls",
                          "issuerRef": {"name": "root", "kind": "ClusterIssuer"}}},
                {"apiVersion": "admissionregistration.k8s.io/v1", "kind": "ValidatingWebhookConfiguration",
                 "metadata": {"name": "web", "annotations": {"cert-manager.io/inject-ca-from": "default/web"}},
                 "webhooks": [{"name": "web.example.test", "admissionReviewVersions": ["v1"], "sideEffects": "None",
                               "failurePolicy": "Ignore", "rules": [],
                               "clientConfig": {"service": {"name": "web", "namespace": "default"}}}]},
            ]
            cluster.kubectl("apply", "-f", "-", input=yaml.safe_dump_all(objects))
            for kind, name, namespace in ISSUED:
                _wait(f"{kind} {name} Ready", lambda k=kind, n=name, ns=namespace:
                      _ready_status(cluster, k, n, ns) == "True", timeout=90)
            root, web = _secret(cluster, "root", "cert-manager"), _secret(cluster, "web-tls", "default")
            ca = x509.load_pem_x509_certificate(root["tls.crt"])
            leaf = x509.load_pem_x509_certificate(web["tls.crt"])
            assert ca.extensions.get_extension_for_class(x509.BasicConstraints).value.ca
            assert leaf.issuer == ca.subject
            assert leaf.extensions.get_extension_for_class(x509.SubjectAlternativeName).value.get_values_for_type(
                x509.DNSName) == ["web.default.svc"]
            ca.public_key().verify(leaf.signature, leaf.tbs_certificate_bytes,  # type: ignore[call-arg]
                                   ec.ECDSA(leaf.signature_hash_algorithm))
            assert web["ca.crt"] == root["tls.crt"]

            def injected() -> bytes:
                got = cluster.kubectl("get", "validatingwebhookconfiguration", "web", "-o",
                                      "jsonpath={.webhooks[0].clientConfig.caBundle}").stdout
                return base64.b64decode(got) if got else b""

            assert _wait("the caBundle injected", injected) == web["ca.crt"]
            assert all(process.poll() is None for process in processes), [
                (tmp_path / f"{name}.log").read_text()[-2000:] for name in ("cert-manager-controller",
                                                                            "cert-manager-cainjector")]
        finally:
            for process in processes:
                process.terminate()
            for process in processes:
                process.wait(timeout=30)
            for log in logs:
                log.close()
    # SIGTERM is a clean stop for both, as for the real programs.
    assert [process.returncode for process in processes] == [0, 0], [
        (tmp_path / f"{name}.log").read_text()[-2000:]
        for name in ("cert-manager-controller", "cert-manager-cainjector")]
