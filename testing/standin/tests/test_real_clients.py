"""Conformance of the API stand-in with the real clients: kubectl 1.32.3, and helm 3.17.2 and 4.3.1.

These are the commands a user types, run by the real binaries (client-go sends protobuf for built-in kinds,
server-side apply under helm 4, watches for `kubectl wait` and helm 4's kstatus waits). What is proven here
is proven against the stand-in, a test double: it shows the double answers as an API server does, so the
collection's tests that drive these binaries through it mean something.
"""

from __future__ import annotations

import base64
import json
import textwrap
import time
from pathlib import Path
from typing import Any

import pytest
import yaml
from realclients import Helm, helm_params
from standin.fixtures import running_cluster

NS = "conformance"


# ---------------------------------------------------------------------------------------------- kubectl


def _get(cluster: Any, *args: str) -> dict[str, Any]:
    return json.loads(cluster.kubectl("get", *args, "-o", "json").stdout)


def test_kubectl_create_writes_built_in_kinds_in_protobuf(cluster: Any) -> None:
    cluster.kubectl("create", "namespace", NS)
    cluster.kubectl("-n", NS, "create", "secret", "generic", "s", "--from-literal=a=b", "--from-literal=pw=s3cr3t")
    cluster.kubectl("-n", NS, "create", "configmap", "c", "--from-literal=k=v")
    cluster.kubectl("-n", NS, "create", "serviceaccount", "sa")
    assert _get(cluster, "namespace", NS)["metadata"]["labels"] == {"kubernetes.io/metadata.name": NS}
    secret = _get(cluster, "-n", NS, "secret", "s")
    assert secret["type"] == "Opaque"
    assert secret["data"] == {"a": base64.b64encode(b"b").decode(), "pw": base64.b64encode(b"s3cr3t").decode()}
    assert _get(cluster, "-n", NS, "configmap", "c")["data"] == {"k": "v"}
    assert _get(cluster, "-n", NS, "serviceaccount", "sa")["metadata"]["name"] == "sa"


def test_a_protobuf_written_secret_reads_back_byte_for_byte(cluster: Any) -> None:
    payload = bytes(range(256))
    source = cluster.workdir / "payload.bin"
    source.write_bytes(payload)
    cluster.kubectl("-n", NS, "create", "secret", "generic", "binary", f"--from-file=blob={source}")
    secret = _get(cluster, "-n", NS, "secret", "binary")
    assert base64.b64decode(secret["data"]["blob"]) == payload
    from kubernetes import client

    read = client.CoreV1Api(cluster.client()).read_namespaced_secret("binary", NS)
    assert base64.b64decode(read.data["blob"]) == payload


def test_kubectl_get_yaml_of_a_protobuf_written_object_equals_its_json_form(cluster: Any) -> None:
    as_yaml = yaml.safe_load(cluster.kubectl("-n", NS, "get", "configmap", "c", "-o", "yaml").stdout)
    assert as_yaml == _get(cluster, "-n", NS, "configmap", "c")


@pytest.mark.parametrize("kind", [
    ["namespace", "dry"],
    ["secret", "generic", "dry", "--from-literal=a=b"],
    ["configmap", "dry", "--from-literal=a=b"],
    ["serviceaccount", "dry"],
])
def test_kubectl_create_dry_run_server_stores_nothing(cluster: Any, kind: list[str]) -> None:
    namespaced = [] if kind[0] == "namespace" else ["-n", NS]
    out = cluster.kubectl(*namespaced, "create", *kind, "--dry-run=server", "-o", "json").stdout
    assert json.loads(out)["metadata"]["name"] == "dry"
    missing = cluster.kubectl(*namespaced, "get", kind[0], "dry", check=False)
    assert missing.returncode == 1
    assert "NotFound" in missing.stderr


