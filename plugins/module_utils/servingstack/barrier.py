# Copyright 2026 The modelplane.serving authors
# Apache License 2.0 (see LICENSE)
"""Marker files through which the component hosts of one converge tell each other they are done.

playbooks/site.yml converges every component on an inventory host of its own (strategy free), so
a component can start the moment the components it needs have converged. Ansible's worker
processes cannot see facts other hosts set meanwhile, so each component writes one small file
(``converged`` or ``failed``) in a private directory on the controller, and a dependent polls for
the files of its needs.
"""

from __future__ import annotations

import os
import re
import shutil
import tempfile
import time
from collections.abc import Callable

CONVERGED = "converged"
# Converged in check mode with a release only previewed: its CRDs are missing, so a component that
# needs it skips objects of those kinds, as it would for a release of its own.
PREVIEWED = "previewed"
FAILED = "failed"
OUTCOMES = (CONVERGED, PREVIEWED, FAILED)
_NAME = re.compile(r"^[a-z][a-z0-9_]*$")


def start(parent: str | None = None) -> str:
    """A new private (0700) directory for one converge's markers."""
    return tempfile.mkdtemp(prefix="servingstack-run-", dir=parent or None)


def _path(directory: str, name: str) -> str:
    if not _NAME.match(name):
        raise ValueError(f"component name {name!r} is not a role name")
    return os.path.join(directory, name)


def mark(directory: str, name: str, outcome: str) -> None:
    """Record ``outcome`` (one of OUTCOMES) for component ``name``; written whole, then renamed."""
    if outcome not in OUTCOMES:
        raise ValueError(f"outcome must be one of {', '.join(OUTCOMES)}, not {outcome!r}")
    final = _path(directory, name)
    handle, partial = tempfile.mkstemp(dir=directory, prefix=f".{name}.")
    with os.fdopen(handle, "w", encoding="utf-8") as out:
        out.write(outcome)
    os.replace(partial, final)


def read(directory: str, name: str) -> str | None:
    """The recorded outcome of ``name``, or None while it has none."""
    try:
        with open(_path(directory, name), encoding="utf-8") as marker:
            return marker.read().strip() or None
    except FileNotFoundError:
        return None


def wait(directory: str, names: list[str], timeout: float, interval: float = 0.2,
         clock: Callable[[], float] = time.monotonic, sleep: Callable[[float], None] = time.sleep) -> dict[str, str]:
    """Name -> outcome for every name, waiting up to ``timeout`` s; ``"pending"`` for those still without one."""
    deadline = clock() + timeout
    while True:
        outcomes = {name: read(directory, name) for name in names}
        if all(outcomes.values()) or clock() >= deadline:
            return {name: outcome or "pending" for name, outcome in outcomes.items()}
        sleep(min(interval, max(deadline - clock(), 0)))


def finish(directory: str) -> bool:
    """Remove the directory; True when it existed."""
    if not os.path.isdir(directory):
        return False
    shutil.rmtree(directory)
    return True
