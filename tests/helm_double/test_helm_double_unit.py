"""Unit tests of the helm test double's pure parts: catalog, values, argv, release encoding. No cluster."""

from __future__ import annotations

import base64
import gzip
import json
import os
import subprocess
import sys
import time
from pathlib import Path

import pytest
import yaml
from conftest import REPO, UPSTREAM

HERE = Path(__file__).resolve().parent
if str(HERE) not in sys.path:
    sys.path.insert(0, str(HERE))

from helmdouble import catalog, cli, release, values  # noqa: E402
from helmdouble.chart import KEEP_ANNOTATION, Chart  # noqa: E402

needs_upstream = pytest.mark.skipif(not UPSTREAM.is_dir(), reason=f"upstream reference data absent: {UPSTREAM}")
HELM = [sys.executable, str(HERE / "helm.py")]
JETSTACK = "https://charts.jetstack.io"


def chart(ref: str, version: str | None = None, repo: str | None = None) -> Chart:
    return Chart(*catalog.resolve(ref, version, repo, {}))


# --------------------------------------------------------------------------- --set parsing and merging


@pytest.mark.parametrize(
    ("expr", "mode", "expected"),
    [
        ("a.b=c,d=1", "raw", {"a": {"b": "c"}, "d": 1}),
        (
            "x=true,y=FALSE,z=null,w=0,v=007,u=-3,t=1.5",
            "raw",
            {"x": True, "y": False, "z": None, "w": 0, "v": "007", "u": -3, "t": "1.5"},
        ),
        ("a.b=true", "string", {"a": {"b": "true"}}),
        ("list={a,b,1}", "raw", {"list": ["a", "b", 1]}),
        ("l[1].name=x", "raw", {"l": [None, {"name": "x"}]}),
        (r"annotations.example\.com/x=a\,b", "raw", {"annotations": {"example.com/x": "a,b"}}),
        ('obj={"k": [1, 2]}', "json", {"obj": {"k": [1, 2]}}),
        ("k=a,b=c", "literal", {"k": "a,b=c"}),
    ],
)
def test_parse_set_follows_helm_strvals(expr, mode, expected):
    assert values.parse_set(expr, mode) == expected


def test_parse_set_rejects_a_key_without_value():
    with pytest.raises(values.ValuesError, match="has no value"):
        values.parse_set("novalue")


def test_merge_is_deep_and_later_wins():
    merged = values.merge({"a": {"b": 1, "c": 2}, "l": [1]}, {"a": {"b": 3}, "l": [2]})
    assert merged == {"a": {"b": 3, "c": 2}, "l": [2]}


def test_coalesce_null_deletes_a_default():
    assert values.coalesce({"a": {"b": 1, "c": 2}}, {"a": {"b": None}}) == {"a": {"c": 2}}


# --------------------------------------------------------------------------- values.yaml checks (pure)

DEFAULTS = {
    "enabled": True,
    "replicas": 1,
    "image": {"tag": "v1", "pullPolicy": "IfNotPresent"},
    "nodeSelector": {},
    "tolerations": [],
    "extra": None,
}


def test_known_keys_and_free_form_places_pass():
    user = {
        "enabled": False,
        "replicas": 3,
        "image": {"tag": 2},  # a number where a string default is: ambiguous, accepted
        "nodeSelector": {"anything": "goes"},
        "tolerations": [{"key": "nvidia.com/gpu", "operator": "Exists"}],
        "extra": {"free": {"form": 1}},
        "global": {"imageRegistry": "r"},
    }
    assert values.check_against_defaults(user, DEFAULTS) == []


def test_unknown_key_is_named_by_path():
    problems = values.check_against_defaults({"image": {"tga": "v2"}}, DEFAULTS)
    assert problems == ["image.tga: unknown key (the chart's values.yaml has no such key)"]


@pytest.mark.parametrize(
    ("user", "fragment"),
    [
        ({"enabled": "yes"}, 'enabled: expected a boolean (values.yaml has boolean true), got string "yes"'),
        ({"replicas": "3"}, "replicas: expected a number"),
        ({"replicas": True}, "replicas: expected a number"),
        ({"image": "nginx"}, "image: expected a map"),
        ({"tolerations": {"key": "x"}}, "tolerations: expected a list"),
        ({"image": {"tag": ["a"]}}, "image.tag: expected a scalar"),
    ],
)
def test_scalar_and_shape_types_are_checked(user, fragment):
    problems = values.check_against_defaults(user, DEFAULTS)
    assert len(problems) == 1 and problems[0].startswith(fragment), problems