def test_kubectl_apply_twice_is_unchanged_the_second_time(cluster: Any) -> None:
    manifest = textwrap.dedent(f"""\
        apiVersion: v1
        kind: ConfigMap
        metadata: {{name: applied, namespace: {NS}}}
        data: {{colour: blue}}
        """)
    first = cluster.kubectl("apply", "-f", "-", input=manifest)
    assert first.stdout.strip() == "configmap/applied created"
    second = cluster.kubectl("apply", "-f", "-", input=manifest)
    assert second.stdout.strip() == "configmap/applied unchanged"


@pytest.mark.parametrize(("patch_type", "patch", "expected"), [
    ("strategic", '{"data": {"size": "L"}}', {"colour": "blue", "size": "L"}),
    ("merge", '{"data": {"colour": null}}', {"size": "L"}),
    ("json", '[{"op": "add", "path": "/data/shape", "value": "round"}]', {"size": "L", "shape": "round"}),
])
def test_kubectl_patch_in_each_flavour(cluster: Any, patch_type: str, patch: str, expected: dict[str, str]) -> None:
    cluster.kubectl("-n", NS, "patch", "configmap", "applied", "--type", patch_type, "-p", patch)
    assert _get(cluster, "-n", NS, "configmap", "applied")["data"] == expected


def test_kubectl_delete_wait_sends_delete_options_and_waits_for_the_object_to_go(cluster: Any) -> None:
    cluster.kubectl("-n", NS, "create", "configmap", "doomed", "--from-literal=a=b")
    out = cluster.kubectl("-n", NS, "delete", "configmap", "doomed", "--wait=true", "--grace-period=0")
    assert out.stdout.strip() == 'configmap "doomed" deleted'
    assert cluster.kubectl("-n", NS, "get", "configmap", "doomed", check=False).returncode == 1


def test_kubectl_wait_and_rollout_status_follow_a_deployment_to_available(cluster: Any) -> None:
    cluster.kubectl("-n", NS, "create", "deployment", "web", "--image=registry.k8s.io/pause:3.10", "--replicas=2")
    cluster.kubectl("-n", NS, "wait", "--for=condition=Available", "deploy/web", "--timeout=30s")
    rollout = cluster.kubectl("-n", NS, "rollout", "status", "deploy/web", "--timeout=30s")
    assert 'deployment "web" successfully rolled out' in rollout.stdout
    deployment = _get(cluster, "-n", NS, "deployment", "web")
    assert deployment["spec"]["replicas"] == 2
    assert deployment["status"]["readyReplicas"] == 2


def test_rollout_status_waits_for_pods_that_take_time(tmp_path: Path) -> None:
    with running_cluster(tmp_path, ready_after=3) as slow:
        slow.kubectl("create", "deployment", "slow", "--image=registry.k8s.io/pause:3.10")
        started = time.monotonic()
        rollout = slow.kubectl("rollout", "status", "deploy/slow", "--timeout=30s")
        assert time.monotonic() - started >= 2.5
        assert 'deployment "slow" successfully rolled out' in rollout.stdout


# ---------------------------------------------------------------------------------------------- helm

