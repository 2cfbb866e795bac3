# Copyright 2026 The modelplane.serving authors
# Apache License 2.0 (see LICENSE)
"""Explicit connection options for the target cluster, so that ``K8S_AUTH_*`` cannot redirect a task.

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
- certificate and key data are written to files (``payloads`` says which, ``connection`` writes them), since
  ``ca_cert``/``client_cert``/``client_key`` are paths;
- what the kubeconfig does not have is ``""``/``[]``/``false``: not ``None``, so the environment
  is not read, and empty, so the client treats it as unset (``""`` for ``api_key`` also keeps
  ``k8s`` loading the kubeconfig, whose token, exec plugin or client certificate then apply).

``helm`` applies its ``env_fallback``s before it checks that ``context`` is not given together with
``ca_cert`` or ``validate_certs`` (mutually exclusive), and AWX always sets ``K8S_AUTH_VERIFY_SSL``: so
helm gets no ``context`` (the kubeconfig's current context is the selected one) and explicit
``ca_cert``/``validate_certs`` that add nothing (helm follows the kubeconfig). It only turns non-empty
options into ``HELM_*`` variables; the ``HELM_KUBE*`` variables helm itself reads are cleared in the
task environment (``environment``).
"""

from __future__ import annotations

import base64
import binascii
import os
import shutil
import tempfile
from typing import Any

