"""The preflight (module_utils/servingstack/preflight.py, the servingstack_preflight lookup, the servingstack role's
steps): the Kubernetes floor from the pinned charts, the DRA API, the load-balancer warning, and the Helm releases and
CRDs of the planned charts that another release owns."""

from __future__ import annotations

import base64
import gzip
import json
import re
from pathlib import Path
from typing import Any

import pytest
import yaml
from ansible.errors import AnsibleLookupError
from ansible_collections.modelplane.serving.plugins.module_utils.servingstack import (
    kubeclient,
    plan,
    preflight,
    spec,
    versions,
)
from ansible_collections.modelplane.serving.plugins.module_utils.servingstack.components import COMPONENTS

REPO = Path(__file__).resolve().parents[2]
UPSTREAM = REPO.parent / "shared" / "upstream"
ROLE = REPO / "roles" / "servingstack"
SECRETS = [{"type": "Kubeconfig", "name": "k", "key": "kubeconfig"}]
STANDARD = plan.build_plan(spec.defaulted_spec({"secrets": SECRETS}))
DYNAMO = plan.build_plan(spec.defaulted_spec({"secrets": SECRETS, "stack": "Dynamo"}))
# What kube-apiserver v1.36 serves of resource.k8s.io by default (pkg/controlplane/instance.go: v1 stable, the betas
# and v1alpha3 disabled by default).
DRA_V1 = {"groups": [{"name": "apps", "versions": [{"version": "v1"}]},
                     {"name": "resource.k8s.io", "versions": [{"version": "v1"}]}]}
NO_DRA = {"groups": [{"name": "apps", "versions": [{"version": "v1"}]}]}
CLOUD_NODE = {"metadata": {"name": "n1"}, "spec": {"providerID": "gce://project/zone/n1"},
              "status": {"addresses": [{"type": "InternalIP", "address": "10.0.0.2"}]}}
BARE_NODE = {"metadata": {"name": "n1"}, "spec": {},
             "status": {"addresses": [{"type": "InternalIP", "address": "10.0.0.2"},
                                      {"type": "Hostname", "address": "n1"}]}}


def with_pins(**pins: str) -> list[dict[str, Any]]:
    return plan.build_plan(spec.defaulted_spec({"secrets": SECRETS, "versions": pins}))


def without(names: set[str], the_plan: list[dict[str, Any]] = STANDARD) -> list[dict[str, Any]]:
    return [component for component in the_plan if component["name"] not in names]


# --------------------------------------------------------------------------- the table of kubeVersion constraints


def test_the_table_covers_every_chart_of_the_components_table_and_nothing_else():
    assert set(preflight.CHART_KUBE_VERSIONS) == {chart.name for component in COMPONENTS for chart in component.charts}
    assert set(preflight.API_NEEDS) <= {component.name for component in COMPONENTS}


@pytest.mark.parametrize("the_plan", [STANDARD, DYNAMO], ids=["Standard", "Dynamo"])
def test_each_constraint_was_read_at_the_version_the_spec_pins_by_default(the_plan):
    """A new default pin fails here until its chart's kubeVersion is read again."""
    for component in the_plan:
        for release in component["releases"]:
            read, _constraint = preflight.CHART_KUBE_VERSIONS[release["chart"]]
            assert versions.parse(read) == versions.parse(release["version"]), release["chart"]


def _upstream_charts() -> dict[str, tuple[str, str | None]]:
    """chart name -> (the tag its Chart.yaml was collected at, its kubeVersion), from shared/upstream."""
    provenance = yaml.safe_load((UPSTREAM / "provenance.yaml").read_text())
    found = {}
    for entry in provenance["files"]:
        if not re.fullmatch(r"[^/]+/chart/Chart\.yaml", entry["file"]):
            continue
        chart = yaml.safe_load((UPSTREAM / entry["file"]).read_text())
        # kube-prometheus-stack tags its releases kube-prometheus-stack-<version>.
        found[chart["name"]] = (entry["ref"].removeprefix(f"{chart['name']}-"), chart.get("kubeVersion"))
    return found


