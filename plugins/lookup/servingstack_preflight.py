# Copyright 2026 The modelplane.serving authors
# Apache License 2.0 (see LICENSE)
"""Lookup plugin: check the target cluster can take the planned components, before the first one installs."""

from __future__ import annotations

DOCUMENTATION = r"""
name: servingstack_preflight
author: Modelplane engineers (@modelplaneai)
short_description: Check the target cluster can take a ServingStack's components before any installs
version_added: 0.1.0
description:
  - Reads the target cluster's C(/version), its API groups (C(/apis)) and one page of its Nodes (three requests), and
    checks them against the install plan.
  - Problems (the converge cannot succeed) - the cluster's Kubernetes is older than the oldest the planned charts
    support (the newest lower bound of their C(kubeVersion) constraints); a planned component needs an API group the
    cluster does not serve (the NVIDIA DRA driver needs C(resource.k8s.io), Dynamic Resource Allocation).
  - Warnings - the plan puts the inference Gateway behind a LoadBalancer Service and no Node has a cloud provider ID
    (C(spec.providerID)) or an C(ExternalIP) address, so the cluster may have no load-balancer controller and the
    Gateway no address. A heuristic, so only a warning.
  - Warnings are shown as Ansible warnings. With O(refuse) (the default) problems fail the lookup, each named with
    its fix, joined by C(; ).
  - Ownership (always, also with O(cluster_checks) false) - a Helm release of one of the planned charts under another
    name (a user's own, read from Helm's release Secrets), or a CRD of a planned chart's API groups whose Helm
    annotations name another release, is a problem unless O(adopt) is true. Two controllers would fight over one
    cluster, and an upgrade would silently take the CRD over.
  - It only reads the cluster, and behaves the same in check mode.
options:
  plan:
    description: The install plan (C(modelplane.serving.servingstack_spec)'s C(plan)).
    type: list
    elements: dict
    required: true
  refuse:
    description: Fail on a problem. False returns the problems instead.
    type: bool
    default: true
  cluster_checks:
    description: Check the Kubernetes version, the API groups and the Nodes. False checks ownership only.
    type: bool
    default: true
  adopt:
    description: Take over releases and CRDs of the planned charts that another Helm release owns, instead of refusing.
    type: bool
    default: false
extends_documentation_fragment:
  - modelplane.serving.target_cluster
"""

EXAMPLES = r"""
- name: Check the target cluster can take the stack.
  ansible.builtin.set_fact:
    preflight: >-
      {{ lookup('modelplane.serving.servingstack_preflight', plan=servingstack_plan, kubeconfig=target_kubeconfig) }}
"""

RETURN = r"""
_raw:
  description:
    - A mapping of C(kubernetes) (the cluster's version, C(gitVersion) of C(/version)), C(problems) and C(warnings)
      (lists of messages; C(problems) is empty unless O(refuse) is false).
  type: list
  elements: dict
"""

from typing import Any

from ansible.errors import AnsibleLookupError
from ansible.plugins.lookup import LookupBase
from ansible.utils.display import Display
from ansible_collections.modelplane.serving.plugins.module_utils.servingstack import kubeclient, preflight

display = Display()
# One page is enough: a cloud sets a provider ID on every node, so the first nodes tell.
NODES_PAGE = 100
# A release's latest revision is in one of these; superseded and uninstalled revisions are history.
LIVE_STATES = "deployed,failed,pending-install,pending-upgrade,pending-rollback"


class LookupModule(LookupBase):
    def run(self, terms: list[Any], variables: dict[str, Any] | None = None, **kwargs: Any) -> list[Any]:
        self.set_options(var_options=variables, direct=kwargs)
        plan = self.get_option("plan")
        read: dict[str, Any] = {}
        try:
            client = kubeclient.connect(self.get_option("kubeconfig"), self.get_option("context"))
            if not self.get_option("adopt") and any(component.get("releases") for component in plan):
                read["secrets"] = kubeclient.get(client, "/api/v1/secrets", "the Helm release Secrets",
                                                 labelSelector=f"owner=helm,status in ({LIVE_STATES})",
                                                 fieldSelector="type=helm.sh/release.v1").get("items") or []
                read["crds"] = kubeclient.get(client, "/apis/apiextensions.k8s.io/v1/customresourcedefinitions",
                                              "the CRDs").get("items") or []
            if self.get_option("cluster_checks"):
                read["version_info"] = kubeclient.get(client, "/version", "the cluster's version (/version)")
                read["api_group_list"] = kubeclient.get(client, "/apis", "the cluster's API groups (/apis)")
                try:
                    nodes = kubeclient.get(client, "/api/v1/nodes", "the Nodes", limit=NODES_PAGE)
                    read["nodes"] = nodes.get("items") or []
                except kubeclient.KubeReadError as error:  # not allowed to list Nodes (RBAC): no load-balancer check
                    display.warning(f"servingstack_preflight: {error}: the load-balancer check is skipped")
        except kubeclient.KubeReadError as error:
            raise AnsibleLookupError(f"servingstack_preflight: {error}") from None
        found = preflight.check(plan, **read)
        for warning in found["warnings"]:
            display.warning(warning)
        if found["problems"] and self.get_option("refuse"):
            raise AnsibleLookupError("; ".join(found["problems"]))
        return [found]
