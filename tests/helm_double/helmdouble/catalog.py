"""The charts the helm test double knows, read from ``../shared/upstream``.

Each entry maps a chart's references (an ``oci://`` reference and/or a classic repository URL plus
chart name) to the upstream folder holding its ``Chart.yaml`` / ``values.yaml`` (and, where upstream
ships one, ``values.schema.json``), the published versions the double accepts, and the CRDs the
chart installs. Versions are real published versions; where the collected files belong to another
version (placeholders in the in-repo ``Chart.yaml``), every listed version of a chart shares them.
"""

from __future__ import annotations

import os
import re
from dataclasses import dataclass, field
from pathlib import Path

REPO_ROOT = Path(__file__).resolve().parents[3]


def upstream_dir() -> Path:
    """Where the upstream reference data lives (``HELM_DOUBLE_UPSTREAM`` overrides)."""
    override = os.environ.get("HELM_DOUBLE_UPSTREAM")
    return Path(override) if override else REPO_ROOT.parent / "shared" / "upstream"


@dataclass(frozen=True)
class CrdSet:
    """CRD files a chart installs.

    ``style`` is ``"crds-dir"`` for Helm's ``crds/`` directory semantics (installed on first install
    only, skipped by ``--skip-crds``, never upgraded, never deleted, not part of the manifest) or
    ``"template"`` for CRDs rendered as ordinary templates (part of the release manifest, upgraded,
    deleted on uninstall unless annotated ``helm.sh/resource-policy: keep``).
    ``condition`` is the values path that enables them (a dependency condition or a template guard),
    ``keep`` the values path that adds the keep annotation (templates only).
    """

    style: str
    files: tuple[str, ...]
    condition: str | None = None
    keep: str | None = None


@dataclass(frozen=True)
class Fullname:
    """A chart's ``<chart>.fullname`` helper as ``helm create`` writes it (and the charts below keep it).

    ``override`` (a values path) wins when set; else the name (``name_override`` or the chart name) is
    the release name when the release name contains it, else ``<release>-<name>``; cut at ``trunc``
    characters and stripped of a trailing ``-``. ``chart`` is the chart whose name the rule uses (a
    subchart's own for its objects; ``None``: the catalogue chart's), and the paths are read from the
    parent chart's values (a subchart's values sit under its name, as helm coalesces them).
    """

    chart: str | None = None
    override: str | None = "fullnameOverride"
    name_override: str | None = "nameOverride"
    trunc: int = 63


@dataclass(frozen=True)
class Workload:
    """A controller the published chart's templates render by default, modelled (no Go template is run).

    ``name`` may use ``{fullname}`` (the ``fullname`` rule) and ``{name}`` (``nameOverride`` or the chart
    name), as the chart's template does; ``override`` is a values path whose non-empty value is the whole
    name instead (a per-component ``fullnameOverride``). It is rendered when any values path of ``when`` is
    truthy (no paths: always), in the release namespace, with one replica and one container running
    ``image`` (``{app_version}`` = the chart's appVersion). ``strategy`` is the values path the template
    copies into ``spec.strategy`` (Deployment) / ``spec.updateStrategy`` (DaemonSet): it changes what
    ``--wait`` waits for. ``template`` is the chart file it comes from (the manifest's ``# Source:``),
    ``source`` where the facts were read.
    """

    name: str
    component: str  # app.kubernetes.io/component (and the container name)
    app: str  # app.kubernetes.io/name; may use {name}
    image: str
    template: str
    kind: str = "Deployment"
    when: tuple[str, ...] = ()
    fullname: Fullname = field(default_factory=Fullname)
    override: str | None = None
    strategy: str | None = None
    source: str = ""


@dataclass(frozen=True)
class Version:
    """One published chart version."""

    version: str
    app_version: str
    # Folder (relative to upstream) with Chart.yaml/values.yaml for this version, if not the chart's default.
    folder: str | None = None