CHART = {
    "Chart.yaml": """\
        apiVersion: v2
        name: conformance
        version: 1.0.0
        appVersion: "1.0"
        """,
    "values.yaml": """\
        replicas: 1
        message: hello
        """,
    "crds/widgets.example.com.yaml": """\
        apiVersion: apiextensions.k8s.io/v1
        kind: CustomResourceDefinition
        metadata: {name: widgets.example.com}
        spec:
          group: example.com
          names: {kind: Widget, plural: widgets, singular: widget, listKind: WidgetList}
          scope: Namespaced
          versions:
            - name: v1
              served: true
              storage: true
              schema:
                openAPIV3Schema:
                  type: object
                  properties:
                    spec: {type: object, properties: {size: {type: integer}}}
        """,
    "templates/widget.yaml": """\
        apiVersion: example.com/v1
        kind: Widget
        metadata: {name: {{ .Release.Name }}}
        spec: {size: {{ .Values.replicas }}}
        """,
    "templates/configmap.yaml": """\
        apiVersion: v1
        kind: ConfigMap
        metadata: {name: {{ .Release.Name }}-config}
        data: {message: {{ .Values.message | quote }}}
        """,
    "templates/deployment.yaml": """\
        apiVersion: apps/v1
        kind: Deployment
        metadata: {name: {{ .Release.Name }}-web, labels: {app: web}}
        spec:
          replicas: {{ .Values.replicas }}
          selector: {matchLabels: {app: web}}
          template:
            metadata: {labels: {app: web}}
            spec:
              containers:
                - name: web
                  image: registry.k8s.io/pause:3.10
                  env: [{name: MESSAGE, value: {{ .Values.message | quote }}}]
        """,
    "templates/daemonset.yaml": """\
        apiVersion: apps/v1
        kind: DaemonSet
        metadata: {name: {{ .Release.Name }}-agent}
        spec:
          selector: {matchLabels: {app: agent}}
          template:
            metadata: {labels: {app: agent}}
            spec: {containers: [{name: agent, image: registry.k8s.io/pause:3.10}]}
        """,
    "templates/statefulset.yaml": """\
        apiVersion: apps/v1
        kind: StatefulSet
        metadata: {name: {{ .Release.Name }}-db}
        spec:
          serviceName: {{ .Release.Name }}-web
          replicas: 1
          selector: {matchLabels: {app: db}}
          template:
            metadata: {labels: {app: db}}
            spec: {containers: [{name: db, image: registry.k8s.io/pause:3.10}]}
        """,
    "templates/service.yaml": """\
        apiVersion: v1
        kind: Service
        metadata: {name: {{ .Release.Name }}-web}
        spec:
          selector: {app: web}
          ports: [{name: http, port: 80, targetPort: 8080}]
        """,
    "templates/post-install-job.yaml": """\
        apiVersion: batch/v1
        kind: Job
        metadata:
          name: {{ .Release.Name }}-post-install
          annotations:
            helm.sh/hook: post-install
            helm.sh/hook-delete-policy: before-hook-creation
        spec:
          template:
            spec:
              restartPolicy: Never
              containers: [{name: hook, image: registry.k8s.io/pause:3.10}]
        """,
}


def write_chart(root: Path, files: dict[str, str] | None = None) -> Path:
    for name, text in (CHART if files is None else files).items():
        path = root / name
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(textwrap.dedent(text))
    return root


def atomic(helm: Helm) -> str:
    """helm 4 renamed --atomic to --rollback-on-failure (the old name is a deprecated alias)."""
    return "--rollback-on-failure" if helm.major == 4 else "--atomic"


@pytest.fixture
def helm(request: pytest.FixtureRequest, cluster: Any, tmp_path: Path) -> Helm:
    return Helm(request.param, cluster.kubeconfig, tmp_path / "helm-home")


def _release(helm: Helm, ns: str) -> list[dict[str, Any]]:
    """Releases in any status: helm 3 needs --all for that; helm 4 lists every status by default and has no --all."""
    every_status = ["--all"] if helm.major == 3 else []
    return json.loads(helm("list", "-n", ns, *every_status, "-o", "json").stdout)


