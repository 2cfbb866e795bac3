# Copyright 2026 The modelplane.serving authors
# Apache License 2.0 (see LICENSE)
"""Documentation of the servingstack_k8s action plugin (it has no module code: it runs on the controller)."""

from __future__ import annotations

DOCUMENTATION = r"""
module: servingstack_k8s
short_description: Apply or delete Kubernetes objects, calling kubernetes.core.k8s only for what differs
version_added: 0.1.0
author: Modelplane engineers (@modelplaneai)
description:
  - Reads every object of O(definition) from the cluster on the controller (one in-process read each, no module
    run), compares, and runs C(kubernetes.core.k8s) only with the objects that need a write. A run that changes
    nothing runs no module and writes nothing.
  - O(state=present) sends the objects that are missing or differ from the cluster's copies (every field the
    object sets; with O(apply), what was last applied too). With O(wait), an object that matches but is not ready
    yet (a Deployment whose replicas are not available, a condition not met for the current generation) is sent
    as well, so the module waits for it instead of the run reporting it converged.
  - O(state=absent) sends only the objects that exist, in the order given. A kind the cluster does not serve
    (its CRD was never installed, or was removed) holds no object, so it is never an error.
  - In check mode, an object that cannot be dry-run because its kind is not served yet or its namespace does not
    exist yet (a Helm release or an earlier object of the same run would bring them) counts as a change without
    reaching the module; the others are dry-run by C(kubernetes.core.k8s) as usual.
  - The cluster is the one a C(kubernetes.core.k8s) task would reach in the same place, with the same options -
    the connection options given here, else the C(module_defaults) of C(kubernetes.core.k8s) and its groups
    (C(group/kubernetes.core.k8s)), else the task environment's C(K8S_AUTH_*), C(KUBECONFIG) and
    C(~/.kube/config). The reads need a kubeconfig (O(kubeconfig) or C(K8S_AUTH_KUBECONFIG)); O(host) and
    O(api_key) alone are refused.
options:
  state:
    description: Whether the objects should exist.
    type: str
    choices: [present, absent]
    default: present
  definition:
    description:
      - The objects, as a list of mappings (nested lists are flattened), one mapping, or YAML text holding one
        document per object (what C(lookup('ansible.builtin.template', ...)) returns). Empty documents are dropped;
        an object listed twice counts once.
      - Each needs C(apiVersion), C(kind), C(metadata.name) and, for a namespaced kind, C(metadata.namespace).
      - What the API server owns is left out - C(status), and the null C(metadata.creationTimestamp) generated
        manifests carry.
    type: raw
    required: true
  apply:
    description:
      - Client-side apply (C(kubernetes.core.k8s) O(apply)), so a field dropped from the definition is removed from
        the object. Without it the objects are patched, and fields the definition leaves out stay as they are.
    type: bool
    default: false
  wait:
    description:
      - Wait for the objects written to be ready (O(wait_condition), else as C(kubernetes.core.k8s) waits by kind).
    type: bool
    default: false
  wait_condition:
    description: The condition to wait for, as C(kubernetes.core.k8s) takes it.
    type: dict
    suboptions:
      type:
        description: The condition's type, for example C(Ready) or C(Programmed).
        type: str
        required: true
      status:
        description: The condition's status.
        type: str
        choices: ["True", "False", "Unknown"]
        default: "True"
      reason:
        description: The condition's reason, if it must be a particular one.
        type: str
  wait_sleep:
    description: Seconds between checks while waiting.
    type: int
    default: 1
  wait_timeout:
    description: Seconds to wait at most.
    type: int
    default: 120
  journal:
    description:
      - A directory on the controller where the task notes, once it succeeded, what the objects are now (their
        C(uid) and C(generation)) or that they are gone. The servingstack role gives its converge's journal here (as
        C(module_defaults)) and makes the cluster's converge record from it (the
        P(modelplane.serving.servingstack_record#lookup) lookup). Nothing is noted in check mode.
    type: path
extends_documentation_fragment:
  - modelplane.serving.kubernetes_auth
attributes:
  action:
    support: full
    description: Runs in the action plugin on the controller; it calls C(kubernetes.core.k8s) to write.
  check_mode:
    support: full
    description: Reads as usual; the objects to write are dry-run by C(kubernetes.core.k8s), or counted as changes.
  diff_mode:
    support: partial
    description: The diff C(kubernetes.core.k8s) returns for the objects it dry-runs or writes.
requirements:
  - kubernetes (Python client)
notes:
  - The result holds no object's content of its own - RV(sent) and RV(previewed) name the objects; what
    C(kubernetes.core.k8s) returns for the objects it wrote is passed on, except when one of them is a Secret (then
    neither its RV(result) nor its diff is, since they would show the Secret's data).
"""

EXAMPLES = r"""
- name: Apply the role's objects; a re-run that changes nothing runs no module.
  modelplane.serving.servingstack_k8s:
    definition: "{{ lookup('ansible.builtin.template', 'objects.yaml.j2') }}"
    apply: true

- name: Wait for the Gateway to be programmed (no module run when it already is).
  modelplane.serving.servingstack_k8s:
    definition:
      apiVersion: gateway.networking.k8s.io/v1
      kind: Gateway
      metadata: {name: inference-gateway, namespace: modelplane-system}
      spec: {gatewayClassName: envoy, listeners: [{name: http, port: 80, protocol: HTTP}]}
    wait: true
    wait_condition: {type: Programmed}
    wait_timeout: 300

- name: Delete the queues, also when their CRD is gone already.
  modelplane.serving.servingstack_k8s:
    state: absent
    definition:
      - {apiVersion: scheduling.run.ai/v2, kind: Queue, metadata: {name: modelplane}}
      - {apiVersion: scheduling.run.ai/v2, kind: Queue, metadata: {name: modelplane-parent}}
    wait: true
"""

RETURN = r"""
sent:
  description: The objects given to C(kubernetes.core.k8s) (references only), in order; empty when none needed a write.
  returned: always
  type: list
  elements: dict
  sample: [{apiVersion: v1, kind: ConfigMap, metadata: {name: mp-gateway-ca, namespace: modelplane-system}}]
previewed:
  description:
    - In check mode, the objects counted as changes without a dry run (kind not served, or namespace missing yet).
  returned: always
  type: list
  elements: dict
  sample: []
result:
  description: What C(kubernetes.core.k8s) returned for the objects it wrote (its C(result)).
  returned: when an object was sent, and none of them is a Secret
  type: dict
"""
