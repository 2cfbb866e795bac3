"""The test control plane itself: a real v1.36.3 API server on 127.0.0.1, kwok nodes that run what charts make,
clean start and stop, and the failure mechanisms the collection's tests use."""

from __future__ import annotations

import json
import os
import socket
import subprocess
import sys
import time
from pathlib import Path

import pytest

from cluster import binaries
from cluster.fixtures import ClusterHandle, count_requests, running_cluster, wait_for
from cluster.kwok import node_manifest, stages

pytestmark = pytest.mark.slow
HERE = Path(__file__).resolve().parent

WORKLOADS = """
apiVersion: apps/v1
kind: Deployment
metadata: {name: web, namespace: default}
spec:
  replicas: 2
  selector: {matchLabels: {app: web}}
  template:
    metadata: {labels: {app: web}}
    spec: {containers: [{name: c, image: registry.invalid/web:1}]}
---
apiVersion: apps/v1
kind: DaemonSet
metadata: {name: gpu-agent, namespace: default}
spec:
  selector: {matchLabels: {app: gpu-agent}}
  template:
    metadata: {labels: {app: gpu-agent}}
    spec:
      tolerations: [{key: nvidia.com/gpu, operator: Exists, effect: NoSchedule}]
      nodeSelector: {feature.node.kubernetes.io/pci-10de.present: "true"}
      containers: [{name: c, image: registry.invalid/agent:1}]
---
apiVersion: apps/v1
kind: StatefulSet
metadata: {name: db, namespace: default}
spec:
  replicas: 1
  serviceName: db
  selector: {matchLabels: {app: db}}
  template:
    metadata: {labels: {app: db}}
    spec: {containers: [{name: c, image: registry.invalid/db:1}]}
---
apiVersion: batch/v1
kind: Job
metadata: {name: once, namespace: default}
spec:
  template:
    spec: {restartPolicy: Never, containers: [{name: c, image: registry.invalid/job:1}]}
"""


def get_json(handle: ClusterHandle, *args: str) -> dict:
    return json.loads(handle.kubectl("get", *args, "-o", "json").stdout)


def test_the_server_is_kubernetes_1_36_3_on_loopback(cluster: ClusterHandle) -> None:
    version = json.loads(cluster.kubectl("get", "--raw", "/version").stdout)
    assert version["gitVersion"] == "v1.36.3" and version["minor"] == "36"
    assert cluster.url.startswith("https://127.0.0.1:")
    assert Path(cluster.kubeconfig).stat().st_mode & 0o777 == 0o600
    served = cluster.kubectl("api-versions").stdout.split()
    assert {"resource.k8s.io/v1", "discovery.k8s.io/v1", "admissionregistration.k8s.io/v1"} <= set(served)


def test_every_component_listens_on_loopback_only(cluster: ClusterHandle) -> None:
    pids = {p.read_text().strip() for p in cluster.cluster_workdir.glob("kwok/clusters/*/pids/*.pid")}
    assert len(pids) >= 5, pids
    listening = subprocess.run(["ss", "-Hltnp"], capture_output=True, text=True, check=True).stdout.splitlines()
    ours = [line for line in listening if any(f"pid={pid}," in line for pid in pids)]
    assert ours, listening
    assert all(line.split()[3].startswith("127.0.0.1:") for line in ours), ours


def test_nodes_carry_what_the_charts_select_on(cluster: ClusterHandle) -> None:
    # The node lifecycle controller lifts its node.kubernetes.io/not-ready taint a moment after a node turns Ready.
    deadline = time.monotonic() + 60
    while True:
        nodes = {n["metadata"]["name"]: n for n in get_json(cluster, "nodes")["items"]}
        lifecycle = [taint for node in nodes.values() for taint in node["spec"].get("taints") or []
                     if taint["key"].startswith("node.kubernetes.io/")]
        if not lifecycle or time.monotonic() > deadline:
            break
        time.sleep(0.5)
    assert sorted(nodes) == ["kwok-gpu-2", "kwok-gpu-3", "kwok-node-1"]
    for name, node in nodes.items():
        ready = [c for c in node["status"]["conditions"] if c["type"] == "Ready"]
        assert ready and ready[0]["status"] == "True", name
    gpu = nodes["kwok-gpu-2"]
    assert gpu["status"]["capacity"]["nvidia.com/gpu"] == "8"
    assert gpu["metadata"]["labels"]["feature.node.kubernetes.io/pci-10de.present"] == "true"
    assert gpu["spec"]["taints"] == [{"key": "nvidia.com/gpu", "value": "present", "effect": "NoSchedule"}]
    assert "nvidia.com/gpu" not in nodes["kwok-node-1"]["status"]["capacity"]


