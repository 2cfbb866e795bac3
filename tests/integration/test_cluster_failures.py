"""Failures made with real mechanisms on the real control plane: a converge against a cluster whose
kube-apiserver was stopped, and one whose workloads never get ready. Each fails, and says what failed in terms a
user can act on (test_stack_standard has the one under a ValidatingAdmissionPolicy that refuses a chart's
Deployment)."""

from __future__ import annotations

import re

import pytest
from stack_support import SITE, UPSTREAM, example_plan, output, releases, said, stack_vars

pytestmark = [
    pytest.mark.playbook,
    pytest.mark.slow,
    pytest.mark.skipif(not UPSTREAM.is_dir(), reason="needs ../shared/upstream (the test charts' data and the CRDs)"),
]


def test_a_converge_against_a_stopped_api_server_fails_naming_it(fresh_cluster):
    fresh_cluster.stop_apiserver()
    result = fresh_cluster.run_playbook(SITE, extra_vars=stack_vars(fresh_cluster), timeout=300)
    assert result.rc != 0 and result.failed, output(result)
    text = said(result)
    host_port = fresh_cluster.url.removeprefix("https://")
    assert host_port in text, output(result)
    assert "refused" in text.lower(), output(result)


def test_a_release_whose_workloads_never_get_ready_fails_its_component_alone_naming_them(fresh_cluster):
    """LeaderWorkerSet, which nothing later needs, is installed without helm's wait; a ResourceQuota of no pods in its
    namespace keeps its controller's Deployment from ever becoming available, so the wait at the end of the converge
    fails lws, naming the Deployment, and nothing else. A cluster of its own: on the shared one, an earlier test's
    converge may have installed lws already, and a quota stops no pod that runs."""
    cluster = fresh_cluster
    lws = next(entry for entry in example_plan() if entry["name"] == "lws")
    assert lws["wait"] is False
    namespace = lws["releases"][0]["namespace"]
    cluster.kubectl("create", "namespace", namespace)
    cluster.kubectl("create", "quota", "no-pods", "--hard=pods=0", "-n", namespace)
    try:
        result = cluster.run_playbook(SITE, extra_vars=stack_vars(cluster, servingstack_wait_timeout=20))
    finally:
        cluster.kubectl("delete", "quota", "no-pods", "-n", namespace)
    assert result.rc != 0, output(result)
    text = said(result)
    # The run's last message names lws alone, with its Deployment.
    said_last = rf"(msg|Action failed): lws did not converge: lws: workloads not ready: Deployment {namespace}/\S+ \("
    assert re.search(said_last, text), output(result)
    # Every release is installed (helm's part of lws succeeded too).
    found = releases(cluster)
    assert found["mp-lws"]["status"] == "deployed", found
    assert all(release["status"] == "deployed" for release in found.values()), found
