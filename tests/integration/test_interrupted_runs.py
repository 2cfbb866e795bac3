"""Cancelled, killed and concurrent converges on the real control plane, with the real helm (issue 36,
docs/interrupted-runs.md): a run killed while helm installs or upgrades is recovered by one plain re-run; a cancelled
run leaves no private directory and no process; two runs of one cluster take turns on its Lease; a dead holder's
Lease is taken over; a teardown waits for the converge it met; an API server that never answers fails in time.

The converges here are LeaderWorkerSet's alone (one chart), between the servingstack role's connect.yml and
disconnect.yml, the steps that hold and release the Lease, with its recover.yml as main.yml runs it, so that each
run costs seconds rather than minutes.
"""

from __future__ import annotations

import contextlib
import json
import os
import signal
import socket
import subprocess
import sys
import time
from pathlib import Path

import pytest
import yaml
from cluster.fixtures import REPO, VENV_BIN
from stack_support import EXAMPLE, SITE, UPSTREAM, chart_mirror, releases, wait_for

pytestmark = [
    pytest.mark.playbook,
    pytest.mark.slow,
    pytest.mark.skipif(not UPSTREAM.is_dir(), reason="needs ../shared/upstream (the test charts' data and the CRDs)"),
]

LEASE = ("kube-system", "modelplane-servingstack")
RELEASE = "mp-lws"
LEAN = """\
- name: Converge LeaderWorkerSet alone, holding the target's Lease as the servingstack role does.
  hosts: localhost
  gather_facts: false
  tasks:
    - name: Connect to the target cluster and hold its Lease.
      ansible.builtin.include_role:
        name: modelplane.serving.servingstack
        tasks_from: connect.yml
    - name: Converge LeaderWorkerSet on the target cluster.
      module_defaults:
        group/kubernetes.core.k8s: "{{ servingstack_connection.k8s }}"
        group/kubernetes.core.helm: "{{ servingstack_connection.helm }}"
      environment: "{{ servingstack_environment }}"
      block:
        # As main.yml: the releases a killed run left pending are recovered once the Lease is held.
        - name: Find the releases a run that did not finish left pending.
          ansible.builtin.set_fact:
            servingstack_stuck: >-
              {{ query('modelplane.serving.servingstack_stuck_releases',
                       [{'release': 'mp-lws', 'namespace': 'lws-system'}], kubeconfig=servingstack_target_kubeconfig)
                 if servingstack_lease.held | default(false) else [] }}
        - name: Recover them.
          ansible.builtin.include_role:
            name: modelplane.serving.servingstack
            tasks_from: recover.yml
          when: servingstack_stuck | length > 0
        - name: Converge the component.
          ansible.builtin.include_role:
            name: modelplane.serving.lws
      always:
        - name: Release the Lease and remove the private directory.
          ansible.builtin.include_role:
            name: modelplane.serving.servingstack
            tasks_from: disconnect.yml
"""


class Run:
    """An ansible-playbook started in the background, in a process group of its own, as AWX starts a job."""

    def __init__(self, cluster, playbook: Path, extra_vars: dict, name: str):
        self.cluster = cluster
        self.log = Path(cluster.workdir) / f"{name}.log"
        varfile = Path(cluster.workdir) / f"{name}-vars.yml"
        varfile.write_text(yaml.safe_dump(extra_vars))
        cmd = [str(VENV_BIN / "ansible-playbook"), "-i", "localhost,", "-c", "local", str(playbook),
               "-e", f"ansible_python_interpreter={sys.executable}", "-e", f"@{varfile}"]
        self.started = time.monotonic()
        with open(self.log, "w", encoding="utf-8") as log:
            self.proc = subprocess.Popen(cmd, stdout=log, stderr=subprocess.STDOUT, env=cluster.env, cwd=REPO,
                                         start_new_session=True)

    def wait(self, timeout: float = 1500) -> int:
        return self.proc.wait(timeout=timeout)

    @property
    def said(self) -> str:
        """The output with the YAML callback's line folding undone."""
        return " ".join(self.log.read_text().split())

    def show(self) -> str:
        return f"rc={self.proc.returncode}\n{self.log.read_text()[-6000:]}"


