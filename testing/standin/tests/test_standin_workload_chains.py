"""The stand-in's simulated workload chains (a TEST DOUBLE of kube-controller-manager and the kubelet).

Deployment -> ReplicaSet -> Pods, DaemonSet/StatefulSet pods, Jobs, Service Endpoints and bound
PersistentVolumeClaims, read back with the `kubernetes` Python client; then the real helm 3 and helm 4
binaries waiting on them (`--wait`), and helm 4's server-side apply (conflicts, `--force-conflicts`).
Everything here is proven against the stand-in only.
"""

from __future__ import annotations

import re
import subprocess
import time
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import pytest
import yaml
from kubernetes import client as k8s
from standin.fixtures import REPO, VENV_BIN, ClusterHandle, running_cluster

DELAY = 1.0  # ready_after of the `slow` cluster
HELM_DELAY = 3.0  # ready_after of the `slow_helm` cluster: longer than the failing `--timeout 2s`
SLACK = 4.0
HELMS = {"helm3": VENV_BIN / "helm", "helm4": REPO / ".venv" / "helm4" / "bin" / "helm"}
POD_SUFFIX = "[bcdfghjklmnpqrstvwxz2456789]{5}"
REVISION = "deployment.kubernetes.io/revision"


@pytest.fixture(scope="module")
def fast(tmp_path_factory: pytest.TempPathFactory) -> Iterator[ClusterHandle]:
    with running_cluster(tmp_path_factory.mktemp("fast")) as handle:
        yield handle


@pytest.fixture(scope="module")
def slow(tmp_path_factory: pytest.TempPathFactory) -> Iterator[ClusterHandle]:
    with running_cluster(tmp_path_factory.mktemp("slow"), ready_after=DELAY) as handle:
        yield handle


@pytest.fixture(scope="module")
def slow_helm(tmp_path_factory: pytest.TempPathFactory) -> Iterator[ClusterHandle]:
    with running_cluster(tmp_path_factory.mktemp("slow-helm"), ready_after=HELM_DELAY) as handle:
        yield handle


# ---------------------------------------------------------------- helpers


def namespace(cluster: ClusterHandle, name: str) -> str:
    k8s.CoreV1Api(cluster.client()).create_namespace({"metadata": {"name": name}})
    return name


def template(app: str, image: str = "example.invalid/app:1", port: int | None = None) -> dict[str, Any]:
    container: dict[str, Any] = {"name": "app", "image": image}
    if port:
        container["ports"] = [{"name": "http", "containerPort": port}]
    return {"metadata": {"labels": {"app": app}}, "spec": {"containers": [container]}}


def deployment(name: str, replicas: int = 2, image: str = "example.invalid/app:1") -> dict[str, Any]:
    return {"apiVersion": "apps/v1", "kind": "Deployment", "metadata": {"name": name},
            "spec": {"replicas": replicas, "selector": {"matchLabels": {"app": name}},
                     "template": template(name, image, port=8080)}}


def wait_for(fetch: Callable[[], Any], predicate: Callable[[Any], bool], timeout: float) -> Any:
    deadline = time.monotonic() + timeout
    value = fetch()
    while not predicate(value) and time.monotonic() < deadline:
        time.sleep(0.05)
        value = fetch()
    return value


def conditions(obj: Any) -> dict[str, str]:
    return {c.type: c.status for c in obj.status.conditions or []}


def owned_by(obj: Any, owner: Any) -> bool:
    return any(ref.uid == owner.metadata.uid and ref.controller for ref in obj.metadata.owner_references or [])


def replicasets(cluster: ClusterHandle, ns: str, dep: Any) -> list[Any]:
    """What helm 3's `deploymentutil.GetNewReplicaSet` lists: by the Deployment's selector, controlled by it."""
    selector = ",".join(f"{k}={v}" for k, v in dep.spec.selector.match_labels.items())
    items = k8s.AppsV1Api(cluster.client()).list_namespaced_replica_set(ns, label_selector=selector).items
    return [rs for rs in items if owned_by(rs, dep)]


