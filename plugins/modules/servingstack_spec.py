#!/usr/bin/python
# Copyright 2026 The modelplane.serving authors
# Apache License 2.0 (see LICENSE)
"""Validate a ServingStack, apply its defaults and plan its install."""

from __future__ import annotations

DOCUMENTATION = r"""
---
module: servingstack_spec
short_description: Validate a ServingStack, apply its defaults and plan its install
version_added: 0.1.0
author:
  - Modelplane engineers (@modelplaneai)
description:
  - Reads one C(ServingStack) (C(infrastructure.modelplane.ai/v1alpha1)) from an inline definition, a YAML file,
    or a live object on a management cluster.
  - >-
    Checks the manifest as the API server checks a live object, against the ServingStack CRD
    (C(crds/servingstacks.infrastructure.modelplane.ai.yaml)), the one contract: its schema (unknown fields refused at
    every level), defaults, list-map keys and CEL rules (C(x-kubernetes-validations)), whose descriptions and messages
    are the reference for each field. It reports B(all) problems at once, each as C(<path>: <problem>) naming the
    value and the rule, never quoting a client CA certificate. It also checks C(metadata) as the API server does.
  - >-
    The CRD's CEL rules, in short: exactly one C(Kubeconfig) secret and at most one cloud identity secret; unique
    listener ports; with C(gateway.hostname), no listener named C(https) or on port 443 (the gateway's own HTTPS
    listener); C(gateway.hostname) a Gateway API Hostname, not an IP address; no private key in a client CA
    certificate; client CA names of at most 240 characters; every version pin a semantic version; and
    C(versions.envoyGateway) a v1.8.x release.
  - >-
    Two rules no CEL rule can state are checked in Python (C(PYTHON_ONLY_RULES) in C(spec.py)): each
    C(gateway.clientCAs[].certificate) is PEM CERTIFICATE blocks that parse as X.509, and C(dynamo.grove) is
    C(v0.1.0-alpha.12-rc2) or later in release order (grove#753).
  - >-
    Accepted with a warning: pins for the stack not chosen (C(standard.*) on a Dynamo stack, C(dynamo.*) on a
    Standard one), ignored as the reference says and returned in RV(ignored); C(versions.envoyGateway) below v1.8.1
    (Envoy AI Gateway v1.1.x needs v1.8.1 or later); C(gateway.clientCAs) without C(gateway.hostname) (stored, but
    with no HTTPS listener no client certificate is required).
  - An empty C(gateway.listeners) means the default listener and an empty C(nvidiaDriverRoot) means C(/). A live
    object's C(status) is returned unchecked, and the fields Crossplane adds to a composite resource's spec
    (C(spec.crossplane), C(spec.compositionRef) and the other legacy ones) are dropped; neither is ever refused.
  - >-
    Hostile input costs nothing. Before the schema and the CEL rules, a manifest is checked against bounds, and one
    that breaks them is refused with only those problems, each naming where and the bound: more than 10,000 values
    (a YAML alias counts the values it names each time it is used, so an alias bomb is refused while its file is
    read), more than 3 MiB of text (the API server's request limit), a list longer than its C(maxItems), values
    nested deeper than any field of the CRD (in a YAML file, twice as deep: a saved live object's C(managedFields)
    mirror its fields further down). So a CEL rule never runs on a list longer than the CRD allows. A live object's
    C(status) is never walked.
  - Fills every default of the CRD, C(metadata.namespace=default) for a manifest that names no namespace, and each
    secret's C(namespace) (the ServingStack's).
  - Returns the defaulted manifest and the ordered install plan. Never changes anything.
options:
  definition:
    description:
      - The ServingStack manifest, as a mapping or as YAML text (of at most 3 MiB), validated on the controller (see
        the C(action) attribute).
      - Exactly one of O(definition), O(src) and O(name) is required.
    type: raw
  src:
    description:
      - Path to a YAML file holding the ServingStack manifest, read on the controller (see the C(action) attribute).
      - A YAML syntax error or a duplicate key is reported with the file, line and column.
      - The file must be a regular file (a symbolic link to one is fine; a directory, FIFO or device is refused
        unread) of at most 3 MiB of UTF-8 text, and is read in one bounded read.
      - A file with several YAML documents must hold exactly one of kind C(ServingStack).
    type: path
  name:
    description:
      - Name of a live ServingStack to read from the management cluster the authentication options reach.
      - Requires O(namespace).
    type: str
  namespace:
    description:
      - Namespace of the live ServingStack named by O(name), and only with O(name) (a manifest names its own).
    type: str
extends_documentation_fragment:
  - modelplane.serving.kubernetes_auth
  - modelplane.serving.management_cluster
attributes:
  check_mode:
    support: full
    description: The module only reads, so check mode runs it unchanged.
  diff_mode:
    support: none
    description: Nothing changes, so there is no diff.
  action:
    support: full
    description: >-
      An action plugin checks the options against the module's argument spec, then reads O(src) and O(definition) on
      the controller, in Ansible's own process; only O(name) runs a module on the host: C(kubernetes.core.k8s_info),
      with the authentication options, to read the live ServingStack. Every ServingStack is validated on the
      controller, against the collection's CRD.
notes:
  - The checks run before any cluster is contacted; only O(name) reads from a cluster, and only the ServingStack.
  - Messages never quote certificate contents or credentials.
requirements:
  - python >= 3.11
  - PyYAML (on the controller)
  - cryptography (on the controller, parses the client CA certificates)
  - jsonschema (on the controller, checks the manifest against the CRD's schema)
  - cel-python (on the controller, evaluates the CRD's CEL rules)
  - kubernetes >= 24.2.0 (on the host, only to read a live ServingStack with O(name), as C(kubernetes.core.k8s_info)
    does)
seealso:
  - name: ServingStack reference
    description: The contract this module implements.
    link: https://github.com/modelplaneai/modelplane-serving/blob/main/crds/servingstacks.infrastructure.modelplane.ai.yaml
"""

