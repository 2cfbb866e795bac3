# Copyright 2026 The modelplane.serving authors
# Apache License 2.0 (see LICENSE)
"""The run's private directory (``*.servingstack`` in the controller's TMPDIR, made by servingstack_kubeconfig: the
target's kubeconfig, client key and certificates), and the ones runs that were killed left behind.

Each directory records the ansible-playbook process that owns it (``owner.json``: its pid and start time). The
renewer of the run's Lease (``lease.py``) removes the directory once that process is gone; a run killed together
with its renewer cannot, so every run first removes the directories of this user whose owner is gone.
"""

from __future__ import annotations

import contextlib
import datetime
import json
import os
import shutil
import stat
import time

UTC = datetime.timezone.utc  # noqa: UP017 (module_utils: any Python 3)
SUFFIX = ".servingstack"
OWNER_FILE = "owner.json"
# A directory without an owner record (a run killed between making it and recording its owner, or one of an older
# version) is removed once it is this old, in seconds: no converge step takes that long to start.
UNOWNED_AGE = 3600


def stat_fields(pid: int) -> list[str]:
    try:
        with open(f"/proc/{pid}/stat", encoding="utf-8", errors="replace") as handle:
            return handle.read().rsplit(")", 1)[1].split()
    except (OSError, IndexError):
        return []


def start_time(pid: int) -> str:
    """The start time of ``pid`` (/proc/<pid>/stat field 22), "" if there is no such live process."""
    fields = stat_fields(pid)
    return fields[19] if len(fields) > 19 and fields[0] != "Z" else ""


def started(pid: int) -> datetime.datetime:
    """When ``pid`` started (the boot time plus its start time in clock ticks); now if it cannot be read."""
    try:
        with open("/proc/stat", encoding="utf-8") as handle:
            boot = next(int(line.split()[1]) for line in handle if line.startswith("btime "))
        return datetime.datetime.fromtimestamp(boot + int(start_time(pid)) / os.sysconf("SC_CLK_TCK"), UTC)
    except (OSError, ValueError, StopIteration):
        return datetime.datetime.now(UTC)


def owner() -> int:
    """The ansible-playbook process of this run: each Ansible worker is the leader of a session of its own
    (``os.setsid``), and ansible-playbook is its parent. From a module or lookup of the run, the session leader's
    parent; outside a worker (no parent known), this process."""
    leader = os.getsid(0)
    fields = stat_fields(leader)
    parent = int(fields[1]) if len(fields) > 1 else 0
    return parent if leader != 1 and parent > 1 else os.getpid()


def record_owner(directory: str, pid: int) -> None:
    """Write ``owner.json`` (0600) into ``directory``."""
    fd = os.open(os.path.join(directory, OWNER_FILE), os.O_WRONLY | os.O_CREAT | os.O_TRUNC, 0o600)
    with os.fdopen(fd, "w", encoding="utf-8") as handle:
        json.dump({"pid": pid, "start": start_time(pid)}, handle)


def owned_by_a_live_run(directory: str, now: float) -> bool:
    """Whether ``directory``'s owner still runs (or, without a readable record, it is younger than UNOWNED_AGE)."""
    try:
        with open(os.path.join(directory, OWNER_FILE), encoding="utf-8") as handle:
            found = json.load(handle)
        pid, start = int(found["pid"]), str(found["start"])
    except (OSError, ValueError, TypeError, KeyError):
        try:
            return now - os.stat(directory).st_mtime < UNOWNED_AGE
        except OSError:
            return False
    return bool(start) and start_time(pid) == start


def sweep(parent: str, now: float | None = None) -> list[str]:
    """Remove the private directories in ``parent`` (TMPDIR) that belong to this user and to no live run; return
    them. Only directories named ``*.servingstack``, this user's, mode 0700, never a link, as mkdtemp makes them."""
    now = time.time() if now is None else now
    removed = []
    try:
        names = os.listdir(parent)
    except OSError:
        return removed
    for name in names:
        path = os.path.join(parent, name)
        if not name.endswith(SUFFIX):
            continue
        try:
            info = os.lstat(path)
        except OSError:
            continue
        if (not stat.S_ISDIR(info.st_mode) or info.st_uid != os.getuid() or stat.S_IMODE(info.st_mode) != 0o700
                or owned_by_a_live_run(path, now)):
            continue
        with contextlib.suppress(OSError):
            shutil.rmtree(path)
            removed.append(path)
    return removed


def remove(directory: str) -> None:
    """Remove a run's private directory, and only one (``*.servingstack``)."""
    if directory.rstrip("/").endswith(SUFFIX):
        shutil.rmtree(directory, ignore_errors=True)