def test_the_constraints_are_the_pinned_charts_own():
    """Against the Chart.yaml files of shared/upstream, where they were collected at the pinned release (Envoy
    Gateway v1.8.4 and Grove rc2 were not tagged there; the in-repo Chart.yaml of several charts keeps a
    placeholder version, so the provenance tag tells the release)."""
    if not UPSTREAM.is_dir():
        pytest.skip(f"needs {UPSTREAM}")
    checked = set()
    for chart, (tag, kube_version) in _upstream_charts().items():
        if chart not in preflight.CHART_KUBE_VERSIONS:
            continue
        read, constraint = preflight.CHART_KUBE_VERSIONS[chart]
        if versions.parse(tag) != versions.parse(read):
            continue
        assert constraint == kube_version, chart
        checked.add(chart)
    assert checked >= {"cert-manager", "trust-manager", "dra-driver-nvidia-gpu", "kube-prometheus-stack",
                       "node-feature-discovery", "lws", "kai-scheduler"}


def test_every_constraint_of_the_table_is_a_lower_bound_the_preflight_reads():
    for chart, (_read, constraint) in preflight.CHART_KUBE_VERSIONS.items():
        if constraint is not None:
            assert preflight.lower_bound(constraint).major == 1, chart


@pytest.mark.parametrize("constraint", ["<1.30.0", ">=1.22.0 <1.30.0", "^1.22.0", ">=1.22.0 || >=2.0.0", ">= soon",
                                        "1.22.0", ""])
def test_a_constraint_other_than_one_lower_bound_is_refused_not_misread(constraint):
    with pytest.raises(ValueError, match="not a single '>=' lower bound"):
        preflight.lower_bound(constraint)


# --------------------------------------------------------------------------- the Kubernetes version


def test_the_oldest_supported_kubernetes_is_computed_from_the_pins():
    problem = preflight.version_problem("v1.31.4", preflight.floors(STANDARD))
    assert "older than v1.32.0, the oldest the pinned charts support (dra-driver-nvidia-gpu 0.4.0: >=1.32.0-0)" \
        in problem
    # Dynamo installs the same charts with a floor.
    assert preflight.version_problem("v1.31.4", preflight.floors(DYNAMO)) == problem


def test_a_cluster_older_than_the_pinned_charts_is_refused_naming_the_chart_and_the_fix():
    problem = preflight.version_problem("v1.31.4", preflight.floors(STANDARD))
    assert problem == ("cluster kubernetes v1.31.4 is older than v1.32.0, the oldest the pinned charts support "
                       "(dra-driver-nvidia-gpu 0.4.0: >=1.32.0-0): upgrade the cluster to v1.32.0 or later")


@pytest.mark.parametrize("git_version", ["v1.32.0", "v1.32.0-gke.1200", "v1.33.5-eks-3025e55", "v1.36.3+k3s1",
                                         "v2.0.0"])
def test_a_cluster_at_or_past_the_floor_passes_vendor_suffixes_included(git_version):
    assert preflight.version_problem(git_version, preflight.floors(STANDARD)) is None


@pytest.mark.parametrize("git_version", ["v1.31.9-gke.1200", "v1.31.4+k3s1", "v1.28.0"])
def test_a_vendor_build_of_an_older_release_is_refused(git_version):
    assert preflight.version_problem(git_version, preflight.floors(STANDARD)).startswith(
        f"cluster kubernetes {git_version} is older than v1.32.0")


def test_a_very_old_cluster_is_told_the_newest_floor_only():
    problem = preflight.version_problem("v1.18.0", preflight.floors(STANDARD))
    assert "older than v1.32.0" in problem and "cert-manager" not in problem


def test_a_later_pin_keeps_the_floor_and_says_where_it_was_read():
    floors = preflight.floors(with_pins(nvidiaDraDriver="0.5.0"))
    problem = preflight.version_problem("v1.31.4", floors)
    assert "(dra-driver-nvidia-gpu 0.5.0: >=1.32.0-0 as of 0.4.0)" in problem


