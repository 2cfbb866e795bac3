"""The stand-in's state: types, objects, resourceVersions, watch history, and every write verb's rules."""

from __future__ import annotations

import base64
import copy
import itertools
import secrets
import threading
import time
import uuid
from collections import deque
from collections.abc import Callable, Iterator
from datetime import UTC, datetime
from typing import Any

import yaml

from . import gotypes, kinds, schema
from .cel import CelRules
from .patch import PatchError, apply_conflicts, apply_merge, json_patch, merge_patch, strategic_merge
from .resources import BUILTIN, ResourceType
from .schema import Cause
from .selection import field_matcher, label_matcher

HISTORY = 20_000  # watch events kept for resuming a watch at an older resourceVersion
SYSTEM_NAMESPACES = ("default", "kube-system", "kube-public", "kube-node-lease")
META_FIELDS = {"name", "generateName", "namespace", "selfLink", "uid", "resourceVersion", "generation",
               "creationTimestamp", "deletionTimestamp", "deletionGracePeriodSeconds", "labels", "annotations",
               "ownerReferences", "finalizers", "managedFields"}
# Top-level fields of built-in kinds: anything else is dropped (warned) or refused with fieldValidation=Strict.
TOP_FIELDS: dict[str, set[str]] = {
    "ConfigMap": {"data", "binaryData", "immutable"},
    "Secret": {"data", "stringData", "type", "immutable"},
    "ServiceAccount": {"secrets", "imagePullSecrets", "automountServiceAccountToken"},
    "Role": {"rules"},
    "ClusterRole": {"rules", "aggregationRule"},
    "RoleBinding": {"roleRef", "subjects"},
    "ClusterRoleBinding": {"roleRef", "subjects"},
    "PriorityClass": {"value", "globalDefault", "description", "preemptionPolicy"},
    "Event": {"involvedObject", "reason", "message", "source", "firstTimestamp", "lastTimestamp", "count", "type",
              "eventTime", "series", "action", "related", "reportingComponent", "reportingInstance"},
    "Endpoints": {"subsets"},
    "StorageClass": {"provisioner", "parameters", "reclaimPolicy", "mountOptions", "allowVolumeExpansion",
                     "volumeBindingMode", "allowedTopologies"},
    "ValidatingWebhookConfiguration": {"webhooks"},
    "MutatingWebhookConfiguration": {"webhooks"},
}
SPEC_STATUS = {"spec", "status"}


def now() -> str:
    return datetime.now(UTC).strftime("%Y-%m-%dT%H:%M:%SZ")


class APIError(Exception):
    """A failure answered with a `Status` object."""

    def __init__(self, code: int, reason: str, message: str, details: dict[str, Any] | None = None) -> None:
        super().__init__(message)
        self.code, self.reason, self.message, self.details = code, reason, message, details

    def status(self) -> dict[str, Any]:
        out: dict[str, Any] = {"kind": "Status", "apiVersion": "v1", "metadata": {}, "status": "Failure",
                               "message": self.message, "reason": self.reason, "code": self.code}
        if self.details:
            out["details"] = self.details
        return out


def not_found(rt: ResourceType, name: str) -> APIError:
    return APIError(404, "NotFound", f'{rt.resource_key} "{name}" not found',
                    {"name": name, "group": rt.group, "kind": rt.plural})


def invalid(rt: ResourceType, name: str, causes: list[Cause]) -> APIError:
    return APIError(422, "Invalid", schema.message(rt.qualified, name, causes),
                    {"name": name, "group": rt.group, "kind": rt.kind,
                     "causes": [{"reason": c.reason, "message": c.message.split(": ", 1)[-1], "field": c.field}
                                for c in causes]})


def _strip_volatile(obj: dict[str, Any]) -> dict[str, Any]:
    out = dict(obj)
    meta = dict(out.get("metadata") or {})
    meta.pop("resourceVersion", None)
    meta.pop("managedFields", None)
    out["metadata"] = meta
    return out


def _spec_part(obj: dict[str, Any], rt: ResourceType) -> dict[str, Any]:
    """What a generation change is measured on: everything but metadata (and status, when it is a subresource)."""
    skip = {"metadata", "apiVersion", "kind"} | ({"status"} if rt.status else set())
    return {k: v for k, v in obj.items() if k not in skip}


def kube_version_key(version: str) -> tuple[int, int, int, str]:
    """Sort key giving the API server's version priority: v2 > v1 > v1beta2 > v1beta1 > v1alpha1 > others."""
    import re

    m = re.match(r"^v(\d+)(?:(alpha|beta)(\d+))?$", version)
    if not m:
        return (3, 0, 0, version)
    major, stage, minor = int(m.group(1)), m.group(2), int(m.group(3) or 0)
    rank = {None: 0, "beta": 1, "alpha": 2}[stage]
    return (rank, -major, -minor, version)


