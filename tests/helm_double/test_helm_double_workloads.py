"""The controllers the catalogue charts run (``ChartEntry.workloads``): rendered into the release manifest,
created on install, kept on upgrade, deleted on uninstall, and what ``--wait`` waits for.

Pure rendering first, then the double against stand-ins whose simulated controllers make workloads ready
``ready_after`` seconds after their last spec change.
"""

from __future__ import annotations

import sys
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from conftest import UPSTREAM
from standin.fixtures import ClusterHandle, running_cluster

HERE = Path(__file__).resolve().parent
if str(HERE) not in sys.path:
    sys.path.insert(0, str(HERE))

from double_cli import get, helm  # noqa: E402
from helmdouble import catalog, wait  # noqa: E402
from helmdouble.chart import Chart  # noqa: E402

pytestmark = pytest.mark.skipif(not UPSTREAM.is_dir(), reason=f"upstream reference data absent: {UPSTREAM}")

CERT_MANAGER = "oci://quay.io/jetstack/charts/cert-manager"
AI_GATEWAY_CRDS = "oci://docker.io/envoyproxy/ai-gateway-crds-helm"
CERT_MANAGER_DEPLOYMENTS = ["mp-cert-manager", "mp-cert-manager-webhook", "mp-cert-manager-cainjector"]
READY_AFTER = 1.5


def chart(name: str) -> Chart:
    entry = catalog.BY_NAME[name]
    return Chart(entry, entry.versions[0])


def workloads(name: str, user: dict[str, Any] | None = None, release: str | None = None) -> list[tuple[str, str]]:
    """(kind, name) of what the chart renders for release ``mp-<chart>`` (the collection's naming)."""
    objects = chart(name).workload_objects(user or {}, release or f"mp-{name}", "ns")
    return [(obj["kind"], obj["metadata"]["name"]) for _source, obj in objects]


# --------------------------------------------------------------------------- pure: what each chart renders


@pytest.mark.parametrize(
    ("name", "user", "expected"),
    [
        (
            "cert-manager",
            {},
            [("Deployment", d) for d in CERT_MANAGER_DEPLOYMENTS],
        ),
        ("trust-manager", {}, [("Deployment", "trust-manager")]),  # trust-manager.name: not after the release
        (
            "node-feature-discovery",
            {},
            [
                ("DaemonSet", "mp-node-feature-discovery-worker"),  # helm's install order: DaemonSets first
                ("Deployment", "mp-node-feature-discovery-master"),
                ("Deployment", "mp-node-feature-discovery-gc"),
            ],
        ),
        (
            "dra-driver-nvidia-gpu",
            {},
            [("DaemonSet", "dra-driver-nvidia-gpu-kubelet-plugin"), ("Deployment", "dra-driver-nvidia-gpu-controller")],
        ),
        # What the collection sets: no ComputeDomains, so no controller.
        (
            "dra-driver-nvidia-gpu",
            {"gpuResourcesEnabledOverride": True, "resources": {"computeDomains": {"enabled": False}}},
            [("DaemonSet", "dra-driver-nvidia-gpu-kubelet-plugin")],
        ),
        ("gateway-helm", {}, [("Deployment", "envoy-gateway")]),
        ("ai-gateway-crds-helm", {}, []),
        ("ai-gateway-helm", {}, [("Deployment", "ai-gateway-controller")]),  # controller.fullnameOverride
        ("lws", {}, [("Deployment", "mp-lws-controller-manager")]),
        ("kai-scheduler", {}, [("Deployment", "kai-operator")]),
        ("grove-charts", {}, [("Deployment", "grove-operator")]),
        (
            "kube-prometheus-stack",
            {},
            [
                ("DaemonSet", "mp-kube-prometheus-stack-prometheus-node-exporter"),
                ("Deployment", "mp-kube-prometheus-stack-operator"),
                ("Deployment", "mp-kube-prometheus-stack-kube-state-metrics"),
                ("Deployment", "mp-kube-prometheus-stack-grafana"),
            ],
        ),
        # What the collection sets (roles/prometheus/vars/main.yml): the operator follows fullnameOverride, the
        # subcharts keep their own fullname rule, Grafana is off.
        (
            "kube-prometheus-stack",
            {"fullnameOverride": "prometheus", "grafana": {"enabled": False}},
            [
                ("DaemonSet", "mp-kube-prometheus-stack-prometheus-node-exporter"),
                ("Deployment", "prometheus-operator"),
                ("Deployment", "mp-kube-prometheus-stack-kube-state-metrics"),
            ],
        ),
    ],
)
def test_each_chart_renders_its_controllers(name, user, expected):
    assert workloads(name, user) == expected


