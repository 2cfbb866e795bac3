"""lws v0.7.0 -> v0.8.0 with the real helm: the upgrade must not delete the LeaderWorkerSet CRD, nor users' objects.

lws v0.7.0 templates its CRD (no helm.sh/resource-policy: keep); v0.8.0 moved it to crds/ (kubernetes-sigs/lws
#718). A plain `helm upgrade` therefore deletes the CRD, and the API server every LeaderWorkerSet with it. The test
charts (testing/charts/lws) reproduce that layout; the first test shows the hazard is real, the second that the
collection's upgrade keeps both the CRD and a user's LeaderWorkerSet.
"""

from __future__ import annotations

import json
import subprocess
from pathlib import Path

import pytest
from cluster.fixtures import VENV_BIN
from stack_support import chart_mirror, get, releases, wait_for

pytestmark = [pytest.mark.playbook, pytest.mark.slow]

CRD = "leaderworkersets.leaderworkerset.x-k8s.io"
LWS_API = "leaderworkerset.x-k8s.io/v1"
USER_LWS = {
    "apiVersion": LWS_API, "kind": "LeaderWorkerSet",
    "metadata": {"name": "llama-70b", "namespace": "team-a"},
    "spec": {"replicas": 1, "leaderWorkerTemplate": {"size": 2, "workerTemplate": {
        "spec": {"containers": [{"name": "engine", "image": "vllm/vllm-openai:v0.11.0"}]}}}},
}


def helm(cluster, *args: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run([str(VENV_BIN / "helm"), *args], env=cluster.env, capture_output=True, text=True,
                          timeout=300, check=False)


def add_users_leaderworkerset(cluster) -> None:
    cluster.kubectl("create", "namespace", "team-a")
    cluster.kubectl("apply", "-f", "-", input=json.dumps(USER_LWS))
    assert get(cluster, LWS_API, "LeaderWorkerSet", "llama-70b", "team-a") is not None


def lws_role(directory: Path) -> Path:
    path = directory / "lws.yml"
    path.write_text("- name: Converge LeaderWorkerSet alone.\n  hosts: localhost\n  gather_facts: false\n"
                    "  roles:\n    - role: modelplane.serving.lws\n")
    return path


def test_a_plain_helm_upgrade_deletes_the_crd_and_the_users_objects(fresh_cluster):
    """The hazard, with nothing of ours in the way: the test charts reproduce upstream's layout."""
    cluster = fresh_cluster
    repo = chart_mirror()
    installed = helm(cluster, "install", "lws", "lws", "--repo", repo, "--version", "v0.7.0", "-n", "lws-system",
                     "--create-namespace", "--wait")
    assert installed.returncode == 0, installed.stderr
    add_users_leaderworkerset(cluster)
    upgraded = helm(cluster, "upgrade", "lws", "lws", "--repo", repo, "--version", "v0.8.0", "-n", "lws-system",
                    "--wait")
    assert upgraded.returncode == 0, upgraded.stderr
    # The upgrade deleted the CRD: the API server deletes its objects (the customresourcecleanup finalizer), then it.
    crd = get(cluster, "apiextensions.k8s.io/v1", "CustomResourceDefinition", CRD)
    assert crd is None or crd["metadata"].get("deletionTimestamp"), crd
    wait_for(f"CRD {CRD} to go",
             lambda: get(cluster, "apiextensions.k8s.io/v1", "CustomResourceDefinition", CRD) is None)
    # The kind is gone from the API, and the user's object with it. Discovery drops the kind a moment after the CRD
    # goes; api-resources reads it afresh (and refreshes kubectl's cache for the get below).
    wait_for("the kind to leave discovery",
             lambda: "leaderworkersets" not in cluster.kubectl("api-resources", "--api-group=leaderworkerset.x-k8s.io",
                                                               "-o", "name", check=False).stdout)
    gone = cluster.kubectl("get", "leaderworkersets.leaderworkerset.x-k8s.io", "-A", "-o", "name", check=False)
    assert gone.returncode != 0 and "the server doesn't have a resource type" in gone.stderr, gone


def test_the_collections_upgrade_keeps_the_crd_and_the_users_leaderworkerset(fresh_cluster, tmp_path):
    cluster = fresh_cluster
    playbook = lws_role(tmp_path)
    old = {"servingstack_chart_mirror": chart_mirror(),
           "servingstack_spec": {"standard": {"leaderWorkerSet": "v0.7.0"}}}
    first = cluster.run_playbook(playbook, extra_vars=old)
    assert first.rc == 0, first.stdout[-4000:]
    crd = get(cluster, "apiextensions.k8s.io/v1", "CustomResourceDefinition", CRD)
    assert crd["metadata"]["annotations"]["meta.helm.sh/release-name"] == "mp-lws", "v0.7.0 templates its CRD"
    add_users_leaderworkerset(cluster)

    new = {**old, "servingstack_spec": {"standard": {"leaderWorkerSet": "v0.8.0"}}}
    upgraded = cluster.run_playbook(playbook, extra_vars=new)
    assert upgraded.rc == 0, upgraded.stdout[-4000:]
    assert releases(cluster)["mp-lws"] == {"namespace": "lws-system", "revision": 2, "status": "deployed"}
    crd = get(cluster, "apiextensions.k8s.io/v1", "CustomResourceDefinition", CRD)
    assert crd is not None, "the upgrade deleted the LeaderWorkerSet CRD"
    assert crd["metadata"]["annotations"]["helm.sh/resource-policy"] == "keep"
    assert get(cluster, LWS_API, "LeaderWorkerSet", "llama-70b", "team-a") is not None

    again = cluster.run_playbook(playbook, extra_vars=new)
    assert again.rc == 0 and again.changed == 0, again.stdout[-4000:]
