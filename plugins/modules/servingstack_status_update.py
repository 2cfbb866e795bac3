#!/usr/bin/python
# Copyright 2026 The modelplane.serving authors
# Apache License 2.0 (see LICENSE)
"""Write a ServingStack's status (gateway, conditions, components) through the status subresource."""

from __future__ import annotations

DOCUMENTATION = r"""
---
module: servingstack_status_update
short_description: Write a live ServingStack's status
version_added: 0.1.0
author:
  - Modelplane engineers (@modelplaneai)
description:
  - Sets the status of a C(ServingStack) (C(infrastructure.modelplane.ai/v1alpha1)) on the management
    cluster through its C(status) subresource (C(kubernetes.core.k8s) cannot write subresources).
  - C(status.gateway) is O(status)'s C(gateway); keys it no longer has are removed.
  - With O(components) (the plan), also C(status.components), C(status.conditions) and
    C(status.observedGeneration). C(components) has one entry per planned component, in plan order, with its
    C(name), C(ready) and C(version) (the planned version once it converged; for one that did not, the version
    the status had for it before, if any).
  - C(conditions) are C(Ready) and C(Synced), as C(metav1.Condition)s. C(Synced) is C(True) (reason
    C(Converged)) when every component converged; otherwise C(False) with reason C(<Component>Failed) (for
    example C(CertManagerFailed), the first failed component in plan order) and a message naming each failed
    component with a one-line summary of its error, credentials removed. C(Ready) is the same when a component
    failed; otherwise C(True) (reason C(Available)) once the gateway has an address, else C(False) with reason
    C(GatewayAddressPending) and O(status)'s C(pending) as the message.
  - >-
    With O(stopped) (a converge that stopped), C(Ready) and C(Synced) are C(False) with a reason from O(stopped_at)
    and the error, and O(stopped) summarised on one line, credentials removed, as their message. The reasons are
    C(InvalidSpec) (the spec module refused the ServingStack), C(CredentialsUnavailable) (the kubeconfig Secret or
    the identity's credential is missing or unusable, or the target cluster refused them), C(ClusterUnreachable)
    (the target's API server could not be reached, for a refused connection, DNS, TLS or a timeout),
    C(PreflightFailed) (the preflight refused the cluster), C(ConvergeInProgress) (another converge held the target
    cluster's Lease for the whole wait) and C(ConvergeFailed) (anything else).
  - Each condition's C(lastTransitionTime) is kept while its C(status) stays the same; with the conditions,
    C(status.observedGeneration) and each condition's C(observedGeneration) are O(observed_generation).
  - Reads the ServingStack, then writes its status only when it differs, and reports a change only then.
options:
  name:
    description: Name of the ServingStack.
    type: str
    required: true
  namespace:
    description: Namespace of the ServingStack.
    type: str
    required: true
  status:
    description:
      - The status to write, as the C(modelplane.serving.servingstack_status) lookup returns it
        (a C(gateway) mapping with optional C(address) and C(caCertificate)), and C(pending), why the gateway has
        no address yet, for the C(Ready) condition's message.
      - Without it C(status.gateway) is left as it is (a converge that did not read the target cluster).
    type: dict
  components:
    description:
      - The install plan (as C(modelplane.serving.servingstack_spec) returns it); each entry's C(name) and
        C(version) are used. Without it (and without O(stopped)) only C(status.gateway) is written.
    type: list
    elements: dict
  failed:
    description:
      - The components that did not converge, each with the error it failed with (summarised before it is
        written). Names outside O(components) are reported too.
    type: dict
    default: {}
  stopped:
    description:
      - Why the converge stopped (the failed task's message).
    type: str
  stopped_at:
    description:
      - Where the converge stopped, for the conditions' reason with O(stopped). V(spec) reading the ServingStack,
        V(credentials) making the target's kubeconfig and identity ready, V(lease) taking the target's Lease (another
        converge held it, or the target did not answer), V(preflight) the first calls to the
        target cluster, V(components) later, before the components are done (C(status.components) is left as it
        is), V(status) once the components ran (the prune, or reading the target's status when the target stopped
        answering part-way). Only with V(status) are O(components) and O(failed) used, for C(status.components)
        and to name the failed components before the message.
    type: str
    default: components
    choices: [spec, credentials, lease, preflight, components, status]
  recovered:
    description:
      - What this converge recovered first, one sentence per Helm release a run that did not finish left pending
        (rolled back or uninstalled); added to the C(Synced) condition's message of a converge that succeeded.
    type: list
    elements: str
    default: []
    version_added: 0.1.0
  observed_generation:
    description: C(metadata.generation) of the ServingStack when the run read it.
    type: int
extends_documentation_fragment:
  - modelplane.serving.kubernetes_auth
  - modelplane.serving.management_cluster
attributes:
  check_mode:
    support: full
    description: In check mode the change is computed but not written.
  diff_mode:
    support: full
    description: Shows the old and new status.
requirements:
  - kubernetes >= 24.2.0
"""