# Files the module writes for the kubeconfig's inline data: option -> (section, data key, file name).
DATA_FILES: dict[str, tuple[str, str, str]] = {
    "ca_cert": ("cluster", "certificate-authority-data", "ca.crt"),
    "client_cert": ("user", "client-certificate-data", "client.crt"),
    "client_key": ("user", "client-key-data", "client.key"),
}
# The same options when the kubeconfig names a file instead.
PATH_KEYS: dict[str, tuple[str, str]] = {
    "ca_cert": ("cluster", "certificate-authority"),
    "client_cert": ("user", "client-certificate"),
    "client_key": ("user", "client-key"),
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


def selected(kubeconfig: dict[str, Any], context: str = "") -> tuple[str, dict[str, Any], dict[str, Any]]:
    """``(context name, cluster, user)`` of ``context``, else of the kubeconfig's current context."""
    if not isinstance(kubeconfig, dict):
        raise TargetError("the kubeconfig is not a mapping")
    name = context or kubeconfig.get("current-context") or ""
    if not name:
        raise TargetError("the kubeconfig has no current-context")
    body = _named(kubeconfig, "contexts", name)
    cluster = _named(kubeconfig, "clusters", str(body.get("cluster") or ""))
    if not cluster.get("server"):
        raise TargetError(f"the cluster of context {name!r} has no server")
    user = _named(kubeconfig, "users", str(body["user"])) if body.get("user") else {}
    return name, cluster, user


def payloads(kubeconfig: dict[str, Any], context: str = "") -> dict[str, str]:
    """option -> base64 data the module must write to a file (inline CA, client certificate and key)."""
    _name, cluster, user = selected(kubeconfig, context)
    sections = {"cluster": cluster, "user": user}
    return {option: str(sections[section][key]) for option, (section, key, _file_name) in DATA_FILES.items()
            if sections[section].get(key)}


def k8s_options(kubeconfig: dict[str, Any], path: str, files: dict[str, str], context: str = "") -> dict[str, Any]:
    """Every auth option of ``kubernetes.core.k8s``/``k8s_info`` (``AUTH_ARG_SPEC``), none of them ``None``.

    ``files``: option -> path of the file written for the kubeconfig's inline data.
    """
    name, cluster, user = selected(kubeconfig, context)
    sections = {"cluster": cluster, "user": user}
    base = os.path.dirname(os.path.abspath(path))
    paths = {}
    for option, (section, key) in PATH_KEYS.items():
        named = sections[section].get(key)
        # kubectl resolves relative paths against the kubeconfig's folder.
        paths[option] = files.get(option) or (os.path.join(base, str(named)) if named else "")
    return {
        "kubeconfig": path,
        "context": name,
        "host": str(cluster["server"]),
        "api_key": str(user.get("token") or ""),
        "username": str(user.get("username") or ""),
        "password": str(user.get("password") or ""),
        "validate_certs": not bool(cluster.get("insecure-skip-tls-verify")),
        **paths,
        "proxy": str(cluster.get("proxy-url") or ""),
        "no_proxy": "",
        "proxy_headers": {},
        "impersonate_user": str(user.get("as") or ""),
        "impersonate_groups": [str(group) for group in user.get("as-groups") or []],
        "persist_config": False,
    }


def helm_options(kubeconfig: dict[str, Any], path: str, context: str = "") -> dict[str, Any]:
    """The auth options of ``kubernetes.core.helm``, none of them ``None``, ``context`` left out.

    Empty ``host``/``api_key``/``ca_cert`` and a true ``validate_certs`` add no ``--kube-apiserver``,
    ``--kube-token``, ``HELM_KUBECAFILE`` or ``HELM_KUBEINSECURE_SKIP_TLS_VERIFY``: helm follows the kubeconfig,
    whose current context must be the selected one (``context`` with ``ca_cert`` is refused by the module).
    """
    name = selected(kubeconfig, context)[0]
    if name != kubeconfig.get("current-context"):
        raise TargetError(f"helm uses the kubeconfig's current-context, not {name!r}")
    return {"kubeconfig": path, "host": "", "api_key": "", "ca_cert": "", "validate_certs": True}


def environment(kubeconfig: dict[str, Any], path: str, context: str = "") -> dict[str, str]:
    """The task environment of the target's tasks: the target kubeconfig, and no other cluster's settings.

    For helm run as a command and for ``kubernetes.core.helm`` (which adds to it only what its options set).
    An empty ``K8S_AUTH_HOST``/``K8S_AUTH_API_KEY`` makes a kubernetes.core task that somehow lacks the
    explicit options fail instead of reaching another cluster. ``K8S_AUTH_CONTEXT`` cannot be cleared
    (``kubernetes.core.helm`` would take even an empty one as a ``context`` next to ``ca_cert`` and refuse).
    """
    name, _cluster, _user = selected(kubeconfig, context)
    return {
        "KUBECONFIG": path,
        "K8S_AUTH_KUBECONFIG": path,
        "K8S_AUTH_HOST": "",
        "K8S_AUTH_API_KEY": "",
        "HELM_KUBECONTEXT": name,
        **HELM_ENV_CLEARED,
    }


# The options of the servingstack_connection and servingstack_private_dir modules (AnsibleModule argument specs).
CONNECTION_OPTIONS: dict[str, dict[str, Any]] = {
    "kubeconfig": {"type": "path", "required": True},
    "context": {"type": "str", "default": ""},
    "dest": {"type": "path", "required": True},
}
PRIVATE_DIR_OPTIONS: dict[str, dict[str, Any]] = {
    "state": {"type": "str", "choices": ["present", "absent"], "default": "present"},
    "path": {"type": "path"},
}
PRIVATE_DIR_RULES: dict[str, Any] = {"required_if": [("state", "absent", ("path",))]}

# The name every private directory of a converge ends with: what ``remove_private_dir`` agrees to remove.
PRIVATE_DIR_SUFFIX = ".servingstack"


def write_private(path: str, data: bytes) -> None:
    """Write ``data`` to ``path`` readable by the owner only, never wider even for a moment."""
    fd, tmp = tempfile.mkstemp(dir=os.path.dirname(path) or ".", prefix=".servingstack-")
    try:
        with os.fdopen(fd, "wb") as handle:
            handle.write(data)
        os.replace(tmp, path)
    finally:
        if os.path.exists(tmp):
            os.unlink(tmp)


def connection(path: str, context: str, dest: str) -> dict[str, Any]:
    """Everything a converge needs to reach the target of the kubeconfig at ``path``: the kubernetes.core and helm
    options, the task environment, the context and the API server. The kubeconfig's inline certificate data is
    written into ``dest`` (files ``0600``). Raises TargetError, naming the kubeconfig's path and never a credential.
    """
    import yaml  # PyYAML is a requirement of the module that calls this, not of importing the module_utils.

    try:
        with open(path, encoding="utf-8") as handle:
            kubeconfig = yaml.safe_load(handle)
        files = {}
        for option, data in payloads(kubeconfig, context).items():
            files[option] = os.path.join(dest, DATA_FILES[option][2])
            write_private(files[option], base64.b64decode(data, validate=True))
        options = k8s_options(kubeconfig, path, files, context)
    except binascii.Error:
        raise TargetError(f"{path}: certificate data that is not base64") from None
    except (OSError, yaml.YAMLError) as error:
        reason = getattr(error, "strerror", None) or type(error).__name__
        raise TargetError(f"cannot read the kubeconfig {path}: {reason}") from None
    except TargetError as error:
        raise TargetError(f"{path}: {error}") from None
    return {"k8s": options, "helm": helm_options(kubeconfig, path, context),
            "environment": environment(kubeconfig, path, context), "context": options["context"],
            "host": options["host"]}


def make_private_dir() -> str:
    """A new directory only its owner can enter (``0700``), in the system's temporary directory (``TMPDIR``)."""
    try:
        return tempfile.mkdtemp(suffix=PRIVATE_DIR_SUFFIX)
    except OSError as error:
        raise TargetError(f"cannot make a private directory in {tempfile.gettempdir()}: {error.strerror}") from None


def remove_private_dir(path: str) -> bool:
    """Remove a directory ``make_private_dir`` made, with everything in it; whether it existed.

    Anything else is refused (TargetError), so a wrong path can never delete a user's folder.
    """
    if not os.path.lexists(path):
        return False
    if not path.endswith(PRIVATE_DIR_SUFFIX) or os.path.islink(path) or not os.path.isdir(path):
        raise TargetError(f"{path} is not a private directory of a converge (a directory named *{PRIVATE_DIR_SUFFIX})")
    try:
        shutil.rmtree(path)
    except OSError as error:
        raise TargetError(f"cannot remove {path}: {error.strerror}") from None
    return True


def private_dir(state: str, path: str | None) -> dict[str, Any]:
    """What servingstack_private_dir returns: a new directory (``present``), or ``path`` removed (``absent``)."""
    if state == "present":
        return {"path": make_private_dir()}
    return {"path": path, "existed": remove_private_dir(str(path))}
