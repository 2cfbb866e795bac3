"""The test charts (``build.py``): built, served, accepted by real helm, and rendering what the collection relies on.

Run: ``.venv/bin/python -m pytest testing/charts -p no:xdist -q``. The values each chart is rendered with are the
collection's own: ``roles/<role>/templates/values.yaml.j2``, keyed by chart (``roles/component`` merges the user's
empty-by-default ``component_values`` over them and hands them to ``kubernetes.core.helm``), with the releases
(``mp-<chart>``) and namespaces of the components table. Everything skips, with that reason, only when
``<repo>/../shared/upstream`` is absent.
"""

from __future__ import annotations

import hashlib
import importlib.util
import json
import os
import subprocess
import sys
import tarfile
from pathlib import Path
from types import ModuleType
from typing import Any

import jinja2
import pytest
import yaml

HERE = Path(__file__).resolve().parent
REPO_ROOT = HERE.parents[1]


def _load(name: str, path: Path) -> ModuleType:
    spec = importlib.util.spec_from_file_location(name, path)
    assert spec and spec.loader
    module = importlib.util.module_from_spec(spec)
    sys.modules[name] = module  # dataclasses look their module up there
    spec.loader.exec_module(module)
    return module


fixtures = _load("testing_charts_fixtures", HERE / "fixtures.py")
build = fixtures.load_build()
components = _load("testing_charts_components", REPO_ROOT / "plugins/module_utils/servingstack/components.py")
chart_repo = fixtures.chart_repo

# Chart -> the component role whose templates/values.yaml.j2 holds its values.
ROLE_OF_CHART: dict[str, str] = {
    "cert-manager": "cert_manager",
    "trust-manager": "trust_manager",
    "node-feature-discovery": "nfd",
    "dra-driver-nvidia-gpu": "nvidia_dra",
    "gateway-helm": "envoy_gateway",
    "ai-gateway-crds-helm": "envoy_gateway",
    "ai-gateway-helm": "envoy_gateway",
    "lws": "lws",
    "kai-scheduler": "grove_kai",
    "grove-charts": "grove_kai",
    "kube-prometheus-stack": "prometheus",
}
GKE_DRIVER_ROOT = "/home/kubernetes/bin/nvidia"
KEEP = "helm.sh/resource-policy"
HOOK, WEIGHT, DELETE = "helm.sh/hook", "helm.sh/hook-weight", "helm.sh/hook-delete-policy"
_LOADER = getattr(yaml, "CSafeLoader", yaml.SafeLoader)  # libyaml: the lws CRD is 1.3 MB


def _chart_versions() -> list[tuple[str, str, str]]:
    """(chart, version, appVersion) of every test chart, from the facts files."""
    found = []
    for source in build.chart_sources():
        facts = build.load_facts(source)
        found += [(facts["name"], str(v["version"]), str(v["appVersion"])) for v in facts["versions"]]
    return found


CHART_VERSIONS = _chart_versions()
IDS = [f"{name}-{version}" for name, version, _ in CHART_VERSIONS]


def _table_chart(name: str) -> Any:
    return next(chart for component in components.COMPONENTS for chart in component.charts if chart.name == name)


def _component_of(chart_name: str) -> Any:
    return next(c for c in components.COMPONENTS if any(chart.name == chart_name for chart in c.charts))


def collection_values(chart: str, driver_root: str = "/") -> dict[str, Any]:
    """The values the collection hands helm for ``chart`` (the role's own, no user values): its role's
    ``templates/values.yaml.j2`` rendered as Ansible renders it, with what that template reads."""
    role = ROLE_OF_CHART[chart]
    environment = jinja2.Environment(undefined=jinja2.StrictUndefined, trim_blocks=True)
    environment.filters["to_json"] = json.dumps
    environment.filters["bool"] = lambda value: str(value).lower() in {"true", "yes", "1"}
    component = components.BY_NAME[role]
    context = {
        # What the template reads of its plan entry (plan.py): the component's namespace and its releases' charts.
        "component_entry": {"namespace": component.namespace,
                            "releases": [{"chart": chart.name, "namespace": chart.namespace}
                                         for chart in component.charts]},
        "nvidia_dra_driver_root": driver_root,
    }
    text = (REPO_ROOT / "roles" / role / "templates" / "values.yaml.j2").read_text()
    return (yaml.safe_load(environment.from_string(text).render(context)) or {})[chart] or {}


# --- helm ---------------------------------------------------------------------------------------------------


@pytest.fixture(scope="module")
def helm_env(tmp_path_factory: pytest.TempPathFactory) -> dict[str, str]:
    """helm's homes, repositories and cache in a temporary directory (never the user's)."""
    home = tmp_path_factory.mktemp("helm-home")
    env = {key: value for key, value in os.environ.items() if not key.startswith(("HELM_", "KUBECONFIG"))}
    env.update(
        HELM_CACHE_HOME=str(home / "cache"),
        HELM_CONFIG_HOME=str(home / "config"),
        HELM_DATA_HOME=str(home / "data"),
        HELM_REPOSITORY_CONFIG=str(home / "config" / "repositories.yaml"),
        HELM_REPOSITORY_CACHE=str(home / "cache" / "repository"),
        KUBECONFIG=str(home / "no-kubeconfig"),
    )
    return env


