# Copyright 2026 The modelplane.serving authors
# Apache License 2.0 (see LICENSE)
"""Inventory plugin: the ServingStack custom resources of a management cluster, one host each."""

from __future__ import annotations

DOCUMENTATION = r"""
name: servingstacks
author: Modelplane engineers (@modelplaneai)
short_description: ServingStacks on a management cluster as inventory hosts, one per cluster to converge
version_added: 0.1.0
description:
  - >-
    Lists the C(ServingStack) custom resources (C(infrastructure.modelplane.ai/v1alpha1)) of a management cluster,
    in O(namespaces) and matching O(label_selector), and makes each one an inventory host named
    C(<namespace>/<name>) with C(ansible_connection=local): the converge of a ServingStack runs on the controller.
  - >-
    Each host carries C(servingstack_name), C(servingstack_namespace), C(servingstack_definition) (the CR as read:
    C(apiVersion), C(kind), C(metadata) without C(managedFields), C(spec); what the C(servingstack) role's
    C(servingstack_definition) takes), C(servingstack_live_status) (the CR's C(status), or C({})),
    C(servingstack_labels) (its C(metadata.labels)) and C(servingstack_management) (see below).
  - >-
    Every spec is validated by the same code as M(modelplane.serving.servingstack_spec), after its defaults. A
    valid one sets C(servingstack_stack) (C(Standard) or C(Dynamo)). An invalid one never stops the inventory: its
    host is also in the group C(servingstack_invalid) and carries C(servingstack_spec_errors), one
    C(<path>: <problem>) line per problem, the module's own messages.
  - >-
    Groups. C(servingstacks) holds every host (invalid ones too, so a converge reports their errors);
    C(servingstack_invalid) the invalid ones; C(servingstack_namespace_<namespace>) and
    C(servingstack_stack_<standard|dynamo>) (valid ones) group by namespace and stack. Group by labels, or
    anything else, with O(keyed_groups), O(groups) and O(compose). As in every inventory plugin, characters Ansible
    refuses in group names (such as C(-) and C(.)) become C(_), so namespace C(team-a) is group
    C(servingstack_namespace_team_a) and label C(team=ml-platform) with prefix C(label) is C(label_team_ml_platform).
  - >-
    Options this file leaves out are read from their C(K8S_AUTH_*) variables, as the C(kubernetes.core) modules
    read them: with C(host) and C(api_key) both set no kubeconfig is read; with nothing set, the pod's service
    account inside a cluster, else C(KUBECONFIG) or C(~/.kube/config).
  - >-
    C(servingstack_management) holds the connection options this file sets that are not secrets (C(kubeconfig)
    when it is a path, C(context), C(host), C(validate_certs), C(ca_cert), C(client_cert) and C(client_key) as
    paths, C(proxy), C(no_proxy), C(impersonate_user), C(impersonate_groups)), so the converge reads each CR's
    kubeconfig Secret and writes its status on the same cluster. Credentials (C(api_key), C(username),
    C(password), C(proxy_headers), an inline C(kubeconfig) mapping) are never copied into host variables, which
    C(ansible-inventory --list) shows; give them through C(K8S_AUTH_API_KEY) and the other C(K8S_AUTH_*)
    variables (as an AWX Kubernetes credential does), which the inventory and the converge both read.
  - >-
    A cluster that cannot be reached, refuses the credentials or does not serve the ServingStack API fails the
    source with a message naming the server, never a traceback.
options:
  plugin:
    description: The name of this plugin, so Ansible's C(auto) inventory plugin hands the file to it.
    required: true
    type: str
    choices: [modelplane.serving.servingstacks]
  namespaces:
    description:
      - Namespaces to list ServingStacks in, one list request each. Empty lists every namespace.
    type: list
    elements: str
    default: []
  label_selector:
    description:
      - A Kubernetes label selector the ServingStacks must match (for example C(fleet=prod,tier!=canary)).
      - Empty lists them all.
    type: str
    default: ""
extends_documentation_fragment:
  - modelplane.serving.kubernetes_auth
  - ansible.builtin.constructed
  - ansible.builtin.inventory_cache
requirements:
  - python >= 3.11
  - kubernetes >= 24.2.0 (Python client)
  - jsonschema, cel-python, PyYAML, cryptography (to validate specs as M(modelplane.serving.servingstack_spec) does)
notes:
  - The inventory file's name must end in C(servingstacks.yml) or C(servingstacks.yaml).
  - With O(cache) the CRs as listed are cached (validation runs again on every load); C(--flush-cache) re-reads
    the cluster.
  - Each CR's C(status) is the one it had when listed; a cached inventory shows the cached one.
seealso:
  - module: modelplane.serving.servingstack_spec
  - name: ServingStack CRD
    description: Apply it to the management cluster before listing ServingStacks.
    link: https://github.com/modelplaneai/modelplane-serving/blob/main/crds/servingstacks.infrastructure.modelplane.ai.yaml
"""

