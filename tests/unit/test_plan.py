"""The plan: components of each stack in dependency order, with resolved versions."""

from __future__ import annotations

from pathlib import Path

import pytest
from ansible_collections.modelplane.serving.plugins.module_utils.servingstack import components, converge, plan, spec
from ansible_collections.modelplane.serving.plugins.module_utils.servingstack.components import Chart, Component
from servingstack_docs import DYNAMO_EXAMPLE, load_example


def planned(path=None) -> list[dict]:
    manifest = spec.validate(load_example() if path is None else load_example(path)).manifest
    return plan.build_plan(manifest["spec"])


@pytest.mark.parametrize("stack", sorted(components.BOTH))
def test_table_orders_without_cycles_or_unknown_needs(stack):
    ordered = plan.components_for(stack)
    names = [component.name for component in ordered]
    for index, component in enumerate(ordered):
        needs = component.needs + tuple(name for name, _path in component.needs_if)
        assert all(names.index(need) < index for need in needs)


def test_every_component_belongs_to_a_known_stack_and_is_unique():
    assert len(components.BY_NAME) == len(components.COMPONENTS)
    for component in components.COMPONENTS:
        assert component.stacks <= components.BOTH and component.stacks


def test_every_version_key_is_a_spec_pin_with_a_default():
    defaults = spec.defaulted_spec()
    for component in components.COMPONENTS:
        assert isinstance(plan.resolve(defaults, component.version_key), str), component.version_key
        for chart in component.charts:
            assert chart.version_key is None or isinstance(plan.resolve(defaults, chart.version_key), str)
            assert chart.version_key or chart.version


def test_standard_plan_in_dependency_order():
    entries = planned()
    assert [entry["name"] for entry in entries] == [
        "cert_manager", "trust_manager", "nfd", "nvidia_dra", "envoy_gateway", "lws", "prometheus"]
    titles = [entry["title"] for entry in entries]
    assert titles == ["cert-manager", "trust-manager", "Node Feature Discovery", "NVIDIA DRA driver", "Envoy Gateway",
                      "LeaderWorkerSet", "kube-prometheus-stack"]
    gateway = entries[4]
    assert [release["chart"] for release in gateway["releases"]] == [
        "gateway-helm", "ai-gateway-crds-helm", "ai-gateway-helm"]
    assert any("InferencePool CRD" in manifest for manifest in gateway["manifests"])


def test_dynamo_plan_swaps_lws_for_grove_kai_and_modelexpress():
    names = [entry["name"] for entry in planned(DYNAMO_EXAMPLE)]
    assert names == ["cert_manager", "trust_manager", "nfd", "nvidia_dra", "envoy_gateway", "grove_kai",
                     "modelexpress", "prometheus"]
    grove = planned(DYNAMO_EXAMPLE)[5]
    assert [(release["chart"], release["version"]) for release in grove["releases"]] == [
        ("kai-scheduler", "v0.16.8"), ("grove-charts", "v0.1.0-alpha.12-rc2")]


def test_component_entry_shape():
    entry = planned()[0]
    assert entry == {
        "name": "cert_manager",
        "role": "modelplane.serving.cert_manager",
        "title": "cert-manager",
        "namespace": "cert-manager",
        "version_key": "versions.certManager",
        "version": "v1.21.1",
        "needs": [],
        "releases": [{
            "release": "mp-cert-manager",
            "chart": "cert-manager",
            "chart_ref": "cert-manager",
            "chart_repo_url": "https://charts.jetstack.io",
            "version": "v1.21.1",
            "namespace": "cert-manager",
            "version_key": "versions.certManager",
            "atomic": True,
            "crd_groups": ["cert-manager.io", "acme.cert-manager.io"],
        }],
        "manifests": [],
        "ingress": False,
        # trust_manager needs it: installed with helm's wait.
        "wait": True,
    }


@pytest.mark.parametrize("root,quota", [("/", False), ("", False), ("/home/kubernetes/bin/nvidia", True)])
def test_the_resource_quota_is_planned_only_for_another_driver_root(root, quota):
    """The nvidia_dra role makes the system-critical ResourceQuota only when nvidiaDriverRoot is not / (GKE)."""
    document = load_example()
    document["spec"]["nvidiaDriverRoot"] = root
    dra = next(entry for entry in plan.build_plan(spec.validate(document).manifest["spec"])
               if entry["name"] == "nvidia_dra")
    assert any("ResourceQuota" in manifest for manifest in dra["manifests"]) is quota
    assert [release["chart"] for release in dra["releases"]] == ["dra-driver-nvidia-gpu"]


