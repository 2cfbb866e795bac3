"""The component roles' Helm values, templates and interfaces.

Each role's variables are rendered with Ansible's own templating, as the play does in the steps of
modelplane.serving.component a component role imports (the role's and the component role's defaults, the role's
templates on the search path, the test's extra vars, then their vars), and every values key is checked against
the chart's upstream values.yaml. Objects of custom kinds are validated against their upstream CRD schema. Every
role's argument specs mirror its defaults, and every component role holds only what differs from the others.
"""

from __future__ import annotations

import copy
from functools import cache
from pathlib import Path
from typing import Any

import jsonschema
import pytest
import yaml

# The same paths tests/conftest.py defines (its module name is shadowed by tests/unit/conftest.py).
REPO = Path(__file__).resolve().parents[2]
COLLECTIONS = REPO / ".collections"
UPSTREAM = REPO.parent / "shared" / "upstream"

pytestmark = pytest.mark.skipif(not UPSTREAM.is_dir(), reason=f"upstream reference data not found at {UPSTREAM}")

ROLES = REPO / "roles"

# Chart folders (relative to UPSTREAM) whose values.yaml the role values must fit.
CHART_VALUES = {
    "node-feature-discovery": "node-feature-discovery/chart/values.yaml",
    "dra-driver-nvidia-gpu": "dra-driver-nvidia-gpu/chart/values.yaml",
    "lws": "lws/chart/values.yaml",
    "kai-scheduler": "kai-scheduler/chart/values.yaml",
    # grove: both the rc1 values (the tagged release) and main's (what rc2 carries).
    "grove-charts": "grove/chart/values.yaml",
    "grove-charts@main": "grove/chart-main-fcc3b3bb/values.yaml",
    "kube-prometheus-stack": "kube-prometheus-stack/chart/values.yaml",
}

# Keys a role sets that values.yaml does not list, each with the upstream fact that makes it real.
ALLOWED_UNLISTED = {
    # The operator config template reads it (`{{- if .Values.config.scheduler.defaultProfileName }}`), and
    # values.yaml's comment on config.scheduler says to set it; it simply has no default entry.
    ("grove-charts", "config.scheduler.defaultProfileName"),
    ("grove-charts@main", "config.scheduler.defaultProfileName"),
}
# Remote subcharts whose defaults were not collected (Chart.yaml dependencies with a repository).
REMOTE_SUBCHARTS = {"kube-prometheus-stack": {"grafana", "kube-state-metrics", "prometheus-node-exporter"}}


# --------------------------------------------------------------------------- rendering helpers


def _load(path: Path) -> dict[str, Any]:
    from ansible.parsing.dataloader import DataLoader

    return DataLoader().load_from_file(str(path), trusted_as_template=True) or {}


COMPONENT = ROLES / "component"


def _component_tasks(name: str) -> list[dict[str, Any]]:
    from ansible.parsing.dataloader import DataLoader

    return DataLoader().load_from_file(str(COMPONENT / "tasks" / f"{name}.yml"), trusted_as_template=True)


def templar(role: str, **extra: Any):
    """An Ansible Templar as modelplane.serving.component's steps see the variables of component role ``role``: the
    role's templates on the search path, its values template named as its tasks/main.yml names it."""
    from ansible.parsing.dataloader import DataLoader
    from ansible.template import Templar

    # tests/conftest.py installed Ansible's collection loader over .collections for the session.
    variables: dict[str, Any] = {}
    for folder in (ROLES / role, COMPONENT):
        if (folder / "defaults" / "main.yml").exists():
            variables.update(_load(folder / "defaults" / "main.yml"))
    values = ROLES / role / "templates" / "values.yaml.j2"
    variables.update({"component_name": role, "ansible_search_path": [str(ROLES / role)], "component_state": "present",
                      "component_values_template": values.name if values.exists() else "", **extra})
    for folder in (ROLES / role, COMPONENT):
        if (folder / "vars" / "main.yml").exists():
            variables.update(_load(folder / "vars" / "main.yml"))
    return Templar(loader=DataLoader(), variables=variables)


def var(role: str, name: str, **extra: Any) -> Any:
    from ansible.template import trust_as_template

    return templar(role, **extra).template(trust_as_template("{{ " + name + " }}"))


def render(role: str, template: str, **extra: Any) -> list[dict[str, Any]]:
    """The role's template rendered by lookup('ansible.builtin.template'), as the role renders it."""
    rendered = var(role, f"lookup('ansible.builtin.template', {str(ROLES / role / 'templates' / template)!r})", **extra)
    return [doc for doc in yaml.safe_load_all(rendered) if doc]


def by_chart(role: str, **extra: Any) -> dict[str, dict[str, Any]]:
    """Chart name -> values, as modelplane.serving.component hands them to kubernetes.core.helm (releases.yml)."""
    releases = var(role, "component_charts", **extra)["releases"]
    return {release["chart"]: release["release_values"] for release in releases}


@cache
def chart_defaults(chart: str) -> dict[str, Any]:
    return yaml.safe_load((UPSTREAM / CHART_VALUES[chart]).read_text()) or {}


def unknown_paths(values: dict[str, Any], defaults: dict[str, Any], chart: str, prefix: str = "") -> list[str]:
    """Dotted paths in ``values`` that the chart's values.yaml does not have (below empty maps and
    lists anything goes, as in helm templates that toYaml them)."""
    problems = []
    for key, value in values.items():
        path = prefix + key
        if not prefix and key in REMOTE_SUBCHARTS.get(chart.split("@")[0], set()):
            continue
        if (chart, path) in ALLOWED_UNLISTED:
            continue
        if key not in defaults:
            problems.append(path)
            continue
        default = defaults[key]
        if isinstance(value, dict) and isinstance(default, dict) and default:
            problems.extend(unknown_paths(value, default, chart, path + "."))
        elif default is not None and isinstance(default, (dict, list)) != isinstance(value, (dict, list)):
            problems.append(f"{path} (type)")
    return problems


