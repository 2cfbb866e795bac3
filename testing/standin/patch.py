"""Patch flavours the API server accepts: JSON merge, JSON patch, strategic merge, server-side apply."""

from __future__ import annotations

import copy
import json
from typing import Any


class PatchError(Exception):
    """A patch that cannot be applied (answered with 422, or 400 for a malformed body)."""

    def __init__(self, message: str, code: int = 422) -> None:
        super().__init__(message)
        self.code = code


# ---------------------------------------------------------------- JSON merge patch (RFC 7386)


def merge_patch(target: Any, patch: Any) -> Any:
    if not isinstance(patch, dict):
        return copy.deepcopy(patch)
    result = copy.deepcopy(target) if isinstance(target, dict) else {}
    for key, value in patch.items():
        if value is None:
            result.pop(key, None)
        else:
            result[key] = merge_patch(result.get(key), value)
    return result


# ---------------------------------------------------------------- JSON patch (RFC 6902)


def _unescape(token: str) -> str:
    return token.replace("~1", "/").replace("~0", "~")


def _walk(doc: Any, pointer: str) -> tuple[Any, str]:
    if not pointer.startswith("/"):
        raise PatchError(f"invalid JSON pointer {pointer!r}", 400)
    parts = [_unescape(p) for p in pointer.split("/")[1:]]
    parent = doc
    for part in parts[:-1]:
        if isinstance(parent, list):
            try:
                parent = parent[int(part)]
            except (ValueError, IndexError) as exc:
                raise PatchError(f"jsonpatch: path {pointer!r} does not exist") from exc
        elif isinstance(parent, dict) and part in parent:
            parent = parent[part]
        else:
            raise PatchError(f"jsonpatch: path {pointer!r} does not exist: missing value")
    return parent, parts[-1]


def _get(doc: Any, pointer: str) -> Any:
    if pointer == "":
        return doc
    parent, key = _walk(doc, pointer)
    try:
        return parent[int(key)] if isinstance(parent, list) else parent[key]
    except (KeyError, ValueError, IndexError, TypeError) as exc:
        raise PatchError(f"jsonpatch: path {pointer!r} does not exist: missing value") from exc


def _add(doc: Any, pointer: str, value: Any) -> Any:
    if pointer == "":
        return value
    parent, key = _walk(doc, pointer)
    if isinstance(parent, list):
        index = len(parent) if key == "-" else int(key)
        if index > len(parent):
            raise PatchError(f"jsonpatch: add index {index} out of bounds")
        parent.insert(index, value)
    elif isinstance(parent, dict):
        parent[key] = value
    else:
        raise PatchError(f"jsonpatch: cannot add to {pointer!r}")
    return doc


def _remove(doc: Any, pointer: str) -> Any:
    parent, key = _walk(doc, pointer)
    try:
        if isinstance(parent, list):
            del parent[int(key)]
        else:
            del parent[key]
    except (KeyError, ValueError, IndexError, TypeError) as exc:
        raise PatchError(f"jsonpatch: remove: path {pointer!r} does not exist: missing value") from exc
    return doc


def json_patch(target: Any, ops: Any) -> Any:
    if not isinstance(ops, list):
        raise PatchError("json patch must be a list of operations", 400)
    doc = copy.deepcopy(target)
    for op in ops:
        kind, path = op.get("op"), op.get("path", "")
        if kind == "add":
            doc = _add(doc, path, copy.deepcopy(op.get("value")))
        elif kind == "remove":
            doc = _remove(doc, path)
        elif kind == "replace":
            _get(doc, path)
            doc = _add(_remove(doc, path), path, copy.deepcopy(op.get("value")))
        elif kind == "move":
            value = _get(doc, op["from"])
            doc = _add(_remove(doc, op["from"]), path, value)
        elif kind == "copy":
            doc = _add(doc, path, copy.deepcopy(_get(doc, op["from"])))
        elif kind == "test":
            if _get(doc, path) != op.get("value"):
                raise PatchError(f"jsonpatch: testing value {path} failed")
        else:
            raise PatchError(f"jsonpatch: unknown operation {kind!r}", 400)
    return doc


# ---------------------------------------------------------------- strategic merge patch

