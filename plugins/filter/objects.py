# Copyright 2026 The modelplane.serving authors
# Apache License 2.0 (see LICENSE)
"""Filter turning an object read from the cluster into the reference a deletion needs."""

from __future__ import annotations

from typing import Any


def servingstack_object_ref(obj: dict[str, Any]) -> dict[str, Any]:
    """``{apiVersion, kind, metadata: {name[, namespace]}}`` of an object: what a deletion needs, none of its data."""
    metadata = obj.get("metadata") or {}
    ref = {"name": metadata.get("name")}
    if metadata.get("namespace"):
        ref["namespace"] = metadata["namespace"]
    return {"apiVersion": obj.get("apiVersion"), "kind": obj.get("kind"), "metadata": ref}


class FilterModule:
    """modelplane.serving object filters."""

    def filters(self) -> dict[str, Any]:
        return {"servingstack_object_ref": servingstack_object_ref}
