"""The whole Standard stack under helm 4 (4.3.1): converge, re-run, a pin bump, teardown.

kubernetes.core 6.6.0 speaks helm 4 (no `helm list --all`, --rollback-on-failure for atomic; helm 4 applies
server-side). The playbook tests elsewhere run helm 3; this one puts .venv/helm4/bin first on PATH, so every
kubernetes.core.helm task and every helm command of the collection runs helm 4.
"""

from __future__ import annotations

import json
import os
import subprocess

import pytest
from realclients import HELM_BINARIES, HELM_VERSIONS, binary, helm_majors
from stack_support import SITE, TEARDOWN, manifest, output, releases, stack_vars

pytestmark = [pytest.mark.playbook, pytest.mark.slow, pytest.mark.realhelm,
              pytest.mark.skipif(4 not in helm_majors(), reason="HELM_MAJOR leaves helm 4 out")]

STANDARD = {"mp-cert-manager", "mp-trust-manager", "mp-node-feature-discovery", "mp-dra-driver-nvidia-gpu",
            "mp-gateway-helm", "mp-ai-gateway-crds-helm", "mp-ai-gateway-helm", "mp-lws", "mp-kube-prometheus-stack"}


def test_converge_rerun_upgrade_and_teardown_under_helm_4(fresh_cluster):
    cluster = fresh_cluster
    helm4 = binary(HELM_BINARIES[4])
    env = {"PATH": f"{helm4.parent}{os.pathsep}{cluster.env['PATH']}"}
    version = subprocess.run(["helm", "version", "--short"], env={**cluster.env, **env}, capture_output=True,
                             text=True, check=True).stdout
    assert version.startswith(HELM_VERSIONS[4]), version

    first = cluster.run_playbook(SITE, extra_vars=stack_vars(cluster), env=env)
    assert first.rc == 0, output(first)
    assert {name for name, r in releases(cluster).items() if r["status"] == "deployed"} == STANDARD

    again = cluster.run_playbook(SITE, extra_vars=stack_vars(cluster), env=env)
    assert again.rc == 0 and again.changed == 0, output(again)

    bumped = cluster.run_playbook(SITE, extra_vars=stack_vars(cluster, manifest(versions={"certManager": "v1.21.0"})),
                                  env=env)
    assert bumped.rc == 0, output(bumped)
    found = releases(cluster)
    assert found["mp-cert-manager"]["revision"] == 2, found
    assert {name: r["revision"] for name, r in found.items() if name != "mp-cert-manager"} \
        == dict.fromkeys(STANDARD - {"mp-cert-manager"}, 1)
    listed = subprocess.run(["helm", "list", "-A", "-o", "json"], env={**cluster.env, **env}, capture_output=True,
                            text=True, check=True)
    assert {r["name"]: r["chart"] for r in json.loads(listed.stdout)}["mp-cert-manager"] == "cert-manager-v1.21.0"

    gone = cluster.run_playbook(TEARDOWN, extra_vars=stack_vars(cluster, servingstack_teardown_confirmed=True), env=env)
    assert gone.rc == 0, output(gone)
    assert releases(cluster) == {}
