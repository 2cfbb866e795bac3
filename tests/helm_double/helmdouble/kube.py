"""Cluster access for the helm double, through the ``kubernetes`` client configured like helm.

Helm's connection settings are honoured: ``--kubeconfig`` / ``KUBECONFIG`` (``:``-separated list),
``--kube-context`` / ``HELM_KUBECONTEXT``, ``HELM_KUBEAPISERVER``, ``HELM_KUBETOKEN``,
``HELM_KUBECAFILE`` and ``HELM_KUBEINSECURE_SKIP_TLS_VERIFY``.
Requests are plain REST calls (no generated API classes) to keep the double quick to start.
"""

from __future__ import annotations

import json
import os
from typing import Any

REQUEST_TIMEOUT = float(os.environ.get("HELM_DOUBLE_REQUEST_TIMEOUT", "30"))

NAMESPACED_STATIC = {
    ("v1", "Secret"): ("/api/v1", "secrets", True),
    ("v1", "Namespace"): ("/api/v1", "namespaces", False),
    ("v1", "ConfigMap"): ("/api/v1", "configmaps", True),
    ("v1", "ServiceAccount"): ("/api/v1", "serviceaccounts", True),
    ("v1", "Service"): ("/api/v1", "services", True),
    ("apiextensions.k8s.io/v1", "CustomResourceDefinition"): (
        "/apis/apiextensions.k8s.io/v1",
        "customresourcedefinitions",
        False,
    ),
    ("apps/v1", "Deployment"): ("/apis/apps/v1", "deployments", True),
    ("apps/v1", "DaemonSet"): ("/apis/apps/v1", "daemonsets", True),
    ("apps/v1", "StatefulSet"): ("/apis/apps/v1", "statefulsets", True),
    ("batch/v1", "Job"): ("/apis/batch/v1", "jobs", True),
}


class KubeError(Exception):
    """An API error: ``status`` and the API server's message."""

    def __init__(self, status: int, message: str, reason: str = "") -> None:
        super().__init__(message)
        self.status = status
        self.reason = reason


class Unreachable(Exception):
    pass


