"""credentials.py: which Secret holds the kubeconfig and reading it out, never quoting Secret data."""

from __future__ import annotations

import base64

import pytest
import yaml
from ansible_collections.modelplane.serving.plugins.module_utils.servingstack import credentials

KUBECONFIG = """apiVersion: v1
kind: Config
clusters: [{name: c, cluster: {server: https://1.2.3.4}}]
contexts: [{name: x, context: {cluster: c, user: u}}]
current-context: x
users: [{name: u, user: {token: s3cr3t-token}}]
"""


def secret(**data: str) -> dict:
    return {"data": {key: base64.b64encode(value.encode()).decode() for key, value in data.items()}}


def test_the_kubeconfig_entry_defaults_to_the_stacks_namespace():
    spec = {"secrets": [{"type": "Kubeconfig", "name": "kc", "key": "kubeconfig"}]}
    assert credentials.kubeconfig_ref(spec, "platform") == {
        "name": "kc", "namespace": "platform", "key": "kubeconfig", "path": "spec.secrets[0]", "identity": None}


def test_an_entry_namespace_wins_and_the_cloud_identity_is_returned():
    spec = {"secrets": [
        {"type": "GoogleApplicationCredentials", "name": "sa", "key": "private_key", "namespace": "crossplane"},
        {"type": "Kubeconfig", "name": "kc", "key": "kubeconfig", "namespace": "other"},
    ]}
    ref = credentials.kubeconfig_ref(spec, "platform")
    assert (ref["namespace"], ref["path"]) == ("other", "spec.secrets[1]")
    assert ref["identity"] == {"type": "GoogleApplicationCredentials", "name": "sa", "namespace": "crossplane",
                               "key": "private_key", "path": "spec.secrets[0]"}


@pytest.mark.parametrize(("spec", "namespace", "message"), [
    ({}, "p", "spec.secrets: a Kubeconfig secret is required"),
    ({"secrets": [{"type": "GoogleApplicationCredentials", "name": "a", "key": "b"}]}, "p", "no entry has type"),
    ({"secrets": [{"type": "Kubeconfig", "name": "a", "key": "b"}] * 2}, "p", "2 entries have type Kubeconfig"),
    ({"secrets": [{"type": "Kubeconfig", "name": "a", "key": "b"}]}, None, "spec.secrets[0].namespace"),
    ({"secrets": [{"type": "Kubeconfig", "name": "", "key": "b"}]}, "p", "spec.secrets[0].name: is required"),
])
def test_unusable_secret_lists_are_named_by_path(spec, namespace, message):
    with pytest.raises(ValueError, match=message.replace("[", r"\[").replace("]", r"\]")):
        credentials.kubeconfig_ref(spec, namespace)


REF = {"name": "kc", "namespace": "platform", "key": "kubeconfig", "path": "spec.secrets[0]"}


def test_the_kubeconfig_is_decoded_and_parsed():
    found = credentials.from_secrets([secret(kubeconfig=KUBECONFIG)], {**REF, "identity": None})
    assert (found.kubeconfig, found.config) == (KUBECONFIG, yaml.safe_load(KUBECONFIG))


def test_string_data_is_read_too():
    assert credentials.secret_text({"stringData": {"kubeconfig": KUBECONFIG}}, REF) == KUBECONFIG


@pytest.mark.parametrize(("obj", "message"), [
    (None, "spec.secrets[0]: Secret platform/kc was not found on the management cluster"),
    (secret(other="x"), "has no key 'kubeconfig' (keys: other)"),
    ({"data": {"kubeconfig": "%%%not-base64"}}, "is not base64-encoded UTF-8 text"),
    (secret(kubeconfig="clusters: []\nusers: [{name: u, user: {token: s3cr3t-token}}]"), "it has no clusters"),
    (secret(kubeconfig="a: [unclosed s3cr3t-token"), "is not YAML"),
    (secret(kubeconfig=KUBECONFIG.replace("current-context: x\n", "")),
     "spec.secrets[0]: Secret platform/kc key 'kubeconfig': the kubeconfig has no current-context"),
])
def test_bad_secrets_fail_without_showing_their_data(obj, message):
    with pytest.raises(ValueError) as error:
        credentials.from_secrets([obj], {**REF, "identity": None})
    assert message in str(error.value)
    assert "s3cr3t" not in str(error.value)


def test_secret_text_returns_any_key_without_kubeconfig_checks():
    assert credentials.secret_text(secret(private_key="{json}"), {**REF, "key": "private_key"}) == "{json}"


IDENTITY = {"type": "GoogleApplicationCredentials", "name": "sa", "namespace": "platform", "key": "private_key",
            "path": "spec.secrets[1]"}


def test_the_identity_secret_is_read_after_the_kubeconfig_secret():
    assert credentials.secrets_to_read({**REF, "identity": None}) == [{**REF, "identity": None}]
    ref = {**REF, "identity": IDENTITY}
    assert credentials.secrets_to_read(ref) == [ref, IDENTITY]


def test_the_credentials_come_out_of_the_secrets():
    config = yaml.safe_load(KUBECONFIG)
    assert credentials.from_secrets([secret(kubeconfig=KUBECONFIG)], {**REF, "identity": None}) == (
        credentials.Credentials(KUBECONFIG, config))
    found = credentials.from_secrets([secret(kubeconfig=KUBECONFIG), secret(private_key="{json}")],
                                     {**REF, "identity": IDENTITY})
    assert found == credentials.Credentials(KUBECONFIG, config, "GoogleApplicationCredentials", "{json}",
                                            "spec.secrets[1]")


def test_every_problem_with_the_secrets_is_named_at_once_without_their_data():
    ref = {**REF, "identity": IDENTITY}
    with pytest.raises(ValueError) as error:
        credentials.from_secrets([None, secret(other="s3cr3t")], ref)
    assert str(error.value) == (
        "spec.secrets[0]: Secret platform/kc was not found on the management cluster; "
        "spec.secrets[1]: Secret platform/sa has no key 'private_key' (keys: other)")
    with pytest.raises(ValueError) as error:
        credentials.from_secrets([secret(kubeconfig="x: s3cr3t")], ref)  # the identity's Secret is missing too
    message = str(error.value)
    assert message.startswith("spec.secrets[0]: Secret platform/kc key 'kubeconfig' is not a kubeconfig")
    assert message.endswith("spec.secrets[1]: Secret platform/sa was not found on the management cluster")
    assert "s3cr3t" not in message


def test_an_identity_entry_must_name_its_secret_and_every_gap_is_named():
    spec = {"secrets": [{"type": "Kubeconfig", "name": "kc"},
                        {"type": "GoogleApplicationCredentials", "key": "private_key", "namespace": "crossplane"}]}
    with pytest.raises(ValueError) as error:
        credentials.kubeconfig_ref(spec, None)
    assert str(error.value) == (
        "spec.secrets[0].namespace: the Secret's namespace is unknown (the ServingStack has no metadata.namespace and "
        "the entry sets none); spec.secrets[0].key: is required; spec.secrets[1].name: is required")
