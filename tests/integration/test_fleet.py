"""A fleet: ServingStack CRs on a management cluster, listed by the modelplane.serving.servingstacks inventory,
each converging its own workload cluster (every cluster a real control plane) through playbooks/site.yml. One
workload cluster's API server is stopped: it fails alone, named at the end of the run, and every other cluster
converges. The tests run in order on one fleet.

The first converge is AWX's job slicing of it (playbooks/vars/awx.yml: the converge template), launched as AWX
launches it, without AWX (tests/integration/awx_jobs.py): its inventory update (`ansible-inventory --list --export`
over the servingstacks inventory source) is read once; slice i of K gets the inventory's hosts sorted by name at
i-1, i-1+K, i-1+2K... (AWX's Inventory.get_sliced_hosts), with their groups and variables (AWX's get_script_data);
the K jobs start at the same time, each through ansible-runner on a private data dir of its own, with the
management cluster's credential injected as its credential type says and the survey's default host pattern. Then
one cluster is torn down and the whole fleet runs in one process with one fork: that cluster converges again, the
others change nothing; and status.yml reports every cluster."""

from __future__ import annotations

import json
import re
import subprocess
import time
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path
from typing import Any

import pytest
import yaml
from awx_jobs import Job, job_template, launch_job, script_data, sliced_hosts
from cluster.fixtures import VENV_BIN
from stack_support import FLEET_NAMESPACE as NAMESPACE
from stack_support import REPO, SITE, STATUS, UPSTREAM, fleet_of, fleet_vars, get, output, plain, releases, said

pytestmark = [
    pytest.mark.playbook,
    pytest.mark.slow,
    pytest.mark.skipif(not UPSTREAM.is_dir(), reason="needs ../shared/upstream (the test charts' data and the CRDs)"),
]

API = "infrastructure.modelplane.ai/v1alpha1"
HEALTHY = ("east-1", "east-2", "west-1")
BROKEN = "west-2"
NAMES = (*HEALTHY, BROKEN)
# Two slices of two clusters, in place of the template's job_slice_count: the stopped cluster shares its slice with
# a healthy one.
SLICES = 2
RELEASES = 9  # the Standard stack's Helm releases
SURVEY_DEFAULTS = {"servingstack_hosts": "servingstacks"}  # what a scheduled launch answers


@pytest.fixture(scope="module")
def fleet(tmp_path_factory):
    """(management cluster, {name: workload cluster}, inventory file); BROKEN's API server is stopped."""
    with fleet_of(tmp_path_factory.mktemp("fleet"), NAMES, broken=(BROKEN,)) as found:
        yield found


def exported_inventory(management, inventory: str) -> dict[str, Any]:
    """What AWX's inventory update imports from the source: `ansible-inventory --list --export`."""
    result = subprocess.run([str(VENV_BIN / "ansible-inventory"), "-i", inventory, "--list", "--export"],
                            env={**management.env, "ANSIBLE_INVENTORY_UNPARSED_FAILED": "true"}, cwd=REPO,
                            capture_output=True, text=True, timeout=180, check=False)
    assert result.returncode == 0, result.stdout + result.stderr
    return plain(json.loads(result.stdout))


def run_slices(fleet, exported: dict[str, Any], root: Path) -> list[tuple[Job, float, float]]:
    """The converge template's job, sliced: one job per slice, launched at once, each through ansible-runner on its
    own private data dir with its slice's inventory and the management cluster's credential, as AWX launches them
    (tests/integration/awx_jobs.py): (job, started, ended) per slice."""
    management, workloads, _inventory = fleet
    template = job_template("playbooks/site.yml")
    extra_vars = {**fleet_vars(workloads[NAMES[0]]), **SURVEY_DEFAULTS}
    kubeconfig = Path(management.kubeconfig).read_text()

    def run(number: int) -> tuple[Job, float, float]:
        started = time.monotonic()
        job = launch_job(root, f"slice{number}of{SLICES}", template, script_data(exported, number, SLICES),
                         extra_vars, kubeconfig, timeout=1500)
        return job, started, time.monotonic()

    with ThreadPoolExecutor(max_workers=SLICES) as pool:
        return list(pool.map(run, range(1, SLICES + 1)))


def revisions(workload) -> dict[str, int]:
    return {name: found["revision"] for name, found in releases(workload).items()}


@pytest.fixture(scope="module")
def exported(fleet) -> dict[str, Any]:
    management, _workloads, inventory = fleet
    return exported_inventory(management, inventory)


def recap_of(result, name: str) -> dict[str, int]:
    return result.recap[f"{NAMESPACE}/{name}"]