EXAMPLES = r"""
# fleet.servingstacks.yml: every ServingStack the controller's kubeconfig (or K8S_AUTH_*) reaches.
plugin: modelplane.serving.servingstacks
---
# prod.servingstacks.yml: two namespaces, one label, a given kubeconfig and context; groups by labels.
plugin: modelplane.serving.servingstacks
namespaces: [platform, team-a]
label_selector: fleet=prod
kubeconfig: ~/.kube/management.yaml
context: management
keyed_groups:
  # label_region_us_west, label_team_ml_platform, ...
  - key: servingstack_labels
    prefix: label
  # ready_True, ready_False, ready_Unknown: the Ready condition of the last converge.
  - key: >-
      servingstack_live_status.conditions | default([]) | selectattr('type', 'equalto', 'Ready')
      | map(attribute='status') | first | default('Unknown')
    prefix: ready
groups:
  dynamo_in_prod: servingstack_stack | default('') == 'Dynamo'
compose:
  servingstack_region: servingstack_labels.region | default('unknown')
---
# awx.servingstacks.yml: an AWX inventory source with a Kubernetes credential (K8S_AUTH_HOST, K8S_AUTH_API_KEY,
# K8S_AUTH_VERIFY_SSL, K8S_AUTH_SSL_CA_CERT come from it), cached for an hour.
plugin: modelplane.serving.servingstacks
cache: true
cache_plugin: ansible.builtin.jsonfile
cache_connection: /tmp/servingstacks-inventory
cache_timeout: 3600
"""

import os
from collections.abc import Mapping
from typing import Any

from ansible.errors import AnsibleParserError
from ansible.plugins.inventory import BaseInventoryPlugin, Cacheable, Constructable, to_safe_group_name
from ansible_collections.kubernetes.core.plugins.module_utils.args_common import AUTH_ARG_SPEC
from ansible_collections.modelplane.serving.plugins.module_utils.servingstack import kubeclient, spec
from ansible_collections.modelplane.serving.plugins.module_utils.servingstack.schema import API_VERSION, KIND

try:
    from ansible.template import trust_as_template
except ImportError:  # ansible-core before 2.19 templates every inventory string anyway

    def trust_as_template(value: Any) -> Any:
        return value


# servingstack_management (DOCUMENTATION says why these and no others).
MANAGEMENT_OPTIONS = ("kubeconfig", "context", "host", "validate_certs", "ca_cert", "client_cert", "client_key",
                      "proxy", "no_proxy", "impersonate_user", "impersonate_groups")


class InventoryModule(BaseInventoryPlugin, Constructable, Cacheable):
    NAME = "modelplane.serving.servingstacks"

    def verify_file(self, path: str) -> bool:
        return super().verify_file(path) and path.endswith(("servingstacks.yml", "servingstacks.yaml"))

    def parse(self, inventory: Any, loader: Any, path: str, cache: bool = True) -> None:
        super().parse(inventory, loader, path, cache)
        self._read_config_data(path)
        cache_key = self.get_cache_key(path)
        items = self._cache.get(cache_key) if self.get_option("cache") and cache else None
        if items is None:
            items = self.read_servingstacks()
            if self.get_option("cache"):
                self._cache[cache_key] = items
        strict = self.get_option("strict")
        management = management_settings(self.auth_options())
        for name, variables, groups in sorted((stack_host(item, management) for item in items), key=lambda h: h[0]):
            self._populate_host_vars([name], variables)
            for group in groups:
                self.inventory.add_child(self.inventory.add_group(group), name)
            hostvars = self.inventory.get_host(name).get_vars()
            self._set_composite_vars(self.get_option("compose"), hostvars, name, strict=strict)
            self._add_host_to_composed_groups(self.get_option("groups"), hostvars, name, strict=strict)
            self._add_host_to_keyed_groups(self.get_option("keyed_groups"), hostvars, name, strict=strict)

    def auth_options(self) -> dict[str, Any]:
        """The kubernetes.core connection options this file sets (kubernetes.core reads K8S_AUTH_* for the rest)."""
        return {name: self.get_option(name) for name in AUTH_ARG_SPEC if self.get_option(name) is not None}

    def read_servingstacks(self) -> list[dict[str, Any]]:
        """The ServingStacks of the management cluster, as listed."""
        try:
            from ansible_collections.kubernetes.core.plugins.module_utils.k8s.client import get_api_client
            from kubernetes.client import Configuration
            from kubernetes.dynamic.exceptions import ResourceNotFoundError
        except ImportError as error:
            raise AnsibleParserError(f"{self.NAME} needs the kubernetes Python client: {error}") from None
        auth, client = self.auth_options(), None
        namespaces = list(dict.fromkeys(name for name in self.get_option("namespaces") if name)) or [None]
        try:
            client = get_api_client(**auth)
            resource = client.resources.get(api_version=API_VERSION, kind=KIND)
            listed = [item for namespace in namespaces for item in resource.get(
                namespace=namespace, label_selector=self.get_option("label_selector")).to_dict()["items"]]
        except ResourceNotFoundError:
            reason = (f"it does not serve {KIND} ({API_VERSION}): apply "
                      "crds/servingstacks.infrastructure.modelplane.ai.yaml to the management cluster first")
        except Exception as error:  # config errors, failed discovery, refused requests: say where, never a traceback
            reason = kubeclient.reason(error)
        else:
            # The API leaves apiVersion and kind out of list items.
            return [{"apiVersion": API_VERSION, "kind": KIND, **item} for item in listed]
        # Without a client, the server of the kubeconfig the kubernetes client loaded, if it got that far.
        where = f"at {client.configuration.host}" if client else failed_server(
            auth, os.environ, Configuration.get_default_copy().host or "")
        raise AnsibleParserError(f"{self.NAME}: cannot list ServingStacks on the management cluster {where}: {reason}")


