# Copyright 2026 The modelplane.serving authors
# Apache License 2.0 (see LICENSE)
"""Documentation of the servingstack_barrier action plugin (it has no module code: it runs on the controller)."""

from __future__ import annotations

DOCUMENTATION = r"""
module: servingstack_barrier
short_description: Let the component hosts of one converge wait for each other
version_added: 0.1.0
author: Modelplane engineers (@modelplaneai)
description:
  - C(playbooks/site.yml) converges every component on an inventory host of its own with strategy
    C(free), so each component starts as soon as the components it needs have converged. Ansible's
    workers cannot see facts other hosts set meanwhile, so the hosts tell each other through marker
    files in a private directory on the controller.
  - C(start) makes the directory (mode 0700) and returns it; C(converged) and C(failed) record a
    component's outcome; C(wait) waits until every component in O(names) has an outcome and fails,
    naming them, when one failed or has none after O(timeout); C(finish) removes the directory.
  - In check mode a component whose releases were only previewed (not installed, so their CRDs are
    missing) is recorded with O(previewed), and C(wait) returns RV(previewed) for the components
    that need it, so they skip objects of those kinds as they would for a release of their own.
  - Only bookkeeping on the controller, so it never reports a change and runs the same in check mode.
options:
  state:
    description: What to do.
    type: str
    required: true
    choices: [start, converged, failed, wait, finish]
  dir:
    description:
      - The directory C(start) returned. Required except with C(start), where it is the parent
        directory to create it in (default the system's temporary directory).
    type: path
  name:
    description: The component whose outcome C(converged) or C(failed) records (a role name such as C(cert_manager)).
    type: str
  names:
    description: The components C(wait) waits for.
    type: list
    elements: str
    default: []
  timeout:
    description: Seconds C(wait) waits at most.
    type: int
    default: 3600
  previewed:
    description: With C(converged), record that check mode only previewed a release of the component.
    type: bool
    default: false
attributes:
  action:
    support: full
    description: Runs in the action plugin on the controller; there is no module code.
  check_mode:
    support: full
    description: Runs the same in check mode; it only writes its own marker files.
  diff_mode:
    support: none
    description: Nothing in the cluster changes, so there is no diff.
notes:
  - The marker files hold only C(converged) or C(failed), never data of the stack.
"""

EXAMPLES = r"""
- name: Make the directory for this converge's markers.
  modelplane.serving.servingstack_barrier:
    state: start
  register: run

- name: Wait until cert-manager has converged.
  modelplane.serving.servingstack_barrier:
    state: wait
    dir: "{{ run.dir }}"
    names: [cert_manager]

- name: Record that trust-manager converged.
  modelplane.serving.servingstack_barrier:
    state: converged
    dir: "{{ run.dir }}"
    name: trust_manager
"""

RETURN = r"""
dir:
  description: The directory made (C(start)).
  returned: state is start
  type: str
  sample: /tmp/servingstack-run-k2j4d9
outcomes:
  description: Component -> C(converged), C(previewed), C(failed), or C(pending) when it had none in time (C(wait)).
  returned: state is wait
  type: dict
  sample: {cert_manager: converged}
not_converged:
  description: The components of O(names) that did not converge (C(wait)).
  returned: state is wait
  type: list
  elements: str
  sample: []
previewed:
  description: Whether a component waited for converged only as a check-mode preview (C(wait)).
  returned: state is wait
  type: bool
removed:
  description: Whether C(finish) found and removed the directory.
  returned: state is finish
  type: bool
"""
