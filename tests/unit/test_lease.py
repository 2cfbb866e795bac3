"""lease.py: one converge per target cluster, client-go's leader-election rules, and a renewer that cleans up after a
run whose ansible-playbook is gone; rundir.py: private directories of dead runs are removed."""

from __future__ import annotations

import datetime
import json
import os
import signal
import subprocess
import sys
import time

import pytest
from ansible_collections.modelplane.serving.plugins.module_utils.servingstack import lease, rundir

NOW = datetime.datetime(2026, 12, 6, 22, 0, 0, tzinfo=lease.UTC)


def held_by(holder, duration=30, transitions=0, version="7"):
    return {"metadata": {"name": lease.NAME, "namespace": "kube-system", "resourceVersion": version},
            "spec": {"holderIdentity": holder, "leaseDurationSeconds": duration, "renewTime": "r", "acquireTime": "a",
                     "leaseTransitions": transitions}}


def test_the_holder_names_the_awx_job_host_process_and_start():
    started = datetime.datetime(2026, 12, 6, 21, 0, 5, tzinfo=lease.UTC)
    assert lease.identity({"JOB_ID": "42"}, "awx-ee-1", 77, started) == (
        "AWX job 42, ansible-playbook pid 77 on awx-ee-1, started 2026-12-06T21:00:05Z")
    assert lease.identity({"AWX_JOB_ID": "9"}, "h", 1, started).startswith("AWX job 9, ansible-playbook pid 1 on h,")
    assert lease.identity({"JOB_ID": " "}, "laptop", 5, started) == (
        "ansible-playbook pid 5 on laptop, started 2026-12-06T21:00:05Z")


@pytest.mark.parametrize(("found", "elapsed", "verdict"), [
    (None, 0, "take"),
    (held_by(""), 0, "take"),
    (held_by("me"), 0, "take"),
    (held_by("other"), 0, "wait"),
    (held_by("other", duration=30), 29.9, "wait"),
    (held_by("other", duration=30), 30, "take"),
])
def test_a_lease_is_taken_when_free_ours_or_unchanged_for_its_duration(found, elapsed, verdict):
    seen = lease.observe(None, found, 100.0)
    assert lease.decide(found, "me", lease.observe(seen, found, 100.0 + elapsed), 100.0 + elapsed) == verdict


def test_a_renewal_restarts_the_waiters_clock():
    seen = lease.observe(None, held_by("other"), 0.0)
    renewed = held_by("other")
    renewed["spec"]["renewTime"] = "later"
    seen = lease.observe(seen, renewed, 29.0)
    assert seen.since == 29.0
    assert lease.decide(renewed, "me", seen, 40.0) == "wait"


def test_taking_over_counts_a_transition_and_renewing_keeps_the_acquire_time():
    taken = lease.claimed(held_by("other", transitions=2), "me", 30, "kube-system", lease.NAME, NOW)
    assert taken["spec"] == {"holderIdentity": "me", "leaseDurationSeconds": 30, "leaseTransitions": 3,
                             "acquireTime": "2026-12-06T22:00:00.000000Z", "renewTime": "2026-12-06T22:00:00.000000Z"}
    assert taken["metadata"]["resourceVersion"] == "7"
    renewed = lease.claimed(held_by("me", transitions=3), "me", 30, "kube-system", lease.NAME, NOW)
    assert (renewed["spec"]["acquireTime"], renewed["spec"]["leaseTransitions"]) == ("a", 3)
    created = lease.claimed(None, "me", 30, "kube-system", lease.NAME, NOW)
    assert "resourceVersion" not in created["metadata"] and created["spec"]["leaseTransitions"] == 0
    assert "holderIdentity" not in lease.released(held_by("me"), NOW)["spec"]


