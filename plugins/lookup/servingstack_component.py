# Copyright 2026 The modelplane.serving authors
# Apache License 2.0 (see LICENSE)
"""Lookup plugin: one component's plan entry, with its charts' sources, values and logins."""

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
    ServingStack defaults are used); and, given that entry, for each release's chart source (O(chart_mirror)) and
    Helm values (O(role_values) with O(values) merged over them), and the chart mirror's logins.
  - The facts come from the collection's components table; nothing is read from a cluster.
options:
  _terms:
    description:
      - The component name, which is also its role's name (for example C(cert_manager)), or its plan entry (as
        M(modelplane.serving.servingstack_spec) returns it in C(plan)). Lists of them are flattened.
    required: true
    type: list
    elements: raw
  spec:
    description:
      - The ServingStack C(spec) (or a whole manifest with a C(spec) key) a component name is resolved for. Missing
        fields take their defaults; an empty dict means all defaults.
    type: dict
    default: {}
  chart_mirror:
    description:
      - The chart mirror setting (C(servingstack_chart_mirror)'s format); each release's chart is taken from it
        (see P(modelplane.serving.servingstack_chart_mirror_problems#filter)). Empty for the upstream repositories.
      - Fails with every problem of the setting, naming its key and never quoting a password.
    type: raw
    default: ""
  values:
    description:
      - The user's Helm values by chart name (C(component_values)), merged recursively over O(role_values) (mappings
        key by key, anything else, lists too, replaced). A chart name no component installs is refused.
    type: raw
    default: {}
  role_values:
    description:
      - The component role's own Helm values by chart name (its rendered C(templates/values.yaml.j2)); a chart the
        component does not install is refused.
    type: raw
    default: {}
notes:
  - One term gives one entry; several terms give a list of entries in the order asked.
  - The logins hold the mirror's passwords; use the result under C(no_log) when a mirror has credentials.
"""

EXAMPLES = r"""
- name: Show which cert-manager version a spec installs.
  ansible.builtin.debug:
    msg: "{{ lookup('modelplane.serving.servingstack_component', 'cert_manager',
             spec={'versions': {'certManager': 'v1.20.0'}}).releases[0].version }}"

- name: Use the defaults of the ServingStack reference.
  ansible.builtin.set_fact:
    lws_entry: "{{ lookup('modelplane.serving.servingstack_component', 'lws') }}"

- name: Show where the NFD chart comes from with a chart mirror, and its values.
  ansible.builtin.debug:
    msg: >-
      {{ lookup('modelplane.serving.servingstack_component', 'nfd', chart_mirror='oci://harbor.example.internal/mp',
                values={'node-feature-discovery': {'worker': {'nodeSelector': {'pool': 'gpu'}}}}).releases }}
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
        - C(chart_ref) and C(chart_repo_url) are the chart mirror's where O(chart_mirror) sets one, with
          C(chart_source) (C(login), C(ca_file), C(insecure_skip_tls_verify), C(plain_http)), how helm reaches it.
        - C(release_values), the release's Helm values (O(role_values) for its chart with O(values) merged over them).
      type: list
    manifests:
      description: Objects applied from templates, by description.
      type: list
    ingress:
      description: Whether requests enter the stack through the component (the gateway), which a teardown takes first.
      type: bool
    logins:
      description:
        - One login per chart mirror source with credentials that the releases use, for C(helm repo add) (a classic
          repository, C(oci) false) or a registry login (C(oci) true), with C(name), C(oci), C(url), C(host),
          C(username), C(password), C(ca_file) and C(insecure_skip_tls_verify).
      type: list
      elements: dict
"""

from typing import Any

from ansible.errors import AnsibleLookupError
from ansible.plugins.lookup import LookupBase

# Secrets matter for credentials, not for a component's entry: a stand-in when a spec has none.
STAND_IN_SECRETS = [{"type": "Kubeconfig", "name": "kubeconfig", "key": "kubeconfig"}]


class LookupModule(LookupBase):
    def run(self, terms: list[Any], variables: dict[str, Any] | None = None, **kwargs: Any) -> list[Any]:
        from ansible_collections.modelplane.serving.plugins.module_utils.servingstack import (
            mirror,
            ownership,
            plan,
            spec,
        )
        from ansible_collections.modelplane.serving.plugins.module_utils.servingstack.components import (
            BY_NAME,
            COMPONENTS,
        )

        self.set_options(var_options=variables, direct=kwargs)
        terms = [term for given in terms for term in (given if isinstance(given, list) else [given])]
        for term in terms:
            if isinstance(term, dict) and not (isinstance(term.get("name"), str)
                                               and isinstance(term.get("releases"), list)):
                raise AnsibleLookupError("servingstack_component: a plan entry needs its name and releases")
            if not isinstance(term, dict) and str(term) not in BY_NAME:
                known = ", ".join(sorted(BY_NAME))
                raise AnsibleLookupError(f"servingstack_component: {str(term)!r} is not a component (known: {known})")
        if all(isinstance(term, dict) for term in terms):
            entries = list(terms)
        else:
            given = dict(self.get_option("spec") or {})
            if isinstance(given.get("spec"), dict) and "apiVersion" in given:  # a whole manifest
                given = dict(given["spec"])
            if given:
                given["secrets"] = given.get("secrets") or STAND_IN_SECRETS
            try:
                defaulted = spec.defaulted_spec(given or None)
            except Exception as error:  # spec errors read "<path>: <problem>"
                raise AnsibleLookupError(f"servingstack_component: {error}") from None
            entries = [term if isinstance(term, dict) else plan.component_entry(BY_NAME[str(term)], defaulted)
                       for term in terms]
        try:
            chosen = mirror.parse(self.get_option("chart_mirror"),
                                  [chart.name for component in COMPONENTS for chart in component.charts])
            for index, entry in enumerate(entries):
                releases = mirror.apply_releases(entry["releases"], chosen)
                values = ownership.chart_values(self.get_option("role_values"), self.get_option("values"), releases,
                                                f"roles/{entry['name']}/templates/values.yaml.j2")
                used = {release.get("chart_source", {}).get("login") for release in releases}
                entries[index] = {**entry, "releases": [{**release, "release_values": values[release["chart"]]}
                                                        for release in releases],
                                  "logins": [login for login in mirror.logins(chosen) if login["name"] in used]}
        except mirror.MirrorError as error:
            raise AnsibleLookupError("; ".join(error.problems)) from None
        except ownership.ValuesError as error:
            raise AnsibleLookupError(str(error)) from None
        return entries
