"""The pod runtime (runtime.py) on a real cluster: pods of a known image run as processes, as a kubelet runs
containers, and cluster traffic reaches them. The program is ours (probe_program.py), registered for a test image
only here, so these tests need no operator binary."""

from __future__ import annotations

import json
import sys
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from cluster import programs
from cluster.fixtures import ClusterHandle, running_cluster, wait_for
from cluster.kwok import runtime_selector, stages
from cluster.runtime import backoff_delay, expand, field_value, target_port

pytestmark = pytest.mark.slow
HERE = Path(__file__).resolve().parent
IMAGE = "registry.test/modelplane/probe"
PROGRAM = f"{sys.executable} {HERE / 'probe_program.py'}"


def apply(handle: ClusterHandle, *objects: dict[str, Any]) -> None:
    handle.kubectl("apply", "-f", "-", input=json.dumps({"apiVersion": "v1", "kind": "List", "items": list(objects)}))


def pods(handle: ClusterHandle, selector: str, namespace: str = "default") -> list[dict[str, Any]]:
    return json.loads(handle.kubectl("-n", namespace, "get", "pods", "-l", selector, "-o", "json").stdout)["items"]


def one_pod(handle: ClusterHandle, selector: str, namespace: str = "default") -> dict[str, Any]:
    found = wait_for(lambda: pods(handle, selector, namespace))
    assert len(found) == 1, found
    return found[0]


def ready(pod: dict[str, Any]) -> bool:
    return any(c["type"] == "Ready" and c["status"] == "True" for c in pod["status"].get("conditions") or [])


def pid_of(pod: dict[str, Any], container: int = 0) -> int:
    return int(pod["status"]["containerStatuses"][container]["containerID"].removeprefix("process://"))


def alive(pid: int) -> bool:
    try:
        return "zombie" not in Path(f"/proc/{pid}/status").read_text().lower()
    except OSError:
        return False


def control(name: str, ready_value: str = "yes", exit_value: str = "") -> dict[str, Any]:
    return {"apiVersion": "v1", "kind": "ConfigMap", "metadata": {"name": name, "namespace": "default"},
            "data": {"ready": ready_value, "exit": exit_value}}


def deployment(name: str, args: list[str], *, control_map: str | None = None, account: str | None = None,
               probe: bool = True, grace: int | None = None, extra: dict[str, Any] | None = None) -> dict[str, Any]:
    container: dict[str, Any] = {
        "name": "main", "image": f"{IMAGE}:v1", "args": args,
        "env": [{"name": "POD_NAME", "valueFrom": {"fieldRef": {"fieldPath": "metadata.name"}}}],
        "ports": [{"name": "http", "containerPort": 8080}],
    }
    if probe:
        container["readinessProbe"] = {"httpGet": {"path": "/ready", "port": "http"}, "periodSeconds": 1,
                                       "failureThreshold": 1}
    spec: dict[str, Any] = {"containers": [container]}
    if control_map:
        container["volumeMounts"] = [{"name": "control", "mountPath": "/etc/probe-control"}]
        spec["volumes"] = [{"name": "control", "configMap": {"name": control_map}}]
    if account:
        spec["serviceAccountName"] = account
    if grace is not None:
        spec["terminationGracePeriodSeconds"] = grace
    spec.update(extra or {})
    return {"apiVersion": "apps/v1", "kind": "Deployment", "metadata": {"name": name, "namespace": "default"},
            "spec": {"replicas": 1, "selector": {"matchLabels": {"app": name}},
                     "template": {"metadata": {"labels": {"app": name}}, "spec": spec}}}


@pytest.fixture(scope="module")
def rt(tmp_path_factory: pytest.TempPathFactory) -> Iterator[ClusterHandle]:
    with running_cluster(tmp_path_factory.mktemp("runtime"), nodes=1, gpu_nodes=0, operator_double=False,
                         audit=False, programs={IMAGE: PROGRAM}) as handle:
        yield handle


