"""Shared pytest setup: make the collection importable as ansible_collections.modelplane.serving."""

from __future__ import annotations

import resource
import sys
from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parents[1]
COLLECTIONS = REPO / ".collections"
SHARED = REPO.parent / "shared"
UPSTREAM = SHARED / "upstream"

if str(COLLECTIONS) not in sys.path:
    sys.path.insert(0, str(COLLECTIONS))

# Install Ansible's collection loader before any test imports ansible_collections.*, so plain
# imports and Ansible's plugin loader (lookups, filters in a Templar) see one and the same
# modelplane.serving, whatever order the test modules run in.
from ansible.plugins.loader import init_plugin_loader  # noqa: E402

init_plugin_loader([str(COLLECTIONS)])

# The test tooling lives in testing/, out of the built collection: the real control plane (testing/cluster) with
# its fixtures cluster, fresh_cluster, run_playbook, and the cloud token services (testing/doubles).
if str(REPO / "testing") not in sys.path:
    sys.path.insert(0, str(REPO / "testing"))
from cluster.fixtures import cluster, fresh_cluster, run_playbook  # noqa: E402, F401  # pylint: disable=unused-import

# What the checks of the built collection (tests/lint/test_packaging.py) concluded, one file a check, printed at the end
# of the run so that CI's output shows each tool's own verdict, not just a passed test.
VERDICTS = REPO / "build" / "verdicts"


def pytest_sessionstart(session) -> None:
    if not hasattr(session.config, "workerinput"):  # the main process, not an xdist worker
        for stale in VERDICTS.glob("*.txt"):
            stale.unlink()


def pytest_terminal_summary(terminalreporter) -> None:
    verdicts = sorted(VERDICTS.glob("*.txt"))
    if verdicts:
        terminalreporter.section("checks of the built collection")
        for path in verdicts:
            terminalreporter.write_line(path.read_text().strip())


def _record_verdict(check: str, verdict: str) -> None:
    VERDICTS.mkdir(parents=True, exist_ok=True)
    (VERDICTS / f"{check}.txt").write_text(f"{check}: {verdict}\n")


@pytest.fixture
def record_verdict():
    """``record_verdict(check, verdict)`` keeps ``verdict`` (one line) of ``check`` for the run's summary."""
    return _record_verdict


# The longest test files (minutes each, one shared cluster converged many times), collected first so that make test's
# workers start on them and the many short tests fill the end (the Makefile's --no-loadscope-reorder keeps this order).
LONGEST_FIRST = ("test_stack_standard.py", "test_pruning.py", "test_stack_variants.py", "test_fleet.py")


def pytest_collection_modifyitems(items) -> None:
    rank = {name: index for index, name in enumerate(LONGEST_FIRST)}
    items.sort(key=lambda item: rank.get(item.path.name, len(rank)))  # stable: the rest keep their order


# A test process, and the ansible-playbook, helm and kubectl it runs, may hold this much address space at most: a
# runaway allocation then fails as a MemoryError in the test that made it, instead of the kernel's OOM killer taking
# a process of the machine. Three runs lost a worker that way, at 22 GB, unnamed (xdist: "node down"). The test
# cluster lifts it for its own processes (testing/cluster/run).
ADDRESS_SPACE_LIMIT = 8 << 30


def pytest_configure(config) -> None:
    hard = resource.getrlimit(resource.RLIMIT_AS)[1]
    resource.setrlimit(resource.RLIMIT_AS, (ADDRESS_SPACE_LIMIT if hard == resource.RLIM_INFINITY
                                            else min(hard, ADDRESS_SPACE_LIMIT), hard))
