"""target.py: every kubernetes.core connection option comes from the target's kubeconfig, none is left to K8S_AUTH_*."""

from __future__ import annotations

import pytest
import yaml
from ansible_collections.kubernetes.core.plugins.module_utils.args_common import AUTH_ARG_SPEC
from ansible_collections.kubernetes.core.plugins.module_utils.helm_args_common import (
    HELM_AUTH_ARG_SPEC,
    HELM_AUTH_MUTUALLY_EXCLUSIVE,
)
from ansible_collections.modelplane.serving.plugins.module_utils.servingstack import target


def kubeconfig(**user) -> dict:
    return {
        "apiVersion": "v1", "kind": "Config", "current-context": "west",
        "contexts": [{"name": "west", "context": {"cluster": "gke", "user": "sa"}},
                     {"name": "other", "context": {"cluster": "mgmt", "user": "sa"}}],
        "clusters": [{"name": "gke", "cluster": {"server": "https://203.0.113.5",
                                                 "certificate-authority-data": "Q0E="}},
                     {"name": "mgmt", "cluster": {"server": "https://198.51.100.1", "insecure-skip-tls-verify": True}}],
        "users": [{"name": "sa", "user": user or {"token": "t0ken"}}],
    }


def test_every_k8s_auth_option_is_set_and_none_is_none():
    options = target.k8s_options(kubeconfig(), "/run/kc", {"ca_cert": "/run/ca.crt"})
    # A None option is what kubernetes.core replaces with K8S_AUTH_<OPTION> (k8s/client.py _create_auth_spec).
    assert set(options) == set(AUTH_ARG_SPEC)
    assert all(value is not None for value in options.values()), options
    assert options["host"] == "https://203.0.113.5"
    assert options["api_key"] == "t0ken"
    assert (options["context"], options["kubeconfig"], options["ca_cert"]) == ("west", "/run/kc", "/run/ca.crt")
    assert options["validate_certs"] is True
    assert (options["client_cert"], options["client_key"], options["username"]) == ("", "", "")


def test_client_certificates_and_relative_paths():
    config = kubeconfig(**{"client-certificate": "certs/me.crt", "client-key-data": "S0VZ"})
    assert target.payloads(config) == {"ca_cert": "Q0E=", "client_key": "S0VZ"}
    options = target.k8s_options(config, "/etc/kube/config", {"ca_cert": "/d/ca.crt", "client_key": "/d/client.key"})
    assert options["api_key"] == ""  # not None: K8S_AUTH_API_KEY stays out; empty: the certificate authenticates
    assert (options["client_cert"], options["client_key"]) == ("/etc/kube/certs/me.crt", "/d/client.key")


def test_another_context_and_tls_verification_follow_the_kubeconfig():
    options = target.k8s_options(kubeconfig(), "/kc", {}, context="other")
    assert (options["host"], options["validate_certs"], options["ca_cert"]) == ("https://198.51.100.1", False, "")


def test_helm_options_never_meet_the_mutual_exclusions():
    options = target.helm_options(kubeconfig(), "/kc")
    assert set(options) <= set(HELM_AUTH_ARG_SPEC)
    # kubernetes.core.helm applies its env fallbacks before checking these: context must stay out.
    for pair in HELM_AUTH_MUTUALLY_EXCLUSIVE:
        assert not set(pair) <= set(options), pair
    assert "context" not in options
    assert options == {"kubeconfig": "/kc", "host": "", "api_key": "", "ca_cert": "", "validate_certs": True}
    with pytest.raises(target.TargetError, match="current-context"):
        target.helm_options(kubeconfig(), "/kc", context="other")


def test_the_environment_clears_helm_and_k8s_overrides():
    env = target.environment(kubeconfig(), "/kc")
    assert env["KUBECONFIG"] == env["K8S_AUTH_KUBECONFIG"] == "/kc"
    assert env["K8S_AUTH_HOST"] == env["K8S_AUTH_API_KEY"] == env["HELM_KUBEAPISERVER"] == env["HELM_KUBETOKEN"] == ""
    assert env["HELM_KUBECONTEXT"] == "west"
    assert "K8S_AUTH_CONTEXT" not in env


@pytest.mark.parametrize("config,message", [
    ({"contexts": []}, "no current-context"),
    ({"current-context": "x", "contexts": []}, "no context named 'x'"),
    ({"current-context": "x", "contexts": [{"name": "x", "context": {"cluster": "c"}}],
      "clusters": [{"name": "c", "cluster": {}}]}, "has no server"),
    ([], "not a mapping"),
])
def test_a_kubeconfig_that_names_no_cluster_is_refused(config, message):
    with pytest.raises(target.TargetError, match=message):
        target.k8s_options(config, "/kc", {})


@pytest.mark.parametrize("user,token", [
    ({"token": "static-token"}, "static-token"),
    ({"exec": {"apiVersion": "client.authentication.k8s.io/v1beta1", "command": "CRED"}}, "exec-token"),
])
def test_kubernetes_core_takes_the_options_over_awx_variables(tmp_path, monkeypatch, user, token):
    """kubernetes.core's own merge (k8s/client.py) with AWX's variables for another cluster set."""
    from ansible_collections.kubernetes.core.plugins.module_utils.k8s import client

    cred = tmp_path / "cred.sh"
    cred.write_text('#!/bin/sh\necho \'{"apiVersion": "client.authentication.k8s.io/v1beta1", '
                    '"kind": "ExecCredential", "status": {"token": "exec-token"}}\'\n')
    cred.chmod(0o700)
    if "exec" in user:
        user = {"exec": {**user["exec"], "command": str(cred)}}
    config = kubeconfig(**user)
    config["clusters"][0]["cluster"].pop("certificate-authority-data")
    path = tmp_path / "kubeconfig"
    path.write_text(yaml.safe_dump(config))
    for name, value in {"K8S_AUTH_HOST": "https://management.example", "K8S_AUTH_API_KEY": "management-token",
                        "K8S_AUTH_VERIFY_SSL": "False", "K8S_AUTH_SSL_CA_CERT": "/management/ca.crt",
                        "K8S_AUTH_CONTEXT": "other", "K8S_AUTH_KUBECONFIG": "/management/kubeconfig"}.items():
        monkeypatch.setenv(name, value)
    options = target.k8s_options(config, str(path), {})
    configuration = client._create_configuration(client._create_auth_spec(None, **options))
    assert configuration.host == "https://203.0.113.5"
    assert configuration.verify_ssl is True and not configuration.ssl_ca_cert
    assert configuration.auth_settings()["BearerToken"]["value"] == f"Bearer {token}"
    # Without the options, the variables win: the management cluster and its token.
    configuration = client._create_configuration(client._create_auth_spec(None, kubeconfig=str(path)))
    assert configuration.host == "https://management.example"