# -- pure helpers ----------------------------------------------------------------------------------------------


def test_image_repositories_spell_out_docker_hub() -> None:
    assert programs.repository("docker.io/envoyproxy/gateway:v1.8.3") == "docker.io/envoyproxy/gateway"
    assert programs.repository("envoyproxy/gateway:v1.8.3") == "docker.io/envoyproxy/gateway"
    assert programs.repository("busybox") == "docker.io/library/busybox"
    assert programs.repository("localhost:5000/x/y:1@sha256:ab") == "localhost:5000/x/y"
    assert programs.repository("quay.io/jetstack/trust-manager@sha256:00") == "quay.io/jetstack/trust-manager"


def test_the_catalog_has_only_built_binaries_and_the_tests_programs(tmp_path: Path) -> None:
    (tmp_path / "trust-manager").write_text("")
    catalog = programs.catalog(tmp_path, {IMAGE: "/bin/true --flag"}, stand_ins=False)
    assert sorted(catalog.runnables) == ["quay.io/jetstack/trust-manager", IMAGE]
    assert catalog.get("quay.io/jetstack/trust-manager:v0.24.0").command == (str(tmp_path / "trust-manager"),)
    assert catalog.get(f"{IMAGE}:v1").command == ("/bin/true", "--flag")
    assert catalog.get("docker.io/envoyproxy/gateway:v1.8.3") is None
    assert not programs.catalog(None, stand_ins=False)


def test_kubelet_expansion_and_the_downward_api() -> None:
    env = {"A": "x", "B": "y"}
    assert expand("$(A)-$(B)-$(C)-$$(A)", env) == "x-y-$(C)-$(A)"
    pod = {"metadata": {"name": "p", "namespace": "n", "labels": {"app": "a"}}, "status": {"podIP": "100.64.0.2"}}
    assert field_value(pod, "metadata.namespace") == "n"
    assert field_value(pod, "metadata.labels['app']") == "a"
    assert field_value(pod, "status.podIP") == "100.64.0.2"
    assert [backoff_delay(n) for n in range(7)] == [0.0, 10.0, 20.0, 40.0, 80.0, 160.0, 300.0]
    service = {"spec": {"ports": [{"port": 443, "targetPort": "webhook"}, {"port": 80, "protocol": "UDP"}]}}
    assert target_port(service, 443) == "webhook" and target_port(service, 80) is None


def test_kwoks_pod_stages_leave_out_the_runtimes_pods() -> None:
    from cluster import binaries

    docs = stages(binaries.ensure_built(quiet=True) / "stages", 0, [IMAGE])
    selector = runtime_selector([IMAGE])
    assert "registry[.]test/modelplane/probe" in selector
    by_name = {doc.split("name: ")[1].split()[0]: doc for doc in docs}
    assert all(selector in by_name[name] for name in ("pod-ready", "pod-complete", "pod-delete"))
    assert selector not in by_name["node-initialize"]


# -- on a cluster ----------------------------------------------------------------------------------------------


def test_readiness_comes_from_the_containers_probe(rt: ClusterHandle) -> None:
    apply(rt, control("ready-ctl", ready_value="no"),
          deployment("ready", ["--http", "8080", "--control", "/etc/probe-control", "--name=$(POD_NAME)"],
                     control_map="ready-ctl"))
    pod = wait_for(lambda: next((p for p in pods(rt, "app=ready") if p["status"].get("containerStatuses")), None))
    assert pod, "the runtime wrote no container status"
    assert pod["status"]["podIP"].startswith("100.64.")
    pid = pid_of(pod)
    # The pid is pod_exec.py's until it has set up the namespaces and exec'd the program (about 0.5 s).
    cmdline = wait_for(lambda: [a for a in Path(f"/proc/{pid}/cmdline").read_text().split("\0")
                                if "probe_program.py" in a] and Path(f"/proc/{pid}/cmdline").read_text().split("\0"))
    assert cmdline and f"--name={pod['metadata']['name']}" in cmdline, cmdline
    time.sleep(2)
    assert not ready(one_pod(rt, "app=ready")), "Ready although the probe answers 503"
    apply(rt, control("ready-ctl", ready_value="yes"))  # the ConfigMap volume follows: the probe answers 200
    assert wait_for(lambda: ready(one_pod(rt, "app=ready")), timeout=15)
    rt.kubectl("rollout", "status", "deployment/ready", "--timeout=10s")
    apply(rt, control("ready-ctl", ready_value="no"))
    assert wait_for(lambda: not ready(one_pod(rt, "app=ready")), timeout=15)
    assert pid_of(one_pod(rt, "app=ready")) == pid, "readiness changed without a restart"