def pods_of(cluster: ClusterHandle, ns: str, owner: Any) -> list[Any]:
    return [p for p in k8s.CoreV1Api(cluster.client()).list_namespaced_pod(ns).items if owned_by(p, owner)]


def assert_pod_ready(pod: Any) -> None:
    assert pod.status.phase == "Running", pod.status
    assert conditions(pod) == {"PodReadyToStartContainers": "True", "Initialized": "True", "Ready": "True",
                               "ContainersReady": "True", "PodScheduled": "True"}
    assert all(s.ready and s.started and s.state.running for s in pod.status.container_statuses)
    assert pod.status.pod_ip and pod.spec.node_name == "standin-node"


# ---------------------------------------------------------------- Python client: the chains


def test_deployment_makes_a_replicaset_and_its_pods(fast):
    ns = namespace(fast, "chain")
    apps = k8s.AppsV1Api(fast.client())
    apps.create_namespaced_deployment(ns, deployment("web", replicas=3))
    fast.controllers.settle()
    dep = apps.read_namespaced_deployment("web", ns)
    [rs] = replicasets(fast, ns, dep)
    digest = rs.metadata.labels["pod-template-hash"]
    assert re.fullmatch(r"[bcdfghjklmnpqrstvwxz2456789]{6,10}", digest)
    assert rs.metadata.name == f"web-{digest}"
    ref = rs.metadata.owner_references[0]
    assert (ref.api_version, ref.kind, ref.name, ref.uid, ref.controller, ref.block_owner_deletion) == (
        "apps/v1", "Deployment", "web", dep.metadata.uid, True, True)
    assert rs.spec.selector.match_labels == {"app": "web", "pod-template-hash": digest}
    assert rs.spec.template.metadata.labels == {"app": "web", "pod-template-hash": digest}
    assert rs.spec.replicas == 3 and rs.metadata.annotations[REVISION] == "1"
    assert dep.metadata.annotations[REVISION] == "1"
    assert (rs.status.replicas, rs.status.ready_replicas, rs.status.available_replicas,
            rs.status.fully_labeled_replicas, rs.status.observed_generation) == (3, 3, 3, 3, rs.metadata.generation)
    pods = pods_of(fast, ns, rs)
    assert len(pods) == 3
    for pod in pods:
        assert re.fullmatch(f"{rs.metadata.name}-{POD_SUFFIX}", pod.metadata.name), pod.metadata.name
        assert pod.metadata.labels == {"app": "web", "pod-template-hash": digest}
        assert_pod_ready(pod)
    status = dep.status
    assert (status.observed_generation, status.replicas, status.updated_replicas, status.ready_replicas,
            status.available_replicas, status.unavailable_replicas) == (1, 3, 3, 3, 3, None)
    reasons = {c.type: (c.status, c.reason) for c in status.conditions}
    assert reasons == {"Available": ("True", "MinimumReplicasAvailable"),
                       "Progressing": ("True", "NewReplicaSetAvailable")}


