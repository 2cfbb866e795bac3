"""kubeclient.py: reads reach the cluster the kubernetes.core modules' writes reach, or none at all."""

from __future__ import annotations

import pytest
from ansible_collections.modelplane.serving.plugins.module_utils.servingstack import kubeclient

REFUSAL = "K8S_AUTH_HOST/K8S_AUTH_API_KEY are not used for reads on the controller"


@pytest.fixture
def environment(monkeypatch, tmp_path):
    """No kubeconfig anywhere and not in a pod: what the guard sees decides the outcome."""
    for name in ("K8S_AUTH_KUBECONFIG", "K8S_AUTH_HOST", "K8S_AUTH_API_KEY", "K8S_AUTH_CONTEXT",
                 "KUBERNETES_SERVICE_HOST"):
        monkeypatch.delenv(name, raising=False)
    # Without the guard the client would fall back to this (missing) kubeconfig and fail differently.
    monkeypatch.setenv("KUBECONFIG", str(tmp_path / "missing-kubeconfig"))
    monkeypatch.setenv("HOME", str(tmp_path))
    return monkeypatch


@pytest.mark.parametrize("variables", [
    {"K8S_AUTH_HOST": "https://203.0.113.9:6443"},
    {"K8S_AUTH_API_KEY": "token-not-shown"},
    {"K8S_AUTH_HOST": "https://203.0.113.9:6443", "K8S_AUTH_API_KEY": "token-not-shown"},
])
def test_host_and_api_key_without_a_kubeconfig_are_refused(environment, variables):
    for name, value in variables.items():
        environment.setenv(name, value)
    with pytest.raises(kubeclient.KubeReadError) as raised:
        kubeclient.connect()
    assert str(raised.value).startswith(REFUSAL)
    assert "token-not-shown" not in str(raised.value)


def test_a_kubeconfig_is_used_rather_than_refused(environment, tmp_path):
    # With a kubeconfig the guard stays out of the way: the (missing) file is what fails.
    environment.setenv("K8S_AUTH_HOST", "https://203.0.113.9:6443")
    with pytest.raises(kubeclient.KubeReadError, match="cannot load the kubeconfig") as raised:
        kubeclient.connect(kubeconfig=str(tmp_path / "absent"))
    assert REFUSAL not in str(raised.value)


def test_without_any_setting_the_default_kubeconfig_is_tried(environment):
    with pytest.raises(kubeclient.KubeReadError, match="cannot load the kubeconfig"):
        kubeclient.connect()


def test_an_unreachable_cluster_is_named_with_the_socket_error(tmp_path):
    import socket

    import yaml

    # A bound port that nothing listens on: every connection to it is refused.
    with socket.socket() as closed:
        closed.bind(("127.0.0.1", 0))
        port = closed.getsockname()[1]
        config = {"apiVersion": "v1", "kind": "Config", "current-context": "c",
                  "clusters": [{"name": "c", "cluster": {"server": f"https://127.0.0.1:{port}"}}],
                  "users": [{"name": "u", "user": {"token": "t"}}],
                  "contexts": [{"name": "c", "context": {"cluster": "c", "user": "u"}}]}
        (tmp_path / "kubeconfig").write_text(yaml.safe_dump(config))
        with pytest.raises(kubeclient.KubeReadError) as failed:
            kubeclient.connect(str(tmp_path / "kubeconfig"))
    assert str(failed.value) == f"cannot reach the cluster at https://127.0.0.1:{port}: Connection refused"


def test_a_cluster_that_stops_answering_after_connect_is_named_on_read():
    """A DynamicClient made while the cluster answered (or from discovery's cache) whose discovery then fails."""
    refused = type("MaxRetryError", (Exception,), {
        "reason": "HTTPSConnection(host='127.0.0.1', port=6443): Failed to establish a new connection: [Errno 111] "
                  "Connection refused"})()

    class Resources:
        def get(self, **_kwargs):
            raise refused

    client = type("DynamicClient", (), {"resources": Resources(), "client": type("ApiClient", (), {
        "configuration": type("Configuration", (), {"host": "https://127.0.0.1:6443"})()})()})()
    gateway = {"apiVersion": "gateway.networking.k8s.io/v1", "kind": "Gateway",
               "metadata": {"name": "inference-gateway", "namespace": "modelplane-system"}}
    with pytest.raises(kubeclient.KubeReadError) as failed:
        kubeclient.read(client, gateway)
    assert str(failed.value) == "cannot reach the cluster at https://127.0.0.1:6443: Connection refused"


@pytest.mark.parametrize(("error", "reason"), [
    (type("ApiException", (Exception,), {"status": 401, "reason": "Unauthorized"})(), "401 Unauthorized"),
    (type("MaxRetryError", (Exception,), {
        "reason": "HTTPSConnection(host='h', port=1): Failed to establish a new connection: [Errno -2] Name or "
                  "service not known"})(), "Name or service not known"),
    (type("Odd", (Exception,), {"reason": None})(), "Odd"),
])
def test_reasons_are_short(error, reason):
    assert kubeclient.reason(error) == reason