# patchMergeKey of the common core types, by list field name; `None` means a primitive list merged as a set.
# Lists not named here have no patch strategy and are replaced whole, as in the Go types.
_MERGE_KEYS: dict[str, str | None] = {
    "containers": "name",
    "initContainers": "name",
    "ephemeralContainers": "name",
    "env": "name",
    "volumes": "name",
    "volumeMounts": "mountPath",
    "volumeDevices": "devicePath",
    "imagePullSecrets": "name",
    "hostAliases": "ip",
    "ownerReferences": "uid",
    "conditions": "type",
    "finalizers": None,
    "resourceClaims": "name",
    "topologySpreadConstraints": "topologyKey",
}


def merge_key(kind: str, path: tuple[str, ...], field: str) -> tuple[bool, str | None]:
    """(merge?, key) for the list at `path + field` of an object of `kind`."""
    if field == "ports":
        if kind == "Service" and path == ("spec",):
            return True, "port"
        if path and path[-1] in ("containers", "initContainers", "ephemeralContainers"):
            return True, "containerPort"
        return False, None
    if field == "finalizers" and path not in ((), ("metadata",)):
        return False, None
    if field in _MERGE_KEYS:
        return True, _MERGE_KEYS[field]
    return False, None


def strategic_merge(target: Any, patch: Any, kind: str, path: tuple[str, ...] = ()) -> Any:
    if not isinstance(patch, dict):
        return copy.deepcopy(patch)
    if patch.get("$patch") == "replace":
        return {k: copy.deepcopy(v) for k, v in patch.items() if k != "$patch"}
    if patch.get("$patch") == "delete":
        return None
    result = copy.deepcopy(target) if isinstance(target, dict) else {}
    retain = patch.get("$retainKeys")
    orders: dict[str, list[Any]] = {}
    for key, value in patch.items():
        if key in ("$patch", "$retainKeys"):
            continue
        if key.startswith("$setElementOrder/"):
            orders[key.split("/", 1)[1]] = value
            continue
        if key.startswith("$deleteFromPrimitiveList/"):
            field = key.split("/", 1)[1]
            if isinstance(result.get(field), list):
                result[field] = [v for v in result[field] if v not in value]
            continue
        if value is None:
            result.pop(key, None)
            continue
        if isinstance(value, list):
            merge, mkey = merge_key(kind, path, key)
            if merge and isinstance(result.get(key), list):
                result[key] = _merge_list(result[key], value, mkey, kind, (*path, key))
            else:
                result[key] = [_strip(v) for v in value]
            continue
        if isinstance(value, dict):
            result[key] = strategic_merge(result.get(key), value, kind, (*path, key))
            if result[key] is None:
                del result[key]
            continue
        result[key] = copy.deepcopy(value)
    for field, order in orders.items():
        if isinstance(result.get(field), list):
            _merge_kind, mkey = merge_key(kind, path, field)
            result[field] = _reorder(result[field], order, mkey)
    if isinstance(retain, list):
        result = {k: v for k, v in result.items() if k in retain}
    return result


def _strip(value: Any) -> Any:
    """Remove patch directives from a value that replaces the original outright."""
    if isinstance(value, dict):
        return {k: _strip(v) for k, v in value.items() if not k.startswith("$")}
    if isinstance(value, list):
        return [_strip(v) for v in value]
    return value


def _merge_list(current: list[Any], patch: list[Any], mkey: str | None, kind: str,
                path: tuple[str, ...]) -> list[Any]:
    if mkey is None:  # primitive set
        out = list(current)
        for item in patch:
            if item not in out:
                out.append(item)
        return out
    if any(isinstance(item, dict) and item.get("$patch") == "replace" for item in patch):
        return [_strip(i) for i in patch if not (isinstance(i, dict) and i.get("$patch") == "replace")]
    out = [copy.deepcopy(i) for i in current]
    for item in patch:
        if not isinstance(item, dict) or mkey not in item:
            raise PatchError(f"map: {item!r} does not contain declared merge key: {mkey}")
        index = next((i for i, cur in enumerate(out) if isinstance(cur, dict) and cur.get(mkey) == item[mkey]), None)
        if item.get("$patch") == "delete":
            if index is not None:
                del out[index]
            continue
        if index is None:
            out.append(_strip(item))
        else:
            out[index] = strategic_merge(out[index], item, kind, path)
    return out