class Cluster:
    """All state of one stand-in API server. Every public method takes the lock."""

    def __init__(self) -> None:
        self.lock = threading.RLock()
        self.cond = threading.Condition(self.lock)
        self.rv = 0
        self.history_floor = 0
        self.types: dict[tuple[str, str, str], ResourceType] = {}
        self.group_order: list[str] = []
        self.objects: dict[tuple[str, str], dict[tuple[str, str], dict[str, Any]]] = {}
        self.applied: dict[str, dict[str, Any]] = {}  # uid -> field manager -> last applied configuration
        self.owners: dict[str, set[tuple[str, str, str, str]]] = {}  # owner uid -> dependents
        # (resourceVersion, (group, plural), event type, object, previous object or None)
        self.events: deque[tuple[int, tuple[str, str], str, dict[str, Any], dict[str, Any] | None]] = deque()
        self.cel = CelRules()
        self.hooks: list[Callable[[str, ResourceType, dict[str, Any]], None]] = []
        # (kind, namespace, name prefix, reason): writes an admission webhook would deny (see deny_writes).
        self.denials: list[tuple[str, str | None, str, str]] = []
        self.closed = False
        self._ips = itertools.count(1)
        for rt in BUILTIN:
            self._register(rt)
        for ns in SYSTEM_NAMESPACES:
            self.create(self.type_for("", "v1", "namespaces"), None, {"metadata": {"name": ns}})

    # ------------------------------------------------------------ types

    def _register(self, rt: ResourceType) -> None:
        self.types[(rt.group, rt.version, rt.plural)] = rt
        self.objects.setdefault((rt.group, rt.plural), {})
        if rt.group not in self.group_order:
            self.group_order.append(rt.group)

    def type_for(self, group: str, version: str, plural: str) -> ResourceType:
        rt = self.types.get((group, version, plural))
        if rt is None:
            raise APIError(404, "NotFound", "the server could not find the requested resource",
                           {"group": group, "kind": plural})
        return rt

    def group_versions(self) -> dict[str, list[str]]:
        """group -> served versions, highest priority first (the first one is preferred)."""
        out: dict[str, list[str]] = {}
        with self.lock:
            for group in self.group_order:
                versions = {v for (g, v, _p) in self.types if g == group}
                if versions:
                    out[group] = sorted(versions, key=kube_version_key)
        return out

    def resources(self, group: str, version: str) -> list[ResourceType]:
        with self.lock:
            return [rt for (g, v, _p), rt in self.types.items() if g == group and v == version]

    def kind_type(self, api_version: str, kind: str) -> ResourceType | None:
        group, _slash, version = api_version.rpartition("/")
        with self.lock:
            for (g, v, _p), rt in self.types.items():
                if g == group and v == version and rt.kind == kind:
                    return rt
        return None

    # ------------------------------------------------------------ reading

    def _bucket(self, rt: ResourceType) -> dict[tuple[str, str], dict[str, Any]]:
        return self.objects.setdefault((rt.group, rt.plural), {})

    def _as_version(self, rt: ResourceType, obj: dict[str, Any]) -> dict[str, Any]:
        out = copy.deepcopy(obj)
        out["apiVersion"] = rt.group_version
        return out

    def _current(self, rt: ResourceType, ns: str | None, name: str) -> dict[str, Any]:
        obj = self._bucket(rt).get((ns or "", name))
        if obj is None:
            raise not_found(rt, name)
        return obj

    def get(self, rt: ResourceType, ns: str | None, name: str) -> dict[str, Any]:
        with self.lock:
            return self._as_version(rt, self._current(rt, ns, name))

    def list(self, rt: ResourceType, ns: str | None, labels: str | None = None,
             fields: str | None = None) -> dict[str, Any]:
        lmatch, fmatch = label_matcher(labels), field_matcher(fields, rt.kind)
        with self.lock:
            items = [self._as_version(rt, obj) for (ons, _n), obj in sorted(self._bucket(rt).items())
                     if (ns is None or ons == ns) and lmatch(obj) and fmatch(obj)]
            rv = str(self.rv)
        return {"kind": f"{rt.kind}List", "apiVersion": rt.group_version, "metadata": {"resourceVersion": rv},
                "items": items}

    def peek(self, rt: ResourceType, ns: str | None = None) -> list[dict[str, Any]]:
        """The stored objects themselves, without the copies `list` makes: for the simulated controllers' reads
        under `lock`. Stored objects are never mutated in place, and callers must not mutate them either."""
        with self.lock:
            return [obj for (ons, _n), obj in sorted(self._bucket(rt).items()) if ns is None or ons == ns]

    def namespace_exists(self, ns: str) -> bool:
        return ("", ns) in self.objects[("", "namespaces")]

    # ------------------------------------------------------------ admission

    def _check_namespace(self, rt: ResourceType, ns: str | None, creating: bool) -> None:
        if not rt.namespaced:
            return
        namespace = self.objects[("", "namespaces")].get(("", ns or ""))
        if namespace is None:
            raise APIError(404, "NotFound", f'namespaces "{ns}" not found', {"name": ns, "kind": "namespaces"})
        if creating and namespace["metadata"].get("deletionTimestamp"):
            raise APIError(403, "Forbidden", f"{rt.resource_key} is forbidden: unable to create new content in "
                                             f"namespace {ns} because it is being terminated",
                           {"name": ns, "kind": "namespaces",
                            "causes": [{"reason": "NamespaceTerminating", "field": "metadata.namespace",
                                        "message": f"namespace {ns} is being terminated"}]})

    def deny_writes(self, kind: str, namespace: str | None = None, name: str = "",
                    reason: str = "denied by the test") -> Callable[[], None]:
        """Deny every create and update of ``kind`` in ``namespace`` (None: any) whose name starts with ``name``, as a
        validating admission webhook does (403, "admission webhook ... denied the request"), until the returned
        function is called."""
        entry = (kind, namespace, name, reason)
        with self.lock:
            self.denials.append(entry)

        def allow() -> None:
            with self.lock:
                if entry in self.denials:
                    self.denials.remove(entry)
        return allow

    def _deny(self, rt: ResourceType, ns: str | None, name: str) -> None:
        for kind, namespace, prefix, reason in self.denials:
            if kind == rt.kind and namespace in (None, ns) and name.startswith(prefix):
                raise APIError(403, "Forbidden", f'admission webhook "deny.standin.test" denied the request: {reason}',
                               {"name": name, "kind": rt.plural})

    def _admit(self, rt: ResourceType, ns: str | None, body: Any, old: dict[str, Any] | None,
               sub: str | None, strict: bool, warnings: list[str]) -> dict[str, Any]:
        """Turn a request body into the object to store (defaults, status rules, validation)."""
        if self.denials and sub is None and isinstance(body, dict):
            self._deny(rt, ns, str((body.get("metadata") or {}).get("name", "")))
        if not isinstance(body, dict):
            raise APIError(400, "BadRequest", "the body of the request must be a JSON object")
        new = copy.deepcopy(body)
        api, kind = new.get("apiVersion"), new.get("kind")
        if (api and api != rt.group_version) or (kind and kind != rt.kind):
            raise APIError(400, "BadRequest", f"the API version in the data ({api}) does not match the expected "
                                              f"API version ({rt.group_version})" if api != rt.group_version else
                           f"the kind in the data ({kind}) does not match the expected kind ({rt.kind})")
        new["apiVersion"], new["kind"] = rt.group_version, rt.kind
        meta = new.get("metadata")
        if meta is None:
            meta = new["metadata"] = {}
        if not isinstance(meta, dict):
            raise APIError(400, "BadRequest", "metadata must be an object")
        if rt.namespaced:
            if meta.get("namespace") and meta["namespace"] != ns:
                raise APIError(400, "BadRequest", "the namespace of the provided object does not match the namespace "
                                                  "sent on the request")
            meta["namespace"] = ns
        else:
            meta.pop("namespace", None)
        unknown = [f"metadata.{k}" for k in list(meta) if k not in META_FIELDS]
        for k in unknown:
            del meta[k.split(".", 1)[1]]
        if sub == "status":
            assert old is not None
            result = copy.deepcopy(old)
            if "status" in new:
                result["status"] = new["status"]
            else:
                result.pop("status", None)
            new, meta = result, result["metadata"]
        elif rt.status:
            if old is not None and "status" in old:
                new["status"] = copy.deepcopy(old["status"])
            else:
                new.pop("status", None)
        for field in ("uid", "creationTimestamp", "deletionTimestamp", "deletionGracePeriodSeconds", "generation"):
            if old is not None and field in old["metadata"]:
                meta[field] = old["metadata"][field]
            else:
                meta.pop(field, None)
        meta.pop("managedFields", None)
        meta.pop("selfLink", None)
        if old is not None:
            meta["name"] = old["metadata"]["name"]
        if not rt.custom:
            errors = kinds.decode_errors(rt.kind, new)
            if errors:
                raise APIError(400, "BadRequest", f'{rt.kind} in version "{rt.version}" cannot be handled as a '
                                                  f"{rt.kind}: {errors[0]}")
        if rt.kind == "Secret" and isinstance(new.get("stringData"), dict):
            data = new.setdefault("data", {}) or {}
            for key, value in new.pop("stringData").items():
                data[key] = base64.b64encode(str(value).encode()).decode()
            new["data"] = data
        if rt.custom:
            unknown += schema.prune(new, rt.schema or {})
            schema.apply_defaults(new, rt.schema or {})
        else:
            decoded = gotypes.decode(rt.kind, rt.version, new)
            if decoded is None:  # no client model: check the top level only
                allowed = TOP_FIELDS.get(rt.kind, SPEC_STATUS)
                for key in list(new):
                    if key not in allowed and key not in ("apiVersion", "kind", "metadata"):
                        unknown.append(key)
                        del new[key]
            else:
                unknown += [u for u in decoded[0] if u not in unknown]
                if decoded[1]:
                    raise APIError(400, "BadRequest", f'{rt.kind} in version "{rt.version}" cannot be handled as a '
                                                      f"{rt.kind}: {decoded[1][0]}")
        if unknown:
            if strict:
                text = ", ".join(f'unknown field "{u}"' for u in unknown)
                raise APIError(400, "BadRequest", f"{rt.kind} in version \"{rt.version}\" cannot be handled as a "
                                                  f"{rt.kind}: strict decoding error: {text}")
            warnings.extend(f'unknown field "{u}"' for u in unknown)
        name = meta.get("name") or ""
        causes: list[Cause] = []
        if name:
            causes += kinds.validate_name(rt.kind, name)
        elif not meta.get("generateName"):
            causes.append(Cause("FieldValueRequired", "metadata.name",
                                "metadata.name: Required value: name or generateName is required"))
        causes += kinds.validate_metadata(meta)
        if rt.custom:
            causes += schema.validate(new, rt.schema or {}, "")
            if not causes:
                causes += self.cel.check(rt, new, old)
        else:
            if rt.kind == "Service" and old is not None and isinstance(new.get("spec"), dict):
                for field in ("clusterIP", "clusterIPs"):  # allocated values survive an update that omits them
                    if field not in new["spec"] and field in (old.get("spec") or {}):
                        new["spec"][field] = copy.deepcopy(old["spec"][field])
            kinds.apply_defaults(rt.kind, new, self._next_ip() if rt.kind == "Service" else "")
            causes += kinds.validate(rt.kind, new, old)
            if rt.kind == "CustomResourceDefinition":
                causes += self._crd_checks(new, old)
        if causes:
            raise invalid(rt, name or meta.get("generateName", ""), causes)
        if rt.kind == "CustomResourceDefinition":
            self._crd_status(new, old)
        return new

    def _next_ip(self) -> str:
        n = next(self._ips)
        return f"10.96.{(n // 250) % 250}.{n % 250 + 1}"

    # ------------------------------------------------------------ storing

    def _record(self, rt: ResourceType, kind: str, obj: dict[str, Any], prev: dict[str, Any] | None = None) -> None:
        self.events.append((self.rv, (rt.group, rt.plural), kind, copy.deepcopy(obj), prev))
        if len(self.events) > HISTORY:
            self.history_floor = self.events.popleft()[0]
        self.cond.notify_all()
        for hook in list(self.hooks):
            hook(kind, rt, obj)

    def _store(self, rt: ResourceType, obj: dict[str, Any], kind: str) -> dict[str, Any]:
        self.rv += 1
        obj["metadata"]["resourceVersion"] = str(self.rv)
        meta = obj["metadata"]
        key = (meta.get("namespace") or "", meta["name"])
        prev = self._bucket(rt).get(key)  # stored objects are never mutated in place
        self._bucket(rt)[key] = obj
        for ref in meta.get("ownerReferences") or []:
            if isinstance(ref, dict) and ref.get("uid"):
                self.owners.setdefault(ref["uid"], set()).add((rt.group, rt.plural, key[0], key[1]))
        if rt.kind == "CustomResourceDefinition":
            self._crd_sync(obj)
        self._record(rt, kind, obj, prev)
        return self._as_version(rt, obj)

    def _remove(self, rt: ResourceType, obj: dict[str, Any], propagation: str | None = None) -> None:
        meta = obj["metadata"]
        key = (meta.get("namespace") or "", meta["name"])
        if self._bucket(rt).pop(key, None) is None:
            return
        self.rv += 1
        gone = copy.deepcopy(obj)
        gone["metadata"]["resourceVersion"] = str(self.rv)
        self.applied.pop(meta.get("uid", ""), None)
        self._record(rt, "DELETED", gone)
        if rt.kind == "CustomResourceDefinition":
            self._crd_drop(obj)
        dependents = self.owners.pop(meta.get("uid", ""), set())
        if propagation != "Orphan":
            for group, plural, ns, name in sorted(dependents):
                child = self.objects.get((group, plural), {}).get((ns, name))
                child_rt = self._storage_type(group, plural)
                if child is not None and child_rt is not None:
                    self._delete_object(child_rt, child, "Background")
        if rt.namespaced and key[0]:
            self._maybe_finish_namespace(key[0])
        if rt.custom:
            self._maybe_finish_crd(rt)

    def _storage_type(self, group: str, plural: str) -> ResourceType | None:
        for (g, _v, p), rt in self.types.items():
            if g == group and p == plural:
                return rt
        return None

    # ------------------------------------------------------------ verbs

    def create(self, rt: ResourceType, ns: str | None, body: Any, *, dry_run: bool = False, strict: bool = False,
               warnings: list[str] | None = None) -> dict[str, Any]:
        warnings = [] if warnings is None else warnings
        with self.lock:
            self._check_namespace(rt, ns, creating=True)
            if rt.custom and ((self._crd_of(rt) or {}).get("metadata") or {}).get("deletionTimestamp"):
                raise APIError(405, "MethodNotAllowed", "create not allowed while custom resource definition is "
                                                        "terminating")
            obj = self._admit(rt, ns, body, None, None, strict, warnings)
            meta = obj["metadata"]
            if not meta.get("name"):
                meta["name"] = meta["generateName"] + "".join(secrets.choice("bcdfghjklmnpqrstvwxz2456789")
                                                              for _attempt in range(5))
            if (meta.get("namespace") or "", meta["name"]) in self._bucket(rt):
                raise APIError(409, "AlreadyExists", f'{rt.resource_key} "{meta["name"]}" already exists',
                               {"name": meta["name"], "group": rt.group, "kind": rt.plural})
            meta["uid"] = str(uuid.uuid4())
            meta["creationTimestamp"] = now()
            if rt.generation or rt.custom:
                meta["generation"] = 1
            if dry_run:
                return self._as_version(rt, obj)
            return self._store(rt, obj, "ADDED")

    def update(self, rt: ResourceType, ns: str | None, name: str, body: Any, *, sub: str | None = None,
               dry_run: bool = False, strict: bool = False, warnings: list[str] | None = None) -> dict[str, Any]:
        warnings = [] if warnings is None else warnings
        with self.lock:
            old = self._current(rt, ns, name)
            if not isinstance(body, dict):
                raise APIError(400, "BadRequest", "the body of the request must be a JSON object")
            meta = body.get("metadata") or {}
            if meta.get("name") and meta["name"] != name:
                raise APIError(400, "BadRequest", f"the name of the object ({meta['name']}) does not match the name "
                                                  f"on the URL ({name})")
            self._precondition(rt, old, meta.get("resourceVersion"))
            obj = self._admit(rt, ns, body, old, sub, strict, warnings)
            return self._commit(rt, old, obj, dry_run)

    def _precondition(self, rt: ResourceType, old: dict[str, Any], rv: Any) -> None:
        if rv and str(rv) != old["metadata"]["resourceVersion"]:
            name = old["metadata"]["name"]
            raise APIError(409, "Conflict", f'Operation cannot be fulfilled on {rt.resource_key} "{name}": the object '
                                            "has been modified; please apply your changes to the latest version and "
                                            "try again", {"name": name, "group": rt.group, "kind": rt.plural})

    def _commit(self, rt: ResourceType, old: dict[str, Any], obj: dict[str, Any], dry_run: bool) -> dict[str, Any]:
        if _strip_volatile(obj) == _strip_volatile(old):
            return self._as_version(rt, old)  # a no-op write keeps its resourceVersion and sends no event
        if "generation" in old["metadata"] and _spec_part(obj, rt) != _spec_part(old, rt):
            obj["metadata"]["generation"] = old["metadata"]["generation"] + 1
        if dry_run:
            out = self._as_version(rt, obj)
            out["metadata"]["resourceVersion"] = old["metadata"]["resourceVersion"]
            return out
        if obj["metadata"].get("deletionTimestamp") and not obj["metadata"].get("finalizers"):
            out = self._as_version(rt, obj)
            self._remove(rt, obj)
            return out
        return self._store(rt, obj, "MODIFIED")

    def patch(self, rt: ResourceType, ns: str | None, name: str, raw: bytes, content_type: str, *,
              sub: str | None = None, dry_run: bool = False, strict: bool = False, field_manager: str | None = None,
              force: bool = False, warnings: list[str] | None = None) -> dict[str, Any]:
        warnings = [] if warnings is None else warnings
        ptype = content_type.split(";")[0].strip()
        if ptype == "application/apply-patch+yaml":
            return self._apply(rt, ns, name, raw, sub=sub, dry_run=dry_run, strict=strict,
                               field_manager=field_manager, force=force, warnings=warnings)
        if ptype == "application/strategic-merge-patch+json" and rt.custom:
            raise APIError(415, "UnsupportedMediaType",
                           'the body of the request was in an unknown format - accepted media types include: '
                           'application/json-patch+json, application/merge-patch+json, application/apply-patch+yaml')
        if ptype not in ("application/strategic-merge-patch+json", "application/merge-patch+json",
                         "application/json-patch+json"):
            raise APIError(415, "UnsupportedMediaType", "the body of the request was in an unknown format - "
                                                        "accepted media types include: "
                                                        "application/json-patch+json, application/merge-patch+json, "
                                                        "application/apply-patch+yaml, "
                                                        "application/strategic-merge-patch+json")
        patch = _load_json(raw)
        with self.lock:
            old = self._current(rt, ns, name)
            current = self._as_version(rt, old)
            try:
                if ptype == "application/json-patch+json":
                    patched = json_patch(current, patch)
                elif ptype == "application/merge-patch+json":
                    if not isinstance(patch, dict):
                        raise PatchError("merge patch must be a JSON object", 400)
                    patched = merge_patch(current, patch)
                else:
                    if not isinstance(patch, dict):
                        raise PatchError("strategic merge patch must be a JSON object", 400)
                    patched = strategic_merge(current, patch, rt.kind)
            except PatchError as exc:
                raise APIError(exc.code, "BadRequest" if exc.code == 400 else "Invalid", str(exc)) from exc
            if not isinstance(patched, dict):
                raise APIError(422, "Invalid", "the patch did not produce an object")
            pmeta = patch.get("metadata") if isinstance(patch, dict) else None
            if isinstance(pmeta, dict):
                self._precondition(rt, old, pmeta.get("resourceVersion"))
            if (patched.get("metadata") or {}).get("name") not in (None, name):
                raise APIError(400, "BadRequest", "metadata.name cannot be changed by a patch")
            obj = self._admit(rt, ns, patched, old, sub, strict, warnings)
            return self._commit(rt, old, obj, dry_run)

    def _apply(self, rt: ResourceType, ns: str | None, name: str, raw: bytes, *, sub: str | None, dry_run: bool,
               strict: bool, field_manager: str | None, force: bool, warnings: list[str]) -> dict[str, Any]:
        if not field_manager:
            raise APIError(422, "Invalid", 'PatchOptions.meta.k8s.io "" is invalid: fieldManager: Required value: '
                                           "is required for apply patch",
                           {"group": "meta.k8s.io", "kind": "PatchOptions",
                            "causes": [{"reason": "FieldValueRequired", "message": "Required value: is required for "
                                        "apply patch", "field": "fieldManager"}]})
        try:
            applied = yaml.safe_load(raw.decode() or "{}")
        except (yaml.YAMLError, UnicodeDecodeError) as exc:
            raise APIError(400, "BadRequest", f"error decoding YAML: {exc}") from exc
        if not isinstance(applied, dict) or not applied.get("apiVersion") or not applied.get("kind"):
            raise APIError(400, "BadRequest", "apply patches must set apiVersion and kind")
        meta = applied.get("metadata") or {}
        if meta.get("name") not in (None, name):
            raise APIError(400, "BadRequest", f"the name of the object ({meta.get('name')}) does not match the name "
                                              f"on the URL ({name})")
        applied.setdefault("metadata", {})["name"] = name
        with self.lock:
            old = self._bucket(rt).get((ns or "", name))
            if old is None:
                if sub:
                    raise not_found(rt, name)
                obj = self.create(rt, ns, applied, dry_run=dry_run, strict=strict, warnings=warnings)
                if not dry_run:
                    self.applied[obj["metadata"]["uid"]] = {field_manager: applied}
                return obj
            self._precondition(rt, old, meta.get("resourceVersion"))
            managers = self.applied.setdefault(old["metadata"]["uid"], {})
            previous = managers.get(field_manager)
            others = {m: c for m, c in managers.items() if m != field_manager}
            conflicts = apply_conflicts(self._as_version(rt, old), applied, others, rt.kind)
            if conflicts and not force:
                text = "; ".join(f'conflict with "{m}": .{f}' for m, f in conflicts)
                raise APIError(409, "Conflict", f"Apply failed with {len(conflicts)} conflict"
                                                f"{'s' if len(conflicts) > 1 else ''}: {text}",
                               {"causes": [{"reason": "FieldManagerConflict", "message": f'conflict with "{m}"',
                                            "field": f".{f}"} for m, f in conflicts]})
            merged = apply_merge(self._as_version(rt, old), applied, previous, rt.kind)
            obj = self._admit(rt, ns, merged, old, sub, strict, warnings)
            result = self._commit(rt, old, obj, dry_run)
            if not dry_run:
                managers[field_manager] = applied
                if force:
                    for manager in {m for m, _f in conflicts}:
                        managers.pop(manager, None)
            return result

    def delete(self, rt: ResourceType, ns: str | None, name: str, *, dry_run: bool = False,
               propagation: str | None = None, preconditions: dict[str, Any] | None = None) -> dict[str, Any]:
        with self.lock:
            old = self._current(rt, ns, name)
            pre = preconditions or {}
            if pre.get("uid") and pre["uid"] != old["metadata"].get("uid"):
                raise APIError(409, "Conflict", f'Operation cannot be fulfilled on {rt.resource_key} "{name}": '
                                                f"Precondition failed: UID in precondition: {pre['uid']}, UID in "
                                                f"object meta: {old['metadata'].get('uid')}")
            self._precondition(rt, old, pre.get("resourceVersion"))
            if propagation not in (None, "Orphan", "Background", "Foreground"):
                raise APIError(422, "Invalid", f'DeleteOptions.meta.k8s.io "" is invalid: propagationPolicy: '
                                               f'Unsupported value: "{propagation}": supported values: "Foreground", '
                                               '"Background", "Orphan", "nil"')
            if dry_run:
                out = self._as_version(rt, old)
                if old["metadata"].get("finalizers") or rt.kind == "Namespace":
                    out["metadata"].setdefault("deletionTimestamp", now())
                return out
            return self._delete_object(rt, old, propagation)

    def _delete_object(self, rt: ResourceType, old: dict[str, Any], propagation: str | None) -> dict[str, Any]:
        meta = old["metadata"]
        if rt.kind == "Namespace":
            return self._terminate_namespace(old)
        if rt.kind == "CustomResourceDefinition":
            return self._terminate_crd(old)
        if meta.get("finalizers"):
            if meta.get("deletionTimestamp"):
                return self._as_version(rt, old)
            obj = copy.deepcopy(old)
            obj["metadata"]["deletionTimestamp"] = now()
            obj["metadata"]["deletionGracePeriodSeconds"] = 0
            return self._store(rt, obj, "MODIFIED")
        out = self._as_version(rt, old)
        self._remove(rt, old, propagation)
        return out

    def delete_collection(self, rt: ResourceType, ns: str | None, labels: str | None, fields: str | None,
                          *, dry_run: bool = False) -> dict[str, Any]:
        with self.lock:
            listing = self.list(rt, ns, labels, fields)
            for item in listing["items"]:
                meta = item["metadata"]
                self.delete(rt, meta.get("namespace"), meta["name"], dry_run=dry_run)
            return listing

    # ------------------------------------------------------------ namespaces

    def _terminate_namespace(self, ns_obj: dict[str, Any]) -> dict[str, Any]:
        ns_rt = self.type_for("", "v1", "namespaces")
        name = ns_obj["metadata"]["name"]
        if not ns_obj["metadata"].get("deletionTimestamp"):
            obj = copy.deepcopy(ns_obj)
            obj["metadata"]["deletionTimestamp"] = now()
            obj["metadata"]["deletionGracePeriodSeconds"] = 0
            obj.setdefault("status", {})["phase"] = "Terminating"
            obj["status"]["conditions"] = [
                {"type": "NamespaceContentRemaining", "status": "False", "reason": "ContentDeleted",
                 "message": "All content successfully removed", "lastTransitionTime": now()},
            ]
            out = self._store(ns_rt, obj, "MODIFIED")
        else:
            out = self._as_version(ns_rt, ns_obj)
        for (group, plural), bucket in list(self.objects.items()):
            rt = self._storage_type(group, plural)
            if rt is None or not rt.namespaced:
                continue
            for (ons, _n), obj in list(bucket.items()):
                if ons == name and not obj["metadata"].get("deletionTimestamp"):
                    self._delete_object(rt, obj, "Background")
        self._maybe_finish_namespace(name)
        return out

    def _maybe_finish_namespace(self, name: str) -> None:
        ns_obj = self.objects[("", "namespaces")].get(("", name))
        if ns_obj is None or not ns_obj["metadata"].get("deletionTimestamp"):
            return
        for (group, plural), bucket in self.objects.items():
            rt = self._storage_type(group, plural)
            if rt is not None and rt.namespaced and any(ons == name for ons, _n in bucket):
                return
        self._remove(self.type_for("", "v1", "namespaces"), ns_obj)

    # ------------------------------------------------------------ CRDs

    def _crd_checks(self, crd: dict[str, Any], old: dict[str, Any] | None) -> list[Cause]:
        spec = crd.get("spec") or {}
        causes: list[Cause] = []
        names = spec.get("names") or {}
        group, plural = spec.get("group"), names.get("plural")
        required = (("spec.group", group), ("spec.names.plural", plural), ("spec.names.kind", names.get("kind")))
        for field, value in required:
            if not value:
                causes.append(Cause("FieldValueRequired", field, f"{field}: Required value"))
        if spec.get("scope") not in ("Namespaced", "Cluster"):
            causes.append(Cause("FieldValueNotSupported", "spec.scope",
                                f'spec.scope: Unsupported value: {schema.show(spec.get("scope"))}: supported values: '
                                '"Cluster", "Namespaced"'))
        if group and plural and crd["metadata"].get("name") != f"{plural}.{group}":
            causes.append(Cause("FieldValueInvalid", "metadata.name",
                                f'metadata.name: Invalid value: {schema.show(crd["metadata"].get("name"))}: must be '
                                'spec.names.plural+"."+spec.group'))
        versions = spec.get("versions") or []
        if not versions:
            causes.append(Cause("FieldValueInvalid", "spec.versions",
                                "spec.versions: Invalid value: null: must have exactly one version marked as storage "
                                "version"))
        elif sum(1 for v in versions if v.get("storage")) != 1:
            causes.append(Cause("FieldValueInvalid", "spec.versions",
                                f"spec.versions: Invalid value: {schema.show(versions)[:80]}: must have exactly one "
                                "version marked as storage version"))
        for i, version in enumerate(versions):
            if not ((version.get("schema") or {}).get("openAPIV3Schema")):
                field = f"spec.versions[{i}].schema.openAPIV3Schema"
                causes.append(Cause("FieldValueRequired", field, f"{field}: Required value: schemas are required"))
        if old is not None:
            for field in ("scope", "group"):
                if (old.get("spec") or {}).get(field) != spec.get(field):
                    causes.append(Cause("FieldValueInvalid", f"spec.{field}",
                                        f"spec.{field}: Invalid value: {schema.show(spec.get(field))}: field is "
                                        "immutable"))
        return causes

    def _crd_status(self, crd: dict[str, Any], old: dict[str, Any] | None) -> None:
        spec = crd["spec"]
        names = copy.deepcopy(spec["names"])
        names.setdefault("singular", names["kind"].lower())
        names.setdefault("listKind", names["kind"] + "List")
        spec["names"] = copy.deepcopy(names)
        spec.setdefault("conversion", {"strategy": "None"})
        old_status = (old or {}).get("status") or {}
        stamp = {c["type"]: c.get("lastTransitionTime") for c in old_status.get("conditions") or []}
        storage = next(v["name"] for v in spec["versions"] if v.get("storage"))
        stored = list(old_status.get("storedVersions") or [])
        if storage not in stored:
            stored.append(storage)
        crd["status"] = {
            "acceptedNames": names,
            "conditions": [
                {"type": "NamesAccepted", "status": "True", "reason": "NoConflicts",
                 "message": "no conflicts found", "lastTransitionTime": stamp.get("NamesAccepted") or now()},
                {"type": "Established", "status": "True", "reason": "InitialNamesAccepted",
                 "message": "the initial names have been accepted",
                 "lastTransitionTime": stamp.get("Established") or now()},
            ],
            "storedVersions": stored,
        }

    def _crd_sync(self, crd: dict[str, Any]) -> None:
        spec = crd["spec"]
        group, names = spec["group"], spec["names"]
        for key in [k for k, rt in self.types.items() if rt.custom and k[0] == group and rt.plural == names["plural"]]:
            del self.types[key]
        for version in spec["versions"]:
            if not version.get("served", True):
                continue
            subresources = version.get("subresources") or {}
            rt = ResourceType(
                group, version["name"], names["plural"], names["kind"], spec["scope"] == "Namespaced",
                short_names=tuple(names.get("shortNames") or ()), status="status" in subresources,
                generation=True, schema=(version.get("schema") or {}).get("openAPIV3Schema") or {},
                custom=True, categories=tuple(names.get("categories") or ()), scale="scale" in subresources,
            )
            self.cel.load(rt)
            self._register(rt)

    def _crd_of(self, rt: ResourceType) -> dict[str, Any] | None:
        return self.objects[("apiextensions.k8s.io", "customresourcedefinitions")].get(
            ("", f"{rt.plural}.{rt.group}"))

    def _terminate_crd(self, crd: dict[str, Any]) -> dict[str, Any]:
        """Like the API server's customresourcecleanup finalizer: delete every instance (their own
        finalizers honoured), refuse new ones, and remove the CRD once none is left."""
        crd_rt = self.type_for("apiextensions.k8s.io", "v1", "customresourcedefinitions")
        spec = crd["spec"]
        rt = self._storage_type(spec["group"], spec["names"]["plural"])
        if rt is None or not self._bucket(rt):
            out = self._as_version(crd_rt, crd)
            self._remove(crd_rt, crd)
            return out
        if crd["metadata"].get("deletionTimestamp"):
            return self._as_version(crd_rt, crd)
        obj = copy.deepcopy(crd)
        obj["metadata"]["deletionTimestamp"] = now()
        obj["metadata"]["deletionGracePeriodSeconds"] = 0
        obj["status"]["conditions"] = [c for c in obj["status"].get("conditions") or [] if c["type"] != "Terminating"]
        obj["status"]["conditions"].append({
            "type": "Terminating", "status": "True", "reason": "InstanceDeletionPending",
            "message": "CustomResourceDefinition marked for deletion; instance deletion pending",
            "lastTransitionTime": now()})
        out = self._store(crd_rt, obj, "MODIFIED")
        for instance in list(self._bucket(rt).values()):
            if not instance["metadata"].get("deletionTimestamp"):
                self._delete_object(rt, instance, "Background")
        current = self._crd_of(rt)
        return out if current is None else self._as_version(crd_rt, current)

    def _maybe_finish_crd(self, rt: ResourceType) -> None:
        crd = self._crd_of(rt)
        if crd is not None and crd["metadata"].get("deletionTimestamp") and not self._bucket(rt):
            self._remove(self.type_for("apiextensions.k8s.io", "v1", "customresourcedefinitions"), crd)

    def _crd_drop(self, crd: dict[str, Any]) -> None:
        spec = crd["spec"]
        group, plural = spec["group"], spec["names"]["plural"]
        rt = self._storage_type(group, plural)
        if rt is not None:
            for obj in list(self._bucket(rt).values()):
                self._remove(rt, obj)
        for key in [k for k, t in self.types.items() if t.custom and k[0] == group and t.plural == plural]:
            del self.types[key]
        self.objects.pop((group, plural), None)

    # ------------------------------------------------------------ watch

    def watch(self, rt: ResourceType, ns: str | None, labels: str | None, fields: str | None, since: str | None,
              timeout: float, stop: threading.Event, initial_events: bool = False) -> Iterator[dict[str, Any]]:
        """Validate the request now (errors before any header), then stream events lazily."""
        lmatch, fmatch = label_matcher(labels), field_matcher(fields, rt.kind)
        key = (rt.group, rt.plural)

        def wanted(obj: dict[str, Any]) -> bool:
            meta = obj["metadata"]
            return (ns is None or meta.get("namespace") == ns) and lmatch(obj) and fmatch(obj)

        with self.lock:
            if since in (None, "", "0") or initial_events:
                initial = [{"type": "ADDED", "object": self._as_version(rt, o)}
                           for _k, o in sorted(self._bucket(rt).items()) if wanted(o)]
                last = self.rv
                if initial_events:  # a streaming list (sendInitialEvents) ends with this bookmark
                    initial.append({"type": "BOOKMARK", "object": {
                        "kind": rt.kind, "apiVersion": rt.group_version,
                        "metadata": {"resourceVersion": str(last),
                                     "annotations": {"k8s.io/initial-events-end": "true"}}}})
            else:
                try:
                    last = int(since)
                except ValueError as exc:
                    raise APIError(400, "BadRequest", f"invalid resourceVersion {since!r}") from exc
                initial = []
                if last < self.history_floor:
                    initial = [{"type": "ERROR", "object": APIError(
                        410, "Expired", f"too old resource version: {last} ({self.history_floor + 1})").status()}]
                    last = -1
        if last < 0:
            return iter(initial)
        return itertools.chain(initial, self._follow(key, wanted, rt, last, timeout, stop))

    def _follow(self, key: tuple[str, str], wanted: Callable[[dict[str, Any]], bool], rt: ResourceType, last: int,
                timeout: float, stop: threading.Event) -> Iterator[dict[str, Any]]:
        deadline = time.monotonic() + timeout
        while not stop.is_set() and not self.closed:
            remaining = deadline - time.monotonic()
            if remaining <= 0:
                return
            with self.cond:
                if self.rv <= last:
                    self.cond.wait(min(remaining, 0.5))
                batch = []
                for event in reversed(self.events):
                    if event[0] <= last:
                        break
                    batch.append(event)
                last = max(last, self.rv)
            for _rv, ekey, etype, obj, prev in reversed(batch):
                if ekey != key:
                    continue
                now_in, was_in = wanted(obj), prev is not None and wanted(prev)
                if etype == "MODIFIED" and now_in != was_in:
                    # An object entering or leaving the selection is ADDED or DELETED for this watcher.
                    etype = "ADDED" if now_in else "DELETED"
                    yield {"type": etype, "object": self._as_version(rt, obj)}
                elif now_in:
                    yield {"type": etype, "object": self._as_version(rt, obj)}


def _load_json(raw: bytes) -> Any:
    import json

    try:
        return json.loads(raw.decode() or "null")
    except (ValueError, UnicodeDecodeError) as exc:
        raise APIError(400, "BadRequest", f"error decoding patch: {exc}") from exc
