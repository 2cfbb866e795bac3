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
    The cluster is reached with the C(kubernetes.core) connection options below; every option this file leaves
    out is read from its C(K8S_AUTH_*) environment variable, as the C(kubernetes.core) modules read it (with
    C(host) and C(api_key) both set, no kubeconfig is read at all; with nothing set, the pod's service account
    inside a cluster, else C(KUBECONFIG) or C(~/.kube/config)).
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
  - PyYAML
  - cryptography (validates client CA certificates in specs)
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
from typing import Any

from ansible.errors import AnsibleParserError
from ansible.plugins.inventory import BaseInventoryPlugin, Cacheable, Constructable
from ansible_collections.kubernetes.core.plugins.module_utils.args_common import AUTH_ARG_SPEC
from ansible_collections.modelplane.serving.plugins.module_utils.servingstack import inventory as stacks

try:
    from ansible.template import trust_as_template
except ImportError:  # ansible-core before 2.19 templates every inventory string anyway

    def trust_as_template(value: Any) -> Any:
        return value


FILE_SUFFIXES = ("servingstacks.yml", "servingstacks.yaml")


class InventoryModule(BaseInventoryPlugin, Constructable, Cacheable):
    NAME = "modelplane.serving.servingstacks"

    def verify_file(self, path: str) -> bool:
        return super().verify_file(path) and path.endswith(FILE_SUFFIXES)

    def parse(self, inventory: Any, loader: Any, path: str, cache: bool = True) -> None:
        super().parse(inventory, loader, path, cache)
        self._read_config_data(path)
        cache_key = self.get_cache_key(path)
        use_cache = self.get_option("cache") and cache
        update_cache = self.get_option("cache") and not cache
        items = None
        if use_cache:
            try:
                items = self._cache[cache_key]
            except KeyError:
                update_cache = True
        if items is None:
            items = self.read_servingstacks()
        if update_cache:
            self._cache[cache_key] = items
        self.populate(items)

    def auth_options(self) -> dict[str, Any]:
        """The kubernetes.core connection options this file sets (kubernetes.core reads K8S_AUTH_* for the rest)."""
        return {name: self.get_option(name) for name in AUTH_ARG_SPEC if self.get_option(name) is not None}

    def read_servingstacks(self) -> list[dict[str, Any]]:
        """The ServingStacks of the management cluster, as listed."""
        try:
            import kubernetes  # noqa: F401  # pylint: disable=unused-import
            from ansible_collections.kubernetes.core.plugins.module_utils.k8s.client import get_api_client
        except ImportError as error:
            raise AnsibleParserError(f"{self.NAME} needs the kubernetes Python client: {error}") from None
        auth = self.auth_options()
        try:
            client = get_api_client(**auth)
        except Exception as error:  # config errors and failed discovery alike: say where, never a traceback
            raise AnsibleParserError(f"{self.NAME}: cannot connect to the management cluster "
                                     f"{stacks.failed_server(auth, os.environ, loaded_server())}: "
                                     f"{stacks.error_reason(error)}") from None
        namespaces, selector = self.get_option("namespaces"), self.get_option("label_selector")
        try:
            return stacks.list_servingstacks(client.client, namespaces, selector)
        except stacks.ManagementClusterError as error:
            raise AnsibleParserError(f"{self.NAME}: cannot list ServingStacks on the management cluster at "
                                     f"{client.configuration.host}: {error}") from None

    def populate(self, items: list[dict[str, Any]]) -> None:
        """One host per CR with its variables and groups, then the user's compose, groups and keyed_groups."""
        strict = self.get_option("strict")
        management = stacks.management_settings(self.auth_options())
        for host in stacks.stack_hosts(items, management):
            self.inventory.add_host(host.name)
            for group in host.groups:
                self.inventory.add_group(group)
                self.inventory.add_child(group, host.name)
            for key, value in host.variables.items():
                trusted = trust_as_template(value) if key in stacks.TEMPLATED_VARIABLES else value
                self.inventory.set_variable(host.name, key, trusted)
            hostvars = self.inventory.get_host(host.name).get_vars()
            self._set_composite_vars(self.get_option("compose"), hostvars, host.name, strict=strict)
            self._add_host_to_composed_groups(self.get_option("groups"), hostvars, host.name, strict=strict)
            self._add_host_to_keyed_groups(self.get_option("keyed_groups"), hostvars, host.name, strict=strict)


def loaded_server() -> str:
    """The server of the kubeconfig the kubernetes client loaded last (its default configuration), or ""."""
    try:
        from kubernetes.client import Configuration

        return Configuration.get_default_copy().host or ""
    except Exception:  # no kubernetes client: nothing was loaded
        return ""
