"""Benchmark of a fleet: FLEET_SIZE workload clusters, each a real control plane of its own, and a
management cluster holding their ServingStack CRs (read by the modelplane.serving.servingstacks inventory).
playbooks/site.yml converges the fleet with forks=10, fresh and then as a no-op re-run (NOOP_RUNS of them, the
median taken), against the same for one cluster of the fleet, in the same run (workloads ready after READY_AFTER
seconds, as in test_bench_stack.py).

Issue 12's targets: a no-op of a fleet of 20 <= 5x one cluster's no-op; a fresh fleet of 20 <= 4x one cluster's
fresh converge. API requests and helm processes per cluster are printed (run with -s), and two floors of the fresh
fleet, each as a ratio to one cluster's measured fresh converge and to its critical-path floor:
- the fork floor: kubernetes.core.helm refuses async, so every helm --wait holds one of the `forks` workers for the
  readiness delay; the fleet's helm waits (clusters x the plan's releases x READY_AFTER) / forks is a floor for any
  schedule of this playbook, however little CPU it uses;
- the CPU floor: the CPU the fresh fleet's converge used (Ansible, modules and helm; not the clusters' own)
  / this machine's cores.
"""

from __future__ import annotations

import os
import resource
import statistics
import sys
import time
from pathlib import Path

import pytest

sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "integration"))
from stack_support import SITE, UPSTREAM, example_plan, fleet_of, fleet_vars, helm_processes, releases

pytestmark = [
    pytest.mark.bench,
    pytest.mark.fleet,
    pytest.mark.slow,
    pytest.mark.skipif(not UPSTREAM.is_dir(), reason="needs ../shared/upstream (the test charts' data and the CRDs)"),
]

FLEET_SIZE = int(os.environ.get("FLEET_SIZE", "20"))
FORKS = 10
READY_AFTER = 10.0
# No-op re-runs of one cluster and of the fleet, in turn; their medians are compared.
NOOP_RUNS = 3
# Issue 12's targets, asserted as given. Measured at 20 on 2 cores: at cff5235 no-op 13.45x, fresh 11.1x; at 0d43199
# (the converge record: a no-op skips the components) no-op 41.1 s vs 4.9 s = 8.36x, fresh 609 s vs 59 s = 10.3x, with
# the same API requests and helm processes per cluster as one cluster alone; at 46b5f58 (secrets, status and
# kubeconfig on the controller) no-op 20.1 s vs 2.5 s = 8.13x (both halved), fresh 565 s vs 55 s = 10.2x; at 5c9d33b
# (internal_poll_interval 0.01, the retired API stand-in's release cache, GOGC=400 for helm) no-op 20.0 s vs 2.7 s =
# 7.39x, fresh
# 547 s vs 57 s = 9.62x, the fresh fleet using 843 CPU-s (422 s on 2 cores, 7.4x one cluster's fresh converge); with
# 24 tasks per host in a no-op instead of 35 (imports instead of includes, fewer set_facts; on a faster machine, the
# same Python loop 1.42 s instead of 2.14 s) no-op 8.3 s vs 1.5 s = 5.51x (medians of 3, the loop at 1.60 s: 5.69x),
# fresh 422 s vs 47.5 s = 8.90x, the fresh fleet's CPU floor 512 CPU-s / 2 cores = 5.40x and its fork floor 3.79x.
# A no-op is CPU-bound (Ansible's main process forks a worker per host and task); a fresh fleet is bound below by its
# CPU, above 4x on 2 cores, so NOT met here; see the notes.
NOOP_TARGET = 5.0
FRESH_TARGET = 4.0


def cpu_seconds() -> float:
    """CPU used so far by this process and its waited-for children (Ansible, its modules, helm); the clusters' own
    processes are not counted."""
    own, children = resource.getrusage(resource.RUSAGE_SELF), resource.getrusage(resource.RUSAGE_CHILDREN)
    return own.ru_utime + own.ru_stime + children.ru_utime + children.ru_stime