def test_a_template_change_makes_a_new_replicaset_and_a_rollback_reuses_the_old(fast):
    ns = namespace(fast, "rollout")
    apps = k8s.AppsV1Api(fast.client())
    apps.create_namespaced_deployment(ns, deployment("web"))
    fast.controllers.settle()
    [first] = replicasets(fast, ns, apps.read_namespaced_deployment("web", ns))
    patch = {"spec": {"template": {"spec": {"containers": [{"name": "app", "image": "example.invalid/app:2"}]}}}}
    apps.patch_namespaced_deployment("web", ns, patch)
    fast.controllers.settle()
    dep = apps.read_namespaced_deployment("web", ns)
    by_name = {rs.metadata.name: rs for rs in replicasets(fast, ns, dep)}
    assert len(by_name) == 2
    second = next(rs for name, rs in by_name.items() if name != first.metadata.name)
    assert second.metadata.labels["pod-template-hash"] != first.metadata.labels["pod-template-hash"]
    assert (second.spec.replicas, second.metadata.annotations[REVISION]) == (2, "2")
    old = by_name[first.metadata.name]
    assert old.spec.replicas == 0 and not pods_of(fast, ns, old) and not old.status.ready_replicas
    assert dep.metadata.annotations[REVISION] == "2" and dep.status.updated_replicas == 2
    assert {p.spec.containers[0].image for p in pods_of(fast, ns, second)} == {"example.invalid/app:2"}

    apps.patch_namespaced_deployment("web", ns, {"spec": {"template": {"spec": {"containers": [
        {"name": "app", "image": "example.invalid/app:1"}]}}}})
    fast.controllers.settle()
    dep = apps.read_namespaced_deployment("web", ns)
    by_name = {rs.metadata.name: rs for rs in replicasets(fast, ns, dep)}
    assert len(by_name) == 2, "the old template's ReplicaSet is found again, not copied"
    assert by_name[first.metadata.name].spec.replicas == 2
    assert by_name[first.metadata.name].metadata.annotations[REVISION] == "3"
    assert dep.metadata.annotations[REVISION] == "3"


def test_scaling_keeps_the_replicaset_and_deleting_cascades(fast):
    ns = namespace(fast, "scale")
    apps = k8s.AppsV1Api(fast.client())
    apps.create_namespaced_deployment(ns, deployment("web", replicas=3))
    fast.controllers.settle()
    apps.patch_namespaced_deployment("web", ns, {"spec": {"replicas": 1}})
    fast.controllers.settle()
    dep = apps.read_namespaced_deployment("web", ns)
    [rs] = replicasets(fast, ns, dep)
    assert rs.spec.replicas == 1 and len(pods_of(fast, ns, rs)) == 1
    assert dep.status.ready_replicas == 1 and dep.metadata.annotations[REVISION] == "1"
    apps.delete_namespaced_deployment("web", ns)
    fast.controllers.settle()
    assert not apps.list_namespaced_replica_set(ns).items
    assert not k8s.CoreV1Api(fast.client()).list_namespaced_pod(ns).items


