# Copyright 2026 The modelplane.serving authors
# Apache License 2.0 (see LICENSE)
"""The ServingStack CRD, crds/servingstacks.infrastructure.modelplane.ai.yaml byte for byte (``make crd`` copies it).

An Ansible module is shipped to its host with its module_utils and nothing else, so the module reads the CRD here.
"""

TEXT = r"""# The ServingStack CustomResourceDefinition (infrastructure.modelplane.ai/v1alpha1), edited by hand: the
# collection's one contract. The servingstack_spec module checks a manifest against this very schema, applies its
# defaults and evaluates its CEL rules (x-kubernetes-validations) as the API server does a live object; the few
# rules CEL cannot state are listed in plugins/module_utils/servingstack/spec.py (PYTHON_ONLY_RULES).
# - A rule's message on a scalar field follows the value: the module prints `<path>: "West" is not a ...`.
# - Regular expressions use [.] for a dot and no backslash at all, so YAML, CEL and RE2 read them alike. A long rule
#   is a double-quoted string continued with a trailing backslash (joined with no space).
# - The module ships with a copy of this file (plugins/module_utils/servingstack/crd_yaml.py): run `make crd` after
#   an edit (tests/unit/test_crd.py fails while the two differ).
---
apiVersion: apiextensions.k8s.io/v1
kind: CustomResourceDefinition
metadata:
  name: servingstacks.infrastructure.modelplane.ai
spec:
  group: infrastructure.modelplane.ai
  names:
    kind: ServingStack
    listKind: ServingStackList
    plural: servingstacks
    singular: servingstack
    shortNames:
      - ss
    categories:
      - modelplane
  scope: Namespaced
  versions:
    - name: v1alpha1
      served: true
      storage: true
      subresources:
        status: {}
      additionalPrinterColumns:
        - name: Stack
          type: string
          jsonPath: .spec.stack
        - name: Ready
          type: string
          jsonPath: .status.conditions[?(@.type=="Ready")].status
        - name: Reason
          type: string
          jsonPath: .status.conditions[?(@.type=="Ready")].reason
          priority: 1
        - name: Address
          type: string
          jsonPath: .status.gateway.address
        - name: Age
          type: date
          jsonPath: .metadata.creationTimestamp
      schema:
        openAPIV3Schema:
          type: object
          description: >-
            ServingStack installs the serving substrate on a Kubernetes cluster: LeaderWorkerSet (Standard) or Grove
            and the KAI Scheduler (Dynamo), plus Gateway API, cert-manager, and Prometheus.
          required:
            - spec
          properties:
            apiVersion:
              type: string
              description: APIVersion defines the versioned schema of this representation of an object.
            kind:
              type: string
              description: Kind is a string value representing the REST resource this object represents.
            metadata:
              type: object
            spec:
              type: object
              description: ServingStackSpec defines the desired state of ServingStack.
              required:
                - secrets
              # The pins of the stack in use are semantic versions; the other stack's are ignored, as the reference
              # says, so only their type and length are checked. The pattern is versions.certManager's. The has()
              # guards are for an object the API server does not default (one of another kind) but still checks.
              x-kubernetes-validations:
                - rule: "!has(self.stack) || self.stack != 'Standard' || !has(self.standard) || \
                    !has(self.standard.leaderWorkerSet) || self.standard.leaderWorkerSet.matches(\
                    '^v?(0|[1-9][0-9]*)[.](0|[1-9][0-9]*)[.](0|[1-9][0-9]*)\
                    (-(0|[1-9][0-9]*|[0-9]*[a-zA-Z-][0-9a-zA-Z-]*)([.](0|[1-9][0-9]*|[0-9]*[a-zA-Z-][0-9a-zA-Z-]*))*)?\
                    ([+][0-9a-zA-Z-]+([.][0-9a-zA-Z-]+)*)?$')"
                  fieldPath: .standard.leaderWorkerSet
                  message: &semver-message >-
                    is not a semantic version such as v1.2.3, 1.2.3 or v0.1.0-alpha.12-rc2 (the leading v is optional)
                - rule: "!has(self.stack) || self.stack != 'Dynamo' || !has(self.dynamo) || \
                    !has(self.dynamo.grove) || self.dynamo.grove.matches(\
                    '^v?(0|[1-9][0-9]*)[.](0|[1-9][0-9]*)[.](0|[1-9][0-9]*)\
                    (-(0|[1-9][0-9]*|[0-9]*[a-zA-Z-][0-9a-zA-Z-]*)([.](0|[1-9][0-9]*|[0-9]*[a-zA-Z-][0-9a-zA-Z-]*))*)?\
                    ([+][0-9a-zA-Z-]+([.][0-9a-zA-Z-]+)*)?$')"
                  fieldPath: .dynamo.grove
                  message: *semver-message
                - rule: "!has(self.stack) || self.stack != 'Dynamo' || !has(self.dynamo) || \
                    !has(self.dynamo.kaiScheduler) || self.dynamo.kaiScheduler.matches(\
                    '^v?(0|[1-9][0-9]*)[.](0|[1-9][0-9]*)[.](0|[1-9][0-9]*)\
                    (-(0|[1-9][0-9]*|[0-9]*[a-zA-Z-][0-9a-zA-Z-]*)([.](0|[1-9][0-9]*|[0-9]*[a-zA-Z-][0-9a-zA-Z-]*))*)?\
                    ([+][0-9a-zA-Z-]+([.][0-9a-zA-Z-]+)*)?$')"
                  fieldPath: .dynamo.kaiScheduler
                  message: *semver-message
                - rule: "!has(self.stack) || self.stack != 'Dynamo' || !has(self.dynamo) || \
                    !has(self.dynamo.modelExpress) || self.dynamo.modelExpress.matches(\
                    '^v?(0|[1-9][0-9]*)[.](0|[1-9][0-9]*)[.](0|[1-9][0-9]*)\
                    (-(0|[1-9][0-9]*|[0-9]*[a-zA-Z-][0-9a-zA-Z-]*)([.](0|[1-9][0-9]*|[0-9]*[a-zA-Z-][0-9a-zA-Z-]*))*)?\
                    ([+][0-9a-zA-Z-]+([.][0-9a-zA-Z-]+)*)?$')"
                  fieldPath: .dynamo.modelExpress
                  message: *semver-message
              properties:
                dynamo:
                  type: object
                  default: {}
                  description: Version pins for Dynamo-stack components. Ignored when stack is Standard.
                  properties:
                    grove:
                      type: string
                      minLength: 1
                      maxLength: 32
                      default: v0.1.0-alpha.12-rc2
                      description: >-
                        Grove chart version. Grove gang-schedules a multi-node engine as a PodCliqueSet when stack is
                        Dynamo. Pinned at v0.1.0-alpha.12-rc2 or later: earlier releases append Grove's own env vars
                        after template env instead of prepending them (grove#753), which blocks Modelplane from
                        aliasing MODELPLANE_LEADER_ADDRESS to them.
                    kaiScheduler:
                      type: string
                      minLength: 1
                      maxLength: 32
                      default: v0.16.8
                      description: >-
                        KAI Scheduler chart version. Grove hands a PodCliqueSet's gang-scheduling to KAI, which binds
                        each gang all-or-nothing against a Queue.
                    modelExpress:
                      type: string
                      minLength: 1
                      maxLength: 32
                      default: 0.4.1
                      description: >-
                        ModelExpress server image tag. The metadata-only server coordinates peer-to-peer weight
                        transfer between engine pods that opt into --load-format modelexpress.
                gateway:
                  type: object
                  default: {}
                  description: Configuration for the cluster's inference traffic gateway.
                  # The envoy_gateway role adds its own HTTPS listener (https, port 443) next to a hostname
                  # (roles/envoy_gateway/defaults/main.yml: envoy_gateway_https_listener, envoy_gateway_https_port).
                  x-kubernetes-validations:
                    - rule: "!has(self.hostname) || !has(self.listeners) || \
                        self.listeners.all(l, l.name != 'https' && l.port != 443)"
                      fieldPath: .listeners
                      message: >-
                        has a listener named https or on port 443, the name and port of the HTTPS listener the
                        envoy_gateway role adds to the Gateway when spec.gateway.hostname is set; rename that listener
                        or move it to another port
                  properties:
                    className:
                      type: string
                      minLength: 1
                      maxLength: 63
                      default: envoy
                      description: GatewayClass name. Override if the cluster already has a GatewayClass named envoy.
                      x-kubernetes-validations:
                        - rule: self.matches('^[a-z0-9]([-a-z0-9]*[a-z0-9])?([.][a-z0-9]([-a-z0-9]*[a-z0-9])?)*$')
                          message: >-
                            is not a DNS-1123 subdomain (a GatewayClass name): lowercase letters, digits, '-' and
                            '.', starting and ending with a letter or digit
                    clientCAs:
                      type: array
                      maxItems: 32
                      x-kubernetes-list-type: map
                      x-kubernetes-list-map-keys:
                        - name
                      description: >-
                        CA certificates of the InferenceGateways allowed to reach this cluster's gateway, one per
                        InferenceGateway. Names are unique.
                      items:
                        type: object
                        required:
                          - certificate
                          - name
                        properties:
                          certificate:
                            type: string
                            minLength: 1
                            maxLength: 16384
                            description: The CA certificate, PEM encoded.
                            # The module also parses the certificates (PYTHON_ONLY_RULES); this rule keeps a pasted
                            # key out of a live object too.
                            x-kubernetes-validations:
                              - rule: "!self.matches('-----BEGIN [A-Z0-9 ]*PRIVATE KEY-----')"
                                message: >-
                                  contains a PEM PRIVATE KEY block: a private key was pasted here; only the CA
                                  certificate belongs in clientCAs, so remove the key and treat it as exposed
                          name:
                            type: string
                            minLength: 1
                            maxLength: 253
                            description: The InferenceGateway this CA belongs to.
                            # The envoy_gateway role stores each CA in a ConfigMap named mp-client-ca-<name>
                            # (envoy_gateway_client_ca_prefix), whose name is at most 253 characters.
                            x-kubernetes-validations:
                              - rule: self.matches('^[a-z0-9]([-a-z0-9]*[a-z0-9])?([.][a-z0-9]([-a-z0-9]*[a-z0-9])?)*$')
                                message: >-
                                  is not a DNS-1123 subdomain (an InferenceGateway name): lowercase letters, digits,
                                  '-' and '.', starting and ending with a letter or digit
                              - rule: size(self) <= 240
                                message: >-
                                  is longer than 240 characters, the most for a client CA: the envoy_gateway role
                                  stores it in a ConfigMap named mp-client-ca-<name>, and a ConfigMap name is a
                                  DNS-1123 subdomain of at most 253 characters
                    hostname:
                      type: string
                      minLength: 1
                      maxLength: 253
                      description: >-
                        The name this cluster's gateway is reached by, projected from the InferenceCluster. The
                        gateway serves a certificate for it, so an InferenceGateway can originate TLS and know it
                        reached the right cluster. Without it the gateway serves plain HTTP and carries no traffic,
                        since an InferenceGateway addresses a cluster by name.
                      # Gateway API v1.5.1's Hostname pattern, plus what its documentation says and the pattern
                      # does not: DNS labels of at most 63 characters, and no IP address.
                      x-kubernetes-validations:
                        - rule: "self.matches(\
                            '^([*][.])?[a-z0-9]([-a-z0-9]*[a-z0-9])?([.][a-z0-9]([-a-z0-9]*[a-z0-9])?)*$')"
                          message: >-
                            is not a Gateway API Hostname: a lowercase RFC 1123 DNS name such as gw.example.com,
                            optionally with a leading wildcard label (*.example.com); no port, no trailing dot, no
                            uppercase
                        - rule: "!self.matches('[^.]{64}')"
                          message: has a label longer than 63 characters; a DNS name's labels are 1-63 characters
                        - rule: "!self.matches('^(25[0-5]|2[0-4][0-9]|1[0-9][0-9]|[1-9]?[0-9])\
                            ([.](25[0-5]|2[0-4][0-9]|1[0-9][0-9]|[1-9]?[0-9])){3}$')"
                          message: is an IP address; a Gateway API Hostname must be a DNS name
                    listeners:
                      type: array
                      maxItems: 8
                      default:
                        - name: http
                          port: 80
                          protocol: HTTP
                      x-kubernetes-list-type: map
                      x-kubernetes-list-map-keys:
                        - name
                      # Gateway API: listeners sharing a port conflict (same protocol: indistinct; TCP with HTTP
                      # on one port: all conflicted).
                      x-kubernetes-validations:
                        - rule: self.all(l1, self.exists_one(l2, l1.port == l2.port))
                          message: >-
                            has two listeners on one port; each listener needs its own port, because Gateway API
                            treats listeners sharing a port as conflicted (same protocol: indistinct; TCP with HTTP:
                            every listener on the port is conflicted)
                      description: >-
                        Listeners of the inference Gateway. Defaults to one HTTP listener named http on port 80 (also
                        when empty).
                      items:
                        type: object
                        required:
                          - name
                          - port
                          - protocol
                        properties:
                          name:
                            type: string
                            minLength: 1
                            maxLength: 63
                            description: Unique listener name.
                            x-kubernetes-validations:
                              - rule: self.matches('^[a-z0-9]([-a-z0-9]*[a-z0-9])?([.][a-z0-9]([-a-z0-9]*[a-z0-9])?)*$')
                                message: >-
                                  is not a Gateway API SectionName: lowercase letters, digits, '-' and '.', starting
                                  and ending with a letter or digit
                          port:
                            type: integer
                            format: int32
                            minimum: 1
                            maximum: 65535
                            description: Port number for this listener.
                          protocol:
                            type: string
                            enum:
                              - HTTP
                              - TCP
                            description: Protocol for this listener.
                nvidiaDriverRoot:
                  type: string
                  maxLength: 512
                  default: /
                  description: >-
                    Host path where the NVIDIA driver is installed, passed to the DRA driver as nvidiaDriverRoot.
                    Defaults to / (the upstream default), which suits EKS and self-managed clusters. Set it for
                    platforms that install the driver elsewhere - GKE uses /home/kubernetes/bin/nvidia. A non-default
                    value also makes the serving stack compose a ResourceQuota permitting the DRA driver's
                    system-critical pods, which GKE requires. The cluster composition sets this; the serving stack
                    never inspects its own cloud.
                  x-kubernetes-validations:
                    - rule: self == '' || self.startsWith('/')
                      message: is not an absolute host path starting with / (or empty for the default /)
                secrets:
                  type: array
                  minItems: 1
                  maxItems: 8
                  x-kubernetes-validations:
                    - rule: self.exists(s, s.type == 'Kubeconfig')
                      message: has no Kubeconfig secret; exactly one secret must have type Kubeconfig
                    - rule: self.filter(s, s.type == 'Kubeconfig').size() <= 1
                      message: has more than one Kubeconfig secret; exactly one secret must have type Kubeconfig
                    - rule: self.filter(s, s.type != 'Kubeconfig').size() <= 1
                      message: >-
                        has more than one cloud identity secret; at most one is allowed, since several are ambiguous
                        about which identity the serving stack uses
                  description: >-
                    Credentials the serving stack uses to reach its cluster: exactly one Kubeconfig and at most one
                    cloud identity.
                  items:
                    type: object
                    required:
                      - key
                      - name
                      - type
                    properties:
                      key:
                        type: string
                        maxLength: 253
                        description: Key within the Secret that holds the credential data.
                        x-kubernetes-validations:
                          - rule: self.matches('^[-._a-zA-Z0-9]+$')
                            message: is not a Secret data key (letters, digits, '-', '_' and '.')
                      name:
                        type: string
                        maxLength: 253
                        description: Name of the Secret.
                        x-kubernetes-validations:
                          - rule: self.matches('^[a-z0-9]([-a-z0-9]*[a-z0-9])?([.][a-z0-9]([-a-z0-9]*[a-z0-9])?)*$')
                            message: >-
                              is not a DNS-1123 subdomain (a Secret name): lowercase letters, digits, '-' and '.',
                              starting and ending with a letter or digit
                      namespace:
                        type: string
                        maxLength: 253
                        description: >-
                          Namespace of the Secret, when it isn't this ServingStack's namespace. Set on cloud identity
                          entries whose credential is the Secret the cloud provider's ProviderConfig references.
                          Defaults to the ServingStack's namespace.
                        x-kubernetes-validations:
                          - rule: self.matches('^[a-z0-9]([-a-z0-9]{0,61}[a-z0-9])?$')
                            message: >-
                              is not a DNS-1123 label (a namespace name): at most 63 lowercase letters, digits and
                              '-', starting and ending with a letter or digit
                      type:
                        type: string
                        enum:
                          - Kubeconfig
                          - GoogleApplicationCredentials
                          - AWSWebIdentityCredentials
                          - NebiusServiceAccountCredentials
                        description: >-
                          The type of credential this secret contains. Kubeconfig is required. Any other value is a
                          cloud identity type; when present, the serving stack authenticates to the cluster as that
                          identity instead of using the kubeconfig's embedded credentials.
                stack:
                  type: string
                  enum:
                    - Standard
                    - Dynamo
                  default: Standard
                  description: >-
                    Which serving stack this installs. Standard (the default) is the Modelplane-composed serving
                    layer: a Deployment or LeaderWorkerSet, Gateway API, and the endpoint picker. Dynamo swaps in
                    NVIDIA's components: Grove with the KAI Scheduler for multi-node gang scheduling, and a shared
                    ModelExpress server for weight distribution. Propagated from the InferenceCluster.
                standard:
                  type: object
                  default: {}
                  description: Version pins for Standard-stack components. Ignored when stack is Dynamo.
                  properties:
                    leaderWorkerSet:
                      type: string
                      minLength: 1
                      maxLength: 32
                      default: v0.8.0
                      description: LeaderWorkerSet chart version.
                versions:
                  type: object
                  default: {}
                  description: >-
                    Version pins for each component. Defaults are the latest tested combination. Override individual
                    versions to upgrade components independently.
                  properties:
                    certManager:
                      type: string
                      minLength: 1
                      maxLength: 32
                      default: v1.21.1
                      description: cert-manager chart version.
                      x-kubernetes-validations:
                        - &semver
                          rule: "self.matches(\
                            '^v?(0|[1-9][0-9]*)[.](0|[1-9][0-9]*)[.](0|[1-9][0-9]*)\
                            (-(0|[1-9][0-9]*|[0-9]*[a-zA-Z-][0-9a-zA-Z-]*)\
                            ([.](0|[1-9][0-9]*|[0-9]*[a-zA-Z-][0-9a-zA-Z-]*))*)?\
                            ([+][0-9a-zA-Z-]+([.][0-9a-zA-Z-]+)*)?$')"
                          message: *semver-message
                    envoyGateway:
                      type: string
                      minLength: 1
                      maxLength: 32
                      default: v1.8.4
                      description: >-
                        Envoy Gateway chart version. Must support InferencePool backend resources (the
                        disaggregated-serving routing path), which requires v1.8.x or newer; older releases lack the
                        Gateway API CRDs (ListenerSet) the AI Gateway needs. Envoy AI Gateway v1.1.x is tested against
                        Envoy Gateway v1.8.x with Gateway API v1.5.x, so v1.9.x is out of range until the AI Gateway
                        release that pairs with it.
                      # v1.8.0 and every later v1.8.x in release order: v1.8.1-rc.1 is in, v1.8.0-rc.1 is not.
                      x-kubernetes-validations:
                        - *semver
                        - rule: self.matches('^v?1[.]8[.]([1-9]|0($|[+]))')
                          message: >-
                            is out of range: it must be a v1.8.x Envoy Gateway release, v1.8.0 or later: Envoy AI
                            Gateway v1.1.x is built on Envoy Gateway v1.8.1 and tested with v1.8.x and Gateway API
                            v1.5.x; older releases lack the Gateway API CRDs (ListenerSet) and InferencePool backend
                            support it needs, and v1.9.x is out of range until the AI Gateway release that pairs with it
                    nodeFeatureDiscovery:
                      type: string
                      minLength: 1
                      maxLength: 32
                      default: 0.18.3
                      description: >-
                        Node Feature Discovery chart version. NFD labels GPU nodes so the NVIDIA DRA driver targets
                        its kubelet plugin to them.
                      x-kubernetes-validations:
                        - *semver
                    nvidiaDraDriver:
                      type: string
                      minLength: 1
                      maxLength: 32
                      default: 0.4.0
                      description: >-
                        NVIDIA DRA driver chart version. Publishes GPUs as DRA ResourceSlices and the gpu.nvidia.com
                        DeviceClass that ModelReplica ResourceClaims bind through.
                      x-kubernetes-validations:
                        - *semver
                    prometheus:
                      type: string
                      minLength: 1
                      maxLength: 32
                      default: 72.6.2
                      description: kube-prometheus-stack chart version.
                      x-kubernetes-validations:
                        - *semver
                    trustManager:
                      type: string
                      minLength: 1
                      maxLength: 32
                      default: v0.24.0
                      description: >-
                        trust-manager chart version. trust-manager distributes the cluster gateway's CA certificate
                        without its private key, which is what lets the control plane read the certificate to hand to
                        a fleet gateway.
                      x-kubernetes-validations:
                        - *semver
            status:
              type: object
              description: ServingStackStatus is the observed state of ServingStack.
              properties:
                gateway:
                  type: object
                  description: Status of the cluster's inference gateway.
                  properties:
                    address:
                      type: string
                      maxLength: 256
                      description: The gateway's external address, once assigned by the cloud load balancer.
                    caCertificate:
                      type: string
                      maxLength: 16384
                      description: >-
                        PEM certificate of the CA that signed this gateway's serving certificate. An InferenceGateway
                        validates the gateway against it, so it reaches the cluster it meant to and not whatever
                        answers on that address.
                observedGeneration:
                  type: integer
                  format: int64
                  minimum: 0
                  description: >-
                    The metadata.generation of the ServingStack the last converge read, so a status older than the
                    spec is told apart.
                conditions:
                  type: array
                  maxItems: 8
                  description: >-
                    Conditions of the last converge: Ready (every component converged and the gateway has an address)
                    and Synced (every component converged). When False, the reason names the failing component (for
                    example CertManagerFailed) or GatewayAddressPending, and the message says why.
                  x-kubernetes-list-type: map
                  x-kubernetes-list-map-keys:
                    - type
                  items:
                    type: object
                    required:
                      - type
                      - status
                      - lastTransitionTime
                      - reason
                      - message
                    properties:
                      type:
                        type: string
                        maxLength: 316
                        pattern: "^([a-z0-9]([-a-z0-9]*[a-z0-9])?([.][a-z0-9]([-a-z0-9]*[a-z0-9])?)*/)?\
                          (([A-Za-z0-9][-A-Za-z0-9_.]*)?[A-Za-z0-9])$"
                        description: 'Type of the condition: Ready or Synced.'
                      status:
                        type: string
                        enum:
                          - 'True'
                          - 'False'
                          - Unknown
                        description: 'Status of the condition: True, False or Unknown.'
                      observedGeneration:
                        type: integer
                        format: int64
                        minimum: 0
                        description: The metadata.generation the condition was set for.
                      lastTransitionTime:
                        type: string
                        format: date-time
                        description: When the condition last changed from one status to another.
                      reason:
                        type: string
                        minLength: 1
                        maxLength: 1024
                        pattern: ^[A-Za-z]([A-Za-z0-9_,:]*[A-Za-z0-9_])?$
                        description: >-
                          Why the condition has its status, in CamelCase (for example Converged, Available,
                          GatewayAddressPending, CertManagerFailed).
                      message:
                        type: string
                        maxLength: 32768
                        description: >-
                          What happened, for people: the failed components and their errors, or why the gateway has
                          no address yet.
                components:
                  type: array
                  maxItems: 32
                  description: >-
                    Each component of the stack, in install order, with the version installed and whether its last
                    converge succeeded.
                  x-kubernetes-list-type: map
                  x-kubernetes-list-map-keys:
                    - name
                  items:
                    type: object
                    required:
                      - name
                      - ready
                    properties:
                      name:
                        type: string
                        minLength: 1
                        maxLength: 63
                        description: Name of the component, as in the install plan (for example cert_manager).
                      version:
                        type: string
                        maxLength: 64
                        description: The component's version the last successful converge installed.
                      ready:
                        type: boolean
                        description: Whether the component converged in the last run.
"""