@dataclass(frozen=True)
class ChartEntry:
    """A chart; ``versions[0]`` is the version the ServingStack spec defaults to."""

    name: str
    folder: str  # relative to upstream: Chart.yaml, values.yaml (values.schema.json when schema)
    versions: tuple[Version, ...]
    oci: tuple[str, ...] = ()  # oci://host/path/<name>
    repos: tuple[str, ...] = ()  # classic repository URLs serving <name>
    schema: bool = False
    crds: tuple[CrdSet, ...] = ()
    # Extra free-form subtrees accepted although values.yaml does not list them: (path, upstream citation).
    allow: tuple[tuple[str, str], ...] = ()
    notes: str = ""
    # Local subcharts whose values.yaml lives in the given folder (relative to upstream): name -> folder.
    subchart_values: dict[str, str] = field(default_factory=dict)
    # Plain-YAML template files (absolute paths) applied as they are: only local chart directories have them.
    templates: tuple[str, ...] = ()
    # The controllers (Deployments, and DaemonSets) the published chart runs, rendered into the manifest.
    workloads: tuple[Workload, ...] = ()

    def folder_for(self, version: Version) -> Path:
        return upstream_dir() / (version.folder or self.folder)


def _v(version: str, app_version: str | None = None, folder: str | None = None) -> Version:
    return Version(version, app_version if app_version is not None else version, folder)


JETSTACK = "https://charts.jetstack.io"
PROMETHEUS_COMMUNITY = "https://prometheus-community.github.io/helm-charts"
NFD_LEGACY = "https://kubernetes-sigs.github.io/node-feature-discovery/charts"

_GATEWAY_API_EXPERIMENTAL = (
    "backendtlspolicies",
    "gatewayclasses",
    "gateways",
    "grpcroutes",
    "httproutes",
    "listenersets",
    "referencegrants",
    "tcproutes",
    "tlsroutes",
    "udproutes",
)
_EG_VALUES = "envoy-ai-gateway/envoy-gateway-values/envoy-gateway-values.yaml"
_EG_INFERENCE = "envoy-ai-gateway/envoy-gateway-values/inference-pool-addon.yaml"

