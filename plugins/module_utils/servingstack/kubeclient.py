# Copyright 2026 The modelplane.serving authors
# Apache License 2.0 (see LICENSE)
"""Read-only cluster access for the lookup plugins, through the ``kubernetes`` client.

The dynamic client's raw requests need only the client's core (not its generated API classes) and work the
same across client versions.
"""

from __future__ import annotations

import contextlib
import os
import re
from typing import Any


class KubeReadError(Exception):
    """A read failed: the message names the object or path and the API status, never a body."""


# Every request's deadlines, in seconds: to open the connection (TCP and TLS handshake), then for each read of the
# answer. The client sets none by default, so an API server that accepts connections and never answers would hang a
# converge for good. One retry of a failed connection and none of a read: a cluster that never answers fails in
# CONNECT_TIMEOUT * 2 seconds (the TLS handshake is part of the connection), well within a minute.
CONNECT_TIMEOUT = 10
READ_TIMEOUT = 30
CONNECT_RETRIES = 1
# A 429 or 503 that says when to come back (Retry-After: a CRD the API server is still setting up to serve, or its
# priority and fairness throttling) is asked again after that delay, as the client's own default does, this often.
RETRY_AFTER_RETRIES = 3


def with_deadlines(api_client: Any) -> Any:
    """``api_client`` (a ``kubernetes.client.ApiClient``) with a connect and a read timeout on every request that
    gives none (discovery, the dynamic client's calls), at most CONNECT_RETRIES retries of a connection, no read
    retry, and RETRY_AFTER_RETRIES of an answer that asks for one (Retry-After)."""
    import urllib3

    rest = api_client.rest_client
    rest.pool_manager.connection_pool_kw["retries"] = urllib3.Retry(
        total=CONNECT_RETRIES + RETRY_AFTER_RETRIES, connect=CONNECT_RETRIES, read=0, status=RETRY_AFTER_RETRIES,
        other=0, redirect=3)
    send = rest.request

    def request(*args: Any, _request_timeout: Any = None, **kwargs: Any) -> Any:
        return send(*args, _request_timeout=_request_timeout or (CONNECT_TIMEOUT, READ_TIMEOUT), **kwargs)

    rest.request = request
    return api_client


def connect(kubeconfig: str = "", context: str = "") -> Any:
    """A ``DynamicClient`` for the cluster the kubernetes.core modules would reach with the same settings (the
    target_cluster doc fragment says which; inside a pod with none of them, the pod's service account).
    ``K8S_AUTH_HOST``/``K8S_AUTH_API_KEY`` without a kubeconfig are refused rather than half-honoured, so reads never
    reach another cluster than the modules' writes."""
    try:
        from kubernetes import config
        from kubernetes.dynamic import DynamicClient
    except ImportError:
        raise KubeReadError("the kubernetes Python client is required") from None
    path = kubeconfig or os.environ.get("K8S_AUTH_KUBECONFIG") or None
    if not path and (os.environ.get("K8S_AUTH_HOST") or os.environ.get("K8S_AUTH_API_KEY")):
        raise KubeReadError("K8S_AUTH_HOST/K8S_AUTH_API_KEY are not used for reads on the controller: "
                            "give the cluster as a kubeconfig (K8S_AUTH_KUBECONFIG or the role's kubeconfig variable)")
    context = context or ("" if kubeconfig else os.environ.get("K8S_AUTH_CONTEXT") or "")
    _remove_key_files_at_exit(config)
    try:
        if not path and not context and _in_cluster_only():
            from kubernetes.client import ApiClient

            config.load_incluster_config()
            api_client = ApiClient()
        else:
            # KUBECONFIG: a list of files, merged.
            api_client = config.new_client_from_config(config_file=path or os.environ.get("KUBECONFIG") or None,
                                                       context=context or None)
    except Exception as error:  # config errors name the file, not its content
        raise KubeReadError(f"cannot load the kubeconfig: {error}") from None
    with_deadlines(api_client)
    try:
        return DynamicClient(api_client)
    except Exception as error:  # discovery failed: the cluster is unreachable or refuses us
        raise KubeReadError(f"cannot reach the cluster at {_host(api_client)}: {reason(error)}") from None


def _host(api_client: Any) -> str:
    """The API server an ApiClient talks to, for messages."""
    return getattr(getattr(api_client, "configuration", None), "host", "") or "?"


def host_of(client: Any) -> str:
    """The API server a DynamicClient (``connect``'s) talks to, for messages."""
    return _host(getattr(client, "client", None))


_KEY_FILES_WATCHED_IN: list[int] = []


