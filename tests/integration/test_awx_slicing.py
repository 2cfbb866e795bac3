"""AWX's job slicing of the fleet converge (playbooks/vars/awx.yml: the converge template's job_slice_count), run as
AWX runs it, without AWX: its inventory update (`ansible-inventory --list --export` over the servingstacks inventory
source) is read once; slice i of K gets the inventory's hosts sorted by name at i-1, i-1+K, i-1+2K... (AWX's
Inventory.get_sliced_hosts), as a per-slice inventory script printing the JSON of those hosts, their groups and
their variables (AWX's get_script_data, written by build_inventory as an executable script); the K `ansible-playbook
site.yml` processes start at the same time, each over its own slice, with the survey's default host pattern.

Six workload clusters (each a real control plane) and a management cluster holding their ServingStack CRs; one
workload cluster's API server is stopped. Every other cluster converges exactly once, in its own slice; the
stopped one fails its slice alone; every slice run again changes nothing. The tests run in order on one fleet."""

from __future__ import annotations

import json
import subprocess
import sys
import time
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path
from typing import Any

import pytest
from cluster.fixtures import VENV_BIN
from stack_support import FLEET_NAMESPACE as NAMESPACE
from stack_support import REPO, SITE, UPSTREAM, fleet_of, fleet_vars, output, releases

pytestmark = [
    pytest.mark.playbook,
    pytest.mark.slow,
    pytest.mark.skipif(not UPSTREAM.is_dir(), reason="needs ../shared/upstream (the test charts' data and the CRDs)"),
]

NAMES = ("east-1", "east-2", "east-3", "west-1", "west-2", "west-3")
BROKEN = "west-2"
SLICES = 3  # two clusters a slice: the stopped cluster shares its slice with a healthy one
FORKS = 10  # the AWX templates' forks
RELEASES = 9  # the Standard stack's Helm releases
SURVEY_DEFAULTS = {"servingstack_hosts": "servingstacks"}  # what a scheduled launch answers


@pytest.fixture(scope="module")
def fleet(tmp_path_factory):
    """(management cluster, {name: workload cluster}, inventory file); BROKEN's API server is stopped."""
    with fleet_of(tmp_path_factory.mktemp("awx-slicing"), NAMES, broken=(BROKEN,)) as found:
        yield found


def exported_inventory(management, inventory: str) -> dict[str, Any]:
    """What AWX's inventory update imports from the source: `ansible-inventory --list --export`."""
    result = subprocess.run([str(VENV_BIN / "ansible-inventory"), "-i", inventory, "--list", "--export"],
                            env={**management.env, "ANSIBLE_INVENTORY_UNPARSED_FAILED": "true"}, cwd=REPO,
                            capture_output=True, text=True, timeout=180, check=False)
    assert result.returncode == 0, result.stdout + result.stderr
    return unwrapped(json.loads(result.stdout))


def unwrapped(value: Any) -> Any:
    """ansible-inventory's JSON without Ansible 2.19's untrusted-string wrappers ({"__ansible_unsafe": s}): AWX stores
    plain values."""
    if isinstance(value, dict):
        if set(value) == {"__ansible_unsafe"}:
            return value["__ansible_unsafe"]
        return {key: unwrapped(item) for key, item in value.items()}
    if isinstance(value, list):
        return [unwrapped(item) for item in value]
    return value


def sliced_hosts(hosts: list[str], number: int, count: int) -> list[str]:
    """AWX's slice ``number`` (1-based) of ``count``: the hosts sorted by name, every count-th from number-1."""
    return sorted(hosts)[number - 1::count]


def slice_inventory(exported: dict[str, Any], number: int, count: int) -> dict[str, Any]:
    """The inventory AWX hands slice ``number``: only its hosts, in the groups they belong to, with their
    variables; every group is kept (an empty one too), as in AWX's get_script_data."""
    groups = {name: group for name, group in exported.items() if name not in ("_meta", "all", "ungrouped")}
    everyone = set(exported["_meta"]["hostvars"]) | {host for group in exported.values()
                                                     if isinstance(group, dict) for host in group.get("hosts", [])}
    chosen = sliced_hosts(list(everyone), number, count)
    hostvars = {host: exported["_meta"]["hostvars"].get(host, {}) for host in chosen}
    data: dict[str, Any] = {"_meta": {"hostvars": hostvars}}
    grouped: set[str] = set()
    for name, group in groups.items():
        entry = {key: group[key] for key in ("children", "vars") if group.get(key)}
        members = [host for host in group.get("hosts", []) if host in chosen]
        grouped.update(members)
        data[name] = {**entry, **({"hosts": members} if members else {})}
    data["all"] = {"hosts": [host for host in chosen if host not in grouped], "children": sorted(groups),
                   **({"vars": exported["all"]["vars"]} if exported.get("all", {}).get("vars") else {})}
    return data