class Kube:
    def __init__(self, kubeconfig: str | None, context: str | None) -> None:
        from kubernetes import client, config  # imported only by commands that talk to the cluster

        self._configuration = client.Configuration()
        files = kubeconfig or os.environ.get("KUBECONFIG") or os.path.expanduser("~/.kube/config")
        self.default_namespace = "default"
        try:
            config.load_kube_config(
                config_file=files, context=context, client_configuration=self._configuration, persist_config=False
            )
            contexts, active = config.list_kube_config_contexts(config_file=files)
            if context:
                active = next((c for c in contexts if c.get("name") == context), active)
            self.default_namespace = (active or {}).get("context", {}).get("namespace") or "default"
        except Exception as exc:  # no kubeconfig: helm falls back to localhost:8080
            if not os.environ.get("HELM_KUBEAPISERVER"):
                raise Unreachable(
                    'Kubernetes cluster unreachable: Get "http://localhost:8080/version": '
                    f"dial tcp 127.0.0.1:8080: connect: connection refused ({exc})"
                ) from exc
        env = os.environ
        if env.get("HELM_KUBEAPISERVER"):
            self._configuration.host = env["HELM_KUBEAPISERVER"]
        if env.get("HELM_KUBETOKEN"):
            self._configuration.api_key = {"authorization": "Bearer " + env["HELM_KUBETOKEN"]}
        if env.get("HELM_KUBECAFILE"):
            self._configuration.ssl_ca_cert = env["HELM_KUBECAFILE"]
        if env.get("HELM_KUBEINSECURE_SKIP_TLS_VERIFY", "").lower() == "true":
            self._configuration.verify_ssl = False
        self._api = client.ApiClient(self._configuration)
        self._discovery: dict[str, list[dict[str, Any]]] = {}

    # ------------------------------------------------------------------ raw requests

    def request(self, method: str, path: str, body: Any = None, query: list[tuple[str, str]] | None = None) -> Any:
        headers = {"Accept": "application/json"}
        if body is not None:
            headers["Content-Type"] = "application/json"
        params = self._api.param_serialize(
            method=method,
            resource_path=path,
            query_params=query or [],
            header_params=headers,
            body=body,
            auth_settings=["BearerToken"],
        )
        try:
            # A bound on each request, so a stuck API server fails the call instead of hanging the test.
            response = self._api.call_api(*params, _request_timeout=REQUEST_TIMEOUT)
            response.read()
        except Exception as exc:
            status = getattr(exc, "status", None)
            if status:
                raise _as_kube_error(status, getattr(exc, "body", "") or "") from exc
            raise Unreachable(f"Kubernetes cluster unreachable: {exc}") from exc
        data = response.data or b""
        if response.status >= 400:
            raise _as_kube_error(response.status, data.decode(errors="replace"))
        return json.loads(data) if data else None

    # ------------------------------------------------------------------ resources

    def resource(self, api_version: str, kind: str) -> tuple[str, str, bool]:
        """(base path, plural, namespaced) for a kind, via discovery when not well known."""
        known = NAMESPACED_STATIC.get((api_version, kind))
        if known:
            return known
        base = "/api/v1" if api_version == "v1" else f"/apis/{api_version}"
        if base not in self._discovery:
            self._discovery[base] = (self.request("GET", base) or {}).get("resources", [])
        for res in self._discovery[base]:
            if res.get("kind") == kind and "/" not in res.get("name", ""):
                return base, res["name"], bool(res.get("namespaced"))
        raise KubeError(404, f'resource mapping not found for kind "{kind}" in version "{api_version}"')

    def path(self, obj: dict[str, Any], namespace: str, with_name: bool = True) -> str:
        base, plural, namespaced = self.resource(obj["apiVersion"], obj["kind"])
        prefix = f"{base}/namespaces/{obj.get('metadata', {}).get('namespace') or namespace}" if namespaced else base
        name = obj["metadata"]["name"]
        return f"{prefix}/{plural}/{name}" if with_name else f"{prefix}/{plural}"

    def get(self, obj: dict[str, Any], namespace: str) -> dict[str, Any] | None:
        try:
            return self.request("GET", self.path(obj, namespace))
        except KubeError as exc:
            if exc.status == 404:
                return None
            raise

    def create(self, obj: dict[str, Any], namespace: str) -> dict[str, Any]:
        return self.request("POST", self.path(obj, namespace, with_name=False), body=obj)

    def replace(self, obj: dict[str, Any], namespace: str, resource_version: str | None) -> dict[str, Any]:
        body = json.loads(json.dumps(obj))
        if resource_version:
            body.setdefault("metadata", {})["resourceVersion"] = resource_version
        return self.request("PUT", self.path(obj, namespace), body=body)

    def delete(self, obj: dict[str, Any], namespace: str) -> bool:
        try:
            self.request("DELETE", self.path(obj, namespace), query=[("propagationPolicy", "Background")])
            return True
        except KubeError as exc:
            if exc.status == 404:
                return False
            raise

    # ------------------------------------------------------------------ namespaces and secrets

    def namespace_exists(self, name: str) -> bool:
        return self.get({"apiVersion": "v1", "kind": "Namespace", "metadata": {"name": name}}, "") is not None

    def create_namespace(self, name: str) -> None:
        try:
            self.create({"apiVersion": "v1", "kind": "Namespace", "metadata": {"name": name}}, "")
        except KubeError as exc:
            if exc.status != 409:
                raise

    def list_secrets(self, namespace: str | None, selector: dict[str, str]) -> list[dict[str, Any]]:
        path = f"/api/v1/namespaces/{namespace}/secrets" if namespace else "/api/v1/secrets"
        query = [("labelSelector", ",".join(f"{k}={v}" for k, v in selector.items()))]
        items = (self.request("GET", path, query=query) or {}).get("items") or []
        # Filter again in case a server ignores the selector.
        return [
            item
            for item in items
            if all((item.get("metadata", {}).get("labels") or {}).get(k) == v for k, v in selector.items())
        ]


def _as_kube_error(status: int, body: str) -> KubeError:
    try:
        data = json.loads(body)
        return KubeError(status, data.get("message") or body, data.get("reason") or "")
    except (ValueError, AttributeError):
        return KubeError(status, body or f"HTTP {status}")