def test_a_manifest_without_a_condition_is_always_planned():
    trust = next(entry for entry in planned() if entry["name"] == "trust_manager")
    assert trust["manifests"] == ["Bundle publishing the gateway CA certificate"]


def test_oci_release_and_fixed_version():
    gateway = next(entry for entry in planned() if entry["name"] == "envoy_gateway")
    first, crds = gateway["releases"][:2]
    assert first["chart_ref"] == "oci://docker.io/envoyproxy/gateway-helm"
    assert first["chart_repo_url"] is None
    assert crds["version"] == components.AI_GATEWAY_VERSION
    assert crds["version_key"] is None
    assert crds["namespace"] == "envoy-ai-gateway-system"


def test_versions_resolve_from_the_spec():
    document = load_example()
    document["spec"]["versions"]["prometheus"] = "75.0.0"
    document["spec"]["standard"] = {"leaderWorkerSet": "v0.9.0"}
    entries = {entry["name"]: entry for entry in plan.build_plan(spec.validate(document).manifest["spec"])}
    assert entries["prometheus"]["version"] == "75.0.0"
    assert entries["prometheus"]["releases"][0]["version"] == "75.0.0"
    assert entries["lws"]["version"] == "v0.9.0"


def test_order_breaks_ties_by_table_order():
    table = [Component("b", "B", "ns", "v.b", needs=("a",)), Component("c", "C", "ns", "v.c"),
             Component("a", "A", "ns", "v.a")]
    assert [component.name for component in plan.order(table)] == ["c", "a", "b"]


def test_order_refuses_cycles_and_unknown_needs():
    with pytest.raises(ValueError, match="cycle"):
        plan.order([Component("a", "A", "ns", "v.a", needs=("b",)), Component("b", "B", "ns", "v.b", needs=("a",))])
    with pytest.raises(ValueError, match="needs z, which is not in the plan"):
        plan.order([Component("a", "A", "ns", "v.a", needs=("z",))])


def test_release_entry_for_a_repository_chart():
    entry = plan.release_entry(Chart("x", "https://example.com/charts", "ns", "versions.certManager"),
                               {"versions": {"certManager": "v1.0.0"}})
    assert entry["chart_ref"] == "x"
    assert entry["chart_repo_url"] == "https://example.com/charts"
    assert entry["release"] == "mp-x"
    assert entry["version"] == "v1.0.0"


def test_only_the_kai_scheduler_release_is_not_atomic():
    # KAI's upstream does not support helm rollback, so --atomic would roll a failed upgrade back.
    dynamo = dict(spec.defaulted_spec(), stack="Dynamo")
    releases = [release for entry in plan.build_plan(dynamo) for release in entry["releases"]]
    assert {release["release"] for release in releases if not release["atomic"]} == {"mp-kai-scheduler"}


def test_envoy_gateway_needs_cert_manager_only_for_a_hostname():
    """Without a hostname the gateway has no certificates, so it converges beside cert-manager."""
    plain = {entry["name"]: entry["needs"] for entry in planned()}
    assert plain["envoy_gateway"] == []
    assert plain["trust_manager"] == ["cert_manager"] and plain["nvidia_dra"] == ["nfd"]
    with_hostname = dict(spec.defaulted_spec(), gateway={"hostname": "a.example.com"})
    assert plan.component_entry(components.BY_NAME["envoy_gateway"], with_hostname)["needs"] == ["cert_manager"]
    # Install order still puts cert-manager first either way.
    names = [entry["name"] for entry in planned()]
    assert names.index("cert_manager") < names.index("envoy_gateway")


def test_conditional_needs_must_name_known_components():
    odd = [Component("a", "A", "ns", "versions.a", needs_if=(("ghost", "gateway.hostname"),))]
    with pytest.raises(ValueError, match="needs ghost"):
        plan.order(odd)


