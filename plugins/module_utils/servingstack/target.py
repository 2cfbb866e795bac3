# Copyright 2026 The modelplane.serving authors
# Apache License 2.0 (see LICENSE)
"""The target cluster's kubeconfig, and explicit connection options from it, so that ``K8S_AUTH_*`` cannot redirect
a task.

AWX and Automation Controller inject a Kubernetes credential as ``K8S_AUTH_HOST``,
``K8S_AUTH_API_KEY``, ``K8S_AUTH_VERIFY_SSL`` and ``K8S_AUTH_SSL_CA_CERT`` (the management
cluster, where the ServingStack lives). kubernetes.core reads an auth option from the
environment only when the task leaves it out (``None``): ``k8s``/``k8s_info`` in
``module_utils/k8s/client.py`` (``_create_auth_spec``), ``helm`` through ``env_fallback`` in
``module_utils/helm_args_common.py``. And as soon as ``host`` and ``api_key`` are both set,
``k8s`` does not load the kubeconfig at all. So every option is given here, from the target's
kubeconfig, with a value that is never ``None``:

- ``host``, ``context``, ``kubeconfig``, ``validate_certs``, ``proxy`` and the user's static token
  are the kubeconfig's own;
- certificate and key data are written to files, since ``ca_cert``/``client_cert``/``client_key`` are paths;
- what the kubeconfig does not have is ``""``/``[]``/``false``: not ``None``, so the environment
  is not read, and empty, so the client treats it as unset (``""`` for ``api_key`` also keeps
  ``k8s`` loading the kubeconfig, whose token, exec plugin or client certificate then apply).

``helm`` applies its ``env_fallback``s before it checks that ``context`` is not given together with
``ca_cert`` or ``validate_certs`` (mutually exclusive), and AWX always sets ``K8S_AUTH_VERIFY_SSL``: so
helm gets no ``context`` (the kubeconfig's current context is the selected one) and explicit
``ca_cert``/``validate_certs`` that add nothing (empty ``host``/``api_key``/``ca_cert`` and a true
``validate_certs`` add no ``--kube-apiserver``, ``--kube-token``, ``HELM_KUBECAFILE`` or
``HELM_KUBEINSECURE_SKIP_TLS_VERIFY``: helm follows the kubeconfig). It only turns non-empty options into
``HELM_*`` variables; the ``HELM_KUBE*`` variables helm itself reads are cleared in the task environment.
An empty ``K8S_AUTH_HOST``/``K8S_AUTH_API_KEY`` there makes a kubernetes.core task that somehow lacks the
explicit options fail instead of reaching another cluster. ``K8S_AUTH_CONTEXT`` cannot be cleared
(``kubernetes.core.helm`` would take even an empty one as a ``context`` next to ``ca_cert`` and refuse).
"""

from __future__ import annotations

import base64
import binascii
import os
from typing import Any

from ansible_collections.modelplane.serving.plugins.module_utils.servingstack.cloud_identity import write_private

# option -> (kubeconfig section, the key naming a file, the file written for the same key + "-data", inline).
FILES: dict[str, tuple[str, str, str]] = {
    "ca_cert": ("cluster", "certificate-authority", "ca.crt"),
    "client_cert": ("user", "client-certificate", "client.crt"),
    "client_key": ("user", "client-key", "client.key"),
}
# What helm reads from its own environment (helm/pkg/cli/environment.go): cleared for the target's tasks.
HELM_ENV_CLEARED: dict[str, str] = {
    "HELM_KUBEAPISERVER": "",
    "HELM_KUBETOKEN": "",
    "HELM_KUBECAFILE": "",
    "HELM_KUBEINSECURE_SKIP_TLS_VERIFY": "false",
    "HELM_KUBEASUSER": "",
    "HELM_KUBEASGROUPS": "",
    "HELM_KUBETLS_SERVER_NAME": "",
}


class TargetError(ValueError):
    """The kubeconfig cannot name one cluster: the message names the entry, never a credential."""


def _named(kubeconfig: dict[str, Any], section: str, name: str) -> dict[str, Any]:
    for entry in kubeconfig.get(section) or []:
        if isinstance(entry, dict) and entry.get("name") == name:
            body = entry.get(section[:-1])
            return body if isinstance(body, dict) else {}
    raise TargetError(f"the kubeconfig has no {section[:-1]} named {name!r}")


