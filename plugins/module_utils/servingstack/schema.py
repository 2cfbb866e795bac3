# Copyright 2026 The modelplane.serving authors
# Apache License 2.0 (see LICENSE)
"""The ServingStack schema: every field, bound, enum, default and description of the reference.

One Python structure serves two readers:

* ``spec.py`` walks it to validate and default a manifest (reporting all problems at once);
* ``tools/render_crd.py`` (a build-time tool) renders it as the CRD's ``openAPIV3Schema``
  (``crds/servingstacks.infrastructure.modelplane.ai.yaml`` is that rendering, and a unit test keeps the file and
  this structure equal).

Keys starting with ``_`` are for the validator only and are dropped from the CRD:
``_rule`` explains a ``pattern`` in words, ``_secret`` marks a value that messages must never quote,
``_check`` names a check the validator runs in code (``pem``: PEM CERTIFICATE blocks),
``_pin`` marks a version pin whose semantic-version rule depends on the stack and
``_empty_is_default`` marks a field whose empty value ("" or []) means "take the default".
"""

from __future__ import annotations

from ansible_collections.modelplane.serving.plugins.module_utils.servingstack.versions import (
    SEMVER_PATTERN,
    SEMVER_RULE,
)

GROUP = "infrastructure.modelplane.ai"
VERSION = "v1alpha1"
API_VERSION = f"{GROUP}/{VERSION}"
KIND = "ServingStack"
PLURAL = "servingstacks"
SINGULAR = "servingstack"
SHORT_NAMES = ["ss"]

STANDARD = "Standard"
DYNAMO = "Dynamo"
KUBECONFIG = "Kubeconfig"
CLOUD_IDENTITY_TYPES = ("GoogleApplicationCredentials", "AWSWebIdentityCredentials", "NebiusServiceAccountCredentials")
SECRET_TYPES = (KUBECONFIG, *CLOUD_IDENTITY_TYPES)

# Kubernetes object names (RFC 1123 subdomain) and namespaces (RFC 1123 label).
DNS1123_SUBDOMAIN = r"^[a-z0-9]([-a-z0-9]*[a-z0-9])?(\.[a-z0-9]([-a-z0-9]*[a-z0-9])?)*$"
DNS1123_SUBDOMAIN_RULE = (
    "a DNS-1123 subdomain: lowercase letters, digits, '-' and '.', starting and ending with a letter or digit"
)
DNS1123_LABEL = r"^[a-z0-9]([-a-z0-9]{0,61}[a-z0-9])?$"
DNS1123_LABEL_RULE = (
    "a DNS-1123 label: at most 63 lowercase letters, digits and '-', starting and ending with a letter or digit"
)
# Gateway API v1.5.1 SectionName (Gateway spec.listeners[].name) and Hostname (spec.listeners[].hostname).
SECTION_NAME = r"^[a-z0-9]([-a-z0-9]*[a-z0-9])?(\.[a-z0-9]([-a-z0-9]*[a-z0-9])?)*$"
SECTION_NAME_RULE = (
    "a Gateway API SectionName: lowercase letters, digits, '-' and '.', starting and ending with a letter or digit"
)
HOSTNAME = r"^(\*\.)?[a-z0-9]([-a-z0-9]*[a-z0-9])?(\.[a-z0-9]([-a-z0-9]*[a-z0-9])?)*$"
HOSTNAME_RULE = (
    "a Gateway API Hostname: a lowercase RFC 1123 DNS name such as gw.example.com, optionally with a leading "
    "wildcard label (*.example.com); no port, no trailing dot, no uppercase"
)
# Keys of a Secret's data map.
SECRET_KEY = r"^[-._a-zA-Z0-9]+$"
SECRET_KEY_RULE = "a Secret data key: letters, digits, '-', '_' and '.'"
# Empty means the default (/): the reference gives no minimum length.
ABSOLUTE_PATH = r"^(/|$)"
ABSOLUTE_PATH_RULE = "an absolute host path starting with / (or empty for the default /)"

DEFAULT_LISTENERS = [{"name": "http", "port": 80, "protocol": "HTTP"}]
# The HTTPS listener the envoy_gateway role adds to the Gateway next to gateway.hostname
# (roles/envoy_gateway/templates/gateway.yaml.j2, named and numbered by envoy_gateway_https_listener
# and envoy_gateway_https_port in roles/envoy_gateway/defaults/main.yml): no spec listener may take either.
HTTPS_LISTENER_NAME = "https"
HTTPS_LISTENER_PORT = 443
# The envoy_gateway role stores each client CA in a ConfigMap named mp-client-ca-<InferenceGateway name>
# (envoy_gateway_client_ca_prefix in roles/envoy_gateway/vars/main.yml). A ConfigMap name is a DNS-1123
# subdomain of at most 253 characters; the prefix is a valid start of one, so only the length is left.
CLIENT_CA_CONFIGMAP_PREFIX = "mp-client-ca-"
CONFIGMAP_NAME_MAX = 253
CLIENT_CA_NAME_MAX = CONFIGMAP_NAME_MAX - len(CLIENT_CA_CONFIGMAP_PREFIX)