def helm(env: dict[str, str], *args: str, check: bool = True) -> subprocess.CompletedProcess[str]:
    result = subprocess.run(
        [fixtures.helm_binary(), *args], env=env, capture_output=True, text=True, timeout=120, check=False
    )
    if check:
        assert result.returncode == 0, f"helm {' '.join(args)}: {result.stderr}"
    return result


def _values_file(tmp_path: Path, values: dict[str, Any]) -> str:
    path = tmp_path / f"values-{len(list(tmp_path.glob('values-*')))}.yaml"
    path.write_text(yaml.safe_dump(values))
    return str(path)


def _tgz(repo: Any, chart: str, version: str) -> str:
    return str(repo.directory / f"{chart}-{version}.tgz")


def template(
    repo: Any, env: dict[str, str], tmp_path: Path, chart: str, version: str, values: dict[str, Any], *extra: str
) -> list[dict[str, Any]]:
    """``helm template`` as the collection installs it (release mp-<chart>, the table's namespace): the objects,
    each with its ``# Source:`` under ``_source``."""
    table = _table_chart(chart)
    out = helm(
        env,
        "template",
        components.RELEASE_PREFIX + table.name,
        _tgz(repo, chart, version),
        "--namespace",
        table.namespace,
        "-f",
        _values_file(tmp_path, values),
        *extra,
    ).stdout
    docs = []
    for text in out.split("\n---\n"):
        source = next((line[len("# Source: ") :] for line in text.splitlines() if line.startswith("# Source: ")), "")
        doc = yaml.load(text, Loader=_LOADER)
        if isinstance(doc, dict):
            doc["_source"] = source
            docs.append(doc)
    return docs


def find(docs: list[dict[str, Any]], kind: str, name: str | None = None) -> list[dict[str, Any]]:
    return [d for d in docs if d.get("kind") == kind and (name is None or d["metadata"]["name"] == name)]


def one(docs: list[dict[str, Any]], kind: str, name: str) -> dict[str, Any]:
    found = find(docs, kind, name)
    assert len(found) == 1, (
        f"{kind}/{name}: {len(found)} found among {[(d['kind'], d['metadata']['name']) for d in docs]}"
    )
    return found[0]


def chart_files(repo: Any, chart: str, version: str) -> list[str]:
    with tarfile.open(_tgz(repo, chart, version)) as archive:
        return archive.getnames()


def render_collection(repo: Any, env: dict[str, str], tmp_path: Path, chart: str, version: str) -> list[dict]:
    return template(repo, env, tmp_path, chart, version, collection_values(chart))


# --- the build and the repository ---------------------------------------------------------------------------


def test_build_without_upstream_fails_clearly(tmp_path: Path) -> None:
    with pytest.raises(build.BuildError, match=r"upstream reference data not found at .*missing"):
        build.build(tmp_path / "out", helm=fixtures.helm_binary(), upstream=tmp_path / "missing")


def test_build_makes_every_chart_version(chart_repo: Any) -> None:
    assert sorted(chart_repo.charts) == sorted(IDS)
    index = yaml.safe_load((chart_repo.directory / "index.yaml").read_text())
    indexed = {(name, entry["version"]) for name, entries in index["entries"].items() for entry in entries}
    assert indexed == {(name, version) for name, version, _ in CHART_VERSIONS}
    for name, version, app_version in CHART_VERSIONS:
        entry = next(e for e in index["entries"][name] if e["version"] == version)
        assert entry["appVersion"] == app_version
        assert entry["urls"] == [f"{chart_repo.url}/{name}-{version}.tgz"]
        assert entry["description"].startswith("TEST CHART of modelplane.serving")


def test_helm_repo_add_and_search_list_every_chart(chart_repo: Any, helm_env: dict[str, str]) -> None:
    helm(helm_env, "repo", "add", "testcharts", chart_repo.url)
    helm(helm_env, "repo", "update", "testcharts")
    listed = json.loads(helm(helm_env, "search", "repo", "testcharts/", "--versions", "--devel", "-o", "json").stdout)
    assert {(item["name"], item["version"]) for item in listed} == {
        (f"testcharts/{name}", version) for name, version, _ in CHART_VERSIONS
    }
    shown = yaml.safe_load(helm(helm_env, "show", "chart", "testcharts/lws", "--version", "v0.7.0").stdout)
    assert (shown["name"], shown["version"], shown["appVersion"]) == ("lws", "v0.7.0", "v0.7.0")


def test_every_table_default_version_is_built(chart_repo: Any) -> None:
    """Each chart of the components table, at the reference's default (or the table's fixed) version."""
    crd = yaml.safe_load((REPO_ROOT / "crds" / "servingstacks.infrastructure.modelplane.ai.yaml").read_text())
    spec = crd["spec"]["versions"][0]["schema"]["openAPIV3Schema"]["properties"]["spec"]
    for component in components.COMPONENTS:
        for chart in component.charts:
            version = chart.version
            if version is None:
                node = spec
                for step in chart.version_key.split("."):
                    node = node["properties"][step]
                version = node["default"]
            assert f"{chart.name}-{version}" in chart_repo.charts