def test_a_process_that_exits_is_restarted(rt: ClusterHandle) -> None:
    apply(rt, control("exit-ctl"),
          deployment("exits", ["--http", "8080", "--control", "/etc/probe-control"], control_map="exit-ctl"))
    rt.kubectl("rollout", "status", "deployment/exits", "--timeout=30s")
    first = pid_of(one_pod(rt, "app=exits"))
    apply(rt, control("exit-ctl", exit_value="3"))
    status = wait_for(lambda: next((s for s in one_pod(rt, "app=exits")["status"]["containerStatuses"]
                                    if s["restartCount"] == 1 and "running" in s["state"]), None), timeout=15)
    assert status, one_pod(rt, "app=exits")["status"]
    assert status["lastState"]["terminated"]["exitCode"] == 3
    second = pid_of(one_pod(rt, "app=exits"))
    assert second != first and alive(second) and not alive(first)
    assert wait_for(lambda: ready(one_pod(rt, "app=exits")), timeout=10)


def test_deleting_a_pod_stops_its_process_after_the_grace_period(rt: ClusterHandle) -> None:
    apply(rt, deployment("stubborn", ["--http", "8080", "--ignore-term"], grace=2))
    rt.kubectl("rollout", "status", "deployment/stubborn", "--timeout=30s")
    pod = one_pod(rt, "app=stubborn")
    pid = pid_of(pod)
    rt.kubectl("scale", "deployment/stubborn", "--replicas=0")
    time.sleep(1)
    assert alive(pid), "SIGKILL before the grace period ended"
    assert wait_for(lambda: not alive(pid), timeout=10)
    assert wait_for(lambda: not pods(rt, "app=stubborn"), timeout=10), "the pod was not removed"


def test_a_job_runs_to_completion_or_fails(rt: ClusterHandle) -> None:
    def job(name: str, code: int) -> dict[str, Any]:
        return {"apiVersion": "batch/v1", "kind": "Job", "metadata": {"name": name, "namespace": "default"},
                "spec": {"backoffLimit": 0, "template": {"spec": {"restartPolicy": "Never", "containers": [
                    {"name": "main", "image": f"{IMAGE}:v1", "args": ["--exit-after", "0.5", "--code", str(code)]}]}}}}

    apply(rt, job("succeeds", 0), job("fails", 4))
    rt.kubectl("wait", "--for=condition=Complete", "job/succeeds", "--timeout=30s")
    rt.kubectl("wait", "--for=condition=Failed", "job/fails", "--timeout=30s")
    done = one_pod(rt, "job-name=succeeds")
    assert done["status"]["phase"] == "Succeeded"
    assert done["status"]["containerStatuses"][0]["state"]["terminated"]["exitCode"] == 0
    failed = one_pod(rt, "job-name=fails")
    assert failed["status"]["phase"] == "Failed"
    assert failed["status"]["containerStatuses"][0]["state"]["terminated"]["exitCode"] == 4