def test_allowlisted_path_is_free_form():
    user = {"image": {"digest": {"sha": "x"}}}
    assert values.check_against_defaults(user, DEFAULTS)
    assert values.check_against_defaults(user, DEFAULTS, free_form={"image.digest"}) == []


# --------------------------------------------------------------------------- catalog resolution


@needs_upstream
@pytest.mark.parametrize(
    ("ref", "version", "repo", "expected"),
    [
        ("cert-manager", "v1.21.1", JETSTACK, "v1.21.1"),
        ("cert-manager", "1.21.1", JETSTACK, "v1.21.1"),  # helm's semver constraint matches the v prefix
        ("cert-manager", None, JETSTACK, "v1.21.1"),
        ("trust-manager", "v0.24.0", JETSTACK + "/", "v0.24.0"),
        ("oci://quay.io/jetstack/charts/cert-manager", "v1.21.0", None, "v1.21.0"),
        ("oci://registry.k8s.io/nfd/charts/node-feature-discovery", "0.18.3", None, "0.18.3"),
        ("oci://registry.k8s.io/nfd/charts/node-feature-discovery:0.18.2", None, None, "0.18.2"),
        ("oci://registry.k8s.io/dra-driver-nvidia/charts/dra-driver-nvidia-gpu", "0.4.0", None, "0.4.0"),
        ("oci://docker.io/envoyproxy/gateway-helm", "v1.8.4", None, "v1.8.4"),
        ("oci://docker.io/envoyproxy/gateway-helm", "v1.8.3", None, "v1.8.3"),
        ("oci://docker.io/envoyproxy/ai-gateway-crds-helm", "v1.1.0", None, "v1.1.0"),
        ("oci://docker.io/envoyproxy/ai-gateway-helm", "v1.1.0", None, "v1.1.0"),
        ("oci://registry.k8s.io/lws/charts/lws", "v0.8.0", None, "v0.8.0"),
        ("oci://ghcr.io/kai-scheduler/kai-scheduler/kai-scheduler", "v0.16.8", None, "v0.16.8"),
        ("oci://ghcr.io/ai-dynamo/grove/grove-charts", "v0.1.0-alpha.12-rc2", None, "v0.1.0-alpha.12-rc2"),
        ("kube-prometheus-stack", "72.6.2", "https://prometheus-community.github.io/helm-charts", "72.6.2"),
        ("kube-prometheus-stack", "72.6.1", "https://prometheus-community.github.io/helm-charts", "72.6.1"),
    ],
)
def test_resolve_published_versions(ref, version, repo, expected):
    entry, found = catalog.resolve(ref, version, repo, {})
    assert found.version == expected
    assert Chart(entry, found).metadata["version"] == expected


@needs_upstream
def test_every_chart_of_the_components_table_is_known():
    from ansible_collections.modelplane.serving.plugins.module_utils.servingstack import components

    for component in components.COMPONENTS:
        for item in component.charts:
            default = item.version or catalog.BY_NAME[item.name].versions[0].version
            entry, version = catalog.resolve(item.chart_ref, default, item.repo_url, {})
            assert (entry.name, version.version) == (item.name, default)


@pytest.mark.parametrize(
    ("ref", "version", "repo", "message"),
    [
        ("foo", "1.2.3", JETSTACK, 'chart "foo" version "1.2.3" not found in https://charts.jetstack.io repository'),
        (
            "cert-manager",
            "v9.9.9",
            JETSTACK,
            'chart "cert-manager" version "v9.9.9" not found in https://charts.jetstack.io repository',
        ),
        ("foo", None, JETSTACK, 'chart "foo" not found in https://charts.jetstack.io repository'),
        (
            "oci://registry.k8s.io/nfd/charts/foo",
            "1.2.3",
            None,
            'failed to perform "FetchReference" on source: registry.k8s.io/nfd/charts/foo:1.2.3: not found',
        ),
        # An explicit semantic version is the OCI tag verbatim: lws is published as v0.8.0.
        (
            "oci://registry.k8s.io/lws/charts/lws",
            "0.8.0",
            None,
            'failed to perform "FetchReference" on source: registry.k8s.io/lws/charts/lws:0.8.0: not found',
        ),
        (
            "oci://example.com/none",
            None,
            None,
            "unable to locate any tags in provided repository: oci://example.com/none",
        ),
        ("cert-manager", None, None, "non-absolute URLs should be in form of repo_name/path_to_chart"),
        ("jetstack/cert-manager", None, None, "repo jetstack not found"),
    ],
)
def test_unknown_chart_or_version_fails_like_helm(ref, version, repo, message):
    with pytest.raises(catalog.ChartNotFound) as info:
        catalog.resolve(ref, version, repo, {})
    assert str(info.value).startswith(message)