def test_daemonset_statefulset_job_service_and_claim(fast):
    ns = namespace(fast, "kinds")
    api = fast.client()
    apps, core, batch = k8s.AppsV1Api(api), k8s.CoreV1Api(api), k8s.BatchV1Api(api)
    apps.create_namespaced_daemon_set(ns, {"metadata": {"name": "agent"}, "spec": {
        "selector": {"matchLabels": {"app": "agent"}}, "template": template("agent")}})
    apps.create_namespaced_stateful_set(ns, {"metadata": {"name": "db"}, "spec": {
        "replicas": 2, "serviceName": "db", "selector": {"matchLabels": {"app": "db"}},
        "template": template("db", port=5432),
        "volumeClaimTemplates": [{"metadata": {"name": "data"}, "spec": {
            "accessModes": ["ReadWriteOnce"], "resources": {"requests": {"storage": "1Gi"}}}}]}})
    core.create_namespaced_service(ns, {"metadata": {"name": "db"}, "spec": {
        "selector": {"app": "db"}, "ports": [{"name": "pg", "port": 5432, "targetPort": "http"}]}})
    core.create_namespaced_persistent_volume_claim(ns, {"metadata": {"name": "cache"}, "spec": {
        "accessModes": ["ReadWriteOnce"], "resources": {"requests": {"storage": "2Gi"}}}})
    batch.create_namespaced_job(ns, {"metadata": {"name": "migrate"}, "spec": {
        "template": {"spec": {"restartPolicy": "Never", "containers": [{"name": "m", "image": "busybox:1"}]}}}})
    fast.controllers.settle()

    ds = apps.read_namespaced_daemon_set("agent", ns)
    status = ds.status
    assert (status.desired_number_scheduled, status.current_number_scheduled, status.updated_number_scheduled,
            status.number_ready, status.number_available, status.observed_generation) == (1, 1, 1, 1, 1, 1)
    [agent] = pods_of(fast, ns, ds)
    assert re.fullmatch(f"agent-{POD_SUFFIX}", agent.metadata.name)
    assert_pod_ready(agent)

    sts = apps.read_namespaced_stateful_set("db", ns)
    status = sts.status
    assert (status.replicas, status.ready_replicas, status.current_replicas, status.updated_replicas,
            status.available_replicas, status.observed_generation) == (2, 2, 2, 2, 2, 1)
    assert status.current_revision == status.update_revision and status.update_revision.startswith("db-")
    pods = sorted(pods_of(fast, ns, sts), key=lambda p: p.metadata.name)
    assert [p.metadata.name for p in pods] == ["db-0", "db-1"]
    for pod in pods:
        assert pod.metadata.labels["controller-revision-hash"] == status.update_revision
        assert_pod_ready(pod)
    for name, size in (("data-db-0", "1Gi"), ("data-db-1", "1Gi"), ("cache", "2Gi")):
        claim = core.read_namespaced_persistent_volume_claim(name, ns)
        assert (claim.status.phase, claim.status.capacity, claim.status.access_modes) == (
            "Bound", {"storage": size}, ["ReadWriteOnce"]), claim.status
        assert claim.spec.volume_name == f"pvc-{claim.metadata.uid}"

    svc = core.read_namespaced_service("db", ns)
    assert svc.spec.cluster_ip
    endpoints = core.read_namespaced_endpoints("db", ns)
    [subset] = endpoints.subsets
    assert sorted(a.ip for a in subset.addresses) == sorted(p.status.pod_ip for p in pods)
    assert {a.target_ref.name for a in subset.addresses} == {"db-0", "db-1"} and not subset.not_ready_addresses
    assert [(p.name, p.port, p.protocol) for p in subset.ports] == [("pg", 5432, "TCP")], "named targetPort resolved"

    job = batch.read_namespaced_job("migrate", ns)
    assert job.status.succeeded == 1 and not job.status.active
    assert job.status.start_time and job.status.completion_time
    assert conditions(job) == {"SuccessCriteriaMet": "True", "Complete": "True"}

    core.delete_namespaced_service("db", ns)
    fast.controllers.settle()
    assert not [e for e in core.list_namespaced_endpoints(ns).items if e.metadata.name == "db"]


def test_ready_after_holds_every_link_of_the_chains(slow):
    ns = namespace(slow, "delayed")
    api = slow.client()
    apps, core = k8s.AppsV1Api(api), k8s.CoreV1Api(api)
    apps.create_namespaced_deployment(ns, deployment("web"))
    core.create_namespaced_service(ns, {"metadata": {"name": "web"}, "spec": {
        "selector": {"app": "web"}, "ports": [{"port": 80, "targetPort": 8080}]}})
    core.create_namespaced_persistent_volume_claim(ns, {"metadata": {"name": "data"}, "spec": {
        "accessModes": ["ReadWriteOnce"], "resources": {"requests": {"storage": "1Gi"}}}})
    start = time.monotonic()
    slow.controllers.settle()

    dep = apps.read_namespaced_deployment("web", ns)
    [rs] = replicasets(slow, ns, dep)
    assert rs.status.replicas == 2 and not rs.status.ready_replicas, rs.status
    pods = pods_of(slow, ns, rs)
    assert len(pods) == 2
    for pod in pods:
        assert pod.status.phase == "Pending" and conditions(pod)["Ready"] == "False", pod.status
        assert pod.status.container_statuses[0].state.waiting.reason == "ContainerCreating"
    [subset] = core.read_namespaced_endpoints("web", ns).subsets
    assert not subset.addresses and len(subset.not_ready_addresses) == 2
    assert core.read_namespaced_persistent_volume_claim("data", ns).status.phase == "Pending"
    assert conditions(dep)["Available"] == "False"

    # No write from here on: the controller loop wakes up when the delay expires.
    dep = wait_for(lambda: apps.read_namespaced_deployment("web", ns),
                   lambda d: d.status.ready_replicas == 2, DELAY + SLACK)
    assert dep.status.ready_replicas == 2 and time.monotonic() - start >= DELAY - 0.1
    assert all(conditions(p)["Ready"] == "True" for p in pods_of(slow, ns, rs))
    [subset] = core.read_namespaced_endpoints("web", ns).subsets
    assert len(subset.addresses) == 2 and not subset.not_ready_addresses
    assert [(p.port, p.protocol) for p in subset.ports] == [(8080, "TCP")]
    claim = wait_for(lambda: core.read_namespaced_persistent_volume_claim("data", ns),
                     lambda c: c.status.phase == "Bound", SLACK)
    assert claim.status.phase == "Bound"

    # Scaling up: the running pods stay ready, only the new one waits.
    apps.patch_namespaced_deployment("web", ns, {"spec": {"replicas": 3}})
    slow.controllers.settle()
    status = apps.read_namespaced_deployment("web", ns).status
    assert (status.replicas, status.ready_replicas, status.unavailable_replicas) == (3, 2, 1)
    status = wait_for(lambda: apps.read_namespaced_deployment("web", ns).status,
                      lambda s: s.ready_replicas == 3, DELAY + SLACK)
    assert status.ready_replicas == 3


