# Copyright 2026 The modelplane.serving authors
# Apache License 2.0 (see LICENSE)
"""One converge per target cluster at a time: a ``coordination.k8s.io/v1`` Lease on the target, held from connect to
disconnect (the ``servingstack_lease`` lookup takes and releases it).

The rules are client-go's leader election (``k8s.io/client-go/tools/leaderelection``): a Lease with no
``holderIdentity`` is free; one whose record (holder, renewTime, acquireTime, transitions) has not changed for its
``leaseDurationSeconds``, as timed by the waiter's own clock, is expired and may be taken over, so clocks that
disagree between controllers do not matter; every write is an update of the version read (``resourceVersion``), so
of two runs that try at once, one wins and the other reads again. The holder renews every third of the duration;
a run that was killed stops renewing, which is how a dead run is told apart from a slow one.

The holder renews from a process of its own (``keep``), forked from the lookup's worker so that it stays in the
run's session, never detached: it watches the ansible-playbook process and, once that is gone (interrupted with
SIGINT or SIGTERM, or killed), ends whatever of the run is left (the workers and their helm processes, which
ansible-playbook's death does not end), releases the Lease, removes the run's private directory and exits, within
seconds. A run killed together with it (a node or pod that dies) leaves the Lease to expire.
"""

from __future__ import annotations

import contextlib
import datetime
import json
import os
import signal
import time
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

from ansible_collections.modelplane.serving.plugins.module_utils.servingstack import kubeclient, rundir

UTC = datetime.timezone.utc  # noqa: UP017 (module_utils: any Python 3)
NAME = "modelplane-servingstack"
API = "/apis/coordination.k8s.io/v1"
# How often the waiting and the renewing loops look, in seconds.
POLL = 1.0
# How long the processes of a run whose ansible-playbook is gone get to end after SIGTERM, before SIGKILL.
GRACE = 5.0
# The state the renewer keeps in the run's private directory, for the release and for the next run.
STATE_FILE = "lease.json"


class LeaseBusy(Exception):
    """Another run held the Lease for the whole wait: the message names it."""


# ----------------------------------------------------------------------------- pure rules
def microtime(moment: datetime.datetime) -> str:
    """A ``MicroTime`` as the API writes it (``2026-12-06T22:39:32.123456Z``)."""
    return moment.astimezone(UTC).strftime("%Y-%m-%dT%H:%M:%S.%fZ")


def identity(environ: dict[str, str], host: str, pid: int, started: datetime.datetime) -> str:
    """The ``holderIdentity`` naming a run: its AWX job (``JOB_ID``, ``AWX_JOB_ID``) when there is one, the host,
    the ansible-playbook process and when it started."""
    job = environ.get("JOB_ID") or environ.get("AWX_JOB_ID") or ""
    awx = f"AWX job {job}, " if job.strip() else ""
    when = started.astimezone(UTC).strftime("%Y-%m-%dT%H:%M:%SZ")
    return f"{awx}ansible-playbook pid {pid} on {host}, started {when}"


@dataclass(frozen=True)
class Seen:
    """What a waiter last read of the Lease, and when by its own monotonic clock it first read that."""

    record: tuple[Any, ...]
    since: float


def record(lease: dict[str, Any] | None) -> tuple[Any, ...]:
    spec = (lease or {}).get("spec") or {}
    return (spec.get("holderIdentity") or "", spec.get("renewTime"), spec.get("acquireTime"),
            spec.get("leaseTransitions"), spec.get("leaseDurationSeconds"))


def observe(seen: Seen | None, lease: dict[str, Any] | None, now: float) -> Seen:
    """``seen`` updated with the Lease just read at ``now``: the clock restarts whenever the record changed."""
    current = record(lease)
    return seen if seen is not None and seen.record == current else Seen(current, now)


