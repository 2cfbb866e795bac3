# Copyright 2026 The modelplane.serving authors
# Apache License 2.0 (see LICENSE)
"""Lookup plugin: take or release the target cluster's Lease, so that one converge works on a cluster at a time."""

from __future__ import annotations

DOCUMENTATION = r"""
name: servingstack_lease
author: Modelplane engineers (@modelplaneai)
short_description: Hold the target cluster's Lease for the whole converge, or release it
version_added: 0.1.0
description:
  - With O(state=held), takes the C(coordination.k8s.io/v1) Lease O(namespace)/O(name) on the target cluster for
    this run, waiting up to O(wait) seconds while another run holds it and renews it; then fails with one line naming
    the holder. A Lease its holder stopped renewing for its C(leaseDurationSeconds) (a run that was killed) is taken
    over. The rules are client-go's leader election's; see C(docs/interrupted-runs.md).
  - The holder (C(holderIdentity)) names the run - its AWX job (C(JOB_ID) or C(AWX_JOB_ID)) if any, the host, the
    ansible-playbook process and when it started.
  - Once taken, a process of the run renews the Lease every third of O(duration). It watches ansible-playbook; once
    that is gone (interrupted or killed), it ends what is left of the run (the workers and the helm processes they
    started), releases the Lease and removes the run's private directory O(directory), within seconds.
  - With O(state=released), stops that process, which releases the Lease.
  - Every request has a connect and a read timeout.
options:
  state:
    description: V(held) takes the Lease and keeps it renewed; V(released) gives it up.
    type: str
    choices: [held, released]
    default: held
  directory:
    description: The run's private directory (C(servingstack_kubeconfig)'s C(dest)), where the renewer's state is kept.
    type: path
    required: true
  namespace:
    description: The namespace of the Lease on the target cluster.
    type: str
    default: kube-system
  name:
    description: The name of the Lease; one per target cluster.
    type: str
    default: modelplane-servingstack
  duration:
    description: The Lease's C(leaseDurationSeconds) - how long after its last renewal another run takes it over.
    type: int
    default: 30
  wait:
    description: How many seconds to wait for another run's Lease, at most.
    type: int
    default: 900
extends_documentation_fragment:
  - modelplane.serving.target_cluster
"""

EXAMPLES = r"""
- name: Hold the target cluster's Lease.
  ansible.builtin.set_fact:
    lease: >-
      {{ lookup('modelplane.serving.servingstack_lease', directory=target.dest, kubeconfig=target.k8s.kubeconfig) }}

- name: Release it.
  ansible.builtin.set_fact:
    lease: "{{ lookup('modelplane.serving.servingstack_lease', state='released', directory=target.dest,
                      kubeconfig=target.k8s.kubeconfig) }}"
"""

RETURN = r"""
_raw:
  description:
    - A mapping - C(holder) (this run's C(holderIdentity)), C(namespace) and C(name) of the Lease, C(held) (true with
      O(state=held), false once released).
  type: list
  elements: dict
"""

import os
import socket
from typing import Any

from ansible.errors import AnsibleLookupError
from ansible.plugins.lookup import LookupBase
from ansible.utils.display import Display
from ansible_collections.modelplane.serving.plugins.module_utils.servingstack import kubeclient, lease, rundir

display = Display()


class LookupModule(LookupBase):
    def run(self, terms: list[Any], variables: dict[str, Any] | None = None, **kwargs: Any) -> list[Any]:
        self.set_options(var_options=variables, direct=kwargs)
        directory = self.get_option("directory")
        if not str(directory).rstrip("/").endswith(rundir.SUFFIX) or not os.path.isdir(directory):
            raise AnsibleLookupError(f"servingstack_lease: directory {directory!r} is not a run's private directory "
                                     f"(*{rundir.SUFFIX})")
        state_file = os.path.join(directory, lease.STATE_FILE)
        kubeconfig, context = self.get_option("kubeconfig"), self.get_option("context")
        namespace, name = self.get_option("namespace"), self.get_option("name")
        if self.get_option("state") == "released":
            return [self._release(state_file, kubeconfig, context)]
        owner = rundir.owner()
        started = rundir.started(owner)
        me = lease.identity(dict(os.environ), socket.gethostname(), owner, started)
        url = "?"
        try:
            client = kubeclient.connect(kubeconfig, context)
            url = kubeclient.host_of(client)
            lease.acquire(client, namespace, name, me, self.get_option("duration"), self.get_option("wait"), url,
                          say=display.display)
        except kubeclient.KubeReadError as error:
            raise AnsibleLookupError(f"servingstack_lease: taking the Lease {namespace}/{name}: {error}") from None
        except lease.LeaseBusy as error:
            raise AnsibleLookupError(str(error)) from None
        except Exception as error:  # a request the API server refused or that timed out
            raise AnsibleLookupError(f"servingstack_lease: taking the Lease {namespace}/{name} on the cluster at "
                                     f"{url}: {kubeclient.reason(error)}") from None
        holding = lease.Holding(namespace=namespace, name=name, me=me, duration=self.get_option("duration"),
                                owner=owner, owner_start=rundir.start_time(owner), directory=directory)
        renewer = lease.start_renewer(holding, lambda: kubeclient.connect(kubeconfig, context), rundir.remove)
        lease.save(holding, renewer, state_file)
        return [{"holder": me, "namespace": namespace, "name": name, "held": True}]

    @staticmethod
    def _release(state_file: str, kubeconfig: str, context: str) -> dict[str, Any]:
        found = lease.load(state_file)
        if found is None:
            return {"held": False}
        holding, renewer, start = found
        if not lease.stop_renewer(renewer, start):  # the renewer is gone: release here
            try:
                lease.give_up(kubeclient.connect(kubeconfig, context), holding.namespace, holding.name, holding.me)
            except Exception as error:  # the Lease then expires by itself after its duration
                display.warning(f"servingstack_lease: could not release the Lease {holding.namespace}/{holding.name} "
                                f"({kubeclient.reason(error)}): the next converge takes it over after "
                                f"{holding.duration} s")
        os.remove(state_file)
        return {"holder": holding.me, "namespace": holding.namespace, "name": holding.name, "held": False}