def _remove_key_files_at_exit(config: Any) -> None:
    """Have the files the client is about to write the kubeconfig's inline certificate data to (the CA, the client
    certificate and its private key, in the temporary directory) removed when this process ends. The client does
    that with ``atexit``, which Ansible's worker processes never run (multiprocessing ends them with ``os._exit``,
    after its own exit finalizers). Files inherited from the parent (its entries in the client's cache, still in
    use there) are left alone."""
    from multiprocessing import util

    kube_config = getattr(config, "kube_config", None)
    if not isinstance(getattr(kube_config, "_temp_files", None), dict) or os.getpid() in _KEY_FILES_WATCHED_IN:
        return
    _KEY_FILES_WATCHED_IN.append(os.getpid())
    inherited = set(kube_config._temp_files.values())  # pylint: disable=protected-access

    def remove() -> None:
        for name in set(kube_config._temp_files.values()) - inherited:  # pylint: disable=protected-access
            with contextlib.suppress(OSError):
                os.remove(name)

    util.Finalize(None, remove, exitpriority=0)


def key_files_in(directory: str) -> None:
    """In a process forked from a worker that will end first (the Lease's renewer): the client's cached key files are
    the worker's, removed when it ends, so start a new cache, and write it into ``directory`` (the run's private
    directory, removed with it), since this process ends with ``os._exit`` and removes nothing itself."""
    import tempfile

    from kubernetes.config import kube_config

    tempfile.tempdir = directory
    kube_config._temp_files.clear()  # pylint: disable=protected-access


def _in_cluster_only() -> bool:
    """Inside a pod, with no kubeconfig file to prefer (as kubernetes.core falls back to the pod's account)."""
    default = os.environ.get("KUBECONFIG") or os.path.expanduser("~/.kube/config")
    return bool(os.environ.get("KUBERNETES_SERVICE_HOST")) and not any(
        os.path.exists(part) for part in default.split(os.pathsep) if part)


def reason(error: BaseException) -> str:
    """A short reason for a failed request or connection, never a body: the HTTP status and reason, else the socket
    error of a failed connection ("Connection refused") without urllib3's wrapping of it, else the error's text."""
    status, cause = getattr(error, "status", None), getattr(error, "reason", None)
    if status:
        return f"{status} {cause or ''}".strip()
    if cause is not None and str(cause):
        socket_error = re.search(r"\[Errno -?\d+\] ([^'\")]+)", str(cause))
        return socket_error.group(1).strip() if socket_error else str(cause)
    return str(error) or type(error).__name__


def get(client: Any, path: str, what: str, **params: Any) -> Any:
    """The decoded JSON of a GET of ``path`` as it is (the client's default wraps it in a ResourceInstance, which needs
    a kind: /version has none); ``what`` names it in the error."""
    try:
        return client.request("GET", path, serializer=lambda _client, data: data, **params)
    except Exception as error:
        raise KubeReadError(f"reading {what} failed: {reason(error)}") from None


# Only the objects' metadata of a list: a CRD's schema, or a Helm release's payload, can be megabytes each.
METADATA_ONLY = {"Accept": "application/json;as=PartialObjectMetadataList;g=meta.k8s.io;v=v1"}


def read(client: Any, ref: dict[str, Any]) -> Any:
    """One object (or None) when ``ref`` names one, else the list of matching objects.

    ``ref``: ``apiVersion``, ``kind``, and either ``metadata.name`` (with ``metadata.namespace``
    for namespaced kinds) or ``namespace`` / ``label_selector`` / ``field_selector`` for a list, and then
    ``metadata_only`` to read only each object's metadata.
    A kind the cluster does not serve reads as absent (None or []), like an object not created yet.
    """
    from kubernetes.dynamic.exceptions import NotFoundError, ResourceNotFoundError, ResourceNotUniqueError

    metadata = ref.get("metadata") or {}
    name = metadata.get("name") or ref.get("name")
    namespace = metadata.get("namespace") or ref.get("namespace")
    try:
        resource = client.resources.get(api_version=ref["apiVersion"], kind=ref["kind"])
    except (ResourceNotFoundError, ResourceNotUniqueError):  # not served (no CRD yet)
        return None if name else []
    except Exception as error:  # discovery failed after connect(): the cluster stopped answering, or refuses us
        raise KubeReadError(f"cannot reach the cluster at {_host(client.client)}: {reason(error)}") from None
    if not resource.namespaced:
        namespace = None
    what = f"{ref['kind']} {namespace + '/' if namespace else ''}{name or '(list)'}"
    try:
        if name:
            return resource.get(name=name, namespace=namespace).to_dict()
        headers = dict(METADATA_ONLY) if ref.get("metadata_only") else {}
        items = resource.get(namespace=namespace, label_selector=ref.get("label_selector", ""),
                             field_selector=ref.get("field_selector", ""),
                             header_params=headers).to_dict().get("items") or []
        # The API leaves apiVersion and kind out of list items.
        return [{"apiVersion": ref["apiVersion"], "kind": ref["kind"], **item} for item in items]
    except NotFoundError:
        return None if name else []
    except Exception as error:
        raise KubeReadError(f"reading {what} failed: {reason(error)}") from None
