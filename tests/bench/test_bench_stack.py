"""Benchmarks of the Standard stack on the test control plane against what a user would pick instead.

The baseline, generated from the plan and from what our converge installed: a plain playbook installing add-ons the
way kubespray does, one kubernetes.core.helm task per release (the same charts, versions and values, --wait,
--atomic) and, after each component's releases, one kubernetes.core.k8s task per object file (the files the
component's objects would be in), in the plan's order. Ours is playbooks/site.yml. Both use the real helm
(.venv/bin/helm) and the test charts (testing/charts) as the chart mirror, on clusters of the same kind, in the
same run; every ratio is to the baseline's time in that run (run with -s to see them).

1. Fresh converge on clusters whose workloads become ready READY_AFTER seconds after they start, as image pulls
   and pod starts take time. Ours waits with helm's --wait only for the releases a later component needs
   (cert-manager, NFD) and for the others' workloads once, at the end; the baseline waits for every release.
   Ours and the baseline run at the same time, each on its own cluster: both mostly wait, and what they compete
   for slows ours, the shorter run, more than the baseline, so the ratio can only err against us.
   Target <= 0.5x (printed, met or not met). Its ratio to the critical-path floor is printed: the waits the plan
   imposes one after the other (one per release a later component needs, one at the end for the rest, and one per
   install hook Job, which helm runs and waits for with or without --wait: cert-manager's startupapicheck, Envoy
   Gateway's certgen, kube-prometheus-stack's admission create and patch), each READY_AFTER, plus the one-task floor.
   So is the serial floor: the fresh converge with workloads ready at once plus those waits, what a converge that
   installs one release at a time cannot go below.
2. A re-run that changes nothing, on clusters that each converged (workloads ready at once), best of ATTEMPTS:
   kubernetes.core.helm compares chart version and values and upgrades nothing, kubernetes.core.k8s applies every
   object. Asserted: changed=0, 0 stored writes (no write verb but patch, and every object our re-runs patched
   keeps its resourceVersion; kubernetes.core.k8s's client-side apply sends a merge PATCH for an object holding a
   list it knows no merge key for, such as a Gateway's listeners, a Bundle's sources or a CRD's versions, changed
   or not; the API server stores nothing for it; the run's Lease is coordination, not a write of the stack).
   Printed, met or not met: at most RERUN_TASKS task runs (the play recap's ok + changed + failed + skipped +
   rescued + ignored: a loop is one), and at most RERUN_TARGET x the baseline's re-run time. The one play of issue 35
   was not measured on an idle machine before it landed; the targets are asserted again once it is.
   Each run's task count and CPU seconds are printed beside the baseline's, and the ratio to the one-task floor (a
   playbook with one no-op k8s_info task).
3. Printed only: the fresh converge with workloads ready at once (nothing to wait for: the CPU work of Ansible
   and helm on this machine's cores), ours then the baseline.
"""

from __future__ import annotations

import concurrent.futures
import json
import subprocess
import sys
import time
from pathlib import Path
from typing import Any

import pytest
import yaml

sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "integration"))
from cluster.fixtures import running_cluster
from stack_support import (
    CORES,
    GAIE_CRDS,
    GATEWAY_NS,
    SITE,
    UPSTREAM,
    chart_mirror,
    cpu_seconds,
    example_plan,
    get,
    helm_waits,
    hook_jobs,
    patched_objects,
    resource_versions,
    stack_vars,
    write_verbs,
)

pytestmark = [
    pytest.mark.bench,
    pytest.mark.slow,
    pytest.mark.skipif(not UPSTREAM.is_dir(), reason="needs ../shared/upstream (the test charts' data and the CRDs)"),
]

# Issue 35's targets, printed with met or not met (the end of the test says why they are not asserted yet).
CONVERGE_TARGET = 0.5
RERUN_TARGET = 1.4
RERUN_TASKS = 80
# Seconds a workload (Deployment, DaemonSet, StatefulSet, Job) takes to become ready on the test control plane
# (kwok's stages with a delay): less than real image pulls and pod starts take.
READY_AFTER = 10.0
# Best of this many runs for the short measurements (re-runs and floor), to damp scheduling noise.
ATTEMPTS = 3

# The object files the baseline applies after a component's releases: (apiVersion, kind, name, namespace) of the
# objects of each file. The Standard stack also creates and deletes a cert-manager probe, left out.
FILES = {
    "trust_manager": [[("trust.cert-manager.io/v1alpha1", "Bundle", "mp-gateway-ca", None)]],
    "envoy_gateway": [
        # The Gateway API Inference Extension's manifests.yaml.
        [("apiextensions.k8s.io/v1", "CustomResourceDefinition", crd, None) for crd in GAIE_CRDS],
        [("v1", "Namespace", GATEWAY_NS, None),
         ("gateway.envoyproxy.io/v1alpha1", "EnvoyProxy", "inference-gateway", GATEWAY_NS),
         ("gateway.networking.k8s.io/v1", "GatewayClass", "envoy", None),
         ("gateway.networking.k8s.io/v1", "Gateway", "inference-gateway", GATEWAY_NS)],
    ],
}