def test_an_earlier_pin_has_no_known_floor_so_the_next_one_applies():
    floors = preflight.floors(with_pins(nvidiaDraDriver="0.3.0"))
    assert not any(text.startswith("dra-driver-nvidia-gpu ") for _bound, text in floors)
    assert preflight.version_problem("v1.31.4", floors) is None
    assert preflight.version_problem("v1.24.9", floors) == (
        "cluster kubernetes v1.24.9 is older than v1.25.0, the oldest the pinned charts support "
        "(trust-manager v0.24.0: >= 1.25.0-0): upgrade the cluster to v1.25.0 or later")


def test_equal_floors_are_all_named():
    floors = [(preflight.lower_bound(">=1.30.0-0"), "a 1.0.0: >=1.30.0-0"),
              (preflight.lower_bound(">=1.29.0-0"), "c 1.0.0: >=1.29.0-0"),
              (preflight.lower_bound(">=1.30.0-0"), "b 2.0.0: >=1.30.0-0")]
    assert "(a 1.0.0: >=1.30.0-0, b 2.0.0: >=1.30.0-0)" in preflight.version_problem("v1.29.0", floors)


def test_an_unreadable_version_skips_the_check_with_a_warning():
    found = preflight.check(STANDARD, {"gitVersion": "v1.36"}, DRA_V1, [CLOUD_NODE])
    assert found["problems"] == []
    assert found["warnings"] == ["cannot read the cluster's Kubernetes version from /version (gitVersion 'v1.36'): "
                                 "the version check is skipped"]


# --------------------------------------------------------------------------- the DRA API


def test_the_dra_driver_needs_resource_k8s_io_and_the_message_names_the_fix():
    [problem] = preflight.api_problems(STANDARD, NO_DRA)
    assert problem.startswith(
        "cluster serves no resource.k8s.io API (Dynamic Resource Allocation), which the NVIDIA DRA driver "
        "(dra-driver-nvidia-gpu 0.4.0) needs (resource.k8s.io/v1, v1beta2 or v1beta1): serve resource.k8s.io/v1 "
        "(on by default from Kubernetes 1.34")
    assert preflight.api_problems(DYNAMO, NO_DRA) == [problem]


@pytest.mark.parametrize("served", [["v1"], ["v1beta1"], ["v1beta2", "v1alpha3"]])
def test_any_version_the_chart_renders_for_will_do(served):
    groups = {"groups": [{"name": "resource.k8s.io", "versions": [{"version": v} for v in served]}]}
    assert preflight.api_problems(STANDARD, groups) == []


def test_only_an_alpha_the_chart_cannot_use_is_named():
    groups = {"groups": [{"name": "resource.k8s.io", "versions": [{"version": "v1alpha3"}]}]}
    [problem] = preflight.api_problems(STANDARD, groups)
    assert problem.startswith("cluster serves resource.k8s.io only as v1alpha3 (Dynamic Resource Allocation)")


def test_no_dra_driver_in_the_plan_needs_no_dra():
    assert preflight.api_problems(without({"nvidia_dra"}), NO_DRA) == []


# --------------------------------------------------------------------------- the load-balancer warning


def test_nodes_without_a_cloud_provider_warn_that_the_gateway_may_get_no_address():
    [warning] = preflight.check(STANDARD, {"gitVersion": "v1.36.3"}, DRA_V1, [BARE_NODE])["warnings"]
    assert warning.startswith("the cluster may have no load-balancer controller: no node has a cloud provider ID")
    assert "GatewayAddressPending" in warning and "MetalLB" in warning
    # No node at all shows none either.
    assert preflight.load_balancer_warning(STANDARD, []) == warning


