"""What the collection's Helm values make of the objects, read back from what the real helm created in the cluster.

One converge of the Standard stack (GKE's NVIDIA driver root) with the real helm and the test charts
(testing/charts, whose templates follow the upstream charts' structure); then each assertion reads the cluster.
"""

from __future__ import annotations

import json
import subprocess
from typing import Any

import pytest
import yaml
from cluster.fixtures import VENV_BIN
from stack_support import SITE, get, listed, manifest, output, stack_vars

pytestmark = [pytest.mark.playbook, pytest.mark.slow]

GKE_ROOT = "/home/kubernetes/bin/nvidia"
RELEASE = "meta.helm.sh/release-name"


@pytest.fixture(scope="module")
def converged(cluster):
    result = cluster.run_playbook(SITE, extra_vars=stack_vars(cluster, manifest(nvidiaDriverRoot=GKE_ROOT)))
    assert result.rc == 0, output(result)
    return cluster


def ours(objects: list[dict[str, Any]], release: str) -> list[dict[str, Any]]:
    return [o for o in objects if (o["metadata"].get("annotations") or {}).get(RELEASE) == release]


def test_the_nfd_worker_tolerates_the_gpu_taint(converged):
    worker = get(converged, "apps/v1", "DaemonSet", "mp-node-feature-discovery-worker", "node-feature-discovery")
    assert worker is not None
    tolerations = worker["spec"]["template"]["spec"].get("tolerations") or []
    assert {"key": "nvidia.com/gpu", "operator": "Exists", "effect": "NoSchedule"} in tolerations, tolerations


def test_the_dra_kubelet_plugin_mounts_the_specs_driver_root(converged):
    plugin = get(converged, "apps/v1", "DaemonSet", "dra-driver-nvidia-gpu-kubelet-plugin", "dra-driver-nvidia-gpu")
    assert plugin is not None
    host_paths = [volume["hostPath"]["path"] for volume in plugin["spec"]["template"]["spec"]["volumes"]
                  if "hostPath" in volume]
    assert GKE_ROOT in host_paths, host_paths


def test_envoy_gateway_config_enables_the_ai_gateway_extension_and_inference_pools(converged):
    config = get(converged, "v1", "ConfigMap", "envoy-gateway-config", "envoy-gateway-system")
    assert config is not None
    gateway = yaml.safe_load(config["data"]["envoy-gateway.yaml"])
    manager = gateway["extensionManager"]
    assert manager["service"]["fqdn"]["hostname"].startswith("ai-gateway-controller."), manager
    kinds = [resource["kind"] for resource in manager.get("backendResources", [])]
    assert "InferencePool" in kinds, manager


def test_kube_prometheus_stack_renders_no_grafana_and_no_alertmanager(converged):
    deployments = ours(listed(converged, "apps/v1", "Deployment", "monitoring"), "mp-kube-prometheus-stack")
    assert deployments, "the release created no Deployment"
    assert not [d["metadata"]["name"] for d in deployments if "grafana" in d["metadata"]["name"]]
    assert listed(converged, "monitoring.coreos.com/v1", "Alertmanager") == []
    assert [p["metadata"]["name"] for p in listed(converged, "monitoring.coreos.com/v1", "Prometheus", "monitoring")] \
        == ["prometheus-prometheus"]


def test_cert_managers_crds_belong_to_its_release(converged):
    for name in ("certificates.cert-manager.io", "issuers.cert-manager.io", "clusterissuers.cert-manager.io"):
        crd = get(converged, "apiextensions.k8s.io/v1", "CustomResourceDefinition", name)
        assert crd is not None, name
        annotations = crd["metadata"]["annotations"]
        assert (annotations[RELEASE], annotations["meta.helm.sh/release-namespace"]) \
            == ("mp-cert-manager", "cert-manager"), annotations
        # crds.keep (upstream's default): uninstalling the release leaves the CRDs and users' certificates.
        assert annotations.get("helm.sh/resource-policy") == "keep", annotations


def test_each_deployments_image_tag_is_its_charts_pinned_app_version(converged):
    """Every Deployment a release of ours created runs its chart's appVersion (the chart's own, not a subchart's)."""
    listing = subprocess.run([str(VENV_BIN / "helm"), "list", "-A", "-o", "json"], env=converged.env,
                             capture_output=True, text=True, timeout=60, check=True)
    checked = []
    for release in json.loads(listing.stdout):
        if not release["name"].startswith("mp-"):
            continue
        for deployment in ours(listed(converged, "apps/v1", "Deployment", release["namespace"]), release["name"]):
            if deployment["metadata"].get("labels", {}).get("helm.sh/chart", release["chart"]) != release["chart"]:
                continue  # a subchart's (kube-state-metrics): its own appVersion
            for container in deployment["spec"]["template"]["spec"]["containers"]:
                tag = container["image"].rsplit(":", 1)[1].split("@")[0]
                assert tag == release["app_version"], (release["chart"], deployment["metadata"]["name"], container)
                checked.append(deployment["metadata"]["name"])
    assert len(checked) >= 8, checked