SPEC_DEFAULTS = {
    "cert-manager": "v1.21.1",
    "trust-manager": "v0.24.0",
    "node-feature-discovery": "0.18.3",
    "dra-driver-nvidia-gpu": "0.4.0",
    "gateway-helm": "v1.8.4",
    "ai-gateway-crds-helm": "v1.1.0",
    "ai-gateway-helm": "v1.1.0",
    "lws": "v0.8.0",
    "kai-scheduler": "v0.16.8",
    "grove-charts": "v0.1.0-alpha.12-rc2",
    "kube-prometheus-stack": "72.6.2",
}


def test_catalog_lists_the_spec_default_first_and_another_version_for_upgrades():
    assert {entry.name: entry.versions[0].version for entry in catalog.CHARTS} == SPEC_DEFAULTS
    assert all(len(entry.versions) >= 2 for entry in catalog.CHARTS)


def test_repo_alias_resolves():
    entry, version = catalog.resolve("jetstack/cert-manager", "v1.21.0", None, {"jetstack": JETSTACK})
    assert (entry.name, version.version) == ("cert-manager", "v1.21.0")


# --------------------------------------------------------------------------- chart checks with upstream files


@needs_upstream
def test_cert_manager_schema_accepts_the_roles_values_and_names_violations():
    cm = chart("cert-manager", "v1.21.1", JETSTACK)
    assert cm.check({"crds": {"enabled": True, "keep": True}}) == []
    problems = cm.check({"crds": {"enabled": "yes", "enabld": True}})
    assert any(p.startswith("crds:") and "'enabld' was unexpected" in p for p in problems), problems
    assert any(p.startswith("crds.enabled:") and "'boolean'" in p for p in problems), problems


@needs_upstream
def test_gateway_helm_accepts_the_ai_gateway_values_from_upstream_and_the_crds_subchart():
    eg = chart("oci://docker.io/envoyproxy/gateway-helm", "v1.8.4")
    folder = UPSTREAM / "envoy-ai-gateway/envoy-gateway-values"
    user = values.merge(
        yaml.safe_load((folder / "envoy-gateway-values.yaml").read_text()),
        yaml.safe_load((folder / "inference-pool-addon.yaml").read_text()),
    )
    assert eg.check(user) == []
    assert eg.check({"crds": {"gatewayAPI": {"safeUpgradePolicy": {"enabled": False}}}}) == []
    assert eg.check({"config": {"envoyGateway": {"extensionManagr": {}}}}) == [
        "config.envoyGateway.extensionManagr: unknown key (the chart's values.yaml has no such key)"
    ]


@needs_upstream
def test_kube_prometheus_stack_accepts_modelplane_values_and_remote_subchart_keys():
    kps = chart("kube-prometheus-stack", "72.6.2", "https://prometheus-community.github.io/helm-charts")
    user = {
        "fullnameOverride": "prometheus",
        "prometheus": {
            "prometheusSpec": {
                "podMonitorSelectorNilUsesHelmValues": False,
                "podMonitorNamespaceSelector": {},
                "additionalScrapeConfigs": [{"job_name": "envoy", "metrics_path": "/stats/prometheus"}],
            }
        },
        "grafana": {"enabled": False, "anything": {"free": 1}},
        "alertmanager": {"enabled": False},
    }
    assert kps.check(user) == []
    assert kps.check({"prometheus": {"prometheusSpec": {"retentionn": "1d"}}})


@needs_upstream
def test_dra_driver_reproduces_its_template_failures():
    dra = chart("oci://registry.k8s.io/dra-driver-nvidia/charts/dra-driver-nvidia-gpu", "0.4.0")
    assert dra.render_failures({}, "dra-driver-nvidia-gpu")
    ok = {"gpuResourcesEnabledOverride": True, "resources": {"computeDomains": {"enabled": False}}}
    assert dra.check(ok) == [] and dra.render_failures(ok, "dra-driver-nvidia-gpu") == []
    assert dra.render_failures(ok, "default")


