"""The helm test double driven directly (argv like kubernetes.core.helm builds it) against the stand-in.

Release state is read back from the stand-in with the kubernetes client, as a real cluster would show it.
"""

from __future__ import annotations

import base64
import gzip
import json
import subprocess
import sys
from pathlib import Path

import pytest
import yaml
from conftest import REPO, UPSTREAM

pytestmark = pytest.mark.skipif(not UPSTREAM.is_dir(), reason=f"upstream reference data absent: {UPSTREAM}")

HELM = [sys.executable, str(REPO / "tests" / "helm_double" / "helm.py")]
JETSTACK = "https://charts.jetstack.io"
NFD = "oci://registry.k8s.io/nfd/charts/node-feature-discovery"


def helm(cluster, *argv: str, namespace: str | None = None, env: dict | None = None) -> subprocess.CompletedProcess:
    full_env = {**cluster.env, **(env or {})}
    if namespace:
        full_env["HELM_NAMESPACE"] = namespace
    return subprocess.run([*HELM, *argv], capture_output=True, text=True, env=full_env, timeout=60, check=False)


def ok(result: subprocess.CompletedProcess) -> str:
    assert result.returncode == 0, result.stderr
    return result.stdout


def release_secrets(cluster, namespace: str, name: str) -> dict[str, dict]:
    from kubernetes import client as k8s

    api = k8s.CoreV1Api(cluster.client())
    items = api.list_namespaced_secret(namespace, label_selector=f"owner=helm,name={name}").items
    return {s.metadata.name: s for s in items}


def decoded(secret) -> dict:
    return json.loads(gzip.decompress(base64.b64decode(base64.b64decode(secret.data["release"]))))


def crd_names(cluster) -> set[str]:
    from kubernetes import client as k8s

    api = k8s.ApiextensionsV1Api(cluster.client())
    return {crd.metadata.name for crd in api.list_custom_resource_definition().items}


def test_install_upgrade_uninstall_keeps_helm_state_in_secrets(cluster, tmp_path):
    ns, rel = "hd-cm", "hd-cert-manager"
    values = tmp_path / "values.yml"
    values.write_text(yaml.safe_dump({"crds": {"enabled": True}}))
    base = ["--repo=" + JETSTACK, "upgrade", "-i", "--reset-values", "--wait", "--timeout", "5m0s", "--atomic"]
    out = ok(
        helm(
            cluster, "--version=v1.21.0", *base, "--create-namespace", f"-f={values}", rel, "cert-manager", namespace=ns
        )
    )
    assert f'Release "{rel}" does not exist. Installing it now.' in out and "STATUS: deployed" in out
    assert {"certificates.cert-manager.io", "issuers.cert-manager.io", "clusterissuers.cert-manager.io"} <= crd_names(
        cluster
    )

    listed = yaml.safe_load(ok(helm(cluster, "list", "--output=yaml", "--filter", rel, namespace=ns)))
    assert listed == [
        {
            "app_version": "v1.21.0",
            "chart": "cert-manager-v1.21.0",
            "name": rel,
            "namespace": ns,
            "revision": "1",
            "status": "deployed",
            "updated": listed[0]["updated"],
        }
    ]
    assert listed[0]["updated"].endswith(" +0000 UTC")
    assert yaml.safe_load(ok(helm(cluster, "get", "values", "--output=yaml", rel, namespace=ns))) == {
        "crds": {"enabled": True}
    }

    ok(helm(cluster, "--version=v1.21.1", *base, f"-f={values}", rel, "cert-manager", namespace=ns))
    secrets = release_secrets(cluster, ns, rel)
    assert set(secrets) == {f"sh.helm.release.v1.{rel}.v1", f"sh.helm.release.v1.{rel}.v2"}
    v1, v2 = secrets[f"sh.helm.release.v1.{rel}.v1"], secrets[f"sh.helm.release.v1.{rel}.v2"]
    assert v1.type == "helm.sh/release.v1"
    assert (v1.metadata.labels["status"], v2.metadata.labels["status"]) == ("superseded", "deployed")
    assert v2.metadata.labels["owner"] == "helm" and v2.metadata.labels["version"] == "2"
    body = decoded(v2)
    assert body["chart"]["metadata"]["version"] == "v1.21.1" and body["config"] == {"crds": {"enabled": True}}
    assert body["info"]["status"] == "deployed" and "certificates.cert-manager.io" in body["manifest"]
    history = yaml.safe_load(ok(helm(cluster, "history", rel, "-o", "yaml", namespace=ns)))
    assert [(h["revision"], h["status"]) for h in history] == [(1, "superseded"), (2, "deployed")]

    out = ok(helm(cluster, "uninstall", "--wait", rel, namespace=ns))
    assert "These resources were kept due to the resource policy" in out
    assert f'release "{rel}" uninstalled' in out
    assert release_secrets(cluster, ns, rel) == {}
    assert "certificates.cert-manager.io" in crd_names(cluster)  # crds.keep defaults to true
    assert yaml.safe_load(ok(helm(cluster, "list", "--all", "--output=yaml", "--filter", rel, namespace=ns))) == []
    missing = helm(cluster, "uninstall", rel, namespace=ns)
    assert missing.returncode == 1 and "release: not found" in missing.stderr