@pytest.mark.parametrize("helm", helm_params(), indirect=True)
def test_helm_install_upgrade_rollback_uninstall(helm: Helm, cluster: Any, tmp_path: Path) -> None:
    ns, rel = f"helm{helm.major}", f"conf{helm.major}"
    chart = write_chart(tmp_path / "chart")
    helm("install", rel, str(chart), "-n", ns, "--create-namespace", "--wait", atomic(helm), "--timeout", "60s")
    assert [(r["name"], r["revision"], r["status"], r["chart"]) for r in _release(helm, ns)] == [
        (rel, "1", "deployed", "conformance-1.0.0")]
    assert _get(cluster, "crd", "widgets.example.com")["spec"]["group"] == "example.com"
    assert _get(cluster, "-n", ns, "widget", rel)["spec"] == {"size": 1}
    assert _get(cluster, "-n", ns, "deployment", f"{rel}-web")["status"]["readyReplicas"] == 1
    assert _get(cluster, "-n", ns, "job", f"{rel}-post-install")["status"]["succeeded"] == 1

    helm("upgrade", rel, str(chart), "-n", ns, "--set", "replicas=2", "--wait", atomic(helm), "--timeout", "60s")
    assert json.loads(helm("get", "values", rel, "-n", ns, "-o", "json").stdout) == {"replicas": 2}
    assert _get(cluster, "-n", ns, "deployment", f"{rel}-web")["spec"]["replicas"] == 2
    assert _release(helm, ns)[0]["revision"] == "2"

    helm("rollback", rel, "1", "-n", ns, "--wait", "--timeout", "60s")
    assert _get(cluster, "-n", ns, "deployment", f"{rel}-web")["spec"]["replicas"] == 1
    history = json.loads(helm("history", rel, "-n", ns, "-o", "json").stdout)
    assert [(h["revision"], h["status"]) for h in history] == [(1, "superseded"), (2, "superseded"), (3, "deployed")]
    assert json.loads(helm("get", "values", rel, "-n", ns, "-o", "json").stdout) in (None, {})

    helm("uninstall", rel, "-n", ns, "--wait", "--timeout", "60s")
    assert _release(helm, ns) == []
    for kind, name in (("deployment", f"{rel}-web"), ("daemonset", f"{rel}-agent"), ("statefulset", f"{rel}-db"),
                       ("service", f"{rel}-web"), ("configmap", f"{rel}-config"), ("widget", rel)):
        assert cluster.kubectl("-n", ns, "get", kind, name, check=False).returncode == 1, f"{kind}/{name} left"
    # helm never deletes what it installed from crds/.
    assert _get(cluster, "crd", "widgets.example.com")["metadata"]["name"] == "widgets.example.com"


@pytest.mark.parametrize("helm", helm_params(), indirect=True)
def test_a_failing_atomic_install_leaves_no_release_and_no_object(helm: Helm, cluster: Any, tmp_path: Path) -> None:
    ns, rel = f"broken{helm.major}", "broken"
    files = dict(CHART)
    # An invalid object after valid ones: the API server refuses it (422) once the others exist.
    files["templates/zz-invalid.yaml"] = """\
        apiVersion: v1
        kind: ConfigMap
        metadata: {name: Not_A_Valid_Name}
        data: {a: b}
        """
    chart = write_chart(tmp_path / "chart", files)
    failed = helm("install", rel, str(chart), "-n", ns, "--create-namespace", "--wait", atomic(helm),
                  "--timeout", "60s", check=False)
    assert failed.returncode != 0
    assert "Not_A_Valid_Name" in failed.stderr
    assert _release(helm, ns) == []
    leftovers = [item["metadata"]["name"]
                 for kind in ("configmaps", "deployments", "daemonsets", "statefulsets", "services", "jobs")
                 for item in _get(cluster, "-n", ns, kind)["items"] if item["metadata"]["name"].startswith(rel)]
    assert leftovers == []
    assert not [s for s in _get(cluster, "-n", ns, "secrets")["items"] if s["type"] == "helm.sh/release.v1"]


@pytest.mark.parametrize("major", helm_params())
def test_an_install_that_times_out_waiting_is_rolled_back(major: int, tmp_path: Path) -> None:
    with running_cluster(tmp_path, ready_after=60) as slow:
        helm = Helm(major, slow.kubeconfig, tmp_path / "helm-home")
        files = {k: v for k, v in CHART.items() if k in ("Chart.yaml", "values.yaml", "templates/deployment.yaml")}
        chart = write_chart(tmp_path / "chart", files)
        failed = helm("install", "slow", str(chart), "-n", "default", "--wait", atomic(helm), "--timeout", "3s",
                      check=False)
        assert failed.returncode != 0
        assert _release(helm, "default") == []
        assert slow.kubectl("get", "deployment", "slow-web", check=False).returncode == 1