def crd_schema(path: str, kind: str) -> dict[str, Any]:
    for doc in yaml.safe_load_all((UPSTREAM / path).read_text()):
        if doc and doc["spec"]["names"]["kind"] == kind:
            served = next(v for v in doc["spec"]["versions"] if v.get("storage"))
            return served["schema"]["openAPIV3Schema"]
    raise AssertionError(f"{kind} not in {path}")


def without_descriptions(node: Any) -> Any:
    if isinstance(node, dict):
        return {key: without_descriptions(value) for key, value in node.items() if key != "description"}
    if isinstance(node, list):
        return [without_descriptions(item) for item in node]
    return node


GKE_ROOT = "/home/kubernetes/bin/nvidia"
DYNAMO = {"stack": "Dynamo"}


# --------------------------------------------------------------------------- every values key is real


@pytest.mark.parametrize(
    ("role", "extra"),
    [
        ("nfd", {}),
        ("nvidia_dra", {}),
        ("nvidia_dra", {"component_spec": {"nvidiaDriverRoot": GKE_ROOT}}),
        ("lws", {}),
        ("grove_kai", {"component_spec": DYNAMO}),
        ("prometheus", {}),
    ],
    ids=["nfd", "nvidia_dra", "nvidia_dra-gke", "lws", "grove_kai", "prometheus"],
)
def test_every_values_key_exists_in_the_chart(role, extra):
    charts = by_chart(role, **extra)
    assert charts, f"{role}: no releases"
    for chart, values in charts.items():
        targets = [chart] + ([f"{chart}@main"] if f"{chart}@main" in CHART_VALUES else [])
        for target in targets:
            assert unknown_paths(values, chart_defaults(target), target) == [], f"{role} -> {target}"


def test_the_key_check_catches_an_unknown_key():
    values = copy.deepcopy(by_chart("nfd")["node-feature-discovery"])
    values["worker"]["tolerationz"] = []
    assert unknown_paths(values, chart_defaults("node-feature-discovery"), "node-feature-discovery") == [
        "worker.tolerationz"
    ]


# --------------------------------------------------------------------------- nfd


def test_nfd_worker_tolerates_the_gpu_taint():
    values = by_chart("nfd")["node-feature-discovery"]
    assert {"key": "nvidia.com/gpu", "operator": "Exists", "effect": "NoSchedule"} in values["worker"]["tolerations"]
    # The chart's default is no toleration at all: without ours the DRA chain breaks silently.
    assert chart_defaults("node-feature-discovery")["worker"]["tolerations"] == []


def test_user_values_merge_over_the_role_values_recursively():
    extra = {"node-feature-discovery": {"worker": {"nodeSelector": {"pool": "gpu"}}, "gc": {"enable": False}},
             # Another component's chart: that role takes it, this one leaves it.
             "lws": {"replicaCount": 2}}
    charts = by_chart("nfd", component_values=extra)
    assert list(charts) == ["node-feature-discovery"]
    values = charts["node-feature-discovery"]
    assert values["worker"]["nodeSelector"] == {"pool": "gpu"}
    assert values["worker"]["tolerations"], "the role's toleration must survive a user's worker values"
    assert values["gc"] == {"enable": False}


def test_nfd_release_is_the_fixed_prefixed_name():
    releases = var("nfd", "component_entry")["releases"]
    assert [release["release"] for release in releases] == ["mp-node-feature-discovery"]


def test_a_users_value_for_a_chart_no_component_installs_is_refused_by_name():
    from ansible.errors import AnsibleError

    with pytest.raises(AnsibleError, match=r"component_values\.node-feature-discover: no component installs a chart"):
        by_chart("nfd", component_values={"node-feature-discover": {}})


# --------------------------------------------------------------------------- nvidia_dra


def test_dra_default_driver_root_sets_no_value_and_no_quota():
    values = by_chart("nvidia_dra")["dra-driver-nvidia-gpu"]
    assert "nvidiaDriverRoot" not in values
    assert values["gpuResourcesEnabledOverride"] is True
    assert values["resources"]["computeDomains"]["enabled"] is False
    assert render("nvidia_dra", "prerequisites.yaml.j2") == []


@pytest.mark.parametrize(
    "extra",
    [
        {"component_spec": {"nvidiaDriverRoot": GKE_ROOT}},
        # A whole ServingStack manifest works as the spec too.
        {"component_spec": {"apiVersion": "x/v1", "kind": "ServingStack", "spec": {"nvidiaDriverRoot": GKE_ROOT}}},
        {"servingstack_spec": {"nvidiaDriverRoot": GKE_ROOT}},
        {"nvidia_dra_driver_root": GKE_ROOT},
    ],
    ids=["role-spec", "manifest", "servingstack_spec", "explicit"],
)
def test_dra_gke_driver_root_sets_the_value_and_the_quota(extra):
    values = by_chart("nvidia_dra", **extra)["dra-driver-nvidia-gpu"]
    assert values["nvidiaDriverRoot"] == GKE_ROOT
    assert [d["kind"] for d in render("nvidia_dra", "prerequisites.yaml.j2", **extra)] == ["Namespace", "ResourceQuota"]


def test_dra_values_keep_the_chart_rendering():
    """The chart fails to render with GPUs on but no override, with a namespace value, or with nvidiaCtkPath."""
    for extra in ({}, {"nvidia_dra_driver_root": GKE_ROOT}):
        values = by_chart("nvidia_dra", **extra)["dra-driver-nvidia-gpu"]
        gpus = values.get("resources", {}).get("gpus", {}).get("enabled", True)
        assert not gpus or values["gpuResourcesEnabledOverride"] is True
        assert "namespace" not in values
        assert "nvidiaCtkPath" not in values
    namespace = var("nvidia_dra", "component_entry")["namespace"]
    assert namespace != "default"


