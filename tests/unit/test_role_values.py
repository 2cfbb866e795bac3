"""The Helm values and templates of the roles nfd, nvidia_dra, lws, grove_kai, modelexpress and prometheus.

Each role's variables are rendered with Ansible's own templating (defaults, then vars, then the test's
extra vars, as a play would), and every values key is checked against the chart's upstream values.yaml.
Objects of custom kinds are validated against their upstream CRD schema.
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


def templar(role: str, **extra: Any):
    """An Ansible Templar over the role's defaults, its vars and ``extra`` (in play precedence order)."""
    from ansible.parsing.dataloader import DataLoader
    from ansible.template import Templar

    # tests/conftest.py installed Ansible's collection loader over .collections for the session.
    variables: dict[str, Any] = {}
    variables.update(_load(ROLES / role / "defaults" / "main.yml"))
    if (ROLES / role / "vars" / "main.yml").exists():
        variables.update(_load(ROLES / role / "vars" / "main.yml"))
    variables.update(extra)
    return Templar(loader=DataLoader(), variables=variables)


def var(role: str, name: str, **extra: Any) -> Any:
    from ansible.template import trust_as_template

    return templar(role, **extra).template(trust_as_template("{{ " + name + " }}"))


def render(role: str, template: str, **extra: Any) -> list[dict[str, Any]]:
    """The role's template rendered like lookup('ansible.builtin.template') | from_yaml_all | select."""
    from ansible.template import trust_as_template

    text = (ROLES / role / "templates" / template).read_text()
    rendered = templar(role, **extra).template(trust_as_template(text))
    return [doc for doc in yaml.safe_load_all(rendered) if doc]


def release_values(role: str, **extra: Any) -> dict[str, dict[str, Any]]:
    """Release name -> values, as the role hands them to modelplane.serving.helm_release."""
    component = var(role, f"{role}_component", **extra)
    if role == "grove_kai":
        return var(role, "grove_kai_helm_values", **extra)
    return {component["releases"][0]["release"]: var(role, f"{role}_helm_values", **extra)}


def by_chart(role: str, **extra: Any) -> dict[str, dict[str, Any]]:
    component = var(role, f"{role}_component", **extra)
    values = release_values(role, **extra)
    return {release["chart"]: values[release["release"]] for release in component["releases"]}


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
        ("nvidia_dra", {"nvidia_dra_spec": {"nvidiaDriverRoot": GKE_ROOT}}),
        ("lws", {}),
        ("grove_kai", {"grove_kai_spec": DYNAMO}),
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
    values = copy.deepcopy(var("nfd", "nfd_helm_values"))
    values["worker"]["tolerationz"] = []
    assert unknown_paths(values, chart_defaults("node-feature-discovery"), "node-feature-discovery") == [
        "worker.tolerationz"
    ]


# --------------------------------------------------------------------------- nfd


def test_nfd_worker_tolerates_the_gpu_taint():
    values = var("nfd", "nfd_helm_values")
    assert {"key": "nvidia.com/gpu", "operator": "Exists", "effect": "NoSchedule"} in values["worker"]["tolerations"]
    # The chart's default is no toleration at all: without ours the DRA chain breaks silently.
    assert chart_defaults("node-feature-discovery")["worker"]["tolerations"] == []


def test_user_values_merge_over_the_role_values_recursively():
    values = var(
        "nfd", "nfd_helm_values", nfd_values={"worker": {"nodeSelector": {"pool": "gpu"}}, "gc": {"enable": False}}
    )
    assert values["worker"]["nodeSelector"] == {"pool": "gpu"}
    assert values["worker"]["tolerations"], "the role's toleration must survive a user's worker values"
    assert values["gc"] == {"enable": False}


def test_nfd_release_is_the_fixed_prefixed_name():
    assert list(release_values("nfd")) == ["mp-node-feature-discovery"]


