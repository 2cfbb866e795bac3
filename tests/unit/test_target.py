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


def kubeconfig(current: str = "west", **user) -> dict:
    return {
        "apiVersion": "v1", "kind": "Config", "current-context": current,
        "contexts": [{"name": "west", "context": {"cluster": "gke", "user": "sa"}},
                     {"name": "other", "context": {"cluster": "mgmt", "user": "sa"}}],
        "clusters": [{"name": "gke", "cluster": {"server": "https://203.0.113.5",
                                                 "certificate-authority-data": "Q0E="}},
                     {"name": "mgmt", "cluster": {"server": "https://198.51.100.1", "insecure-skip-tls-verify": True}}],
        "users": [{"name": "sa", "user": user or {"token": "t0ken"}}],
    }


def test_every_k8s_auth_option_is_set_and_none_is_none(tmp_path):
    options = target.connection(kubeconfig(), "/run/kc", str(tmp_path))["k8s"]
    # A None option is what kubernetes.core replaces with K8S_AUTH_<OPTION> (k8s/client.py _create_auth_spec).
    assert set(options) == set(AUTH_ARG_SPEC)
    assert all(value is not None for value in options.values()), options
    assert options["host"] == "https://203.0.113.5"
    assert options["api_key"] == "t0ken"
    assert (options["context"], options["kubeconfig"], options["ca_cert"]) == ("west", "/run/kc", f"{tmp_path}/ca.crt")
    assert options["validate_certs"] is True
    assert (options["client_cert"], options["client_key"], options["username"]) == ("", "", "")


def test_client_certificates_and_relative_paths(tmp_path):
    config = kubeconfig(**{"client-certificate": "certs/me.crt", "client-key-data": "S0VZ"})
    options = target.connection(config, "/etc/kube/config", str(tmp_path))["k8s"]
    assert options["api_key"] == ""  # not None: K8S_AUTH_API_KEY stays out; empty: the certificate authenticates
    assert (options["client_cert"], options["client_key"]) == ("/etc/kube/certs/me.crt", f"{tmp_path}/client.key")
    assert sorted(path.name for path in tmp_path.iterdir()) == ["ca.crt", "client.key"]
    key = tmp_path / "client.key"
    assert key.read_bytes() == b"KEY" and key.stat().st_mode & 0o777 == 0o600


def test_the_current_context_and_its_tls_verification_are_followed(tmp_path):
    options = target.connection(kubeconfig(current="other"), "/kc", str(tmp_path))["k8s"]
    assert (options["host"], options["validate_certs"], options["ca_cert"]) == ("https://198.51.100.1", False, "")


def test_helm_options_never_meet_the_mutual_exclusions(tmp_path):
    options = target.connection(kubeconfig(), "/kc", str(tmp_path))["helm"]
    assert set(options) <= set(HELM_AUTH_ARG_SPEC)
    # kubernetes.core.helm applies its env fallbacks before checking these: context must stay out.
    for pair in HELM_AUTH_MUTUALLY_EXCLUSIVE:
        assert not set(pair) <= set(options), pair
    assert "context" not in options
    assert options == {"kubeconfig": "/kc", "host": "", "api_key": "", "ca_cert": "", "validate_certs": True}


def test_the_environment_clears_helm_and_k8s_overrides(tmp_path):
    env = target.connection(kubeconfig(), "/kc", str(tmp_path))["environment"]
    assert env["KUBECONFIG"] == env["K8S_AUTH_KUBECONFIG"] == "/kc"
    assert env["K8S_AUTH_HOST"] == env["K8S_AUTH_API_KEY"] == env["HELM_KUBEAPISERVER"] == env["HELM_KUBETOKEN"] == ""
    assert env["HELM_KUBECONTEXT"] == "west"
    assert "K8S_AUTH_CONTEXT" not in env


CLUSTERS = {"clusters": [{"name": "c", "cluster": {}}]}


@pytest.mark.parametrize("config,message", [
    ({**CLUSTERS, "contexts": [{"name": "x", "context": {"cluster": "c"}}]},
     "where: the kubeconfig has no current-context; set one so the cluster is unambiguous"),
    ({**CLUSTERS, "current-context": "x", "contexts": []}, "where: the kubeconfig has no context named 'x'"),
    ({**CLUSTERS, "current-context": "x", "contexts": [{"name": "x", "context": {"cluster": "c"}}]},
     "where: the cluster of context 'x' has no server"),
    ([], "where is not a kubeconfig: it has no clusters (the value is not shown)"),
    ({"clusters": []}, "where is not a kubeconfig: it has no clusters (the value is not shown)"),
])
def test_a_kubeconfig_that_names_no_cluster_is_refused(config, message):
    with pytest.raises(ValueError) as raised:
        target.load(yaml.safe_dump(config), "where")
    assert str(raised.value) == message


def test_a_kubeconfig_that_is_not_yaml_is_refused_without_quoting_it():
    with pytest.raises(ValueError) as raised:
        target.load("a: [unclosed s3cr3t", "where")
    assert str(raised.value) == "where is not YAML, so not a kubeconfig (the value is not shown)"


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
    options = target.connection(config, str(path), str(tmp_path))["k8s"]
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


def test_certificate_data_that_is_not_base64_is_refused_naming_the_key(tmp_path):
    config = kubeconfig()
    config["clusters"][0]["cluster"]["certificate-authority-data"] = "not base64!"
    with pytest.raises(ValueError) as raised:
        target.connection(config, "/kc", str(tmp_path))
    assert str(raised.value) == "/kc: certificate-authority-data is not base64"
    assert list(tmp_path.iterdir()) == []


def test_the_exec_plugin_replaces_only_the_current_user():
    config = kubeconfig()
    config["users"].append({"name": "other", "user": {"token": "keep-me"}})
    rewritten = target.with_exec(config, ["/usr/bin/python3", "/private/plugin.py", "/private/config.json"])
    users = {u["name"]: u["user"] for u in rewritten["users"]}
    assert users["sa"] == {"exec": {"apiVersion": "client.authentication.k8s.io/v1", "command": "/usr/bin/python3",
                                    "args": ["/private/plugin.py", "/private/config.json"],
                                    "interactiveMode": "Never", "provideClusterInfo": False}}
    assert users["other"] == {"token": "keep-me"}
    assert rewritten["clusters"] == kubeconfig()["clusters"] and rewritten["current-context"] == "west"
