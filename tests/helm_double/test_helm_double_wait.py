"""The helm double's --wait / --wait-for-jobs / uninstall --wait: helm 3's readiness rules (pure), and the
double against stand-ins whose simulated controllers take `ready_after` seconds to make workloads ready.

Charts here are local chart directories of plain YAML (helm looks for a local path before any repository).
"""

from __future__ import annotations

import subprocess
import sys
import threading
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
import yaml
from standin.fixtures import ClusterHandle, running_cluster

HERE = Path(__file__).resolve().parent
if str(HERE) not in sys.path:
    sys.path.insert(0, str(HERE))

from double_cli import get, helm  # noqa: E402
from helmdouble import wait  # noqa: E402
from helmdouble.cli import HelmError  # noqa: E402

DEADLINE = "context deadline exceeded"


# --------------------------------------------------------------------------- pure: durations and readiness rules


@pytest.mark.parametrize(
    ("text", "seconds"),
    [("5m0s", 300), ("300s", 300), ("10m", 600), ("1.5h", 5400), ("1h2m3s", 3723), ("250ms", 0.25), ("0", 0)],
)
def test_timeout_takes_go_durations(text, seconds):
    assert wait.parse_duration(text) == pytest.approx(seconds)


@pytest.mark.parametrize("text", ["5", "", "1x", "m", "5m 0s", "1.2.3s"])
def test_invalid_timeout_is_refused_like_cobra(text):
    with pytest.raises(HelmError, match=f'invalid argument "{text}" for "--timeout" flag: time: invalid duration'):
        wait.parse_duration(text)


def deployment(replicas: int = 1, generation: int = 1, **status: Any) -> dict[str, Any]:
    return {"metadata": {"generation": generation}, "spec": {"replicas": replicas, "strategy": {
        "type": "RollingUpdate", "rollingUpdate": {"maxUnavailable": "25%", "maxSurge": "25%"}}}, "status": status}


@pytest.mark.parametrize(
    ("obj", "expected"),
    [
        (deployment(observedGeneration=1, readyReplicas=1, updatedReplicas=1), True),
        (deployment(observedGeneration=1, updatedReplicas=1), False),  # pods not ready yet
        (deployment(generation=2, observedGeneration=1, readyReplicas=1, updatedReplicas=1), False),  # unobserved
        (deployment(observedGeneration=1, readyReplicas=1), False),  # the ready pod is an old one
        # replicas - maxUnavailable (25% of 4, rounded down): 3 ready pods of the new ReplicaSet are enough.
        (deployment(4, observedGeneration=1, readyReplicas=3, updatedReplicas=4), True),
        (deployment(4, observedGeneration=1, readyReplicas=2, updatedReplicas=4), False),
        ({"metadata": {"generation": 3}, "spec": {"replicas": 2, "paused": True}, "status": {}}, True),
    ],
)
def test_deployment_rule(obj, expected):
    assert wait.deployment_ready(obj) is expected


def daemonset(max_unavailable: Any = 1, strategy: str = "RollingUpdate", **status: Any) -> dict[str, Any]:
    update: dict[str, Any] = {"type": strategy}
    if strategy == "RollingUpdate":
        update["rollingUpdate"] = {"maxUnavailable": max_unavailable}
    return {"metadata": {"generation": 1}, "spec": {"updateStrategy": update},
            "status": {"observedGeneration": 1, **status}}


@pytest.mark.parametrize(
    ("obj", "expected"),
    [
        # helm 3: desired - maxUnavailable = 0 on one node, so a scheduled but unready pod passes.
        (daemonset(desiredNumberScheduled=1, updatedNumberScheduled=1, numberReady=0), True),
        (daemonset(desiredNumberScheduled=1, updatedNumberScheduled=0, numberReady=0), False),
        (daemonset(0, desiredNumberScheduled=1, updatedNumberScheduled=1, numberReady=0), False),
        (daemonset(0, desiredNumberScheduled=1, updatedNumberScheduled=1, numberReady=1), True),
        (daemonset("50%", desiredNumberScheduled=4, updatedNumberScheduled=4, numberReady=1), False),
        (daemonset(strategy="OnDelete"), True),
    ],
)
def test_daemonset_rule(obj, expected):
    assert wait.daemonset_ready(obj) is expected