EXAMPLES = r"""
- name: Publish the gateway's address on the ServingStack.
  modelplane.serving.servingstack_status_update:
    name: west-gke-stack
    namespace: platform
    status: "{{ lookup('modelplane.serving.servingstack_status', kubeconfig=target_kubeconfig) }}"

- name: Record that cert-manager failed.
  modelplane.serving.servingstack_status_update:
    name: west-gke-stack
    namespace: platform
    status: {}
    components: "{{ plan }}"
    failed:
      cert_manager: "Error: context deadline exceeded"
    observed_generation: 3

- name: Record that the target cluster could not be reached (its gateway status is left as it is).
  modelplane.serving.servingstack_status_update:
    name: west-gke-stack
    namespace: platform
    stopped: "servingstack_preflight: cannot reach the cluster at https://203.0.113.5:6443: Connection refused"
    stopped_at: preflight
    observed_generation: 3
"""

RETURN = r"""
gateway:
  description: C(status.gateway) after the update (as it was, without O(status)).
  returned: always
  type: dict
  sample: {address: 203.0.113.10}
conditions:
  description: C(status.conditions) after the update.
  returned: when O(components) or O(stopped) is given
  type: list
  elements: dict
  sample:
    - {type: Ready, status: "False", reason: CertManagerFailed, message: "cert_manager: Error: timed out",
       observedGeneration: 3, lastTransitionTime: "2026-12-02T21:49:00Z"}
components:
  description: C(status.components) after the update.
  returned: when O(components) is given, without O(stopped) or with O(stopped_at=status)
  type: list
  elements: dict
  sample: [{name: cert_manager, version: v1.21.1, ready: true}]
observed_generation:
  description: C(status.observedGeneration) after the update.
  returned: when O(observed_generation) and O(components) or O(stopped) are given
  type: int
  sample: 3
pending:
  description: Why the gateway has no address (empty once it has one).
  returned: when O(components) is given without O(stopped)
  type: str
  sample: "the LoadBalancer Service envoy-gateway-system/envoy-x of the Gateway has no ingress address: ..."
"""

import copy
import datetime

from ansible.module_utils.basic import AnsibleModule
from ansible_collections.kubernetes.core.plugins.module_utils.args_common import AUTH_ARG_SPEC
from ansible_collections.kubernetes.core.plugins.module_utils.k8s.core import AnsibleK8SModule
from ansible_collections.modelplane.serving.plugins.module_utils.servingstack.schema import API_VERSION, KIND
from ansible_collections.modelplane.serving.plugins.module_utils.servingstack.status import status_update

OPTIONS = {
    "name": {"type": "str", "required": True},
    "namespace": {"type": "str", "required": True},
    "status": {"type": "dict"},
    "components": {"type": "list", "elements": "dict"},
    "failed": {"type": "dict", "default": {}},
    "stopped": {"type": "str"},
    "stopped_at": {"type": "str", "default": "components",
                   "choices": ["spec", "credentials", "lease", "preflight", "components", "status"]},
    "recovered": {"type": "list", "elements": "str", "default": []},
    "observed_generation": {"type": "int"},
}


def main() -> None:
    module = AnsibleK8SModule(module_class=AnsibleModule, argument_spec={**copy.deepcopy(AUTH_ARG_SPEC), **OPTIONS},
                              supports_check_mode=True)
    from ansible_collections.kubernetes.core.plugins.module_utils.k8s.client import get_api_client

    name, namespace = module.params["name"], module.params["namespace"]
    where = f"ServingStack {namespace}/{name}"
    try:
        client = get_api_client(module=module)
        resource = client.resource(KIND, API_VERSION)
        found = client.get(resource, name=name, namespace=namespace).to_dict()
    except Exception as error:  # the message names the object, never credentials
        module.fail_json(msg=f"cannot read {where}: {error}")
    # A condition's lastTransitionTime: RFC 3339, UTC, seconds.
    now = datetime.datetime.now(datetime.timezone.utc).strftime("%Y-%m-%dT%H:%M:%SZ")  # noqa: UP017 (any Python 3)
    result, patch = status_update(dict(found.get("status") or {}), module.params, now, diff=module._diff)
    if patch and not module.check_mode:
        try:
            resource.status.patch(body={"status": patch}, name=name, namespace=namespace,
                                  content_type="application/merge-patch+json")
        except Exception as error:
            module.fail_json(msg=f"cannot write the status of {where}: {error}")
    module.exit_json(**result)


if __name__ == "__main__":
    main()