# ---------------------------------------------------------------- real helm 3 and helm 4


CHART_TEMPLATES = """\
apiVersion: apps/v1
kind: Deployment
metadata: {name: web}
spec:
  replicas: 2
  selector: {matchLabels: {app: web}}
  template:
    metadata: {labels: {app: web}}
    spec:
      containers: [{name: web, image: "example.invalid/web:{{ .Values.tag }}", ports: [{containerPort: 8080}]}]
---
apiVersion: apps/v1
kind: DaemonSet
metadata: {name: agent}
spec:
  selector: {matchLabels: {app: agent}}
  template:
    metadata: {labels: {app: agent}}
    spec:
      containers: [{name: agent, image: "example.invalid/agent:1"}]
---
apiVersion: apps/v1
kind: StatefulSet
metadata: {name: db}
spec:
  replicas: 2
  serviceName: db
  selector: {matchLabels: {app: db}}
  template:
    metadata: {labels: {app: db}}
    spec:
      containers: [{name: db, image: "example.invalid/db:1"}]
  volumeClaimTemplates:
    - metadata: {name: data}
      spec: {accessModes: [ReadWriteOnce], resources: {requests: {storage: 1Gi}}}
---
apiVersion: v1
kind: Service
metadata: {name: web}
spec:
  selector: {app: web}
  ports: [{port: 80, targetPort: 8080}]
---
apiVersion: v1
kind: PersistentVolumeClaim
metadata: {name: cache}
spec:
  accessModes: [ReadWriteOnce]
  resources: {requests: {storage: 1Gi}}
---
apiVersion: batch/v1
kind: Job
metadata:
  name: hook
  annotations:
    helm.sh/hook: post-install,pre-upgrade,pre-delete
    helm.sh/hook-delete-policy: before-hook-creation,hook-succeeded
spec:
  template:
    spec:
      restartPolicy: Never
      containers: [{name: hook, image: "example.invalid/hook:1"}]
"""


@pytest.fixture
def chart(tmp_path: Path) -> Path:
    root = tmp_path / "chains"
    (root / "templates").mkdir(parents=True)
    (root / "Chart.yaml").write_text(yaml.safe_dump({"apiVersion": "v2", "name": "chains", "version": "0.1.0"}))
    (root / "values.yaml").write_text("tag: '1'\n")
    (root / "templates" / "all.yaml").write_text(CHART_TEMPLATES)
    return root


