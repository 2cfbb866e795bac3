"""The simulated controllers' readiness delay (`ready_after`): workloads turn ready, and Jobs complete, only
that long after their spec last changed, and the controller loop wakes up by itself when a delay expires."""

from __future__ import annotations

import json
import subprocess
import sys
import time
import urllib.error
import urllib.request
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import pytest
import yaml
from standin import StandIn
from standin.fixtures import ClusterHandle, running_cluster

DELAY = 0.8
SLACK = 3.0  # the loop wakes at the deadline; generous for a busy machine, short of "never without a write"
RUN = Path(__file__).resolve().parents[1] / "run"
APPS = "/apis/apps/v1/namespaces"
JOBS = "/apis/batch/v1/namespaces"


def call(url: str, method: str, path: str, body: Any = None,
         content_type: str = "application/json") -> tuple[int, dict[str, Any]]:
    data = json.dumps(body).encode() if body is not None else None
    request = urllib.request.Request(url + path, data=data, method=method,
                                     headers={"Content-Type": content_type, "Accept": "application/json"})
    try:
        with urllib.request.urlopen(request, timeout=30) as response:
            return response.status, json.loads(response.read() or b"{}")
    except urllib.error.HTTPError as error:
        return error.code, json.loads(error.read() or b"{}")


def create(url: str, path: str, body: dict[str, Any]) -> dict[str, Any]:
    code, reply = call(url, "POST", path, body)
    assert code == 201, reply
    return reply


def namespace(url: str, name: str) -> str:
    create(url, "/api/v1/namespaces", {"apiVersion": "v1", "kind": "Namespace", "metadata": {"name": name}})
    return name


def pod_template(app: str, image: str = "example.invalid/app:1", restart: str | None = None) -> dict[str, Any]:
    spec: dict[str, Any] = {"containers": [{"name": "app", "image": image}]}
    if restart:
        spec["restartPolicy"] = restart
    return {"metadata": {"labels": {"app": app}}, "spec": spec}


def workload(kind: str, name: str, replicas: int = 2) -> dict[str, Any]:
    spec: dict[str, Any] = {"selector": {"matchLabels": {"app": name}}, "template": pod_template(name)}
    if kind != "DaemonSet":
        spec["replicas"] = replicas
    if kind == "StatefulSet":
        spec["serviceName"] = name
    return {"apiVersion": "apps/v1", "kind": kind, "metadata": {"name": name}, "spec": spec}


def job(name: str, completions: int = 2) -> dict[str, Any]:
    return {"apiVersion": "batch/v1", "kind": "Job", "metadata": {"name": name},
            "spec": {"completions": completions, "template": pod_template(name, restart="Never")}}


def ready(kind: str, obj: dict[str, Any]) -> bool:
    """What the simulated controllers write once the delay is over, checked per kind."""
    status = obj.get("status") or {}
    if status.get("observedGeneration", 0) != obj["metadata"].get("generation") and kind != "Job":
        return False
    if kind == "DaemonSet":
        return status.get("numberReady") == status.get("desiredNumberScheduled") == 1
    if kind == "Job":
        return status.get("succeeded") == obj["spec"]["completions"]
    return status.get("readyReplicas") == obj["spec"]["replicas"]


def wait_until(fetch: Callable[[], dict[str, Any]], predicate: Callable[[dict[str, Any]], bool],
               timeout: float) -> dict[str, Any]:
    deadline = time.monotonic() + timeout
    value = fetch()
    while not predicate(value) and time.monotonic() < deadline:
        time.sleep(0.02)
        value = fetch()
    return value


def getter(url: str, path: str) -> Callable[[], dict[str, Any]]:
    return lambda: call(url, "GET", path)[1]


@pytest.fixture(scope="module")
def slow(tmp_path_factory: pytest.TempPathFactory) -> Iterator[ClusterHandle]:
    """A stand-in whose workloads need DELAY seconds to become ready."""
    with running_cluster(tmp_path_factory.mktemp("slow"), ready_after=DELAY) as handle:
        yield handle


def test_zero_delay_is_immediate_and_jobs_complete(tmp_path):
    with running_cluster(tmp_path) as cluster:
        ns = namespace(cluster.url, "apps")
        create(cluster.url, f"{APPS}/{ns}/deployments", workload("Deployment", "web"))
        create(cluster.url, f"{JOBS}/{ns}/jobs", job("migrate"))
        cluster.controllers.settle()  # the pass that follows the writes makes them ready: nothing is scheduled
        dep = call(cluster.url, "GET", f"{APPS}/{ns}/deployments/web")[1]
        done = call(cluster.url, "GET", f"{JOBS}/{ns}/jobs/migrate")[1]
        assert ready("Deployment", dep) and ready("Job", done), (dep.get("status"), done.get("status"))
        assert any(c["type"] == "Complete" and c["status"] == "True" for c in done["status"]["conditions"])