def test_dra_quota_admits_system_critical_pods_in_the_driver_namespace():
    docs = render("nvidia_dra", "prerequisites.yaml.j2", nvidia_dra_driver_root=GKE_ROOT)
    namespace = var("nvidia_dra", "component_entry")["namespace"]
    assert [d["kind"] for d in docs] == ["Namespace", "ResourceQuota"]
    assert docs[0]["metadata"]["name"] == namespace
    quota = docs[1]
    assert quota["metadata"] == {**quota["metadata"], "name": "allow-critical-pods", "namespace": namespace}
    assert quota["spec"]["scopeSelector"]["matchExpressions"] == [
        {
            "operator": "In",
            "scopeName": "PriorityClass",
            "values": ["system-node-critical", "system-cluster-critical"],
        }
    ]
    assert int(quota["spec"]["hard"]["pods"]) >= 100
    assert isinstance(quota["spec"]["hard"]["pods"], str), "quantities are strings"


# --------------------------------------------------------------------------- lws, prometheus


def test_lws_release_follows_the_standard_pin():
    component = var("lws", "component_entry", component_spec={"standard": {"leaderWorkerSet": "v0.9.0"}})
    assert component["releases"][0]["version"] == "v0.9.0"
    assert by_chart("lws") == {"lws": {}}


def test_prometheus_values_are_what_modelplane_composes():
    values = by_chart("prometheus")["kube-prometheus-stack"]
    spec = values["prometheus"]["prometheusSpec"]
    assert values["fullnameOverride"] == "prometheus"
    assert spec["podMonitorSelectorNilUsesHelmValues"] is False
    assert spec["podMonitorNamespaceSelector"] == {}
    assert values["grafana"] == {"enabled": False}
    assert values["alertmanager"] == {"enabled": False}
    # grafana.enabled is the condition of the grafana dependency in Chart.yaml.
    chart = yaml.safe_load((UPSTREAM / "kube-prometheus-stack/chart/Chart.yaml").read_text())
    assert {"name": "grafana", "condition": "grafana.enabled"}.items() <= next(
        d for d in chart["dependencies"] if d["name"] == "grafana"
    ).items()


def _relabel(config: dict[str, Any], labels: dict[str, str]) -> dict[str, str] | None:
    """Apply a scrape job's keep/replace relabelling to one discovered target (None = dropped)."""
    import re

    target = dict(labels)
    for rule in config["relabel_configs"]:
        value = ";".join(target.get(label, "") for label in rule["source_labels"])
        regex = re.compile(f"^(?:{rule.get('regex', '(.*)')})$")
        action = rule.get("action", "replace")
        if action == "keep" and not regex.match(value):
            return None
        if action == "drop" and regex.match(value):
            return None
        if action == "replace" and regex.match(value):
            target[rule["target_label"]] = regex.sub(rule.get("replacement", "$1").replace("$", "\\"), value)
    return target


def test_prometheus_scrapes_envoy_gateway_proxies_on_19001():
    configs = by_chart("prometheus")["kube-prometheus-stack"]["prometheus"]["prometheusSpec"]["additionalScrapeConfigs"]
    [job] = [c for c in configs if c["job_name"] == "envoy-gateway-proxies"]
    assert job["metrics_path"] == "/stats/prometheus"
    assert job["kubernetes_sd_configs"] == [{"role": "pod"}]
    proxy = {
        "__meta_kubernetes_namespace": "envoy-gateway-system",
        "__meta_kubernetes_pod_name": "envoy-default-inference-gateway-abc",
        "__meta_kubernetes_pod_label_app_kubernetes_io_component": "proxy",
        "__meta_kubernetes_pod_label_app_kubernetes_io_managed_by": "envoy-gateway",
        "__meta_kubernetes_pod_label_gateway_envoyproxy_io_owning_gateway_name": "inference-gateway",
        "__meta_kubernetes_pod_label_gateway_envoyproxy_io_owning_gateway_namespace": "envoy-gateway-system",
    }
    kept = _relabel(job, {**proxy, "__meta_kubernetes_pod_container_port_number": "19001"})
    assert kept is not None
    assert kept["gateway"] == "inference-gateway"
    assert kept["namespace"] == "envoy-gateway-system"
    # The proxy's listener ports and other pods are not scraped.
    assert _relabel(job, {**proxy, "__meta_kubernetes_pod_container_port_number": "10080"}) is None
    other = {**proxy, "__meta_kubernetes_pod_label_app_kubernetes_io_managed_by": "helm"}
    assert _relabel(job, {**other, "__meta_kubernetes_pod_container_port_number": "19001"}) is None


# --------------------------------------------------------------------------- grove_kai


def test_grove_hands_gang_scheduling_to_kai():
    values = by_chart("grove_kai", component_spec=DYNAMO)
    scheduler = values["grove-charts"]["config"]["scheduler"]
    assert scheduler["defaultProfileName"] == "kai-scheduler"
    assert {"name": "kai-scheduler"} in scheduler["profiles"]
    # default-scheduler stays listed (Grove keeps it available either way).
    assert {"name": "default-scheduler"} in scheduler["profiles"]


def test_grove_kai_values_reach_their_own_release():
    component = var("grove_kai", "component_entry", component_spec=DYNAMO)
    assert [r["chart"] for r in component["releases"]] == ["kai-scheduler", "grove-charts"]
    values = by_chart(
        "grove_kai",
        component_spec=DYNAMO,
        component_values={"kai-scheduler": {"global": {"tolerations": []}}, "grove-charts": {"replicaCount": 2}},
    )
    assert values["kai-scheduler"] == {"global": {"tolerations": []}}
    assert values["grove-charts"]["replicaCount"] == 2
    assert values["grove-charts"]["config"]["scheduler"]["defaultProfileName"] == "kai-scheduler"