def helm(binary: str, cluster: ClusterHandle, home: Path, *args: str) -> subprocess.CompletedProcess[str]:
    """The real helm binary (no helm test double) against the stand-in, with its homes in `home`."""
    path = HELMS[binary]
    assert path.is_file(), f"{path} is missing: install the real helm binaries (tools/install_kube_binaries.py)"
    env = {**cluster.env, "HELM_CACHE_HOME": str(home / "cache"), "HELM_CONFIG_HOME": str(home / "config"),
           "HELM_DATA_HOME": str(home / "data")}
    env.pop("HELM_DRIVER", None)  # the default driver: release Secrets (protobuf from client-go)
    return subprocess.run([str(path), *args], capture_output=True, text=True, env=env, timeout=180, check=False)


def ok(proc: subprocess.CompletedProcess[str]) -> subprocess.CompletedProcess[str]:
    assert proc.returncode == 0, f"helm failed ({proc.returncode}):\n{proc.stdout}\n{proc.stderr}"
    return proc


@pytest.mark.parametrize("binary", sorted(HELMS))
def test_helm_install_wait_succeeds(fast, chart, tmp_path, binary):
    ns = namespace(fast, f"install-{binary}")
    ok(helm(binary, fast, tmp_path, "install", "rel", str(chart), "-n", ns, "--wait", "--timeout", "60s"))
    apps = k8s.AppsV1Api(fast.client())
    dep = apps.read_namespaced_deployment("web", ns)
    [rs] = replicasets(fast, ns, dep)
    assert dep.status.ready_replicas == 2 and rs.status.ready_replicas == 2
    assert rs.metadata.annotations["meta.helm.sh/release-name"] == "rel", "the Deployment's annotations are copied"
    core = k8s.CoreV1Api(fast.client())
    assert len(core.read_namespaced_endpoints("web", ns).subsets[0].addresses) == 2
    assert "hook" not in {j.metadata.name for j in k8s.BatchV1Api(fast.client()).list_namespaced_job(ns).items}, \
        "the post-install hook completed and helm deleted it (hook-succeeded)"
    secrets = core.list_namespaced_secret(ns, label_selector="owner=helm,name=rel").items
    assert [s.metadata.labels["status"] for s in secrets] == ["deployed"]


@pytest.mark.parametrize("binary", sorted(HELMS))
def test_helm_install_wait_lasts_until_ready_after(slow_helm, chart, tmp_path, binary):
    ns = namespace(slow_helm, f"slow-{binary}")
    start = time.monotonic()
    ok(helm(binary, slow_helm, tmp_path, "install", "rel", str(chart), "-n", ns, "--wait", "--timeout", "60s"))
    elapsed = time.monotonic() - start
    assert elapsed >= HELM_DELAY, elapsed
    dep = k8s.AppsV1Api(slow_helm.client()).read_namespaced_deployment("web", ns)
    assert dep.status.ready_replicas == 2


@pytest.mark.parametrize("binary", sorted(HELMS))
def test_helm_wait_times_out_while_pods_are_not_ready(slow_helm, chart, tmp_path, binary):
    ns = namespace(slow_helm, f"timeout-{binary}")
    start = time.monotonic()
    proc = helm(binary, slow_helm, tmp_path, "install", "rel", str(chart), "-n", ns, "--wait", "--timeout", "2s")
    elapsed = time.monotonic() - start
    assert proc.returncode == 1, proc.stdout
    assert "INSTALLATION FAILED" in proc.stderr and "context deadline exceeded" in proc.stderr, proc.stderr
    if binary == "helm4":  # kstatus names what it waited for
        assert "resource Deployment/" + ns + "/web not ready. status: InProgress" in proc.stderr, proc.stderr
    assert elapsed < HELM_DELAY + 2, elapsed