def decide(lease: dict[str, Any] | None, me: str, seen: Seen, now: float) -> str:
    """``take`` (free, expired, or ours already) or ``wait`` (another run holds it and renews)."""
    spec = (lease or {}).get("spec") or {}
    holder = spec.get("holderIdentity") or ""
    if not holder or holder == me:
        return "take"
    duration = int(spec.get("leaseDurationSeconds") or 0)
    return "take" if now - seen.since >= duration else "wait"


def claimed(lease: dict[str, Any] | None, me: str, duration: int, namespace: str, name: str,
            moment: datetime.datetime) -> dict[str, Any]:
    """The Lease to write to take or renew it as ``me`` (with the version read, for an update)."""
    spec = dict((lease or {}).get("spec") or {})
    mine = spec.get("holderIdentity") == me
    transitions = int(spec.get("leaseTransitions") or 0) + (0 if mine or lease is None else 1)
    now = microtime(moment)
    metadata: dict[str, Any] = {"name": name, "namespace": namespace}
    if lease is not None:
        metadata["resourceVersion"] = (lease.get("metadata") or {}).get("resourceVersion")
    return {"apiVersion": "coordination.k8s.io/v1", "kind": "Lease", "metadata": metadata,
            "spec": {"holderIdentity": me, "leaseDurationSeconds": duration,
                     "acquireTime": spec.get("acquireTime") if mine and spec.get("acquireTime") else now,
                     "renewTime": now, "leaseTransitions": transitions}}


def released(lease: dict[str, Any], moment: datetime.datetime) -> dict[str, Any]:
    """The Lease to write to give it up (as client-go's ReleaseOnCancel: no holder, so a waiter takes it at once)."""
    spec = {key: value for key, value in (lease.get("spec") or {}).items() if key != "holderIdentity"}
    return {**lease, "spec": {**spec, "leaseDurationSeconds": 1, "renewTime": microtime(moment)}}


def busy_message(lease: dict[str, Any] | None, url: str, namespace: str, name: str, waited: float) -> str:
    spec = (lease or {}).get("spec") or {}
    return (f"another converge of the target cluster {url} is running: {spec.get('holderIdentity') or '?'} holds the "
            f"Lease {namespace}/{name} (renewed {spec.get('renewTime') or '?'}, every "
            f"{spec.get('leaseDurationSeconds') or '?'} s); waited {waited:.0f} s (servingstack_lease_wait), nothing "
            "was changed: run again once it has ended")


# ----------------------------------------------------------------------------- the API
def _path(namespace: str, name: str = "") -> str:
    return f"{API}/namespaces/{namespace}/leases" + (f"/{name}" if name else "")


def _status(error: BaseException) -> int:
    return int(getattr(error, "status", 0) or 0)


def read(client: Any, namespace: str, name: str) -> dict[str, Any] | None:
    try:
        return client.request("GET", _path(namespace, name), serializer=lambda _client, data: data)
    except Exception as error:
        if _status(error) == 404:
            return None
        raise


def write(client: Any, lease: dict[str, Any]) -> dict[str, Any] | None:
    """Create or update ``lease``; None when another writer got there first (409: read again)."""
    metadata = lease["metadata"]
    try:
        if metadata.get("resourceVersion"):
            return client.request("PUT", _path(metadata["namespace"], metadata["name"]), body=lease,
                                  serializer=lambda _client, data: data)
        return client.request("POST", _path(metadata["namespace"]), body=lease,
                              serializer=lambda _client, data: data)
    except Exception as error:
        if _status(error) == 409:
            return None
        raise