def write_slice_inventories(directory: Path, exported: dict[str, Any], count: int) -> list[Path]:
    """One executable inventory script per slice that prints its JSON, as AWX writes a job's inventory."""
    scripts = []
    for number in range(1, count + 1):
        script = directory / f"slice{number}of{count}.py"
        script.write_text(f"#!{sys.executable}\nprint({json.dumps(slice_inventory(exported, number, count))!r})\n")
        script.chmod(0o700)
        scripts.append(script)
    return scripts


def run_slices(fleet, scripts: list[Path]) -> list[tuple[Any, float, float]]:
    """site.yml over every slice at once, each its own ansible-playbook: (result, started, ended) per slice."""
    management, workloads, _inventory = fleet
    extra_vars = {**fleet_vars(workloads[NAMES[0]]), **SURVEY_DEFAULTS}

    def run(script: Path) -> tuple[Any, float, float]:
        started = time.monotonic()
        result = management.run_playbook(SITE, inventory=str(script), forks=FORKS, extra_vars=extra_vars,
                                         timeout=1500)
        return result, started, time.monotonic()

    with ThreadPoolExecutor(max_workers=len(scripts)) as pool:
        return list(pool.map(run, scripts))


def cluster_hosts(recap: dict[str, dict[str, int]]) -> set[str]:
    """The ServingStack hosts of a recap (namespace/name), lanes (namespace/name/component) left out."""
    return {host for host in recap if host.count("/") == 1}


def revisions(workload) -> dict[str, int]:
    return {name: found["revision"] for name, found in releases(workload).items()}


@pytest.fixture(scope="module")
def scripts(fleet, tmp_path_factory) -> list[Path]:
    management, _workloads, inventory = fleet
    return write_slice_inventories(tmp_path_factory.mktemp("slices"), exported_inventory(management, inventory),
                                   SLICES)


def test_the_slices_converge_every_cluster_exactly_once_and_the_stopped_one_fails_its_slice_alone(fleet, scripts):
    management, workloads, _inventory = fleet
    runs = run_slices(fleet, scripts)
    for number, (result, _started, _ended) in enumerate(runs, 1):
        (management.workdir / f"slice{number}-first-run.log").write_text(result.stdout)
    # The K processes ran at the same time.
    assert max(started for _result, started, _ended in runs) < min(ended for _result, _started, ended in runs)

    everyone = [f"{NAMESPACE}/{name}" for name in NAMES]
    for number, (result, _started, _ended) in enumerate(runs, 1):
        # Each slice's recap holds its own clusters (AWX's rule) and the lanes of those that converged, no other.
        assert cluster_hosts(result.recap) == set(sliced_hosts(everyone, number, SLICES)), output(result)
        laned = {host.rsplit("/", 1)[0] for host in result.recap if host.count("/") == 2}
        assert laned == cluster_hosts(result.recap) - {f"{NAMESPACE}/{BROKEN}"}, output(result)
    in_slices = [host for result, _started, _ended in runs for host in cluster_hosts(result.recap)]
    assert sorted(in_slices) == sorted(everyone)  # each cluster in exactly one slice

    broken = f"{NAMESPACE}/{BROKEN}"
    for result, _started, _ended in runs:
        if broken in result.recap:
            assert result.rc != 0 and result.recap[broken]["failed"] == 1, output(result)
            assert all(counts["failed"] == 0 for host, counts in result.recap.items() if host != broken), \
                output(result)
        else:
            assert result.rc == 0, output(result)
    # Converged once: every release of every healthy cluster at its first revision.
    for name in NAMES:
        if name != BROKEN:
            found = releases(workloads[name])
            assert len(found) == RELEASES and {r["status"] for r in found.values()} == {"deployed"}, (name, found)
            assert set(revisions(workloads[name]).values()) == {1}, (name, found)


def test_every_slice_run_again_changes_nothing(fleet, scripts):
    _management, workloads, _inventory = fleet
    runs = run_slices(fleet, scripts)
    for result, _started, _ended in runs:
        assert {host: counts["changed"] for host, counts in result.recap.items()} == dict.fromkeys(result.recap, 0), \
            output(result)
        assert (result.rc != 0) == (f"{NAMESPACE}/{BROKEN}" in result.recap), output(result)
    for name in NAMES:
        if name != BROKEN:
            assert set(revisions(workloads[name]).values()) == {1}, name
