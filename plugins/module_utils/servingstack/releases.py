# Copyright 2026 The modelplane.serving authors
# Apache License 2.0 (see LICENSE)
"""Helm releases a dead run left in a pending state, and what recovers each (the ``servingstack_stuck_releases``
lookup reads their revisions; the component role runs the recovery before its helm task).

helm refuses every operation on a release whose newest revision is ``pending-install``, ``pending-upgrade`` or
``pending-rollback`` ("another operation (install/upgrade/rollback) is in progress"). A run that was killed while
helm worked leaves it so for good. As release managers built on helm do at the start of their next deployment, a
release that was deployed once is rolled back to its newest revision that was (``deployed`` or ``superseded``:
helm marks the one an upgrade replaced ``superseded``), and one that never deployed is uninstalled. This is only
safe while no other run may be working on the release: the servingstack role holds the target's Lease
(``lease.py``) first.
"""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass
from typing import Any

PENDING = ("pending-install", "pending-upgrade", "pending-rollback")
# Revisions that were the release's live state once: a rollback to one brings back what ran.
WAS_DEPLOYED = ("deployed", "superseded")


@dataclass(frozen=True)
class Recovery:
    """What recovers one release: ``action`` ``rollback`` (to ``revision``) or ``uninstall``, and why."""

    release: str
    namespace: str
    action: str
    status: str
    stuck_revision: int
    revision: int | None
    message: str

    def as_dict(self) -> dict[str, Any]:
        return {"release": self.release, "namespace": self.namespace, "action": self.action, "status": self.status,
                "stuck_revision": self.stuck_revision, "revision": self.revision, "message": self.message}


def recovery(release: str, namespace: str, history: Iterable[tuple[int, str]]) -> Recovery | None:
    """The recovery of ``release`` from its ``history`` (``(revision, status)`` pairs, any order), or None when its
    newest revision is not pending (nothing to do: helm goes on as usual)."""
    revisions = sorted((int(revision), str(status)) for revision, status in history)
    if not revisions or revisions[-1][1] not in PENDING:
        return None
    stuck, status = revisions[-1]
    earlier = [revision for revision, state in revisions[:-1] if state in WAS_DEPLOYED]
    where = f"Helm release {namespace}/{release} was left {status} at revision {stuck} by a run that did not finish"
    if earlier:
        return Recovery(release, namespace, "rollback", status, stuck, earlier[-1],
                        f"{where}: rolled back to revision {earlier[-1]}, its newest deployed one")
    return Recovery(release, namespace, "uninstall", status, stuck, None,
                    f"{where} and never deployed: uninstalled")


def history_of(secrets: Iterable[dict[str, Any]]) -> dict[tuple[str, str], list[tuple[int, str]]]:
    """``(namespace, release) -> [(revision, status)]`` from helm's release Secrets (type ``helm.sh/release.v1``,
    labels ``name``, ``version``, ``status``), of which only the metadata is read."""
    found: dict[tuple[str, str], list[tuple[int, str]]] = {}
    for secret in secrets:
        metadata = secret.get("metadata") or {}
        labels = metadata.get("labels") or {}
        try:
            revision = int(labels.get("version", ""))
        except ValueError:
            continue
        if labels.get("name") and labels.get("status"):
            key = (str(metadata.get("namespace") or ""), str(labels["name"]))
            found.setdefault(key, []).append((revision, str(labels["status"])))
    return found


def recoveries(releases: Iterable[dict[str, Any]], secrets: Iterable[dict[str, Any]]) -> list[Recovery]:
    """The recoveries the component's ``releases`` (plan entries: ``release``, ``namespace``) need, in their order,
    from the release Secrets read of the target."""
    history = history_of(secrets)
    found = (recovery(entry["release"], entry["namespace"], history.get((entry["namespace"], entry["release"]), []))
             for entry in releases)
    return [item for item in found if item is not None]