def statefulset(partition: int = 0, **status: Any) -> dict[str, Any]:
    strategy = {"type": "RollingUpdate", "rollingUpdate": {"partition": partition}}
    return {"metadata": {"generation": 1}, "spec": {"replicas": 2, "updateStrategy": strategy},
            "status": {"observedGeneration": 1, **status}}


@pytest.mark.parametrize(
    ("obj", "expected"),
    [
        (statefulset(updatedReplicas=2, readyReplicas=2, currentRevision="a", updateRevision="a"), True),
        (statefulset(updatedReplicas=2, readyReplicas=1, currentRevision="a", updateRevision="a"), False),
        (statefulset(updatedReplicas=2, readyReplicas=2, currentRevision="a", updateRevision="b"), False),
        (statefulset(1, updatedReplicas=1, readyReplicas=2, currentRevision="a", updateRevision="b"), True),
    ],
)
def test_statefulset_rule(obj, expected):
    assert wait.statefulset_ready(obj) is expected


def test_job_rule():
    job = {"metadata": {"name": "j", "namespace": "ns"}, "spec": {"completions": 2, "backoffLimit": 1}}
    assert not wait.job_ready({**job, "status": {"succeeded": 1}})
    assert wait.job_ready({**job, "status": {"succeeded": 2}})
    assert wait.job_ready({"spec": {"completions": None}, "status": {}})  # a work queue: nothing to count
    with pytest.raises(HelmError, match="job is failed: ns/j"):
        wait.job_ready({**job, "status": {"failed": 2}})


# --------------------------------------------------------------------------- against the stand-in


def pod(app: str, image: str, restart: str | None = None) -> dict[str, Any]:
    spec: dict[str, Any] = {"containers": [{"name": app, "image": image}]}
    if restart:
        spec["restartPolicy"] = restart
    return {"metadata": {"labels": {"app": app}}, "spec": spec}


def web(image: str = "example.invalid/web:1") -> dict[str, Any]:
    return {"apiVersion": "apps/v1", "kind": "Deployment", "metadata": {"name": "web"},
            "spec": {"replicas": 1, "selector": {"matchLabels": {"app": "web"}}, "template": pod("web", image)}}


def migrate() -> dict[str, Any]:
    return {"apiVersion": "batch/v1", "kind": "Job", "metadata": {"name": "migrate"},
            "spec": {"template": pod("migrate", "example.invalid/migrate:1", restart="Never")}}


def held_config() -> dict[str, Any]:
    """A ConfigMap whose finalizer no controller removes: deleting it leaves it terminating."""
    return {"apiVersion": "v1", "kind": "ConfigMap",
            "metadata": {"name": "held", "finalizers": ["example.com/hold"]}, "data": {"k": "v"}}


def make_chart(folder: Path, *objects: dict[str, Any], name: str = "demo") -> str:
    """A local chart directory whose templates are these objects, as plain YAML."""
    (folder / "templates").mkdir(parents=True, exist_ok=True)
    (folder / "Chart.yaml").write_text(yaml.safe_dump({"apiVersion": "v2", "name": name, "version": "0.1.0"}))
    (folder / "templates" / "objects.yaml").write_text(yaml.safe_dump_all(objects))
    return str(folder)


def install(cluster: ClusterHandle, release: str, chart: str, *flags: str) -> tuple[subprocess.CompletedProcess, float]:
    return helm(cluster, "upgrade", "-i", "--create-namespace", *flags, release, chart, namespace=release)


def deployment_of(cluster: ClusterHandle, namespace: str) -> dict[str, Any] | None:
    return get(cluster, f"/apis/apps/v1/namespaces/{namespace}/deployments/web")


def release_statuses(cluster: ClusterHandle, namespace: str) -> dict[str, str]:
    """revision -> status label of the release Secrets (what helm keeps in the cluster)."""
    listed = get(cluster, f"/api/v1/namespaces/{namespace}/secrets?labelSelector=owner%3Dhelm") or {}
    return {s["metadata"]["labels"]["version"]: s["metadata"]["labels"]["status"] for s in listed.get("items", [])}