def lean_vars(cluster, version: str = "v0.8.0", **more) -> dict:
    return {"servingstack_kubeconfig": cluster.kubeconfig, "servingstack_chart_mirror": chart_mirror(),
            "servingstack_spec": {"standard": {"leaderWorkerSet": version}},
            # A killed run's Lease is taken over after this many seconds.
            "servingstack_lease_duration": 6, **more}


@pytest.fixture
def lean(tmp_path) -> Path:
    path = tmp_path / "lean.yml"
    path.write_text(LEAN)
    return path


def lease_spec(cluster) -> dict | None:
    found = cluster.kubectl("get", "lease", "-n", LEASE[0], LEASE[1], "-o", "json", check=False)
    return json.loads(found.stdout)["spec"] if found.returncode == 0 else None


def holder(cluster) -> str:
    return (lease_spec(cluster) or {}).get("holderIdentity") or ""


def private_dirs(cluster) -> list[str]:
    return sorted(name for name in os.listdir(cluster.env["TMPDIR"]) if name.endswith(".servingstack"))


def run_processes(cluster) -> list[str]:
    """The processes of the runs against ``cluster``: every one inherits its TMPDIR (the cluster's own processes
    have another), the renewer of the Lease included."""
    marker = f"TMPDIR={cluster.env['TMPDIR']}\0".encode()
    found = []
    for entry in os.listdir("/proc"):
        if not entry.isdigit() or int(entry) == os.getpid():
            continue
        try:
            with open(f"/proc/{entry}/environ", "rb") as handle:
                if marker not in handle.read() + b"\0":
                    continue
            with open(f"/proc/{entry}/stat", encoding="utf-8") as handle:
                if handle.read().rsplit(")", 1)[1].split()[0] == "Z":
                    continue
            with open(f"/proc/{entry}/cmdline", "rb") as handle:
                command = handle.read().replace(b"\0", b" ").decode(errors="replace")[:200]
            found.append(f"{entry}: {command}")
        except (OSError, IndexError):
            continue
    return found


def kill_everything(cluster) -> None:
    """SIGKILL every process of the runs against ``cluster`` at once, as a pod or node that dies does."""
    for line in run_processes(cluster):
        with contextlib.suppress(OSError):
            os.kill(int(line.split(":", 1)[0]), signal.SIGKILL)


def release_status(cluster, *statuses: str) -> bool:
    return releases(cluster).get(RELEASE, {}).get("status") in statuses


def assert_nothing_left(cluster, timeout: float = 15) -> None:
    """No process of a run and no private directory, within ``timeout`` s of its ansible-playbook's end."""
    wait_for("the run's processes to end", lambda: not run_processes(cluster), timeout=timeout)
    assert private_dirs(cluster) == []


def test_a_run_killed_while_helm_installs_is_recovered_by_one_plain_rerun(fresh_cluster, lean):
    cluster = fresh_cluster
    killed = Run(cluster, lean, lean_vars(cluster), "killed")
    wait_for("helm to start the install", lambda: release_status(cluster, "pending-install"), timeout=900)
    kill_everything(cluster)
    killed.wait(timeout=30)
    # Nothing could clean up: the release stays pending-install, the client key stays, the Lease stays held.
    assert release_status(cluster, "pending-install")
    assert len(private_dirs(cluster)) == 1
    assert holder(cluster).startswith("ansible-playbook pid ")

    rerun = Run(cluster, lean, lean_vars(cluster), "rerun")
    assert rerun.wait() == 0, rerun.show()
    said = rerun.said
    assert f"Helm release lws-system/{RELEASE} was left pending-install at revision 1 by a run that did not " \
           "finish and never deployed: uninstalled" in said, rerun.show()
    # It waited for the dead run's Lease to expire, then took it over.
    assert "waiting up to 900 s for the converge of ansible-playbook pid" in said, rerun.show()
    assert releases(cluster)[RELEASE]["status"] == "deployed"
    # The dead run's directory went with the re-run's own.
    assert_nothing_left(cluster)
    assert holder(cluster) == ""


