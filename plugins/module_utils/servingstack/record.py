# Copyright 2026 The modelplane.serving authors
# Apache License 2.0 (see LICENSE)
"""The converge record: what a cluster's last successful converge left there, so that a re-run with nothing
changed skips the components instead of comparing every release and object again.

The record is a Secret in the target cluster holding:

- ``digest``: SHA-256 of what decides the converge's result - the collection's own files (roles and plugins),
  the defaulted spec, the install plan, and the settings the component roles document (their argument specs);
- ``releases``: the revision of each of the plan's Helm releases (``namespace/name``);
- ``objects``: each object the converge applied (through ``servingstack_k8s``): its ``uid`` and its
  ``generation`` (its ``resourceVersion`` for a kind without one, such as a Namespace).

A re-run is unchanged when the digest is the same and every release is deployed at its recorded revision and
every object still has its recorded uid and generation: nothing was changed, deleted or re-created since. A
change the record cannot see (an edited label, which leaves the generation alone; an object a Helm chart made)
is repaired by a converge with the record ignored (``servingstack_skip_unchanged: false``).

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

from ansible_collections.modelplane.serving.plugins.module_utils.servingstack.components import RELEASE_PREFIX

RECORD_NAME = "modelplane-serving-converged"
RECORD_TYPE = "modelplane.ai/converge-record"
RECORD_KEY = "record"
# Options of the component roles that are plumbing of one call (which component, which state, which cluster), not
# settings that shape what a converge installs.
PLUMBING = frozenset({"component_entry", "component_name", "component_state", "component_kubeconfig"})
# The collection's files that decide what a converge does.
CONTENT_DIRS = ("roles", "plugins")


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


def digest(content: str, spec: Any, plan: Any, settings: Mapping[str, Any]) -> str:
    """SHA-256 of the collection's content hash, the spec, the plan and the settings given (name -> value)."""
    text = json.dumps({"collection": content, "spec": spec, "plan": plan, "settings": dict(settings)},
                      sort_keys=True, separators=(",", ":"), default=str)
    return hashlib.sha256(text.encode()).hexdigest()


def _key(obj: Mapping[str, Any]) -> str:
    """``group/kind/namespace/name``: one object whatever API version names it."""
    metadata = obj.get("metadata") or {}
    group = str(obj.get("apiVersion", "")).rpartition("/")[0]
    return "/".join((group, str(obj.get("kind", "")), metadata.get("namespace") or "", str(metadata.get("name", ""))))


def fingerprint(obj: Mapping[str, Any]) -> dict[str, Any]:
    """What the record keeps of an object: its name, ``uid`` and ``generation`` (else ``resourceVersion``)."""
    metadata = obj.get("metadata") or {}
    found = {"apiVersion": obj.get("apiVersion"), "kind": obj.get("kind"), "name": metadata.get("name"),
             "uid": metadata.get("uid")}
    if metadata.get("namespace"):
        found["namespace"] = metadata["namespace"]
    if metadata.get("generation"):
        found["generation"] = metadata["generation"]
    else:
        found["resourceVersion"] = metadata.get("resourceVersion")
    return found


def note(journal: str | os.PathLike[str], present: Iterable[Mapping[str, Any]] = (),
         absent: Iterable[Mapping[str, Any]] = ()) -> None:
    """Add to the journal: ``present``, objects as the cluster has them now; ``absent``, objects now gone."""
    entry = {"present": [fingerprint(obj) for obj in present], "absent": [_key(obj) for obj in absent]}
    if not entry["present"] and not entry["absent"]:
        return
    folder = Path(journal)
    folder.mkdir(mode=0o700, parents=True, exist_ok=True)
    # The time first, so the names sort in the order written; the process id keeps parallel lanes apart.
    name = f"{time.time_ns():020d}-{os.getpid()}.json"
    (folder / name).write_text(json.dumps(entry), encoding="utf-8")


def noted(journal: str | os.PathLike[str]) -> list[dict[str, Any]]:
    """The journal folded: the fingerprint of each object present at its end, by key."""
    folder = Path(journal)
    objects: dict[str, dict[str, Any]] = {}
    for path in sorted(folder.glob("*.json")) if folder.is_dir() else []:
        entry = json.loads(path.read_text(encoding="utf-8"))
        for found in entry.get("present", []):
            objects[_key({"apiVersion": found["apiVersion"], "kind": found["kind"],
                          "metadata": {"name": found["name"], "namespace": found.get("namespace")}})] = found
        for key in entry.get("absent", []):
            objects.pop(key, None)
    return [objects[key] for key in sorted(objects)]