@pytest.fixture(scope="module")
def one_second(tmp_path_factory: pytest.TempPathFactory) -> Iterator[ClusterHandle]:
    """Workloads become ready 1 s after their spec changes."""
    with running_cluster(tmp_path_factory.mktemp("ready-1s"), ready_after=1.0) as handle:
        yield handle


@pytest.fixture(scope="module")
def a_minute(tmp_path_factory: pytest.TempPathFactory) -> Iterator[ClusterHandle]:
    """A delay no test waits out: whatever is ready right after helm returns was waited for."""
    with running_cluster(tmp_path_factory.mktemp("ready-60s"), ready_after=60.0) as handle:
        yield handle


@pytest.fixture(scope="module")
def three_seconds(tmp_path_factory: pytest.TempPathFactory) -> Iterator[ClusterHandle]:
    with running_cluster(tmp_path_factory.mktemp("ready-3s"), ready_after=3.0) as handle:
        yield handle


def test_wait_lasts_until_the_deployment_is_ready(one_second, tmp_path):
    chart = make_chart(tmp_path / "chart", web())
    result, elapsed = install(one_second, "hw-wait", chart, "--wait", "--timeout", "5m0s")
    assert result.returncode == 0, result.stderr
    assert "STATUS: deployed" in result.stdout
    assert elapsed >= 1.0, elapsed
    live = deployment_of(one_second, "hw-wait")
    assert live is not None and wait.deployment_ready(live) and live["status"]["availableReplicas"] == 1

    # An upgrade that changes the pod template waits for the new generation's pods.
    upgraded = make_chart(tmp_path / "chart", web("example.invalid/web:2"))
    result, elapsed = install(one_second, "hw-wait", upgraded, "--wait")
    assert result.returncode == 0, result.stderr
    assert elapsed >= 1.0, elapsed
    live = deployment_of(one_second, "hw-wait")
    assert live["metadata"]["generation"] == 2 and wait.deployment_ready(live)
    assert release_statuses(one_second, "hw-wait") == {"1": "superseded", "2": "deployed"}


def test_without_wait_it_returns_at_once(a_minute, tmp_path):
    chart = make_chart(tmp_path / "chart", web())
    result, elapsed = install(a_minute, "hw-nowait", chart)
    assert result.returncode == 0, result.stderr
    assert elapsed < 30, elapsed  # a wait would last the 60 s delay (the 5m0s default timeout would not end it)
    assert not wait.deployment_ready(deployment_of(a_minute, "hw-nowait"))


def test_wait_for_jobs(a_minute, one_second, tmp_path):
    chart = make_chart(tmp_path / "chart", migrate())
    result, elapsed = install(a_minute, "hw-job", chart, "--wait")
    assert result.returncode == 0, result.stderr
    assert elapsed < 30, "--wait alone does not wait for Jobs"
    job = get(a_minute, "/apis/batch/v1/namespaces/hw-job/jobs/migrate")
    assert "succeeded" not in (job.get("status") or {})
    chart = make_chart(tmp_path / "chart2", migrate())
    result, elapsed = install(one_second, "hw-jobs", chart, "--wait", "--wait-for-jobs")
    assert result.returncode == 0, result.stderr
    assert elapsed >= 1.0, elapsed
    job = get(one_second, "/apis/batch/v1/namespaces/hw-jobs/jobs/migrate")
    assert job["status"]["succeeded"] == 1


