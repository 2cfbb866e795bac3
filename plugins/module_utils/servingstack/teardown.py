# Copyright 2026 The modelplane.serving authors
# Apache License 2.0 (see LICENSE)
"""Teardown order, from the components table alone: the reverse of install order, the ``ingress`` components
first (``components.Component`` says why)."""

from __future__ import annotations

from collections.abc import Iterable

from ansible_collections.modelplane.serving.plugins.module_utils.servingstack.components import BY_NAME, COMPONENTS
from ansible_collections.modelplane.serving.plugins.module_utils.servingstack.plan import order


def teardown_order(names: Iterable[str]) -> list[str]:
    """``names`` (components of the table, in any order) in the order they are torn down.

    Raises ValueError naming a component the table does not have.
    """
    wanted = list(dict.fromkeys(names))
    unknown = [name for name in wanted if name not in BY_NAME]
    if unknown:
        raise ValueError(f"not components of modelplane.serving: {', '.join(unknown)}")
    down = order([component for component in COMPONENTS if component.name in wanted])[::-1]
    return [component.name for component in sorted(down, key=lambda component: not component.ingress)]
