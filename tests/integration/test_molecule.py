"""The Molecule `default` scenario, run as a contributor would: `molecule test -s default` after `make venv`.

Its create step starts a real control plane (testing/cluster/run) and the test charts' repository
(testing/charts/serve); it converges the example ServingStack with the real helm, checks idempotence (a second
converge must report no change), verifies the gateway and releases, tears the stack down, and its destroy step
stops both and leaves nothing behind.
"""

from __future__ import annotations

import os
import re
import subprocess
import sys
from pathlib import Path

import pytest
from stack_support import UPSTREAM

REPO = Path(__file__).resolve().parents[2]
BIN = Path(sys.executable).parent

pytestmark = [
    pytest.mark.playbook,
    pytest.mark.slow,
    pytest.mark.skipif(not UPSTREAM.is_dir(), reason="needs ../shared/upstream (the test charts' data)"),
]


def test_molecule_default_scenario_creates_converges_and_destroys_its_own_cluster(tmp_path):
    ephemeral = tmp_path / "molecule"
    env = {
        **os.environ,
        "MOLECULE_EPHEMERAL_DIRECTORY": str(ephemeral),
        "PATH": f"{BIN}{os.pathsep}{os.environ['PATH']}",
        "ANSIBLE_COLLECTIONS_PATH": str(REPO / ".collections"),
        "HELM_CONFIG_HOME": str(tmp_path / "helm" / "config"),
        "HELM_CACHE_HOME": str(tmp_path / "helm" / "cache"),
        "HELM_DATA_HOME": str(tmp_path / "helm" / "data"),
        "TMPDIR": str(tmp_path),
        "ANSIBLE_FORCE_COLOR": "0",
        "NO_COLOR": "1",
    }
    for inherited in ("KUBECONFIG", "K8S_AUTH_KUBECONFIG"):
        env.pop(inherited, None)
    result = subprocess.run([str(BIN / "molecule"), "test", "-s", "default"], cwd=REPO, env=env,
                            capture_output=True, text=True, timeout=1500, check=False)
    output = result.stdout + result.stderr
    assert result.returncode == 0, output[-12000:]
    said = " ".join(output.split())
    # The idempotence step ran and found nothing to change; the teardown (cleanup) removed what converge made.
    assert re.search(r"Idempotence completed successfully|idempotence", said, re.I), output[-6000:]
    assert "Tear the example ServingStack down" in said
    assert "Stop the control plane and the test charts' repository" in said
    # destroy stopped the cluster and the chart server: their folder, kubeconfig and processes are gone.
    assert not (ephemeral / "cluster").exists()
    leftovers = subprocess.run(["pgrep", "-f", str(ephemeral)], capture_output=True, text=True, check=False).stdout
    assert leftovers == "", leftovers