def test_kai_queues_pass_the_upstream_queue_schema():
    schema = crd_schema("kai-scheduler/chart/crds/scheduling.run.ai_queues.yaml", "Queue")
    docs = render("grove_kai", "objects.yaml.j2", component_spec=DYNAMO)
    assert [d["metadata"]["name"] for d in docs] == ["modelplane-parent", "modelplane"]
    for doc in docs:
        assert (doc["apiVersion"], doc["kind"]) == ("scheduling.run.ai/v2", "Queue")
        assert "namespace" not in doc["metadata"], "Queue is cluster-scoped"
        jsonschema.validate(doc, schema)
    parent, leaf = docs
    assert "parentQueue" not in parent["spec"]
    assert leaf["spec"]["parentQueue"] == parent["metadata"]["name"]
    # Unlimited, like the chart's own default queues.
    example = list(yaml.safe_load_all((UPSTREAM / "kai-scheduler/examples/default-queues.yaml").read_text()))
    assert leaf["spec"]["resources"] == example[1]["spec"]["resources"]


def test_kai_queue_schema_check_catches_a_bad_queue():
    schema = crd_schema("kai-scheduler/chart/crds/scheduling.run.ai_queues.yaml", "Queue")
    docs = render("grove_kai", "objects.yaml.j2", grove_kai_queue_resources={"gpu": {"quota": "all"}})
    with pytest.raises(jsonschema.ValidationError):
        jsonschema.validate(docs[0], schema)


# --------------------------------------------------------------------------- modelexpress


MX_CRDS = "modelexpress/crds/modelexpress.nvidia.com_crds.yaml"


@pytest.fixture(scope="module")
def mx_docs() -> dict[str, list[dict[str, Any]]]:
    extra = {"component_spec": {"stack": "Dynamo", "dynamo": {"modelExpress": "0.4.1"}}}
    return {
        "crds": render("modelexpress", "crds.yaml.j2", **extra),
        "server": render("modelexpress", "server.yaml.j2", **extra),
        "component": var("modelexpress", "component_entry", **extra),
    }


def test_modelexpress_crds_match_upstream_validation(mx_docs):
    upstream = {d["metadata"]["name"]: d for d in yaml.safe_load_all((UPSTREAM / MX_CRDS).read_text()) if d}
    ours = {d["metadata"]["name"]: d for d in mx_docs["crds"]}
    assert (
        set(ours)
        == set(upstream)
        == {
            "modelmetadatas.modelexpress.nvidia.com",
            "modelcacheentries.modelexpress.nvidia.com",
        }
    )
    for name, crd in ours.items():
        theirs = upstream[name]
        assert crd["apiVersion"] == "apiextensions.k8s.io/v1"
        assert crd["metadata"]["labels"]["app.kubernetes.io/managed-by"] == "modelplane.serving"
        for field in ("group", "scope", "names"):
            assert crd["spec"][field] == theirs["spec"][field], f"{name}: spec.{field}"
        [mine_v] = crd["spec"]["versions"]
        [their_v] = theirs["spec"]["versions"]
        for field in ("name", "served", "storage", "subresources"):
            assert mine_v[field] == their_v[field], f"{name}: {field}"
        assert without_descriptions(mine_v["schema"]) == without_descriptions(their_v["schema"]), name
        assert without_descriptions(mine_v["additionalPrinterColumns"]) == without_descriptions(
            their_v["additionalPrinterColumns"]
        )


def test_modelexpress_objects_validate_against_our_crds(mx_docs):
    """A ModelMetadata as the server writes it passes our CRD's schema; a bad one does not."""
    schema = next(d for d in mx_docs["crds"] if d["spec"]["names"]["kind"] == "ModelMetadata")
    schema = schema["spec"]["versions"][0]["schema"]["openAPIV3Schema"]
    good = {
        "apiVersion": "modelexpress.nvidia.com/v1alpha1",
        "kind": "ModelMetadata",
        "metadata": {"name": "llama-0"},
        "spec": {"modelName": "meta-llama/Llama-3.1-8B"},
        "status": {"worker": {"workerRank": 0, "backendType": "nixl", "status": "Ready"}},
    }
    jsonschema.validate(good, schema)
    with pytest.raises(jsonschema.ValidationError):
        jsonschema.validate({**good, "status": {"worker": {"workerRank": 0, "status": "Gone"}}}, schema)


def _one(docs: list[dict[str, Any]], kind: str) -> dict[str, Any]:
    [doc] = [d for d in docs if d["kind"] == kind]
    return doc


