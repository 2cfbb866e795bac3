# Copyright 2026 The modelplane.serving authors
# Apache License 2.0 (see LICENSE)
"""The one table of serving-stack components.

This is the only place that knows a component's charts, repositories, namespaces, version
keys, stacks and dependencies. The plan (``plan.py``), the ``servingstack`` role and the tests all read it;
nothing else repeats these facts.

Facts come from ``shared/upstream/README.md`` (chart names, OCI references, namespaces) and
from the ServingStack reference (version keys, stacks).
"""

from __future__ import annotations

from dataclasses import dataclass

STANDARD = "Standard"
DYNAMO = "Dynamo"
BOTH = frozenset({STANDARD, DYNAMO})

# Every Helm release of ours is named mp-<chart>, so upgrades happen in place and a user's
# own release of the same chart is never adopted by accident.
RELEASE_PREFIX = "mp-"


@dataclass(frozen=True)
class Chart:
    """One Helm chart a component installs, in the order listed."""

    name: str
    # Either an oci:// reference of the chart itself, or a classic repository URL.
    ref: str
    namespace: str
    # Spec path of the version pin, or None when ``version`` is fixed by this collection.
    version_key: str | None = None
    version: str | None = None
    # helm --atomic: a failed install is purged and a failed upgrade rolled back. Off only for
    # charts whose upstream says rollback is unsupported.
    atomic: bool = True
    # API groups of the CRDs the chart renders as templates (from the CRD files in shared/upstream).
    # Helm refuses to install a template over an object another release owns, so a CRD of these
    # groups owned by another release is reported and refused before helm runs, unless adopting.
    # CRDs in a chart's crds/ folder are left out: helm skips existing ones without asking whose.
    crd_groups: tuple[str, ...] = ()
    # The chart's ``kubeVersion`` (None: it declares none) and the release whose Chart.yaml it was read from, the
    # spec's default pin (tests/unit/test_preflight.py checks both against shared/upstream); the preflight's floors.
    kube_version: tuple[str, str | None] | None = None


@dataclass(frozen=True)
class Manifest:
    """Objects a component applies from manifests rather than charts, named for the plan and the docs."""

    name: str
    # (spec path, value): the objects are not made when the spec's value there is this one (or unset, empty), as the
    # role decides; None: always made.
    unless: tuple[str, str] | None = None


@dataclass(frozen=True)
class Component:
    """A unit the plan orders: one role, its charts and the spec key that versions it."""

    name: str  # the role that installs it: roles/<name>
    title: str
    namespace: str
    version_key: str  # spec path of the component's version pin
    stacks: frozenset[str] = BOTH
    needs: tuple[str, ...] = ()
    # Needs that apply only when a spec field is set: (component, spec path). Install order counts
    # them always; a converge waits for them only when the spec sets the field.
    needs_if: tuple[tuple[str, str], ...] = ()
    charts: tuple[Chart, ...] = ()
    manifests: tuple[Manifest, ...] = ()
    # Where requests enter the stack: torn down before everything else (the rest goes in reverse install order),
    # so no request reaches a stack half torn down.
    ingress: bool = False


JETSTACK = "https://charts.jetstack.io"

# Envoy AI Gateway v1.1.x is the release paired with Envoy Gateway v1.8.x (see versions.py);
# it has no pin in the spec, so the collection fixes it here.
AI_GATEWAY_VERSION = "v1.1.0"
# The Gateway API Inference Extension release Envoy AI Gateway v1.1 targets (GAIE v1.0.2): its
# InferencePool (API v1) and the x-k8s InferencePool and InferenceObjective CRDs.
INFERENCE_EXTENSION_VERSION = "v1.0.2"
# Where the inference Gateway and its objects live: Modelplane's HTTPRoutes name
# inference-gateway in modelplane-system as their parent (envoy_gateway_gateway_namespace).
GATEWAY_NAMESPACE = "modelplane-system"