def test_crds_without_keep_are_deleted_with_the_release(cluster):
    ns, rel = "hd-tm", "hd-trust-manager"
    ok(
        helm(
            cluster,
            "--version=v0.24.0",
            "--repo=" + JETSTACK,
            "upgrade",
            "-i",
            "--create-namespace",
            "--set",
            "crds.keep=false",
            rel,
            "trust-manager",
            namespace=ns,
        )
    )
    assert "bundles.trust.cert-manager.io" in crd_names(cluster)
    out = ok(helm(cluster, "uninstall", rel, namespace=ns))
    assert "kept" not in out
    assert "bundles.trust.cert-manager.io" not in crd_names(cluster)


def test_crds_dir_is_installed_once_and_never_deleted(cluster):
    ns, rel = "hd-nfd", "hd-nfd"
    ok(helm(cluster, "upgrade", "-i", "--create-namespace", "--version=0.18.2", rel, NFD, namespace=ns))
    assert "nodefeaturerules.nfd.k8s-sigs.io" in crd_names(cluster)
    # The crds/ folder is not in the release manifest (the chart's workloads are).
    manifest_text = ok(helm(cluster, "get", "manifest", rel, namespace=ns))
    assert "kind: CustomResourceDefinition" not in manifest_text and "kind: Deployment" in manifest_text
    ok(helm(cluster, "upgrade", "-i", "--version=0.18.3", rel, NFD, namespace=ns))
    ok(helm(cluster, "uninstall", rel, namespace=ns))
    assert "nodefeaturerules.nfd.k8s-sigs.io" in crd_names(cluster)


def test_skip_crds(cluster):
    ns, rel = "hd-lws", "hd-lws"
    ok(
        helm(
            cluster,
            "upgrade",
            "-i",
            "--create-namespace",
            "--skip-crds",
            "--version=v0.8.0",
            rel,
            "oci://registry.k8s.io/lws/charts/lws",
            namespace=ns,
        )
    )
    assert "leaderworkersets.leaderworkerset.x-k8s.io" not in crd_names(cluster)


def test_missing_namespace_fails_like_helm(cluster):
    result = helm(cluster, "upgrade", "-i", "--version=0.18.3", "hd-nons", NFD, namespace="hd-does-not-exist")
    assert result.returncode == 1
    assert result.stderr.strip() == 'Error: create: failed to create: namespaces "hd-does-not-exist" not found'
    result = helm(cluster, "install", "--version=0.18.3", "hd-nons", NFD, namespace="hd-does-not-exist")
    assert 'INSTALLATION FAILED: create: failed to create: namespaces "hd-does-not-exist"' in result.stderr