@needs_upstream
def test_crd_sets_follow_their_conditions():
    cm = chart("cert-manager", "v1.21.1", JETSTACK)
    assert cm.crd_objects({}, "template") == []  # crds.enabled defaults to false
    crds = cm.crd_objects({"crds": {"enabled": True}}, "template")
    assert {o["metadata"]["name"] for _src, o in crds} == {
        "certificates.cert-manager.io",
        "issuers.cert-manager.io",
        "clusterissuers.cert-manager.io",
    }
    assert all(o["metadata"]["annotations"][KEEP_ANNOTATION] == "keep" for _src, o in crds)
    unkept = cm.crd_objects({"crds": {"enabled": True, "keep": False}}, "template")
    assert all(KEEP_ANNOTATION not in (o["metadata"].get("annotations") or {}) for _src, o in unkept)
    assert len(cm.crd_objects({"installCRDs": True}, "template")) == 3
    assert "certificates.cert-manager.io" in cm.manifest({"crds": {"enabled": True}})

    eg = chart("oci://docker.io/envoyproxy/gateway-helm", "v1.8.4")
    names = {o["metadata"]["name"] for _src, o in eg.crd_objects({}, "crds-dir")}
    assert {
        "envoyproxies.gateway.envoyproxy.io",
        "tcproutes.gateway.networking.k8s.io",
        "xmeshes.gateway.networking.x-k8s.io",
        "listenersets.gateway.networking.k8s.io",
    } <= names
    assert len(names) == 16
    assert eg.crd_objects({"crds": {"enabled": False}}, "crds-dir") == []
    # crds/ are never part of the manifest: it holds only the controller Deployment.
    assert [doc["kind"] for doc in yaml.safe_load_all(eg.manifest({}))] == ["Deployment"]

    tm = chart("trust-manager", "v0.24.0", JETSTACK)
    assert [o["metadata"]["name"] for _src, o in tm.crd_objects({}, "template")] == ["bundles.trust.cert-manager.io"]


@needs_upstream
@pytest.mark.parametrize(
    ("ref", "version", "crd"),
    [
        ("oci://registry.k8s.io/nfd/charts/node-feature-discovery", "0.18.3", "nodefeaturerules.nfd.k8s-sigs.io"),
        (
            "oci://registry.k8s.io/dra-driver-nvidia/charts/dra-driver-nvidia-gpu",
            "0.4.0",
            "computedomains.resource.nvidia.com",
        ),
        ("oci://registry.k8s.io/lws/charts/lws", "v0.8.0", "leaderworkersets.leaderworkerset.x-k8s.io"),
        ("oci://ghcr.io/kai-scheduler/kai-scheduler/kai-scheduler", "v0.16.8", "queues.scheduling.run.ai"),
    ],
)
def test_crds_dir_charts_ship_their_crds(ref, version, crd):
    assert crd in {o["metadata"]["name"] for _src, o in chart(ref, version).crd_objects({}, "crds-dir")}


# --------------------------------------------------------------------------- release encoding and formatting


def _release(status: str = "deployed") -> dict:
    return {
        "name": "mp-x",
        "namespace": "ns",
        "version": 2,
        "info": {
            "status": status,
            "first_deployed": "2026-01-02T03:04:05.123456789Z",
            "last_deployed": "2026-01-02T03:04:05.5Z",
            "description": "Upgrade complete",
        },
        "chart": {"metadata": {"name": "x", "version": "v1.0.0", "appVersion": "v1.0.0"}},
        "config": {"a": 1},
        "manifest": "",
    }


def test_release_secret_is_double_base64_gzip_json_with_helm_labels():
    rel = _release()
    secret = release.to_secret(rel)
    assert secret["metadata"]["name"] == "sh.helm.release.v1.mp-x.v2"
    assert secret["type"] == "helm.sh/release.v1"
    labels = secret["metadata"]["labels"]
    assert {k: labels[k] for k in ("name", "owner", "status", "version")} == {
        "name": "mp-x",
        "owner": "helm",
        "status": "deployed",
        "version": "2",
    }
    inner = base64.b64decode(base64.b64decode(secret["data"]["release"]))
    assert json.loads(gzip.decompress(inner))["config"] == {"a": 1}
    assert release.decode(secret["data"]["release"]) == rel


def test_list_row_matches_helm_list_yaml():
    row = release.list_element(_release())
    assert row == {
        "app_version": "v1.0.0",
        "chart": "x-v1.0.0",
        "name": "mp-x",
        "namespace": "ns",
        "revision": "2",
        "status": "deployed",
        "updated": "2026-01-02 03:04:05.5 +0000 UTC",
    }


# --------------------------------------------------------------------------- argv