def test_the_slices_converge_every_cluster_exactly_once_and_the_stopped_one_fails_its_slice_alone(
        fleet, exported, tmp_path):
    management, workloads, _inventory = fleet
    runs = run_slices(fleet, exported, tmp_path)
    for number, (result, _started, _ended) in enumerate(runs, 1):
        (management.workdir / f"slice{number}-first-run.log").write_text(result.stdout)
        assert result.status == ("failed" if result.rc else "successful"), result.output()
    # The K jobs ran at the same time.
    assert max(started for _result, started, _ended in runs) < min(ended for _result, _started, ended in runs)

    everyone = [f"{NAMESPACE}/{name}" for name in NAMES]
    for number, (result, _started, _ended) in enumerate(runs, 1):
        # Each slice's recap holds its own clusters (AWX's rule), no other host.
        assert set(result.recap) == set(sliced_hosts(everyone, number, SLICES)), output(result)
    in_slices = [host for result, _started, _ended in runs for host in result.recap]
    assert sorted(in_slices) == sorted(everyone)  # each cluster in exactly one slice

    broken = f"{NAMESPACE}/{BROKEN}"
    for result, _started, _ended in runs:
        if broken in result.recap:
            assert result.rc != 0 and result.recap[broken]["failed"] == 1, output(result)
            assert all(counts["failed"] == 0 for host, counts in result.recap.items() if host != broken), \
                output(result)
            # The end of the run names the broken cluster and why: its API server does not answer.
            summary = re.search(r"1 of 2 ServingStacks did not converge: (.*)", said(result))
            assert summary and summary.group(1).startswith(f"{broken}: "), output(result)
            assert re.search(r"refused|cannot reach|Max retries|connect", summary.group(1), re.I), summary.group(1)
        else:
            assert result.rc == 0, output(result)
    # Converged once: every release of every healthy cluster at its first revision, its CR Synced.
    for name in HEALTHY:
        found = releases(workloads[name])
        assert len(found) == RELEASES and {r["status"] for r in found.values()} == {"deployed"}, (name, found)
        assert set(revisions(workloads[name]).values()) == {1}, (name, found)
        status = get(management, API, "ServingStack", name, NAMESPACE)["status"]
        assert {c["type"]: c["status"] for c in status["conditions"]}["Synced"] == "True", (name, status)


def test_one_cluster_torn_down_converges_again_and_the_rest_of_the_fleet_changes_nothing_in_one_fork(fleet):
    """One cluster torn down (servingstack_hosts picks it), then the whole fleet in one process with one fork: that
    cluster converges from scratch on its own host, the others change nothing, the stopped one fails alone."""
    management, workloads, inventory = fleet
    name = HEALTHY[0]
    teardown = management.run_playbook(REPO / "playbooks" / "teardown.yml", inventory=inventory, forks=1,
                                       extra_vars={"servingstack_hosts": f"{NAMESPACE}/{name}",
                                                   "servingstack_teardown_confirmed": True})
    assert teardown.rc == 0 and releases(workloads[name]) == {}, output(teardown)
    assert list(teardown.recap) == [f"{NAMESPACE}/{name}"], teardown.recap

    result = management.run_playbook(SITE, inventory=inventory, forks=1,
                                     extra_vars=fleet_vars(workloads[name]), timeout=1500)
    assert result.rc != 0 and recap_of(result, BROKEN)["failed"] == 1, output(result)
    assert {healthy: recap_of(result, healthy)["failed"] for healthy in HEALTHY} == dict.fromkeys(HEALTHY, 0), \
        output(result)
    # One host per cluster, and no other: each cluster's components converge on its own host.
    assert sorted(result.recap) == sorted(f"{NAMESPACE}/{n}" for n in NAMES), result.recap
    assert recap_of(result, name)["changed"] > 0, output(result)
    assert len(releases(workloads[name])) == RELEASES
    assert {host: counts["changed"] for host, counts in result.recap.items() if host != f"{NAMESPACE}/{name}"} \
        == {f"{NAMESPACE}/{n}": 0 for n in NAMES if n != name}, output(result)
    assert re.search(rf"1 of {len(NAMES)} ServingStacks did not converge: {NAMESPACE}/{BROKEN}: ", said(result)), \
        output(result)
    for other in HEALTHY[1:]:
        assert set(revisions(workloads[other]).values()) == {1}, other


def test_status_prints_one_line_per_cluster_and_writes_json(fleet, tmp_path):
    management, _workloads, inventory = fleet
    report = tmp_path / "fleet-status.json"
    result = management.run_playbook(STATUS, inventory=inventory, extra_vars={"servingstack_status_file": str(report)})
    assert result.rc != 0, output(result)  # the broken cluster has no status to read
    for name in HEALTHY:
        assert re.search(rf"{NAMESPACE}/{name}: address \S+, CA -, Ready True", said(result)), output(result)
    assert re.search(rf"{NAMESPACE}/{BROKEN}: cannot read the status: .*refused", said(result), re.I), output(result)
    found = yaml.safe_load(report.read_text())
    assert sorted(found) == [f"{NAMESPACE}/{name}" for name in sorted(NAMES)]
    assert found[f"{NAMESPACE}/{HEALTHY[0]}"]["ready"] is True and found[f"{NAMESPACE}/{BROKEN}"]["error"]