# --------------------------------------------------------------------------- nvidia_dra


def test_dra_default_driver_root_sets_no_value_and_no_quota():
    values = var("nvidia_dra", "nvidia_dra_helm_values")
    assert "nvidiaDriverRoot" not in values
    assert values["gpuResourcesEnabledOverride"] is True
    assert values["resources"]["computeDomains"]["enabled"] is False
    assert var("nvidia_dra", "nvidia_dra_critical_quota") is False


@pytest.mark.parametrize(
    "extra",
    [
        {"nvidia_dra_spec": {"nvidiaDriverRoot": GKE_ROOT}},
        # A whole ServingStack manifest works as the spec too.
        {"nvidia_dra_spec": {"apiVersion": "x/v1", "kind": "ServingStack", "spec": {"nvidiaDriverRoot": GKE_ROOT}}},
        {"servingstack_spec": {"nvidiaDriverRoot": GKE_ROOT}},
        {"nvidia_dra_driver_root": GKE_ROOT},
    ],
    ids=["role-spec", "manifest", "servingstack_spec", "explicit"],
)
def test_dra_gke_driver_root_sets_the_value_and_the_quota(extra):
    values = var("nvidia_dra", "nvidia_dra_helm_values", **extra)
    assert values["nvidiaDriverRoot"] == GKE_ROOT
    assert var("nvidia_dra", "nvidia_dra_critical_quota", **extra) is True


def test_dra_values_keep_the_chart_rendering():
    """The chart fails to render with GPUs on but no override, with a namespace value, or with nvidiaCtkPath."""
    for extra in ({}, {"nvidia_dra_driver_root": GKE_ROOT}):
        values = var("nvidia_dra", "nvidia_dra_helm_values", **extra)
        gpus = values.get("resources", {}).get("gpus", {}).get("enabled", True)
        assert not gpus or values["gpuResourcesEnabledOverride"] is True
        assert "namespace" not in values
        assert "nvidiaCtkPath" not in values
    namespace = var("nvidia_dra", "nvidia_dra_component")["namespace"]
    assert namespace != "default"


def test_dra_quota_admits_system_critical_pods_in_the_driver_namespace():
    docs = render("nvidia_dra", "critical-pods-quota.yaml.j2", nvidia_dra_driver_root=GKE_ROOT)
    namespace = var("nvidia_dra", "nvidia_dra_component")["namespace"]
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
    component = var("lws", "lws_component", lws_spec={"standard": {"leaderWorkerSet": "v0.9.0"}})
    assert component["releases"][0]["version"] == "v0.9.0"
    assert release_values("lws") == {"mp-lws": {}}


def test_prometheus_values_are_what_modelplane_composes():
    values = var("prometheus", "prometheus_helm_values")
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
    configs = var("prometheus", "prometheus_helm_values")["prometheus"]["prometheusSpec"]["additionalScrapeConfigs"]
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
    values = by_chart("grove_kai", grove_kai_spec=DYNAMO)
    scheduler = values["grove-charts"]["config"]["scheduler"]
    assert scheduler["defaultProfileName"] == "kai-scheduler"
    assert {"name": "kai-scheduler"} in scheduler["profiles"]
    # default-scheduler stays listed (Grove keeps it available either way).
    assert {"name": "default-scheduler"} in scheduler["profiles"]


def test_grove_kai_values_reach_their_own_release():
    component = var("grove_kai", "grove_kai_component", grove_kai_spec=DYNAMO)
    assert [r["chart"] for r in component["releases"]] == ["kai-scheduler", "grove-charts"]
    values = release_values(
        "grove_kai",
        grove_kai_spec=DYNAMO,
        grove_kai_kai_values={"global": {"tolerations": []}},
        grove_kai_grove_values={"replicaCount": 2},
    )
    assert values["mp-kai-scheduler"] == {"global": {"tolerations": []}}
    assert values["mp-grove-charts"]["replicaCount"] == 2
    assert values["mp-grove-charts"]["config"]["scheduler"]["defaultProfileName"] == "kai-scheduler"