def test_flags_before_the_subcommand_and_equals_forms():
    args = cli.parse_argv(
        [
            "--version=v1.21.1",
            "--repo=https://charts.jetstack.io",
            "upgrade",
            "-i",
            "--reset-values",
            "--reuse-values=False",
            "-f=/tmp/v.yml",
            "--values=/tmp/w.yml",
            "--set",
            "a=b",
            "--timeout",
            "5m0s",
            "rel",
            "cert-manager",
        ]
    )
    assert args.positionals == ["upgrade", "rel", "cert-manager"]
    assert args.value("--version") == "v1.21.1" and args.value("--repo") == "https://charts.jetstack.io"
    assert args.flag("--install") and args.flag("--reset-values") and not args.flag("--reuse-values")
    assert [v for f, v in args.ordered if f in ("-f", "--values")] == ["/tmp/v.yml", "/tmp/w.yml"]


def test_unknown_flag_is_an_error():
    with pytest.raises(cli.HelmError, match="unknown flag: --nope"):
        cli.parse_argv(["list", "--nope"])


def test_redaction_keeps_keys_and_hides_values():
    argv = ["upgrade", "--set", "a.password=hunter2,b=1", "--set-string=c=x", "--kube-token", "tok", "r", "c"]
    assert cli.redact(argv) == [
        "upgrade",
        "--set",
        "a.password=<redacted>,b=<redacted>",
        "--set-string=c=<redacted>",
        "--kube-token",
        "<redacted>",
        "r",
        "c",
    ]


# --------------------------------------------------------------------------- the executable (no cluster)


def run_helm(*argv: str, env: dict | None = None) -> subprocess.CompletedProcess:
    return subprocess.run(
        [*HELM, *argv], capture_output=True, text=True, env={**os.environ, **(env or {})}, check=False
    )


def test_version_output_is_what_kubernetes_core_parses_and_is_fast():
    import re

    start = time.monotonic()
    result = run_helm("version")
    elapsed = time.monotonic() - start
    assert result.returncode == 0
    assert re.match(r'version.BuildInfo{Version:"v(.*?)",', result.stdout).group(1).startswith("3.")
    assert elapsed < 2.0, f"helm double startup took {elapsed:.2f}s"


def test_plugin_list_parses_to_no_plugins():
    from ansible_collections.kubernetes.core.plugins.module_utils.helm import parse_helm_plugin_list

    result = run_helm("plugin", "list")
    assert result.returncode == 0 and result.stdout
    assert parse_helm_plugin_list(result.stdout.splitlines()) == []


@needs_upstream
def test_show_chart_prints_the_published_metadata():
    result = run_helm("--version=1.21.1", "--repo=https://charts.jetstack.io", "show", "chart", "cert-manager")
    assert result.returncode == 0, result.stderr
    meta = yaml.safe_load(result.stdout)
    assert (meta["name"], meta["version"], meta["appVersion"]) == ("cert-manager", "v1.21.1", "v1.21.1")


def test_unknown_chart_exits_1_with_helms_error(tmp_path):
    log = tmp_path / "helm.log"
    result = run_helm(
        "show",
        "chart",
        "oci://registry.k8s.io/nfd/charts/nope",
        "--version",
        "1.0.0",
        env={"HELM_DOUBLE_LOG": str(log)},
    )
    assert result.returncode == 1
    assert result.stderr.startswith('Error: failed to perform "FetchReference" on source:')
    assert "Traceback" not in result.stderr
    entry = json.loads(log.read_text().splitlines()[-1])
    assert entry["argv"][:2] == ["show", "chart"] and entry["exit"] == 1


def test_repo_add_and_update_use_the_repository_config(tmp_path):
    env = {"HELM_REPOSITORY_CONFIG": str(tmp_path / "repos.yaml")}
    assert run_helm("repo", "update", env=env).returncode == 1  # helm: no repositories found
    added = run_helm("repo", "add", "jetstack", JETSTACK, env=env)
    assert added.returncode == 0 and '"jetstack" has been added' in added.stdout
    assert run_helm("repo", "update", env=env).returncode == 0
    bad = run_helm("repo", "add", "x", "https://example.invalid/charts", env=env)
    assert bad.returncode == 1 and "is not a valid chart repository" in bad.stderr
    if UPSTREAM.is_dir():
        shown = run_helm("show", "chart", "jetstack/cert-manager", "--version", "v1.21.0", env=env)
        assert yaml.safe_load(shown.stdout)["version"] == "v1.21.0"


def test_the_double_is_never_referenced_from_plugins_or_roles():
    for folder in ("plugins", "roles"):
        for path in (REPO / folder).rglob("*"):
            if path.is_file() and path.suffix in (".py", ".yml", ".yaml", ".j2", ".md"):
                assert "helm_double" not in path.read_text(errors="replace"), path
