"""target.py: which Secret holds the kubeconfig and the cloud identity, and reading them out, never quoting Secret
data."""

from __future__ import annotations

import base64

import pytest
import yaml
from ansible_collections.modelplane.serving.plugins.module_utils.servingstack import target

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
    assert target.secret_refs(spec, "platform") == [
        {"type": "Kubeconfig", "name": "kc", "namespace": "platform", "key": "kubeconfig", "path": "spec.secrets[0]"}]


def test_an_entry_namespace_wins_and_the_cloud_identity_comes_second():
    spec = {"secrets": [
        {"type": "GoogleApplicationCredentials", "name": "sa", "key": "private_key", "namespace": "crossplane"},
        {"type": "Kubeconfig", "name": "kc", "key": "kubeconfig", "namespace": "other"},
        {"type": "AWSWebIdentityCredentials", "name": "ignored", "key": "k"},
    ]}
    kubeconfig, identity = target.secret_refs(spec, "platform")
    assert (kubeconfig["namespace"], kubeconfig["path"]) == ("other", "spec.secrets[1]")
    assert identity == {"type": "GoogleApplicationCredentials", "name": "sa", "namespace": "crossplane",
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
        target.secret_refs(spec, namespace)


REF = {"type": "Kubeconfig", "name": "kc", "namespace": "platform", "key": "kubeconfig", "path": "spec.secrets[0]"}
IDENTITY = {"type": "GoogleApplicationCredentials", "name": "sa", "namespace": "platform", "key": "private_key",
            "path": "spec.secrets[1]"}


def test_the_kubeconfig_is_decoded_and_parsed():
    assert target.from_secrets([secret(kubeconfig=KUBECONFIG)], [REF]) == (yaml.safe_load(KUBECONFIG), [KUBECONFIG])


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
        target.from_secrets([obj], [REF])
    assert message in str(error.value)
    assert "s3cr3t" not in str(error.value)


def test_the_identity_text_is_any_key_read_without_kubeconfig_checks():
    found = target.from_secrets([secret(kubeconfig=KUBECONFIG), secret(private_key="{json}")], [REF, IDENTITY])
    assert found == (yaml.safe_load(KUBECONFIG), [KUBECONFIG, "{json}"])


def test_every_problem_with_the_secrets_is_named_at_once_without_their_data():
    with pytest.raises(ValueError) as error:
        target.from_secrets([None, secret(other="s3cr3t")], [REF, IDENTITY])
    assert str(error.value) == (
        "spec.secrets[0]: Secret platform/kc was not found on the management cluster; "
        "spec.secrets[1]: Secret platform/sa has no key 'private_key' (keys: other)")
    with pytest.raises(ValueError) as error:
        target.from_secrets([secret(kubeconfig="x: s3cr3t"), None], [REF, IDENTITY])
    message = str(error.value)
    assert message.startswith("spec.secrets[0]: Secret platform/kc key 'kubeconfig' is not a kubeconfig")
    assert message.endswith("spec.secrets[1]: Secret platform/sa was not found on the management cluster")
    assert "s3cr3t" not in message


def test_a_missing_kubeconfig_never_parses_the_identity_as_one():
    with pytest.raises(ValueError) as error:
        target.from_secrets([None, secret(private_key=KUBECONFIG)], [REF, IDENTITY])
    assert str(error.value) == "spec.secrets[0]: Secret platform/kc was not found on the management cluster"


def test_an_identity_entry_must_name_its_secret_and_every_gap_is_named():
    spec = {"secrets": [{"type": "Kubeconfig", "name": "kc"},
                        {"type": "GoogleApplicationCredentials", "key": "private_key", "namespace": "crossplane"}]}
    with pytest.raises(ValueError) as error:
        target.secret_refs(spec, None)
    assert str(error.value) == (
        "spec.secrets[0].namespace: the Secret's namespace is unknown (the ServingStack has no metadata.namespace and "
        "the entry sets none); spec.secrets[0].key: is required; spec.secrets[1].name: is required")
