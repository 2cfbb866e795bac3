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
Each run's peak memory is printed too (README "Sizing a fleet for AWX" reads it): the proportional set size (PSS) of
its whole process tree (Ansible's main process, its workers, the modules and helm), and the resident set (RSS) and
CPU of Ansible's main process alone, sampled from /proc (Linux) every MEMORY_EVERY seconds. The main process's memory
grows with the clusters (the fleet's less one cluster's, over the other clusters), the rest with the busy forks.
"""

from __future__ import annotations

import os
import resource
import statistics
import sys
import threading
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
# How often the memory sampler reads /proc: a worker lives for a task (tens of ms and up), the main process a run.
MEMORY_EVERY = 0.25


def cpu_seconds() -> float:
    """CPU used so far by this process and its waited-for children (Ansible, its modules, helm); the clusters' own
    processes are not counted."""
    own, children = resource.getrusage(resource.RUSAGE_SELF), resource.getrusage(resource.RUSAGE_CHILDREN)
    return own.ru_utime + own.ru_stime + children.ru_utime + children.ru_stime


def parents() -> dict[int, int]:
    """pid -> parent pid of every process (/proc/<pid>/stat: the fields after the command's closing parenthesis)."""
    found = {}
    for entry in os.scandir("/proc"):
        if entry.name.isdigit():
            try:
                with open(f"/proc/{entry.name}/stat", "rb") as stat:
                    found[int(entry.name)] = int(stat.read().rsplit(b")", 1)[1].split()[1])
            except (OSError, IndexError, ValueError):
                pass  # gone meanwhile
    return found


def descendants(root: int, parent_of: dict[int, int]) -> list[int]:
    """``root`` and every process below it."""
    tree, frontier = [root], [root]
    while frontier:
        frontier = [pid for pid, parent in parent_of.items() if parent in frontier]
        tree += frontier
    return tree


def proc_kib(pid: int, file: str, field: str) -> int:
    """A ``field:  N kB`` line of /proc/<pid>/<file> (0 when the process is gone)."""
    try:
        with open(f"/proc/{pid}/{file}", "rb") as text:
            for line in text:
                if line.startswith(field.encode() + b":"):
                    return int(line.split()[1])
    except OSError:
        pass
    return 0


def proc_cpu(pid: int) -> float:
    """CPU seconds (user + system) a live process has used."""
    try:
        with open(f"/proc/{pid}/stat", "rb") as stat:
            fields = stat.read().rsplit(b")", 1)[1].split()
        return (int(fields[11]) + int(fields[12])) / os.sysconf("SC_CLK_TCK")
    except (OSError, IndexError, ValueError):
        return 0.0


class PlaybookMemory(threading.Thread):
    """Samples, until stopped, the ansible-playbook processes this test starts (its children whose command line names
    ansible-playbook; the clusters are children too, and left out): the peak PSS of each one's whole tree, the peak
    RSS of the main process, and the main process's CPU seconds as last seen. ``own_cpu``: this thread's CPU, which
    cpu_seconds() counts and the caller takes off."""

    def __init__(self) -> None:
        super().__init__(daemon=True)
        self.stopped = threading.Event()
        self.tree_kib = self.main_kib = 0
        self.main_cpu = self.own_cpu = 0.0

    def run(self) -> None:
        me = os.getpid()
        while not self.stopped.wait(MEMORY_EVERY):
            parent_of = parents()
            for pid in [pid for pid, parent in parent_of.items() if parent == me]:
                try:
                    with open(f"/proc/{pid}/cmdline", "rb") as cmdline:
                        if b"ansible-playbook" not in cmdline.read():
                            continue
                except OSError:
                    continue
                tree = sum(proc_kib(member, "smaps_rollup", "Pss") for member in descendants(pid, parent_of))
                self.tree_kib = max(self.tree_kib, tree)
                self.main_kib = max(self.main_kib, proc_kib(pid, "status", "VmRSS"))
                self.main_cpu = max(self.main_cpu, proc_cpu(pid))
        self.own_cpu = time.thread_time()


def converge(management, workloads, inventory, hosts: str, spy: dict[str, str]):
    """(seconds, CPU seconds, result, memory) of site.yml over the inventory's hosts matching ``hosts``."""
    memory = PlaybookMemory()
    memory.start()
    start, cpu = time.perf_counter(), cpu_seconds()
    result = management.run_playbook(SITE, inventory=inventory, forks=FORKS, env=spy, timeout=3600,
                                     extra_vars={**fleet_vars(next(iter(workloads.values()))),
                                                 "servingstack_hosts": hosts})
    memory.stopped.set()
    memory.join()
    return time.perf_counter() - start, cpu_seconds() - cpu - memory.own_cpu, result, memory


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


def per_cluster_memory(measured: dict[tuple[str, ...], list[float]]) -> str:
    """Memory, fresh and no-op (medians): what each cluster beyond the first adds to the main process (its inventory
    and results), and the fleet run's peak over its forks (workers, modules and helm are per fork, not per cluster)."""
    said = []
    for run in ("fresh", "no-op"):
        main = (statistics.median(measured["fleet", run, "main"]) - statistics.median(measured["one", run, "main"])) \
            / (FLEET_SIZE - 1)
        tree = statistics.median(measured["fleet", run, "tree"])
        said.append(f"{run}: main process +{main:.1f} MiB a cluster; the fleet run's peak {tree:.0f} MiB / {FORKS} "
                    f"forks = {tree / FORKS:.0f} MiB a fork")
    return "memory: " + "; ".join(said)


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
            seconds, cpu, result, memory = converge(management, workloads, inventory, hosts, spy)
            assert result.rc == 0, result.stdout[-4000:]
            if run == "no-op":
                assert result.changed == 0, result.stdout[-4000:]
            clusters = 1 if label == "one" else FLEET_SIZE
            requests = sum(workloads[name].requests_since(marks[name]).get("total", 0) for name in names)
            measured.setdefault((label, run), []).append(seconds)
            measured.setdefault((label, run, "cpu"), []).append(cpu)
            for key, value in (("tree", memory.tree_kib / 1024), ("main", memory.main_kib / 1024),
                               ("main cpu", memory.main_cpu)):
                measured.setdefault((label, run, key), []).append(value)
            print(f"\n{label} ({clusters} cluster{'s' if clusters > 1 else ''}) {run}: {seconds:.1f}s, "
                  f"{requests / clusters:.0f} API requests and "
                  f"{(helm_processes(spy_log) - before_helm) / clusters:.1f} helm processes per cluster, "
                  f"{cpu / clusters:.1f}s of CPU per cluster ({memory.main_cpu / clusters:.1f}s of it in Ansible's "
                  f"main process); "
                  f"peak memory {memory.tree_kib / 1024:.0f} MiB (PSS of the run's processes), "
                  f"main process {memory.main_kib / 1024:.0f} MiB (RSS)")
        assert all(len(releases(workloads[name])) == 9 for name in names)
    noop_ratio = statistics.median(measured["fleet", "no-op"]) / statistics.median(measured["one", "no-op"])
    fresh_ratio = measured["fleet", "fresh"][0] / measured["one", "fresh"][0]
    print(f"fleet of {FLEET_SIZE} with forks={FORKS} vs one cluster: no-op {noop_ratio:.2f}x "
          f"(target <= {NOOP_TARGET}x), fresh {fresh_ratio:.2f}x (target <= {FRESH_TARGET}x)")
    print(fresh_floors(measured["one", "fresh"][0], measured["fleet", "fresh", "cpu"][0]))
    print(per_cluster_memory(measured))
    assert noop_ratio <= NOOP_TARGET
    assert fresh_ratio <= FRESH_TARGET
