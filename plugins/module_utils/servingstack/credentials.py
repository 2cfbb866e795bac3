# Copyright 2026 The modelplane.serving authors
# Apache License 2.0 (see LICENSE)
"""Which Secret holds a ServingStack's kubeconfig, and how to read it out of that Secret.

Pure functions: the servingstack role reads the Secret with ``k8s_info`` (``no_log``) and passes it
here through the ``servingstack_kubeconfig_ref`` / ``servingstack_kubeconfig_text`` filters. No message
ever quotes Secret data.
"""

from __future__ import annotations

import base64
import binascii
from typing import Any

from ansible_collections.modelplane.serving.plugins.module_utils.servingstack.cloud_identity import CLOUD_IDENTITY_TYPES

KUBECONFIG = "Kubeconfig"


def kubeconfig_ref(spec: dict[str, Any], namespace: str | None) -> dict[str, Any]:
    """The Kubeconfig secret of ``spec``: ``{name, namespace, key, cloud_identities}``.

    ``namespace`` is the ServingStack's own namespace, used when the entry names none.
    ``identity`` is the first cloud identity entry (``{type, name, namespace, key, path}``) or None.
    Raises ValueError (``<path>: <problem>``) when there is no usable entry.
    """
    secrets = spec.get("secrets")
    if not isinstance(secrets, list) or not secrets:
        raise ValueError("spec.secrets: a Kubeconfig secret is required to reach the target cluster")
    found = [(index, entry) for index, entry in enumerate(secrets) if isinstance(entry, dict)
             and entry.get("type") == KUBECONFIG]
    if not found:
        raise ValueError("spec.secrets: no entry has type Kubeconfig; one is required to reach the target cluster")
    if len(found) > 1:
        paths = ", ".join(f"spec.secrets[{index}]" for index, _entry in found)
        raise ValueError(f"spec.secrets: {len(found)} entries have type Kubeconfig ({paths}); exactly one is allowed")
    index, entry = found[0]
    target_namespace = entry.get("namespace") or namespace
    if not target_namespace:
        raise ValueError(
            f"spec.secrets[{index}].namespace: the Secret's namespace is unknown (the ServingStack has no "
            "metadata.namespace and the entry sets none)"
        )
    for field in ("name", "key"):
        if not entry.get(field):
            raise ValueError(f"spec.secrets[{index}].{field}: is required")
    others = [(i, e) for i, e in enumerate(secrets) if isinstance(e, dict) and e.get("type") != KUBECONFIG]
    identity = None
    if others:
        other_index, other = others[0]
        identity = {
            "type": other.get("type"),
            "name": other.get("name"),
            "namespace": other.get("namespace") or namespace,
            "key": other.get("key"),
            "path": f"spec.secrets[{other_index}]",
        }
    return {
        "name": entry["name"],
        "namespace": target_namespace,
        "key": entry["key"],
        "path": f"spec.secrets[{index}]",
        "identity": identity,
    }


def kubeconfig_text(secret: dict[str, Any] | None, ref: dict[str, Any]) -> str:
    """The kubeconfig stored under ``ref['key']`` of ``secret`` (a Secret object as the API returns it).

    Raises ValueError naming the Secret and key, never its content.
    """
    text = secret_text(secret, ref)
    where = f"{ref.get('path', 'spec.secrets')}: Secret {ref['namespace']}/{ref['name']}"
    check_kubeconfig(text, f"{where} key {ref['key']!r}")
    return text


def secret_text(secret: dict[str, Any] | None, ref: dict[str, Any]) -> str:
    """The text stored under ``ref['key']`` of ``secret``; ValueError (never quoting data) otherwise."""
    where = f"{ref.get('path', 'spec.secrets')}: Secret {ref['namespace']}/{ref['name']}"
    if not secret:
        raise ValueError(f"{where} was not found on the management cluster")
    data = secret.get("data") or {}
    string_data = secret.get("stringData") or {}
    key = ref["key"]
    if key in data:
        try:
            text = base64.b64decode(str(data[key]), validate=True).decode("utf-8")
        except (binascii.Error, UnicodeDecodeError):
            raise ValueError(f"{where} key {key!r} is not base64-encoded UTF-8 text") from None
    elif key in string_data:
        text = str(string_data[key])
    else:
        keys = ", ".join(sorted({*data, *string_data})) or "none"
        raise ValueError(f"{where} has no key {key!r} (keys: {keys})")
    return text


def secret_problems(secrets: list[dict[str, Any] | None], ref: dict[str, Any]) -> list[str]:
    """Why the Secrets read for ``ref`` (a ``kubeconfig_ref``) cannot serve: ``secrets`` holds the kubeconfig's Secret,
    then the cloud identity's if ``ref`` has one (null for one that does not exist). Each problem is
    ``<path>: <problem>`` and never quotes Secret data; none when both serve."""
    checks: list[tuple[Any, dict[str, Any]]] = [(kubeconfig_text, ref)]
    if ref.get("identity"):
        checks.append((secret_text, ref["identity"]))
    problems = []
    for index, (read, wanted) in enumerate(checks):
        try:
            read(secrets[index] if index < len(secrets) else None, wanted)
        except ValueError as error:
            problems.append(str(error))
    return problems


# The options of the servingstack_kubeconfig module, shared with its action plugin (which writes a kubeconfig without
# a cloud identity on the controller itself, and runs the module for one with).
KUBECONFIG_OPTIONS: dict[str, dict[str, Any]] = {
    "kubeconfig": {"type": "str", "required": True, "no_log": True},
    "dest": {"type": "path", "required": True},
    "identity_type": {"type": "str", "choices": list(CLOUD_IDENTITY_TYPES)},
    "identity_credential": {"type": "str", "no_log": True},
    "identity_path": {"type": "str", "default": "spec.secrets"},
    "ca_file": {"type": "path"},
}
KUBECONFIG_RULES: dict[str, Any] = {"required_together": [("identity_type", "identity_credential")]}


# The options of the servingstack_secrets module, shared with its action plugin (which reads on the controller).
SECRETS_OPTIONS: dict[str, dict[str, Any]] = {"refs": {"type": "list", "elements": "dict", "required": True}}


def secret_refs(refs: list[dict[str, Any]]) -> list[tuple[str, str]]:
    """``(name, namespace)`` of each Secret to read; ValueError naming the entry without both."""
    found = []
    for index, ref in enumerate(refs):
        name, namespace = ref.get("name"), ref.get("namespace")
        if not (isinstance(name, str) and name and isinstance(namespace, str) and namespace):
            raise ValueError(f"refs[{index}]: needs a name and a namespace")
        found.append((name, namespace))
    return found


def check_kubeconfig(text: str, where: str) -> None:
    """Raise ValueError unless ``text`` looks like a kubeconfig with a current context."""
    import yaml  # PyYAML ships with ansible-core; imported late so the module imports without it

    try:
        config = yaml.safe_load(text)
    except yaml.YAMLError:
        raise ValueError(f"{where} is not YAML, so not a kubeconfig (the value is not shown)") from None
    if not isinstance(config, dict) or not isinstance(config.get("clusters"), list) or not config["clusters"]:
        raise ValueError(f"{where} is not a kubeconfig: it has no clusters (the value is not shown)")
    if not config.get("current-context") and len(config.get("contexts") or []) != 1:
        raise ValueError(f"{where} is a kubeconfig without a current-context; set one so the cluster is unambiguous")