# --- every chart version: lint and render with the collection's values -------------------------------------


@pytest.mark.parametrize(("chart", "version", "app_version"), CHART_VERSIONS, ids=IDS)
def test_lint_with_collection_values(
    chart_repo: Any, helm_env: dict[str, str], tmp_path: Path, chart: str, version: str, app_version: str
) -> None:
    table = _table_chart(chart)
    values = _values_file(tmp_path, collection_values(chart))
    result = helm(helm_env, "lint", _tgz(chart_repo, chart, version), "--namespace", table.namespace, "-f", values)
    assert "0 chart(s) failed" in result.stdout


@pytest.mark.parametrize(("chart", "version", "app_version"), CHART_VERSIONS, ids=IDS)
def test_workload_images_default_to_app_version(
    chart_repo: Any, helm_env: dict[str, str], tmp_path: Path, chart: str, version: str, app_version: str
) -> None:
    docs = render_collection(chart_repo, helm_env, tmp_path, chart, version)
    own = [d for d in docs if d["kind"] in ("Deployment", "DaemonSet") and f"{chart}/charts/" not in d["_source"]]
    if chart != "ai-gateway-crds-helm":
        assert own, f"{chart} {version} renders no controller"
    # dra-driver-nvidia-gpu tags its image v<appVersion> (its appVersion has no v).
    tag = f"v{app_version}" if chart == "dra-driver-nvidia-gpu" else app_version
    for doc in own:
        for container in doc["spec"]["template"]["spec"]["containers"]:
            assert container["image"].rsplit(":", 1)[1] == tag, (doc["metadata"]["name"], container["image"])


# --- what the collection relies on, per chart ---------------------------------------------------------------


def test_nfd_worker_tolerates_gpu_nodes_with_collection_values(
    chart_repo: Any, helm_env: dict[str, str], tmp_path: Path
) -> None:
    release = components.RELEASE_PREFIX + _table_chart("node-feature-discovery").name
    docs = render_collection(chart_repo, helm_env, tmp_path, "node-feature-discovery", "0.18.3")
    worker = one(docs, "DaemonSet", f"{release}-worker")
    assert {"key": "nvidia.com/gpu", "operator": "Exists", "effect": "NoSchedule"} in (
        worker["spec"]["template"]["spec"]["tolerations"]
    )
    assert {d["metadata"]["name"] for d in find(docs, "Deployment")} == {f"{release}-master", f"{release}-gc"}
    defaults = template(chart_repo, helm_env, tmp_path, "node-feature-discovery", "0.18.3", {})
    assert "tolerations" not in one(defaults, "DaemonSet", worker["metadata"]["name"])["spec"]["template"]["spec"]
    assert "nfd-api-crds.yaml" in {
        Path(name).name for name in chart_files(chart_repo, "node-feature-discovery", "0.18.3")
    }


def test_dra_kubelet_plugin_mounts_the_driver_root(chart_repo: Any, helm_env: dict[str, str], tmp_path: Path) -> None:
    values = collection_values("dra-driver-nvidia-gpu", driver_root=GKE_DRIVER_ROOT)
    assert values["nvidiaDriverRoot"] == GKE_DRIVER_ROOT
    docs = template(chart_repo, helm_env, tmp_path, "dra-driver-nvidia-gpu", "0.4.0", values)
    plugin = one(docs, "DaemonSet", "dra-driver-nvidia-gpu-kubelet-plugin")["spec"]["template"]["spec"]
    volumes = {volume["name"]: volume["hostPath"]["path"] for volume in plugin["volumes"]}
    assert volumes["driver-root"] == GKE_DRIVER_ROOT
    assert volumes["driver-root-parent"] == "/home/kubernetes/bin"
    assert [c["name"] for c in plugin["containers"]] == ["gpus"]  # computeDomains off: no compute-domains container
    assert {"name": "NVIDIA_DRIVER_ROOT", "value": GKE_DRIVER_ROOT} in plugin["containers"][0]["env"]
    assert not find(docs, "Deployment")  # the ComputeDomain controller is off
    assert find(docs, "DeviceClass", "gpu.nvidia.com")
    # The collection leaves nvidiaDriverRoot out for "/": the chart's default "/" applies.
    default_root = template(
        chart_repo, helm_env, tmp_path, "dra-driver-nvidia-gpu", "0.4.0", collection_values("dra-driver-nvidia-gpu")
    )
    plugin = one(default_root, "DaemonSet", "dra-driver-nvidia-gpu-kubelet-plugin")["spec"]["template"]["spec"]
    assert {v["name"]: v["hostPath"]["path"] for v in plugin["volumes"]}["driver-root"] == "/"