def test_timeout_fails_and_atomic_leaves_no_release(three_seconds, tmp_path):
    chart = make_chart(tmp_path / "chart", web())
    result, elapsed = install(three_seconds, "hw-atomic", chart, "--wait", "--timeout", "1s", "--atomic")
    assert result.returncode == 1
    assert result.stderr == (
        f"Error: release hw-atomic failed, and has been uninstalled due to atomic being set: {DEADLINE}\n"
    )
    assert elapsed >= 1.0, elapsed  # failing proves the 1 s deadline: the Deployment is ready only after 3 s
    assert release_statuses(three_seconds, "hw-atomic") == {}
    assert deployment_of(three_seconds, "hw-atomic") is None

    # Without --atomic the revision stays, failed; `helm install` names the command, `upgrade -i` does not.
    result, _seconds = install(three_seconds, "hw-failed", chart, "--wait", "--timeout", "1s")
    assert result.returncode == 1 and result.stderr == f"Error: {DEADLINE}\n"
    assert release_statuses(three_seconds, "hw-failed") == {"1": "failed"}
    result, _seconds = helm(three_seconds, "install", "--create-namespace", "--wait", "--timeout=1s", "hw-install",
                            chart, namespace="hw-install")
    assert result.returncode == 1 and result.stderr == f"Error: INSTALLATION FAILED: {DEADLINE}\n"


def test_atomic_upgrade_rolls_back_and_waits_for_the_rollback(three_seconds, tmp_path):
    release = "hw-rollback"
    result, _seconds = install(three_seconds, release, make_chart(tmp_path / "v1", web()))
    assert result.returncode == 0, result.stderr
    result, elapsed = install(three_seconds, release, make_chart(tmp_path / "v2", web("example.invalid/web:2")),
                              "--atomic", "--timeout", "1s")  # --atomic implies --wait
    assert result.returncode == 1
    # The rollback re-applies revision 1's pod template (a new generation, 3 s again): it times out as well.
    assert result.stderr == (
        "Error: UPGRADE FAILED: an error occurred while rolling back the release. "
        f"original upgrade error: {DEADLINE}: release {release} failed: {DEADLINE}\n"
    )
    assert elapsed >= 2.0, elapsed
    assert release_statuses(three_seconds, release) == {"1": "deployed", "2": "failed", "3": "failed"}
    assert deployment_of(three_seconds, release)["spec"]["template"]["spec"]["containers"][0]["image"].endswith(":1")


def test_uninstall_wait_waits_until_the_objects_are_gone(one_second, tmp_path):
    release = "hw-uninstall"
    result, _seconds = install(one_second, release, make_chart(tmp_path / "chart", held_config(), web()))
    assert result.returncode == 0, result.stderr

    result, elapsed = helm(one_second, "uninstall", "--wait", "--timeout", "1s", release, namespace=release)
    assert result.returncode == 1
    assert result.stderr == f"Error: uninstallation completed with 1 error(s): {DEADLINE}\n"
    assert elapsed >= 1.0 and release_statuses(one_second, release) == {}, "helm purges the release all the same"
    held = get(one_second, f"/api/v1/namespaces/{release}/configmaps/held")
    assert held["metadata"].get("deletionTimestamp") and deployment_of(one_second, release) is None

    # Once the finalizer goes, a waiting uninstall returns.
    again = "hw-uninstall-2"
    result, _seconds = install(one_second, again, make_chart(tmp_path / "chart2", held_config(), name="demo2"))
    assert result.returncode == 0, result.stderr
    release_finalizer = threading.Timer(0.8, one_second.kubectl, ("patch", "configmap", "held", "-n", again,
                                                                  "--type=merge", "-p",
                                                                  '{"metadata":{"finalizers":null}}'))
    release_finalizer.start()
    result, elapsed = helm(one_second, "uninstall", "--wait", again, namespace=again)
    release_finalizer.join()
    assert result.returncode == 0, result.stderr
    assert elapsed >= 0.8 and f'release "{again}" uninstalled' in result.stdout
    assert get(one_second, f"/api/v1/namespaces/{again}/configmaps/held") is None


def test_wait_without_controllers_hangs_until_the_timeout(tmp_path):
    """Nothing reconciles a Deployment without controllers: helm would wait out --timeout, so does the double."""
    with running_cluster(tmp_path / "cluster", simulate_controllers=False) as bare:
        result, elapsed = install(bare, "hw-bare", make_chart(tmp_path / "chart", web()), "--wait", "--timeout=1s")
    assert result.returncode == 1 and result.stderr == f"Error: {DEADLINE}\n"
    assert elapsed >= 1.0
