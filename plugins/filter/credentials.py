# Copyright 2026 The modelplane.serving authors
# Apache License 2.0 (see LICENSE)
"""Filters the servingstack role uses to find and read a ServingStack's kubeconfig Secret."""

from __future__ import annotations

from typing import Any

from ansible.errors import AnsibleFilterError
from ansible_collections.modelplane.serving.plugins.module_utils.servingstack import credentials


def servingstack_kubeconfig_ref(spec: dict[str, Any], namespace: str | None = None) -> dict[str, Any]:
    """``{name, namespace, key, path, identity}`` of the spec's Kubeconfig secret."""
    try:
        return credentials.kubeconfig_ref(spec, namespace)
    except ValueError as error:
        raise AnsibleFilterError(str(error)) from None


def servingstack_kubeconfig_text(secret: dict[str, Any] | None, ref: dict[str, Any]) -> str:
    """The kubeconfig text out of the Secret object (the message never shows Secret data)."""
    try:
        return credentials.kubeconfig_text(secret, ref)
    except ValueError as error:
        raise AnsibleFilterError(str(error)) from None


def servingstack_secret_text(secret: dict[str, Any] | None, ref: dict[str, Any]) -> str:
    """The text under ``ref['key']`` of the Secret object (the message never shows Secret data)."""
    try:
        return credentials.secret_text(secret, ref)
    except ValueError as error:
        raise AnsibleFilterError(str(error)) from None


def servingstack_credential_problems(secrets: list[dict[str, Any] | None], ref: dict[str, Any]) -> list[str]:
    """Why the Secrets read for ``ref`` (servingstack_kubeconfig_ref) cannot serve, one ``<path>: <problem>`` each
    (never their data); empty when the kubeconfig and the identity's credential are there. Unlike the two filters
    above it never raises, so a task can say the problem without Ansible's "The filter plugin ... failed:" before it."""
    return credentials.secret_problems(list(secrets or []), ref)


class FilterModule:
    """modelplane.serving credential filters."""

    def filters(self) -> dict[str, Any]:
        return {
            "servingstack_kubeconfig_ref": servingstack_kubeconfig_ref,
            "servingstack_kubeconfig_text": servingstack_kubeconfig_text,
            "servingstack_secret_text": servingstack_secret_text,
            "servingstack_credential_problems": servingstack_credential_problems,
        }
