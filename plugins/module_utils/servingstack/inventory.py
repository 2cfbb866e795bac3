# Copyright 2026 The modelplane.serving authors
# Apache License 2.0 (see LICENSE)
"""What the ``servingstacks`` inventory plugin makes of the ServingStacks on a management cluster.

Pure functions from the CRs (dicts as the API returns them) to inventory hosts: one host per CR,
named ``<namespace>/<name>``, with its variables and the plugin's own groups. Validation is the
``servingstack_spec`` module's (``spec.validate``), so an invalid CR carries the messages the module
gives and never stops the inventory. The plugin only connects, lists, caches and applies the
user's ``compose``/``groups``/``keyed_groups``.
"""

from __future__ import annotations

import re
from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any

from ansible_collections.modelplane.serving.plugins.module_utils.servingstack import kubeclient, spec
from ansible_collections.modelplane.serving.plugins.module_utils.servingstack.schema import API_VERSION, KIND

# Every ServingStack host, invalid ones too (so a converge reports their errors).
ALL_GROUP = "servingstacks"
# ServingStacks whose spec fails validation; they carry servingstack_spec_errors.
INVALID_GROUP = "servingstack_invalid"
NAMESPACE_GROUP_PREFIX = "servingstack_namespace_"
STACK_GROUP_PREFIX = "servingstack_stack_"

# Host variables the plugin must mark as templates (Ansible 2.19 trusts no plugin-set string by itself).
TEMPLATED_VARIABLES = frozenset({"ansible_python_interpreter"})
# The controller's own Python: each host is a ServingStack converged from the controller.
PYTHON_INTERPRETER = "{{ ansible_playbook_python }}"

# Options of the inventory file a converge may reuse to reach the management cluster (read the CR's
# kubeconfig Secret, write its status). Credentials (api_key, username, password, proxy_headers) and an
# inline kubeconfig mapping are never copied: host variables show in `ansible-inventory --list`.
MANAGEMENT_OPTIONS = ("kubeconfig", "context", "host", "validate_certs", "ca_cert", "client_cert", "client_key",
                      "proxy", "no_proxy", "impersonate_user", "impersonate_groups")

# Ansible's own rule for group names (ansible.constants.INVALID_VARIABLE_NAMES).
_INVALID_GROUP_CHARACTERS = re.compile(r"^[\d\W]|[^\w]")


class ManagementClusterError(Exception):
    """Listing the ServingStacks failed; the message says why (never a response body)."""


@dataclass(frozen=True)
class StackHost:
    """One ServingStack as an inventory host: its name, the plugin's groups for it and its variables."""

    name: str
    groups: tuple[str, ...]
    variables: dict[str, Any] = field(default_factory=dict)


def safe_group_name(name: str) -> str:
    """``name`` with every character Ansible refuses in a group name replaced by ``_``, as inventory plugins
    replace them (``ansible.plugins.inventory.to_safe_group_name``, whatever ``TRANSFORM_INVALID_GROUP_CHARS`` says)."""
    return _INVALID_GROUP_CHARACTERS.sub("_", name)


def _mapping(value: object) -> dict[str, Any]:
    return value if isinstance(value, dict) else {}


def as_read(item: dict[str, Any]) -> dict[str, Any]:
    """A listed CR without ``metadata.managedFields`` (server bookkeeping, large and of no use here)."""
    metadata = {key: value for key, value in _mapping(item.get("metadata")).items() if key != "managedFields"}
    return {**item, "metadata": metadata}


def host_name(item: dict[str, Any]) -> str:
    """``<namespace>/<name>`` of a CR."""
    metadata = _mapping(item.get("metadata"))
    return f"{metadata.get('namespace') or spec.DEFAULT_NAMESPACE}/{metadata.get('name')}"


def definition(item: dict[str, Any]) -> dict[str, Any]:
    """The CR as the servingstack role's ``servingstack_definition`` takes it: apiVersion, kind, metadata, spec."""
    read = as_read(item)
    return {key: read[key] for key in ("apiVersion", "kind", "metadata", "spec") if key in read}


