"""A fleet: ServingStack CRs on a management cluster, listed by the modelplane.serving.servingstacks inventory,
each converging its own workload cluster (every cluster a real control plane) through playbooks/site.yml. One
workload cluster's API server is stopped: it fails alone, named at the end of the run, and every other cluster
converges. The tests run in order on one fleet."""

from __future__ import annotations

import re

import pytest
import yaml
from stack_support import FLEET_NAMESPACE as NAMESPACE
from stack_support import REPO, SITE, STATUS, UPSTREAM, fleet_of, fleet_vars, get, output, releases

pytestmark = [
    pytest.mark.playbook,
    pytest.mark.slow,
    pytest.mark.skipif(not UPSTREAM.is_dir(), reason="needs ../shared/upstream (the test charts' data and the CRDs)"),
]

API = "infrastructure.modelplane.ai/v1alpha1"
HEALTHY = ("east-1", "east-2", "west-1", "west-2")
BROKEN = "broken-1"
RELEASES = 9  # the Standard stack's Helm releases


@pytest.fixture(scope="module")
def fleet(tmp_path_factory):
    """(management cluster, {name: workload cluster}, inventory file); the broken cluster's API server is stopped."""
    with fleet_of(tmp_path_factory.mktemp("fleet"), (*HEALTHY, BROKEN), broken=(BROKEN,)) as found:
        yield found


def run_site(fleet, forks: int, **more):
    management, workloads, inventory = fleet
    return management.run_playbook(SITE, inventory=inventory, forks=forks,
                                   extra_vars={**fleet_vars(workloads[HEALTHY[0]]), **more}, timeout=1500)


def recap_of(result, name: str) -> dict[str, int]:
    return result.recap[f"{NAMESPACE}/{name}"]


def test_the_fleet_converges_but_the_broken_cluster_which_fails_alone(fleet):
    management, workloads, _inventory = fleet
    result = run_site(fleet, forks=50)
    (management.workdir / "first-run.log").write_text(result.stdout)
    assert result.rc != 0, output(result)
    assert {name: recap_of(result, name)["failed"] for name in HEALTHY} == dict.fromkeys(HEALTHY, 0), output(result)
    for name in HEALTHY:
        found = releases(workloads[name])
        assert len(found) == RELEASES and {r["status"] for r in found.values()} == {"deployed"}, (name, found)
        assert recap_of(result, name)["failed"] == 0, output(result)
        status = get(management, API, "ServingStack", name, NAMESPACE)["status"]
        assert {c["type"]: c["status"] for c in status["conditions"]}["Synced"] == "True", (name, status)
    assert recap_of(result, BROKEN)["failed"] == 1, output(result)
    # The end of the run names the broken cluster and why: its API server does not answer.
    # (The YAML callback folds long messages over lines: compare with whitespace collapsed.)
    summary = re.search(r"1 of 5 ServingStacks did not converge: (.*)", " ".join(result.stdout.split()))
    assert summary and summary.group(1).startswith(f"{NAMESPACE}/{BROKEN}: "), output(result)
    assert re.search(r"refused|cannot reach|Max retries|connect", summary.group(1), re.I), summary.group(1)


def test_a_second_run_with_one_fork_changes_nothing_anywhere(fleet):
    _management, workloads, _inventory = fleet
    revisions = {name: {r: v["revision"] for r, v in releases(workloads[name]).items()} for name in HEALTHY}
    result = run_site(fleet, forks=1)
    assert result.rc != 0 and recap_of(result, BROKEN)["failed"] == 1, output(result)
    changed = {host: counts["changed"] for host, counts in result.recap.items()}
    assert changed == dict.fromkeys(result.recap, 0), output(result)
    assert {name: {r: v["revision"] for r, v in releases(workloads[name]).items()} for name in HEALTHY} == revisions


def test_one_cluster_converges_from_scratch_with_one_fork(fleet):
    management, workloads, inventory = fleet
    name = HEALTHY[0]
    teardown = management.run_playbook(REPO / "playbooks" / "teardown.yml", inventory=inventory, forks=1,
                                       extra_vars={"servingstack_hosts": f"{NAMESPACE}/{name}",
                                                   "servingstack_teardown_confirmed": True})
    assert teardown.rc == 0 and releases(workloads[name]) == {}, output(teardown)
    result = run_site(fleet, forks=1, servingstack_hosts=f"{NAMESPACE}/{name}")
    assert result.rc == 0, output(result)
    assert len(releases(workloads[name])) == RELEASES
    # Its components still converged in stages of lanes, one lane at a time.
    assert any(host.startswith(f"{NAMESPACE}/{name}/") for host in result.recap), result.recap


def test_status_prints_one_line_per_cluster_and_writes_json(fleet, tmp_path):
    management, _workloads, inventory = fleet
    report = tmp_path / "fleet-status.json"
    result = management.run_playbook(STATUS, inventory=inventory, extra_vars={"servingstack_status_file": str(report)})
    assert result.rc != 0, output(result)  # the broken cluster has no status to read
    said = " ".join(result.stdout.split())
    for name in HEALTHY:
        assert re.search(rf"{NAMESPACE}/{name}: address \S+, CA -, Ready True", said), output(result)
    assert re.search(rf"{NAMESPACE}/{BROKEN}: cannot read the status: .*refused", said, re.I), output(result)
    found = yaml.safe_load(report.read_text())
    assert sorted(found) == sorted(f"{NAMESPACE}/{name}" for name in (*HEALTHY, BROKEN))
    assert found[f"{NAMESPACE}/{HEALTHY[0]}"]["ready"] is True and found[f"{NAMESPACE}/{BROKEN}"]["error"]