class FileClient:
    """The Lease API over a JSON file, so that the renewer's process and the test see the same Lease. Writes check
    the version as the API server does (409 on a stale one)."""

    def __init__(self, path):
        self.path = path
        self.writes = 0

    def _load(self):
        return json.loads(self.path.read_text()) if self.path.exists() else None

    def request(self, method, path, body=None, serializer=None):
        current = self._load()
        if method == "GET":
            if current is None:
                raise ApiError(404)
            return current
        if (method == "POST" and current is not None) or (
                method == "PUT" and (current or {}).get("metadata", {}).get("resourceVersion")
                != body["metadata"].get("resourceVersion")):
            raise ApiError(409)
        version = int((current or {}).get("metadata", {}).get("resourceVersion") or 0) + 1
        stored = {**body, "metadata": {**body["metadata"], "resourceVersion": str(version)}}
        self.path.write_text(json.dumps(stored))
        self.writes += 1
        return stored


class ApiError(Exception):
    def __init__(self, status):
        super().__init__(status)
        self.status = status


class Clock:
    def __init__(self):
        self.now = 0.0

    def __call__(self):
        return self.now

    def sleep(self, seconds):
        self.now += seconds


def test_a_second_run_waits_then_fails_naming_the_holder(tmp_path):
    client = FileClient(tmp_path / "lease.json")
    first = lease.acquire(client, "kube-system", lease.NAME, "run A", 30, 5, "https://api:6443", say=print)
    assert first["spec"]["holderIdentity"] == "run A"
    said, clock = [], Clock()
    with pytest.raises(lease.LeaseBusy) as busy:
        lease.acquire(client, "kube-system", lease.NAME, "run B", 30, 10, "https://api:6443", say=said.append,
                      clock=clock, sleep=clock.sleep)
    message = str(busy.value)
    assert "\n" not in message
    assert message.startswith("another converge of the target cluster https://api:6443 is running: run A holds the "
                              "Lease kube-system/modelplane-servingstack")
    assert "waited 10 s (servingstack_lease_wait)" in message
    assert said == ["waiting up to 10 s for the converge of run A to end (Lease kube-system/modelplane-servingstack)"]
    assert 10 <= clock.now < 12


def test_a_lease_its_holder_stopped_renewing_is_taken_over_after_its_duration(tmp_path):
    client = FileClient(tmp_path / "lease.json")
    lease.acquire(client, "kube-system", lease.NAME, "dead run", 8, 5, "u", say=print)
    clock = Clock()
    taken = lease.acquire(client, "kube-system", lease.NAME, "run B", 30, 60, "u", say=print, clock=clock,
                          sleep=clock.sleep)
    assert taken["spec"]["holderIdentity"] == "run B" and taken["spec"]["leaseTransitions"] == 1
    assert 8 <= clock.now <= 10


def test_a_released_lease_is_taken_at_once(tmp_path):
    client = FileClient(tmp_path / "lease.json")
    lease.acquire(client, "kube-system", lease.NAME, "run A", 30, 5, "u", say=print)
    assert lease.give_up(client, "kube-system", lease.NAME, "run A")
    assert not lease.give_up(client, "kube-system", lease.NAME, "run A")
    clock = Clock()
    lease.acquire(client, "kube-system", lease.NAME, "run B", 30, 60, "u", say=print, clock=clock, sleep=clock.sleep)
    assert clock.now == 0


def private_dir(tmp_path, owner):
    directory = tmp_path / f"run{owner}.servingstack"
    directory.mkdir(mode=0o700)
    (directory / "client.key").write_text("secret")
    rundir.record_owner(str(directory), owner)
    return directory


def renewer_for(tmp_path, owner_process, duration=3):
    directory = private_dir(tmp_path, owner_process.pid)
    holding = lease.Holding(namespace="kube-system", name=lease.NAME, me="run A", duration=duration,
                            owner=owner_process.pid, owner_start=rundir.start_time(owner_process.pid),
                            directory=str(directory))
    client = FileClient(tmp_path / "lease.json")
    lease.acquire(client, holding.namespace, holding.name, holding.me, duration, 1, "u", say=print)
    pid = lease.start_renewer(holding, lambda: FileClient(tmp_path / "lease.json"), rundir.remove)
    lease.save(holding, pid, str(directory / lease.STATE_FILE))
    return client, directory, pid


def reap(pid, timeout=15.0):
    """Wait for the forked renewer (this test's child) to exit; its exit code."""
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        done, status = os.waitpid(pid, os.WNOHANG)
        if done:
            return os.waitstatus_to_exitcode(status)
        time.sleep(0.05)
    os.kill(pid, signal.SIGKILL)
    raise AssertionError("the renewer did not exit")