def test_the_process_runs_as_the_pods_service_account(rt: ClusterHandle) -> None:
    role = {"apiVersion": "rbac.authorization.k8s.io/v1", "kind": "Role",
            "metadata": {"name": "prober", "namespace": "default"},
            "rules": [{"apiGroups": [""], "resources": ["configmaps"], "resourceNames": ["prober-target"],
                       "verbs": ["get"]}]}
    binding = {"apiVersion": "rbac.authorization.k8s.io/v1", "kind": "RoleBinding",
               "metadata": {"name": "prober", "namespace": "default"},
               "roleRef": {"apiGroup": "rbac.authorization.k8s.io", "kind": "Role", "name": "prober"},
               "subjects": [{"kind": "ServiceAccount", "name": "prober", "namespace": "default"}]}
    account = {"apiVersion": "v1", "kind": "ServiceAccount", "metadata": {"name": "prober", "namespace": "default"}}
    target = {"apiVersion": "v1", "kind": "ConfigMap", "metadata": {"name": "prober-target", "namespace": "default"}}
    apply(rt, account, role, binding, target,
          deployment("prober", ["--http", "8080", "--api-get", "/api/v1/namespaces/default/configmaps/prober-target"],
                     account="prober"))
    rt.kubectl("rollout", "status", "deployment/prober", "--timeout=30s")  # its GET is allowed: Ready
    rt.kubectl("delete", "role", "prober")
    assert wait_for(lambda: not ready(one_pod(rt, "app=prober")), timeout=20), \
        "the ServiceAccount kept its access without the Role"
    apply(rt, role)
    assert wait_for(lambda: ready(one_pod(rt, "app=prober")), timeout=20)


def test_pods_of_other_images_keep_kwoks_simulation(rt: ClusterHandle) -> None:
    rt.kubectl("create", "deployment", "simulated", "--image=registry.invalid/other:1")
    rt.kubectl("rollout", "status", "deployment/simulated", "--timeout=30s")
    pod = one_pod(rt, "app=simulated")
    assert not pod["status"]["podIP"].startswith("100.64.")
    assert not pod["status"]["containerStatuses"][0].get("containerID")


def test_nothing_outlives_the_cluster(tmp_path: Path) -> None:
    with running_cluster(tmp_path, nodes=1, gpu_nodes=0, operator_double=False, audit=False,
                         programs={IMAGE: PROGRAM}) as handle:
        apply(handle, deployment("lasting", ["--http", "8080", "--ignore-term"], grace=60))
        handle.kubectl("rollout", "status", "deployment/lasting", "--timeout=30s")
        pid = pid_of(one_pod(handle, "app=lasting"))
        workdir = handle.cluster_workdir
        started = [int(line) for line in (workdir / "runtime" / "pids").read_text().split()]
        egress = json.loads((workdir / "egress-selector.yaml").read_text())
        socket_path = Path(egress["egressSelections"][0]["connection"]["transport"]["uds"]["udsName"])
        assert alive(pid) and pid in started and socket_path.exists()
    assert not alive(pid) and not any(map(alive, started)), "a process outlived the cluster"
    assert not workdir.exists() and not socket_path.parent.exists()


# -- cluster traffic -------------------------------------------------------------------------------------------


def serving_certificate(dns_name: str) -> tuple[bytes, bytes, bytes]:
    """A CA and a serving certificate for ``dns_name`` signed by it: (ca.crt, tls.crt, tls.key) in PEM."""
    import datetime as dt

    from cryptography import x509
    from cryptography.hazmat.primitives import hashes, serialization
    from cryptography.hazmat.primitives.asymmetric import ec
    from cryptography.x509.oid import NameOID

    def certificate(subject: str, key: Any, issuer: str, signer: Any, ca: bool) -> x509.Certificate:
        start = dt.datetime.now(dt.UTC) - dt.timedelta(minutes=5)
        builder = (x509.CertificateBuilder().subject_name(x509.Name([x509.NameAttribute(NameOID.COMMON_NAME, subject)]))
                   .issuer_name(x509.Name([x509.NameAttribute(NameOID.COMMON_NAME, issuer)]))
                   .public_key(key.public_key()).serial_number(x509.random_serial_number())
                   .not_valid_before(start).not_valid_after(start + dt.timedelta(days=1))
                   .add_extension(x509.BasicConstraints(ca=ca, path_length=None), critical=True))
        if not ca:
            builder = builder.add_extension(x509.SubjectAlternativeName([x509.DNSName(dns_name)]), critical=False)
        return builder.sign(signer, hashes.SHA256())

    ca_key, key = ec.generate_private_key(ec.SECP256R1()), ec.generate_private_key(ec.SECP256R1())
    ca = certificate("probe-ca", ca_key, "probe-ca", ca_key, True)
    leaf = certificate(dns_name, key, "probe-ca", ca_key, False)
    pem = serialization.Encoding.PEM
    return (ca.public_bytes(pem), leaf.public_bytes(pem),
            key.private_bytes(pem, serialization.PrivateFormat.PKCS8, serialization.NoEncryption()))


