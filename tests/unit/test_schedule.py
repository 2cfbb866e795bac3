"""Stages and lanes of the parallel converge (module_utils/servingstack/schedule.py) and the stage plays of site.yml."""

from __future__ import annotations

import itertools
import re
from pathlib import Path

import pytest
import yaml
from ansible_collections.modelplane.serving.plugins.module_utils.servingstack import components, plan, schedule, spec
from hypothesis import given, settings
from hypothesis import strategies as st

SITE = Path(__file__).resolve().parents[2] / "playbooks" / "site.yml"


def entry(name: str, needs: tuple[str, ...] = (), releases: int = 1) -> dict:
    return {"name": name, "needs": list(needs), "releases": [{"release": f"mp-{name}-{n}"} for n in range(releases)]}


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


def check_valid(entries: list[dict], stages: list[list[list[str]]]) -> None:
    """Each component once; each need converged before it: an earlier stage, or earlier on its own lane."""
    placed = [name for stage in stages for lane in stage for name in lane]
    assert sorted(placed) == sorted(item["name"] for item in entries)
    needs = {item["name"]: item["needs"] for item in entries}
    done: set[str] = set()
    for stage in stages:
        assert stage and all(stage), stages
        for lane in stage:
            for position, name in enumerate(lane):
                missing = [need for need in needs[name] if need not in done and need not in lane[:position]]
                assert missing == [], f"{name} starts before {missing}: {stages}"
        done |= {name for lane in stage for name in lane}


@pytest.mark.parametrize(("label", "entries"), table_plans(), ids=lambda value: value if isinstance(value, str) else "")
def test_the_table_plans_converge_in_the_critical_path(label, entries):
    stages = schedule.stages(entries)
    check_valid(entries, stages)
    # No schedule does better than the longest chain of helm waits; these reach it.
    assert schedule.estimate(entries) == schedule.critical_path(entries), (label, stages)


def test_standard_without_hostname_is_one_stage_with_cert_manager_and_trust_manager_on_one_lane():
    stages = schedule.stages(plan.build_plan(spec.defaulted_spec()))
    assert len(stages) == 1
    assert ["cert_manager", "trust_manager"] in stages[0] and ["nfd", "nvidia_dra"] in stages[0]
    assert stages[0][0] == ["envoy_gateway"], "the heaviest lane (three releases) comes first"


def test_a_hostname_starts_envoy_gateway_after_cert_manager():
    defaulted = spec.defaulted_spec()
    defaulted["gateway"] = {**defaulted.get("gateway", {}), "hostname": "llm.example.com"}
    stages = schedule.stages(plan.build_plan(defaulted))
    assert len(stages) == 2
    assert ["cert_manager"] in stages[0] and ["envoy_gateway"] in stages[1]


def test_a_chain_shares_one_lane_rather_than_waiting_a_stage():
    entries = [entry("a"), entry("b", ("a",)), entry("c", ("b",)), entry("slow", releases=3)]
    assert schedule.stages(entries) == [[["a", "b", "c"], ["slow"]]]


def test_a_component_needing_two_lanes_waits_for_the_next_stage():
    entries = [entry("a"), entry("b"), entry("c", ("a", "b"))]
    assert schedule.stages(entries) == [[["a"], ["b"]], [["c"]]]


def test_a_component_with_slack_starts_late_when_that_shortens_the_converge():
    # grove (2 waits) beside cert-manager (1) would make the first stage 2 long; beside the gateway (3), it is free.
    entries = [entry("cm"), entry("grove", releases=2), entry("gw", ("cm",), releases=3), entry("tm", ("cm",))]
    stages = schedule.stages(entries)
    assert stages == [[["cm"]], [["gw"], ["grove"], ["tm"]]], stages
    assert schedule.estimate(entries) == 4 == schedule.critical_path(entries)


def role_tasks(name: str) -> list[dict]:
    """A task file of the servingstack role, its strings trusted as templates, as Ansible loads it."""
    from ansible.parsing.dataloader import DataLoader

    return DataLoader().load_from_file(str(SITE.parents[1] / "roles" / "servingstack" / "tasks" / name),
                                       trusted_as_template=True)


def templated(value, **variables):
    from ansible.parsing.dataloader import DataLoader
    from ansible.template import Templar

    return Templar(loader=DataLoader(), variables=variables).template(value)


def test_lanes_and_their_hosts_name_their_stage_weight_and_plan_entries():
    entries = [entry("a"), entry("b", ("a",)), entry("c", releases=3)]
    lanes = schedule.lanes(entries)
    assert lanes == [{"stage": 1, "components": ["c"], "weight": 3},
                     {"stage": 1, "components": ["a", "b"], "weight": 2}]
    # handoff.yml: the cluster's lanes, each on a host <cluster>/<first component> with its plan entries.
    [note, add] = role_tasks("handoff.yml")
    cluster = {"servingstack_lanes": lanes, "servingstack_plan": entries, "inventory_hostname": "team-a/gpu"}
    noted = templated(note["ansible.builtin.set_fact"], **cluster)
    assert noted["servingstack_lane_peers"] == ["team-a/gpu/c", "team-a/gpu/a"]
    hostvars = {"team-a/gpu": {**cluster, **noted, "group_names": ["servingstacks"]}}
    lane_hosts = templated(add["loop"], ansible_play_hosts=["team-a/gpu"], hostvars=hostvars)
    hosts = [templated(add["ansible.builtin.add_host"], servingstack_lane_host=lane, hostvars=hostvars,
                       ansible_playbook_python="python3") for lane in lane_hosts]
    assert [host["name"] for host in hosts] == noted["servingstack_lane_peers"]
    assert hosts[1]["servingstack_converge_list"] == [entries[0], entries[1]]
    assert hosts[1]["servingstack_cluster"] == "team-a/gpu"
    assert hosts[1]["groups"] == ["servingstack_lanes", "servingstack_stage_1", "servingstacks"]