@pytest.mark.parametrize("kind", ["Deployment", "DaemonSet", "StatefulSet", "Job"])
def test_ready_only_after_the_delay_without_another_write(slow, kind):
    ns = namespace(slow.url, f"delay-{kind.lower()}")
    if kind == "Job":
        path = f"{JOBS}/{ns}/jobs/w"
        create(slow.url, f"{JOBS}/{ns}/jobs", job("w"))
    else:
        path = f"{APPS}/{ns}/{kind.lower()}s/w"
        create(slow.url, f"{APPS}/{ns}/{kind.lower()}s", workload(kind, "w"))
    start = time.monotonic()
    slow.controllers.settle()
    early = call(slow.url, "GET", path)[1]
    assert not ready(kind, early), early.get("status")
    if kind != "Job":  # the spec is observed at once: only the pods are not ready yet
        assert early["status"]["observedGeneration"] == 1
    # Nothing is written from here on: the controller loop must wake up when the delay expires.
    obj = wait_until(getter(slow.url, path), lambda o: ready(kind, o), DELAY + SLACK)
    elapsed = time.monotonic() - start
    assert ready(kind, obj), obj.get("status")
    assert DELAY - 0.1 <= elapsed < DELAY + SLACK, elapsed


def test_not_ready_status_reads_like_a_rollout_in_progress(slow):
    ns = namespace(slow.url, "rollout")
    create(slow.url, f"{APPS}/{ns}/deployments", workload("Deployment", "web", replicas=3))
    slow.controllers.settle()
    status = call(slow.url, "GET", f"{APPS}/{ns}/deployments/web")[1]["status"]
    assert {k: status.get(k) for k in ("replicas", "updatedReplicas", "unavailableReplicas")} == {
        "replicas": 3, "updatedReplicas": 3, "unavailableReplicas": 3}
    assert "readyReplicas" not in status and "availableReplicas" not in status  # zero: omitted like Go's omitempty
    conditions = {c["type"]: (c["status"], c["reason"]) for c in status["conditions"]}
    assert conditions == {"Available": ("False", "MinimumReplicasUnavailable"),
                          "Progressing": ("True", "ReplicaSetUpdated")}


def test_a_spec_change_restarts_the_delay_and_a_label_change_does_not(slow):
    ns = namespace(slow.url, "restart")
    path = f"{APPS}/{ns}/deployments/web"
    create(slow.url, f"{APPS}/{ns}/deployments", workload("Deployment", "web"))
    assert ready("Deployment", wait_until(getter(slow.url, path), lambda o: ready("Deployment", o), DELAY + SLACK))

    code, labelled = call(slow.url, "PATCH", path, {"metadata": {"labels": {"team": "a"}}},
                          "application/merge-patch+json")
    assert code == 200 and labelled["metadata"]["generation"] == 1
    slow.controllers.settle()
    assert ready("Deployment", call(slow.url, "GET", path)[1]), "metadata is not the spec: no new rollout"

    patch = {"spec": {"template": {"spec": {"containers": [{"name": "app", "image": "example.invalid/app:2"}]}}}}
    code, patched = call(slow.url, "PATCH", path, patch, "application/strategic-merge-patch+json")
    assert code == 200 and patched["metadata"]["generation"] == 2, patched
    start = time.monotonic()
    slow.controllers.settle()
    rolling = call(slow.url, "GET", path)[1]
    assert rolling["status"]["observedGeneration"] == 2 and not ready("Deployment", rolling), rolling["status"]
    obj = wait_until(getter(slow.url, path), lambda o: ready("Deployment", o), DELAY + SLACK)
    assert ready("Deployment", obj) and time.monotonic() - start >= DELAY - 0.1


def test_an_explicit_mark_is_not_undone_by_the_delay(slow):
    ns = namespace(slow.url, "explicit")
    create(slow.url, f"{APPS}/{ns}/deployments", workload("Deployment", "web"))
    slow.controllers.settle()
    slow.controllers.mark_deployment_available("web", ns)
    slow.controllers.settle()
    assert ready("Deployment", call(slow.url, "GET", f"{APPS}/{ns}/deployments/web")[1])


@pytest.mark.parametrize(("kwargs", "message"), [
    ({"simulate_controllers": True, "ready_after": -1}, "must be >= 0"),
    ({"simulate_controllers": False, "ready_after": 1}, "needs simulate_controllers"),
])
def test_invalid_delays_are_refused(kwargs, message):
    with pytest.raises(ValueError, match=message):
        StandIn(**kwargs)


def test_cli_option(tmp_path):
    refused = subprocess.run([sys.executable, str(RUN), "--kubeconfig", str(tmp_path / "x"), "--ready-after", "1"],
                             capture_output=True, text=True, timeout=30, check=False)
    assert refused.returncode == 2 and "--ready-after needs --simulate-controllers" in refused.stderr

    kubeconfig = tmp_path / "kubeconfig"
    server = subprocess.Popen([sys.executable, str(RUN), "--kubeconfig", str(kubeconfig), "--simulate-controllers",
                               "--ready-after", str(DELAY)], stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    try:
        deadline = time.monotonic() + 30
        while not kubeconfig.exists() and time.monotonic() < deadline:
            time.sleep(0.05)
        url = yaml.safe_load(kubeconfig.read_text())["clusters"][0]["cluster"]["server"]
        ns = namespace(url, "cli")
        create(url, f"{APPS}/{ns}/deployments", workload("Deployment", "web"))
        start = time.monotonic()
        path = f"{APPS}/{ns}/deployments/web"
        obj = wait_until(getter(url, path), lambda o: ready("Deployment", o), DELAY + SLACK)
        assert ready("Deployment", obj) and time.monotonic() - start >= DELAY - 0.2
    finally:
        server.terminate()
        server.communicate(timeout=30)
