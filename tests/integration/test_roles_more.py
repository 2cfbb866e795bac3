"""The roles nfd, nvidia_dra, lws, grove_kai, modelexpress and prometheus, each used alone.

Every role runs in a one-role playbook against the real test control plane, with the real helm installing the test
charts (testing/charts) through servingstack_chart_mirror: present, a second run that changes nothing, absent, and
absent again (a no-op). The API server validates every object against its upstream CRD schema; the values keys are
checked against the charts' values files in tests/unit/test_role_values.py.
"""

from __future__ import annotations

import json
import subprocess
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest
from stack_support import chart_mirror

pytestmark = [pytest.mark.playbook, pytest.mark.slow]

GKE_ROOT = "/home/kubernetes/bin/nvidia"
DYNAMO = {"servingstack_spec": {"stack": "Dynamo"}}


def one_role_playbook(directory: Path, role: str) -> Path:
    path = directory / f"{role}.yml"
    path.write_text(
        f"""- name: Use modelplane.serving.{role} on its own.
  hosts: localhost
  gather_facts: false
  roles:
    - role: modelplane.serving.{role}
"""
    )
    return path


def run(cluster: Any, playbook: Path, *, extra_vars: dict[str, Any] | None = None, **options: Any) -> Any:
    """The playbook on ``cluster``, with the test charts as the chart mirror (the roles read servingstack_*)."""
    mirrored = {"servingstack_chart_mirror": chart_mirror(), **(extra_vars or {})}
    return cluster.run_playbook(playbook, extra_vars=mirrored, **options)


def ok(result: Any, what: str) -> Any:
    assert result.rc == 0, f"{what} failed:\n{result.stdout[-6000:]}\n{result.stderr[-2000:]}"
    return result