def test_modelexpress_server_objects(mx_docs):
    docs = mx_docs["server"]
    namespace = mx_docs["component"]["namespace"]
    assert [d["kind"] for d in docs] == ["Namespace", "ServiceAccount", "Role", "RoleBinding", "Deployment", "Service"]
    assert all(d["metadata"].get("namespace", namespace) == namespace for d in docs)
    assert _one(docs, "Namespace")["metadata"]["name"] == namespace

    deployment = _one(docs, "Deployment")
    pod = deployment["spec"]["template"]
    [container] = pod["spec"]["containers"]
    assert container["image"] == "nvcr.io/nvidia/ai-dynamo/modelexpress-server:0.4.1"
    assert container["ports"] == [{"name": "grpc", "containerPort": 8001, "protocol": "TCP"}]
    env = {e["name"]: e for e in container["env"]}
    assert env["MX_METADATA_BACKEND"]["value"] == "kubernetes"
    assert env["MX_METADATA_NAMESPACE"]["valueFrom"] == {"fieldRef": {"fieldPath": "metadata.namespace"}}
    assert env["MODEL_EXPRESS_SERVER_PORT"]["value"] == "8001"
    assert env["MODEL_EXPRESS_LOG_LEVEL"]["value"] == "info"
    assert all(isinstance(e.get("value", ""), str) for e in container["env"]), "env values must be strings"
    for probe in ("livenessProbe", "readinessProbe"):
        assert container[probe]["tcpSocket"]["port"] in (8001, "grpc")
    assert pod["spec"]["securityContext"]["runAsNonRoot"] is True
    assert pod["spec"]["securityContext"]["runAsUser"] != 0
    assert container["securityContext"]["allowPrivilegeEscalation"] is False
    assert container["resources"]["requests"] and container["resources"]["limits"]["memory"]
    assert "imagePullSecrets" not in pod["spec"]
    # The selector picks the pod template, and the Service picks the same pods.
    selector = deployment["spec"]["selector"]["matchLabels"]
    assert selector.items() <= pod["metadata"]["labels"].items()
    service = _one(docs, "Service")
    assert service["spec"]["selector"].items() <= pod["metadata"]["labels"].items()
    assert service["spec"]["ports"] == [
        {"name": "grpc", "port": 8001, "targetPort": "grpc", "protocol": "TCP", "appProtocol": "grpc"}
    ]
    assert service["metadata"]["name"] == deployment["metadata"]["name"] == "modelexpress-server"
    # The pod runs as the ServiceAccount the RoleBinding grants.
    binding = _one(docs, "RoleBinding")
    assert pod["spec"]["serviceAccountName"] == _one(docs, "ServiceAccount")["metadata"]["name"]
    assert binding["subjects"] == [
        {"kind": "ServiceAccount", "name": pod["spec"]["serviceAccountName"], "namespace": namespace}
    ]
    assert binding["roleRef"]["name"] == _one(docs, "Role")["metadata"]["name"]


def _grants(rules: list[dict[str, Any]]) -> set[tuple[str, str, str]]:
    return {
        (group, resource, verb)
        for rule in rules
        for group in rule["apiGroups"]
        for resource in rule["resources"]
        for verb in rule["verbs"]
    }


def test_modelexpress_role_grants_what_the_upstream_rbac_does(mx_docs):
    upstream = yaml.safe_load_all((UPSTREAM / "modelexpress/manifests/rbac-modelmetadata.yaml").read_text())
    [their_role] = [d for d in upstream if d and d["kind"] == "Role"]
    ours = _grants(_one(mx_docs["server"], "Role")["rules"])
    assert _grants(their_role["rules"]) <= ours
    # ...and nothing beyond the ModelExpress kinds and configmaps.
    assert {(g, r.split("/")[0]) for g, r, _values in ours} == {
        ("modelexpress.nvidia.com", "modelmetadatas"),
        ("modelexpress.nvidia.com", "modelcacheentries"),
        ("", "configmaps"),
    }


def test_modelexpress_image_tag_and_pull_secrets_follow_the_variables():
    docs = render(
        "modelexpress",
        "server.yaml.j2",
        component_spec={"stack": "Dynamo", "dynamo": {"modelExpress": "0.5.0"}},
        modelexpress_image_pull_secrets=["nvcr-secret"],
        modelexpress_log_level="debug",
    )
    pod = _one(docs, "Deployment")["spec"]["template"]["spec"]
    assert pod["containers"][0]["image"].endswith(":0.5.0")
    assert pod["imagePullSecrets"] == [{"name": "nvcr-secret"}]
    assert {"name": "MODEL_EXPRESS_LOG_LEVEL", "value": "debug"} in pod["containers"][0]["env"]


# --------------------------------------------------------------------------- role interfaces


# Every role of the collection.
MY_ROLES = sorted(path.name for path in ROLES.iterdir() if (path / "tasks" / "main.yml").exists())


def _yaml(path: Path) -> Any:
    return yaml.safe_load(path.read_text()) if path.exists() else None


def test_my_roles_are_every_role_and_the_component_roles_are_the_tables():
    from ansible_collections.modelplane.serving.plugins.module_utils.servingstack.components import COMPONENTS

    assert {"servingstack", "component"} < set(MY_ROLES)
    assert set(MY_ROLES) - {"servingstack", "component"} == {c.name for c in COMPONENTS}


@pytest.mark.parametrize("role", MY_ROLES)
def test_argument_specs_mirror_defaults(role):
    defaults = _yaml(ROLES / role / "defaults" / "main.yml") or {}
    specs = _yaml(ROLES / role / "meta" / "argument_specs.yml")
    assert specs, f"{role}: no meta/argument_specs.yml"
    main = specs["argument_specs"]["main"]
    assert main.get("short_description"), role
    options = main.get("options") or {}
    assert set(options) == set(defaults), role
    for name, option in options.items():
        assert name.startswith(role + "_"), name
        assert option.get("description"), name
        if "default" in option:
            assert option["default"] == defaults[name], name


@pytest.mark.parametrize("role", MY_ROLES)
def test_every_default_is_commented(role):
    path = ROLES / role / "defaults" / "main.yml"
    lines = path.read_text().splitlines() if path.exists() else []
    for index, line in enumerate(lines):
        if line and not line.startswith((" ", "#", "-")) and ":" in line:
            assert lines[index - 1].startswith("#") or lines[index - 1].startswith(f"{role}_"), (
                f"{role}: {line.split(':')[0]} has no comment"
            )


# --------------------------------------------------------------------------- a component role is what differs

COMPONENT_ROLES = sorted(set(MY_ROLES) - {"servingstack", "component"})
# What a component role may hold: what differs from the others, and the include every one has.
MAY_HOLD = {
    "README.md", "meta/argument_specs.yml", "tasks/main.yml", "defaults/main.yml", "vars/main.yml",
    "templates/values.yaml.j2", "templates/objects.yaml.j2", "templates/prerequisites.yaml.j2",
    "tasks/present.yml", "tasks/absent.yml",
}


SHARED_STEPS = {"releases.yml", "apply_objects.yml", "delete_objects.yml"}


