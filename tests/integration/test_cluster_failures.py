"""Failures made with real mechanisms on the real control plane: a converge against a cluster whose
kube-apiserver was stopped, and one under a ValidatingAdmissionPolicy that refuses a chart's Deployment. Each
fails, and says what failed in terms a user can act on."""

from __future__ import annotations

import pytest
from stack_support import SITE, UPSTREAM, output, releases, stack_vars

pytestmark = [
    pytest.mark.playbook,
    pytest.mark.slow,
    pytest.mark.skipif(not UPSTREAM.is_dir(), reason="needs ../shared/upstream (the test charts' data and the CRDs)"),
]


def said(result) -> str:
    """The run's output with the YAML callback's line folding undone."""
    return " ".join((result.stdout + result.stderr).split())


def test_a_converge_against_a_stopped_api_server_fails_naming_it(fresh_cluster):
    fresh_cluster.stop_apiserver()
    result = fresh_cluster.run_playbook(SITE, extra_vars=stack_vars(fresh_cluster), timeout=300)
    assert result.rc != 0 and result.failed, output(result)
    text = said(result)
    host_port = fresh_cluster.url.removeprefix("https://")
    assert host_port in text, output(result)
    assert "refused" in text.lower(), output(result)


def test_a_converge_under_a_refusing_admission_policy_fails_naming_the_object_and_the_policy(cluster):
    allow = cluster.deny_writes("Deployment", "cert-manager", "mp-cert-manager")
    try:
        result = cluster.run_playbook(SITE, extra_vars=stack_vars(cluster))
    finally:
        allow()
    assert result.rc != 0, output(result)
    text = said(result)
    assert 'deployments.apps "mp-cert-manager' in text, output(result)
    assert "ValidatingAdmissionPolicy 'deny-deployments-" in text, output(result)
    assert "refused by the test" in text, output(result)
    # helm --atomic rolled the failed install back: no release of cert-manager is left deployed.
    assert releases(cluster).get("mp-cert-manager", {}).get("status") != "deployed"
