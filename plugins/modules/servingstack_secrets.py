#!/usr/bin/python
# Copyright 2026 The modelplane.serving authors
# Apache License 2.0 (see LICENSE)
"""Read Secrets (a ServingStack's credentials) from the management cluster."""

from __future__ import annotations

DOCUMENTATION = r"""
---
module: servingstack_secrets
short_description: Read the Secrets holding a ServingStack's credentials
version_added: 0.1.0
author:
  - Modelplane engineers (@modelplaneai)
description:
  - Reads Secrets by name and namespace from the management cluster, for the C(servingstack) role to take the target
    cluster's kubeconfig and cloud identity credential from (the ServingStack's C(spec.secrets)).
  - A Secret that does not exist reads as null; the caller says which one is missing and why it is needed.
  - When only O(kubeconfig) and O(context) (or their C(K8S_AUTH_*) variables) locate the management cluster, the
    Secrets are read on the controller (an action plugin) and no module runs; with any other connection option
    (a host and token, client certificates, a proxy) the module reads them.
  - "The Secrets' data is returned: run the task with C(no_log)."
options:
  refs:
    description:
      - The Secrets to read, each a mapping with C(name) and C(namespace) (other keys are ignored).
    type: list
    elements: dict
    required: true
extends_documentation_fragment:
  - modelplane.serving.kubernetes_auth
  - modelplane.serving.management_cluster
attributes:
  check_mode:
    support: full
    description: Reads only.
  diff_mode:
    support: none
    description: Reads only.
requirements:
  - kubernetes >= 24.2.0
"""

EXAMPLES = r"""
- name: Read the target cluster's kubeconfig Secret.
  modelplane.serving.servingstack_secrets:
    refs:
      - {name: west-gke-kubeconfig, namespace: platform}
  register: found
  no_log: true
"""

RETURN = r"""
secrets:
  description: The Secrets, in the order of O(refs); null for one that does not exist.
  returned: always
  type: list
  elements: dict
"""

import copy

from ansible.module_utils.basic import AnsibleModule
from ansible_collections.kubernetes.core.plugins.module_utils.args_common import AUTH_ARG_SPEC
from ansible_collections.kubernetes.core.plugins.module_utils.k8s.core import AnsibleK8SModule
from ansible_collections.modelplane.serving.plugins.module_utils.servingstack.credentials import (
    SECRETS_OPTIONS,
    secret_refs,
)


def main() -> None:
    options = copy.deepcopy(AUTH_ARG_SPEC)
    options.update(copy.deepcopy(SECRETS_OPTIONS))
    module = AnsibleK8SModule(module_class=AnsibleModule, argument_spec=options, supports_check_mode=True)
    from ansible_collections.kubernetes.core.plugins.module_utils.k8s.client import get_api_client
    from kubernetes.dynamic.exceptions import NotFoundError

    try:
        refs = secret_refs(module.params["refs"])
    except ValueError as error:
        module.fail_json(msg=str(error))
    found = []
    try:
        client = get_api_client(module=module)
        resource = client.resource("Secret", "v1")
        for name, namespace in refs:
            try:
                found.append(client.get(resource, name=name, namespace=namespace).to_dict())
            except NotFoundError:
                found.append(None)
    except Exception as error:  # the message names the cluster's answer, never a Secret's data
        module.fail_json(msg=f"cannot read the Secrets {', '.join(f'{ns}/{n}' for n, ns in refs)}: {error}")
    module.exit_json(changed=False, secrets=found)


if __name__ == "__main__":
    main()