def converge(management, workloads, inventory, hosts: str, spy: dict[str, str]):
    """(seconds, CPU seconds, result) of site.yml over the inventory's hosts matching ``hosts``."""
    start, cpu = time.perf_counter(), cpu_seconds()
    result = management.run_playbook(SITE, inventory=inventory, forks=FORKS, env=spy, timeout=3600,
                                     extra_vars={**fleet_vars(next(iter(workloads.values()))),
                                                 "servingstack_hosts": hosts})
    return time.perf_counter() - start, cpu_seconds() - cpu, result


def fresh_floors(one_fresh_s: float, fleet_fresh_cpu: float) -> str:
    """The fork and CPU floors of the fresh fleet (see the module's docstring), said as ratios."""
    from ansible_collections.modelplane.serving.plugins.module_utils.servingstack import schedule

    stack_plan = example_plan()
    waits = sum(schedule.weight(entry) for entry in stack_plan)
    fork_floor = FLEET_SIZE * waits * READY_AFTER / FORKS
    path_floor = schedule.critical_path(stack_plan) * READY_AFTER
    cores = os.cpu_count() or 1
    cpu_floor = fleet_fresh_cpu / cores
    return (f"fresh fleet floors: forks {FLEET_SIZE} x {waits} helm waits x {READY_AFTER:g}s / {FORKS} = "
            f"{fork_floor:.0f}s ({fork_floor / one_fresh_s:.2f}x one cluster's fresh converge, "
            f"{fork_floor / path_floor:.2f}x its critical path of {path_floor:.0f}s); "
            f"CPU {fleet_fresh_cpu:.0f}s / {cores} cores = {cpu_floor:.0f}s "
            f"({cpu_floor / one_fresh_s:.2f}x one cluster's fresh converge)")


def test_bench_fleet(tmp_path_factory):
    names = [f"cluster-{index:02d}" for index in range(FLEET_SIZE + 1)]
    one = names[0]
    workdir = tmp_path_factory.mktemp("fleet-bench")
    with fleet_of(workdir, names, ready_after=READY_AFTER) as (management, workloads, inventory):
        spy_log = workdir / "helm.log"
        spy = management.helm_spy(spy_log)
        measured: dict[tuple[str, ...], list[float]] = {}
        # A fresh converge of each, then the no-op re-runs, one and fleet in turn: a no-op is short (one cluster's
        # about 1.5 s), so each is run NOOP_RUNS times and the medians compared.
        order = [("one", "fresh"), ("fleet", "fresh")] + [("one", "no-op"), ("fleet", "no-op")] * NOOP_RUNS
        for label, run in order:
            hosts = f"fleet/{one}" if label == "one" else "servingstacks:!fleet/" + one
            before_helm = helm_processes(spy_log)
            marks = {name: workloads[name].audit_mark() for name in names}
            seconds, cpu, result = converge(management, workloads, inventory, hosts, spy)
            assert result.rc == 0, result.stdout[-4000:]
            if run == "no-op":
                assert result.changed == 0, result.stdout[-4000:]
            clusters = 1 if label == "one" else FLEET_SIZE
            requests = sum(workloads[name].requests_since(marks[name]).get("total", 0) for name in names)
            measured.setdefault((label, run), []).append(seconds)
            measured.setdefault((label, run, "cpu"), []).append(cpu)
            print(f"\n{label} ({clusters} cluster{'s' if clusters > 1 else ''}) {run}: {seconds:.1f}s, "
                  f"{requests / clusters:.0f} API requests and "
                  f"{(helm_processes(spy_log) - before_helm) / clusters:.1f} helm processes per cluster, "
                  f"{cpu / clusters:.1f}s of CPU per cluster")
        assert all(len(releases(workloads[name])) == 9 for name in names)
    noop_ratio = statistics.median(measured["fleet", "no-op"]) / statistics.median(measured["one", "no-op"])
    fresh_ratio = measured["fleet", "fresh"][0] / measured["one", "fresh"][0]
    print(f"fleet of {FLEET_SIZE} with forks={FORKS} vs one cluster: no-op {noop_ratio:.2f}x "
          f"(target <= {NOOP_TARGET}x), fresh {fresh_ratio:.2f}x (target <= {FRESH_TARGET}x)")
    print(fresh_floors(measured["one", "fresh"][0], measured["fleet", "fresh", "cpu"][0]))
    assert noop_ratio <= NOOP_TARGET
    assert fresh_ratio <= FRESH_TARGET
