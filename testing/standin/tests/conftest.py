"""pytest setup for the stand-in's self-tests: the `standin` package (testing/standin) with its fixtures
`cluster`, `fresh_cluster`, `run_playbook`, and the real helm and kubectl binaries (tests/realclients.py)
that the conformance tests drive."""

from __future__ import annotations

import sys
from pathlib import Path

REPO = Path(__file__).resolve().parents[3]

for folder in (REPO / "testing", REPO / "tests"):
    if str(folder) not in sys.path:
        sys.path.insert(0, str(folder))
from standin.fixtures import cluster, fresh_cluster, run_playbook  # noqa: E402, F401  # pylint: disable=unused-import