COMPONENTS: tuple[Component, ...] = (
    Component(
        name="cert_manager",
        title="cert-manager",
        namespace="cert-manager",
        version_key="versions.certManager",
        charts=(
            Chart(
                "cert-manager", JETSTACK, "cert-manager", "versions.certManager",
                crd_groups=("cert-manager.io", "acme.cert-manager.io"),
                kube_version=("v1.21.1", ">= 1.22.0-0"),
            ),
        ),
    ),
    Component(
        name="trust_manager",
        title="trust-manager",
        # The trust namespace: Bundle sources must live here (app.trust.namespace).
        namespace="cert-manager",
        version_key="versions.trustManager",
        needs=("cert_manager",),
        charts=(
            Chart(
                "trust-manager", JETSTACK, "cert-manager", "versions.trustManager",
                crd_groups=("trust.cert-manager.io", "trust-manager.io"),
                kube_version=("v0.24.0", ">= 1.25.0-0"),
            ),
        ),
        manifests=(Manifest("Bundle publishing the gateway CA certificate"),),
    ),
    Component(
        name="nfd",
        title="Node Feature Discovery",
        namespace="node-feature-discovery",
        version_key="versions.nodeFeatureDiscovery",
        charts=(
            Chart(
                "node-feature-discovery",
                "oci://registry.k8s.io/nfd/charts/node-feature-discovery",
                "node-feature-discovery",
                "versions.nodeFeatureDiscovery",
                kube_version=("0.18.3", None),
            ),
        ),
    ),
    Component(
        name="nvidia_dra",
        title="NVIDIA DRA driver",
        namespace="dra-driver-nvidia-gpu",
        version_key="versions.nvidiaDraDriver",
        # The kubelet plugin only lands on nodes NFD has labelled.
        needs=("nfd",),
        charts=(
            Chart(
                "dra-driver-nvidia-gpu",
                "oci://registry.k8s.io/dra-driver-nvidia/charts/dra-driver-nvidia-gpu",
                "dra-driver-nvidia-gpu",
                "versions.nvidiaDraDriver",
                kube_version=("0.4.0", ">=1.32.0-0"),
            ),
        ),
        # The nvidia_dra role makes it only for another driver root than the chart's default (GKE's).
        manifests=(Manifest("ResourceQuota for system-critical pods (nvidiaDriverRoot not /)",
                            unless=("nvidiaDriverRoot", "/")),),
    ),
    Component(
        name="envoy_gateway",
        title="Envoy Gateway",
        namespace="envoy-gateway-system",
        version_key="versions.envoyGateway",
        # The gateway's serving certificate and its CA are cert-manager objects, made only for a
        # hostname; without one the gateway serves plain HTTP and needs nothing of cert-manager.
        needs_if=(("cert_manager", "gateway.hostname"),),
        ingress=True,
        charts=(
            Chart(
                "gateway-helm",
                "oci://docker.io/envoyproxy/gateway-helm",
                "envoy-gateway-system",
                "versions.envoyGateway",
                kube_version=("v1.8.4", None),
            ),
            Chart(
                "ai-gateway-crds-helm",
                "oci://docker.io/envoyproxy/ai-gateway-crds-helm",
                "envoy-ai-gateway-system",
                version=AI_GATEWAY_VERSION,
                # The chart templates the AI Gateway's CRDs (not collected in shared/upstream); the
                # group of its own kinds (AIGatewayRoute).
                crd_groups=("aigateway.envoyproxy.io",),
                kube_version=(AI_GATEWAY_VERSION, None),
            ),
            Chart(
                "ai-gateway-helm",
                "oci://docker.io/envoyproxy/ai-gateway-helm",
                "envoy-ai-gateway-system",
                version=AI_GATEWAY_VERSION,
                kube_version=(AI_GATEWAY_VERSION, None),
            ),
        ),
        manifests=(
            Manifest(f"InferencePool CRD and the x-k8s InferencePool and InferenceObjective CRDs (Gateway API "
                     f"Inference Extension {INFERENCE_EXTENSION_VERSION})"),
            Manifest(f"EnvoyProxy, GatewayClass and Gateway (Gateway in {GATEWAY_NAMESPACE})"),
        ),
    ),
    Component(
        name="lws",
        title="LeaderWorkerSet",
        namespace="lws-system",
        version_key="standard.leaderWorkerSet",
        stacks=frozenset({STANDARD}),
        charts=(Chart("lws", "oci://registry.k8s.io/lws/charts/lws", "lws-system", "standard.leaderWorkerSet",
                      kube_version=("v0.8.0", None)),),
    ),
    Component(
        name="grove_kai",
        title="Grove and the KAI Scheduler",
        namespace="grove-system",
        version_key="dynamo.grove",
        stacks=frozenset({DYNAMO}),
        charts=(
            # KAI first: Grove hands a PodCliqueSet's gang scheduling to it.
            Chart(
                "kai-scheduler",
                "oci://ghcr.io/kai-scheduler/kai-scheduler/kai-scheduler",
                "kai-scheduler",
                "dynamo.kaiScheduler",
                # Upstream: "helm rollback is unsupported" (its CRD upgrader hook runs forward only).
                atomic=False,
                kube_version=("v0.16.8", None),
            ),
            Chart("grove-charts", "oci://ghcr.io/ai-dynamo/grove/grove-charts", "grove-system", "dynamo.grove",
                  kube_version=("v0.1.0-alpha.12-rc2", None)),
        ),
        manifests=(Manifest("KAI Queue for gang scheduling"),),
    ),
    Component(
        name="modelexpress",
        title="ModelExpress",
        namespace="modelexpress-system",
        version_key="dynamo.modelExpress",
        stacks=frozenset({DYNAMO}),
        # No chart is published: the server is rendered from templates.
        manifests=(Manifest("ModelExpress CRDs, RBAC, Deployment and Service"),),
    ),
    Component(
        name="prometheus",
        title="kube-prometheus-stack",
        namespace="monitoring",
        version_key="versions.prometheus",
        charts=(
            Chart(
                "kube-prometheus-stack",
                "https://prometheus-community.github.io/helm-charts",
                "monitoring",
                "versions.prometheus",
                kube_version=("72.6.2", ">=1.19.0-0"),
            ),
        ),
    ),
)

BY_NAME: dict[str, Component] = {component.name: component for component in COMPONENTS}