def test_kai_queues_pass_the_upstream_queue_schema():
    schema = crd_schema("kai-scheduler/chart/crds/scheduling.run.ai_queues.yaml", "Queue")
    docs = render("grove_kai", "queues.yaml.j2", grove_kai_spec=DYNAMO)
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
    docs = render("grove_kai", "queues.yaml.j2", grove_kai_queue_resources={"gpu": {"quota": "all"}})
    with pytest.raises(jsonschema.ValidationError):
        jsonschema.validate(docs[0], schema)


# --------------------------------------------------------------------------- modelexpress


MX_CRDS = "modelexpress/crds/modelexpress.nvidia.com_crds.yaml"


@pytest.fixture(scope="module")
def mx_docs() -> dict[str, list[dict[str, Any]]]:
    extra = {"modelexpress_spec": {"stack": "Dynamo", "dynamo": {"modelExpress": "0.4.1"}}}
    return {
        "crds": render("modelexpress", "crds.yaml.j2", **extra),
        "server": render("modelexpress", "server.yaml.j2", **extra),
        "component": var("modelexpress", "modelexpress_component", **extra),
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
        modelexpress_spec={"stack": "Dynamo", "dynamo": {"modelExpress": "0.5.0"}},
        modelexpress_image_pull_secrets=["nvcr-secret"],
        modelexpress_log_level="debug",
    )
    pod = _one(docs, "Deployment")["spec"]["template"]["spec"]
    assert pod["containers"][0]["image"].endswith(":0.5.0")
    assert pod["imagePullSecrets"] == [{"name": "nvcr-secret"}]
    assert {"name": "MODEL_EXPRESS_LOG_LEVEL", "value": "debug"} in pod["containers"][0]["env"]


# --------------------------------------------------------------------------- role interfaces


MY_ROLES = ["nfd", "nvidia_dra", "lws", "grove_kai", "modelexpress", "prometheus"]


@pytest.mark.parametrize("role", MY_ROLES)
def test_argument_specs_mirror_defaults(role):
    defaults = yaml.safe_load((ROLES / role / "defaults" / "main.yml").read_text())
    specs = yaml.safe_load((ROLES / role / "meta" / "argument_specs.yml").read_text())
    options = specs["argument_specs"]["main"]["options"]
    assert set(options) == set(defaults), role
    for name, option in options.items():
        assert name.startswith(role + "_"), name
        assert option.get("description"), name
        if "default" in option:
            assert option["default"] == defaults[name], name


@pytest.mark.parametrize("role", MY_ROLES)
def test_every_default_is_commented(role):
    lines = (ROLES / role / "defaults" / "main.yml").read_text().splitlines()
    for index, line in enumerate(lines):
        if line and not line.startswith((" ", "#", "-")) and ":" in line:
            assert lines[index - 1].startswith("#") or lines[index - 1].startswith(f"{role}_"), (
                f"{role}: {line.split(':')[0]} has no comment"
            )


def test_modelexpress_selector_survives_custom_labels():
    docs = render("modelexpress", "server.yaml.j2", modelexpress_labels={"team": "inference"})
    deployment = _one(docs, "Deployment")
    pod_labels = deployment["spec"]["template"]["metadata"]["labels"]
    assert deployment["spec"]["selector"]["matchLabels"].items() <= pod_labels.items()
    assert _one(docs, "Service")["spec"]["selector"].items() <= pod_labels.items()
    assert pod_labels["team"] == "inference"


# --------------------------------------------------------------------------- envoy_gateway templates


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
    gateway_docs = render("envoy_gateway", "gateway.yaml.j2", envoy_gateway_spec=spec)
    tls_docs = render("envoy_gateway", "tls.yaml.j2", envoy_gateway_spec=spec)
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
