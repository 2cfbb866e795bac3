# Copyright 2026 The modelplane.serving authors
# Apache License 2.0 (see LICENSE)
"""The install plan: the components of a stack, in dependency order, with resolved versions.

Everything comes from ``components.COMPONENTS``; this module only orders and resolves.
``build_plan`` takes a *defaulted* spec (``spec.validate(...).manifest["spec"]`` or
``spec.defaulted_spec(...)``).
"""

from __future__ import annotations

import graphlib

from ansible_collections.modelplane.serving.plugins.module_utils.servingstack.components import (
    COMPONENTS,
    RELEASE_PREFIX,
    Chart,
    Component,
    Manifest,
)


def resolve(spec: dict, key: str) -> object:
    """The value at a dotted spec path such as ``versions.certManager`` (None when absent)."""
    node: object = spec
    for part in key.split("."):
        node = node.get(part) if isinstance(node, dict) else None
    return node


def order(components: tuple[Component, ...] | list[Component]) -> list[Component]:
    """Topological order by ``needs`` (``graphlib``), ties broken by table order: of the components whose needs
    are placed, the first in the table goes next.

    Raises ValueError on a need outside ``components`` or a cycle (a unit test runs this over every stack,
    so a broken table fails the tests, not a run).
    """
    by_name = {component.name: component for component in components}
    needs = {component.name: component.needs + tuple(name for name, _path in component.needs_if)
             for component in components}
    for name, wanted in needs.items():
        unknown = [need for need in wanted if need not in by_name]
        if unknown:
            raise ValueError(f"component {name} needs {', '.join(unknown)}, which is not in the plan")
    sorter = graphlib.TopologicalSorter(needs)
    try:
        sorter.prepare()
    except graphlib.CycleError as error:
        raise ValueError(f"components {', '.join(dict.fromkeys(error.args[1]))} need each other (a cycle)") from None
    rank = {name: index for index, name in enumerate(by_name)}
    placed: list[Component] = []
    ready: list[str] = []
    while sorter.is_active():
        ready = sorted([*ready, *sorter.get_ready()], key=rank.__getitem__)
        name = ready.pop(0)
        placed.append(by_name[name])
        sorter.done(name)
    return placed


def components_for(stack: str) -> list[Component]:
    """The components of ``stack`` in install order."""
    return order([component for component in COMPONENTS if stack in component.stacks])


def applies(manifest: Manifest, spec: dict) -> bool:
    """Whether the component makes ``manifest``'s objects for ``spec`` (an unset or empty value is the default)."""
    if manifest.unless is None:
        return True
    path, default = manifest.unless
    return resolve(spec, path) not in (None, "", default)


def release_entry(chart: Chart, spec: dict) -> dict:
    """One Helm release of a component, as the roles pass it to kubernetes.core.helm: ``chart_ref`` is the chart's
    oci:// reference, or its name in the repository at ``chart_repo_url``."""
    oci = chart.ref.startswith("oci://")
    return {
        "release": RELEASE_PREFIX + chart.name,
        "chart": chart.name,
        "chart_ref": chart.ref if oci else chart.name,
        "chart_repo_url": None if oci else chart.ref,
        "version": resolve(spec, chart.version_key) if chart.version_key else chart.version,
        "namespace": chart.namespace,
        "version_key": chart.version_key,
        "atomic": chart.atomic,
        "crd_groups": list(chart.crd_groups),
    }


def component_entry(component: Component, spec: dict) -> dict:
    """One component of the plan, with its versions resolved from the defaulted spec."""
    return {
        "name": component.name,
        "role": f"modelplane.serving.{component.name}",
        "title": component.title,
        "namespace": component.namespace,
        "version_key": component.version_key,
        "version": resolve(spec, component.version_key),
        "needs": list(component.needs) + [name for name, path in component.needs_if if resolve(spec, path)],
        "releases": [release_entry(chart, spec) for chart in component.charts],
        "manifests": [manifest.name for manifest in component.manifests if applies(manifest, spec)],
        "ingress": component.ingress,
    }


def needed(entries: list[dict]) -> set[str]:
    """The components of ``entries`` (plan entries) that a component of ``entries`` needs."""
    return {need for entry in entries for need in entry["needs"]}


def build_plan(spec: dict) -> list[dict]:
    """The ordered components to install for ``spec["stack"]`` (a defaulted spec). ``wait``: a later component
    needs it, so its releases are installed with helm's wait (and atomic); the others' workloads are waited for
    once, at the end of the converge."""
    entries = [component_entry(component, spec) for component in components_for(spec["stack"])]
    wanted = needed(entries)
    return [{**entry, "wait": entry["name"] in wanted} for entry in entries]


def prune_plan(spec: dict) -> list[dict]:
    """The components of the other stack, in teardown order (reverse install order): what a converge uninstalls
    when it finds them installed, after switching ``spec["stack"]`` (Standard -> Dynamo removes lws, and back)."""
    others = [component for component in COMPONENTS if spec["stack"] not in component.stacks]
    return [component_entry(component, spec) for component in reversed(order(others))]