# An upgrade that rolls the manager's pods out (a new pod template), so that helm waits in pending-upgrade a while. Not
# the test charts' lws v0.7.0 -> v0.8.0: that bump moves the CRD out of the manifest (see test_lws_upgrade.py), and
# helm's rollback of it fails ("no CustomResourceDefinition ... found"), with or without this collection.
UPGRADE = {"component_values": {"lws": {"image": {"manager": {"pullPolicy": "Always"}}}}}


def test_a_run_killed_while_helm_upgrades_is_rolled_back_then_upgraded(fresh_cluster, lean):
    cluster = fresh_cluster
    first = Run(cluster, lean, lean_vars(cluster), "first")
    assert first.wait() == 0, first.show()
    killed = Run(cluster, lean, lean_vars(cluster, **UPGRADE), "killed")
    wait_for("helm to start the upgrade", lambda: release_status(cluster, "pending-upgrade"), timeout=900)
    kill_everything(cluster)
    killed.wait(timeout=30)
    assert releases(cluster)[RELEASE] == {"namespace": "lws-system", "revision": 2, "status": "pending-upgrade"}

    rerun = Run(cluster, lean, lean_vars(cluster, **UPGRADE), "rerun")
    assert rerun.wait() == 0, rerun.show()
    assert f"Helm release lws-system/{RELEASE} was left pending-upgrade at revision 2 by a run that did not " \
           "finish: rolled back to revision 1, its newest deployed one" in rerun.said, rerun.show()
    # Revision 3 is the rollback, 4 the upgrade the re-run went on with.
    assert releases(cluster)[RELEASE] == {"namespace": "lws-system", "revision": 4, "status": "deployed"}
    values = subprocess.run([str(VENV_BIN / "helm"), "get", "values", RELEASE, "-n", "lws-system", "-o", "json"],
                            env=cluster.env, capture_output=True, text=True, timeout=60, check=True)
    assert json.loads(values.stdout)["image"]["manager"]["pullPolicy"] == "Always", values.stdout
    assert_nothing_left(cluster)


def test_a_cancelled_run_leaves_no_private_directory_nor_process_and_the_next_runs_at_once(fresh_cluster, lean):
    cluster = fresh_cluster
    cancelled = Run(cluster, lean, lean_vars(cluster), "cancelled")
    wait_for("helm to start the install", lambda: release_status(cluster, "pending-install"), timeout=900)
    cancelled.proc.send_signal(signal.SIGINT)  # AWX's cancel
    assert cancelled.wait(timeout=60) != 0
    assert_nothing_left(cluster, timeout=10)
    assert holder(cluster) == ""  # released: the next run need not wait

    rerun = Run(cluster, lean, lean_vars(cluster), "rerun")
    assert rerun.wait() == 0, rerun.show()
    assert "waiting up to" not in rerun.said
    assert releases(cluster)[RELEASE]["status"] == "deployed"
    assert_nothing_left(cluster)


def test_two_runs_take_turns_and_a_teardown_waits_for_the_converge(fresh_cluster, lean):
    cluster = fresh_cluster
    first = Run(cluster, lean, lean_vars(cluster), "first")
    wait_for("the first run to hold the Lease", lambda: holder(cluster), timeout=900)
    # Told to wait 2 s: it fails naming the holder, having touched no release.
    impatient = Run(cluster, lean, lean_vars(cluster, servingstack_lease_wait=2), "impatient")
    teardown = Run(cluster, lean, lean_vars(cluster, servingstack_state="absent"), "teardown")
    assert impatient.wait(timeout=900) != 0
    said = impatient.said
    assert f"another converge of the target cluster {cluster.url} is running: {holder(cluster)} holds the Lease " \
           "kube-system/modelplane-servingstack" in said, impatient.show()
    assert "waited 2 s (servingstack_lease_wait), nothing was changed" in said, impatient.show()
    assert "Install or upgrade the Helm releases" not in said, impatient.show()

    assert first.wait() == 0, first.show()
    assert teardown.wait() == 0, teardown.show()
    # The teardown waited for the converge to end, then tore down what it had installed.
    assert "waiting up to 900 s for the converge of ansible-playbook pid " in teardown.said, teardown.show()
    assert RELEASE not in releases(cluster)

    # Two converges started together: one converges, the other waits for it, then finds nothing to change.
    both = [Run(cluster, lean, lean_vars(cluster), f"together-{index}") for index in (1, 2)]
    assert [run.wait() for run in both] == [0, 0], [run.show() for run in both]
    waited = [run for run in both if "waiting up to" in run.said]
    assert len(waited) == 1, [run.show() for run in both]
    assert "changed=0" in waited[0].said, waited[0].show()
    assert_nothing_left(cluster)
    assert holder(cluster) == ""