# Fields Crossplane adds to a composite resource's spec (XR). A live ServingStack that is an XR
# carries them; they are Crossplane's, not the stack's, so they are ignored on input, never refused.
# v2 XRs nest them under spec.crossplane; legacy (v1-style) XRs and claims have them at the top.
CROSSPLANE_SPEC_FIELDS = (
    "crossplane",
    "compositionRef",
    "compositionSelector",
    "compositionRevisionRef",
    "compositionRevisionSelector",
    "compositionUpdatePolicy",
    "compositeDeletePolicy",
    "resourceRef",
    "resourceRefs",
    "writeConnectionSecretToRef",
    "publishConnectionDetailsTo",
    "claimRef",
    "environmentConfigRefs",
)


def _pin(description: str, default: str, *, conditional: bool) -> dict:
    node: dict = {"type": "string", "minLength": 1, "maxLength": 32, "default": default, "description": description}
    if conditional:
        # Checked in code, only when the pin belongs to the chosen stack.
        node["_pin"] = True
    else:
        node["pattern"] = SEMVER_PATTERN
        node["_rule"] = SEMVER_RULE
    return node


SPEC: dict = {
    "type": "object",
    "description": "ServingStackSpec defines the desired state of ServingStack.",
    "required": ["secrets"],
    "properties": {
        "dynamo": {
            "type": "object",
            "default": {},
            "description": "Version pins for Dynamo-stack components. Ignored when stack is Standard.",
            "properties": {
                "grove": _pin(
                    "Grove chart version. Grove gang-schedules a multi-node engine as a PodCliqueSet when stack is "
                    "Dynamo. Pinned at v0.1.0-alpha.12-rc2 or later: earlier releases append Grove's own env vars "
                    "after template env instead of prepending them (grove#753), which blocks Modelplane from "
                    "aliasing MODELPLANE_LEADER_ADDRESS to them.",
                    "v0.1.0-alpha.12-rc2",
                    conditional=True,
                ),
                "kaiScheduler": _pin(
                    "KAI Scheduler chart version. Grove hands a PodCliqueSet's gang-scheduling to KAI, which binds "
                    "each gang all-or-nothing against a Queue.",
                    "v0.16.8",
                    conditional=True,
                ),
                "modelExpress": _pin(
                    "ModelExpress server image tag. The metadata-only server coordinates peer-to-peer weight "
                    "transfer between engine pods that opt into --load-format modelexpress.",
                    "0.4.1",
                    conditional=True,
                ),
            },
        },
        "gateway": {
            "type": "object",
            "default": {},
            "description": "Configuration for the cluster's inference traffic gateway.",
            "x-kubernetes-validations": [
                {
                    # The role adds its own HTTPS listener (https, 443) next to a hostname.
                    "rule": f"!has(self.hostname) || !has(self.listeners) || self.listeners.all(l, "
                    f"l.name != '{HTTPS_LISTENER_NAME}' && l.port != {HTTPS_LISTENER_PORT})",
                    "message": f"with a hostname the gateway adds its own HTTPS listener named {HTTPS_LISTENER_NAME} "
                    f"on port {HTTPS_LISTENER_PORT}; no listener may take that name or port",
                },
            ],
            "properties": {
                "className": {
                    "type": "string",
                    "minLength": 1,
                    "maxLength": 63,
                    "default": "envoy",
                    "pattern": DNS1123_SUBDOMAIN,
                    "_rule": DNS1123_SUBDOMAIN_RULE + " (a GatewayClass name)",
                    "description": "GatewayClass name. Override if the cluster already has a GatewayClass named "
                    "envoy.",
                },
                "clientCAs": {
                    "type": "array",
                    "maxItems": 32,
                    "x-kubernetes-list-type": "map",
                    "x-kubernetes-list-map-keys": ["name"],
                    "x-kubernetes-validations": [
                        {
                            "rule": f"self.all(ca, size(ca.name) <= {CLIENT_CA_NAME_MAX})",
                            "message": f"an InferenceGateway name is at most {CLIENT_CA_NAME_MAX} characters: its CA "
                            f"is stored in a ConfigMap named {CLIENT_CA_CONFIGMAP_PREFIX}<name>, and a ConfigMap name "
                            f"is at most {CONFIGMAP_NAME_MAX}",
                        },
                    ],
                    "description": "CA certificates of the InferenceGateways allowed to reach this cluster's "
                    "gateway, one per InferenceGateway. Names are unique.",
                    "items": {
                        "type": "object",
                        "required": ["certificate", "name"],
                        "properties": {
                            "certificate": {
                                "type": "string",
                                "minLength": 1,
                                "maxLength": 16384,
                                "_check": "pem",
                                "_secret": True,
                                "description": "The CA certificate, PEM encoded.",
                            },
                            "name": {
                                "type": "string",
                                "minLength": 1,
                                "maxLength": 253,
                                "pattern": DNS1123_SUBDOMAIN,
                                "_rule": DNS1123_SUBDOMAIN_RULE + " (an InferenceGateway name)",
                                "description": "The InferenceGateway this CA belongs to.",
                            },
                        },
                    },
                },
                "hostname": {
                    "type": "string",
                    "minLength": 1,
                    "maxLength": 253,
                    "pattern": HOSTNAME,
                    "_rule": HOSTNAME_RULE,
                    "_check": "hostname",
                    "description": "The name this cluster's gateway is reached by, projected from the "
                    "InferenceCluster. The gateway serves a certificate for it, so an InferenceGateway can "
                    "originate TLS and know it reached the right cluster. Without it the gateway serves plain "
                    "HTTP and carries no traffic, since an InferenceGateway addresses a cluster by name.",
                },
                "listeners": {
                    "type": "array",
                    "maxItems": 8,
                    "default": DEFAULT_LISTENERS,
                    "_empty_is_default": True,
                    "x-kubernetes-list-type": "map",
                    "x-kubernetes-list-map-keys": ["name"],
                    "x-kubernetes-validations": [
                        {
                            # Gateway API: listeners sharing a port conflict (same protocol: indistinct;
                            # TCP with HTTP on one port: all conflicted), so a port appears once.
                            "rule": "self.all(l1, self.exists_one(l2, l1.port == l2.port))",
                            "message": "each listener port must be unique: Gateway API treats listeners that share "
                            "a port as conflicted",
                        }
                    ],
                    "description": "Listeners of the inference Gateway. Defaults to one HTTP listener named http "
                    "on port 80 (also when empty).",
                    "items": {
                        "type": "object",
                        "required": ["name", "port", "protocol"],
                        "properties": {
                            "name": {
                                "type": "string",
                                "minLength": 1,
                                "maxLength": 63,
                                "pattern": SECTION_NAME,
                                "_rule": SECTION_NAME_RULE,
                                "description": "Unique listener name.",
                            },
                            "port": {
                                "type": "integer",
                                "format": "int32",
                                "minimum": 1,
                                "maximum": 65535,
                                "description": "Port number for this listener.",
                            },
                            "protocol": {
                                "type": "string",
                                "enum": ["HTTP", "TCP"],
                                "description": "Protocol for this listener.",
                            },
                        },
                    },
                },
            },
        },
        "nvidiaDriverRoot": {
            "type": "string",
            "maxLength": 512,
            "default": "/",
            "_empty_is_default": True,
            "pattern": ABSOLUTE_PATH,
            "_rule": ABSOLUTE_PATH_RULE,
            "description": "Host path where the NVIDIA driver is installed, passed to the DRA driver as "
            "nvidiaDriverRoot. Defaults to / (the upstream default), which suits EKS and self-managed clusters. Set "
            "it for platforms that install the driver elsewhere - GKE uses /home/kubernetes/bin/nvidia. A "
            "non-default value also makes the serving stack compose a ResourceQuota permitting the DRA driver's "
            "system-critical pods, which GKE requires. The cluster composition sets this; the serving stack never "
            "inspects its own cloud.",
        },
        "secrets": {
            "type": "array",
            "minItems": 1,
            "maxItems": 8,
            "x-kubernetes-validations": [
                {
                    "rule": "self.filter(s, s.type == 'Kubeconfig').size() == 1",
                    "message": "exactly one secret must have type Kubeconfig",
                },
                {
                    "rule": "self.filter(s, s.type != 'Kubeconfig').size() <= 1",
                    "message": "at most one cloud identity secret is allowed: several are ambiguous",
                },
            ],
            "description": "Credentials the serving stack uses to reach its cluster: exactly one Kubeconfig and "
            "at most one cloud identity.",
            "items": {
                "type": "object",
                "required": ["key", "name", "type"],
                "properties": {
                    "key": {
                        "type": "string",
                        "maxLength": 253,
                        "pattern": SECRET_KEY,
                        "_rule": SECRET_KEY_RULE,
                        "description": "Key within the Secret that holds the credential data.",
                    },
                    "name": {
                        "type": "string",
                        "maxLength": 253,
                        "pattern": DNS1123_SUBDOMAIN,
                        "_rule": DNS1123_SUBDOMAIN_RULE + " (a Secret name)",
                        "description": "Name of the Secret.",
                    },
                    "namespace": {
                        "type": "string",
                        "maxLength": 253,
                        "pattern": DNS1123_LABEL,
                        "_rule": DNS1123_LABEL_RULE + " (a namespace name)",
                        "description": "Namespace of the Secret, when it isn't this ServingStack's namespace. Set on "
                        "cloud identity entries whose credential is the Secret the cloud provider's ProviderConfig "
                        "references. Defaults to the ServingStack's namespace.",
                    },
                    "type": {
                        "type": "string",
                        "enum": list(SECRET_TYPES),
                        "description": "The type of credential this secret contains. Kubeconfig is required. Any "
                        "other value is a cloud identity type; when present, the serving stack authenticates to "
                        "the cluster as that identity instead of using the kubeconfig's embedded credentials.",
                    },
                },
            },
        },
        "stack": {
            "type": "string",
            "enum": [STANDARD, DYNAMO],
            "default": STANDARD,
            "description": "Which serving stack this installs. Standard (the default) is the Modelplane-composed "
            "serving layer: a Deployment or LeaderWorkerSet, Gateway API, and the endpoint picker. Dynamo swaps in "
            "NVIDIA's components: Grove with the KAI Scheduler for multi-node gang scheduling, and a shared "
            "ModelExpress server for weight distribution. Propagated from the InferenceCluster.",
        },
        "standard": {
            "type": "object",
            "default": {},
            "description": "Version pins for Standard-stack components. Ignored when stack is Dynamo.",
            "properties": {
                "leaderWorkerSet": _pin("LeaderWorkerSet chart version.", "v0.8.0", conditional=True),
            },
        },
        "versions": {
            "type": "object",
            "default": {},
            "description": "Version pins for each component. Defaults are the latest tested combination. Override "
            "individual versions to upgrade components independently.",
            "properties": {
                "certManager": _pin("cert-manager chart version.", "v1.21.1", conditional=False),
                "envoyGateway": _pin(
                    "Envoy Gateway chart version. Must support InferencePool backend resources (the "
                    "disaggregated-serving routing path), which requires v1.8.x or newer; older releases lack the "
                    "Gateway API CRDs (ListenerSet) the AI Gateway needs. Envoy AI Gateway v1.1.x is tested against "
                    "Envoy Gateway v1.8.x with Gateway API v1.5.x, so v1.9.x is out of range until the AI Gateway "
                    "release that pairs with it.",
                    "v1.8.4",
                    conditional=False,
                ),
                "nodeFeatureDiscovery": _pin(
                    "Node Feature Discovery chart version. NFD labels GPU nodes so the NVIDIA DRA driver targets its "
                    "kubelet plugin to them.",
                    "0.18.3",
                    conditional=False,
                ),
                "nvidiaDraDriver": _pin(
                    "NVIDIA DRA driver chart version. Publishes GPUs as DRA ResourceSlices and the gpu.nvidia.com "
                    "DeviceClass that ModelReplica ResourceClaims bind through.",
                    "0.4.0",
                    conditional=False,
                ),
                "prometheus": _pin("kube-prometheus-stack chart version.", "72.6.2", conditional=False),
                "trustManager": _pin(
                    "trust-manager chart version. trust-manager distributes the cluster gateway's CA certificate "
                    "without its private key, which is what lets the control plane read the certificate to hand to "
                    "a fleet gateway.",
                    "v0.24.0",
                    conditional=False,
                ),
            },
        },
    },
}

