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


def test_a_cluster_that_accepts_connections_and_never_answers_fails_within_the_deadline(tmp_path, monkeypatch):
    import socket
    import time

    import yaml

    monkeypatch.setattr(kubeclient, "CONNECT_TIMEOUT", 1)
    # A black hole: the kernel accepts the connections (the listen backlog), nothing ever answers, not even TLS.
    with socket.socket() as hole:
        hole.bind(("127.0.0.1", 0))
        hole.listen(16)
        url = f"https://127.0.0.1:{hole.getsockname()[1]}"
        config = {"apiVersion": "v1", "kind": "Config", "current-context": "c",
                  "clusters": [{"name": "c", "cluster": {"server": url}}],
                  "contexts": [{"name": "c", "context": {"cluster": "c", "user": "u"}}],
                  "users": [{"name": "u", "user": {"token": "not-shown"}}]}
        path = tmp_path / "kubeconfig"
        path.write_text(yaml.safe_dump(config))
        started = time.monotonic()
        with pytest.raises(kubeclient.KubeReadError) as raised:
            kubeclient.connect(str(path))
        took = time.monotonic() - started
    # One connection and one retry, each bounded by the connect timeout (the TLS handshake included).
    assert took < (kubeclient.CONNECT_RETRIES + 1) * 1 + 2, took
    assert str(raised.value).startswith(f"cannot reach the cluster at {url}: ")
    assert "timed out" in str(raised.value)
    assert "not-shown" not in str(raised.value)


def test_every_request_gets_the_deadlines_unless_it_names_its_own():
    sent = []

    class Rest:
        pool_manager = type("Pool", (), {"connection_pool_kw": {}})()

        def request(self, method, url, _request_timeout=None, **kwargs):
            sent.append(_request_timeout)

    client = type("ApiClient", (), {"rest_client": Rest()})()
    kubeclient.with_deadlines(client)
    client.rest_client.request("GET", "/version")
    client.rest_client.request("GET", "/version", _request_timeout=5)
    assert sent == [(kubeclient.CONNECT_TIMEOUT, kubeclient.READ_TIMEOUT), 5]
    assert client.rest_client.pool_manager.connection_pool_kw["retries"].read == 0


def test_an_answer_that_asks_to_come_back_is_asked_again():
    """A 429 with Retry-After (a CRD the API server is still setting up to serve) is retried after the delay, as the
    client's own default does; a connection is the only other thing retried."""
    import http.server
    import threading

    import urllib3

    hits = []

    class Handler(http.server.BaseHTTPRequestHandler):
        def do_GET(self):
            hits.append(self.path)
            self.send_response(429 if len(hits) == 1 else 200)
            self.send_header("Retry-After", "0")
            self.send_header("Content-Length", "0")
            self.end_headers()

        def log_message(self, *args):
            pass

    server = http.server.ThreadingHTTPServer(("127.0.0.1", 0), Handler)
    threading.Thread(target=server.serve_forever, daemon=True).start()
    try:
        rest = type("Rest", (), {"pool_manager": urllib3.PoolManager(), "request": lambda *a, **k: None})()
        kubeclient.with_deadlines(type("ApiClient", (), {"rest_client": rest})())
        answer = rest.pool_manager.request("GET", f"http://127.0.0.1:{server.server_port}/apis/example.com/v1/things")
    finally:
        server.shutdown()
    assert (answer.status, len(hits)) == (200, 2)