def _reorder(items: list[Any], order: list[Any], mkey: str | None) -> list[Any]:
    def ident(item: Any) -> Any:
        return item.get(mkey) if mkey and isinstance(item, dict) else item

    wanted = [ident(o) for o in order]
    ranked = [i for w in wanted for i in items if ident(i) == w]
    rest = [i for i in items if ident(i) not in wanted]
    return ranked + rest


# ---------------------------------------------------------------- server-side apply


def _leaves(value: Any, prefix: tuple[Any, ...] = (), kind: str = "",
            path: tuple[str, ...] = ()) -> dict[tuple[Any, ...], Any]:
    """Field paths of an applied configuration; associative lists (the strategic merge keys of `kind`) are
    keyed by their merge key, as `[name="web"]`, other lists are atomic."""
    out: dict[tuple[Any, ...], Any] = {}
    if isinstance(value, dict) and value:
        for key, item in value.items():
            if isinstance(item, list) and item and kind:
                merge, mkey = merge_key(kind, path, key)
                if merge and mkey and all(isinstance(i, dict) and mkey in i for i in item):
                    for entry in item:
                        selector = f"[{mkey}={json.dumps(entry[mkey])}]"
                        out.update(_leaves(entry, (*prefix, key, selector), kind, (*path, key)))
                    continue
            out.update(_leaves(item, (*prefix, key), kind, (*path, key)))
    else:
        out[prefix] = value
    return out


def _field_path(field: tuple[Any, ...]) -> str:
    """`spec.template.spec.containers[name="web"].image` (the API server's conflict wording, without the
    leading dot)."""
    text = "".join(str(p) if str(p).startswith("[") else f".{p}" for p in field)
    return text[1:] if text.startswith(".") else text


def apply_merge(live: Any, applied: Any, previous: Any, kind: str, path: tuple[str, ...] = ()) -> Any:
    """Merge an applied configuration into the live object.

    Fields the same manager applied before (`previous`) but no longer applies are removed;
    maps merge recursively; lists with a merge key merge by it, other lists are replaced.
    """
    if not isinstance(applied, dict):
        return copy.deepcopy(applied)
    result = copy.deepcopy(live) if isinstance(live, dict) else {}
    if isinstance(previous, dict):
        for key in previous:
            if key not in applied and key in result:
                del result[key]
    for key, value in applied.items():
        prev = previous.get(key) if isinstance(previous, dict) else None
        if isinstance(value, dict):
            result[key] = apply_merge(result.get(key), value, prev, kind, (*path, key))
        elif isinstance(value, list):
            merge, mkey = merge_key(kind, path, key)
            if merge and mkey and isinstance(result.get(key), list):
                result[key] = _apply_list(result[key], value, prev, mkey, kind, (*path, key))
            else:
                result[key] = copy.deepcopy(value)
        else:
            result[key] = copy.deepcopy(value)
    return result


def _apply_list(live: list[Any], applied: list[Any], previous: Any, mkey: str, kind: str,
                path: tuple[str, ...]) -> list[Any]:
    prev_items = {i.get(mkey): i for i in previous or [] if isinstance(i, dict)}
    applied_keys = {i.get(mkey) for i in applied if isinstance(i, dict)}
    out = [i for i in live if not (isinstance(i, dict) and i.get(mkey) in prev_items
                                   and i.get(mkey) not in applied_keys)]
    for item in applied:
        index = next((n for n, cur in enumerate(out) if isinstance(cur, dict) and cur.get(mkey) == item.get(mkey)),
                     None)
        if index is None:
            out.append(copy.deepcopy(item))
        else:
            out[index] = apply_merge(out[index], item, prev_items.get(item.get(mkey)), kind, path)
    return out


def apply_conflicts(live: Any, applied: Any, others: dict[str, Any], kind: str = "") -> list[tuple[str, str]]:
    """(manager, field) pairs where another apply manager owns a field this apply changes."""
    mine = _leaves(applied, kind=kind)
    live_leaves = _leaves(live, kind=kind)
    conflicts = []
    for manager, config in others.items():
        theirs = _leaves(config, kind=kind)
        for field, value in mine.items():
            if field in theirs and theirs[field] != value and live_leaves.get(field) != value:
                conflicts.append((manager, _field_path(field)))
    return conflicts