def _mapping(value: object) -> dict[str, Any]:
    return value if isinstance(value, dict) else {}


def stack_host(item: dict[str, Any], management: dict[str, Any]) -> tuple[str, dict[str, Any], list[str]]:
    """The host name, variables and groups of one listed CR. Never raises: an invalid spec makes a host in
    ``servingstack_invalid``."""
    metadata = _mapping(item.get("metadata"))
    namespace = str(metadata.get("namespace") or spec.DEFAULT_NAMESPACE)
    # The CR as the servingstack role's servingstack_definition takes it; managedFields is server bookkeeping.
    read = {**item, "metadata": {key: value for key, value in metadata.items() if key != "managedFields"}}
    definition = {key: read[key] for key in ("apiVersion", "kind", "metadata", "spec") if key in read}
    variables: dict[str, Any] = {
        "ansible_connection": "local",
        # The controller's own Python; Ansible 2.19 trusts no plugin-set string as a template by itself.
        "ansible_python_interpreter": trust_as_template("{{ ansible_playbook_python }}"),
        "servingstack_name": metadata.get("name"),
        "servingstack_namespace": namespace,
        "servingstack_definition": definition,
        "servingstack_live_status": _mapping(item.get("status")),
        "servingstack_labels": _mapping(metadata.get("labels")),
        "servingstack_management": dict(management),
    }
    groups = ["servingstacks", f"servingstack_namespace_{namespace}"]
    validation = spec.validate(definition)
    if validation.errors:
        variables["servingstack_spec_errors"] = [str(problem) for problem in validation.errors]
        groups.append("servingstack_invalid")
    else:
        stack = variables["servingstack_stack"] = validation.manifest["spec"]["stack"]
        groups.append(f"servingstack_stack_{stack.lower()}")
    return f"{namespace}/{metadata.get('name')}", variables, [to_safe_group_name(group) for group in groups]


def management_settings(options: dict[str, Any]) -> dict[str, Any]:
    """The non-secret connection options the inventory file sets (left-out ones are not set)."""
    settings = {key: options[key] for key in MANAGEMENT_OPTIONS if options.get(key) not in (None, "", [])}
    if not isinstance(settings.get("kubeconfig", ""), str):
        del settings["kubeconfig"]  # an inline kubeconfig mapping holds the credentials themselves
    return settings


def failed_server(auth: dict[str, Any], environ: Mapping[str, str], loaded: str = "") -> str:
    """Which management cluster a failed connection was for: ``at <host>`` (the option, else K8S_AUTH_HOST, wins as in
    kubernetes.core), else ``at <loaded> (kubeconfig <path>)``, ``loaded`` the server of the kubeconfig the client
    loaded (``http://localhost`` when none was), else ``of the kubeconfig <path>``."""
    host = auth.get("host") or environ.get("K8S_AUTH_HOST")
    if host:
        return f"at {host.rstrip('/')}"
    path = auth.get("kubeconfig") or environ.get("K8S_AUTH_KUBECONFIG") or environ.get("KUBECONFIG")
    where = f"kubeconfig {path}" if isinstance(path, str) and path else "default kubeconfig"
    return f"at {loaded} ({where})" if loaded and loaded != "http://localhost" else f"of the {where}"
