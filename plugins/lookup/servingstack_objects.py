# Copyright 2026 The modelplane.serving authors
# Apache License 2.0 (see LICENSE)
"""Lookup plugin: read objects from the target cluster on the controller, one result per term."""

from __future__ import annotations

DOCUMENTATION = r"""
name: servingstack_objects
author: Modelplane engineers (@modelplaneai)
short_description: Read Kubernetes objects, or lists of them, in one step on the controller
version_added: 0.1.0
description:
  - Each term names one object (C(apiVersion), C(kind), C(metadata.name) and, for namespaced
    kinds, C(metadata.namespace), as in a manifest) or a list (C(apiVersion), C(kind) and optional
    C(namespace), C(label_selector), C(field_selector), and C(metadata_only) to read only each object's
    metadata, as a CRD's schema can be megabytes).
  - Returns one result per term, in order; use it with C(query) so the result is always a list.
    A named object gives the object as the API returns it, or C(none) when it does not exist; a
    list gives the list of objects.
  - A kind the cluster does not serve (its CRD is not installed yet) reads as absent, like an
    object not created yet.
  - With O(refs), returns one list of the references of the objects that exist instead, what a deletion with
    C(kubernetes.core.k8s) needs and none of their data.
  - It only reads.
  - Like every lookup it runs on the controller, so the cluster is given by O(kubeconfig), not by
    a task's C(environment).
options:
  _terms:
    description: Object references or list queries, as described above. Lists of them are flattened.
    required: true
    type: list
    elements: dict
  refs:
    description:
      - Return one flat list holding, for each object found (named or listed, in order), its reference
        (C(apiVersion), C(kind), C(metadata.name) and, if namespaced, C(metadata.namespace)) and nothing else.
        Objects that do not exist are left out.
    type: bool
    default: false
extends_documentation_fragment:
  - modelplane.serving.target_cluster
"""

EXAMPLES = r"""
- name: Delete the client-CA ConfigMaps found, whatever their names.
  kubernetes.core.k8s:
    state: absent
    definition: >-
      {{ query('modelplane.serving.servingstack_objects',
               {'apiVersion': 'v1', 'kind': 'ConfigMap', 'namespace': 'modelplane-system',
                'label_selector': 'modelplane.ai/client-ca'},
               kubeconfig=target_kubeconfig, refs=true) }}

- name: Read the gateway and every client-CA ConfigMap in one step.
  ansible.builtin.set_fact:
    found: >-
      {{ query('modelplane.serving.servingstack_objects',
               {'apiVersion': 'gateway.networking.k8s.io/v1', 'kind': 'Gateway',
                'metadata': {'name': 'inference-gateway', 'namespace': 'modelplane-system'}},
               {'apiVersion': 'v1', 'kind': 'ConfigMap', 'namespace': 'modelplane-system',
                'label_selector': 'modelplane.ai/client-ca'},
               kubeconfig=target_kubeconfig) }}
"""

RETURN = r"""
_raw:
  description:
    - One result per term; an object (or C(none)) for a named object, a list of objects for a list query.
    - With O(refs), the references of the objects found, in one list.
  type: list
  elements: raw
"""

from typing import Any

from ansible.errors import AnsibleLookupError
from ansible.plugins.lookup import LookupBase
from ansible_collections.modelplane.serving.plugins.module_utils.servingstack import kubeclient


class LookupModule(LookupBase):
    def run(self, terms: list[Any], variables: dict[str, Any] | None = None, **kwargs: Any) -> list[Any]:
        self.set_options(var_options=variables, direct=kwargs)
        refs = [ref for term in terms for ref in (term if isinstance(term, list) else [term])]
        for ref in refs:
            if not isinstance(ref, dict) or not ref.get("apiVersion") or not ref.get("kind"):
                raise AnsibleLookupError(
                    f"servingstack_objects: each term needs apiVersion and kind, got {type(ref).__name__}")
        if not refs:
            return []
        try:
            client = kubeclient.connect(self.get_option("kubeconfig"), self.get_option("context"))
            results = [kubeclient.read(client, ref) for ref in refs]
        except kubeclient.KubeReadError as error:
            raise AnsibleLookupError(f"servingstack_objects: {error}") from None
        if not self.get_option("refs"):
            return results
        found = [obj for result in results for obj in (result if isinstance(result, list) else [result]) if obj]
        return [{"apiVersion": obj["apiVersion"], "kind": obj["kind"],
                 "metadata": {key: obj["metadata"][key] for key in ("name", "namespace") if obj["metadata"].get(key)}}
                for obj in found]