@pytest.mark.parametrize("role", COMPONENT_ROLES)
def test_a_component_roles_main_shows_every_step_naming_the_component(role):
    """The contract (roles/component/README.md): each task of a component role's tasks/main.yml is a shared step of
    modelplane.serving.component imported by name, or a step of its own in a file of its own (envoy_gateway reads its
    spec section first), and each names the component; the templates a step renders are the role's own."""
    for task in _yaml(ROLES / role / "tasks" / "main.yml"):
        assert task["vars"]["component_name"] == role, (role, task["name"])
        if "ansible.builtin.import_role" in task:
            assert task["ansible.builtin.import_role"]["name"] == "modelplane.serving.component"
            assert task["ansible.builtin.import_role"]["tasks_from"] in SHARED_STEPS, (role, task["name"])
            for template in (task["vars"].get("component_values_template"),
                             task["vars"].get("component_objects_template")):
                assert template is None or (ROLES / role / "templates" / template).is_file(), (role, template)
        elif "ansible.builtin.include_tasks" in task:
            assert (ROLES / role / "tasks" / task["ansible.builtin.include_tasks"]).is_file(), (role, task["name"])
        else:
            assert role == "envoy_gateway" and "ansible.builtin.set_fact" in task, (role, task["name"])


def test_no_role_guesses_its_caller_or_reaches_into_another_roles_folder():
    said = [str(path.relative_to(ROLES)) for path in ROLES.rglob("*.yml")
            if "ansible_parent_role_names" in path.read_text() or "role_path" in path.read_text()]
    assert said == []


@pytest.mark.parametrize("role", COMPONENT_ROLES)
def test_a_component_roles_values_are_keyed_by_its_charts(role):
    from ansible_collections.modelplane.serving.plugins.module_utils.servingstack.components import BY_NAME

    charts = [chart.name for chart in BY_NAME[role].charts]
    values = ROLES / role / "templates" / "values.yaml.j2"
    assert values.exists() == bool(charts), f"{role}: values.yaml.j2 is there exactly when the component has charts"
    extra = {"component_spec": {"stack": "Dynamo"}} if "Standard" not in BY_NAME[role].stacks else {}
    assert list(by_chart(role, **extra)) == charts
    if charts:
        assert list(yaml.safe_load(var(role, f"lookup('ansible.builtin.template', {str(values)!r})", **extra))) \
            == charts


def test_a_chart_only_component_is_its_values_and_readme():
    """lws, nfd, prometheus: the table entry, the schema's pin, and a role of values and a README (README.md,
    "Adding a component"), with the argument specs and tasks/main.yml every component role has."""
    from ansible_collections.modelplane.serving.plugins.module_utils.servingstack import components

    for role in ("lws", "nfd", "prometheus"):
        assert components.BY_NAME[role].charts and not components.BY_NAME[role].manifests, role
        held = {str(path.relative_to(ROLES / role)) for path in (ROLES / role).rglob("*") if path.is_file()}
        assert held == {"README.md", "meta/argument_specs.yml", "tasks/main.yml", "templates/values.yaml.j2"}, role


@pytest.mark.parametrize("role", COMPONENT_ROLES)
def test_a_component_role_holds_only_known_parts(role):
    held = {str(path.relative_to(ROLES / role)) for path in (ROLES / role).rglob("*") if path.is_file()}
    extra_templates = {name for name in held if name.startswith("templates/")} - MAY_HOLD
    extra_tasks = {name for name in held if name.startswith("tasks/")} - MAY_HOLD
    # envoy_gateway's present.yml and absent.yml both start with what tasks/spec.yml reads.
    assert extra_tasks <= {"tasks/spec.yml"}, role
    assert held - MAY_HOLD - extra_templates - extra_tasks == set(), role


@pytest.mark.parametrize("role", MY_ROLES)
def test_a_roles_vars_are_constants(role):
    """vars/ holds constants only: a value computed from the spec or from other variables is computed where it is
    used (a set_fact, a task's vars, a template)."""
    path = ROLES / role / "vars" / "main.yml"
    text = path.read_text() if path.exists() else ""
    assert "{{" not in text and "{%" not in text, role


def test_the_shared_settings_have_one_home():
    """state, spec, values, adopt, remove_crds, kubeconfig and timeouts: modelplane.serving.component's only; the
    paragraph on lookups and a task's environment is written once there."""
    shared = ("_state", "_spec", "_values", "_adopt", "_remove_crds", "_kubeconfig", "_wait_timeout", "_component")
    for role in COMPONENT_ROLES:
        defaults = _yaml(ROLES / role / "defaults" / "main.yml") or {}
        assert not [name for name in defaults if name.endswith(shared)], role
    said = [path for path in ROLES.rglob("*.yml")
            if "Lookups do not see a task's `environment`" in " ".join(path.read_text().replace("\n#", " ").split())]
    assert said == [ROLES / "component" / "defaults" / "main.yml"], said


def test_trust_managers_objects_keep_the_namespace_and_take_the_written_configmap_on_teardown():
    present = render("trust_manager", "objects.yaml.j2")
    absent = render("trust_manager", "objects.yaml.j2", component_state="absent")
    assert [(d["kind"], d["metadata"]["name"]) for d in present] == [
        ("Namespace", "modelplane-system"), ("Bundle", "mp-gateway-ca")]
    # Teardown deletes in reverse: the Bundle, then the ConfigMap it wrote; never the control plane's namespace.
    assert [(d["kind"], d["metadata"]["name"]) for d in reversed(absent)] == [
        ("Bundle", "mp-gateway-ca"), ("ConfigMap", "mp-gateway-ca")]


def test_the_dra_quota_goes_on_teardown_whatever_the_driver_root_and_the_namespace_stays():
    assert render("nvidia_dra", "prerequisites.yaml.j2") == []
    absent = render("nvidia_dra", "prerequisites.yaml.j2", component_state="absent")
    assert [d["kind"] for d in absent] == ["ResourceQuota"]


