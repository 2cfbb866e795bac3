"""The operators built beside the control plane (binaries.operator_bin_dir()): each program starts and reports the
release it was built from, and trust-manager, run out of cluster against a test cluster the way its pod runs it,
reconciles a Bundle into ConfigMaps and reports it Synced."""

from __future__ import annotations

import datetime
import socket
import subprocess
import time
import urllib.request
from pathlib import Path

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