def selected(kubeconfig: dict[str, Any]) -> tuple[str, dict[str, Any], dict[str, Any], dict[str, Any]]:
    """``(name, context, cluster, user)`` of the kubeconfig's current context."""
    if not isinstance(kubeconfig, dict):
        raise TargetError("the kubeconfig is not a mapping")
    name = kubeconfig.get("current-context") or ""
    if not name:
        raise TargetError("the kubeconfig has no current-context; set one so the cluster is unambiguous")
    body = _named(kubeconfig, "contexts", name)
    cluster = _named(kubeconfig, "clusters", str(body.get("cluster") or ""))
    if not cluster.get("server"):
        raise TargetError(f"the cluster of context {name!r} has no server")
    user = _named(kubeconfig, "users", str(body["user"])) if body.get("user") else {}
    return name, body, cluster, user


def load(text: str, where: str) -> dict[str, Any]:
    """The kubeconfig ``text`` if its current context names a cluster with a server; else ValueError, starting with
    ``where`` (the Secret and key, or the file) and never quoting the text."""
    import yaml  # PyYAML ships with ansible-core; imported late so the module_utils imports without it

    try:
        config = yaml.safe_load(text)
    except yaml.YAMLError:
        raise ValueError(f"{where} is not YAML, so not a kubeconfig (the value is not shown)") from None
    if not isinstance(config, dict) or not isinstance(config.get("clusters"), list) or not config["clusters"]:
        raise ValueError(f"{where} is not a kubeconfig: it has no clusters (the value is not shown)")
    try:
        selected(config)
    except TargetError as error:
        raise TargetError(f"{where}: {error}") from None
    return config


def with_exec(kubeconfig: dict[str, Any], argv: list[str]) -> dict[str, Any]:
    """``kubeconfig`` with its current user replaced by the exec credential plugin ``argv``.

    Only that user changes: its client certificates, static token or auth provider are dropped, since the point
    is to authenticate as the cloud identity instead of them.
    """
    context = selected(kubeconfig)[1]
    user = context.setdefault("user", "modelplane-cloud-identity")
    plugin = {"apiVersion": "client.authentication.k8s.io/v1", "command": argv[0], "args": argv[1:],
              "interactiveMode": "Never", "provideClusterInfo": False}
    users = [u for u in kubeconfig.get("users") or [] if isinstance(u, dict) and u.get("name") != user]
    kubeconfig["users"] = [*users, {"name": user, "user": {"exec": plugin}}]
    return kubeconfig


def connection(kubeconfig: dict[str, Any], path: str, dest: str) -> dict[str, Any]:
    """The options of ``kubernetes.core.k8s``/``k8s_info`` (every one of ``AUTH_ARG_SPEC``, none ``None``) and of
    ``kubernetes.core.helm``, and the task environment, for the kubeconfig found at ``path``. Its inline certificate
    data is written into ``dest`` (files ``0600``)."""
    name, _context, cluster, user = selected(kubeconfig)
    sections = {"cluster": cluster, "user": user}
    base = os.path.dirname(os.path.abspath(path))
    files, data = {}, {}
    for option, (section, key, file_name) in FILES.items():
        if sections[section].get(key + "-data"):
            try:
                data[option] = base64.b64decode(str(sections[section][key + "-data"]), validate=True)
            except binascii.Error:
                raise TargetError(f"{path}: {key}-data is not base64") from None
            files[option] = os.path.join(dest, file_name)
        else:  # kubectl resolves relative paths against the kubeconfig's folder
            files[option] = os.path.join(base, str(sections[section][key])) if sections[section].get(key) else ""
    for option, content in data.items():
        write_private(files[option], content)
    k8s = {
        "kubeconfig": path,
        "context": name,
        "host": str(cluster["server"]),
        "api_key": str(user.get("token") or ""),
        "username": str(user.get("username") or ""),
        "password": str(user.get("password") or ""),
        "validate_certs": not bool(cluster.get("insecure-skip-tls-verify")),
        **files,
        "proxy": str(cluster.get("proxy-url") or ""),
        "no_proxy": "",
        "proxy_headers": {},
        "impersonate_user": str(user.get("as") or ""),
        "impersonate_groups": [str(group) for group in user.get("as-groups") or []],
        "persist_config": False,
    }
    helm = {"kubeconfig": path, "host": "", "api_key": "", "ca_cert": "", "validate_certs": True}
    environment = {"KUBECONFIG": path, "K8S_AUTH_KUBECONFIG": path, "K8S_AUTH_HOST": "", "K8S_AUTH_API_KEY": "",
                   "HELM_KUBECONTEXT": name, **HELM_ENV_CLEARED}
    return {"k8s": k8s, "helm": helm, "environment": environment}
