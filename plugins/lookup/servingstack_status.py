# Copyright 2026 The modelplane.serving authors
# Apache License 2.0 (see LICENSE)
"""Lookup plugin: a ServingStack's status.gateway, read from the target cluster."""

from __future__ import annotations

DOCUMENTATION = r"""
name: servingstack_status
author: Modelplane engineers (@modelplaneai)
short_description: Read a serving stack's gateway address and CA certificate
version_added: 0.1.0
description:
  - Reads the inference Gateway's first status address and, when the gateway has a hostname,
    the PEM certificate of the CA that signed its serving certificate, from the target cluster.
  - Returns the ServingStack C(status) shape (a C(gateway) mapping with C(address) and
    C(caCertificate)), leaving out what is not known yet. While the gateway has no address, C(pending) says
    why, from the Gateway's C(Programmed) condition and the LoadBalancer Services Envoy Gateway made for it
    (labelled with the Gateway, in any namespace; read only then).
  - The CA comes from the ConfigMap trust-manager publishes (key C(ca.crt)); before that exists,
    from the CA Secret's C(ca.crt). Only CERTIFICATE blocks are returned, never a key.
  - Like every lookup it runs on the controller, so the cluster is given by O(kubeconfig), not by
    a task's C(environment).
  - The object names default to the ones the C(envoy_gateway) and C(trust_manager) roles use by
    default; the C(servingstack) role (and so C(playbooks/status.yml)) passes the roles' settings
    instead, so a renamed or moved Gateway is still found.
options:
  hostname:
    description:
      - The spec's C(gateway.hostname). With O(ca=auto) the CA certificate is only read when it is
        set, since without a hostname the gateway serves plain HTTP and has no CA.
    type: str
    default: ""
  ca:
    description:
      - When to read the CA certificate. C(auto) reads it when O(hostname) is set; C(always) when the
        hostname is not known (for example without a spec); C(never) skips it.
    type: str
    choices: [auto, always, never]
    default: auto
  gateway_name:
    description: Name of the Gateway (the C(envoy_gateway) role's C(envoy_gateway_gateway_name)).
    type: str
    default: inference-gateway
  gateway_namespace:
    description:
      - Namespace of the Gateway (the C(envoy_gateway) role's C(envoy_gateway_gateway_namespace)), where
        Modelplane's HTTPRoutes attach.
    type: str
    default: modelplane-system
  ca_name:
    description:
      - Name of both the CA Secret and the ConfigMap trust-manager publishes it to (the C(envoy_gateway)
        role's C(envoy_gateway_ca_name)).
    type: str
    default: mp-gateway-ca
  ca_configmap_namespace:
    description: Namespace of the published CA ConfigMap (C(trust_manager_target_namespace)).
    type: str
    default: modelplane-system
  ca_secret_namespace:
    description: Namespace of the CA Secret (the trust namespace, C(envoy_gateway_ca_namespace)).
    type: str
    default: cert-manager
extends_documentation_fragment:
  - modelplane.serving.target_cluster
"""

EXAMPLES = r"""
- name: Show where the gateway is reached.
  ansible.builtin.debug:
    msg: "{{ lookup('modelplane.serving.servingstack_status', kubeconfig='/tmp/target.kubeconfig') }}"

- name: Include the gateway's CA certificate.
  ansible.builtin.set_fact:
    stack_status: >-
      {{ lookup('modelplane.serving.servingstack_status', kubeconfig=target_kubeconfig,
                hostname='west.inference.example.com') }}
"""

RETURN = r"""
_raw:
  description: One ServingStack status dict.
  type: list
  elements: dict
  contains:
    gateway:
      description: Status of the inference gateway (absent when nothing is known yet).
      type: dict
      contains:
        address:
          description: The Gateway's first status address, once the load balancer assigned one.
          type: str
        caCertificate:
          description: PEM certificate of the CA that signed the gateway's serving certificate.
          type: str
    pending:
      description:
        - Why the gateway has no address yet, while it has none. Not a status field; the
          M(modelplane.serving.servingstack_status_update) module writes it in the C(Ready) condition's message.
      type: str
      sample: "the LoadBalancer Service envoy-gateway-system/envoy-x of the Gateway has no ingress address: ..."
"""

import contextlib
from typing import Any

from ansible.errors import AnsibleLookupError
from ansible.plugins.lookup import LookupBase
from ansible_collections.modelplane.serving.plugins.module_utils.servingstack import kubeclient, status


def _ref(api_version: str, kind: str, name: str, namespace: str) -> dict[str, Any]:
    return {"apiVersion": api_version, "kind": kind, "metadata": {"name": name, "namespace": namespace}}


class LookupModule(LookupBase):
    def run(self, terms: list[Any], variables: dict[str, Any] | None = None, **kwargs: Any) -> list[Any]:
        self.set_options(var_options=variables, direct=kwargs)
        options = self.get_options()
        name, namespace, ca_name = options["gateway_name"], options["gateway_namespace"], options["ca_name"]
        try:
            client = kubeclient.connect(options["kubeconfig"], options["context"])
            gateway = kubeclient.read(client, _ref("gateway.networking.k8s.io/v1", "Gateway", name, namespace))
            address, services, ca = status.gateway_address(gateway), [], None
            if address is None and gateway is not None:
                # Only to say why the address is pending: a caller who may not list Services still gets the status.
                with contextlib.suppress(kubeclient.KubeReadError):
                    services = kubeclient.read(client, {"apiVersion": "v1", "kind": "Service", "label_selector": (
                        f"gateway.envoyproxy.io/owning-gateway-name={name},"
                        f"gateway.envoyproxy.io/owning-gateway-namespace={namespace}")})
            if options["ca"] == "always" or (options["ca"] == "auto" and options["hostname"]):
                ca = status.ca_certificate(kubeclient.read(client, _ref(
                    "v1", "ConfigMap", ca_name, options["ca_configmap_namespace"])))
                if ca is None:
                    ca = status.ca_certificate(kubeclient.read(client, _ref(
                        "v1", "Secret", ca_name, options["ca_secret_namespace"])), encoded=True)
        except kubeclient.KubeReadError as error:
            raise AnsibleLookupError(f"servingstack_status: {error}") from None
        known = {key: value for key, value in (("address", address), ("caCertificate", ca)) if value}
        found = {"gateway": known} if known else {}
        return [found if address else {**found, "pending": status.address_pending(gateway, services)}]
