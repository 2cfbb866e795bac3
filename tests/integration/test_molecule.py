"""The Molecule `default` scenario, run for real against the Kubernetes API stand-in.

`molecule test -s default` converges the example ServingStack with the real helm and the test charts,
checks idempotence (a second converge must report no change), verifies the gateway and releases, and
tears the stack down.
"""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pytest
from kubernetes import client as k8s
from stack_support import chart_mirror

REPO = Path(__file__).resolve().parents[2]
BIN = Path(sys.executable).parent


@pytest.mark.playbook
@pytest.mark.slow
def test_molecule_default_scenario_passes_against_the_standin(cluster, tmp_path):
    env = {
        **os.environ,
        **cluster.env,
        "MOLECULE_EPHEMERAL_DIRECTORY": str(tmp_path / "molecule"),
        # The real helm (on cluster.env's PATH) installs the test charts from this repository.
        "SERVINGSTACK_CHART_MIRROR": chart_mirror(),
        "ANSIBLE_FORCE_COLOR": "0",
        "NO_COLOR": "1",
    }
    env["PATH"] = f"{cluster.env.get('PATH', os.environ['PATH'])}{os.pathsep}{BIN}"
    result = subprocess.run(
        [str(BIN / "molecule"), "test", "-s", "default"],
        cwd=REPO, env=env, capture_output=True, text=True, timeout=900, check=False
    )
    output = result.stdout + result.stderr
    assert result.returncode == 0, output[-12000:]
    # The idempotence step ran and found nothing to change.
    assert "idempotence" in output.lower()
    # The cleanup step tore the stack down: no release of ours is left in the stand-in.
    secrets = k8s.CoreV1Api(cluster.client()).list_secret_for_all_namespaces(label_selector="owner=helm").items
    assert [s.metadata.name for s in secrets if s.metadata.name.startswith("sh.helm.release.v1.mp-")] == []
