"""The test charts installed on one real kwok cluster (``testing/cluster``), as the collection installs them.

Each chart of the components table, at its default version, with the collection's values, release and namespace,
goes in with ``helm install --wait`` in the table's order (cert-manager before trust-manager, whose Issuer and
Certificate need cert-manager's CRDs). Each must end ``deployed`` with every Deployment and DaemonSet ready and its
hook Jobs done; the DRA driver must also refuse to install on a cluster that serves no ``resource.k8s.io``, as
upstream's does. Run: ``.venv/bin/python -m pytest -p no:xdist testing/charts/test_charts_live.py``.
"""

from __future__ import annotations

import importlib.util
import json
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path
from types import ModuleType
from typing import Any

import pytest
import yaml

HERE = Path(__file__).resolve().parent
if str(HERE.parent) not in sys.path:
    sys.path.insert(0, str(HERE.parent))

from cluster.fixtures import ClusterHandle, cluster, running_cluster  # noqa: E402, F401


def _load(name: str, path: Path) -> ModuleType:
    spec = importlib.util.spec_from_file_location(name, path)
    assert spec and spec.loader
    module = importlib.util.module_from_spec(spec)
    sys.modules[name] = module
    spec.loader.exec_module(module)
    return module


charts = _load("testing_charts_test_charts_for_live", HERE / "test_charts.py")
chart_repo = charts.chart_repo
pytestmark = pytest.mark.slow
HELM_TIMEOUT = "300s"
NO_RESOURCE_API = "resource.k8s.io/v1=false,resource.k8s.io/v1beta2=false,resource.k8s.io/v1beta1=false"


def _default_version(chart: Any) -> str:
    """The chart's version in the components table, else the ServingStack CRD's default for its version key."""
    if chart.version is not None:
        return str(chart.version)
    crd = yaml.safe_load((charts.REPO_ROOT / "crds" / "servingstacks.infrastructure.modelplane.ai.yaml").read_text())
    node = crd["spec"]["versions"][0]["schema"]["openAPIV3Schema"]["properties"]["spec"]
    for step in chart.version_key.split("."):
        node = node["properties"][step]
    return str(node["default"])


TABLE = [chart for component in charts.components.COMPONENTS for chart in component.charts]
IDS = [chart.name for chart in TABLE]


def _helm(handle: ClusterHandle, *args: str, check: bool = True) -> subprocess.CompletedProcess[str]:
    env = {
        **handle.env,
        "HELM_CACHE_HOME": str(handle.workdir / "helm-cache"),
        "HELM_CONFIG_HOME": str(handle.workdir / "helm-config"),
        "HELM_DATA_HOME": str(handle.workdir / "helm-data"),
    }
    result = subprocess.run(
        [charts.fixtures.helm_binary(), *args], env=env, capture_output=True, text=True, timeout=600, check=False
    )
    if check:
        assert result.returncode == 0, f"helm {' '.join(args)} ({result.returncode}):\n{result.stderr}"
    return result


def _install(
    handle: ClusterHandle, repo: Any, chart: Any, *extra: str, check: bool = True
) -> subprocess.CompletedProcess[str]:
    """``helm install --wait`` of the built chart archive, as roles/component does it (kubernetes.core.helm)."""
    values = handle.workdir / f"values-{chart.name}.yaml"
    values.write_text(yaml.safe_dump(charts.collection_values(chart.name)))
    archive = repo.directory / f"{chart.name}-{_default_version(chart)}.tgz"
    return _helm(
        handle,
        "install",
        charts.components.RELEASE_PREFIX + chart.name,
        str(archive),
        "--namespace",
        chart.namespace,
        "--create-namespace",
        "-f",
        str(values),
        "--wait",
        "--timeout",
        HELM_TIMEOUT,
        *extra,
        check=check,
    )


def _objects(handle: ClusterHandle, kind: str, namespace: str) -> list[dict[str, Any]]:
    return json.loads(handle.kubectl("get", kind, "-n", namespace, "-o", "json").stdout)["items"]


def _not_ready(workload: dict[str, Any]) -> bool:
    status = workload.get("status") or {}
    if workload["kind"] == "DaemonSet":
        return status.get("numberReady", 0) != status.get("desiredNumberScheduled", 0)
    return status.get("readyReplicas", 0) != workload["spec"].get("replicas", 1)


@pytest.fixture(scope="module")
def installed(cluster: ClusterHandle, chart_repo: Any) -> Iterator[ClusterHandle]:  # noqa: F811
    """Every table chart installed, in the table's order, on the module's cluster."""
    for chart in TABLE:
        _install(cluster, chart_repo, chart)
    yield cluster