def test_toggles_and_naming_follow_the_values():
    assert workloads("cert-manager", {"cainjector": {"enabled": False}}) == [
        ("Deployment", "mp-cert-manager"),
        ("Deployment", "mp-cert-manager-webhook"),
    ]
    # helm's fullname rule: a release name without the chart name gets it appended; fullnameOverride wins.
    assert workloads("cert-manager", release="cm")[0] == ("Deployment", "cm-cert-manager")
    assert workloads("cert-manager", {"fullnameOverride": "certs"})[1] == ("Deployment", "certs-webhook")
    assert workloads("node-feature-discovery", {"gc": {"enable": False}, "worker": {"enable": False}}) == [
        ("Deployment", "mp-node-feature-discovery-master")
    ]
    assert workloads("trust-manager", {"nameOverride": "trust"}) == [("Deployment", "trust")]
    # kube-prometheus-stack cuts its fullname at 26 characters before adding -operator.
    assert workloads("kube-prometheus-stack", {"kubeStateMetrics": {"enabled": False}}, release="a" * 30)[1] == (
        "Deployment",
        "a" * 26 + "-operator",
    )
    assert ("Deployment", "op") in workloads(
        "kube-prometheus-stack", {"prometheusOperator": {"fullnameOverride": "op"}}
    )
    assert ("DaemonSet", "dra-driver-nvidia-gpu-kubelet-plugin") not in workloads(
        "dra-driver-nvidia-gpu", {"resources": {"computeDomains": {"enabled": False}, "gpus": {"enabled": False}}}
    )


@pytest.mark.parametrize("name", sorted(catalog.BY_NAME))
def test_rendered_workloads_are_well_formed(name):
    entry = catalog.BY_NAME[name]
    for source, obj in chart(name).workload_objects({}, f"mp-{name}", "ns"):
        assert source.startswith(f"{name}/") and source.endswith(".yaml")
        meta, spec = obj["metadata"], obj["spec"]
        assert obj["apiVersion"] == "apps/v1" and obj["kind"] in ("Deployment", "DaemonSet")
        assert meta["namespace"] == "ns"
        assert meta["labels"]["app.kubernetes.io/instance"] == f"mp-{name}"
        assert meta["labels"]["app.kubernetes.io/managed-by"] == "Helm"
        assert spec["selector"]["matchLabels"].items() <= spec["template"]["metadata"]["labels"].items()
        assert spec.get("replicas", 1) == 1
        (container,) = spec["template"]["spec"]["containers"]
        repository, tag = container["image"].rsplit(":", 1)
        assert "/" in repository and tag
        assert entry.versions[0].app_version.lstrip("v") in tag or "charts/" in source  # subcharts: their own tags


def test_the_manifest_holds_the_workloads_after_the_templated_crds():
    manifest = chart("cert-manager").manifest({"crds": {"enabled": True}}, "mp-cert-manager", "cert-manager")
    sources = [line.removeprefix("# Source: ") for line in manifest.splitlines() if line.startswith("# Source: ")]
    assert sources[:3] == [
        f"cert-manager/templates/crds/cert-manager.io_{k}.yaml" for k in ("certificates", "issuers", "clusterissuers")
    ]
    assert sources[3:] == [
        "cert-manager/templates/deployment.yaml",
        "cert-manager/templates/webhook-deployment.yaml",
        "cert-manager/templates/cainjector-deployment.yaml",
    ]
    assert "namespace: cert-manager" in manifest and "quay.io/jetstack/cert-manager-webhook:v1.21.1" in manifest


# --------------------------------------------------------------------------- against the stand-in


def deployments(cluster: ClusterHandle, namespace: str) -> dict[str, dict[str, Any]]:
    listed = get(cluster, f"/apis/apps/v1/namespaces/{namespace}/deployments") or {}
    return {item["metadata"]["name"]: item for item in listed.get("items", [])}


@pytest.fixture(scope="module")
def slow_pods(tmp_path_factory: pytest.TempPathFactory) -> Iterator[ClusterHandle]:
    """Workloads become ready 1.5 s after their spec changes."""
    with running_cluster(tmp_path_factory.mktemp("ready-1.5s"), ready_after=READY_AFTER) as handle:
        yield handle