def stack_host(item: dict[str, Any], management: dict[str, Any] | None = None) -> StackHost:
    """The host for one listed CR. Never raises: an invalid spec makes a host in ``servingstack_invalid``."""
    metadata = _mapping(item.get("metadata"))
    namespace = str(metadata.get("namespace") or spec.DEFAULT_NAMESPACE)
    document = definition(item)
    variables: dict[str, Any] = {
        "ansible_connection": "local",
        "ansible_python_interpreter": PYTHON_INTERPRETER,
        "servingstack_name": metadata.get("name"),
        "servingstack_namespace": namespace,
        "servingstack_definition": document,
        "servingstack_live_status": _mapping(item.get("status")),
        "servingstack_labels": _mapping(metadata.get("labels")),
        "servingstack_management": dict(management or {}),
    }
    groups = [ALL_GROUP, safe_group_name(NAMESPACE_GROUP_PREFIX + namespace)]
    validation = spec.validate(document)
    if validation.errors:
        variables["servingstack_spec_errors"] = [str(problem) for problem in validation.errors]
        groups.append(INVALID_GROUP)
    else:
        stack = validation.manifest["spec"]["stack"]
        variables["servingstack_stack"] = stack
        groups.append(safe_group_name(STACK_GROUP_PREFIX + stack.lower()))
    return StackHost(host_name(item), tuple(groups), variables)


def stack_hosts(items: list[dict[str, Any]], management: dict[str, Any] | None = None) -> list[StackHost]:
    """One host per CR, ordered by host name."""
    return sorted((stack_host(item, management) for item in items), key=lambda host: host.name)


def management_settings(options: dict[str, Any]) -> dict[str, Any]:
    """The non-secret connection options the inventory file sets (left-out ones are not set)."""
    settings = {key: options[key] for key in MANAGEMENT_OPTIONS if options.get(key) not in (None, "", [])}
    if not isinstance(settings.get("kubeconfig", ""), str):
        # An inline kubeconfig mapping holds the credentials themselves.
        del settings["kubeconfig"]
    return settings


def wanted_namespaces(namespaces: list[str] | None) -> list[str]:
    """The namespaces to list, each once and in order; an empty list means every namespace (``[""]``)."""
    unique = list(dict.fromkeys(namespace for namespace in namespaces or [] if namespace))
    return unique or [""]


def error_reason(error: BaseException) -> str:
    """A short reason for a failed request or connection: the HTTP status, else the cause, never a body."""
    status = getattr(error, "status", None)
    reason = getattr(error, "reason", None)
    if status:
        return f"{status} {reason or ''}".strip()
    if reason is not None and str(reason):
        return str(reason)
    return str(error) or type(error).__name__


def failed_server(auth: dict[str, Any], environ: Mapping[str, str], loaded: str = "") -> str:
    """Which management cluster a failed connection was for, as ``at <server>`` or ``of the kubeconfig <path>``.

    ``host`` (the option, else K8S_AUTH_HOST) wins, as in kubernetes.core; else ``loaded``, the server of the
    kubeconfig the client loaded before discovery failed (the client's default ``http://localhost`` when none
    was loaded), with the kubeconfig's path.
    """
    host = auth.get("host") or environ.get("K8S_AUTH_HOST")
    if host:
        return f"at {host.rstrip('/')}"
    path = auth.get("kubeconfig") or environ.get("K8S_AUTH_KUBECONFIG") or environ.get("KUBECONFIG")
    where = f"kubeconfig {path}" if isinstance(path, str) and path else "default kubeconfig"
    if loaded and loaded != "http://localhost":
        return f"at {loaded} ({where})"
    return f"of the {where}"


def list_servingstacks(client: Any, namespaces: list[str] | None = None, label_selector: str = "") -> list[dict]:
    """Every ServingStack in ``namespaces`` (all when empty) matching ``label_selector``, as read (see ``as_read``).

    ``client`` is a ``kubernetes`` DynamicClient. Raises ManagementClusterError when the cluster does not
    serve the ServingStack API (the CRD is not installed) or a request fails.
    """
    try:
        if not kubeclient.serves(client, API_VERSION, KIND):
            raise ManagementClusterError(
                f"it does not serve {KIND} ({API_VERSION}): apply crds/servingstacks.infrastructure.modelplane.ai.yaml "
                "to the management cluster first")
        items: list[dict] = []
        for namespace in wanted_namespaces(namespaces):
            items += kubeclient.read(client, {"apiVersion": API_VERSION, "kind": KIND, "namespace": namespace,
                                              "label_selector": label_selector or ""})
    except kubeclient.KubeReadError as error:
        raise ManagementClusterError(str(error)) from None
    return [as_read(item) for item in items]