def test_values_errors_name_the_key_and_record_no_release(cluster):
    ns = "hd-values"
    unknown = helm(
        cluster,
        "upgrade",
        "-i",
        "--create-namespace",
        "--version=0.18.3",
        "--set",
        "worker.tolerationz[0].key=nvidia.com/gpu",
        "hd-bad",
        NFD,
        namespace=ns,
    )
    assert unknown.returncode == 1
    assert "- worker.tolerationz: unknown key" in unknown.stderr
    schema = helm(
        cluster,
        "--repo=" + JETSTACK,
        "--version=v1.21.1",
        "upgrade",
        "-i",
        "--create-namespace",
        "--set-string",
        "crds.enabled=true",
        "hd-bad-cm",
        "cert-manager",
        namespace=ns,
    )
    assert schema.returncode == 1
    assert "values don't meet the specifications of the schema(s)" in schema.stderr
    assert "crds.enabled:" in schema.stderr
    assert release_secrets(cluster, ns, "hd-bad") == {} and release_secrets(cluster, ns, "hd-bad-cm") == {}


def test_failed_install_is_recorded_and_atomic_purges_it(cluster):
    ns = "hd-fail"
    fail = {"HELM_DOUBLE_FAIL": "hd-broken,hd-atomic"}
    result = helm(
        cluster, "upgrade", "-i", "--create-namespace", "--version=0.18.3", "hd-broken", NFD, namespace=ns, env=fail
    )
    assert result.returncode == 1 and "context deadline exceeded" in result.stderr
    listed = yaml.safe_load(ok(helm(cluster, "list", "-o", "yaml", "--filter", "hd-broken", namespace=ns)))
    assert [r["status"] for r in listed] == ["failed"]
    (secret,) = release_secrets(cluster, ns, "hd-broken").values()
    assert secret.metadata.labels["status"] == "failed"
    # The next upgrade -i upgrades the failed release (helm 3 behaviour) and succeeds.
    ok(helm(cluster, "upgrade", "-i", "--version=0.18.3", "hd-broken", NFD, namespace=ns))
    statuses = {
        s.metadata.labels["version"]: s.metadata.labels["status"]
        for s in release_secrets(cluster, ns, "hd-broken").values()
    }
    assert statuses == {"1": "failed", "2": "deployed"}

    atomic = helm(cluster, "upgrade", "-i", "--atomic", "--version=0.18.3", "hd-atomic", NFD, namespace=ns, env=fail)
    assert atomic.returncode == 1
    assert "release hd-atomic failed, and has been uninstalled due to atomic being set" in atomic.stderr
    assert release_secrets(cluster, ns, "hd-atomic") == {}


def test_atomic_upgrade_failure_rolls_back(cluster):
    ns, rel = "hd-rb", "hd-rollback"
    ok(helm(cluster, "upgrade", "-i", "--create-namespace", "--version=0.18.2", rel, NFD, namespace=ns))
    failed = helm(
        cluster, "upgrade", "-i", "--atomic", "--version=0.18.3", rel, NFD, namespace=ns, env={"HELM_DOUBLE_FAIL": rel}
    )
    assert failed.returncode == 1 and "has been rolled back due to atomic being set" in failed.stderr
    history = yaml.safe_load(ok(helm(cluster, "history", rel, "-o", "yaml", namespace=ns)))
    assert [(h["revision"], h["status"], h["chart"]) for h in history] == [
        (1, "superseded", "node-feature-discovery-0.18.2"),
        (2, "failed", "node-feature-discovery-0.18.3"),
        (3, "deployed", "node-feature-discovery-0.18.2"),
    ]


def test_keep_history_leaves_an_uninstalled_revision(cluster):
    ns, rel = "hd-kh", "hd-keep"
    ok(helm(cluster, "upgrade", "-i", "--create-namespace", "--version=0.18.3", rel, NFD, namespace=ns))
    ok(helm(cluster, "uninstall", "--keep-history", rel, namespace=ns))
    assert yaml.safe_load(ok(helm(cluster, "list", "-o", "yaml", "--filter", rel, namespace=ns))) == []
    listed = yaml.safe_load(ok(helm(cluster, "list", "--all", "-o", "yaml", "--filter", rel, namespace=ns)))
    assert [r["status"] for r in listed] == ["uninstalled"]
    # Installing again continues the history.
    ok(helm(cluster, "upgrade", "-i", "--version=0.18.3", rel, NFD, namespace=ns))
    assert yaml.safe_load(ok(helm(cluster, "list", "-o", "yaml", "--filter", rel, namespace=ns)))[0]["revision"] == "2"