def test_dra_refuses_gpus_without_the_override(chart_repo: Any, helm_env: dict[str, str], tmp_path: Path) -> None:
    table = _table_chart("dra-driver-nvidia-gpu")
    tgz = _tgz(chart_repo, "dra-driver-nvidia-gpu", "0.4.0")
    release = components.RELEASE_PREFIX + table.name
    result = helm(helm_env, "template", release, tgz, "--namespace", table.namespace, check=False)
    assert result.returncode != 0 and "gpuResourcesEnabledOverride=true" in result.stderr
    values = _values_file(tmp_path, collection_values("dra-driver-nvidia-gpu"))
    result = helm(helm_env, "template", release, tgz, "--namespace", "default", "-f", values, check=False)
    assert result.returncode != 0 and "allowDefaultNamespace=true" in result.stderr


def _device_classes(docs: list[dict[str, Any]]) -> dict[str, tuple[str, str | None]]:
    return {
        d["metadata"]["name"]: (d["apiVersion"], d["spec"].get("extendedResourceName"))
        for d in docs
        if d["kind"] == "DeviceClass"
    }


@pytest.mark.parametrize("version", ["0.4.0", "0.3.0"])
def test_dra_device_class_api_version_comes_from_the_cluster(
    chart_repo: Any, helm_env: dict[str, str], tmp_path: Path, version: str
) -> None:
    """Upstream's rule (templates/_helpers.tpl resourceApiVersion, validation.yaml): resourceApiVersion, else the newest
    resource.k8s.io version the cluster serves; gpu.nvidia.com gets extendedResourceName only on v1. Where the cluster
    serves none, rendering fails (offline that cannot happen: helm 3.17's built-in API list has resource.k8s.io/v1beta1;
    test_charts_live.py checks the failure on a cluster with resource.k8s.io switched off)."""
    values = collection_values("dra-driver-nvidia-gpu")
    names = {"gpu.nvidia.com", "mig.nvidia.com", "vfio.gpu.nvidia.com"}  # computeDomains off: no compute-domain ones

    def classes(extra_values: dict[str, Any], *extra: str) -> dict[str, tuple[str, str | None]]:
        docs = template(chart_repo, helm_env, tmp_path, "dra-driver-nvidia-gpu", version, values | extra_values, *extra)
        return _device_classes(docs)

    served_v1 = classes({}, "--api-versions", "resource.k8s.io/v1")
    assert served_v1["gpu.nvidia.com"] == ("resource.k8s.io/v1", "nvidia.com/gpu")
    assert served_v1.keys() == names and served_v1["mig.nvidia.com"] == ("resource.k8s.io/v1", None)
    # No --api-versions: helm's built-in capabilities (resource.k8s.io/v1beta1 is the newest there), as upstream.
    assert set(classes({}).values()) == {("resource.k8s.io/v1beta1", None)}
    pinned = classes({"resourceApiVersion": "resource.k8s.io/v1beta2"}, "--api-versions", "resource.k8s.io/v1")
    assert pinned.keys() == names and set(pinned.values()) == {("resource.k8s.io/v1beta2", None)}
    compute = classes({"resources": {"computeDomains": {"enabled": True}}}, "--api-versions", "resource.k8s.io/v1")
    assert {"compute-domain-daemon.nvidia.com", "compute-domain-default-channel.nvidia.com"} <= compute.keys()


def test_dra_admission_policy_and_service_accounts(chart_repo: Any, helm_env: dict[str, str], tmp_path: Path) -> None:
    docs = render_collection(chart_repo, helm_env, tmp_path, "dra-driver-nvidia-gpu", "0.4.0")
    release = components.RELEASE_PREFIX + _table_chart("dra-driver-nvidia-gpu").name
    policy = one(docs, "ValidatingAdmissionPolicy", "resourceslices-policy-dra-driver-nvidia-gpu")["spec"]
    namespace = _table_chart("dra-driver-nvidia-gpu").namespace
    # Upstream's condition names <fullname>-service-account (no -kubeletplugin suffix); kept as upstream has it.
    user = f"system:serviceaccount:{namespace}:{release}-service-account"
    assert f'request.userInfo.username == "{user}"' == policy["matchConditions"][0]["expression"]
    binding = one(docs, "ValidatingAdmissionPolicyBinding", "resourceslices-policy-dra-driver-nvidia-gpu")
    assert binding["spec"]["validationActions"] == ["Deny"]
    accounts = {d["metadata"]["name"] for d in find(docs, "ServiceAccount")}
    assert accounts == {
        f"{release}-service-account-kubeletplugin",
        f"{release}-service-account-controller",
        "compute-domain-daemon-service-account",
    }


def _pod_spec(doc: dict[str, Any]) -> dict[str, Any] | None:
    if doc["kind"] in ("Deployment", "DaemonSet", "StatefulSet", "Job"):
        return doc["spec"]["template"]["spec"]
    return None


def _hook(doc: dict[str, Any]) -> tuple[frozenset[str], int]:
    annotations = doc["metadata"].get("annotations") or {}
    phases = frozenset(p.strip() for p in annotations.get(HOOK, "").split(",") if p.strip())
    return phases, int(annotations.get(WEIGHT, "0"))