def test_a_webhook_call_reaches_the_process(rt: ClusterHandle) -> None:
    import base64

    ca, crt, key = serving_certificate("probe-webhook.default.svc")
    secret = {"apiVersion": "v1", "kind": "Secret", "type": "kubernetes.io/tls",
              "metadata": {"name": "probe-webhook-tls", "namespace": "default"},
              "data": {"tls.crt": base64.b64encode(crt).decode(), "tls.key": base64.b64encode(key).decode()}}
    hook = deployment("probe-webhook", ["--http", "8080", "--webhook", "9443", "--cert-dir", "/tls"], extra={
        "volumes": [{"name": "tls", "secret": {"secretName": "probe-webhook-tls"}}]})
    container = hook["spec"]["template"]["spec"]["containers"][0]
    container["ports"].append({"name": "webhook", "containerPort": 9443})
    container["volumeMounts"] = [{"name": "tls", "mountPath": "/tls", "readOnly": True}]
    service = {"apiVersion": "v1", "kind": "Service", "metadata": {"name": "probe-webhook", "namespace": "default"},
               "spec": {"selector": {"app": "probe-webhook"},
                        "ports": [{"name": "https", "port": 443, "targetPort": "webhook"}]}}
    config = {"apiVersion": "admissionregistration.k8s.io/v1", "kind": "ValidatingWebhookConfiguration",
              "metadata": {"name": "probe-webhook"},
              "webhooks": [{"name": "probe.modelplane.test", "admissionReviewVersions": ["v1"],
                            "sideEffects": "None", "failurePolicy": "Fail", "timeoutSeconds": 5,
                            "clientConfig": {"service": {"name": "probe-webhook", "namespace": "default"},
                                             "caBundle": base64.b64encode(ca).decode()},
                            "namespaceSelector": {"matchLabels": {"probe-webhook": "on"}},
                            "rules": [{"apiGroups": [""], "apiVersions": ["v1"], "operations": ["CREATE"],
                                       "resources": ["configmaps"]}]}]}
    apply(rt, secret, hook, service)
    rt.kubectl("rollout", "status", "deployment/probe-webhook", "--timeout=30s")
    pod = one_pod(rt, "app=probe-webhook")
    rt.kubectl("create", "namespace", "hooked")
    rt.kubectl("label", "namespace", "hooked", "probe-webhook=on")
    apply(rt, config)

    def refused() -> str:
        proc = rt.kubectl("-n", "hooked", "create", "configmap", "refuse-me", check=False)
        return proc.stderr if proc.returncode != 0 and "refused by pod" in proc.stderr else ""

    message = wait_for(refused, timeout=15)  # the API server loads new webhook configurations within a second
    assert f"refused by pod {pod['metadata']['name']} (pid {pid_of(pod)})" in message, message
    rt.kubectl("-n", "hooked", "create", "configmap", "allowed")
    # The API server's pod proxy takes the same egress, to the pod IP.
    answer = json.loads(rt.kubectl("get", "--raw", f"/api/v1/namespaces/default/pods/{pod['metadata']['name']}:8080"
                                                   "/proxy/whoami").stdout)
    assert answer == {"pod": pod["metadata"]["name"], "pid": pid_of(pod)}
    rt.kubectl("delete", "validatingwebhookconfiguration", "probe-webhook")


