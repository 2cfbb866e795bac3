"""status.py: the ServingStack status.gateway from a Gateway and the published CA."""

from __future__ import annotations

import base64

from ansible_collections.modelplane.serving.plugins.module_utils.servingstack import schema, status

CERT = "-----BEGIN CERTIFICATE-----\nMIIBszCCAVmgAwIBAgIUQ==\n-----END CERTIFICATE-----\n"
KEY = "-----BEGIN EC PRIVATE KEY-----\nMHcCAQEEIK==\n-----END EC PRIVATE KEY-----\n"


def test_the_first_address_is_the_gateway_address():
    gateway = {"status": {"addresses": [{"type": "IPAddress", "value": "203.0.113.10"}, {"value": "x"}]}}
    assert status.gateway_address(gateway) == "203.0.113.10"


def test_no_address_before_the_load_balancer_assigns_one():
    assert status.gateway_address(None) is None
    assert status.gateway_address({"status": {}}) is None
    assert status.gateway_address({"status": {"addresses": []}}) is None
    assert status.gateway_address({"status": {"addresses": [{"value": "a" * 257}]}}) is None


def test_only_certificate_blocks_are_kept():
    assert status.certificates(KEY + CERT + "junk") == [CERT]
    assert status.certificates(CERT.replace("\n", "\r\n")) == [CERT]
    assert status.certificates(None) == []


def test_ca_from_the_trust_configmap():
    assert status.ca_from_configmap({"data": {"ca.crt": CERT}}) == CERT
    assert status.ca_from_configmap({"data": {}}) is None
    assert status.ca_from_configmap(None) is None


def test_ca_from_the_secret_never_returns_the_key():
    data = {"ca.crt": base64.b64encode(CERT.encode()).decode(), "tls.key": base64.b64encode(KEY.encode()).decode()}
    assert status.ca_from_secret({"data": data}) == CERT
    assert status.ca_from_secret({"data": {"ca.crt": base64.b64encode(KEY.encode()).decode()}}) is None
    assert status.ca_from_secret({"data": {"ca.crt": "%%%"}}) is None


def test_missing_keys_are_left_out():
    assert status.gateway_status("1.2.3.4", CERT) == {"gateway": {"address": "1.2.3.4", "caCertificate": CERT}}
    assert status.gateway_status("1.2.3.4", None) == {"gateway": {"address": "1.2.3.4"}}
    assert status.gateway_status(None, None) == {}
    assert status.gateway_status(None, "x" * (status.CA_MAX + 1)) == {}


def test_the_limits_are_the_status_schema_limits():
    fields = schema.STATUS["properties"]["gateway"]["properties"]
    assert status.ADDRESS_MAX == fields["address"]["maxLength"] == 256
    assert status.CA_MAX == fields["caCertificate"]["maxLength"] == 16384


def test_an_address_of_exactly_the_limit_is_kept_and_one_more_is_not():
    at_limit = "a" * 256
    assert status.gateway_address({"status": {"addresses": [{"value": at_limit}]}}) == at_limit
    assert status.gateway_status(at_limit, None) == {"gateway": {"address": at_limit}}
    assert status.gateway_address({"status": {"addresses": [{"value": at_limit + "a"}]}}) is None


def test_a_ca_of_exactly_the_limit_is_kept_and_one_more_is_not():
    at_limit = CERT + "A" * (16384 - len(CERT))
    assert len(at_limit) == 16384
    assert status.gateway_status("1.2.3.4", at_limit) == {"gateway": {"address": "1.2.3.4", "caCertificate": at_limit}}
    assert status.gateway_status("1.2.3.4", at_limit + "A") == {"gateway": {"address": "1.2.3.4"}}