def test_modelexpress_objects_are_the_crds_then_the_server_and_teardown_keeps_the_crds_unless_asked(
        every_object_exists):
    extra = {"component_spec": {"stack": "Dynamo"}}
    objects = render("modelexpress", "objects.yaml.j2", **extra)
    assert [d["kind"] for d in objects] == ["CustomResourceDefinition"] * 2 + [
        "Namespace", "ServiceAccount", "Role", "RoleBinding", "Deployment", "Service"]
    extra["component_objects_template"] = "objects.yaml.j2"
    teardown = _teardown_finds("modelexpress", **extra)["component_objects_found"]
    assert [d["kind"] for d in teardown] == ["Service", "Deployment", "RoleBinding", "Role", "ServiceAccount",
                                             "Namespace"]
    removing = _teardown_finds("modelexpress", component_remove_crds=True, **extra)["component_objects_found"]
    assert [d["kind"] for d in removing][-2:] == ["CustomResourceDefinition"] * 2
    # A deletion gets references, none of the objects' data.
    assert all(set(ref) == {"apiVersion", "kind", "metadata"} for ref in removing)


def test_modelexpress_selector_survives_custom_labels():
    docs = render("modelexpress", "server.yaml.j2", modelexpress_labels={"team": "inference"})
    deployment = _one(docs, "Deployment")
    pod_labels = deployment["spec"]["template"]["metadata"]["labels"]
    assert deployment["spec"]["selector"]["matchLabels"].items() <= pod_labels.items()
    assert _one(docs, "Service")["spec"]["selector"].items() <= pod_labels.items()
    assert pod_labels["team"] == "inference"


# --------------------------------------------------------------------------- envoy_gateway templates


def _gateway_facts(**extra: Any) -> dict[str, Any]:
    """What envoy_gateway's first step sets (its tasks/main.yml, for both states), with its task's vars."""
    tasks = _load(ROLES / "envoy_gateway" / "tasks" / "main.yml")
    [task] = [task for task in tasks if "ansible.builtin.set_fact" in task]
    templar_ = templar("envoy_gateway", **extra, **task.get("vars", {}))
    return {name: templar_.template(value) for name, value in task["ansible.builtin.set_fact"].items()}


def test_gateway_objects_keep_yaml_lookalike_names_and_wildcard_hostnames_as_strings():
    # The spec accepts these; rendered unquoted, YAML would read an alias (*.), an integer, a boolean
    # and a null, and a real API server would refuse the objects (or the parse would fail mid-converge).
    from servingstack_docs import CERTIFICATE as certificate

    spec = {
        "gateway": {
            "className": "true",
            "hostname": "*.example.com",
            "listeners": [{"name": "8080", "port": 8080, "protocol": "HTTP"}],
            "clientCAs": [{"name": "null", "certificate": certificate}],
        },
    }
    facts = _gateway_facts(component_spec=spec)
    gateway_docs = render("envoy_gateway", "gateway.yaml.j2", component_spec=spec, **facts)
    tls_docs = render("envoy_gateway", "tls.yaml.j2", component_spec=spec, **facts)
    by_kind = {(doc["kind"], doc["metadata"]["name"]): doc for doc in gateway_docs + tls_docs}
    assert by_kind[("GatewayClass", "true")]["metadata"]["name"] == "true"
    gateway = next(doc for doc in gateway_docs if doc["kind"] == "Gateway")
    assert gateway["spec"]["gatewayClassName"] == "true"
    names = [listener["name"] for listener in gateway["spec"]["listeners"]]
    assert names[0] == "8080"
    assert all(isinstance(listener["port"], int) for listener in gateway["spec"]["listeners"])
    annotations = by_kind[("ConfigMap", "mp-client-ca-null")]["metadata"]["annotations"]
    assert annotations == {"modelplane.ai/inference-gateway": "null"}
    serving = [doc for doc in tls_docs if doc["kind"] == "Certificate" and "dnsNames" in doc["spec"]]
    assert serving[0]["spec"]["dnsNames"] == ["*.example.com"]


# --------------------------------------------------------------------------- the steps of a converge


@pytest.fixture
def every_object_exists(monkeypatch):
    """servingstack_objects as if the cluster held every object asked for, as a teardown of a converged stack finds
    it (the lookup reads through kubeclient)."""
    from ansible_collections.modelplane.serving.plugins.module_utils.servingstack import kubeclient

    monkeypatch.setattr(kubeclient, "connect", lambda *args, **kwargs: object())
    monkeypatch.setattr(kubeclient, "read", lambda client, ref: ref)


def _holds(templar_: Any, when: Any) -> bool:
    """A task's ``when`` (one condition or a list of them, all to hold), as Ansible evaluates it."""
    from ansible.template import trust_as_template

    conditions = [] if when is None else when if isinstance(when, list) else [when]
    return all(templar_.template(trust_as_template("{{ " + str(condition) + " }}")) for condition in conditions)


def _teardown_finds(role: str, **extra: Any) -> dict[str, Any]:
    """What modelplane.serving.component's delete_objects step finds to delete (its task's vars), on absent unless
    ``extra`` says otherwise."""
    templar_ = templar(role, **{"component_state": "absent", **extra})
    [delete] = _component_tasks("delete_objects")
    return {name: templar_.template(value) for name, value in delete.get("vars", {}).items()}