def test_workloads_get_ready_pods_and_jobs_complete(cluster: ClusterHandle) -> None:
    cluster.kubectl("apply", "-f", "-", input=WORKLOADS)
    cluster.kubectl("rollout", "status", "deployment/web", "--timeout=60s")
    cluster.kubectl("rollout", "status", "daemonset/gpu-agent", "--timeout=60s")
    cluster.kubectl("rollout", "status", "statefulset/db", "--timeout=60s")
    cluster.kubectl("wait", "--for=condition=Complete", "job/once", "--timeout=60s")
    pods = get_json(cluster, "pods", "-l", "app=gpu-agent")["items"]
    assert sorted(p["spec"]["nodeName"] for p in pods) == ["kwok-gpu-2", "kwok-gpu-3"]
    assert all(p["status"]["phase"] == "Running" for p in pods)
    slices = get_json(cluster, "endpointslices", "-l", "kubernetes.io/service-name=kubernetes")["items"]
    assert slices, "the EndpointSlice controller runs"


def test_garbage_collection_and_namespace_finalisation_are_real(cluster: ClusterHandle) -> None:
    cluster.kubectl("create", "namespace", "doomed")
    cluster.kubectl("-n", "doomed", "create", "deployment", "gone", "--image=registry.invalid/x:1")
    cluster.kubectl("-n", "doomed", "rollout", "status", "deployment/gone", "--timeout=60s")
    cluster.kubectl("delete", "namespace", "doomed", "--timeout=90s")
    assert cluster.kubectl("get", "namespace", "doomed", check=False).returncode != 0
    cluster.kubectl("create", "deployment", "owner", "--image=registry.invalid/x:1")
    cluster.kubectl("rollout", "status", "deployment/owner", "--timeout=60s")
    cluster.kubectl("delete", "deployment", "owner", "--cascade=foreground", "--timeout=60s")
    assert wait_for(lambda: not get_json(cluster, "replicasets", "-l", "app=owner")["items"])


def test_a_validating_admission_policy_refuses_writes_until_lifted(cluster: ClusterHandle) -> None:
    allow = cluster.deny_writes("ConfigMap", "default", "locked")
    refused = cluster.kubectl("create", "configmap", "locked-1", check=False)
    assert refused.returncode != 0 and "ValidatingAdmissionPolicy" in refused.stderr, refused.stderr
    assert "refused by the test" in refused.stderr
    cluster.kubectl("create", "configmap", "open-1")
    allow()
    cluster.kubectl("create", "configmap", "locked-2")


def test_the_audit_log_counts_a_runs_requests(cluster: ClusterHandle) -> None:
    mark = cluster.audit_mark()
    cluster.kubectl("create", "configmap", "counted")
    cluster.kubectl("get", "configmap", "counted")
    requests = cluster.requests_since(mark)
    assert requests["resources"].get("create configmaps") == 1, requests
    assert requests["resources"].get("get configmaps") == 1, requests
    assert not any("leases" in key for key in requests["resources"]), "the control plane's own are left out"


def test_count_requests_leaves_out_the_control_plane_and_discovery() -> None:
    def event(verb: str, agent: str, resource: str | None, group: str = "") -> dict:
        ref = {"resource": resource, "apiGroup": group} if resource else None
        return {"stage": "ResponseComplete", "verb": verb, "userAgent": agent, "objectRef": ref}

    events = [event("patch", "Helm/3.17.2", "deployments", "apps"),
              event("update", "kube-scheduler/v1.36", "leases"),
              event("get", "kubectl/v1.32", None),
              {**event("create", "Helm/3.17.2", "secrets"), "stage": "RequestReceived"},
              event("list", "operator-double/0", "certificates", "cert-manager.io")]
    assert count_requests(events) == {"total": 1, "verbs": {"patch": 1}, "resources": {"patch deployments.apps": 1}}


def test_runtime_config_switches_an_api_off(tmp_path: Path) -> None:
    with running_cluster(tmp_path, runtime_config="resource.k8s.io/v1=false,resource.k8s.io/v1beta1=false,"
                                                   "resource.k8s.io/v1beta2=false", nodes=1, gpu_nodes=0,
                         operator_double=False, audit=False) as handle:
        served = handle.kubectl("api-versions").stdout.split()
        assert not [v for v in served if v.startswith("resource.k8s.io/")], served
        assert "apps/v1" in served


def test_ready_after_delays_pod_readiness(tmp_path: Path) -> None:
    with running_cluster(tmp_path, ready_after=4, nodes=1, gpu_nodes=0, operator_double=False,
                         audit=False) as handle:
        handle.kubectl("create", "deployment", "slow", "--image=registry.invalid/x:1")
        assert wait_for(lambda: get_json(handle, "pods", "-l", "app=slow")["items"], timeout=10)
        started = time.monotonic()
        handle.kubectl("rollout", "status", "deployment/slow", "--timeout=60s")
        assert time.monotonic() - started > 2, "pods turned Ready before the delay"