@pytest.mark.parametrize("node", [
    CLOUD_NODE,
    {"spec": {}, "status": {"addresses": [{"type": "ExternalIP", "address": "203.0.113.7"}]}},
], ids=["providerID", "ExternalIP"])
def test_one_node_showing_a_cloud_provider_is_enough(node):
    assert preflight.load_balancer_warning(STANDARD, [BARE_NODE, node]) is None


def test_no_warning_without_a_gateway_or_without_the_nodes():
    assert preflight.load_balancer_warning(without({"envoy_gateway"}), [BARE_NODE]) is None
    # Nothing read (Nodes the lookup may not list): nothing checked.
    assert preflight.check(STANDARD) == {"kubernetes": "", "problems": [], "warnings": []}


def test_a_good_cluster_has_nothing_to_say():
    found = preflight.check(STANDARD, {"gitVersion": "v1.36.3"}, DRA_V1, [CLOUD_NODE])
    assert found == {"kubernetes": "v1.36.3", "problems": [], "warnings": []}


def test_every_problem_is_its_own_message():
    found = preflight.check(STANDARD, {"gitVersion": "v1.31.4"}, NO_DRA, [BARE_NODE])
    assert [problem.split(" is older")[0].split(" (")[0] for problem in found["problems"]] == [
        "cluster kubernetes v1.31.4", "cluster serves no resource.k8s.io API"]
    assert len(found["warnings"]) == 1


# --------------------------------------------------------------------------- the lookup


class FakeCluster:
    """What the lookup asks of kubeclient.connect's client: GET requests, each counted."""

    def __init__(self, responses: dict[str, Any]) -> None:
        self.responses = responses
        self.paths: list[tuple[str, dict[str, Any]]] = []

    def request(self, method: str, path: str, serializer: Any = None, **params: Any) -> Any:
        """As DynamicClient.request: the decoded JSON handed to ``serializer`` (the client's default,
        ResourceInstance, fails without a kind, as /version has none)."""
        assert method == "GET"
        self.paths.append((path, params))
        answer = self.responses[path]
        if isinstance(answer, Exception):
            raise answer
        if serializer is None:
            if "kind" not in answer:
                raise KeyError("kind")
            raise AssertionError("a ResourceInstance: the lookup wants plain data")
        return serializer(self, answer)


class Forbidden(Exception):
    status, reason = 403, "Forbidden"


@pytest.fixture
def lookup(monkeypatch):
    from ansible.plugins.loader import lookup_loader
    from ansible_collections.modelplane.serving.plugins.lookup import servingstack_preflight

    warned: list[str] = []
    monkeypatch.setattr(servingstack_preflight.display, "warning", lambda message, **_: warned.append(message))

    def run(cluster: FakeCluster, **options: Any) -> tuple[dict[str, Any], list[str]]:
        monkeypatch.setattr(kubeclient, "connect", lambda kubeconfig="", context="": cluster)
        plugin = lookup_loader.get("modelplane.serving.servingstack_preflight")
        [found] = plugin.run([], variables={}, kubeconfig="/tmp/kc", **options)
        return found, warned

    return run


SECRETS_PATH = "/api/v1/secrets"
LIVE_STATES = "deployed,failed,pending-install,pending-upgrade,pending-rollback"
CRDS_PATH = "/apis/apiextensions.k8s.io/v1/customresourcedefinitions"
# Helm 3's release Secrets only, and only each release's latest revision (labels helm's storage driver sets).
RELEASE_SECRETS = (SECRETS_PATH, {"labelSelector": f"owner=helm,status in ({LIVE_STATES})",
                                  "fieldSelector": "type=helm.sh/release.v1"})
OWNERSHIP_READS = [RELEASE_SECRETS, (CRDS_PATH, {})]


def cluster(version: str, groups: dict[str, Any], nodes: Any, secrets: Any = (), crds: Any = ()) -> FakeCluster:
    def items(found: Any) -> Any:
        return found if isinstance(found, Exception) else {"items": list(found)}

    return FakeCluster({"/version": {"gitVersion": version, "major": "1"}, "/apis": groups,
                        "/api/v1/nodes": items(nodes), SECRETS_PATH: items(secrets), CRDS_PATH: items(crds)})


