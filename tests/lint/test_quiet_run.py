"""A plain run prints no warning a user cannot act on: `make plan` (ansible-playbook playbooks/plan.yml with this
repository's ansible.cfg, in the virtualenv requirements.txt makes) prints the plan and not one warning, from Ansible
or from Python (such as a CryptographyDeprecationWarning that ansible-core's own imports raise)."""

from __future__ import annotations

import os
import re
import subprocess
import sys
from pathlib import Path

REPO = Path(__file__).resolve().parents[2]
BIN = Path(sys.executable).parent
# Ansible's [WARNING] and [DEPRECATION WARNING] lines, and Python's `<file>:<line>: <Category>Warning: ...`.
WARNING = re.compile(r"warning", re.IGNORECASE)


def test_the_warning_pattern_finds_ansibles_and_pythons_warnings():
    assert WARNING.search("[WARNING]: Could not match supplied host pattern")
    assert WARNING.search("[DEPRECATION WARNING]: x is deprecated")
    assert WARNING.search("_ssh_agent.py:18: CryptographyDeprecationWarning: DSA is deprecated")
    assert not WARNING.search("ServingStack platform/west-gke-stack (Standard stack) installs, in order:")


def test_make_plan_prints_the_plan_and_no_warning():
    env = {**os.environ, "ANSIBLE_CONFIG": str(REPO / "ansible.cfg"),
           "ANSIBLE_COLLECTIONS_PATH": str(REPO / ".collections"), "NO_COLOR": "1"}
    env.pop("PYTHONWARNINGS", None)
    result = subprocess.run([sys.executable, str(BIN / "ansible-playbook"), "playbooks/plan.yml",
                             "-e", f"servingstack_src={REPO / 'examples' / 'servingstack.yaml'}"],
                            cwd=REPO, env=env, capture_output=True, text=True, timeout=300, check=False)
    output = result.stdout + result.stderr
    assert result.returncode == 0, output
    assert "(Standard stack) installs, in order:" in result.stdout, output
    warnings = [line for line in output.splitlines() if WARNING.search(line)]
    assert not warnings, "a plain run printed warnings:\n" + "\n".join(warnings)