def test_add_host_is_reached_only_through_the_parallel_include():
    # The free strategy refuses a task that bypasses the host loop as soon as it reaches one, skipped or not: a play
    # with strategy free that runs the role without the stages must never reach add_host.
    tasks = SITE.parents[1] / "roles" / "servingstack" / "tasks"
    assert [path.name for path in sorted(tasks.glob("*.yml")) if "add_host" in path.read_text()] == ["handoff.yml"]
    [converge] = role_tasks("main.yml")
    [target] = [task["block"] for task in converge["block"] if task["name"] == "Work on the target cluster."]
    [handoff] = [task for task in target if task.get("ansible.builtin.include_tasks") == "handoff.yml"]
    assert "servingstack_parallel" in handoff["when"]


def test_site_has_a_stage_play_for_every_stage_any_plan_can_have():
    plays = yaml.safe_load(SITE.read_text())
    # A stage play's hosts: its group once the first play added it (else no host, without a warning).
    stage_hosts = [re.sub(r"^\{\{ '(servingstack_stage_\d+)' if '\1' in groups else 'all:!all' \}\}$", r"\1",
                          str(play["hosts"])) for play in plays]
    stage_hosts = [hosts for hosts in stage_hosts if hosts.startswith("servingstack_stage_")]
    deepest = max(len(schedule.stages(entries)) for _label, entries in table_plans())
    # Every depth of the table could be a stage of some plan; a missing play would leave its lanes unconverged.
    with_hostname = {**spec.defaulted_spec(), "gateway": {"hostname": "x"}}
    depth = max(schedule.depths([plan.component_entry(component, with_hostname)
                                 for component in plan.order(list(components.COMPONENTS))]).values()) + 1
    assert stage_hosts == [f"servingstack_stage_{number}" for number in range(1, max(deepest, depth) + 1)]
    assert all(play.get("strategy") == "free" for play in plays if "servingstack_stage_" in str(play["hosts"]))


def test_the_cluster_plays_run_on_the_chosen_servingstacks_never_on_lane_hosts():
    from ansible_collections.modelplane.serving.plugins.filter.fleet import servingstack_cluster_hosts

    assert servingstack_cluster_hosts({"all": [], "ungrouped": []}) == "localhost"
    assert servingstack_cluster_hosts({"all": [], "servingstacks": ["a/b"]}) == "servingstacks"
    assert servingstack_cluster_hosts({"servingstacks": ["a/b"]}, "region_east") == "region_east"
    # Once site.yml's first play has put lanes on hosts of their own, its last play leaves them out.
    lanes = {"servingstacks": ["a/b"], "servingstack_lanes": ["a/b/1"]}
    assert servingstack_cluster_hosts(lanes) == "servingstacks:!servingstack_lanes"
    assert servingstack_cluster_hosts(lanes, "all") == "all:!servingstack_lanes"
    # Every playbook that converges, tears down or reports on clusters picks them with it.
    for playbook in ("site.yml", "teardown.yml", "status.yml"):
        first = yaml.safe_load((SITE.parent / playbook).read_text())[0]
        assert "modelplane.serving.servingstack_cluster_hosts(" in first["hosts"], playbook


@st.composite
def random_plans(draw) -> list[dict]:
    count = draw(st.integers(min_value=1, max_value=8))
    entries = []
    for index in range(count):
        earlier = [f"c{n}" for n in range(index)]
        needs = draw(st.lists(st.sampled_from(earlier), unique=True, max_size=3)) if index else []
        entries.append(entry(f"c{index}", tuple(needs), draw(st.integers(min_value=0, max_value=3))))
    return entries


@settings(max_examples=150, deadline=None)
@given(random_plans())
def test_any_plan_gets_a_valid_schedule_no_shorter_than_its_critical_path_nor_longer_than_serial(entries):
    stages = schedule.stages(entries)
    check_valid(entries, stages)
    assert schedule.critical_path(entries) <= schedule.estimate(entries) <= sum(map(schedule.weight, entries))
    assert len(stages) <= max(schedule.depths(entries).values()) + 1


def test_unmet_needs_are_the_needs_not_converged_nor_previewed():
    [converge] = role_tasks("present_component.yml")
    outcomes = {"a": {"state": "converged"}, "b": {"state": "previewed"}, "c": {"state": "failed", "msg": "x"}}
    for needs, unmet in ((["a", "b", "c", "d"], ["c", "d"]), ([], [])):
        assert templated(converge["vars"]["servingstack_unmet_needs"], servingstack_known_outcomes=outcomes,
                         servingstack_component_entry={"needs": needs}) == unmet
