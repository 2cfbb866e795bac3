# Copyright 2026 The modelplane.serving authors
# Apache License 2.0 (see LICENSE)
"""What the servingstack_k8s action sends to ``kubernetes.core.k8s``, from a read of the cluster.

Present: only the objects that are missing or differ from the cluster's copies (``drift.py``), plus, when
waiting, those that match but are not ready yet (the module then applies nothing and waits). Absent: only
the objects that exist; a kind the cluster does not serve (its CRD is gone) holds none. In check mode an
object that cannot be dry-run (its kind is not served yet, or its namespace does not exist yet: a release or
an earlier object of the same run would bring them) is counted as a change without reaching the module.

Plain functions over plain data: the action plugin reads the cluster and calls the module with the result.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable, Mapping
from dataclasses import dataclass, field
from typing import Any

from ansible_collections.modelplane.serving.plugins.module_utils.servingstack import drift
from ansible_collections.modelplane.serving.plugins.module_utils.servingstack.kubeclient import Found


class ObjectsError(ValueError):
    """A definition that names no object: the message names the document, never its content."""


def documents(definition: Any) -> list[dict[str, Any]]:
    """The objects of ``definition``: a YAML text of documents, one object, or a list of them (nested lists
    flattened); empty documents are dropped. Each must have ``apiVersion``, ``kind`` and ``metadata.name``.

    What the API server owns is left out: ``status``, and the null ``metadata.creationTimestamp`` that generated
    manifests (a release's CRDs) carry, which would otherwise never match the cluster's copy."""
    if isinstance(definition, (str, bytes)):
        import yaml

        try:
            definition = list(yaml.safe_load_all(definition))
        except yaml.YAMLError as error:
            raise ObjectsError(f"definition: not YAML ({getattr(error, 'problem', None) or 'parse error'})") from None
    found: list[dict[str, Any]] = []
    _flatten(definition, found)
    for index, obj in enumerate(found):
        what = f"definition[{index}]"
        if not isinstance(obj, Mapping):
            raise ObjectsError(f"{what}: an object must be a mapping, got {_type_name(obj)}")
        for key in ("apiVersion", "kind"):
            if not isinstance(obj.get(key), str) or not obj.get(key):
                raise ObjectsError(f"{what}: {key} is required")
        metadata = obj.get("metadata")
        if not isinstance(metadata, Mapping) or not isinstance(metadata.get("name"), str) or not metadata["name"]:
            raise ObjectsError(f"{what} ({obj['kind']}): metadata.name is required")
    return [_as_sent(obj) for obj in found]


def _as_sent(obj: Mapping[str, Any]) -> dict[str, Any]:
    sent = {key: value for key, value in obj.items() if key != "status"}
    if "creationTimestamp" in obj["metadata"] and obj["metadata"]["creationTimestamp"] is None:
        sent["metadata"] = {key: value for key, value in obj["metadata"].items() if key != "creationTimestamp"}
    return sent


def _type_name(value: Any) -> str:
    """The YAML name of a value's type (Ansible's tagged strings and the like are still strings)."""
    for kind, name in ((bool, "bool"), (str, "str"), (int, "int"), (float, "float"), (Mapping, "mapping"),
                       (list, "list")):
        if isinstance(value, kind):
            return name
    return type(value).__name__


def _flatten(node: Any, into: list[Any]) -> None:
    if node is None:
        return
    if isinstance(node, (list, tuple)):
        for item in node:
            _flatten(item, into)
        return
    into.append(node)


def identity(obj: Mapping[str, Any]) -> tuple[str, str, str, str]:
    """``(group, kind, namespace, name)``: one object whatever API version names it."""
    metadata = obj.get("metadata") or {}
    group = obj["apiVersion"].rpartition("/")[0]
    return group, obj["kind"], metadata.get("namespace") or "", metadata["name"]


def unique(objects: Iterable[dict[str, Any]]) -> list[dict[str, Any]]:
    """``objects`` without repeats (the first of each identity stays, in order)."""
    seen: set[tuple[str, str, str, str]] = set()
    kept = []
    for obj in objects:
        key = identity(obj)
        if key not in seen:
            seen.add(key)
            kept.append(obj)
    return kept


def created_meanwhile(message: Any) -> bool:
    """Whether kubernetes.core.k8s failed because an object it set out to create exists by now (the API server's
    409 AlreadyExists): someone else created it after it was read as missing."""
    return '"reason":"AlreadyExists"' in str(message or "").replace(" ", "")


def ref(obj: Mapping[str, Any]) -> dict[str, Any]:
    """``{apiVersion, kind, metadata: {name[, namespace]}}``: what names an object, nothing of its content."""
    metadata = obj.get("metadata") or {}
    named = {"name": metadata.get("name")}
    if metadata.get("namespace"):
        named["namespace"] = metadata["namespace"]
    return {"apiVersion": obj.get("apiVersion"), "kind": obj.get("kind"), "metadata": named}


@dataclass
class Plan:
    """What to send to ``kubernetes.core.k8s``, and what check mode counts as a change without it."""

    send: list[dict[str, Any]] = field(default_factory=list)
    previewed: list[dict[str, Any]] = field(default_factory=list)


def plan_present(desired: list[dict[str, Any]], found: list[Found], *, apply: bool = False,
                 ready: Callable[[dict[str, Any]], bool] | None = None, check_mode: bool = False,
                 namespaces: Iterable[str] = ()) -> Plan:
    """The objects to apply: those that drifted, and (with ``ready``, outside check mode) those that match but are
    not ready. ``found[i]`` is the read of ``desired[i]``; ``namespaces``: the namespaces that exist (read in
    check mode only, for the objects whose namespace a dry run needs)."""
    if len(desired) != len(found):
        raise ObjectsError(f"{len(desired)} objects but {len(found)} reads")
    existing = set(namespaces)
    plan = Plan()
    for want, seen in zip(desired, found, strict=True):
        if seen.obj is not None and drift.unchanged(want, seen.obj, apply):
            # A rollout that timed out or a crash loop is waited for again, not reported as converged.
            if ready is not None and not check_mode and not ready(seen.obj):
                plan.send.append(want)
            continue
        namespace = (want.get("metadata") or {}).get("namespace")
        if check_mode and (not seen.served or (seen.namespaced and namespace not in existing)):
            plan.previewed.append(want)
        else:
            plan.send.append(want)
    return plan


def plan_absent(desired: list[dict[str, Any]], found: list[Found]) -> list[dict[str, Any]]:
    """References of the objects to delete: those that exist, in the order given."""
    if len(desired) != len(found):
        raise ObjectsError(f"{len(desired)} objects but {len(found)} reads")
    return [ref(want) for want, seen in zip(desired, found, strict=True) if seen.obj is not None]


def namespaces_to_check(desired: list[dict[str, Any]], found: list[Found], apply: bool = False) -> list[str]:
    """The namespaces of the drifted objects of namespaced kinds: check mode reads whether they exist."""
    names = []
    for want, seen in zip(desired, found, strict=True):
        namespace = (want.get("metadata") or {}).get("namespace")
        if seen.served and seen.namespaced and namespace and namespace not in names \
                and not drift.unchanged(want, seen.obj, apply):
            names.append(namespace)
    return names


def read_target(options: Mapping[str, Any], environ: Mapping[str, str]) -> tuple[Any, str]:
    """``(kubeconfig, context)`` for reading on the controller the cluster ``kubernetes.core.k8s`` reaches with
    ``options`` (its connection options) and ``environ`` (the environment its process gets).

    An option the task leaves out (None) is read from ``K8S_AUTH_<OPTION>``, as the module does; ``kubeclient``
    then falls back to ``KUBECONFIG`` and ``~/.kube/config``. A ``host`` and ``api_key`` without any kubeconfig
    are refused: the module would use them, and a read through another kubeconfig could reach another cluster.
    """
    def option(name: str) -> Any:
        value = options.get(name)
        return environ.get(f"K8S_AUTH_{name.upper()}") if value is None else value

    kubeconfig = option("kubeconfig") or ""
    if not kubeconfig and option("host") and option("api_key"):
        raise ObjectsError("host and api_key without a kubeconfig: the objects are read on the controller through "
                           "a kubeconfig, so give kubeconfig (or K8S_AUTH_KUBECONFIG) for the same cluster")
    return kubeconfig, option("context") or ""


def ready(obj: dict[str, Any], condition: Mapping[str, Any] | None = None) -> bool:
    """Whether ``kubernetes.core.k8s`` with ``wait`` would find ``obj`` ready at once (its own predicates: the
    condition given, else by kind, e.g. a Deployment's replicas available). A condition recorded for an older
    ``metadata.generation`` describes a spec that has since changed, so it does not count."""
    from ansible_collections.kubernetes.core.plugins.module_utils.k8s import waiter
    from kubernetes.dynamic.resource import ResourceInstance

    instance = ResourceInstance(None, obj)
    if condition:
        wanted = {"status": "True", **{key: value for key, value in condition.items() if value is not None}}
        return waiter.custom_condition(wanted, instance) and not _stale(obj, str(wanted["type"]))
    return bool(waiter.RESOURCE_PREDICATES.get(str(obj.get("kind")), waiter.exists)(instance))


def _stale(obj: Mapping[str, Any], condition: str) -> bool:
    generation = (obj.get("metadata") or {}).get("generation")
    for entry in (obj.get("status") or {}).get("conditions") or []:
        if isinstance(entry, Mapping) and entry.get("type") == condition:
            observed = entry.get("observedGeneration")
            return isinstance(observed, int) and isinstance(generation, int) and observed < generation
    return False