def release_secret(name: str, namespace: str, chart: str) -> dict[str, Any]:
    """A Helm 3 release Secret as the API returns it: data.release is base64 of helm's base64 of gzipped JSON."""
    release = {"name": name, "namespace": namespace, "version": 1, "info": {"status": "deployed"},
               "chart": {"metadata": {"name": chart, "version": "v1.0.0"}}}
    packed = base64.b64encode(gzip.compress(json.dumps(release).encode()))
    return {"type": "helm.sh/release.v1", "metadata": {"name": f"sh.helm.release.v1.{name}.v1", "namespace": namespace},
            "data": {"release": base64.b64encode(packed).decode()}}


def owned_crd(name: str, group: str, release: str, namespace: str) -> dict[str, Any]:
    return {"metadata": {"name": name, "annotations": {"meta.helm.sh/release-name": release,
                                                       "meta.helm.sh/release-namespace": namespace}},
            "spec": {"group": group}}


def planned(chart: str) -> dict[str, Any]:
    return next(release for component in STANDARD for release in component["releases"] if release["chart"] == chart)


def test_the_lookup_reads_release_secrets_crds_version_discovery_and_one_page_of_nodes_and_nothing_else(lookup):
    fake = cluster("v1.36.3", DRA_V1, [CLOUD_NODE])
    found, warned = lookup(fake, plan=STANDARD)
    assert found == {"kubernetes": "v1.36.3", "problems": [], "warnings": []} and warned == []
    assert fake.paths == [*OWNERSHIP_READS, ("/version", {}), ("/apis", {}), ("/api/v1/nodes", {"limit": 100})]


def test_the_lookup_refuses_with_every_problem_and_still_warns(lookup):
    with pytest.raises(AnsibleLookupError) as refused:
        lookup(cluster("v1.31.4", NO_DRA, [BARE_NODE]), plan=STANDARD)
    message = str(refused.value)
    assert message.startswith("cluster kubernetes v1.31.4 is older than v1.32.0")
    assert "; cluster serves no resource.k8s.io API" in message


def test_the_lookup_returns_the_problems_when_told_not_to_refuse(lookup):
    found, warned = lookup(cluster("v1.36.3", NO_DRA, [BARE_NODE]), plan=STANDARD, refuse=False)
    assert [problem[:40] for problem in found["problems"]] == ["cluster serves no resource.k8s.io API (D"]
    assert warned == found["warnings"] and len(warned) == 1


def test_nodes_it_may_not_list_skip_only_the_load_balancer_check(lookup):
    found, warned = lookup(cluster("v1.36.3", DRA_V1, Forbidden()), plan=STANDARD)
    assert found["problems"] == [] and found["warnings"] == []
    assert warned == ["servingstack_preflight: reading the Nodes failed: 403 Forbidden: the load-balancer check is "
                      "skipped"]


def test_an_unreadable_version_fails_the_lookup_naming_the_read(lookup):
    fake = cluster("v1.36.3", DRA_V1, [CLOUD_NODE])
    fake.responses["/version"] = Forbidden()
    with pytest.raises(AnsibleLookupError, match=r"reading the cluster's version \(/version\) failed: 403 Forbidden"):
        lookup(fake, plan=STANDARD)


# --------------------------------------------------------------------------- what another Helm release owns