def timed(run, *args, **kwargs):
    start = time.perf_counter()
    result = run(*args, **kwargs)
    return time.perf_counter() - start, result


def timed_cpu(run, *args, **kwargs):
    """(seconds, result, CPU seconds) of a run, its CPU as cpu_seconds() counts it: every child that ended meanwhile,
    so only for runs made one at a time."""
    cpu = cpu_seconds()
    seconds, result = timed(run, *args, **kwargs)
    return seconds, result, cpu_seconds() - cpu


def clean(obj: dict) -> dict:
    """An object as a user would write it: no status, no server-set metadata."""
    metadata = {key: obj["metadata"][key] for key in ("name", "namespace", "labels", "annotations")
                if obj["metadata"].get(key)}
    return {key: value for key, value in obj.items() if key not in {"status", "metadata"}} | {"metadata": metadata}


def why_failed(result) -> str:
    """The lines that say why a run failed (a component's error, helm's stderr), then the run's tail."""
    said = [line for line in result.stdout.splitlines()
            if "did not converge" in line or "stderr: Error" in line or line.startswith("fatal:")]
    return "\n".join(said[:20]) + "\n...\n" + result.stdout[-3000:]


def baseline_of(ours: Any, stack_plan: list[dict], workdir: Path) -> tuple[Path, list[dict]]:
    """The baseline playbook installing what our converge installed on ``ours`` (the same charts, the values helm
    recorded, the same objects), and the objects it applies."""
    tasks, objects = [], []
    for component in stack_plan:
        for release in component["releases"]:
            proc = subprocess.run(["helm", "get", "values", release["release"], "-n", release["namespace"],
                                   "-o", "json"], env=ours.env, capture_output=True, text=True, check=True)
            helm = {
                "name": release["release"], "chart_ref": release["chart"], "chart_repo_url": chart_mirror(),
                "chart_version": release["version"], "release_namespace": release["namespace"],
                "create_namespace": True, "release_values": json.loads(proc.stdout) or {}, "wait": True,
                "atomic": True,
            }
            tasks.append({"name": f"Install {release['release']}.", "kubernetes.core.helm": helm})
        for index, keys in enumerate(FILES.get(component["name"], [])):
            documents = [clean(get(ours, *key)) for key in keys]
            objects += documents
            path = workdir / f"{component['name']}-{index}.yaml"
            path.write_text(yaml.safe_dump_all(documents))
            tasks.append({"name": f"Apply {path.name}.", "kubernetes.core.k8s": {"src": str(path)}})
    playbook = workdir / "baseline.yml"
    playbook.write_text(yaml.safe_dump([{"name": "Baseline", "hosts": "localhost", "connection": "local",
                                         "gather_facts": False, "tasks": tasks}]))
    return playbook, objects


def refs(cluster: Any, objects: list[dict]) -> list[tuple]:
    """(apiVersion, resource, namespace, name) of each object, as patched_objects() names them."""
    dynamic = cluster.dynamic()
    return [(obj["apiVersion"], dynamic.resources.get(api_version=obj["apiVersion"], kind=obj["kind"]).name,
             obj["metadata"].get("namespace"), obj["metadata"]["name"]) for obj in objects]


def patches(result: Any) -> int:
    return result.requests["verbs"].get("patch", 0)


def task_runs(result: Any) -> int:
    """The task runs of a playbook run, from its recap: every task a host ran or skipped once (a loop is one)."""
    return sum(counts.get(key, 0) for counts in result.recap.values()
               for key in ("ok", "changed", "failed", "skipped", "rescued", "ignored"))