# The controllers each published chart runs by default. The chart templates were not collected: names, toggles
# and images are read from the upstream repositories' chart templates (cited per chart), with the defaults and
# toggles checked against the collected values.yaml. Images: <repository from values.yaml>:<appVersion>, as the
# templates default the tag, unless noted.
_CERT_MANAGER_WORKLOADS = (
    # cert-manager deploy/charts/cert-manager/templates/{deployment,webhook-deployment,cainjector-deployment}.yaml:
    # cert-manager.fullname, webhook.fullname (<fullname>-webhook) and cainjector.fullname (<fullname>-cainjector)
    # (_helpers.tpl); only the cainjector is toggled (values.yaml cainjector.enabled, default true). Images:
    # imageRegistry quay.io + imageNamespace jetstack + image.name (values.yaml), tag appVersion.
    Workload(
        "{fullname}",
        "controller",
        "{name}",
        "quay.io/jetstack/cert-manager-controller:{app_version}",
        "templates/deployment.yaml",
        strategy="strategy",
    ),
    Workload(
        "{fullname}-webhook",
        "webhook",
        "webhook",
        "quay.io/jetstack/cert-manager-webhook:{app_version}",
        "templates/webhook-deployment.yaml",
        strategy="webhook.strategy",
    ),
    Workload(
        "{fullname}-cainjector",
        "cainjector",
        "cainjector",
        "quay.io/jetstack/cert-manager-cainjector:{app_version}",
        "templates/cainjector-deployment.yaml",
        when=("cainjector.enabled",),
        strategy="cainjector.strategy",
    ),
)
_TRUST_MANAGER_WORKLOADS = (
    # trust-manager deploy/charts/trust-manager/templates/deployment.yaml: named trust-manager.name (nameOverride or
    # the chart name), NOT after the release; values.yaml image.name trust-manager under quay.io/jetstack.
    Workload(
        "{name}", "trust-manager", "{name}", "quay.io/jetstack/trust-manager:{app_version}", "templates/deployment.yaml"
    ),
)
_NFD_IMAGE = "registry.k8s.io/nfd/node-feature-discovery:{app_version}"  # values.yaml image.repository
_NFD_WORKLOADS = (
    # node-feature-discovery deployment/helm/node-feature-discovery/templates/{master,nfd-gc,worker}.yaml:
    # <fullname>-master and <fullname>-gc (Deployments), <fullname>-worker (DaemonSet); values.yaml master.enable,
    # gc.enable and worker.enable default true (topologyUpdater.enable defaults false: not modelled).
    Workload("{fullname}-master", "master", "{name}", _NFD_IMAGE, "templates/master.yaml", when=("master.enable",)),
    Workload("{fullname}-gc", "gc", "{name}", _NFD_IMAGE, "templates/nfd-gc.yaml", when=("gc.enable",)),
    Workload(
        "{fullname}-worker",
        "worker",
        "{name}",
        _NFD_IMAGE,
        "templates/worker.yaml",
        kind="DaemonSet",
        when=("worker.enable",),
        strategy="worker.updateStrategy",
    ),
)
# dra-driver-nvidia-gpu _helpers.tpl fullimage: image.repository:v<appVersion> (the chart's appVersion has no v).
_DRA_IMAGE = "registry.k8s.io/dra-driver-nvidia/dra-driver-nvidia-gpu:v{app_version}"
_DRA_WORKLOADS = (
    # kubernetes-sigs/dra-driver-nvidia-gpu deployments/helm/dra-driver-nvidia-gpu/templates: controller.yaml is
    # guarded by `if .Values.resources.computeDomains.enabled` (values.yaml default true; the collection sets it
    # false), kubeletplugin.yaml (a DaemonSet) by `if or computeDomains.enabled gpus.enabled`, and the webhook
    # Deployment by `if .Values.webhook.enabled` (default false; NVIDIA/k8s-dra-driver-gpu webhook-deployment.yaml).
    # All are named dra-driver-nvidia-gpu.name (nameOverride or the chart name) plus a suffix, not after the release.
    Workload(
        "{name}-controller",
        "controller",
        "{name}",
        _DRA_IMAGE,
        "templates/controller.yaml",
        when=("resources.computeDomains.enabled",),
    ),
    Workload(
        "{name}-webhook",
        "webhook",
        "{name}",
        _DRA_IMAGE,
        "templates/webhook-deployment.yaml",
        when=("webhook.enabled",),
        strategy="webhook.strategy",
    ),
    Workload(
        "{name}-kubelet-plugin",
        "kubelet-plugin",
        "{name}",
        _DRA_IMAGE,
        "templates/kubeletplugin.yaml",
        kind="DaemonSet",
        when=("resources.computeDomains.enabled", "resources.gpus.enabled"),
        strategy="kubeletPlugin.updateStrategy",
    ),
)
_EG_WORKLOADS = (
    # envoyproxy/gateway charts/gateway-helm/templates/envoy-gateway-deployment.yaml: a fixed name; image
    # global.images.envoyGateway.image (values.yaml: docker.io/envoyproxy/gateway:<release tag>). v1.8.3's values
    # have no topologyWebhook, so no topology-webhook Deployment; the certgen Job is a hook (not modelled).
    Workload(
        "envoy-gateway",
        "envoy-gateway",
        "{name}",
        "docker.io/envoyproxy/gateway:{app_version}",
        "templates/envoy-gateway-deployment.yaml",
    ),
)
_AI_GATEWAY_WORKLOADS = (
    # envoyproxy/ai-gateway manifests/charts/ai-gateway-helm/templates/deployment.yaml: named
    # ai-gateway-helm.controller.fullname = controller.fullnameOverride (values.yaml: "ai-gateway-controller"), else
    # the fullname rule on controller.nameOverride; image controller.image.repository (values.yaml), tag appVersion.
    Workload(
        "{fullname}",
        "controller",
        "ai-gateway-helm",
        "docker.io/envoyproxy/ai-gateway-controller:{app_version}",
        "templates/deployment.yaml",
        fullname=Fullname(override="controller.fullnameOverride", name_override="controller.nameOverride"),
    ),
)
_LWS_WORKLOADS = (
    # kubernetes-sigs/lws charts/lws/templates/manager/deployment.yaml: <lws.fullname>-controller-manager; image
    # image.manager.repository (values.yaml), tag appVersion (the release rewrites the in-repo tag `main`).
    Workload(
        "{fullname}-controller-manager",
        "manager",
        "{name}",
        "registry.k8s.io/lws/lws:{app_version}",
        "templates/manager/deployment.yaml",
    ),
)
_KAI_WORKLOADS = (
    # KAI-Scheduler deployments/kai-scheduler/templates/services/operator.yaml: the chart's one Deployment, named
    # kai-operator (values.yaml operator.*); the scheduler, binder, podgrouper, admission, ... are created by the
    # operator from the Config object (kai-config.yaml), not by helm. Image <global.registry>/<operator.image.name>:
    # the release sets the registry to ghcr.io/kai-scheduler/kai-scheduler (shared/upstream/README.md).
    Workload(
        "kai-operator",
        "operator",
        "kai-operator",
        "ghcr.io/kai-scheduler/kai-scheduler/operator:{app_version}",
        "templates/services/operator.yaml",
    ),
)
_GROVE_WORKLOADS = (
    # ai-dynamo/grove operator/charts/templates/deployment.yaml: a fixed name (values.yaml deployment.labels name it
    # grove-operator); the release image is ghcr.io/ai-dynamo/grove/grove-operator:<tag> (shared/upstream/README.md).
    Workload(
        "grove-operator",
        "operator",
        "grove-operator",
        "ghcr.io/ai-dynamo/grove/grove-operator:{app_version}",
        "templates/deployment.yaml",
    ),
)
_KPS_WORKLOADS = (
    # prometheus-community kube-prometheus-stack templates/prometheus-operator/deployment.yaml: named
    # kube-prometheus-stack.operator.fullname = prometheusOperator.fullnameOverride, else <fullname>-operator with the
    # fullname cut at 26 characters (_helpers.tpl); toggled by prometheusOperator.enabled (values.yaml, true); image
    # prometheusOperator.image registry quay.io + repository prometheus-operator/prometheus-operator, tag appVersion.
    Workload(
        "{fullname}-operator",
        "prometheus-operator",
        "{name}-operator",
        "quay.io/prometheus-operator/prometheus-operator:{app_version}",
        "templates/prometheus-operator/deployment.yaml",
        when=("prometheusOperator.enabled",),
        fullname=Fullname(trunc=26),
        override="prometheusOperator.fullnameOverride",
        strategy="prometheusOperator.strategy",
    ),
    # Remote subcharts, each with its Chart.yaml dependency condition (all true in values.yaml). Their templates
    # and values were not collected: each names its workload with helm create's fullname rule on its own values
    # (kube-state-metrics, grafana and prometheus-node-exporter charts' _helpers.tpl), and the image tags are the
    # appVersions believed published with those subchart versions (kube-state-metrics 5.33 -> v2.15.0, grafana
    # 9.0.0 -> 12.0.0, prometheus-node-exporter 4.46.0 -> v1.9.1): plausible, not collected. The Prometheus and
    # Alertmanager StatefulSets are created by the operator, not by helm: helm never waits for them.
    Workload(
        "{fullname}",
        "metrics",
        "kube-state-metrics",
        "registry.k8s.io/kube-state-metrics/kube-state-metrics:v2.15.0",
        "charts/kube-state-metrics/templates/deployment.yaml",
        when=("kubeStateMetrics.enabled",),
        fullname=Fullname(
            "kube-state-metrics", "kube-state-metrics.fullnameOverride", "kube-state-metrics.nameOverride"
        ),
    ),
    Workload(
        "{fullname}",
        "grafana",
        "grafana",
        "docker.io/grafana/grafana:12.0.0",
        "charts/grafana/templates/deployment.yaml",
        when=("grafana.enabled",),
        fullname=Fullname("grafana", "grafana.fullnameOverride", "grafana.nameOverride"),
    ),
    Workload(
        "{fullname}",
        "metrics",
        "prometheus-node-exporter",
        "quay.io/prometheus/node-exporter:v1.9.1",
        "charts/prometheus-node-exporter/templates/daemonset.yaml",
        kind="DaemonSet",
        when=("nodeExporter.enabled",),
        fullname=Fullname(
            "prometheus-node-exporter",
            "prometheus-node-exporter.fullnameOverride",
            "prometheus-node-exporter.nameOverride",
        ),
    ),
)