@pytest.mark.parametrize("chart", TABLE, ids=IDS)
def test_chart_is_deployed_with_its_workloads_ready(installed: ClusterHandle, chart: Any) -> None:
    release = charts.components.RELEASE_PREFIX + chart.name
    status = json.loads(_helm(installed, "status", release, "-n", chart.namespace, "-o", "json").stdout)
    assert status["info"]["status"] == "deployed"
    manifest = [d for d in yaml.safe_load_all(status.get("manifest", "")) if isinstance(d, dict)]
    workloads = [
        (d["kind"], d["metadata"].get("namespace", chart.namespace), d["metadata"]["name"])
        for d in manifest
        if d["kind"] in ("Deployment", "DaemonSet")
    ]
    if chart.name != "ai-gateway-crds-helm":
        assert workloads, f"{chart.name} installed no workload"
    for kind, namespace, name in workloads:
        live = json.loads(installed.kubectl("get", kind, name, "-n", namespace, "-o", "json").stdout)
        assert not _not_ready(live), f"{kind}/{name} not ready: {live.get('status')}"


def test_dra_device_classes_use_the_served_resource_api(installed: ClusterHandle) -> None:
    classes = json.loads(installed.kubectl("get", "deviceclasses.resource.k8s.io", "-o", "json").stdout)["items"]
    names = {c["metadata"]["name"] for c in classes}
    assert {"gpu.nvidia.com", "mig.nvidia.com", "vfio.gpu.nvidia.com"} <= names
    policy = installed.kubectl("get", "validatingadmissionpolicy", "resourceslices-policy-dra-driver-nvidia-gpu")
    assert policy.returncode == 0


def test_hook_jobs_ran_and_follow_their_delete_policies(installed: ClusterHandle) -> None:
    # kai-scheduler: pre- and post-install hook Jobs deleted on success (hook-succeeded), so none is left.
    kai = {j["metadata"]["name"] for j in _objects(installed, "jobs", "kai-scheduler")}
    assert not kai & {"crd-upgrader", "topology-migration", "kai-config-deployer"}
    # gateway-helm: the certgen pre-install hook has no delete policy upstream, but ttlSecondsAfterFinished (30 s):
    # helm records it succeeded, and the Job stays, completed, until the TTL controller deletes it.
    namespace = charts._table_chart("gateway-helm").namespace
    gateway = json.loads(_helm(installed, "status", "mp-gateway-helm", "-n", namespace, "-o", "json").stdout)
    hooks = {h["name"]: h["last_run"]["phase"] for h in gateway.get("hooks", []) if h["kind"] == "Job"}
    assert hooks.get("mp-gateway-helm-certgen") == "Succeeded", hooks
    certgen = installed.kubectl("get", "job", "mp-gateway-helm-certgen", "-n", namespace, "-o", "json", check=False)
    if certgen.returncode == 0:
        job = json.loads(certgen.stdout)
        assert job["status"].get("succeeded") == 1 and job["spec"]["ttlSecondsAfterFinished"] == 30, job
    else:
        assert "NotFound" in certgen.stderr, certgen.stderr
    # Helm records each hook of the release; all of kai-scheduler's install hooks succeeded.
    release = json.loads(_helm(installed, "status", "mp-kai-scheduler", "-n", "kai-scheduler", "-o", "json").stdout)
    ran = {h["name"]: h["last_run"]["phase"] for h in release.get("hooks", []) if h["kind"] == "Job"}
    assert {k: ran.get(k) for k in ("crd-upgrader", "topology-migration", "kai-config-deployer")} == {
        "crd-upgrader": "Succeeded",
        "topology-migration": "Succeeded",
        "kai-config-deployer": "Succeeded",
    }


def test_dra_chart_refuses_a_cluster_without_resource_api(chart_repo: Any, tmp_path: Path) -> None:
    """Upstream's validation.yaml: no resource.k8s.io version served (and no resourceApiVersion) fails the install."""
    chart = charts._table_chart("dra-driver-nvidia-gpu")
    with running_cluster(tmp_path, runtime_config=NO_RESOURCE_API) as handle:
        assert "resource.k8s.io" not in handle.kubectl("api-versions").stdout
        result = _install(handle, chart_repo, chart, check=False)
        assert result.returncode != 0
        assert "No supported resource.k8s.io API version found in the cluster" in result.stderr
        # Pinned, the chart renders; the API server then has no DeviceClass kind to create.
        pinned = _install(handle, chart_repo, chart, "--set", "resourceApiVersion=resource.k8s.io/v1", check=False)
        assert pinned.returncode != 0 and "No supported resource.k8s.io" not in pinned.stderr
        assert 'no matches for kind "DeviceClass" in version "resource.k8s.io/v1"' in pinned.stderr