@pytest.mark.slow
def test_the_renewer_renews_then_releases_when_asked(tmp_path):
    owner = subprocess.Popen([sys.executable, "-c", "import time; time.sleep(60)"])
    try:
        client, directory, pid = renewer_for(tmp_path, owner, duration=3)
        renewed_from = client._load()["spec"]["renewTime"]
        time.sleep(2.5)
        assert client._load()["spec"]["renewTime"] != renewed_from
        os.kill(pid, signal.SIGINT)  # a Ctrl-C reaching the whole run is ansible-playbook's to act on
        time.sleep(0.3)
        assert lease.alive(pid, rundir.start_time(pid))
        os.kill(pid, signal.SIGUSR1)
        assert reap(pid) == 0
        assert "holderIdentity" not in client._load()["spec"]
        assert directory.is_dir()  # the release leaves the directory to the run's own cleanup
    finally:
        owner.kill()
        owner.wait()


@pytest.mark.slow
def test_once_the_run_is_gone_the_renewer_ends_its_processes_releases_and_removes_the_directory(tmp_path):
    owner = subprocess.Popen([sys.executable, "-c", "import time; time.sleep(60)"])
    try:
        client, directory, pid = renewer_for(tmp_path, owner)
        # A helm the dead run left, detached from it (as Ansible's workers are), known by its environment.
        helm = subprocess.Popen([sys.executable, "-c", "import signal, time; signal.signal(signal.SIGTERM, "
                                 "signal.SIG_IGN); time.sleep(60)"],
                                env={**os.environ, "KUBECONFIG": f"{directory}/kubeconfig"}, start_new_session=True)
        time.sleep(0.5)
        owner.kill()
        owner.wait()
        started = time.monotonic()
        assert reap(pid) == 0
        assert helm.wait(timeout=1) == -signal.SIGKILL  # it ignored SIGTERM: killed after the grace
        assert time.monotonic() - started < lease.GRACE + 3
        assert not directory.exists()
        assert "holderIdentity" not in client._load()["spec"]
    finally:
        owner.kill()


def test_directories_of_dead_runs_are_removed_and_others_kept(tmp_path):
    live = private_dir(tmp_path, os.getpid())
    dead_process = subprocess.Popen(["true"])
    dead_process.wait()
    dead = private_dir(tmp_path, dead_process.pid)
    unowned_old = tmp_path / "old.servingstack"
    unowned_old.mkdir(mode=0o700)
    os.utime(unowned_old, (time.time() - rundir.UNOWNED_AGE - 5,) * 2)
    unowned_new = tmp_path / "new.servingstack"
    unowned_new.mkdir(mode=0o700)
    shared = tmp_path / "shared.servingstack"  # not as mkdtemp makes them: not ours to judge
    shared.mkdir(mode=0o755)
    other = tmp_path / "other-dir"
    other.mkdir(mode=0o700)
    removed = rundir.sweep(str(tmp_path))
    assert sorted(removed) == sorted([str(dead), str(unowned_old)])
    assert live.is_dir() and unowned_new.is_dir() and shared.is_dir() and other.is_dir()


def test_the_owner_is_the_parent_of_the_workers_session_leader():
    # Run as an Ansible worker is: a session leader whose parent is "ansible-playbook" (here this test).
    code = ("import os, sys; sys.path[:0] = sys.argv[1:]; os.setsid(); pid = os.fork()\n"
            "if pid == 0:\n"
            "    from ansible_collections.modelplane.serving.plugins.module_utils.servingstack import rundir\n"
            "    print(rundir.owner(), os.getsid(0), flush=True); os._exit(0)\n"
            "os.waitpid(pid, 0)")
    done = subprocess.run([sys.executable, "-c", code, *sys.path], capture_output=True, text=True, check=True,
                          env={**os.environ, "PYTHONPATH": os.pathsep.join(sys.path)})
    owner, leader = map(int, done.stdout.split())
    assert owner == os.getpid() and leader != os.getpid()