def test_crd_groups_are_the_groups_of_the_crds_each_chart_templates():
    """Against the test charts' facts (testing/charts/<chart>/facts.yaml, which follow each upstream chart's layout)
    at the planned versions: templated CRDs' groups are listed (helm refuses a template over another release's
    object); crds/ folder ones are not (helm skips those without asking whose they are)."""

    import yaml

    root = Path(__file__).resolve().parents[2]
    upstream = root.parent / "shared" / "upstream"
    if not upstream.is_dir():
        pytest.skip(f"needs {upstream} (the CRD files the test charts name)")
    planned_versions = {release["chart"]: release["version"] for entry in planned() + planned(DYNAMO_EXAMPLE)
                        for release in entry["releases"]}
    ours = {chart.name: set(chart.crd_groups) for component in components.COMPONENTS for chart in component.charts}
    seen = {"template": 0, "crds-dir": 0}
    for facts_file in sorted((root / "testing" / "charts").glob("*/facts.yaml")):
        facts = yaml.safe_load(facts_file.read_text())
        if facts["name"] not in planned_versions:
            continue
        [version] = [v for v in facts["versions"] if str(v["version"]) == planned_versions[facts["name"]]]
        files = {"template": version.get("templateCrds", facts.get("templateCrds", [])),
                 "crds-dir": version.get("crds", facts.get("crds", []))
                 + [f for sub in (facts.get("subcharts") or {}).values() for f in sub.get("crds", [])]}
        for style, paths in files.items():
            for file in paths:
                text = (upstream / file).read_text()
                for doc in yaml.load_all(text, Loader=getattr(yaml, "CSafeLoader", yaml.SafeLoader)):
                    if isinstance(doc, dict) and doc.get("kind") == "CustomResourceDefinition":
                        listed = doc["spec"]["group"] in ours[facts["name"]]
                        assert listed == (style == "template"), (facts["name"], file, style)
                        seen[style] += 1
    assert seen["template"] >= 4 and seen["crds-dir"] >= 8, seen


def test_prune_plan_is_the_other_stacks_components_in_teardown_order():
    standard = spec.validate(load_example()).manifest["spec"]
    dynamo = spec.validate(load_example(DYNAMO_EXAMPLE)).manifest["spec"]
    assert [entry["name"] for entry in plan.prune_plan(standard)] == ["modelexpress", "grove_kai"]
    assert [entry["name"] for entry in plan.prune_plan(dynamo)] == ["lws"]
    # Versions resolve from the defaulted spec, so the releases are named and versioned as if planned.
    assert plan.prune_plan(dynamo)[0]["releases"][0]["release"] == "mp-lws"
    planned_names = {entry["name"] for entry in plan.build_plan(standard)}
    assert not planned_names & {entry["name"] for entry in plan.prune_plan(standard)}


# --------------------------------------------------------------------------- teardown order, from the table alone

SECRETS = [{"type": "Kubeconfig", "name": "kubeconfig", "key": "kubeconfig"}]


def test_teardown_takes_the_ingress_down_first_then_the_rest_in_reverse_install_order():
    """What the servingstack role's teardown and prune loop over: the plan entries, reordered (converge.py)."""
    for stack in ("Standard", "Dynamo"):
        names = [component.name for component in plan.components_for(stack)]
        ingress = [component.name for component in plan.components_for(stack) if component.ingress]
        assert ingress == ["envoy_gateway"], "the table names the gateway as where requests enter"
        defaulted = spec.defaulted_spec({"stack": stack, "secrets": SECRETS})
        entries = plan.build_plan(defaulted)
        down = converge.teardown(entries, [])
        assert [entry["name"] for entry in down] == ingress + [name for name in reversed(names) if name not in ingress]
        # Then the other stack's components found installed, as found.
        pruned = plan.prune_plan(defaulted)
        assert converge.teardown(entries, pruned)[len(entries):] == pruned
        # The other stack's components, as a converge prunes them (converge.installed), in the prune plan's order.
        pruned = plan.prune_plan(defaulted)
        assert converge.installed(pruned, everything_installed(pruned)) == pruned
        # Whatever order they come in, where requests enter goes first and the rest keep their order.
        assert names.index("envoy_gateway") > 0
        found = converge.installed(entries, everything_installed(entries))
        assert [entry["name"] for entry in found] == ingress + [name for name in names if name not in ingress]


def everything_installed(entries: list[dict]) -> list[list[dict]]:
    """What servingstack_objects reads for converge.prune_queries(entries) when every one of them is installed."""
    found = []
    for query in converge.prune_queries(entries):
        if query["kind"] == "Secret":
            found.append([{"metadata": {"labels": {"name": release["release"]}}}
                          for entry in entries for release in entry["releases"]])
        else:
            found.append([{"metadata": {"name": entry["namespace"]}} for entry in entries])
    return found
