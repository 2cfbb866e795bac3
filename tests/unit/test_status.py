"""status.py: the ServingStack status.gateway from a Gateway and the published CA."""

from __future__ import annotations

import base64
from pathlib import Path

import yaml
from ansible_collections.modelplane.serving.plugins.module_utils.servingstack import schema, status

CERT = "-----BEGIN CERTIFICATE-----\nMIIBszCCAVmgAwIBAgIUQ==\n-----END CERTIFICATE-----\n"
KEY = "-----BEGIN EC PRIVATE KEY-----\nMHcCAQEEIK==\n-----END EC PRIVATE KEY-----\n"
REPO = Path(__file__).resolve().parents[2]


def test_the_first_address_is_the_gateway_address():
    gateway = {"status": {"addresses": [{"type": "IPAddress", "value": "203.0.113.10"}, {"value": "x"}]}}
    assert status.gateway_address(gateway) == "203.0.113.10"


def test_no_address_before_the_load_balancer_assigns_one():
    assert status.gateway_address(None) is None
    assert status.gateway_address({"status": {}}) is None
    assert status.gateway_address({"status": {"addresses": []}}) is None
    assert status.gateway_address({"status": {"addresses": [{"value": "a" * 257}]}}) is None


def test_only_certificate_blocks_are_kept():
    assert status.first_certificate(KEY + CERT + "junk" + CERT.replace("MII", "MIJ")) == CERT
    assert status.first_certificate(CERT.replace("\n", "\r\n")) == CERT
    assert status.first_certificate(KEY) is None and status.first_certificate(None) is None


def test_ca_from_the_trust_configmap():
    assert status.ca_certificate({"data": {"ca.crt": CERT}}) == CERT
    assert status.ca_certificate({"data": {}}) is None
    assert status.ca_certificate(None) is None


def test_ca_from_the_secret_never_returns_the_key():
    data = {"ca.crt": base64.b64encode(CERT.encode()).decode(), "tls.key": base64.b64encode(KEY.encode()).decode()}
    assert status.ca_certificate({"data": data}, encoded=True) == CERT
    assert status.ca_certificate({"data": {"ca.crt": base64.b64encode(KEY.encode()).decode()}}, encoded=True) is None
    assert status.ca_certificate({"data": {"ca.crt": "%%%"}}, encoded=True) is None


def test_the_limits_are_the_status_schema_limits():
    fields = schema.STATUS["properties"]["gateway"]["properties"]
    assert status.ADDRESS_MAX == fields["address"]["maxLength"] == 256
    assert status.CA_MAX == fields["caCertificate"]["maxLength"] == 16384


def test_an_address_of_exactly_the_limit_is_kept_and_one_more_is_not():
    at_limit = "a" * 256
    assert status.gateway_address({"status": {"addresses": [{"value": at_limit}]}}) == at_limit
    assert status.gateway_address({"status": {"addresses": [{"value": at_limit + "a"}]}}) is None


def test_a_ca_of_exactly_the_limit_is_kept_and_one_more_is_not():
    def block(size: int) -> str:
        head, tail = "-----BEGIN CERTIFICATE-----\n", "\n-----END CERTIFICATE-----\n"
        return head + "A" * (size - len(head) - len(tail)) + tail

    at_limit = block(16384)
    assert len(at_limit) == 16384 == status.CA_MAX
    assert status.ca_certificate({"data": {"ca.crt": at_limit}}) == at_limit
    assert status.ca_certificate({"data": {"ca.crt": block(16385)}}) is None


# A certificate block whose body is valid base64 (the DER itself need not parse for a fingerprint).
DER = b"0\x82\x01\xb3 not really DER, but bytes all the same"
CA = "-----BEGIN CERTIFICATE-----\n" + base64.b64encode(DER).decode() + "\n-----END CERTIFICATE-----\n"


def test_the_ca_fingerprint_is_the_sha256_of_the_first_certificate_as_openssl_prints_it():
    import hashlib

    digest = hashlib.sha256(DER).hexdigest().upper()
    found = status.ca_fingerprint(KEY + CA + CA.replace("MII", "MIJ"))
    assert found == "SHA256:" + ":".join(digest[i:i + 2] for i in range(0, 64, 2))
    assert status.ca_fingerprint(None) is None and status.ca_fingerprint(KEY) is None


def summary_line(host: str, found: dict) -> str:
    """The line playbooks/status.yml prints for ``host`` with the summary ``found``."""
    from ansible.parsing.dataloader import DataLoader
    from ansible.template import Templar, trust_as_template

    [play] = yaml.safe_load((REPO / "playbooks" / "status.yml").read_text())
    [summarise] = [task for task in play["tasks"] if task["name"] == "Summarise the status."]
    line = summarise["ansible.builtin.set_fact"]["servingstack_status_line"]
    return f"{host}: " + Templar(loader=DataLoader(), variables={"servingstack_found": found}).template(
        trust_as_template(line))


def test_a_fleet_status_line_says_address_ca_and_ready_or_why_it_could_not_be_read():
    ready = [{"type": "Ready", "status": "False"}]
    found = status.summary({"gateway": {"address": "203.0.113.10", "caCertificate": CA}}, ready, None)
    assert found["address"] == "203.0.113.10" and found["ca_fingerprint"].startswith("SHA256:")
    assert found["ready"] is False and found["error"] is None
    assert summary_line("fleet/west", found) == \
        f"fleet/west: address 203.0.113.10, CA {found['ca_fingerprint']}, Ready False"
    # Without a Ready condition (no converge wrote one), an address counts as ready.
    assert status.summary({"gateway": {"address": "a"}}, [], None)["ready"] is True
    assert status.summary({}, None, None)["ready"] is False
    assert summary_line("fleet/east", status.summary({}, None, "")) == "fleet/east: address pending, CA -, Ready False"
    failed = status.summary({}, None, "cannot reach the cluster:\n refused; token=abc123")
    assert failed["ready"] is None
    assert summary_line("fleet/b", failed) == \
        "fleet/b: cannot read the status: cannot reach the cluster: refused; token=<redacted>"
