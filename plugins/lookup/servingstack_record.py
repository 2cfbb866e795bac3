# Copyright 2026 The modelplane.serving authors
# Apache License 2.0 (see LICENSE)
"""Lookup plugin: compare the target cluster with the record of its last converge, or make this converge's record."""

from __future__ import annotations

DOCUMENTATION = r"""
name: servingstack_record
author: Modelplane engineers (@modelplaneai)
short_description: Compare a cluster with the record of its last converge, or make the record of this one
version_added: 0.1.0
description:
  - The converge record is a Secret in the target cluster that the servingstack role writes after a converge in
    which every component converged. It holds a digest of what decided that converge (this collection's roles and
    plugins, the defaulted spec, the install plan, and the settings the component roles document in their argument
    specs, as this host's variables give them), the revision and release Secret uid of each Helm release that
    concerns the stack (the plan's, any other release of its charts, any other release of ours), and of each object
    the converge applied its C(uid), its C(generation) (for a kind without one, a hash of all but its status and
    server-set metadata) and, where the converge waited for it, how it is ready.
  - With the term C(compare), returns C(found) (the cluster has a readable record), C(unchanged) (the digest is the
    same, the same releases are there at their recorded revisions and not installed again, the plan's are deployed,
    and every object still has its recorded uid and generation or content, and is ready) and C(reason) (why not, the
    first difference found). The servingstack role skips the components of an unchanged cluster. A record the
    kubeconfig may not read counts as none.
  - With the term C(record), returns the Secret holding this converge's record, for
    C(modelplane.serving.servingstack_k8s) to apply. The objects are those C(modelplane.serving.servingstack_k8s)
    noted in O(journal) as applied, read back from the cluster.
  - It only reads the cluster.
options:
  _terms:
    description: C(compare) or C(record).
    required: true
    type: list
    elements: str
  spec:
    description: The defaulted ServingStack spec (C(servingstack_spec_module)'s C(servingstack.spec)).
    type: dict
    required: true
  plan:
    description: The install plan (C(servingstack_spec_module)'s C(plan)).
    type: list
    elements: dict
    required: true
  releases:
    description:
      - The cluster's Helm release records (name, namespace, revision, status, chart, uid), for C(compare), as the
        C(helm_release_records) filter makes them. Read from the cluster when left out.
    type: list
    elements: dict
  journal:
    description: The directory on the controller where C(modelplane.serving.servingstack_k8s) noted the objects it
      applied (its O(modelplane.serving.servingstack_k8s#module:journal)), for C(record).
    type: path
  namespace:
    description: The namespace of the record's Secret.
    type: str
    default: kube-system
  name:
    description: The name of the record's Secret.
    type: str
    default: modelplane-serving-converged
extends_documentation_fragment:
  - modelplane.serving.target_cluster
"""

EXAMPLES = r"""
- name: Compare the cluster with the record of its last converge.
  ansible.builtin.set_fact:
    compared: >-
      {{ lookup('modelplane.serving.servingstack_record', 'compare', spec=servingstack_spec, plan=servingstack_plan,
                kubeconfig=target_kubeconfig) }}

- name: Write the record of this converge.
  modelplane.serving.servingstack_k8s:
    definition: >-
      {{ lookup('modelplane.serving.servingstack_record', 'record', spec=servingstack_spec, plan=servingstack_plan,
                journal=journal_dir, kubeconfig=target_kubeconfig) }}
    apply: true
"""

RETURN = r"""
_raw:
  description:
    - C(compare) - a mapping of C(found) (bool), C(unchanged) (bool) and C(reason) (str, empty when unchanged).
    - C(record) - the record's Secret, a manifest.
  type: list
  elements: dict
"""

from pathlib import Path
from typing import Any

from ansible.errors import AnsibleLookupError
from ansible.plugins.lookup import LookupBase
from ansible_collections.modelplane.serving.plugins.module_utils.servingstack import (
    k8s_objects,
    kubeclient,
    record,
    releases,
)

COLLECTION = Path(__file__).resolve().parents[2]
HELM_SECRETS = {"apiVersion": "v1", "kind": "Secret", "label_selector": "owner=helm",
                "field_selector": "type=helm.sh/release.v1"}


def _argument_specs(roles: list[str]) -> dict[str, Any]:
    import yaml

    # libyaml's loader where PyYAML has it: every compare reads about ten files, ten times faster so.
    loader = getattr(yaml, "CSafeLoader", yaml.SafeLoader)
    found = {}
    for role in roles:
        path = COLLECTION / "roles" / role / "meta" / "argument_specs.yml"
        if path.is_file():
            found[role] = yaml.load(path.read_text(encoding="utf-8"), Loader=loader)
    return found


class LookupModule(LookupBase):
    def run(self, terms: list[Any], variables: dict[str, Any] | None = None, **kwargs: Any) -> list[Any]:
        self.set_options(var_options=variables, direct=kwargs)
        if len(terms) != 1 or terms[0] not in ("compare", "record"):
            raise AnsibleLookupError(f"servingstack_record: the term is compare or record, got {terms!r}")
        plan = self.get_option("plan")
        digest_now = record.digest(record.content_hash(COLLECTION), self.get_option("spec"), plan,
                                   self._settings(plan, variables or {}))
        namespace, name = self.get_option("namespace"), self.get_option("name")
        try:
            client = kubeclient.connect(self.get_option("kubeconfig"), self.get_option("context"))
            if terms[0] == "record":
                applied = record.noted(self.get_option("journal")) if self.get_option("journal") else []
                objects = record.fingerprints(applied, lambda ref: kubeclient.read(client, ref))
                found = releases.records(kubeclient.read(client, HELM_SECRETS))
                return [record.secret(record.build(digest_now, plan, found, objects), namespace, name)]
            try:
                stored = record.stored(kubeclient.read(client, record.ref(namespace, name)))
            except kubeclient.KubeReadError as error:  # not allowed to read it (RBAC): compare everything
                return [{"found": False, "unchanged": False, "reason": f"the converge record cannot be read ({error})"}]
            found = self.get_option("releases")
            if found is None and stored is not None:
                found = releases.records(kubeclient.read(client, HELM_SECRETS))
            reason = record.why_changed(stored, digest_now, plan, found or [],
                                        lambda ref: kubeclient.read(client, ref), k8s_objects.ready)
        except kubeclient.KubeReadError as error:
            raise AnsibleLookupError(f"servingstack_record: {error}") from None
        return [{"found": stored is not None, "unchanged": not reason, "reason": reason}]

    def _settings(self, plan: list[dict[str, Any]], variables: dict[str, Any]) -> dict[str, Any]:
        """The component roles' settings this host's variables set (a role's defaults are in its files, which the
        content hash covers)."""
        roles = sorted({str(entry.get("role", "")).rpartition(".")[2] for entry in plan} | {"component"})
        settings = {}
        for name in record.setting_names(_argument_specs(roles)):
            if name in variables:
                try:
                    settings[name] = self._templar.template(variables[name])
                except Exception:  # an undefined variable in it: what is given still tells a change apart
                    settings[name] = str(variables[name])
        return settings
