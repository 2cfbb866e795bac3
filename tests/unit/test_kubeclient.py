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