def test_a_stopped_cluster_leaves_nothing_behind(tmp_path: Path) -> None:
    with running_cluster(tmp_path, nodes=1, gpu_nodes=0, operator_double=False, audit=False) as handle:
        kubeconfig = Path(handle.kubeconfig)
        workdir = handle.cluster_workdir
        pids = [int(p.read_text()) for p in workdir.glob("kwok/clusters/*/pids/*.pid")]
        handle.stop_apiserver()
        dead = handle.kubectl("get", "namespaces", check=False)
        assert dead.returncode != 0 and "refused" in dead.stderr, dead.stderr
        # No later server can take the dead one's port (Go listens with SO_REUSEADDR, as this probe does).
        port = int(handle.url.rsplit(":", 1)[1])
        with socket.socket() as probe:
            probe.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
            with pytest.raises(OSError):
                probe.bind(("127.0.0.1", port))
                probe.listen()
    assert not kubeconfig.exists() and not workdir.exists()
    alive = [pid for pid in pids if Path(f"/proc/{pid}").exists()
             and "zombie" not in Path(f"/proc/{pid}/status").read_text().lower()]
    assert not alive, alive


def test_clusters_started_at_the_same_time_all_come_up_apart(cluster: ClusterHandle, tmp_path: Path) -> None:
    """kwokctl tries ports in the same order in every process: creations at once must not pick the same ones."""
    from concurrent.futures import ThreadPoolExecutor

    from cluster.fixtures import start_cluster, stop_cluster

    def start(name: str) -> ClusterHandle:
        return start_cluster(tmp_path / name, nodes=1, gpu_nodes=0, operator_double=False, audit=False)

    with ThreadPoolExecutor(max_workers=2) as pool:
        started = list(pool.map(start, ["a", "b"]))
    try:
        assert len({cluster.url, *(other.url for other in started)}) == 3
        started[0].kubectl("create", "configmap", "only-in-a")
        assert started[1].kubectl("get", "configmap", "only-in-a", check=False).returncode != 0
        assert cluster.kubectl("get", "configmap", "only-in-a", check=False).returncode != 0
    finally:
        for other in started:
            stop_cluster(other.process)


def test_ready_after_adds_a_delay_to_kwoks_pod_stages_only() -> None:
    stage_dir = binaries.ensure_built(quiet=True) / "stages"
    delayed = {doc.split("name: ")[1].split()[0]: doc for doc in stages(stage_dir, 2.5)}
    assert "durationMilliseconds: 2500" in delayed["pod-ready"]
    assert "durationMilliseconds: 2500" in delayed["pod-complete"]
    assert "durationMilliseconds: 2500" not in delayed["pod-delete"]
    assert all("durationMilliseconds: 2500" not in doc for doc in stages(stage_dir, 0))


def test_node_manifest_marks_gpu_nodes() -> None:
    gpu, cpu = node_manifest(2, gpu=True), node_manifest(1, gpu=False)
    assert gpu["metadata"]["annotations"] == {"kwok.x-k8s.io/node": "fake"}
    assert gpu["status"]["capacity"]["nvidia.com/gpu"] == "8" and cpu["spec"]["taints"] == []


def test_build_names_a_missing_go_in_one_line(tmp_path: Path) -> None:
    env = {**os.environ, "PATH": str(tmp_path)}
    proc = subprocess.run([sys.executable, str(HERE / "build")], env=env, capture_output=True, text=True,
                          check=False)
    assert proc.returncode == 1
    assert proc.stderr.strip().splitlines() == [
        "testing/cluster/build: no 'go' on PATH: Go 1.26 or newer builds the test control plane "
        "(https://go.dev/doc/install)"]


def test_build_refuses_an_old_go(tmp_path: Path) -> None:
    fake = tmp_path / "go"
    fake.write_text("#!/bin/sh\necho 'go version go1.22.5 linux/amd64'\n")
    fake.chmod(0o755)
    proc = subprocess.run([sys.executable, str(HERE / "build")], env={**os.environ, "PATH": str(tmp_path)},
                          capture_output=True, text=True, check=False)
    assert proc.returncode == 1
    assert proc.stderr.strip() == ("testing/cluster/build: 'go version go1.22.5 linux/amd64' is too old: Go 1.26 "
                                   "or newer builds the test control plane")


def test_apiserver_args_reach_kube_apiserver(tmp_path: Path) -> None:
    import ssl
    import urllib.error
    import urllib.request

    with running_cluster(tmp_path, nodes=1, gpu_nodes=0, operator_double=False, audit=False,
                         apiserver_args={"anonymous-auth": "false"}) as handle:
        context = ssl.create_default_context(cafile=handle.ca_file)
        with pytest.raises(urllib.error.HTTPError) as refused:
            urllib.request.urlopen(handle.url + "/api/v1/namespaces", context=context, timeout=10)
        assert refused.value.code == 401