def test_a_users_release_of_a_planned_chart_and_a_crd_another_release_owns_are_refused(lookup):
    cert_manager, trust_manager = planned("cert-manager"), planned("trust-manager")
    secrets = [release_secret(cert_manager["release"], cert_manager["namespace"], "cert-manager"),  # ours
               release_secret("cm", "tools", "cert-manager"),  # a user's, the same chart
               release_secret("my-app", "apps", "not-a-planned-chart")]
    crds = [owned_crd("bundles.trust.cert-manager.io", "trust.cert-manager.io", "user-trust", "tools"),
            owned_crd("certificates.cert-manager.io", "cert-manager.io", cert_manager["release"],
                      cert_manager["namespace"])]  # ours
    with pytest.raises(AnsibleLookupError) as refused:
        lookup(cluster("v1.36.3", DRA_V1, [CLOUD_NODE], secrets, crds), plan=STANDARD)
    assert str(refused.value) == (
        f"Helm release tools/cm installs the chart cert-manager too (ours is {cert_manager['namespace']}/"
        f"{cert_manager['release']}): remove it, or set servingstack_adopt to take it over; "
        f"CustomResourceDefinition bundles.trust.cert-manager.io belongs to Helm release tools/user-trust (ours is "
        f"{trust_manager['namespace']}/{trust_manager['release']}): remove it, or set servingstack_adopt to take it "
        "over")


def test_ownership_problems_come_after_the_clusters_when_told_not_to_refuse(lookup):
    fake = cluster("v1.31.4", NO_DRA, [CLOUD_NODE], [release_secret("cm", "tools", "cert-manager")])
    found, _reads = lookup(fake, plan=STANDARD, refuse=False)
    assert [problem[:33] for problem in found["problems"]] == [
        "cluster kubernetes v1.31.4 is old", "cluster serves no resource.k8s.io", "Helm release tools/cm installs th"]


def test_adopting_reads_no_release_or_crd_and_refuses_none(lookup):
    fake = cluster("v1.36.3", DRA_V1, [CLOUD_NODE], [release_secret("cm", "tools", "cert-manager")],
                   [owned_crd("bundles.trust.cert-manager.io", "trust.cert-manager.io", "user-trust", "tools")])
    found, _reads = lookup(fake, plan=STANDARD, adopt=True)
    assert found["problems"] == []
    assert fake.paths == [("/version", {}), ("/apis", {}), ("/api/v1/nodes", {"limit": 100})]


def test_without_the_cluster_checks_only_ownership_is_read_and_refused(lookup):
    clean = cluster("v1.31.4", NO_DRA, [BARE_NODE])
    found, warned = lookup(clean, plan=STANDARD, cluster_checks=False)
    assert found == {"kubernetes": "", "problems": [], "warnings": []} and warned == []
    assert clean.paths == OWNERSHIP_READS
    foreign = cluster("v1.31.4", NO_DRA, [BARE_NODE], [release_secret("cm", "tools", "cert-manager")])
    with pytest.raises(AnsibleLookupError, match=r"^Helm release tools/cm installs the chart cert-manager too"):
        lookup(foreign, plan=STANDARD, cluster_checks=False)
    found, _reads = lookup(foreign, plan=STANDARD, cluster_checks=False, refuse=False)
    assert len(found["problems"]) == 1
    # Adopting and no cluster checks: nothing to read.
    nothing = cluster("v1.31.4", NO_DRA, [BARE_NODE])
    assert lookup(nothing, plan=STANDARD, cluster_checks=False, adopt=True)[0]["problems"] == []
    assert nothing.paths == []


def test_a_plan_without_releases_reads_no_release_or_crd(lookup):
    fake = cluster("v1.36.3", DRA_V1, [CLOUD_NODE])
    releaseless = [{**component, "releases": []} for component in STANDARD]
    assert lookup(fake, plan=releaseless)[0]["problems"] == []
    assert fake.paths == [("/version", {}), ("/apis", {}), ("/api/v1/nodes", {"limit": 100})]


@pytest.mark.parametrize(("path", "what"), [(SECRETS_PATH, "the Helm release Secrets"), (CRDS_PATH, "the CRDs")])
def test_unreadable_release_secrets_or_crds_fail_the_lookup_naming_the_read(lookup, path, what):
    fake = cluster("v1.36.3", DRA_V1, [CLOUD_NODE])
    fake.responses[path] = Forbidden()
    with pytest.raises(AnsibleLookupError, match=f"^servingstack_preflight: reading {what} failed: 403 Forbidden$"):
        lookup(fake, plan=STANDARD)