def _steps(role: str, **extra: Any) -> list[str]:
    """The steps component role ``role`` takes (its tasks/main.yml), in order, for component_state: each task whose
    ``when`` holds (with its vars), named "releases" (on absent "uninstall.yml") when it has releases, by the object
    template it applies or deletes when that renders objects ("prerequisites.yml" or "objects.yml"; "objects" for
    objects the task names itself), or by the task file of its own it includes. A run not in check mode that changed
    no release (component_helm)."""
    base = templar(role, **extra)
    state = base.template(base.available_variables["component_state"])
    steps = []
    for task in _yaml(ROLES / role / "tasks" / "main.yml"):
        variables = {**base.available_variables, "ansible_check_mode": False, "component_helm": {"changed": False},
                     **task.get("vars", {})}
        templar_ = base.copy_with_new_env(available_variables=variables)
        if not _holds(templar_, task.get("when")) or "ansible.builtin.set_fact" in task:
            continue
        if "ansible.builtin.include_tasks" in task:
            steps.append(task["ansible.builtin.include_tasks"])
        elif task["ansible.builtin.import_role"]["tasks_from"] == "releases.yml":
            if templar_.template(trust("{{ component_entry.releases }}")):
                steps.append("releases" if state == "present" else "uninstall.yml")
        else:
            applies = task["ansible.builtin.import_role"]["tasks_from"] == "apply_objects.yml"
            found = (templar_.template(trust("{{ component_objects }}")) if applies
                     else _teardown_finds(role, **{"component_state": state, **extra, **task["vars"]})[
                         "component_objects_found"])
            if found:
                template = task["vars"].get("component_objects_template", "")
                steps.append("prerequisites.yml" if template.startswith("prereq")
                             else "objects.yml" if template else "objects")
    return steps


def trust(expression: str) -> Any:
    from ansible.template import trust_as_template

    return trust_as_template(expression)


@pytest.mark.parametrize(("role", "extra", "present", "absent"), [
    # A chart-only component: its releases, nothing else.
    ("lws", {}, ["releases"], ["uninstall.yml"]),
    # The webhook probe runs after a release changed (cert_manager_probe: changed).
    ("cert_manager", {}, ["releases"], ["absent.yml", "uninstall.yml"]),
    ("cert_manager", {"cert_manager_probe": "always"}, ["releases", "present.yml"], ["absent.yml", "uninstall.yml"]),
    ("trust_manager", {}, ["releases", "objects.yml"], ["objects.yml", "uninstall.yml"]),
    # The quota goes before the release when the driver root needs it, and after it on teardown whatever the root.
    ("nvidia_dra", {"component_spec": {"nvidiaDriverRoot": GKE_ROOT}},
     ["prerequisites.yml", "releases"], ["uninstall.yml", "prerequisites.yml"]),
    # With the driver root /, a quota an earlier run made for another root is found and removed.
    ("nvidia_dra", {}, ["releases", "objects"], ["uninstall.yml", "prerequisites.yml"]),
    ("grove_kai", {"component_spec": DYNAMO}, ["releases", "objects.yml"], ["objects.yml", "uninstall.yml"]),
    ("modelexpress", {"component_spec": DYNAMO}, ["objects.yml"], ["objects.yml"]),
    ("envoy_gateway", {}, ["releases", "present.yml"], ["absent.yml", "uninstall.yml"]),
])
def test_a_converge_runs_only_the_steps_the_component_has_in_order_and_teardown_backwards(role, extra, present,
                                                                                          absent, every_object_exists):
    assert _steps(role, **extra) == present
    assert _steps(role, component_state="absent", **extra) == absent


def _leftover_quota_step() -> dict[str, Any]:
    """nvidia_dra's step that removes a quota an earlier run made, loaded as Ansible loads it (its vars templated)."""
    from ansible.parsing.dataloader import DataLoader

    tasks = DataLoader().load_from_file(str(ROLES / "nvidia_dra" / "tasks" / "main.yml"), trusted_as_template=True)
    [step] = [task for task in tasks if task["name"].startswith("Remove a ResourceQuota an earlier run made")]
    return step


def test_with_the_driver_root_slash_the_quota_an_earlier_run_made_is_found_by_its_name_and_namespace(
        every_object_exists):
    step = _leftover_quota_step()
    assert step["ansible.builtin.import_role"]["tasks_from"] == "delete_objects.yml"
    found = _teardown_finds("nvidia_dra", component_state="present", **step["vars"])["component_objects_found"]
    namespace = var("nvidia_dra", "component_entry")["namespace"]
    assert found == [{"apiVersion": "v1", "kind": "ResourceQuota",
                      "metadata": {"name": "allow-critical-pods", "namespace": namespace}}]


def test_without_a_leftover_quota_its_removal_runs_no_module(monkeypatch):
    from ansible_collections.modelplane.serving.plugins.module_utils.servingstack import kubeclient

    monkeypatch.setattr(kubeclient, "connect", lambda *args, **kwargs: object())
    monkeypatch.setattr(kubeclient, "read", lambda client, ref: None)
    step = _leftover_quota_step()
    [delete] = _component_tasks("delete_objects")
    variables = {**_teardown_finds("nvidia_dra", component_state="present", **step["vars"]), **step["vars"]}
    templar_ = templar("nvidia_dra", component_state="present", **variables)
    assert not _holds(templar_, delete["when"])


def test_the_releases_get_the_values_the_component_renders_for_every_step():
    """component_charts is rendered in one place (modelplane.serving.component's defaults, templated where used), and
    both kubernetes.core.helm (releases.yml) and the CRD rendering of a teardown (uninstall.yml) loop over its releases
    and take each one's values."""
    assert "component_charts" in _load(COMPONENT / "defaults" / "main.yml")
    for step in ("releases", "apply_objects", "delete_objects", "uninstall", "login"):
        assert not [name for task in _component_tasks(step) for name in task.get("vars", {})
                    if name == "component_charts"], f"{step}.yml renders nothing again"
    for step, module in (("releases.yml", "kubernetes.core.helm"), ("uninstall.yml", "kubernetes.core.helm_template")):
        [task] = [task for task in _yaml(COMPONENT / "tasks" / step) if module in task]
        assert task[module]["release_values"] == "{{ component_release.release_values }}"
        assert task["loop"] == "{{ component_charts.releases }}"