@pytest.mark.parametrize(("chart", "version", "app_version"), CHART_VERSIONS, ids=IDS)
def test_every_service_account_a_pod_runs_as_is_rendered(
    chart_repo: Any, helm_env: dict[str, str], tmp_path: Path, chart: str, version: str, app_version: str
) -> None:
    """The API server refuses pods whose ServiceAccount does not exist: each named account is in the release, and a
    hook Job's account is a hook of every phase the Job runs in, of no higher weight (helm creates hooks by weight,
    then kind: a ServiceAccount before a Job of the same weight)."""
    table = _table_chart(chart)
    docs = template(
        chart_repo, helm_env, tmp_path, chart, version, collection_values(chart), "--api-versions", "resource.k8s.io/v1"
    )
    accounts = {
        (d["metadata"].get("namespace", table.namespace), d["metadata"]["name"]): d
        for d in find(docs, "ServiceAccount")
    }
    for doc in docs:
        spec = _pod_spec(doc)
        if spec is None or spec.get("serviceAccountName") in (None, "default"):
            continue
        key = (doc["metadata"].get("namespace", table.namespace), spec["serviceAccountName"])
        assert key in accounts, f"{doc['kind']}/{doc['metadata']['name']} runs as {key}, not rendered by the chart"
        phases, weight = _hook(doc)
        account_phases, account_weight = _hook(accounts[key])
        if phases:
            assert phases <= account_phases and account_weight <= weight, (doc["metadata"]["name"], key)
        else:
            assert not account_phases, f"{key} is a hook but {doc['metadata']['name']} is not"


def _pods(docs: list[dict[str, Any]], namespace: str) -> list[tuple[str, dict[str, Any], dict[str, Any]]]:
    """(namespace, pod template labels, pod spec) of every workload the chart renders."""
    return [
        (doc["metadata"].get("namespace", namespace), doc["spec"]["template"]["metadata"].get("labels") or {}, spec)
        for doc in docs
        if (spec := _pod_spec(doc)) is not None
    ]


def _serves(spec: dict[str, Any], target: int | str) -> bool:
    ports = [port for container in spec["containers"] for port in container.get("ports") or []]
    return any(port.get("name") == target if isinstance(target, str) else port["containerPort"] == target
               for port in ports)


@pytest.mark.parametrize(("chart", "version", "app_version"), CHART_VERSIONS, ids=IDS)
def test_every_service_selects_pods_that_declare_its_ports(
    chart_repo: Any, helm_env: dict[str, str], tmp_path: Path, chart: str, version: str, app_version: str
) -> None:
    """A Service routes to the pods its selector matches, on the container port its targetPort names or numbers
    (the port itself when there is none): a Service of the chart that selects nothing, or a port no selected
    container declares, would leave webhooks and clients with no endpoint."""
    table = _table_chart(chart)
    docs = render_collection(chart_repo, helm_env, tmp_path, chart, version)
    pods = _pods(docs, table.namespace)
    for service in find(docs, "Service"):
        namespace = service["metadata"].get("namespace", table.namespace)
        selector = service["spec"].get("selector") or {}
        selected = [spec for ns, labels, spec in pods
                    if ns == namespace and selector and selector.items() <= labels.items()]
        assert selected, f"Service {service['metadata']['name']} selects no pod the chart renders: {selector}"
        for port in service["spec"]["ports"]:
            target = port.get("targetPort", port["port"])
            assert all(_serves(spec, target) for spec in selected), (
                f"Service {service['metadata']['name']} port {port['port']} -> {target}: not a declared container port"
            )


# Charts whose RBAC is rendered as upstream's (README.md); the others leave it out.
RBAC_CHARTS = {"cert-manager", "trust-manager", "gateway-helm", "lws"}
BUILT_IN_ROLES = {"cluster-admin", "admin", "edit", "view"}


@pytest.mark.parametrize(("chart", "version", "app_version"), CHART_VERSIONS, ids=IDS)
def test_rbac_binds_every_account_a_pod_runs_as(
    chart_repo: Any, helm_env: dict[str, str], tmp_path: Path, chart: str, version: str, app_version: str
) -> None:
    """Each binding refers to a role the chart renders (or a built-in one), each ServiceAccount subject of the
    release's namespace is one it renders, and every account a pod runs as is bound to a role, as upstream: on the
    test cluster the operators run as these accounts, so a permission the chart forgets is refused."""
    table = _table_chart(chart)
    docs = render_collection(chart_repo, helm_env, tmp_path, chart, version)
    bindings = [*find(docs, "RoleBinding"), *find(docs, "ClusterRoleBinding")]
    if chart not in RBAC_CHARTS:
        assert not bindings and not find(docs, "ClusterRole") and not find(docs, "Role")
        return
    roles = {(d["kind"], d["metadata"].get("namespace"), d["metadata"]["name"])
             for d in [*find(docs, "Role"), *find(docs, "ClusterRole")]}
    accounts = {(d["metadata"].get("namespace", table.namespace), d["metadata"]["name"])
                for d in find(docs, "ServiceAccount")}
    bound = set()
    for binding in bindings:
        ref = binding["roleRef"]
        namespace = binding["metadata"].get("namespace") if ref["kind"] == "Role" else None
        assert (ref["kind"], namespace, ref["name"]) in roles or ref["name"] in BUILT_IN_ROLES, binding["metadata"]
        for subject in binding["subjects"]:
            key = (subject.get("namespace"), subject["name"])
            if subject["kind"] == "ServiceAccount" and key[0] == table.namespace:
                assert key in accounts, f"{binding['metadata']['name']} binds {key}, which the chart does not render"
                bound.add(key)
    for namespace, _labels, spec in _pods(docs, table.namespace):
        account = spec.get("serviceAccountName")
        if account not in (None, "default"):
            assert (namespace, account) in bound, f"pods run as {account}, which no role of the chart is bound to"