def helm(cluster: Any, *args: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run(["helm", *args], capture_output=True, text=True, env=cluster.env, timeout=120, check=False)


def release_values(cluster: Any, release: str, namespace: str) -> dict[str, Any] | None:
    """The user values of a deployed release, or None when there is no such release."""
    listed = helm(cluster, "list", "-n", namespace, "-o", "json")
    assert listed.returncode == 0, listed.stderr
    if release not in [item["name"] for item in json.loads(listed.stdout or "[]")]:
        return None
    got = helm(cluster, "get", "values", release, "-n", namespace, "-o", "json")
    assert got.returncode == 0, got.stderr
    return json.loads(got.stdout) or {}


def kube_object(cluster: Any, kind: str, name: str, namespace: str | None = None) -> dict[str, Any] | None:
    args = ["get", kind, name, "-o", "json", "--ignore-not-found"]
    if namespace:
        args += ["-n", namespace]
    out = cluster.kubectl(*args).stdout
    return json.loads(out) if out.strip() else None


def cycle(
    cluster: Any,
    tmp_path: Path,
    role: str,
    extra: dict[str, Any],
    present: Callable[[], None],
    absent: Callable[[], None],
    absent_again: bool = True,
) -> None:
    """present -> present again (changed=0) -> absent [-> absent again (changed=0)], checking each state.

    Roles whose teardown is only their releases' uninstall skip the repeated teardown: that is the component role's
    behaviour, tested with the full stack."""
    playbook = one_role_playbook(tmp_path, role)
    first = ok(run(cluster, playbook, extra_vars=extra), f"{role} present")
    assert first.changed > 0, f"{role}: the first run must change something"
    present()
    second = ok(run(cluster, playbook, extra_vars=extra), f"{role} present again")
    assert second.changed == 0, f"{role}: second run changed {second.recap}\n{second.stdout[-4000:]}"
    gone = ok(run(cluster, playbook, extra_vars={**extra, "component_state": "absent"}), f"{role} absent")
    assert gone.changed > 0
    absent()
    if not absent_again:
        return
    again = ok(run(cluster, playbook, extra_vars={**extra, "component_state": "absent"}), f"{role} absent again")
    assert again.changed == 0, f"{role}: re-running teardown changed {again.recap}\n{again.stdout[-4000:]}"


# --------------------------------------------------------------------------- chart-only roles


def test_nfd_alone(cluster, tmp_path):
    release, namespace = "mp-node-feature-discovery", "node-feature-discovery"

    def present() -> None:
        values = release_values(cluster, release, namespace)
        assert values is not None, "release not installed"
        assert {"key": "nvidia.com/gpu", "operator": "Exists", "effect": "NoSchedule"} in values["worker"][
            "tolerations"
        ]

    cycle(cluster, tmp_path, "nfd", {}, present, lambda: _no_release(cluster, release, namespace), absent_again=False)


def test_lws_alone(cluster, tmp_path):
    release, namespace = "mp-lws", "lws-system"

    def present() -> None:
        assert release_values(cluster, release, namespace) == {}
        assert kube_object(cluster, "crd", "leaderworkersets.leaderworkerset.x-k8s.io") is not None

    cycle(cluster, tmp_path, "lws", {}, present, lambda: _no_release(cluster, release, namespace), absent_again=False)


def test_prometheus_alone(cluster, tmp_path):
    release, namespace = "mp-kube-prometheus-stack", "monitoring"

    def present() -> None:
        values = release_values(cluster, release, namespace)
        assert values is not None, "release not installed"
        assert values["grafana"] == {"enabled": False}
        assert values["alertmanager"] == {"enabled": False}
        spec = values["prometheus"]["prometheusSpec"]
        assert spec["podMonitorSelectorNilUsesHelmValues"] is False
        assert [job["job_name"] for job in spec["additionalScrapeConfigs"]] == ["envoy-gateway-proxies"]

    cycle(
        cluster,
        tmp_path,
        "prometheus",
        {},
        present,
        lambda: _no_release(cluster, release, namespace),
        absent_again=False,
    )


def _no_release(cluster: Any, release: str, namespace: str) -> None:
    assert release_values(cluster, release, namespace) is None, f"{release} still installed"


# --------------------------------------------------------------------------- nvidia_dra


def test_nvidia_dra_driver_root_adds_and_removes_the_quota(cluster, tmp_path):
    release, namespace, quota = "mp-dra-driver-nvidia-gpu", "dra-driver-nvidia-gpu", "allow-critical-pods"
    playbook = one_role_playbook(tmp_path, "nvidia_dra")
    gke = {"servingstack_spec": {"nvidiaDriverRoot": GKE_ROOT}}

    # Check mode with --diff on a fresh cluster writes nothing.
    ok(run(cluster, playbook, extra_vars=gke, check=True, diff=True), "check mode")
    assert kube_object(cluster, "resourcequota", quota, namespace) is None
    assert release_values(cluster, release, namespace) is None

    # GKE: the driver root reaches the chart and the quota admits system-critical pods.
    first = ok(run(cluster, playbook, extra_vars=gke), "GKE driver root")
    assert first.changed > 0
    values = release_values(cluster, release, namespace)
    assert values is not None
    assert values["nvidiaDriverRoot"] == GKE_ROOT
    assert values["gpuResourcesEnabledOverride"] is True
    assert values["resources"]["computeDomains"]["enabled"] is False
    found = kube_object(cluster, "resourcequota", quota, namespace)
    assert found is not None, "no ResourceQuota for system-critical pods"
    [expression] = found["spec"]["scopeSelector"]["matchExpressions"]
    assert expression["scopeName"] == "PriorityClass"
    assert sorted(expression["values"]) == ["system-cluster-critical", "system-node-critical"]
    again = ok(run(cluster, playbook, extra_vars=gke), "GKE driver root again")
    assert again.changed == 0, again.stdout[-4000:]

    # Back to /: neither the value nor the quota remains.
    root = {"servingstack_spec": {"nvidiaDriverRoot": "/"}}
    ok(run(cluster, playbook, extra_vars=root), "driver root /")
    values = release_values(cluster, release, namespace)
    assert values is not None and "nvidiaDriverRoot" not in values
    assert kube_object(cluster, "resourcequota", quota, namespace) is None
    again = ok(run(cluster, playbook, extra_vars=root), "driver root / again")
    assert again.changed == 0, again.stdout[-4000:]

    # Teardown (from the GKE setting, so the quota has to go too), twice.
    ok(run(cluster, playbook, extra_vars={**gke}), "GKE driver root before teardown")
    ok(run(cluster, playbook, extra_vars={**gke, "component_state": "absent"}), "absent")
    assert release_values(cluster, release, namespace) is None
    assert kube_object(cluster, "resourcequota", quota, namespace) is None
    repeat = ok(run(cluster, playbook, extra_vars={**gke, "component_state": "absent"}), "absent again")
    assert repeat.changed == 0, repeat.stdout[-4000:]


# --------------------------------------------------------------------------- grove_kai


def test_grove_kai_alone(cluster, tmp_path):
    playbook = one_role_playbook(tmp_path, "grove_kai")
    # Check mode on a fresh cluster: no Queue CRD yet, and nothing is written.
    ok(run(cluster, playbook, extra_vars=DYNAMO, check=True, diff=True), "check mode")
    assert release_values(cluster, "mp-kai-scheduler", "kai-scheduler") is None

    def present() -> None:
        kai = release_values(cluster, "mp-kai-scheduler", "kai-scheduler")
        grove = release_values(cluster, "mp-grove-charts", "grove-system")
        assert kai is not None and grove is not None
        assert grove["config"]["scheduler"]["defaultProfileName"] == "kai-scheduler"
        parent = kube_object(cluster, "queues.scheduling.run.ai", "modelplane-parent")
        leaf = kube_object(cluster, "queues.scheduling.run.ai", "modelplane")
        assert parent is not None and leaf is not None
        assert leaf["spec"]["parentQueue"] == "modelplane-parent"

    def absent() -> None:
        _no_release(cluster, "mp-grove-charts", "grove-system")
        _no_release(cluster, "mp-kai-scheduler", "kai-scheduler")
        # The Queue CRD stays (CRDs go only on opt-in), the queues do not.
        assert kube_object(cluster, "crd", "queues.scheduling.run.ai") is not None
        assert kube_object(cluster, "queues.scheduling.run.ai", "modelplane") is None
        assert kube_object(cluster, "queues.scheduling.run.ai", "modelplane-parent") is None

    cycle(cluster, tmp_path, "grove_kai", DYNAMO, present, absent)


# --------------------------------------------------------------------------- modelexpress


def test_modelexpress_alone(cluster, tmp_path):
    namespace = "modelexpress-system"
    extra = {"servingstack_spec": {"stack": "Dynamo", "dynamo": {"modelExpress": "0.4.1"}}}

    def present() -> None:
        deployment = kube_object(cluster, "deployment", "modelexpress-server", namespace)
        assert deployment is not None
        [container] = deployment["spec"]["template"]["spec"]["containers"]
        assert container["image"] == "nvcr.io/nvidia/ai-dynamo/modelexpress-server:0.4.1"
        assert deployment["status"].get("availableReplicas") == 1
        service = kube_object(cluster, "service", "modelexpress-server", namespace)
        assert service is not None and service["spec"]["ports"][0]["port"] == 8001
        for crd in ("modelmetadatas.modelexpress.nvidia.com", "modelcacheentries.modelexpress.nvidia.com"):
            assert kube_object(cluster, "crd", crd) is not None
        # The CRDs serve: an object of each kind passes their schema.
        cluster.kubectl(
            "apply",
            "-f",
            "-",
            input=json.dumps(
                {
                    "apiVersion": "modelexpress.nvidia.com/v1alpha1",
                    "kind": "ModelCacheEntry",
                    "metadata": {"name": "probe", "namespace": namespace},
                    "spec": {"modelName": "meta-llama/Llama-3.1-8B", "provider": "HuggingFace"},
                }
            ),
        )

    def absent() -> None:
        assert kube_object(cluster, "deployment", "modelexpress-server", namespace) is None
        assert kube_object(cluster, "namespace", namespace) is None
        # CRDs stay unless component_remove_crds is set.
        assert kube_object(cluster, "crd", "modelmetadatas.modelexpress.nvidia.com") is not None

    # Check mode with --diff on a fresh cluster writes nothing.
    ok(
        run(cluster, one_role_playbook(tmp_path, "modelexpress"), extra_vars=extra, check=True, diff=True),
        "check",
    )
    assert kube_object(cluster, "namespace", namespace) is None
    assert kube_object(cluster, "crd", "modelmetadatas.modelexpress.nvidia.com") is None

    cycle(cluster, tmp_path, "modelexpress", extra, present, absent)

    playbook = one_role_playbook(tmp_path, "modelexpress")
    opt_in = {**extra, "component_state": "absent", "component_remove_crds": True}
    ok(run(cluster, playbook, extra_vars=opt_in), "absent with CRDs")
    assert kube_object(cluster, "crd", "modelmetadatas.modelexpress.nvidia.com") is None
    assert kube_object(cluster, "crd", "modelcacheentries.modelexpress.nvidia.com") is None
