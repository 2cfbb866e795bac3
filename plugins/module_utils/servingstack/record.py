# Copyright 2026 The modelplane.serving authors
# Apache License 2.0 (see LICENSE)
"""The converge record: what a cluster's last successful converge left there, so that a re-run with nothing
changed skips the components instead of comparing every release and object again.

The record is a Secret in the target cluster holding:

- ``digest``: SHA-256 of what decides the converge's result - the collection's own files (roles and plugins),
  the defaulted spec, the install plan, and the settings the component roles document (their argument specs);
- ``releases``: revision, status and release Secret uid of every Helm release that concerns the stack: the plan's,
  any other release of the plan's charts (a user's, adopted beside ours), any other release of ours (``mp-``);
- ``objects``: each object the converge applied (through ``servingstack_k8s``), read back once the converge
  ended: its ``uid``, its ``generation`` (for a kind without one, such as a Namespace or a ResourceQuota, a hash of
  everything but its status and server-set metadata), and, where the converge waited for it, how it is ready.

A re-run is unchanged when the digest is the same, the same releases are there at the same revisions (not
re-installed), the plan's are deployed, and every object still has its uid and generation (or content) and is
ready. What the record cannot see (an edited label on a kind with a generation; an object a Helm chart made; an
object the converge deleted, re-created since) is repaired by a converge with the record ignored
(``servingstack_skip_unchanged: false``).

The objects come from a journal the ``servingstack_k8s`` action writes while it converges: one file per call in a
directory of the cluster's private directory on the controller, folded here in the order they were written.

Plain functions over plain data; the lookup plugin reads the cluster and the files.
"""

from __future__ import annotations

import base64
import hashlib
import json
import os
import time
from collections.abc import Callable, Iterable, Mapping
from pathlib import Path
from typing import Any

from ansible_collections.modelplane.serving.plugins.module_utils.servingstack import k8s_objects
from ansible_collections.modelplane.serving.plugins.module_utils.servingstack.components import RELEASE_PREFIX

RECORD_NAME = "modelplane-serving-converged"
RECORD_TYPE = "modelplane.ai/converge-record"
RECORD_KEY = "record"
# Options of the component roles that are plumbing of one call (which component, which state, which cluster), not
# settings that shape what a converge installs.
PLUMBING = frozenset({"component_entry", "component_name", "component_state", "component_kubeconfig"})
# The collection's files that decide what a converge does.
CONTENT_DIRS = ("roles", "plugins")
# Metadata the API server sets and moves on its own: left out of an object's content hash.
SERVER_METADATA = frozenset({"resourceVersion", "managedFields", "generation", "creationTimestamp", "uid",
                             "selfLink"})


def content_hash(root: str | os.PathLike[str]) -> str:
    """SHA-256 over the collection's roles and plugins (each file's path and bytes), caches left out."""
    base = Path(root)
    digest = hashlib.sha256()
    for top in CONTENT_DIRS:
        for path in sorted((base / top).rglob("*")):
            if path.is_file() and "__pycache__" not in path.parts and path.suffix != ".pyc":
                digest.update(str(path.relative_to(base)).encode() + b"\0")
                digest.update(path.read_bytes() + b"\0")
    return digest.hexdigest()


def setting_names(argument_specs: Mapping[str, Mapping[str, Any]]) -> list[str]:
    """The settings of the given roles (role name -> its ``meta/argument_specs.yml``): the options of their
    ``main`` entry point, plumbing left out."""
    names: set[str] = set()
    for specs in argument_specs.values():
        main = ((specs or {}).get("argument_specs") or {}).get("main") or {}
        names.update(main.get("options") or {})
    return sorted(names - PLUMBING)


def _hash(value: Any) -> str:
    return hashlib.sha256(json.dumps(value, sort_keys=True, separators=(",", ":"), default=str).encode()).hexdigest()


def digest(content: str, spec: Any, plan: Any, settings: Mapping[str, Any]) -> str:
    """SHA-256 of the collection's content hash, the spec, the plan and the settings given (name -> value)."""
    return _hash({"collection": content, "spec": spec, "plan": plan, "settings": dict(settings)})


def _key(obj: Mapping[str, Any]) -> str:
    """``group/kind/namespace/name``: one object whatever API version names it."""
    return "/".join(k8s_objects.identity(obj))


