# Copyright 2026 The modelplane.serving authors
# Apache License 2.0 (see LICENSE)
"""Which Secrets hold a ServingStack's kubeconfig and cloud identity credential, and how to read them out.

Pure functions: the servingstack_kubeconfig module reads the Secrets from the management cluster and takes the
kubeconfig and the credential out of them here. No message ever quotes Secret data.
"""

from __future__ import annotations

import base64
import binascii
from typing import Any, NamedTuple

from ansible_collections.modelplane.serving.plugins.module_utils.servingstack import target

KUBECONFIG = "Kubeconfig"


def kubeconfig_ref(spec: dict[str, Any], namespace: str | None) -> dict[str, Any]:
    """The Kubeconfig secret of ``spec``: ``{name, namespace, key, path, identity}``.

    ``namespace`` is the ServingStack's own namespace, used when an entry names none.
    ``identity`` is the first cloud identity entry (``{type, name, namespace, key, path}``) or None.
    Raises ValueError (``<path>: <problem>``) when there is no usable Kubeconfig entry, or the identity entry
    lacks what locates its Secret.
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
    kubeconfig, problems = _locate(entry, index, namespace)
    others = [(i, e) for i, e in enumerate(secrets) if isinstance(e, dict) and e.get("type") != KUBECONFIG]
    identity = None
    if others:
        other_index, other = others[0]
        located, more = _locate(other, other_index, namespace)
        identity, problems = {"type": other.get("type"), **located}, problems + more
    if problems:
        raise ValueError("; ".join(problems))
    return {**kubeconfig, "identity": identity}


def _locate(entry: dict[str, Any], index: int, namespace: str | None) -> tuple[dict[str, Any], list[str]]:
    """``{name, namespace, key, path}`` of the entry ``spec.secrets[index]``, and what it lacks to find its Secret."""
    path = f"spec.secrets[{index}]"
    found = {"name": entry.get("name"), "namespace": entry.get("namespace") or namespace, "key": entry.get("key"),
             "path": path}
    problems = []
    if not found["namespace"]:
        problems.append(f"{path}.namespace: the Secret's namespace is unknown (the ServingStack has no "
                        "metadata.namespace and the entry sets none)")
    problems += [f"{path}.{field}: is required" for field in ("name", "key")
                 if not isinstance(found[field], str) or not found[field]]
    return found, problems


def _where(ref: dict[str, Any]) -> str:
    return f"{ref.get('path', 'spec.secrets')}: Secret {ref['namespace']}/{ref['name']}"


def secret_text(secret: dict[str, Any] | None, ref: dict[str, Any]) -> str:
    """The text stored under ``ref['key']`` of ``secret``; ValueError (never quoting data) otherwise."""
    where = _where(ref)
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


class Credentials(NamedTuple):
    """What the Secrets of a ``kubeconfig_ref`` hold: the kubeconfig, and the cloud identity to authenticate as."""

    kubeconfig: str  # the text, which Ansible must be told to censor
    config: dict[str, Any]  # the same, parsed and checked by target.load
    identity_type: str | None = None
    identity_credential: str | None = None
    identity_path: str | None = None


def secrets_to_read(ref: dict[str, Any]) -> list[dict[str, Any]]:
    """The entries of ``ref`` (a ``kubeconfig_ref``) whose Secrets to read: the kubeconfig's, then the identity's."""
    return [ref, *([ref["identity"]] if ref.get("identity") else [])]


def from_secrets(secrets: list[dict[str, Any] | None], ref: dict[str, Any]) -> Credentials:
    """The credentials in ``secrets``, the Secret objects of ``secrets_to_read(ref)`` in that order (None for one that
    does not exist).

    Raises ValueError with every problem at once, each ``<path>: <problem>`` naming the Secret and key and never
    quoting their data, joined by ``; ``.
    """
    texts, problems, config = [], [], {}
    for index, entry in enumerate(secrets_to_read(ref)):
        try:
            texts.append(secret_text(secrets[index] if index < len(secrets) else None, entry))
            if index == 0:
                config = target.load(texts[0], f"{_where(entry)} key {entry['key']!r}")
        except ValueError as error:
            problems.append(str(error))
    if problems:
        raise ValueError("; ".join(problems))
    identity = ref.get("identity") or {}
    return Credentials(texts[0], config, identity.get("type"), texts[1] if identity else None, identity.get("path"))
