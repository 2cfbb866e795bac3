#!/usr/bin/python
# Copyright 2026 The modelplane.serving authors
# Apache License 2.0 (see LICENSE)
"""Write a ServingStack's status.gateway through the status subresource."""

from __future__ import annotations

DOCUMENTATION = r"""
---
module: servingstack_status_update
short_description: Write a live ServingStack's status.gateway
version_added: 0.1.0
author:
  - Modelplane engineers (@modelplaneai)
description:
  - Sets C(status.gateway) of a C(ServingStack) (C(infrastructure.modelplane.ai/v1alpha1)) on the management
    cluster through its C(status) subresource (C(kubernetes.core.k8s) cannot write subresources).
  - Keys of C(status.gateway) that O(status) no longer has are removed; other status fields are kept.
  - Reports a change only when C(status.gateway) differs.
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
        (a C(gateway) mapping with optional C(address) and C(caCertificate)).
    type: dict
    required: true
extends_documentation_fragment:
  - kubernetes.core.k8s_auth_options
attributes:
  check_mode:
    support: full
    description: In check mode the change is computed but not written.
  diff_mode:
    support: full
    description: Shows the old and new C(status.gateway).
requirements:
  - kubernetes >= 24.2.0
"""

EXAMPLES = r"""
- name: Publish the gateway's address on the ServingStack.
  modelplane.serving.servingstack_status_update:
    name: west-gke-stack
    namespace: platform
    status: "{{ lookup('modelplane.serving.servingstack_status', kubeconfig=target_kubeconfig) }}"
"""

RETURN = r"""
gateway:
  description: C(status.gateway) after the update.
  returned: always
  type: dict
"""

import copy

from ansible.module_utils.basic import AnsibleModule
from ansible_collections.kubernetes.core.plugins.module_utils.args_common import AUTH_ARG_SPEC
from ansible_collections.kubernetes.core.plugins.module_utils.k8s.core import AnsibleK8SModule

API_VERSION = "infrastructure.modelplane.ai/v1alpha1"
KIND = "ServingStack"


def gateway_patch(current: dict, wanted: dict) -> dict:
    """A JSON merge patch turning ``current`` status.gateway into ``wanted`` (removed keys become null)."""
    patch: dict = {key: None for key in current if key not in wanted}
    patch.update({key: value for key, value in wanted.items() if current.get(key) != value})
    return patch


def main() -> None:
    options = copy.deepcopy(AUTH_ARG_SPEC)
    options.update(
        name={"type": "str", "required": True},
        namespace={"type": "str", "required": True},
        status={"type": "dict", "required": True},
    )
    module = AnsibleK8SModule(module_class=AnsibleModule, argument_spec=options, supports_check_mode=True)
    from ansible_collections.kubernetes.core.plugins.module_utils.k8s.client import get_api_client

    name, namespace = module.params["name"], module.params["namespace"]
    wanted = dict((module.params["status"] or {}).get("gateway") or {})
    where = f"ServingStack {namespace}/{name}"
    try:
        client = get_api_client(module=module)
        resource = client.resource(KIND, API_VERSION)
        found = client.get(resource, name=name, namespace=namespace).to_dict()
    except Exception as error:  # the message names the object, never credentials
        module.fail_json(msg=f"cannot read {where}: {error}")
    current = dict((found.get("status") or {}).get("gateway") or {})
    patch = gateway_patch(current, wanted)
    result = {"changed": bool(patch), "gateway": wanted}
    if module._diff:
        result["diff"] = {"before": {"gateway": current}, "after": {"gateway": wanted}}
    if patch and not module.check_mode:
        try:
            resource.status.patch(body={"status": {"gateway": patch}}, name=name, namespace=namespace,
                                  content_type="application/merge-patch+json")
        except Exception as error:
            module.fail_json(msg=f"cannot write the status of {where}: {error}")
    module.exit_json(**result)


if __name__ == "__main__":
    main()
