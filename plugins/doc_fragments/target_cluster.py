# Copyright 2026 The modelplane.serving authors
# Apache License 2.0 (see LICENSE)
"""Options of the plugins that read the target cluster on the controller."""

from __future__ import annotations


class ModuleDocFragment:
    DOCUMENTATION = r"""
options:
  kubeconfig:
    description:
      - Path of the target cluster's kubeconfig.
      - Empty uses C(K8S_AUTH_KUBECONFIG), then C(KUBECONFIG), then C(~/.kube/config), as the
        C(kubernetes.core) modules do.
      - Lookups run on the controller, so a task's C(environment) does not reach them.
    type: str
    default: ""
  context:
    description:
      - Kubeconfig context to use. Empty uses the kubeconfig's current context; C(K8S_AUTH_CONTEXT) only when
        O(kubeconfig) is empty too, since it names a context of the environment's kubeconfig.
    type: str
    default: ""
requirements:
  - kubernetes (Python client)
notes:
  - TLS verification follows the kubeconfig; it is never turned off here.
"""
