# Copyright 2026 The modelplane.serving authors
# Apache License 2.0 (see LICENSE)
"""Lookup plugin: the Helm releases of a component that a run which did not finish left pending, and their recovery."""

from __future__ import annotations

DOCUMENTATION = r"""
name: servingstack_stuck_releases
author: Modelplane engineers (@modelplaneai)
short_description: Find the Helm releases a dead run left pending, and how to recover each
version_added: 0.1.0
description:
  - Reads the metadata of Helm's release Secrets (C(owner=helm), type C(helm.sh/release.v1)) of the given releases,
    in one request for the pending ones, and one more for the history of a release that is.
  - A release whose newest revision is C(pending-install), C(pending-upgrade) or C(pending-rollback) is one a run
    left when it was killed while helm worked; helm refuses every further operation on it. Its recovery is a rollback
    to its newest revision that was deployed (C(deployed) or C(superseded)), or an uninstall when it never deployed.
  - Only safe while no other run may be working on the release; the C(servingstack) role holds the target's Lease
    first (see C(docs/interrupted-runs.md)).
  - Every request has a connect and a read timeout; only metadata is read (Helm's release payloads stay on the
    cluster).
options:
  _terms:
    description: The releases, each a mapping with C(release) and C(namespace) (a plan entry's C(releases)).
    type: list
    elements: dict
    required: true
extends_documentation_fragment:
  - modelplane.serving.target_cluster
"""

EXAMPLES = r"""
- name: Find the releases of the component left pending.
  ansible.builtin.set_fact:
    stuck: "{{ query('modelplane.serving.servingstack_stuck_releases', component_entry.releases, kubeconfig=target) }}"
"""

RETURN = r"""
_raw:
  description:
    - One mapping per stuck release, in the order given - C(release), C(namespace), C(status) (the pending state),
      C(stuck_revision), C(action) (C(rollback) or C(uninstall)), C(revision) (the one to roll back to, or none),
      and C(message), a sentence saying what was found and what recovers it.
  type: list
  elements: dict
"""

from typing import Any

from ansible.errors import AnsibleLookupError
from ansible.plugins.lookup import LookupBase
from ansible_collections.modelplane.serving.plugins.module_utils.servingstack import kubeclient, releases


class LookupModule(LookupBase):
    def run(self, terms: list[Any], variables: dict[str, Any] | None = None, **kwargs: Any) -> list[Any]:
        self.set_options(var_options=variables, direct=kwargs)
        wanted = [term for item in terms for term in (item if isinstance(item, list) else [item])]
        for term in wanted:
            if not isinstance(term, dict) or not term.get("release") or not term.get("namespace"):
                raise AnsibleLookupError("servingstack_stuck_releases: each term needs release and namespace, got "
                                         f"{type(term).__name__}")
        if not wanted:
            return []
        names = ",".join(sorted({term["release"] for term in wanted}))
        selector = f"owner=helm,name in ({names})"
        try:
            client = kubeclient.connect(self.get_option("kubeconfig"), self.get_option("context"))
            pending = self._secrets(client, f"{selector},status in ({','.join(releases.PENDING)})")
            stuck = {(item["metadata"].get("namespace"), item["metadata"]["labels"]["name"]) for item in pending}
            history = self._secrets(client, selector) if stuck else []
        except kubeclient.KubeReadError as error:
            raise AnsibleLookupError(f"servingstack_stuck_releases: {error}") from None
        return [found.as_dict() for found in releases.recoveries(wanted, history)]

    @staticmethod
    def _secrets(client: Any, selector: str) -> list[dict[str, Any]]:
        found = kubeclient.get(client, "/api/v1/secrets", "the Helm release Secrets", label_selector=selector,
                               field_selector="type=helm.sh/release.v1", header_params=dict(kubeclient.METADATA_ONLY))
        return found.get("items") or []