def test_the_api_servers_node_traffic_still_reaches_kwok(rt: ClusterHandle) -> None:
    rt.kubectl("create", "deployment", "logged", "--image=registry.invalid/logged:1")
    rt.kubectl("rollout", "status", "deployment/logged", "--timeout=30s")
    name = one_pod(rt, "app=logged")["metadata"]["name"]
    logs = rt.kubectl("logs", name, check=False)
    # kwok answers (it has no log files configured for the pod): the request went through the egress to it.
    assert "no logs found for container" in logs.stderr and "proxy error" not in logs.stderr, logs.stderr


# -- the admission stand-in ------------------------------------------------------------------------------------


def cert_manager_webhook(namespace: str) -> list[dict[str, Any]]:
    """cert-manager's webhook as its chart (v1.21) renders it, as far as the stand-in is concerned: the image, the
    flags naming its CA Secret and serving names, its ports and probe, its ServiceAccount and the Role that lets it
    keep its CA Secret, its Service, and a webhook configuration whose caBundle cainjector fills."""
    name = "cert-manager-webhook"
    labels = {"app.kubernetes.io/name": "webhook"}
    container = {
        "name": name, "image": "quay.io/jetstack/cert-manager-webhook:v1.21.1",
        "args": ["--v=2", "--secure-port=10250", "--dynamic-serving-ca-secret-namespace=$(POD_NAMESPACE)",
                 "--dynamic-serving-ca-secret-name=cert-manager-webhook-ca",
                 f"--dynamic-serving-dns-names={name},{name}.$(POD_NAMESPACE),{name}.$(POD_NAMESPACE).svc"],
        "env": [{"name": "POD_NAMESPACE", "valueFrom": {"fieldRef": {"fieldPath": "metadata.namespace"}}}],
        "ports": [{"name": "https", "containerPort": 10250}, {"name": "healthcheck", "containerPort": 6080}],
        "readinessProbe": {"httpGet": {"path": "/healthz", "port": 6080}, "periodSeconds": 1},
    }
    rbac = "rbac.authorization.k8s.io"
    return [
        {"apiVersion": "v1", "kind": "Namespace", "metadata": {"name": namespace}},
        {"apiVersion": "v1", "kind": "ServiceAccount", "metadata": {"name": name, "namespace": namespace}},
        {"apiVersion": f"{rbac}/v1", "kind": "Role", "metadata": {"name": f"{name}:dynamic-serving",
                                                                   "namespace": namespace},
         "rules": [{"apiGroups": [""], "resources": ["secrets"], "resourceNames": ["cert-manager-webhook-ca"],
                    "verbs": ["get", "list", "watch", "update"]},
                   {"apiGroups": [""], "resources": ["secrets"], "verbs": ["create"]}]},
        {"apiVersion": f"{rbac}/v1", "kind": "RoleBinding", "metadata": {"name": f"{name}:dynamic-serving",
                                                                          "namespace": namespace},
         "roleRef": {"apiGroup": rbac, "kind": "Role", "name": f"{name}:dynamic-serving"},
         "subjects": [{"kind": "ServiceAccount", "name": name, "namespace": namespace}]},
        {"apiVersion": "apps/v1", "kind": "Deployment", "metadata": {"name": name, "namespace": namespace},
         "spec": {"replicas": 1, "selector": {"matchLabels": labels},
                  "template": {"metadata": {"labels": labels},
                               "spec": {"serviceAccountName": name, "containers": [container]}}}},
        {"apiVersion": "v1", "kind": "Service", "metadata": {"name": name, "namespace": namespace},
         "spec": {"selector": labels, "ports": [{"name": "https", "port": 443, "targetPort": "https"}]}},
    ]