def test_foreign_object_blocks_install_unless_take_ownership(cluster):
    ns, rel = "hd-own", "hd-owner"
    ok(
        helm(
            cluster,
            "--repo=" + JETSTACK,
            "upgrade",
            "-i",
            "--create-namespace",
            "--set",
            "crds.keep=false",
            "hd-first-owner",
            "trust-manager",
            namespace="hd-own-a",
        )
    )
    clash = helm(
        cluster, "--repo=" + JETSTACK, "upgrade", "-i", "--create-namespace", rel, "trust-manager", namespace=ns
    )
    assert clash.returncode == 1
    assert 'CustomResourceDefinition "bundles.trust.cert-manager.io" in namespace "" exists' in clash.stderr
    assert 'key "meta.helm.sh/release-name" must equal "hd-owner": current value is "hd-first-owner"' in clash.stderr
    ok(
        helm(
            cluster,
            "--repo=" + JETSTACK,
            "upgrade",
            "-i",
            "--create-namespace",
            "--take-ownership",
            rel,
            "trust-manager",
            namespace=ns,
        )
    )


def test_helm_info_calls_work(cluster):
    ns, rel = "hd-info", "hd-info"
    ok(helm(cluster, "upgrade", "-i", "--create-namespace", "--version=0.18.3", rel, NFD, namespace=ns))
    assert ok(helm(cluster, "get", "values", "--output=yaml", rel, namespace=ns)).strip() == "null"
    assert ok(helm(cluster, "get", "notes", rel, namespace=ns)) == ""
    assert ok(helm(cluster, "get", "hooks", rel, namespace=ns)) == ""
    computed = yaml.safe_load(ok(helm(cluster, "get", "values", "--output=yaml", "-a", rel, namespace=ns)))
    assert computed["worker"]["tolerations"] == []
    assert "STATUS: deployed" in ok(helm(cluster, "status", rel, namespace=ns))


def test_invocations_are_logged_with_set_values_redacted(cluster, tmp_path):
    log = tmp_path / "helm.jsonl"
    helm(
        cluster,
        "upgrade",
        "-i",
        "--create-namespace",
        "--version=0.18.3",
        "--set",
        "master.replicaCount=2",
        "hd-log",
        NFD,
        namespace="hd-log",
        env={"HELM_DOUBLE_LOG": str(log)},
    )
    (entry,) = [json.loads(line) for line in log.read_text().splitlines()]
    assert entry["exit"] == 0 and entry["namespace_env"] == "hd-log"
    assert "master.replicaCount=<redacted>" in entry["argv"] and "2" not in entry["argv"]


def test_kubeconfig_flag_and_context(cluster):
    kubeconfig = Path(cluster.kubeconfig)
    env = {"KUBECONFIG": "/nonexistent"}
    result = helm(cluster, "list", "-A", "--kubeconfig", str(kubeconfig), env=env)
    assert result.returncode == 0, result.stderr
    bad = helm(cluster, "list", "-A", "--kubeconfig", str(kubeconfig), "--kube-context", "nope", env=env)
    assert bad.returncode == 1 and bad.stderr.startswith("Error: ")


def test_history_max_prunes_old_revisions(cluster):
    ns, rel = "hd-hist", "hd-hist"
    for version in ("0.18.2", "0.18.3", "0.18.2", "0.18.3"):
        ok(
            helm(
                cluster,
                "upgrade",
                "-i",
                "--create-namespace",
                "--history-max=2",
                f"--version={version}",
                rel,
                NFD,
                namespace=ns,
            )
        )
    history = yaml.safe_load(ok(helm(cluster, "history", rel, "-o", "yaml", namespace=ns)))
    assert [(h["revision"], h["status"]) for h in history] == [(3, "superseded"), (4, "deployed")]