def _plan_releases(plan: Iterable[Mapping[str, Any]]) -> list[str]:
    return [f"{release['namespace']}/{release['release']}" for entry in plan for release in entry.get("releases", [])]


def revisions(plan: Iterable[Mapping[str, Any]], records: Iterable[Mapping[str, Any]]) -> dict[str, int]:
    """``namespace/name`` -> revision of each of the plan's releases deployed now (``records``: the release records,
    latest revision each, as ``releases.records`` or ``labelled_records`` give them)."""
    deployed = {f"{record['namespace']}/{record['name']}": int(record["revision"]) for record in records
                if record.get("status") == "deployed"}
    return {key: deployed[key] for key in _plan_releases(plan) if key in deployed}


def labelled_records(secrets: Iterable[Mapping[str, Any]]) -> list[dict[str, Any]]:
    """Release records from the labels of Helm's release Secrets (``name``, ``version``, ``status``), latest revision
    each, without decoding the releases."""
    latest: dict[tuple[str, str], dict[str, Any]] = {}
    for secret in secrets:
        metadata = secret.get("metadata") or {}
        labels = metadata.get("labels") or {}
        if labels.get("owner") != "helm" or not labels.get("name") or not str(labels.get("version", "")).isdigit():
            continue
        record = {"namespace": metadata.get("namespace"), "name": labels["name"], "revision": int(labels["version"]),
                  "status": labels.get("status", "")}
        key = (record["namespace"], record["name"])
        if key not in latest or latest[key]["revision"] < record["revision"]:
            latest[key] = record
    return list(latest.values())


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
    """The record of a converge that just succeeded."""
    return {"digest": digest_now, "releases": revisions(plan, records), "objects": objects}


def _name(found: Mapping[str, Any]) -> str:
    where = f"{found['namespace']}/" if found.get("namespace") else ""
    return f"{found['kind']} {where}{found['name']}"


def why_changed(record: Mapping[str, Any] | None, digest_now: str, plan: Iterable[Mapping[str, Any]],
                records: Iterable[Mapping[str, Any]], read: Callable[[dict[str, Any]], Mapping[str, Any] | None]
                ) -> str:
    """Why the cluster may differ from what its last converge left ('' when it cannot): the first difference found.

    ``records``: the release records now (with their charts, as ``releases.records`` gives them); ``read``: reads one
    object (``apiVersion``, ``kind``, ``metadata``) from the cluster, None when it is gone. Objects are read only once
    everything else matched, and only until one differs."""
    if record is None:
        return "the cluster has no record of an earlier converge"
    if record.get("digest") != digest_now:
        return "the spec, the settings or the collection changed since the last converge"
    plan = list(plan)
    now = revisions(plan, records)
    recorded = record.get("releases") or {}
    for key in _plan_releases(plan):
        if key not in now:
            return f"the Helm release {key} is not deployed"
        if recorded.get(key) != now[key]:
            return f"the Helm release {key} is at revision {now[key]}, the last converge left {recorded.get(key)}"
    # Another release of one of the plan's charts (a user's, installed since: the converge refuses or adopts it), or
    # another release of ours (a component of the other stack: the converge uninstalls it).
    charts = {release.get("chart") for entry in plan for release in entry.get("releases", [])}
    for other in records:
        key = f"{other['namespace']}/{other['name']}"
        if key not in recorded and (other.get("chart") in charts or str(other["name"]).startswith(RELEASE_PREFIX)):
            return f"the Helm release {key} of the chart {other.get('chart') or '?'} is not this stack's"
    for found in record.get("objects") or []:
        metadata = {"name": found["name"], **({"namespace": found["namespace"]} if found.get("namespace") else {})}
        live = read({"apiVersion": found["apiVersion"], "kind": found["kind"], "metadata": metadata})
        if live is None:
            return f"{_name(found)} is gone"
        if fingerprint(live) != found:
            return f"{_name(found)} was changed or re-created since the last converge"
    return ""