# --------------------------------------------------------------------------- the role runs it first


def target_block() -> list[dict[str, Any]]:
    """The tasks of the servingstack role's converge on the target cluster (tasks/main.yml's one block there)."""
    [converge] = yaml.safe_load((ROLE / "tasks" / "main.yml").read_text())
    [target] = [task["block"] for task in converge["block"] if task["name"] == "Work on the target cluster."]
    return target


def step(task: dict[str, Any]) -> str:
    """What a task of the target block does, in a word (or the task file it includes)."""
    if "ansible.builtin.set_fact" in task:
        return "preflight" if "servingstack_preflight_found" in task["ansible.builtin.set_fact"] else "failed"
    if "ansible.builtin.include_role" in task:
        return "teardown" if task["name"].startswith("Tear") else "prune"
    if "block" in task:
        return "wait"
    return task.get("ansible.builtin.include_tasks") or task["ansible.builtin.import_tasks"]


def steps(**extra: Any) -> list[str]:
    """The steps the servingstack role's converge takes on the target cluster, in order: each task of the block whose
    ``when`` holds for the role's defaults with ``extra`` over them, before any component ran."""
    from ansible.parsing.dataloader import DataLoader
    from ansible.template import Templar, trust_as_template

    loader = DataLoader()
    variables = {**loader.load_from_file(str(ROLE / "defaults" / "main.yml"), trusted_as_template=True),
                 "servingstack_outcomes": {}, "servingstack_failed": {}, "servingstack_stuck": [], **extra}
    templar = Templar(loader=loader, variables=variables)
    taken = []
    for task in target_block():
        when = task.get("when")
        conditions = [] if when is None else when if isinstance(when, list) else [when]
        if all(templar.template(trust_as_template("{{ " + condition + " }}")) for condition in conditions):
            taken.append(step(task))
    return taken


def test_a_converge_checks_the_cluster_before_it_installs_anything():
    assert steps() == ["preflight", "component.yml", "failed", "prune", "status.yml"]


def test_the_preflight_runs_on_every_converge_turned_off_or_not_and_not_on_a_teardown():
    # A teardown reads which of the other stack's components are installed (the same task), not the preflight.
    assert steps(servingstack_state="absent") == ["preflight", "teardown"]
    # servingstack_preflight false turns the cluster checks off; what another Helm release owns is still refused.
    assert steps(servingstack_preflight=False) == ["preflight", "component.yml", "failed", "prune", "status.yml"]


def test_the_preflight_task_gives_the_lookup_the_plan_adopt_the_checks_and_the_target_cluster():
    [task] = [task for task in target_block() if step(task) == "preflight"]
    call = " ".join(task["ansible.builtin.set_fact"]["servingstack_preflight_found"].split())
    assert call == ("{{ lookup('modelplane.serving.servingstack_preflight', plan=servingstack_plan, "
                    "adopt=servingstack_adopt | bool, cluster_checks=servingstack_preflight | bool, "
                    "kubeconfig=servingstack_target_kubeconfig) if servingstack_state == 'present' else {} }}")


def test_the_preflight_guide_shows_the_message_the_pins_give():
    """The preflight guide's example names the floor the pins set; a new pin with another floor changes the example."""
    message = preflight.version_problem("v1.31.4", preflight.floors(STANDARD))
    guide = (REPO / "docs" / "docsite" / "rst" / "spec.rst").read_text()
    section = guide.split("\nPreflight\n---------\n", 1)[1].split("\n.. _", 1)[0]
    assert f"``{message}``" in section


def test_releases_a_killed_run_left_pending_are_recovered_before_any_component():
    stuck = [{"release": "mp-lws", "namespace": "lws-system", "action": "rollback", "revision": 1}]
    assert steps(servingstack_stuck=stuck) == ["preflight", "recover.yml", "component.yml", "failed", "prune",
                                               "status.yml"]