def test_a_lease_whose_holder_stopped_renewing_is_taken_over(fresh_cluster, lean):
    cluster = fresh_cluster
    stale = {"apiVersion": "coordination.k8s.io/v1", "kind": "Lease",
             "metadata": {"name": LEASE[1], "namespace": LEASE[0]},
             "spec": {"holderIdentity": "a run that was killed", "leaseDurationSeconds": 5,
                      "renewTime": "2026-01-01T00:00:00.000000Z", "acquireTime": "2026-01-01T00:00:00.000000Z",
                      "leaseTransitions": 3}}
    cluster.kubectl("apply", "-f", "-", input=json.dumps(stale))
    run = Run(cluster, lean, lean_vars(cluster), "takeover")
    wait_for("the run to take the Lease over", lambda: holder(cluster).startswith("ansible-playbook pid "),
             timeout=900)
    # Taken over only once unchanged for its duration, as timed by the run.
    assert time.monotonic() - run.started >= 5
    assert lease_spec(cluster)["leaseTransitions"] == 4
    assert run.wait() == 0, run.show()
    assert "waiting up to 900 s for the converge of a run that was killed" in run.said, run.show()
    assert_nothing_left(cluster)


def test_an_api_server_that_never_answers_fails_within_a_minute_naming_it(tmp_path):
    """No cluster: a local TCP listener that accepts connections and never answers (not even TLS)."""
    with socket.socket() as hole:
        hole.bind(("127.0.0.1", 0))
        hole.listen(64)
        url = f"https://127.0.0.1:{hole.getsockname()[1]}"
        kubeconfig = tmp_path / "kubeconfig"
        kubeconfig.write_text(yaml.safe_dump({
            "apiVersion": "v1", "kind": "Config", "current-context": "c",
            "clusters": [{"name": "c", "cluster": {"server": url}}],
            "contexts": [{"name": "c", "context": {"cluster": "c", "user": "u"}}],
            "users": [{"name": "u", "user": {"token": "not-shown"}}]}))
        (tmp_path / "tmp").mkdir()
        env = {**os.environ, "TMPDIR": str(tmp_path / "tmp"), "ANSIBLE_COLLECTIONS_PATH": str(REPO / ".collections"),
               "ANSIBLE_CONFIG": str(REPO / "ansible.cfg"), "ANSIBLE_NOCOLOR": "1",
               "ANSIBLE_LOCAL_TEMP": str(tmp_path / "ansible-tmp")}
        started = time.monotonic()
        done = subprocess.run([str(VENV_BIN / "ansible-playbook"), "-i", "localhost,", "-c", "local", str(SITE),
                               "-e", f"ansible_python_interpreter={sys.executable}",
                               "-e", f"servingstack_src={EXAMPLE}", "-e", f"servingstack_kubeconfig={kubeconfig}"],
                              capture_output=True, text=True, env=env, cwd=REPO, timeout=300, check=False)
        took = time.monotonic() - started
    said = " ".join((done.stdout + done.stderr).split())
    assert done.returncode != 0, said[-3000:]
    assert took < 60, took
    assert f"servingstack_lease: taking the Lease kube-system/modelplane-servingstack: cannot reach the cluster at " \
           f"{url}: " in said, said[-3000:]
    assert "timed out" in said and "not-shown" not in said
    assert [name for name in os.listdir(tmp_path / "tmp") if name.endswith(".servingstack")] == []