STATUS: dict = {
    "type": "object",
    "description": "ServingStackStatus is the observed state of ServingStack.",
    "properties": {
        "gateway": {
            "type": "object",
            "description": "Status of the cluster's inference gateway.",
            "properties": {
                "address": {
                    "type": "string",
                    "maxLength": 256,
                    "description": "The gateway's external address, once assigned by the cloud load balancer.",
                },
                "caCertificate": {
                    "type": "string",
                    "maxLength": 16384,
                    "_secret": True,
                    "description": "PEM certificate of the CA that signed this gateway's serving certificate. An "
                    "InferenceGateway validates the gateway against it, so it reaches the cluster it meant to and "
                    "not whatever answers on that address.",
                },
            },
        },
        "observedGeneration": {
            "type": "integer",
            "format": "int64",
            "minimum": 0,
            "description": "The metadata.generation of the ServingStack the last converge read, so a status older "
            "than the spec is told apart.",
        },
        "conditions": {
            "type": "array",
            "maxItems": 8,
            "description": "Conditions of the last converge: Ready (every component converged and the gateway has "
            "an address) and Synced (every component converged). When False, the reason names the failing component "
            "(for example CertManagerFailed) or GatewayAddressPending, and the message says why.",
            "x-kubernetes-list-type": "map",
            "x-kubernetes-list-map-keys": ["type"],
            "items": {
                "type": "object",
                "required": ["type", "status", "lastTransitionTime", "reason", "message"],
                "properties": {
                    "type": {
                        "type": "string",
                        "maxLength": 316,
                        "pattern": r"^([a-z0-9]([-a-z0-9]*[a-z0-9])?(\.[a-z0-9]([-a-z0-9]*[a-z0-9])?)*/)?"
                        r"(([A-Za-z0-9][-A-Za-z0-9_.]*)?[A-Za-z0-9])$",
                        "description": "Type of the condition: Ready or Synced.",
                    },
                    "status": {
                        "type": "string",
                        "enum": ["True", "False", "Unknown"],
                        "description": "Status of the condition: True, False or Unknown.",
                    },
                    "observedGeneration": {
                        "type": "integer",
                        "format": "int64",
                        "minimum": 0,
                        "description": "The metadata.generation the condition was set for.",
                    },
                    "lastTransitionTime": {
                        "type": "string",
                        "format": "date-time",
                        "description": "When the condition last changed from one status to another.",
                    },
                    "reason": {
                        "type": "string",
                        "minLength": 1,
                        "maxLength": 1024,
                        "pattern": "^[A-Za-z]([A-Za-z0-9_,:]*[A-Za-z0-9_])?$",
                        "description": "Why the condition has its status, in CamelCase (for example Converged, "
                        "Available, GatewayAddressPending, CertManagerFailed).",
                    },
                    "message": {
                        "type": "string",
                        "maxLength": 32768,
                        "description": "What happened, for people: the failed components and their errors, or why "
                        "the gateway has no address yet.",
                    },
                },
            },
        },
        "components": {
            "type": "array",
            "maxItems": 32,
            "description": "Each component of the stack, in install order, with the version installed and whether "
            "its last converge succeeded.",
            "x-kubernetes-list-type": "map",
            "x-kubernetes-list-map-keys": ["name"],
            "items": {
                "type": "object",
                "required": ["name", "ready"],
                "properties": {
                    "name": {
                        "type": "string",
                        "minLength": 1,
                        "maxLength": 63,
                        "description": "Name of the component, as in the install plan (for example cert_manager).",
                    },
                    "version": {
                        "type": "string",
                        "maxLength": 64,
                        "description": "The component's version the last successful converge installed.",
                    },
                    "ready": {
                        "type": "boolean",
                        "description": "Whether the component converged in the last run.",
                    },
                },
            },
        },
    },
}

# metadata is validated here (the API server does it for a live object); the CRD leaves it to the API server.
METADATA: dict = {
    "type": "object",
    "required": ["name"],
    "properties": {
        "name": {
            "type": "string",
            "minLength": 1,
            "maxLength": 253,
            "pattern": DNS1123_SUBDOMAIN,
            "_rule": DNS1123_SUBDOMAIN_RULE + " (an object name)",
        },
        "namespace": {
            "type": "string",
            "minLength": 1,
            "maxLength": 63,
            "pattern": DNS1123_LABEL,
            "_rule": DNS1123_LABEL_RULE + " (a namespace name)",
        },
        "labels": {"type": "object", "additionalProperties": {"type": "string"}},
        "annotations": {"type": "object", "additionalProperties": {"type": "string"}},
        # Set by the API server on a live object; accepted as they come.
        **{
            key: {}
            for key in (
                "uid",
                "resourceVersion",
                "generation",
                "creationTimestamp",
                "deletionTimestamp",
                "deletionGracePeriodSeconds",
                "finalizers",
                "ownerReferences",
                "managedFields",
                "selfLink",
                "generateName",
            )
        },
    },
}

ROOT_FIELDS = ("apiVersion", "kind", "metadata", "spec", "status")