def test_the_stand_in_answers_cert_managers_webhook_with_its_own_ca(rt: ClusterHandle) -> None:
    namespace = "cert-manager"
    apply(rt, *cert_manager_webhook(namespace))
    rt.kubectl("-n", namespace, "rollout", "status", "deployment/cert-manager-webhook", "--timeout=30s")
    secret = json.loads(rt.kubectl("-n", namespace, "get", "secret", "cert-manager-webhook-ca", "-o", "json").stdout)
    assert {"ca.crt", "tls.crt", "tls.key"} <= set(secret["data"])
    config = {"apiVersion": "admissionregistration.k8s.io/v1", "kind": "ValidatingWebhookConfiguration",
              "metadata": {"name": "cert-manager-webhook",
                           "annotations": {"cert-manager.io/inject-ca-from-secret":
                                           f"{namespace}/cert-manager-webhook-ca"}},
              "webhooks": [{"name": "webhook.cert-manager.io", "admissionReviewVersions": ["v1"],
                            "sideEffects": "None", "failurePolicy": "Fail", "timeoutSeconds": 5,
                            "clientConfig": {"service": {"name": "cert-manager-webhook", "namespace": namespace,
                                                         "path": "/validate"}},
                            "namespaceSelector": {"matchLabels": {"stand-in": "on"}},
                            "rules": [{"apiGroups": [""], "apiVersions": ["v1"], "operations": ["CREATE"],
                                       "resources": ["configmaps"]}]}]}
    rt.kubectl("create", "namespace", "guarded")
    rt.kubectl("label", "namespace", "guarded", "stand-in=on")
    apply(rt, config)
    injected = wait_for(lambda: json.loads(rt.kubectl("get", "validatingwebhookconfiguration", "cert-manager-webhook",
                                                      "-o", "json").stdout)["webhooks"][0]["clientConfig"]
                        .get("caBundle"), timeout=15)
    assert injected == secret["data"]["ca.crt"]

    def created(name: str) -> bool:
        return rt.kubectl("-n", "guarded", "create", "configmap", name, check=False).returncode == 0

    assert wait_for(lambda: created("through-the-stand-in"), timeout=15), "the stand-in did not answer"
    rt.kubectl("-n", namespace, "scale", "deployment/cert-manager-webhook", "--replicas=0")
    assert wait_for(lambda: not pods(rt, "app.kubernetes.io/name=webhook", namespace), timeout=15)
    refused = rt.kubectl("-n", "guarded", "create", "configmap", "nobody-answers", check=False)
    assert refused.returncode != 0 and "failed calling webhook" in refused.stderr, refused.stderr
    rt.kubectl("delete", "validatingwebhookconfiguration", "cert-manager-webhook")


# -- a real operator -------------------------------------------------------------------------------------------


