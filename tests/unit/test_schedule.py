"""The converge's order (plan.order, graphlib) and which components it installs with helm's wait (plan.build_plan's
``wait``): one play converges the plan one component after the other, so every need comes first, and only what a
later component needs is waited for on the spot."""

from __future__ import annotations

import itertools
from pathlib import Path

import pytest
import yaml
from ansible_collections.modelplane.serving.plugins.module_utils.servingstack import components, plan, spec
from hypothesis import given, settings
from hypothesis import strategies as st

SITE = Path(__file__).resolve().parents[2] / "playbooks" / "site.yml"


def table_plans() -> list[tuple[str, list[dict]]]:
    """The plan of each stack, with and without a gateway hostname (the one conditional need)."""
    found = []
    for stack, hostname in itertools.product(sorted(components.BOTH), ("", "llm.example.com")):
        defaulted = spec.defaulted_spec()
        defaulted["stack"] = stack
        if hostname:
            defaulted["gateway"] = {**defaulted.get("gateway", {}), "hostname": hostname}
        found.append((f"{stack}{' with hostname' if hostname else ''}", plan.build_plan(defaulted)))
    return found


@pytest.mark.parametrize(("label", "entries"), table_plans(), ids=[label for label, _entries in table_plans()])
def test_every_need_comes_before_what_needs_it_and_is_waited_for(label, entries):
    position = {entry["name"]: index for index, entry in enumerate(entries)}
    for entry in entries:
        assert all(position[need] < position[entry["name"]] for need in entry["needs"]), (label, entry)
    assert {entry["name"] for entry in entries if entry["wait"]} == {need for e in entries for need in e["needs"]}


def test_only_cert_manager_and_nfd_are_waited_for_in_the_standard_stack_with_a_hostname():
    defaulted = spec.defaulted_spec()
    defaulted["gateway"] = {**defaulted.get("gateway", {}), "hostname": "llm.example.com"}
    assert [entry["name"] for entry in plan.build_plan(defaulted) if entry["wait"]] == ["cert_manager", "nfd"]


def test_without_a_hostname_the_gateway_needs_nothing_and_cert_manager_is_still_waited_for_trust_manager():
    entries = plan.build_plan(spec.defaulted_spec())
    gateway = next(entry for entry in entries if entry["name"] == "envoy_gateway")
    assert gateway["needs"] == [] and gateway["wait"] is False
    assert next(entry for entry in entries if entry["name"] == "cert_manager")["wait"] is True


@st.composite
def tables(draw) -> list[components.Component]:
    """Random acyclic tables: each component may need any earlier one."""
    count = draw(st.integers(min_value=1, max_value=8))
    names = [f"c{index}" for index in range(count)]
    found = []
    for index, name in enumerate(names):
        needs = tuple(draw(st.lists(st.sampled_from(names[:index]), unique=True)) if index else ())
        found.append(components.Component(name=name, title=name, namespace="ns", version_key="versions.x", needs=needs))
    return draw(st.permutations(found))


@settings(max_examples=200, deadline=None)
@given(tables())
def test_the_order_of_any_acyclic_table_places_every_need_first(table):
    placed = [component.name for component in plan.order(table)]
    assert sorted(placed) == sorted(component.name for component in table)
    for component in table:
        assert all(placed.index(need) < placed.index(component.name) for need in component.needs)


def test_site_is_one_play_running_the_servingstack_role():
    plays = yaml.safe_load(SITE.read_text())
    assert len(plays) == 1
    (play,) = plays
    assert play["roles"] == [{"role": "modelplane.serving.servingstack"}]
    assert "strategy" not in play
