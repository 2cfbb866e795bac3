# Copyright 2026 The modelplane.serving authors
# Apache License 2.0 (see LICENSE)
"""Stages and lanes: how ``playbooks/site.yml`` converges a plan's components in parallel.

A *stage* is one play of ``site.yml``; its *lanes* run at the same time, each on an inventory host of its
own, and each converges its components one after the other. Every component's needs are converged before
it starts: in an earlier stage, or earlier in its own lane. So no host ever waits for another (Ansible's
play boundaries are the only synchronisation), any number of forks works, and a fleet of clusters is just
more lanes in the same stages.

A component goes into a stage no earlier than what it needs; in the same stage as a need, it joins that
need's lane, after it. Of all such schedules the one with the fewest helm waits wins (a stage lasts as long
as its longest lane, and a lane takes one helm wait per release: ``weight``), then the one with fewer
stages. For the Standard stack without a hostname this gives one stage (cert-manager then
trust-manager on one lane, beside Envoy Gateway's three releases); with a hostname, two stages, Envoy Gateway
starting once cert-manager has converged. Both equal the critical path: the longest chain of helm waits.
"""

from __future__ import annotations

from typing import Any


def weight(entry: dict[str, Any]) -> int:
    """Estimated time of one component: one helm wait per release, one for a component of manifests only."""
    return max(1, len(entry.get("releases") or ()))


def _weights(plan: list[dict[str, Any]]) -> dict[str, int]:
    return {entry["name"]: weight(entry) for entry in plan}


def depths(plan: list[dict[str, Any]]) -> dict[str, int]:
    """Each component's dependency depth: 0 when it needs nothing, else one more than its deepest need.

    ``plan`` is in install order (every need before what needs it), as ``plan.build_plan`` returns it.
    """
    depth: dict[str, int] = {}
    for entry in plan:
        depth[entry["name"]] = 1 + max((depth[need] for need in entry["needs"]), default=-1)
    return depth


def _lanes_of(names: list[str], needs: dict[str, list[str]]) -> list[list[str]]:
    """The lanes of one stage: its components grouped with what they need in the same stage, in plan order."""
    group = {name: name for name in names}

    def root(name: str) -> str:
        while group[name] != name:
            name = group[name]
        return name

    for name in names:
        for need in needs[name]:
            if need in group:
                group[root(name)] = root(need)
    lanes: dict[str, list[str]] = {}
    for name in names:
        lanes.setdefault(root(name), []).append(name)
    return list(lanes.values())


def _cost(assignment: dict[str, int], order: list[str], needs: dict[str, list[str]],
          weights: dict[str, int]) -> tuple[int, int, int]:
    """How good an assignment of components to stages is, smallest best: the helm waits of the stages one
    after another (each as long as its longest lane), then the number of stages (plays), then how late the
    components start."""
    total = 0
    for stage in sorted(set(assignment.values())):
        names = [name for name in order if assignment[name] == stage]
        total += max(sum(weights[name] for name in lane) for lane in _lanes_of(names, needs))
    return total, len(set(assignment.values())), sum(assignment.values())


# Partial schedules the search looks at, at most: today's tables need a few hundred.
SEARCH_BUDGET = 5000


def stages(plan: list[dict[str, Any]]) -> list[list[list[str]]]:
    """The plan's components as stages of lanes of component names, heaviest lane first in a stage.

    Every assignment of components to stages (no more stages than dependency depths, never before what a
    component needs) is weighed by ``_cost``; a plan has a handful of components, so the search is small.
    """
    order = [entry["name"] for entry in plan]
    weights = _weights(plan)
    needs = {entry["name"]: list(entry["needs"]) for entry in plan}
    # Start from the dependency depths (always valid); the search may only improve on it. Its size is capped,
    # so a table far larger than today's still plans at once, if less well.
    by_depth = depths(plan)
    count = max(by_depth.values(), default=-1) + 1
    floor = critical_path(plan)
    best: tuple[tuple[int, int, int], dict[str, int]] = (_cost(by_depth, order, needs, weights), by_depth)
    budget = [SEARCH_BUDGET]

    def place(index: int, assignment: dict[str, int]) -> None:
        nonlocal best
        budget[0] -= 1
        if budget[0] < 0:
            return
        # Stage numbers close up (0, 2 -> 0, 1) so that the cost counts stages, not gaps.
        used = {stage: rank for rank, stage in enumerate(sorted(set(assignment.values())))}
        closed = {name: used[stage] for name, stage in assignment.items()}
        cost = _cost(closed, order[:index], needs, weights)
        # Placing more components never lowers the cost, nor does any schedule beat the critical path: a partial
        # schedule that cannot do better than the best found ends here.
        if (max(cost[0], floor), *cost[1:]) >= best[0]:
            return
        if index == len(order):
            best = (cost, closed)
            return
        name = order[index]
        for stage in range(max((assignment[need] for need in needs[name]), default=0), count):
            place(index + 1, {**assignment, name: stage})

    place(0, {})
    assignment = best[1]
    return [
        sorted(_lanes_of([name for name in order if assignment[name] == stage], needs),
               key=lambda lane: -sum(weights[name] for name in lane))
        for stage in range(len(set(assignment.values())))
    ]


def lanes(plan: list[dict[str, Any]]) -> list[dict[str, Any]]:
    """Every lane of ``stages(plan)``, heaviest first within a stage: ``stage`` (1-based), ``components`` (names
    in converge order) and ``weight`` (estimated helm waits), as ``servingstack_spec`` returns them."""
    weights = _weights(plan)
    return [{"stage": index, "components": lane, "weight": sum(weights[name] for name in lane)}
            for index, stage in enumerate(stages(plan), start=1) for lane in stage]


def critical_path(plan: list[dict[str, Any]]) -> int:
    """The longest chain of helm waits the plan imposes: a component's releases one after another, after the
    longest chain of what it needs. No schedule can converge in fewer waits."""
    finish: dict[str, int] = {}
    for entry in plan:
        finish[entry["name"]] = weight(entry) + max((finish[need] for need in entry["needs"]), default=0)
    return max(finish.values(), default=0)


def estimate(plan: list[dict[str, Any]]) -> int:
    """The helm waits the stages take, one after another: each stage as long as its longest lane."""
    weights = _weights(plan)
    return sum(max(sum(weights[name] for name in lane) for lane in stage) for stage in stages(plan))