CHARTS: tuple[ChartEntry, ...] = (
    ChartEntry(
        name="cert-manager",
        folder="cert-manager/chart",
        versions=(_v("v1.21.1"), _v("v1.21.0"), _v("v1.20.2"), _v("v1.17.1")),
        oci=("oci://quay.io/jetstack/charts/cert-manager",),
        repos=(JETSTACK,),
        schema=True,
        # Only certificates/issuers/clusterissuers were collected (the chart also templates
        # certificaterequests, orders and challenges).
        crds=(
            CrdSet(
                "template",
                (
                    "cert-manager/crds/cert-manager.io_certificates.yaml",
                    "cert-manager/crds/cert-manager.io_issuers.yaml",
                    "cert-manager/crds/cert-manager.io_clusterissuers.yaml",
                ),
                condition="crds.enabled",
                keep="crds.keep",
            ),
        ),
        workloads=_CERT_MANAGER_WORKLOADS,
    ),
    ChartEntry(
        name="trust-manager",
        folder="trust-manager/chart",
        versions=(_v("v0.24.0"), _v("v0.23.0")),
        oci=("oci://quay.io/jetstack/charts/trust-manager",),
        repos=(JETSTACK,),
        schema=True,
        crds=(
            CrdSet(
                "template",
                ("trust-manager/crds/trust.cert-manager.io_bundles.yaml",),
                condition="crds.enabled",
                keep="crds.keep",
            ),
        ),
        workloads=_TRUST_MANAGER_WORKLOADS,
    ),
    ChartEntry(
        name="node-feature-discovery",
        folder="node-feature-discovery/chart",
        versions=(_v("0.18.3", "v0.18.3"), _v("0.18.2", "v0.18.2"), _v("0.17.3", "v0.17.3")),
        oci=("oci://registry.k8s.io/nfd/charts/node-feature-discovery",),
        repos=(NFD_LEGACY,),
        crds=(CrdSet("crds-dir", ("node-feature-discovery/chart/crds/nfd-api-crds.yaml",)),),
        workloads=_NFD_WORKLOADS,
    ),
    ChartEntry(
        name="dra-driver-nvidia-gpu",
        folder="dra-driver-nvidia-gpu/chart",
        versions=(_v("0.4.0"), _v("0.3.0")),
        oci=("oci://registry.k8s.io/dra-driver-nvidia/charts/dra-driver-nvidia-gpu",),
        crds=(
            CrdSet(
                "crds-dir",
                (
                    "dra-driver-nvidia-gpu/chart/crds/resource.nvidia.com_computedomains.yaml",
                    "dra-driver-nvidia-gpu/chart/crds/resource.nvidia.com_computedomaincliques.yaml",
                ),
            ),
        ),
        workloads=_DRA_WORKLOADS,
    ),
    ChartEntry(
        name="gateway-helm",
        folder="envoy-gateway/chart/gateway-helm",
        # v1.8.4 has no chart changes over v1.8.3 (shared/upstream/README.md), so both use the v1.8.3 files.
        versions=(_v("v1.8.4"), _v("v1.8.3"), _v("v1.8.1")),
        oci=("oci://docker.io/envoyproxy/gateway-helm",),
        # The `crds` subchart (condition crds.enabled) ships its CRDs in crds/: install only.
        crds=(
            CrdSet(
                "crds-dir",
                tuple(
                    f"envoy-gateway/crds/gateway.envoyproxy.io_{kind}.yaml"
                    for kind in ("envoyproxies", "clienttrafficpolicies", "backendtrafficpolicies", "backends")
                )
                + tuple(
                    f"gateway-api/v1.5.1/experimental/{kind}.gateway.networking.k8s.io.yaml"
                    for kind in _GATEWAY_API_EXPERIMENTAL
                )
                + tuple(
                    f"gateway-api/v1.5.1/experimental/{kind}.gateway.networking.x-k8s.io.yaml"
                    for kind in ("xbackendtrafficpolicies", "xmeshes")
                ),
                condition="crds.enabled",
            ),
        ),
        allow=(
            ("config.envoyGateway.extensionManager", _EG_VALUES + " and " + _EG_INFERENCE),
            ("config.envoyGateway.extensionManagers", "shared/upstream/README.md (EnvoyGateway type in EG v1.8.3)"),
            ("config.envoyGateway.extensionApis", _EG_VALUES),
        ),
        subchart_values={"crds": "envoy-gateway/chart/gateway-helm/charts/crds"},
        workloads=_EG_WORKLOADS,
    ),
    ChartEntry(
        name="ai-gateway-crds-helm",
        folder="envoy-ai-gateway/chart/ai-gateway-crds-helm",
        versions=(_v("v1.1.0"), _v("v0.7.0")),
        oci=("oci://docker.io/envoyproxy/ai-gateway-crds-helm",),
        notes="The AI Gateway CRDs were not collected upstream: installing this chart applies no CRD.",
        # No workloads: a CRD-only chart (envoyproxy/ai-gateway manifests/charts/ai-gateway-crds-helm).
    ),
    ChartEntry(
        name="ai-gateway-helm",
        folder="envoy-ai-gateway/chart/ai-gateway-helm",
        versions=(_v("v1.1.0"), _v("v0.7.0")),
        oci=("oci://docker.io/envoyproxy/ai-gateway-helm",),
        workloads=_AI_GATEWAY_WORKLOADS,
    ),
    ChartEntry(
        name="lws",
        folder="lws/chart",
        # hack/push-chart.sh packages the chart with the v-prefixed git tag as version and appVersion.
        versions=(_v("v0.8.0"), _v("v0.7.0"), _v("v0.9.0")),
        oci=("oci://registry.k8s.io/lws/charts/lws",),
        crds=(CrdSet("crds-dir", ("lws/chart/crds/leaderworkerset.x-k8s.io_leaderworkersets.yaml",)),),
        workloads=_LWS_WORKLOADS,
    ),
    ChartEntry(
        name="kai-scheduler",
        folder="kai-scheduler/chart",
        versions=(_v("v0.16.8"), _v("v0.17.0")),
        oci=("oci://ghcr.io/kai-scheduler/kai-scheduler/kai-scheduler",),
        crds=(CrdSet("crds-dir", ("kai-scheduler/chart/crds/scheduling.run.ai_queues.yaml",)),),
        workloads=_KAI_WORKLOADS,
    ),
    ChartEntry(
        name="grove-charts",
        folder="grove/chart",
        # rc2 is not tagged upstream; it carries main's values (grove#753 merged after rc1).
        versions=(
            _v("v0.1.0-alpha.12-rc2", folder="grove/chart-main-fcc3b3bb"),
            _v("v0.1.0-alpha.12-rc1"),
        ),
        oci=("oci://ghcr.io/ai-dynamo/grove/grove-charts",),
        allow=(
            (
                "config.scheduler.defaultProfileName",
                "grove/chart/values.yaml comment on config.scheduler ('set defaultProfileName to the profile that"
                " is the default backend'); the chart's operator config template reads"
                " .Values.config.scheduler.defaultProfileName (OperatorConfiguration scheduler.defaultProfileName)",
            ),
        ),
        notes="Grove CRDs are generated at release time and were not collected: no CRD is applied.",
        workloads=_GROVE_WORKLOADS,
    ),
    ChartEntry(
        name="kube-prometheus-stack",
        folder="kube-prometheus-stack/chart",
        versions=(_v("72.6.2", "v0.82.2"), _v("72.6.1", "v0.82.2")),
        oci=("oci://ghcr.io/prometheus-community/charts/kube-prometheus-stack",),
        repos=(PROMETHEUS_COMMUNITY,),
        crds=(
            CrdSet(
                "crds-dir",
                (
                    "kube-prometheus-stack/chart/charts/crds/crds/crd-podmonitors.yaml",
                    "kube-prometheus-stack/chart/charts/crds/crds/crd-servicemonitors.yaml",
                ),
                condition="crds.enabled",
            ),
        ),
        workloads=_KPS_WORKLOADS,
    ),
)