def fingerprint(obj: Mapping[str, Any], ready: Mapping[str, Any] | None = None) -> dict[str, Any]:
    """What the record keeps of an object: its name and ``uid``; its ``generation``, else (a kind without one) a
    hash of everything but its status and server-set metadata; ``ready``, the condition the converge waited for
    (``{}``: the kind's own readiness), when it waited."""
    metadata = obj.get("metadata") or {}
    found = {"apiVersion": obj.get("apiVersion"), "kind": obj.get("kind"), "name": metadata.get("name"),
             "uid": metadata.get("uid")}
    if metadata.get("namespace"):
        found["namespace"] = metadata["namespace"]
    if metadata.get("generation"):
        found["generation"] = metadata["generation"]
    else:
        kept = {key: value for key, value in obj.items() if key not in ("status", "metadata")}
        kept["metadata"] = {key: value for key, value in metadata.items() if key not in SERVER_METADATA}
        found["content"] = _hash(kept)
    if ready is not None:
        found["ready"] = dict(ready)
    return found


def note(journal: str | os.PathLike[str], present: Iterable[Mapping[str, Any]] = (),
         absent: Iterable[Mapping[str, Any]] = (), ready: Mapping[str, Any] | None = None) -> None:
    """Add to the journal: ``present``, objects applied (``ready``: the condition waited for, ``{}`` for the kind's
    own readiness, None when not waited for); ``absent``, objects now gone."""
    waited = {"ready": dict(ready)} if ready is not None else {}
    entry = {"present": [{**k8s_objects.ref(obj), **waited} for obj in present],
             "absent": [_key(obj) for obj in absent]}
    if not entry["present"] and not entry["absent"]:
        return
    folder = Path(journal)
    folder.mkdir(mode=0o700, parents=True, exist_ok=True)
    # The time first, so the names sort in the order written; the process id keeps parallel lanes apart.
    name = f"{time.time_ns():020d}-{os.getpid()}.json"
    (folder / name).write_text(json.dumps(entry), encoding="utf-8")


def noted(journal: str | os.PathLike[str]) -> list[dict[str, Any]]:
    """The journal folded: the objects applied and not deleted since (references, with ``ready``, the most any note
    waited for), in key order."""
    folder = Path(journal)
    objects: dict[str, dict[str, Any]] = {}
    for path in sorted(folder.glob("*.json")) if folder.is_dir() else []:
        entry = json.loads(path.read_text(encoding="utf-8"))
        for ref in entry.get("present", []):
            before = objects.get(_key(ref)) or {}
            # A wait for a condition said more than a wait by kind, which said more than none: the most is kept.
            if (before.get("ready") and not ref.get("ready")) or ("ready" in before and "ready" not in ref):
                ref = {**ref, "ready": before["ready"]}
            objects[_key(ref)] = ref
        for key in entry.get("absent", []):
            objects.pop(key, None)
    return [objects[key] for key in sorted(objects)]


def fingerprints(applied: Iterable[Mapping[str, Any]],
                 read: Callable[[dict[str, Any]], Mapping[str, Any] | None]) -> list[dict[str, Any]]:
    """The fingerprints of the journal's objects as the cluster has them now (``read``); those gone are left out."""
    found = []
    for ref in applied:
        live = read(k8s_objects.ref(ref))
        if live is not None:
            found.append(fingerprint(live, ref.get("ready")))
    return found


def _plan_releases(plan: Iterable[Mapping[str, Any]]) -> list[str]:
    return [f"{release['namespace']}/{release['release']}" for entry in plan for release in entry.get("releases", [])]


def concerned(plan: Iterable[Mapping[str, Any]], records: Iterable[Mapping[str, Any]]) -> dict[str, dict[str, Any]]:
    """``namespace/name`` -> revision, status, uid and chart of every release that concerns the stack: the plan's, any
    other release of the plan's charts, any other release of ours (``records``: the release records, latest revision
    each, as ``releases.records`` gives them)."""
    plan = list(plan)
    ours = set(_plan_releases(plan))
    charts = {release.get("chart") for entry in plan for release in entry.get("releases", [])}
    found = {}
    for record in records:
        key = f"{record['namespace']}/{record['name']}"
        if key in ours or record.get("chart") in charts or str(record["name"]).startswith(RELEASE_PREFIX):
            found[key] = {"revision": int(record["revision"]), "status": record.get("status", ""),
                          "uid": record.get("uid", ""), "chart": record.get("chart", "")}
    return found