def test_the_real_trust_manager_syncs_a_bundle(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """trust-manager v0.24.0's own binary (testing/cluster/build, which make control-plane runs), run by the runtime
    for its chart's image."""
    import base64

    from cluster import binaries

    monkeypatch.setenv("MODELPLANE_OPERATORS_BIN", str(binaries.operator_bin_dir()))
    ca, crt, key = serving_certificate("trust-manager.cert-manager.svc")
    rbac = "rbac.authorization.k8s.io"
    objects = [
        {"apiVersion": "v1", "kind": "Namespace", "metadata": {"name": "cert-manager"}},
        {"apiVersion": "v1", "kind": "ServiceAccount",
         "metadata": {"name": "trust-manager", "namespace": "cert-manager"}},
        {"apiVersion": f"{rbac}/v1", "kind": "ClusterRole", "metadata": {"name": "trust-manager"},
         "rules": [{"apiGroups": ["trust.cert-manager.io", "trust-manager.io"], "resources": ["*"], "verbs": ["*"]},
                   {"apiGroups": [""], "resources": ["configmaps", "secrets", "events"], "verbs": ["*"]},
                   {"apiGroups": [""], "resources": ["namespaces"], "verbs": ["get", "list", "watch"]},
                   {"apiGroups": ["events.k8s.io"], "resources": ["events"], "verbs": ["*"]},
                   {"apiGroups": ["coordination.k8s.io"], "resources": ["leases"], "verbs": ["*"]}]},
        {"apiVersion": f"{rbac}/v1", "kind": "ClusterRoleBinding", "metadata": {"name": "trust-manager"},
         "roleRef": {"apiGroup": rbac, "kind": "ClusterRole", "name": "trust-manager"},
         "subjects": [{"kind": "ServiceAccount", "name": "trust-manager", "namespace": "cert-manager"}]},
        {"apiVersion": "v1", "kind": "Secret", "type": "kubernetes.io/tls",
         "metadata": {"name": "trust-manager-tls", "namespace": "cert-manager"},
         "data": {"tls.crt": base64.b64encode(crt).decode(), "tls.key": base64.b64encode(key).decode()}},
        {"apiVersion": "v1", "kind": "ConfigMap", "metadata": {"name": "source-ca", "namespace": "cert-manager"},
         "data": {"ca.crt": ca.decode()}},
        {"apiVersion": "apps/v1", "kind": "Deployment",
         "metadata": {"name": "trust-manager", "namespace": "cert-manager"},
         "spec": {"replicas": 1, "selector": {"matchLabels": {"app": "trust-manager"}},
                  "template": {"metadata": {"labels": {"app": "trust-manager"}}, "spec": {
                      "serviceAccountName": "trust-manager",
                      "volumes": [{"name": "tls", "secret": {"secretName": "trust-manager-tls"}}],
                      "containers": [{
                          "name": "trust-manager", "image": "quay.io/jetstack/trust-manager:v0.24.0",
                          "args": ["--log-level=1", "--trust-namespace=cert-manager", "--leader-elect=false",
                                   "--webhook-certificate-dir=/tls"],
                          "ports": [{"name": "webhook", "containerPort": 6443}],
                          "readinessProbe": {"httpGet": {"path": "/readyz", "port": 6060}, "periodSeconds": 1},
                          "volumeMounts": [{"name": "tls", "mountPath": "/tls", "readOnly": True}]}]}}}},
    ]
    bundle = {"apiVersion": "trust.cert-manager.io/v1alpha1", "kind": "Bundle", "metadata": {"name": "probe-bundle"},
              "spec": {"sources": [{"configMap": {"name": "source-ca", "key": "ca.crt"}}],
                       "target": {"configMap": {"key": "bundle.pem"}}}}
    upstream = Path(__file__).resolve().parents[3] / "shared" / "upstream" / "trust-manager" / "crds"
    with running_cluster(tmp_path, nodes=1, gpu_nodes=0, operator_double=False, audit=False) as handle:
        handle.kubectl("apply", "--server-side", "-f", str(upstream / "trust.cert-manager.io_bundles.yaml"))
        handle.wait_established("bundles.trust.cert-manager.io", timeout=30)
        apply(handle, *objects)
        rollout = handle.kubectl("-n", "cert-manager", "rollout", "status", "deployment/trust-manager",
                                 "--timeout=60s", check=False)
        logs = [p.read_text()[-3000:] for p in handle.cluster_workdir.glob("runtime/pods/*/*.log")]
        assert rollout.returncode == 0, logs
        pod = one_pod(handle, "app=trust-manager", "cert-manager")
        assert "trust-manager" in Path(f"/proc/{pid_of(pod)}/cmdline").read_text()
        apply(handle, bundle)
        get = ("get", "configmap", "probe-bundle", "-o", "json", "--show-managed-fields")
        target = wait_for(lambda: json.loads(handle.kubectl(*get, check=False).stdout or "{}"), timeout=30)
        assert target, "trust-manager wrote no target ConfigMap"
        assert target["data"]["bundle.pem"].strip() == ca.decode().strip()
        assert any(entry.get("manager") == "trust-manager" for entry in target["metadata"]["managedFields"])