@pytest.mark.parametrize(("chart", "version", "app_version"), CHART_VERSIONS, ids=IDS)
def test_no_webhook_or_api_service_points_at_pods_that_do_not_run(
    chart_repo: Any, helm_env: dict[str, str], tmp_path: Path, chart: str, version: str, app_version: str
) -> None:
    """On a real API server with no operator pods a webhook or APIService would fail every call routed to it:
    README.md lists the upstream ones these charts leave out."""
    docs: list[dict[str, Any]] = []
    for values in ({}, collection_values(chart)):  # the chart's defaults and the collection's values
        docs += template(
            chart_repo,
            helm_env,
            tmp_path,
            chart,
            version,
            values | _render_guards(chart),
            "--api-versions",
            "resource.k8s.io/v1",
        )
    left_out = {"MutatingWebhookConfiguration", "ValidatingWebhookConfiguration", "APIService"}
    assert not [(d["kind"], d["metadata"]["name"]) for d in docs if d["kind"] in left_out]


def _render_guards(chart: str) -> dict[str, Any]:
    """What a chart's defaults need to render at all (upstream fails without it)."""
    return {"gpuResourcesEnabledOverride": True} if chart == "dra-driver-nvidia-gpu" else {}


def _upstream_chart_yaml(facts: dict[str, Any], version: dict[str, Any]) -> dict[str, Any]:
    folder = version.get("upstream") or facts["upstream"]
    return yaml.safe_load((fixtures.upstream_dir() / folder / "Chart.yaml").read_text())


@pytest.mark.parametrize(("chart", "version", "app_version"), CHART_VERSIONS, ids=IDS)
def test_kube_version_constraint_is_upstreams(
    chart_repo: Any, helm_env: dict[str, str], tmp_path: Path, chart: str, version: str, app_version: str
) -> None:
    facts = next(build.load_facts(s) for s in build.chart_sources() if build.load_facts(s)["name"] == chart)
    entry = next(v for v in facts["versions"] if str(v["version"]) == version)
    expected = _upstream_chart_yaml(facts, entry).get("kubeVersion")
    shown = yaml.safe_load(helm(helm_env, "show", "chart", _tgz(chart_repo, chart, version)).stdout)
    assert shown.get("kubeVersion") == expected
    if expected:  # helm enforces it: a cluster older than the constraint is refused
        table = _table_chart(chart)
        values = _values_file(tmp_path, collection_values(chart))
        old = helm(
            helm_env,
            "template",
            components.RELEASE_PREFIX + table.name,
            _tgz(chart_repo, chart, version),
            "--namespace",
            table.namespace,
            "-f",
            values,
            "--kube-version",
            "1.18.0",
            check=False,
        )
        assert old.returncode != 0 and "kubeVersion" in old.stderr, old.stderr


@pytest.mark.parametrize("version", ["v1.8.4", "v1.8.3", "v1.8.1"])
def test_envoy_gateway_config_has_the_ai_gateway_extension(
    chart_repo: Any, helm_env: dict[str, str], tmp_path: Path, version: str
) -> None:
    docs = render_collection(chart_repo, helm_env, tmp_path, "gateway-helm", version)
    config = yaml.safe_load(one(docs, "ConfigMap", "envoy-gateway-config")["data"]["envoy-gateway.yaml"])
    assert (config["apiVersion"], config["kind"]) == ("config.gateway.envoyproxy.io/v1alpha1", "EnvoyGateway")
    manager = config["extensionManager"]
    ai_namespace = _table_chart("ai-gateway-helm").namespace
    assert manager["service"]["fqdn"] == {
        "hostname": f"ai-gateway-controller.{ai_namespace}.svc.cluster.local",
        "port": 1063,
    }
    assert {"group": "inference.networking.k8s.io", "kind": "InferencePool", "version": "v1"} in (
        manager["backendResources"]
    )
    assert manager["hooks"]["xdsTranslator"]["post"] == ["Translation", "Cluster", "Route"]
    assert config["extensionApis"]["enableBackend"] is True
    assert config["gateway"]["controllerName"] == "gateway.envoyproxy.io/gatewayclass-controller"
    deployment = one(docs, "Deployment", "envoy-gateway")
    assert deployment["spec"]["template"]["spec"]["volumes"][0]["configMap"]["name"] == "envoy-gateway-config"
    certgen = one(docs, "Job", f"{components.RELEASE_PREFIX + _table_chart('gateway-helm').name}-certgen")
    assert certgen["metadata"]["annotations"]["helm.sh/hook"] == "pre-install, pre-upgrade"
    # The crds subchart ships Envoy Gateway and experimental Gateway API CRDs in its crds/ (not in the manifest).
    assert not find(docs, "CustomResourceDefinition")
    crds = {Path(n).name for n in chart_files(chart_repo, "gateway-helm", version) if "/charts/crds/crds/" in n}
    assert {
        "gateway.envoyproxy.io_envoyproxies.yaml",
        "gateways.gateway.networking.k8s.io.yaml",
        "listenersets.gateway.networking.k8s.io.yaml",
    } <= crds