def secret(record: Mapping[str, Any], namespace: str, name: str = RECORD_NAME) -> dict[str, Any]:
    """The Secret that holds ``record``."""
    text = json.dumps(record, sort_keys=True, separators=(",", ":"))
    return {"apiVersion": "v1", "kind": "Secret", "type": RECORD_TYPE,
            "metadata": {"name": name, "namespace": namespace,
                         "labels": {"app.kubernetes.io/managed-by": "modelplane.serving"}},
            "data": {RECORD_KEY: base64.b64encode(text.encode()).decode()}}


def ref(namespace: str, name: str = RECORD_NAME) -> dict[str, Any]:
    return {"apiVersion": "v1", "kind": "Secret", "metadata": {"name": name, "namespace": namespace}}


def stored(found: Mapping[str, Any] | None) -> dict[str, Any] | None:
    """The record a Secret read from the cluster holds, or None (no Secret, another type, unreadable)."""
    if not found or found.get("type") != RECORD_TYPE:
        return None
    try:
        record = json.loads(base64.b64decode((found.get("data") or {}).get(RECORD_KEY, "")))
    except ValueError:
        return None
    return record if isinstance(record, dict) and isinstance(record.get("digest"), str) else None


def build(digest_now: str, plan: Iterable[Mapping[str, Any]], records: Iterable[Mapping[str, Any]],
          objects: list[dict[str, Any]]) -> dict[str, Any]:
    """The record of a converge that just succeeded (``objects``: the fingerprints)."""
    return {"digest": digest_now, "releases": concerned(plan, records), "objects": objects}


def _name(found: Mapping[str, Any]) -> str:
    where = f"{found['namespace']}/" if found.get("namespace") else ""
    return f"{found['kind']} {where}{found['name']}"


def _release_changed(key: str, now: Mapping[str, Any] | None, then: Mapping[str, Any] | None) -> str:
    if then is None:
        return f"the Helm release {key} of the chart {now['chart'] or '?'} is not this stack's" if now else ""
    if now is None:
        return f"the Helm release {key} is gone"
    if now["revision"] != then["revision"]:
        return f"the Helm release {key} is at revision {now['revision']}, the last converge left {then['revision']}"
    if now["uid"] != then["uid"] or now["status"] != then["status"]:
        return f"the Helm release {key} was installed again since the last converge"
    return ""


def why_changed(record: Mapping[str, Any] | None, digest_now: str, plan: Iterable[Mapping[str, Any]],
                records: Iterable[Mapping[str, Any]], read: Callable[[dict[str, Any]], Mapping[str, Any] | None],
                ready: Callable[[Mapping[str, Any], Mapping[str, Any] | None], bool]) -> str:
    """Why the cluster may differ from what its last converge left ('' when it cannot): the first difference found.

    ``records``: the release records now (as ``releases.records`` gives them); ``read``: reads one object
    (``apiVersion``, ``kind``, ``metadata``) from the cluster, None when it is gone; ``ready``: whether an object is
    ready (its condition, None for the kind's own readiness). Objects are read only once everything else matched, and
    only until one differs."""
    if record is None:
        return "the cluster has no record of an earlier converge"
    if record.get("digest") != digest_now:
        return "the spec, the settings or the collection changed since the last converge"
    plan = list(plan)
    now, then = concerned(plan, records), record.get("releases") or {}
    for key in _plan_releases(plan):
        if (now.get(key) or {}).get("status") != "deployed":
            return f"the Helm release {key} is not deployed"
    for key in sorted(set(now) | set(then)):
        reason = _release_changed(key, now.get(key), then.get(key))
        if reason:
            return reason
    for found in record.get("objects") or []:
        metadata = {"name": found["name"], "namespace": found.get("namespace")}
        live = read(k8s_objects.ref({"apiVersion": found["apiVersion"], "kind": found["kind"], "metadata": metadata}))
        if live is None:
            return f"{_name(found)} is gone"
        if fingerprint(live, found.get("ready")) != found:
            return f"{_name(found)} was changed or re-created since the last converge"
        if "ready" in found and not ready(live, found["ready"] or None):
            return f"{_name(found)} is not ready"
    return ""