@pytest.fixture(scope="module")
def a_minute(tmp_path_factory: pytest.TempPathFactory) -> Iterator[ClusterHandle]:
    """A delay no test waits out: whatever is ready right after helm returns was waited for."""
    with running_cluster(tmp_path_factory.mktemp("ready-60s"), ready_after=60.0) as handle:
        yield handle


def test_install_creates_the_controllers_and_uninstall_deletes_them(cluster):
    ns, rel = "cert-manager", "mp-cert-manager"
    result, _seconds = helm(
        cluster, "upgrade", "-i", "--create-namespace", "--version", "v1.21.1", rel, CERT_MANAGER, namespace=ns
    )
    assert result.returncode == 0, result.stderr
    live = deployments(cluster, ns)
    assert sorted(live) == sorted(CERT_MANAGER_DEPLOYMENTS)
    for dep in live.values():
        meta = dep["metadata"]
        assert meta["namespace"] == ns and meta["labels"]["app.kubernetes.io/managed-by"] == "Helm"
        assert meta["annotations"]["meta.helm.sh/release-name"] == rel
        assert meta["annotations"]["meta.helm.sh/release-namespace"] == ns
    manifest, _seconds = helm(cluster, "get", "manifest", rel, namespace=ns)
    assert manifest.stdout.count("kind: Deployment") == 3

    # An upgrade that turns the cainjector off deletes it and keeps the others (same objects, no new rollout).
    uids = {name: dep["metadata"]["uid"] for name, dep in live.items()}
    result, _seconds = helm(
        cluster, "upgrade", "--version", "v1.21.1", "--set", "cainjector.enabled=false", rel, CERT_MANAGER, namespace=ns
    )
    assert result.returncode == 0, result.stderr
    live = deployments(cluster, ns)
    assert sorted(live) == ["mp-cert-manager", "mp-cert-manager-webhook"]
    assert all(
        dep["metadata"]["uid"] == uids[name] and dep["metadata"]["generation"] == 1 for name, dep in live.items()
    )

    result, _seconds = helm(cluster, "uninstall", rel, namespace=ns)
    assert result.returncode == 0, result.stderr
    assert deployments(cluster, ns) == {}


def test_wait_lasts_until_the_controllers_are_ready(slow_pods):
    ns, rel = "cert-manager", "mp-cert-manager"
    result, elapsed = helm(
        slow_pods,
        "upgrade",
        "-i",
        "--create-namespace",
        "--wait",
        "--version",
        "v1.21.0",
        rel,
        CERT_MANAGER,
        namespace=ns,
    )
    assert result.returncode == 0, result.stderr
    assert elapsed >= READY_AFTER, elapsed
    live = deployments(slow_pods, ns)
    assert sorted(live) == sorted(CERT_MANAGER_DEPLOYMENTS)
    assert all(wait.deployment_ready(dep) for dep in live.values())

    # A new chart version changes the images: a new rollout, waited for again.
    result, elapsed = helm(slow_pods, "upgrade", "--wait", "--version", "v1.21.1", rel, CERT_MANAGER, namespace=ns)
    assert result.returncode == 0, result.stderr
    assert elapsed >= READY_AFTER, elapsed
    live = deployments(slow_pods, ns)
    assert all(dep["metadata"]["generation"] == 2 and wait.deployment_ready(dep) for dep in live.values())


def test_without_wait_it_returns_before_the_controllers_are_ready(a_minute):
    ns, rel = "cert-manager", "mp-cert-manager"
    result, elapsed = helm(
        a_minute, "upgrade", "-i", "--create-namespace", "--version", "v1.21.1", rel, CERT_MANAGER, namespace=ns
    )
    assert result.returncode == 0, result.stderr
    assert elapsed < 30, elapsed  # a wait would last the 60 s delay (the 5m0s default timeout would not end it)
    live = deployments(a_minute, ns)
    assert sorted(live) == sorted(CERT_MANAGER_DEPLOYMENTS)
    assert not any(wait.deployment_ready(dep) for dep in live.values())


def test_a_chart_without_workloads_does_not_wait(a_minute):
    ns, rel = "envoy-ai-gateway-system", "mp-ai-gateway-crds-helm"
    result, elapsed = helm(
        a_minute,
        "upgrade",
        "-i",
        "--create-namespace",
        "--wait",
        "--version",
        "v1.1.0",
        rel,
        AI_GATEWAY_CRDS,
        namespace=ns,
    )
    assert result.returncode == 0, result.stderr
    assert "STATUS: deployed" in result.stdout
    assert elapsed < 30, elapsed  # nothing to wait for, although nothing in this stand-in is ready within 60 s
    assert deployments(a_minute, ns) == {}