BY_NAME: dict[str, ChartEntry] = {chart.name: chart for chart in CHARTS}


class ChartNotFound(Exception):
    """Raised with the message real helm prints (without the ``Error: `` prefix)."""


def split_oci(ref: str) -> tuple[str, str | None]:
    """``oci://host/path:tag`` -> (``oci://host/path``, ``tag``)."""
    rest = ref[len("oci://") :]
    last = rest.rsplit("/", 1)[-1]
    if ":" in last:
        base, tag = ref.rsplit(":", 1)
        return base, tag
    return ref, None


_SEMVER = re.compile(r"^v?(\d+)(?:\.(\d+))?(?:\.(\d+))?(?:-([0-9A-Za-z.-]+))?(?:\+[0-9A-Za-z.-]+)?$")


def _semver_key(version: str) -> tuple[int, int, int, int, str] | None:
    match = _SEMVER.match(version)
    if not match:
        return None
    major, minor, patch, pre = match.groups()
    # A release sorts after its pre-releases.
    return (int(major), int(minor or 0), int(patch or 0), 0 if pre else 1, pre or "")


def is_semver(version: str) -> bool:
    return _semver_key(version) is not None


def latest_stable(entry: ChartEntry) -> Version | None:
    stable = [v for v in entry.versions if (key := _semver_key(v.version)) and key[3] == 1]
    return max(stable, key=lambda v: _semver_key(v.version) or (0, 0, 0, 0, "")) if stable else None


