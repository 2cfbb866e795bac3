"""servingstack_chart_mirror against a mirror that demands TLS with a private CA and credentials.

The test charts are served over HTTPS (a CA of the test's own) with HTTP basic auth on 127.0.0.1; site.yml converges
the Standard stack from there with the real helm. The password must never reach the run's output nor stay on disk.
"""

from __future__ import annotations

import datetime
import ipaddress
import os
from pathlib import Path

import pytest
from stack_support import CHARTS, SITE, output, releases, stack_vars

pytestmark = [pytest.mark.playbook, pytest.mark.slow]

USER, PASSWORD = "robot$ci", "s3cret-mirror-pa55word"


def ca_and_server_cert(directory: Path) -> tuple[Path, Path, Path]:
    """(ca.pem, server.pem, server.key): a CA and a certificate for 127.0.0.1 it signs."""
    from cryptography import x509
    from cryptography.hazmat.primitives import hashes, serialization
    from cryptography.hazmat.primitives.asymmetric import ec
    from cryptography.x509.oid import NameOID

    now = datetime.datetime.now(datetime.UTC)
    ca_key = ec.generate_private_key(ec.SECP256R1())
    ca_name = x509.Name([x509.NameAttribute(NameOID.COMMON_NAME, "test mirror CA")])
    ca = (x509.CertificateBuilder().subject_name(ca_name).issuer_name(ca_name).public_key(ca_key.public_key())
          .serial_number(x509.random_serial_number()).not_valid_before(now - datetime.timedelta(minutes=5))
          .not_valid_after(now + datetime.timedelta(days=1))
          .add_extension(x509.BasicConstraints(ca=True, path_length=None), critical=True).sign(ca_key, hashes.SHA256()))
    key = ec.generate_private_key(ec.SECP256R1())
    cert = (x509.CertificateBuilder().subject_name(x509.Name([x509.NameAttribute(NameOID.COMMON_NAME, "127.0.0.1")]))
            .issuer_name(ca_name).public_key(key.public_key()).serial_number(x509.random_serial_number())
            .not_valid_before(now - datetime.timedelta(minutes=5)).not_valid_after(now + datetime.timedelta(days=1))
            .add_extension(x509.SubjectAlternativeName([x509.IPAddress(ipaddress.ip_address("127.0.0.1"))]),
                           critical=False).sign(ca_key, hashes.SHA256()))
    paths = (directory / "ca.pem", directory / "server.pem", directory / "server.key")
    paths[0].write_bytes(ca.public_bytes(serialization.Encoding.PEM))
    paths[1].write_bytes(cert.public_bytes(serialization.Encoding.PEM))
    paths[2].write_bytes(key.private_bytes(serialization.Encoding.PEM, serialization.PrivateFormat.PKCS8,
                                           serialization.NoEncryption()))
    os.chmod(paths[2], 0o600)
    return paths


@pytest.fixture(scope="module")
def secure_mirror(tmp_path_factory):
    import sys

    if str(CHARTS) not in sys.path:
        sys.path.insert(0, str(CHARTS))
    import fixtures  # testing/charts/fixtures.py

    fixtures.skip_without_upstream()
    work = tmp_path_factory.mktemp("secure-mirror")
    ca, cert, key = ca_and_server_cert(work)
    charts = work / "charts"
    # Relative chart URLs in index.yaml: helm fetches them from the mirror it was given, with its credentials.
    fixtures.load_build().build(charts, helm=fixtures.helm_binary(), upstream=fixtures.upstream_dir())
    server = fixtures.serve(charts, 1800, tls=(cert, key), basic_auth=(USER, PASSWORD))
    yield server, ca
    server.stop()


def test_a_converge_from_a_tls_mirror_with_credentials_keeps_the_password_out_of_sight(
        fresh_cluster, secure_mirror):
    cluster = fresh_cluster
    server, ca = secure_mirror
    mirror = {"url": server.url, "username": USER, "password": PASSWORD, "ca_file": str(ca)}
    private_tmp = Path(cluster.workdir) / "tmp"
    private_tmp.mkdir()
    result = cluster.run_playbook(SITE, extra_vars=stack_vars(cluster, servingstack_chart_mirror=mirror),
                                  env={"TMPDIR": str(private_tmp)})
    assert result.rc == 0, output(result)
    # The run's private directory (kubeconfig files and helm's repository configuration with the credentials) is gone.
    assert [path.name for path in private_tmp.iterdir() if "servingstack" in path.name] == []
    assert {r["status"] for r in releases(cluster).values()} == {"deployed"} and len(releases(cluster)) == 9
    # Every chart came from the mirror, with the credentials (a request without them is refused and retried by
    # helm with them: at least one authorized download per release).
    downloads = [path for path, authorized in server.seen if authorized and path.endswith(".tgz")]
    assert len(downloads) >= 9, server.seen
    assert PASSWORD not in result.stdout + result.stderr
    # Not in helm's own configuration either (the private one is removed with the run's directory). The extra-vars
    # file run_playbook wrote (vars-*.yml) is this test's input, not something the run left.
    leftovers = [path for path in Path(cluster.workdir).rglob("*") if path.is_file()
                 and not path.name.startswith("vars-") and PASSWORD.encode() in path.read_bytes()]
    assert leftovers == [], leftovers


def test_a_wrong_password_fails_clearly_and_says_nothing_of_it(fresh_cluster, secure_mirror):
    cluster = fresh_cluster
    server, ca = secure_mirror
    wrong = "not-the-pa55word-at-all"
    mirror = {"url": server.url, "username": USER, "password": wrong, "ca_file": str(ca)}
    result = cluster.run_playbook(SITE, extra_vars=stack_vars(cluster, servingstack_chart_mirror=mirror))
    assert result.rc != 0, output(result)
    assert wrong not in result.stdout + result.stderr
    assert "401" in result.stdout or "Unauthorized" in result.stdout, output(result)


def test_without_the_ca_helm_refuses_the_mirrors_certificate(fresh_cluster, secure_mirror):
    cluster = fresh_cluster
    server, _ca = secure_mirror
    mirror = {"url": server.url, "username": USER, "password": PASSWORD}
    result = cluster.run_playbook(SITE, extra_vars=stack_vars(cluster, servingstack_chart_mirror=mirror))
    assert result.rc != 0, output(result)
    assert "certificate signed by unknown authority" in result.stdout, output(result)
    assert PASSWORD not in result.stdout + result.stderr