def acquire(client: Any, namespace: str, name: str, me: str, duration: int, wait: float, url: str,
            say: Callable[[str], None], clock: Callable[[], float] = time.monotonic,
            sleep: Callable[[float], None] = time.sleep) -> dict[str, Any]:
    """Take the Lease as ``me``, waiting up to ``wait`` seconds while another run holds it (``say`` tells once who);
    LeaseBusy naming the holder when the wait is over."""
    start = clock()
    seen: Seen | None = None
    told = ""
    while True:
        lease = read(client, namespace, name)
        seen = observe(seen, lease, clock())
        if decide(lease, me, seen, clock()) == "take":
            taken = write(client, claimed(lease, me, duration, namespace, name,
                                          datetime.datetime.now(UTC)))
            if taken is not None:
                return taken
            continue
        waited = clock() - start
        if waited >= wait:
            raise LeaseBusy(busy_message(lease, url, namespace, name, waited))
        holder = ((lease or {}).get("spec") or {}).get("holderIdentity") or "?"
        if holder != told:
            told = holder
            say(f"waiting up to {wait:.0f} s for the converge of {holder} to end (Lease {namespace}/{name})")
        sleep(min(POLL, max(wait - waited, 0.0)))


def give_up(client: Any, namespace: str, name: str, me: str) -> bool:
    """Release the Lease if ``me`` still holds it; whether it did."""
    for _attempt in range(3):
        lease = read(client, namespace, name)
        if lease is None or ((lease.get("spec") or {}).get("holderIdentity") or "") != me:
            return False
        if write(client, released(lease, datetime.datetime.now(UTC))) is not None:
            return True
    return False


# ----------------------------------------------------------------------------- the run's processes
def alive(pid: int, start: str) -> bool:
    return bool(start) and rundir.start_time(pid) == start


def _processes() -> dict[int, tuple[int, str]]:
    """pid -> (parent pid, start time) of every live process this user can see."""
    found = {}
    for entry in os.listdir("/proc"):
        fields = rundir.stat_fields(int(entry)) if entry.isdigit() else []
        if len(fields) > 19 and fields[0] != "Z":
            found[int(entry)] = (int(fields[1]), fields[19])
    return found


def descendants(root: int, table: dict[int, tuple[int, str]]) -> dict[int, str]:
    """pid -> start time of every process under ``root`` in ``table`` (``_processes()``)."""
    children: dict[int, list[int]] = {}
    for pid, (parent, _start) in table.items():
        children.setdefault(parent, []).append(pid)
    found, todo = {}, list(children.get(root, []))
    while todo:
        pid = todo.pop()
        found[pid] = table[pid][1]
        todo += children.get(pid, [])
    return found


def using(directory: str, table: dict[int, tuple[int, str]]) -> dict[int, str]:
    """pid -> start time of every process whose environment points into ``directory`` (the target's tasks run with
    KUBECONFIG there), to catch one started since the tree was last read."""
    marker = ("=" + directory.rstrip("/") + "/").encode()
    found = {}
    for pid, (_parent, start) in table.items():
        if pid == os.getpid():
            continue
        try:
            with open(f"/proc/{pid}/environ", "rb") as handle:
                if marker in handle.read():
                    found[pid] = start
        except OSError:
            continue
    return found


def end(processes: dict[int, str], grace: float = GRACE) -> None:
    """SIGTERM each of ``processes`` (pid -> start time) still alive, SIGKILL those left after ``grace`` seconds."""
    for signum, pause in ((signal.SIGTERM, grace), (signal.SIGKILL, 0.0)):
        left = {pid: start for pid, start in processes.items() if alive(pid, start)}
        for pid in left:
            with contextlib.suppress(OSError):
                os.kill(pid, signum)
        deadline = time.monotonic() + pause
        while pause and time.monotonic() < deadline and any(alive(pid, start) for pid, start in left.items()):
            time.sleep(0.1)


# ----------------------------------------------------------------------------- the renewer
@dataclass
class Holding:
    """A Lease this run holds, and what its renewer needs."""

    namespace: str
    name: str
    me: str
    duration: int
    owner: int  # the ansible-playbook process
    owner_start: str
    directory: str  # the run's private directory


