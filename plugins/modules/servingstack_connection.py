#!/usr/bin/python
# Copyright 2026 The modelplane.serving authors
# Apache License 2.0 (see LICENSE)
"""Explicit kubernetes.core connection options for the target cluster, from its kubeconfig."""

from __future__ import annotations

DOCUMENTATION = r"""
---
module: servingstack_connection
short_description: Connection options that pin every kubernetes.core task to the target cluster
version_added: 0.1.0
author:
  - Modelplane engineers (@modelplaneai)
description:
  - Reads the target cluster's kubeconfig and returns every authentication option of the C(kubernetes.core) modules
    set explicitly from it, for C(module_defaults), plus the task C(environment) that goes with them.
  - Without this, C(K8S_AUTH_HOST), C(K8S_AUTH_API_KEY), C(K8S_AUTH_VERIFY_SSL), C(K8S_AUTH_SSL_CA_CERT),
    C(K8S_AUTH_CONTEXT) and the other C(K8S_AUTH_*) variables (what AWX injects for its Kubernetes credential)
    take the place of every option a task leaves out, so a converge meant for a workload cluster would reach the
    management cluster. kubernetes.core reads a variable only for an option that is left out (V(null)), so each
    option is given, with an empty value where the kubeconfig has none.
  - Inline certificate data (C(certificate-authority-data), C(client-certificate-data), C(client-key-data)) is
    written to files in O(dest) with mode C(0600), since the modules take paths.
  - The caller removes O(dest) afterwards.
  - Run it where the C(kubernetes.core) tasks of the converge run (the role runs it on the ServingStack's host, the
    controller), since they read the files.
options:
  kubeconfig:
    description: Path of the target cluster's kubeconfig.
    type: path
    required: true
  context:
    description: Context to use (empty for the kubeconfig's current context).
    type: str
    default: ""
  dest:
    description: An existing private directory for the certificate files.
    type: path
    required: true
attributes:
  check_mode:
    support: full
    description: >-
      Writes the files in check mode too: they are private files on the controller that the following tasks need,
      not a change to any cluster.
  diff_mode:
    support: none
    description: Nothing is compared.
notes:
  - C(kubernetes.core.helm) refuses O(context) together with C(ca_cert) or C(validate_certs), so its options leave
    those two out and the returned C(environment) sets C(K8S_AUTH_VERIFY_SSL=true) and an empty
    C(K8S_AUTH_SSL_CA_CERT) instead (helm then follows the kubeconfig), and clears the C(HELM_KUBE*) variables.
  - With a static token and a server both given, C(kubernetes.core.k8s) does not read the kubeconfig at all, so a
    kubeconfig's C(tls-server-name) is not used then.
requirements:
  - PyYAML
"""

EXAMPLES = r"""
- name: Pin the kubernetes.core modules to the target cluster.
  modelplane.serving.servingstack_connection:
    kubeconfig: "{{ target_kubeconfig }}"
    dest: "{{ private_dir.path }}"
  register: target
  no_log: true

- name: Converge on the target cluster only.
  module_defaults:
    group/kubernetes.core.k8s: "{{ target.k8s }}"
    group/kubernetes.core.helm: "{{ target.helm }}"
  environment: "{{ target.environment }}"
  block:
    - name: Create a namespace.
      kubernetes.core.k8s:
        kind: Namespace
        name: demo
"""

RETURN = r"""
k8s:
  description:
    - Every authentication option of C(kubernetes.core.k8s) and C(kubernetes.core.k8s_info), for
      C(module_defaults) of C(group/kubernetes.core.k8s). Holds the kubeconfig's static token, if any.
  returned: success
  type: dict
helm:
  description:
    - The authentication options of C(kubernetes.core.helm), for C(module_defaults) of C(group/kubernetes.core.helm).
  returned: success
  type: dict
environment:
  description: The task environment for the target's tasks (C(KUBECONFIG), C(K8S_AUTH_*) and C(HELM_KUBE*)).
  returned: success
  type: dict
context:
  description: The context used.
  returned: success
  type: str
  sample: west-gke
host:
  description: The target's API server.
  returned: success
  type: str
  sample: https://203.0.113.5
"""

from ansible.module_utils.basic import AnsibleModule
from ansible_collections.modelplane.serving.plugins.module_utils.servingstack import target


def main() -> None:
    module = AnsibleModule(argument_spec=target.CONNECTION_OPTIONS, supports_check_mode=True)
    try:
        found = target.connection(module.params["kubeconfig"], module.params["context"], module.params["dest"])
    except target.TargetError as error:
        module.fail_json(msg=str(error))
    module.exit_json(changed=False, **found)


if __name__ == "__main__":
    main()