EXAMPLES = r"""
- name: Validate a ServingStack file and show its plan.
  modelplane.serving.servingstack_spec:
    src: examples/servingstack.yaml
  register: servingstack

- name: Show the install order.
  ansible.builtin.debug:
    msg: "{{ servingstack.plan | map(attribute='title') | list }}"

- name: Validate an inline ServingStack.
  modelplane.serving.servingstack_spec:
    definition:
      apiVersion: infrastructure.modelplane.ai/v1alpha1
      kind: ServingStack
      metadata:
        name: west-gke-stack
        namespace: platform
      spec:
        stack: Dynamo
        secrets:
          - type: Kubeconfig
            name: west-gke-kubeconfig
            key: kubeconfig

- name: Read a live ServingStack from the management cluster.
  modelplane.serving.servingstack_spec:
    name: west-gke-stack
    namespace: platform
    kubeconfig: ~/.kube/management.yaml
  register: servingstack
"""

RETURN = r"""
servingstack:
  description: The manifest with every default applied (spec, secret namespaces, metadata.namespace).
  returned: success
  type: dict
  sample:
    apiVersion: infrastructure.modelplane.ai/v1alpha1
    kind: ServingStack
    metadata:
      name: west-gke-stack
      namespace: platform
    spec:
      stack: Standard
      nvidiaDriverRoot: /
      secrets:
        - {type: Kubeconfig, name: west-gke-kubeconfig, key: kubeconfig, namespace: platform}
      gateway:
        className: envoy
        listeners:
          - {name: http, port: 80, protocol: HTTP}
      versions: {certManager: v1.21.1, envoyGateway: v1.8.4}
plan:
  description:
    - The components to install for the stack, in dependency order (remove them in reverse).
    - Each Helm release carries what C(kubernetes.core.helm) needs.
  returned: success
  type: list
  elements: dict
  contains:
    name:
      description: The component, also the role that installs it (C(roles/<name>)).
      type: str
      sample: cert_manager
    role:
      description: The fully qualified role name.
      type: str
      sample: modelplane.serving.cert_manager
    title:
      description: The component's display name.
      type: str
      sample: cert-manager
    namespace:
      description: The namespace the component runs in.
      type: str
      sample: cert-manager
    version_key:
      description: The spec path of the component's version pin.
      type: str
      sample: versions.certManager
    version:
      description: The version resolved from the spec.
      type: str
      sample: v1.21.1
    needs:
      description:
        - Components that must converge first, for this spec.
        - A need on a spec field (Envoy Gateway on cert-manager, for a hostname) counts only when the field is set.
      type: list
      elements: str
      sample: []
    releases:
      description: The Helm releases of the component, in install order.
      type: list
      elements: dict
      sample:
        - release: mp-cert-manager
          chart: cert-manager
          chart_ref: cert-manager
          chart_repo_url: https://charts.jetstack.io
          version: v1.21.1
          namespace: cert-manager
          version_key: versions.certManager
          atomic: true
          crd_groups: [cert-manager.io, acme.cert-manager.io]
    manifests:
      description: Objects applied from manifests rather than charts, by name.
      type: list
      elements: str
      sample: []
    ingress:
      description: Whether requests enter the stack through the component (the gateway), which a teardown takes first.
      type: bool
      sample: false
    wait:
      description:
        - Whether a later component of the plan needs this one. Its releases are then installed with helm's wait and
          atomic; the others' workloads are waited for once, at the end of the converge.
      type: bool
      sample: true
prune:
  description:
    - The components of the other stack, in teardown order, with the same keys as RV(plan) entries. The
      C(servingstack) role uninstalls those it finds installed once the plan has converged (switching C(stack)).
  returned: success
  type: list
  elements: dict
ignored:
  description: Version pins the chosen stack ignores, each with its path, value and why.
  returned: always
  type: list
  elements: dict
  sample:
    - path: spec.dynamo.grove
      value: v0.1.0-alpha.12-rc2
      reason: "stack is Standard: Dynamo-stack pins are ignored"
errors:
  description: On failure, every problem found, as path and message (C(msg) lists them one per line).
  returned: failed
  type: list
  elements: dict
  sample:
    - path: spec.gateway.listeners[1].port
      message: 70000 is above the maximum 65535
generation:
  description:
    - On failure, C(metadata.generation) of a ServingStack that has one (a live object, or a definition read from
      one), so that the status saying why it was refused can name the generation it observed.
  returned: failed, when the ServingStack has a generation
  type: int
  sample: 3
"""

import copy

from ansible.module_utils.basic import AnsibleModule
from ansible_collections.kubernetes.core.plugins.module_utils.args_common import AUTH_ARG_SPEC

# The one argument spec: the action plugin checks the options against it, the module only without the action plugin.
ARGUMENT_SPEC = {**copy.deepcopy(AUTH_ARG_SPEC), "definition": {"type": "raw"}, "src": {"type": "path"},
                 "name": {"type": "str"}, "namespace": {"type": "str"}}
SOURCES = ("definition", "src", "name")
# A live ServingStack needs its namespace; a manifest names its own.
RULES: dict = {"mutually_exclusive": [SOURCES], "required_one_of": [SOURCES],
               "required_by": {"name": ("namespace",), "namespace": ("name",)}}
ACTION_ONLY = ("servingstack_spec runs as its action plugin, on the controller: it reads src and definition there, "
               "and a live ServingStack (name) with kubernetes.core.k8s_info")


def main() -> None:
    # Only reached without the action plugin: the options are checked, then nothing is done.
    module = AnsibleModule(argument_spec=ARGUMENT_SPEC, supports_check_mode=True, **RULES)
    module.fail_json(msg=ACTION_ONLY)


if __name__ == "__main__":
    main()