def keep(holding: Holding, connect: Callable[[], Any], remove: Callable[[str], None]) -> None:
    """The renewer's loop (in its own process): renew every third of the duration while the run lives. SIGUSR1 (the
    release) gives the Lease up and returns. Once ansible-playbook is gone, end what is left of the run, give the
    Lease up, remove the private directory, and return. SIGINT and SIGTERM, which reach it with the run's, are left
    to ansible-playbook: it is its end that counts."""
    released_asked: list[bool] = []
    signal.signal(signal.SIGUSR1, lambda _signum, _frame: released_asked.append(True))
    for signum in (signal.SIGINT, signal.SIGTERM, signal.SIGHUP):
        signal.signal(signum, signal.SIG_IGN)
    client: Any = None
    renew_every = max(holding.duration / 3.0, POLL)
    renewed = time.monotonic()
    tree: dict[int, str] = {}
    while not released_asked:
        if not alive(holding.owner, holding.owner_start):
            end({**tree, **using(holding.directory, _processes())})
            with contextlib.suppress(Exception):
                give_up(client or connect(), holding.namespace, holding.name, holding.me)
            remove(holding.directory)
            return
        table = _processes()
        tree = {pid: start for pid, start in descendants(holding.owner, table).items() if pid != os.getpid()}
        if time.monotonic() - renewed >= renew_every:
            with contextlib.suppress(Exception):  # a renewal that fails is tried again at the next tick
                client = client or connect()
                lease = read(client, holding.namespace, holding.name)
                mine = lease is not None and (lease.get("spec") or {}).get("holderIdentity") == holding.me
                if mine and write(client, claimed(lease, holding.me, holding.duration, holding.namespace,
                                                  holding.name, datetime.datetime.now(UTC))) is not None:
                    renewed = time.monotonic()
        time.sleep(min(POLL / 2, renew_every))
    with contextlib.suppress(Exception):
        give_up(client or connect(), holding.namespace, holding.name, holding.me)


def start_renewer(holding: Holding, connect: Callable[[], Any], remove: Callable[[str], None]) -> int:
    """Fork the renewer (see ``keep``), in this process's session and group, and return its pid. The child closes
    every file the parent had open, so no pipe of ansible-playbook's waits on it, and never returns."""
    pid = os.fork()
    if pid:
        return pid
    code = 0
    try:
        for signum in (signal.SIGINT, signal.SIGTERM, signal.SIGHUP):  # at once: the run's Ctrl-C may be on its way
            signal.signal(signum, signal.SIG_IGN)
        os.closerange(3, 65536)
        devnull = os.open(os.devnull, os.O_RDWR)
        for fd in (0, 1, 2):
            os.dup2(devnull, fd)
        kubeclient.key_files_in(holding.directory)
        keep(holding, connect, remove)
    except BaseException:  # the renewer's only duty left is to end; what failed cannot be told to anyone
        code = 1
    finally:
        os._exit(code)  # never the worker's exit path (its queues, its finalizers)
    return 0  # not reached


def save(holding: Holding, renewer: int, path: str) -> None:
    """Write the holding and the renewer's pid and start time to ``path`` (0600), for the release."""
    fd = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_TRUNC, 0o600)
    with os.fdopen(fd, "w", encoding="utf-8") as handle:
        json.dump({**holding.__dict__, "renewer": renewer, "renewer_start": rundir.start_time(renewer)}, handle)


def load(path: str) -> tuple[Holding, int, str] | None:
    try:
        with open(path, encoding="utf-8") as handle:
            state = json.load(handle)
        renewer, start = int(state.pop("renewer")), str(state.pop("renewer_start"))
        return Holding(**state), renewer, start
    except (OSError, ValueError, TypeError, KeyError):
        return None


def stop_renewer(renewer: int, start: str, timeout: float = 15.0) -> bool:
    """Ask the renewer to release the Lease (SIGUSR1) and wait for it to end; whether it did in ``timeout``."""
    if not alive(renewer, start):
        return False
    with contextlib.suppress(OSError):
        os.kill(renewer, signal.SIGUSR1)
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        if not alive(renewer, start):
            return True
        time.sleep(0.05)
    return False
