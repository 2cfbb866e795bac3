# Copyright 2026 The modelplane.serving authors
# Apache License 2.0 (see LICENSE)
"""Lookup plugin: one component's plan entry, for a component role used on its own."""

from __future__ import annotations

DOCUMENTATION = r"""
name: servingstack_component
author: Modelplane engineers (@modelplaneai)
short_description: The plan entry of one serving-stack component
version_added: 0.1.0
description:
  - Returns the plan entry of one component (its role, namespace, version, Helm releases and
    manifests) for a ServingStack spec, the same entry the C(servingstack) role hands to a
    component role from its plan.
  - The C(modelplane.serving.component) role, which every component role includes, uses it as the default of
    C(component_entry), so a component role works alone with only a spec, or with no spec at all (then the
    ServingStack defaults are used).
  - The facts come from the collection's components table; nothing is read from a cluster.
options:
  _terms:
    description: The component name, which is also its role's name (for example C(cert_manager)).
    required: true
    type: list
    elements: str
  spec:
    description:
      - The ServingStack C(spec) (or a whole manifest with a C(spec) key). Missing fields take
        their defaults; an empty dict means all defaults.
    type: dict
    default: {}
notes:
  - One term gives one entry; several terms give a list of entries in the order asked.
"""

EXAMPLES = r"""
- name: Show which cert-manager version a spec installs.
  ansible.builtin.debug:
    msg: "{{ lookup('modelplane.serving.servingstack_component', 'cert_manager',
             spec={'versions': {'certManager': 'v1.20.0'}}).releases[0].version }}"

- name: Use the defaults of the ServingStack reference.
  ansible.builtin.set_fact:
    lws_entry: "{{ lookup('modelplane.serving.servingstack_component', 'lws') }}"
"""

RETURN = r"""
_raw:
  description: The component's plan entry (one per term).
  type: list
  elements: dict
  contains:
    name:
      description: Component (and role) name.
      type: str
    role:
      description: Fully qualified role name.
      type: str
    title:
      description: The component's name as people write it (for task names and messages).
      type: str
    namespace:
      description: The component's namespace.
      type: str
    version:
      description: The version the spec pins.
      type: str
    needs:
      description: Components that must converge first.
      type: list
    releases:
      description:
        - Helm releases (release, chart, chart_ref, chart_repo_url, version, namespace, version_key, atomic,
          crd_groups), in install order.
        - A component role's Helm values are keyed by their C(chart).
      type: list
    manifests:
      description: Objects applied from templates, by description.
      type: list
"""

from typing import Any

from ansible.errors import AnsibleLookupError
from ansible.plugins.lookup import LookupBase

# Secrets matter for credentials, not for a component's entry: a stand-in when a spec has none.
STAND_IN_SECRETS = [{"type": "Kubeconfig", "name": "kubeconfig", "key": "kubeconfig"}]


class LookupModule(LookupBase):
    def run(self, terms: list[Any], variables: dict[str, Any] | None = None, **kwargs: Any) -> list[Any]:
        from ansible_collections.modelplane.serving.plugins.module_utils.servingstack import plan, spec
        from ansible_collections.modelplane.serving.plugins.module_utils.servingstack.components import BY_NAME

        self.set_options(var_options=variables, direct=kwargs)
        given = dict(self.get_option("spec") or {})
        if isinstance(given.get("spec"), dict) and "apiVersion" in given:  # a whole manifest
            given = dict(given["spec"])
        if given:
            given["secrets"] = given.get("secrets") or STAND_IN_SECRETS
        try:
            defaulted = spec.defaulted_spec(given or None)
        except Exception as error:  # spec errors read "<path>: <problem>"
            raise AnsibleLookupError(f"servingstack_component: {error}") from None
        entries = []
        for term in terms:
            name = str(term)
            if name not in BY_NAME:
                known = ", ".join(sorted(BY_NAME))
                raise AnsibleLookupError(f"servingstack_component: {name!r} is not a component (known: {known})")
            entries.append(plan.component_entry(BY_NAME[name], defaulted))
        return entries
