# Copyright 2026 The modelplane.serving authors
# Apache License 2.0 (see LICENSE)
"""Teardown order, from the components table alone.

The reverse of install order (what needs another component goes before it), with the components requests enter
through (``ingress`` in the table: the gateway) first, so no request reaches a stack half torn down.
"""

from __future__ import annotations

from collections.abc import Iterable
from typing import Any

from ansible_collections.modelplane.serving.plugins.module_utils.servingstack.components import COMPONENTS
from ansible_collections.modelplane.serving.plugins.module_utils.servingstack.plan import order


def teardown_order(names: Iterable[str]) -> list[str]:
    """``names`` (components of the table, in any order) in the order they are torn down.

    Raises ValueError naming a component the table does not have.
    """
    wanted = list(dict.fromkeys(names))
    known = {component.name for component in COMPONENTS}
    unknown = [name for name in wanted if name not in known]
    if unknown:
        raise ValueError(f"not components of modelplane.serving: {', '.join(unknown)}")
    down = list(reversed(order([component for component in COMPONENTS if component.name in wanted])))
    return [component.name for component in down if component.ingress] \
        + [component.name for component in down if not component.ingress]


def objects_for(state: str, objects: list[dict[str, Any]], remove_crds: bool) -> list[dict[str, Any]]:
    """What a converge to ``state`` does with a component's ``objects`` (in the order they are applied): all of them,
    in that order, when present; when absent the last applied first, and CRDs only with ``remove_crds`` (deleting a
    CRD deletes every object of its kind)."""
    if state == "present":
        return list(objects)
    return [obj for obj in reversed(objects) if remove_crds or obj.get("kind") != "CustomResourceDefinition"]
