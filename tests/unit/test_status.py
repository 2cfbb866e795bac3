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


# A certificate block whose body is valid base64 (the DER itself need not parse for a fingerprint).
DER = b"0\x82\x01\xb3 not really DER, but bytes all the same"
CA = "-----BEGIN CERTIFICATE-----\n" + base64.b64encode(DER).decode() + "\n-----END CERTIFICATE-----\n"


def test_the_ca_fingerprint_is_the_sha256_of_the_first_certificate_as_openssl_prints_it():
    import hashlib

    digest = hashlib.sha256(DER).hexdigest().upper()
    found = status.ca_fingerprint(KEY + CA + CA.replace("MII", "MIJ"))
    assert found == "SHA256:" + ":".join(digest[i:i + 2] for i in range(0, 64, 2))
    assert status.ca_fingerprint(None) is None and status.ca_fingerprint(KEY) is None


def test_a_fleet_status_line_says_address_ca_and_ready_or_why_it_could_not_be_read():
    ready = [{"type": "Ready", "status": "False"}]
    found = status.summary({"gateway": {"address": "203.0.113.10", "caCertificate": CA}}, ready, None)
    assert found["address"] == "203.0.113.10" and found["ca_fingerprint"].startswith("SHA256:")
    assert found["ready"] is False and found["error"] is None
    # Without a Ready condition (no converge wrote one), an address counts as ready.
    assert status.summary({"gateway": {"address": "a"}}, [], None)["ready"] is True
    assert status.summary({}, None, None)["ready"] is False
    line = status.summary_line("fleet/east", status.summary({}, None, None))
    assert line == "fleet/east: address pending, CA -, Ready False"
    failed = status.summary({}, None, "Task failed: Finalization of task args for 'x' failed: Error while "
                                      "resolving value for 'y': The lookup plugin 'z' failed: cannot reach the "
                                      "cluster:\n refused")
    assert failed["ready"] is None
    assert status.summary_line("fleet/b", failed) == \
        "fleet/b: cannot read the status: cannot reach the cluster: refused"


def test_a_task_error_loses_the_layers_ansible_wraps_around_a_lookup_error():
    wrapped = ("Task failed: Action failed: Task failed: Finalization of task args for 'ansible.builtin.set_fact' "
               "failed: Error while resolving value for 'component_objects_found': The lookup plugin "
               "'modelplane.serving.servingstack_objects' failed: servingstack_objects: cannot reach\n  the cluster")
    assert status.task_error(wrapped) == "servingstack_objects: cannot reach the cluster"
    assert status.task_error("helm failed:\n  Error: boom") == "helm failed: Error: boom"
    assert status.task_error(None) == "failed"