def _same_version(wanted: str, published: str) -> bool:
    """Semver equality, as Helm's constraint check treats ``1.21.1`` and ``v1.21.1``."""
    a, b = _semver_key(wanted), _semver_key(published)
    return a is not None and a == b


def resolve(
    ref: str, version: str | None, repo: str | None, repo_aliases: dict[str, str]
) -> tuple[ChartEntry, Version]:
    """Find the chart and version real helm would fetch for ``ref`` (+ ``--version``, ``--repo``)."""
    if ref.startswith("oci://"):
        return _resolve_oci(ref, version)
    if repo is None and "/" in ref and not ref.startswith(("/", ".")):
        alias, _sep, name = ref.partition("/")
        if alias not in repo_aliases:
            raise ChartNotFound(f"repo {alias} not found")
        repo, ref = repo_aliases[alias], name
    if repo is None:
        raise ChartNotFound(f"non-absolute URLs should be in form of repo_name/path_to_chart, got: {ref}")
    repo = repo.rstrip("/")
    entry = BY_NAME.get(ref)
    what = f'chart "{ref}"' + (f' version "{version}"' if version else "")
    if entry is None or repo not in entry.repos:
        raise ChartNotFound(f"{what} not found in {repo} repository")
    if not version:
        found = latest_stable(entry)
    else:
        found = next((v for v in entry.versions if v.version == version), None) or next(
            (v for v in entry.versions if _same_version(version, v.version)), None
        )
    if found is None:
        raise ChartNotFound(f"{what} not found in {repo} repository")
    return entry, found


def _resolve_oci(ref: str, version: str | None) -> tuple[ChartEntry, Version]:
    base, tag = split_oci(ref)
    entry = next((chart for chart in CHARTS if base in chart.oci), None)
    host_path = base[len("oci://") :]
    if tag and not version:
        version = tag
    if version and is_semver(version):
        # Helm uses an explicit semantic version as the tag as it is.
        found = next((v for v in entry.versions if v.version == version), None) if entry else None
        if found is None:
            raise ChartNotFound(f'failed to perform "FetchReference" on source: {host_path}:{version}: not found')
        return entry, found  # type: ignore[return-value]
    if entry is None:
        raise ChartNotFound(f"unable to locate any tags in provided repository: {base}")
    if not version:
        found = latest_stable(entry)
        if found is None:  # only pre-releases: helm's "*" constraint matches none of them
            raise ChartNotFound("could not locate a version matching provided version string ")
        return entry, found
    raise ChartNotFound(f"could not locate a version matching provided version string {version}")