def test_ai_gateway_controller_service_is_what_envoy_gateway_calls(
    chart_repo: Any, helm_env: dict[str, str], tmp_path: Path
) -> None:
    docs = render_collection(chart_repo, helm_env, tmp_path, "ai-gateway-helm", "v1.1.0")
    service = one(docs, "Service", "ai-gateway-controller")
    assert {"name": "grpc", "port": 1063} in [{k: p[k] for k in ("name", "port")} for p in service["spec"]["ports"]]
    assert service["metadata"]["namespace"] == _table_chart("ai-gateway-helm").namespace
    assert one(docs, "Deployment", "ai-gateway-controller")
    assert not render_collection(chart_repo, helm_env, tmp_path, "ai-gateway-crds-helm", "v1.1.0")


def test_kube_prometheus_stack_without_grafana_and_alertmanager(
    chart_repo: Any, helm_env: dict[str, str], tmp_path: Path
) -> None:
    release = components.RELEASE_PREFIX + _table_chart("kube-prometheus-stack").name
    docs = render_collection(chart_repo, helm_env, tmp_path, "kube-prometheus-stack", "72.6.2")
    assert not find(docs, "Alertmanager")
    assert not [d for d in docs if "grafana" in d["metadata"]["name"]]
    assert one(docs, "Deployment", "prometheus-operator")  # fullnameOverride: prometheus
    prometheus = one(docs, "Prometheus", "prometheus-prometheus")["spec"]
    assert prometheus["podMonitorSelector"] == {} and prometheus["podMonitorNamespaceSelector"] == {}
    assert prometheus["additionalScrapeConfigs"]["name"] == "prometheus-prometheus-scrape-confg"
    assert one(docs, "Secret", "prometheus-prometheus-scrape-confg")
    hooks = {d["metadata"]["name"]: d["metadata"]["annotations"]["helm.sh/hook"] for d in find(docs, "Job")}
    assert hooks == {  # <fullname>-admission-*, as upstream names them (fullnameOverride: prometheus)
        "prometheus-admission-create": "pre-install,pre-upgrade",
        "prometheus-admission-patch": "post-install,post-upgrade",
    }
    # The chart's defaults run both (so the collection's values are what turns them off).
    defaults = template(chart_repo, helm_env, tmp_path, "kube-prometheus-stack", "72.6.2", {})
    assert find(defaults, "Alertmanager") and find(defaults, "Deployment", f"{release}-grafana")
    crds = {
        Path(n).name for n in chart_files(chart_repo, "kube-prometheus-stack", "72.6.2") if "/charts/crds/crds/" in n
    }
    # The two collected upstream CRDs, and our minimal Prometheus CRD (upstream's was not collected; the templates
    # create a Prometheus object).
    assert crds == {"crd-podmonitors.yaml", "crd-servicemonitors.yaml", "crd-prometheuses.yaml"}


@pytest.mark.parametrize("version", ["v1.21.1", "v1.17.1"])
def test_cert_manager_crds_are_templates_kept_with_crds_keep(
    chart_repo: Any, helm_env: dict[str, str], tmp_path: Path, version: str
) -> None:
    values = collection_values("cert-manager")
    assert values["crds"] == {"enabled": True, "keep": True}
    docs = template(chart_repo, helm_env, tmp_path, "cert-manager", version, values)
    crds = find(docs, "CustomResourceDefinition")
    assert {c["metadata"]["name"] for c in crds} == {
        "certificates.cert-manager.io",
        "issuers.cert-manager.io",
        "clusterissuers.cert-manager.io",
    }
    assert all(c["metadata"]["annotations"][KEEP] == "keep" for c in crds)
    unkept = template(
        chart_repo, helm_env, tmp_path, "cert-manager", version, {"crds": {"enabled": True, "keep": False}}
    )
    assert all(KEEP not in (c["metadata"].get("annotations") or {}) for c in find(unkept, "CustomResourceDefinition"))
    assert not find(template(chart_repo, helm_env, tmp_path, "cert-manager", version, {}), "CustomResourceDefinition")
    release = components.RELEASE_PREFIX + _table_chart("cert-manager").name
    assert {d["metadata"]["name"] for d in find(docs, "Deployment")} == {
        release,
        f"{release}-webhook",
        f"{release}-cainjector",
    }
    job = one(docs, "Job", f"{release}-startupapicheck")
    assert job["metadata"]["annotations"]["helm.sh/hook"] == "post-install"
    assert not [n for n in chart_files(chart_repo, "cert-manager", version) if "/crds/" in n and "/files/" not in n]