@pytest.mark.parametrize("binary", sorted(HELMS))
def test_helm_upgrade_rollback_uninstall(fast, chart, tmp_path, binary):
    ns = namespace(fast, f"cycle-{binary}")
    apps = k8s.AppsV1Api(fast.client())
    ok(helm(binary, fast, tmp_path, "install", "rel", str(chart), "-n", ns, "--wait", "--timeout", "60s"))
    ok(helm(binary, fast, tmp_path, "upgrade", "rel", str(chart), "-n", ns, "--set", "tag=2", "--wait",
            "--timeout", "60s"))
    dep = apps.read_namespaced_deployment("web", ns)
    assert dep.metadata.annotations[REVISION] == "2" and dep.status.updated_replicas == 2
    assert sorted(rs.spec.replicas for rs in replicasets(fast, ns, dep)) == [0, 2]
    ok(helm(binary, fast, tmp_path, "rollback", "rel", "1", "-n", ns, "--wait", "--timeout", "60s"))
    dep = apps.read_namespaced_deployment("web", ns)
    assert dep.spec.template.spec.containers[0].image == "example.invalid/web:1"
    assert dep.metadata.annotations[REVISION] == "3" and len(replicasets(fast, ns, dep)) == 2
    ok(helm(binary, fast, tmp_path, "uninstall", "rel", "-n", ns, "--wait", "--timeout", "60s"))
    core = k8s.CoreV1Api(fast.client())
    assert not apps.list_namespaced_deployment(ns).items and not apps.list_namespaced_replica_set(ns).items
    assert not core.list_namespaced_pod(ns).items and not core.list_namespaced_endpoints(ns).items
    assert not k8s.BatchV1Api(fast.client()).list_namespaced_job(ns).items, "the pre-delete hook ran and was deleted"


def test_helm4_server_side_apply_conflicts_and_force(fast, chart, tmp_path):
    ns = namespace(fast, "ssa")
    apps = k8s.AppsV1Api(fast.client())
    ok(helm("helm4", fast, tmp_path, "install", "rel", str(chart), "-n", ns, "--wait", "--timeout", "60s"))
    other = {"apiVersion": "apps/v1", "kind": "Deployment", "metadata": {"name": "web", "namespace": ns},
             "spec": {"replicas": 3, "selector": {"matchLabels": {"app": "web"}}, "template": {
                 "metadata": {"labels": {"app": "web"}},
                 "spec": {"containers": [{"name": "web", "image": "example.invalid/web:other"}]}}}}
    taken = fast.kubectl("apply", "--server-side", "--field-manager=other", "-f", "-", input=yaml.safe_dump(other),
                         check=False)
    assert taken.returncode == 1, "helm owns these fields: kubectl must be told to force"
    assert 'conflict with "helm": .spec.template.spec.containers[name="web"].image' in taken.stderr, taken.stderr
    fast.kubectl("apply", "--server-side", "--field-manager=other", "--force-conflicts", "-f", "-",
                 input=yaml.safe_dump(other))
    assert apps.read_namespaced_deployment("web", ns).spec.replicas == 3
    refused = helm("helm4", fast, tmp_path, "upgrade", "rel", str(chart), "-n", ns, "--wait", "--timeout", "60s")
    assert refused.returncode == 1
    assert 'Apply failed with 2 conflicts: conflict with "other": .spec.replicas; conflict with "other": ' \
           '.spec.template.spec.containers[name="web"].image' in refused.stderr, refused.stderr
    live = apps.read_namespaced_deployment("web", ns)
    assert live.spec.replicas == 3 and live.spec.template.spec.containers[0].image == "example.invalid/web:other"
    ok(helm("helm4", fast, tmp_path, "upgrade", "rel", str(chart), "-n", ns, "--force-conflicts", "--wait",
            "--timeout", "60s"))
    dep = apps.read_namespaced_deployment("web", ns)
    assert dep.spec.replicas == 2 and dep.status.ready_replicas == 2
    assert dep.spec.template.spec.containers[0].image == "example.invalid/web:1"
    ok(helm("helm4", fast, tmp_path, "upgrade", "rel", str(chart), "-n", ns, "--server-side=false", "--set",
            "tag=3", "--wait", "--timeout", "60s"))
    assert apps.read_namespaced_deployment("web", ns).spec.template.spec.containers[0].image == \
        "example.invalid/web:3"