def test_controller_reads_given_a_kubeconfig_ignore_the_environment_context(tmp_path):
    """kubeclient.connect: K8S_AUTH_CONTEXT names a context of the environment's kubeconfig, not of the target's."""
    from ansible_collections.modelplane.serving.plugins.module_utils.servingstack import kubeclient
    from cluster.fixtures import running_cluster

    # connect() runs discovery: a real API server answers it (one node, nothing scheduled, no operator double).
    # The environment is patched inside the cluster's block, so it is restored before running_cluster restores its
    # own KUBECONFIG/K8S_AUTH_KUBECONFIG.
    with running_cluster(tmp_path / "cluster", nodes=1, gpu_nodes=0, operator_double=False, audit=False) as server, \
            pytest.MonkeyPatch.context() as monkeypatch:
        path = server.kubeconfig
        monkeypatch.setenv("K8S_AUTH_CONTEXT", "management")
        monkeypatch.setenv("K8S_AUTH_HOST", "https://management.example")
        client = kubeclient.connect(path)
        assert client.configuration.host == server.url
        monkeypatch.delenv("K8S_AUTH_HOST")
        monkeypatch.setenv("K8S_AUTH_KUBECONFIG", path)
        with pytest.raises(kubeclient.KubeReadError, match="management"):
            kubeclient.connect()  # without a kubeconfig the environment's context still applies


# --------------------------------------------------------------------------- files on the controller


def test_connection_writes_the_inline_ca_privately_and_points_every_option_at_it(tmp_path):
    path = tmp_path / "kubeconfig"
    path.write_text(yaml.safe_dump(kubeconfig()))
    dest = tmp_path / "private"
    dest.mkdir()
    found = target.connection(str(path), "", str(dest))
    ca = dest / "ca.crt"
    assert ca.read_bytes() == b"CA" and ca.stat().st_mode & 0o777 == 0o600
    assert found["k8s"]["ca_cert"] == str(ca) and found["k8s"]["kubeconfig"] == str(path)
    assert (found["context"], found["host"]) == ("west", "https://203.0.113.5")
    assert found["environment"]["KUBECONFIG"] == str(path) and found["helm"]["kubeconfig"] == str(path)


@pytest.mark.parametrize(("content", "message"), [
    (None, "cannot read the kubeconfig {path}: No such file or directory"),
    ("a: [b", "cannot read the kubeconfig {path}: "),
    (yaml.safe_dump({**kubeconfig(), "current-context": "east"}), "{path}: the kubeconfig has no context named 'east'"),
])
def test_connection_names_the_kubeconfig_and_why_it_cannot_be_used(tmp_path, content, message):
    path = tmp_path / "kubeconfig"
    if content is not None:
        path.write_text(content)
    with pytest.raises(target.TargetError) as raised:
        target.connection(str(path), "", str(tmp_path))
    assert str(raised.value).startswith(message.format(path=path))
    assert "t0ken" not in str(raised.value)


def test_connection_refuses_certificate_data_that_is_not_base64(tmp_path):
    config = kubeconfig()
    config["clusters"][0]["cluster"]["certificate-authority-data"] = "not base64!"
    path = tmp_path / "kubeconfig"
    path.write_text(yaml.safe_dump(config))
    with pytest.raises(target.TargetError, match="certificate data that is not base64"):
        target.connection(str(path), "", str(tmp_path))


def test_a_private_dir_is_the_owners_alone_in_tmpdir_and_removed_with_its_files(tmp_path, monkeypatch):
    monkeypatch.setenv("TMPDIR", str(tmp_path))
    monkeypatch.setattr(target.tempfile, "tempdir", None)
    made = target.private_dir("present", None)["path"]
    assert made.startswith(str(tmp_path)) and made.endswith(".servingstack")
    assert (tmp_path / made).stat().st_mode & 0o777 == 0o700
    (tmp_path / made / "kubeconfig").write_text("secret")
    assert target.private_dir("absent", made) == {"path": made, "existed": True}
    assert not (tmp_path / made).exists()
    # A second removal (a re-run of the cleanup) is fine.
    assert target.private_dir("absent", made) == {"path": made, "existed": False}


@pytest.mark.parametrize("name", ["home", "link.servingstack", "file.servingstack"])
def test_removal_refuses_what_is_not_a_private_dir_of_a_converge(tmp_path, name):
    (tmp_path / "home").mkdir()
    (tmp_path / "link.servingstack").symlink_to(tmp_path / "home")
    (tmp_path / "file.servingstack").write_text("x")
    with pytest.raises(target.TargetError, match="is not a private directory of a converge"):
        target.remove_private_dir(str(tmp_path / name))
    assert (tmp_path / name).exists() and (tmp_path / "home").is_dir()