def test_trust_manager_with_collection_values(chart_repo: Any, helm_env: dict[str, str], tmp_path: Path) -> None:
    docs = render_collection(chart_repo, helm_env, tmp_path, "trust-manager", "v0.24.0")
    bundle = one(docs, "CustomResourceDefinition", "bundles.trust.cert-manager.io")
    assert bundle["metadata"]["annotations"][KEEP] == "keep"
    args = one(docs, "Deployment", "trust-manager")["spec"]["template"]["spec"]["containers"][0]["args"]
    trust_namespace = components.BY_NAME["trust_manager"].namespace
    # secretTargets.enabled is false: upstream then passes no --secret-targets-enabled flag (the default is off).
    assert f"--trust-namespace={trust_namespace}" in args and not [a for a in args if "secret-targets" in a]
    assert one(docs, "Certificate", "trust-manager")["spec"]["issuerRef"]["name"] == "trust-manager"
    assert one(docs, "Issuer", "trust-manager")


def test_lws_v0_7_0_templates_its_crd_without_keep(chart_repo: Any, helm_env: dict[str, str], tmp_path: Path) -> None:
    docs = render_collection(chart_repo, helm_env, tmp_path, "lws", "v0.7.0")
    crd = one(docs, "CustomResourceDefinition", "leaderworkersets.leaderworkerset.x-k8s.io")
    assert KEEP not in (crd["metadata"].get("annotations") or {})
    assert not [n for n in chart_files(chart_repo, "lws", "v0.7.0") if n.startswith("lws/crds/")]
    assert one(docs, "Deployment", f"{components.RELEASE_PREFIX + _table_chart('lws').name}-controller-manager")


@pytest.mark.parametrize("version", ["v0.8.0", "v0.9.0"])
def test_lws_from_v0_8_0_ships_its_crd_in_crds_dir(
    chart_repo: Any, helm_env: dict[str, str], tmp_path: Path, version: str
) -> None:
    docs = render_collection(chart_repo, helm_env, tmp_path, "lws", version)
    assert not find(docs, "CustomResourceDefinition")
    assert "lws/crds/leaderworkerset.x-k8s.io_leaderworkersets.yaml" in chart_files(chart_repo, "lws", version)
    with_crds = template(chart_repo, helm_env, tmp_path, "lws", version, {}, "--include-crds")
    assert find(with_crds, "CustomResourceDefinition", "leaderworkersets.leaderworkerset.x-k8s.io")


def test_kai_scheduler_operator_and_crd_upgrader_hook(
    chart_repo: Any, helm_env: dict[str, str], tmp_path: Path
) -> None:
    docs = render_collection(chart_repo, helm_env, tmp_path, "kai-scheduler", "v0.16.8")
    operator = one(docs, "Deployment", "kai-operator")["spec"]["template"]["spec"]["containers"][0]
    assert operator["image"] == "ghcr.io/kai-scheduler/kai-scheduler/operator:v0.16.8"
    hooks = {
        d["metadata"]["name"]: {k: v for k, v in d["metadata"]["annotations"].items() if k.startswith("helm.sh/hook")}
        for d in find(docs, "Job")
    }
    renewed = "hook-succeeded,before-hook-creation"
    assert hooks == {  # upstream's four hook Jobs, with its hooks, weights and delete policies
        "crd-upgrader": {HOOK: "pre-install,pre-upgrade", WEIGHT: "2", DELETE: renewed},
        "topology-migration": {HOOK: "pre-install,pre-upgrade", WEIGHT: "4", DELETE: renewed},
        "kai-config-deployer": {HOOK: "post-install,post-upgrade", WEIGHT: "1", DELETE: renewed},
        "post-delete-cleanup": {HOOK: "post-delete", DELETE: "hook-succeeded"},
    }
    assert "kai-scheduler/crds/scheduling.run.ai_queues.yaml" in chart_files(chart_repo, "kai-scheduler", "v0.16.8")


def test_grove_operator_config_uses_the_kai_scheduler(
    chart_repo: Any, helm_env: dict[str, str], tmp_path: Path
) -> None:
    docs = render_collection(chart_repo, helm_env, tmp_path, "grove-charts", "v0.1.0-alpha.12-rc2")
    volume = one(docs, "Deployment", "grove-operator")["spec"]["template"]["spec"]["volumes"][0]
    config = yaml.safe_load(one(docs, "ConfigMap", volume["configMap"]["name"])["data"]["config.yaml"])
    assert config["scheduler"]["defaultProfileName"] == "kai-scheduler"
    assert {"name": "kai-scheduler"} in config["scheduler"]["profiles"]


# --- never commit upstream data -----------------------------------------------------------------------------


def _digests(root: Path) -> dict[str, Path]:
    return {hashlib.sha256(p.read_bytes()).hexdigest(): p for p in root.rglob("*") if p.is_file()}


def test_no_file_here_is_an_upstream_file() -> None:
    fixtures.skip_without_upstream()
    upstream = _digests(fixtures.upstream_dir())
    ours = {p for p in HERE.rglob("*") if p.is_file() and "__pycache__" not in p.parts}
    copies = [str(p.relative_to(HERE)) for p in ours if hashlib.sha256(p.read_bytes()).hexdigest() in upstream]
    assert not copies, f"byte-identical to files in shared/upstream (never commit upstream data): {copies}"