def test_bench_standard_stack(tmp_path_factory):
    stack_plan = example_plan()
    assert set(FILES) <= {component["name"] for component in stack_plan}
    workdir = tmp_path_factory.mktemp("bench")
    floor = workdir / "floor.yml"
    floor.write_text(yaml.safe_dump([{"name": "Floor", "hosts": "localhost", "connection": "local",
                                      "gather_facts": False, "tasks": [{
                                          "name": "Read one namespace.",
                                          "kubernetes.core.k8s_info": {"kind": "Namespace", "name": "default"}}]}]))

    # Workloads ready at once: our fresh converge, then the baseline's (one after the other: both are CPU-bound),
    # then the re-runs on each converged cluster, taking turns.
    with running_cluster(workdir / "ours-0") as ours, running_cluster(workdir / "baseline-0") as base:
        instant_s, converged, instant_cpu = timed_cpu(ours.run_playbook, SITE, extra_vars=stack_vars(ours))
        assert converged.rc == 0, why_failed(converged)
        hooks = hook_jobs(ours, stack_plan)
        baseline, objects = baseline_of(ours, stack_plan, workdir)
        instant_base_s, based, instant_base_cpu = timed_cpu(base.run_playbook, baseline)
        assert based.rc == 0, based.stdout[-3000:]
        before, mark = resource_versions(ours, refs(ours, objects)), ours.audit_mark()
        runs: dict[str, list] = {"ours": [], "baseline": [], "floor": []}
        for _attempt in range(ATTEMPTS):
            runs["ours"].append(timed_cpu(ours.run_playbook, SITE, extra_vars=stack_vars(ours)))
            runs["baseline"].append(timed_cpu(base.run_playbook, baseline))
            runs["floor"].append(timed_cpu(ours.run_playbook, floor))
        patched = patched_objects(ours, mark)
        after = resource_versions(ours, [ref for ref in patched if ref in before])
    for name, measured in runs.items():
        assert all(result.rc == 0 for _s, result, _cpu in measured), (name, measured[-1][1].stdout[-3000:])
    assert all(result.changed == 0 for _s, result, _cpu in runs["ours"]), runs["ours"][-1][1].stdout[-3000:]
    (rerun_s, rerun, rerun_cpu), (base_rerun_s, base_rerun, base_rerun_cpu), (floor_s, _floor, _floor_cpu) = (
        min(runs[name], key=lambda run: run[0]) for name in ("ours", "baseline", "floor"))
    writes = [write_verbs(result) for _s, result, _cpu in runs["ours"]]
    kept = sum(after[ref] == before[ref] for ref in after)
    tasks, base_tasks = task_runs(rerun), task_runs(base_rerun)
    print(f"\nre-run changing nothing, best of {ATTEMPTS}: ours {rerun_s:.1f}s vs baseline {base_rerun_s:.1f}s: "
          f"{rerun_s / base_rerun_s:.2f}x (target <= {RERUN_TARGET}x); task runs ours {tasks} vs baseline "
          f"{base_tasks} (target <= {RERUN_TASKS}); CPU ours {rerun_cpu:.1f}s vs baseline {base_rerun_cpu:.1f}s: "
          f"{rerun_cpu / base_rerun_cpu:.2f}x (the CPU floor of ours on {CORES} cores is {rerun_cpu / CORES:.1f}s); "
          f"{rerun_s / floor_s:.2f}x the one-task floor ({floor_s:.1f}s), the baseline {base_rerun_s / floor_s:.2f}x; "
          f"PATCH requests ours {patches(rerun)} vs baseline {patches(base_rerun)} (API requests "
          f"{rerun.requests['total']} vs {base_rerun.requests['total']}); our writes {writes}, {len(patched)} objects "
          f"patched, {kept} of them keep their resourceVersion")
    print(f"fresh converge, workloads ready at once: ours {instant_s:.1f}s vs baseline {instant_base_s:.1f}s: "
          f"{instant_s / instant_base_s:.2f}x (CPU only, not bounded); task runs ours {task_runs(converged)} vs "
          f"baseline {task_runs(based)}; CPU ours {instant_cpu:.1f}s vs baseline {instant_base_cpu:.1f}s; API requests "
          f"{converged.requests['total']} vs {based.requests['total']}")

    # Workloads ready after READY_AFTER: ours and the baseline at the same time, each on a cluster of its own.
    with running_cluster(workdir / "ours-wait", ready_after=READY_AFTER) as ours, \
            running_cluster(workdir / "baseline-wait", ready_after=READY_AFTER) as base, \
            concurrent.futures.ThreadPoolExecutor(max_workers=2) as pool:
        ours_run = pool.submit(timed, ours.run_playbook, SITE, extra_vars=stack_vars(ours))
        base_run = pool.submit(timed, base.run_playbook, baseline)
        (fresh_s, converged), (base_fresh_s, based) = ours_run.result(), base_run.result()
    assert converged.rc == 0, why_failed(converged)
    assert based.rc == 0, based.stdout[-3000:]
    waits = helm_waits(stack_plan) + hooks
    path_floor = waits * READY_AFTER + floor_s
    serial_floor = instant_s + waits * READY_AFTER
    print(f"fresh converge, workloads ready after {READY_AFTER:g}s, run at the same time: ours {fresh_s:.1f}s vs "
          f"baseline {base_fresh_s:.1f}s: {fresh_s / base_fresh_s:.2f}x (target <= {CONVERGE_TARGET}x); task runs ours "
          f"{task_runs(converged)} vs baseline {task_runs(based)}; API requests {converged.requests['total']} vs "
          f"{based.requests['total']}; {fresh_s / path_floor:.2f}x the critical-path floor ({waits} waits, {hooks} of "
          f"them hook Jobs, x {READY_AFTER:g}s + the one-task floor = {path_floor:.1f}s); the serial floor (the "
          f"instant converge + the waits) is {serial_floor:.1f}s, {serial_floor / base_fresh_s:.2f}x the baseline")

    assert all(set(verbs) <= {"patch"} for verbs in writes), writes
    assert set(patched) <= set(before), f"patched objects the baseline does not apply: {set(patched) - set(before)}"
    assert after == {ref: before[ref] for ref in patched}, "a re-run's PATCH was stored"
    # Issue 35's speed targets, said met or not met; issue 35 stays open until they are measured met, and asserted.
    targets = (("fresh converge", fresh_s / base_fresh_s, CONVERGE_TARGET),
               ("re-run", rerun_s / base_rerun_s, RERUN_TARGET),
               ("re-run task runs", tasks, RERUN_TASKS))
    for what, value, target in targets:
        print(f"target {what}: {value:.2f} against <= {target}: {'met' if value <= target else 'not met'}")
