"""Protobuf request bodies in the stand-in (a TEST DOUBLE): the decoder on bytes we encode ourselves, then
the real kubectl 1.32 (`create` generators) and the real helm 3 and helm 4 (release Secrets) against it."""

from __future__ import annotations

import base64
import gzip
import json
import subprocess
import urllib.error
import urllib.request
from pathlib import Path

import pytest
from kubernetes import client
from standin import protobuf
from standin.fixtures import REPO
from standin.store import APIError

HELMS = {"helm3": REPO / ".venv" / "bin" / "helm", "helm4": REPO / ".venv" / "helm4" / "bin" / "helm"}


# ---------------------------------------------------------------- a tiny test-side encoder


def varint(value: int) -> bytes:
    value &= (1 << 64) - 1  # negative ints take ten bytes, as Go writes them
    out = bytearray()
    while True:
        low, value = value & 0x7F, value >> 7
        out.append(low | (0x80 if value else 0))
        if not value:
            return bytes(out)


def num(number: int, value: int) -> bytes:
    """A varint field (int32, int64, bool)."""
    return varint(number << 3) + varint(value)


def ld(number: int, payload: bytes | str) -> bytes:
    """A length-delimited field (string, bytes, message)."""
    data = payload.encode() if isinstance(payload, str) else payload
    return varint(number << 3 | 2) + varint(len(data)) + data


def entry(number: int, key: str, value: bytes | str) -> bytes:
    """One map entry {1 key, 2 value}."""
    return ld(number, ld(1, key) + ld(2, value))


def envelope(api_version: str, kind: str, raw: bytes) -> bytes:
    """`k8s\\0` + runtime.Unknown, with the empty contentEncoding/contentType Go writes."""
    return b"k8s\x00" + ld(1, ld(1, api_version) + ld(2, kind)) + ld(2, raw) + ld(3, "") + ld(4, "")


def meta(name: str, *extra: bytes) -> bytes:
    """ObjectMeta as Go writes it: every non-pointer field, empty ones included, and a zero creationTimestamp."""
    return (ld(1, name) + ld(2, "") + ld(3, "") + ld(4, "") + ld(5, "") + ld(6, "") + num(7, 0) + ld(8, b"")
            + b"".join(extra))


def int_or_string(value: int | str) -> bytes:
    if isinstance(value, str):
        return num(1, 1) + num(2, 0) + ld(3, value)
    return num(1, 0) + num(2, value) + ld(3, "")


def decode_error(body: bytes) -> APIError:
    with pytest.raises(APIError) as caught:
        protobuf.decode(body)
    return caught.value


# ---------------------------------------------------------------- decoder units


def test_real_kubectl_create_namespace_body():
    # the 55 bytes `kubectl create namespace demo` (1.32.3) sent, captured from the wire
    body = bytes.fromhex("6b3873000a0f0a02763112094e616d657370616365121c0a140a0464656d6f12001a0022002a00320038004200"
                         "12001a020a001a002200")
    assert len(body) == 55
    assert protobuf.decode(body) == ("v1", "Namespace", {"apiVersion": "v1", "kind": "Namespace",
                                                         "metadata": {"name": "demo"}, "spec": {}, "status": {}})


def test_secret_bytes_become_base64_and_pointer_false_is_kept():
    binary = bytes(range(256))
    raw = (ld(1, meta("s", entry(11, "app", "x"), entry(12, "note", ""))) + entry(2, "a", b"b")
           + entry(2, "bin", binary) + entry(2, "empty", b"") + ld(3, "Opaque") + num(5, 0))
    api_version, kind, obj = protobuf.decode(envelope("v1", "Secret", raw))
    assert (api_version, kind) == ("v1", "Secret")
    assert obj == {"apiVersion": "v1", "kind": "Secret",
                   "metadata": {"name": "s", "labels": {"app": "x"}, "annotations": {"note": ""}},
                   "data": {"a": "Yg==", "bin": base64.b64encode(binary).decode(), "empty": ""},
                   "type": "Opaque", "immutable": False}


def test_empty_non_pointer_fields_are_dropped_and_map_entries_kept():
    raw = ld(1, meta("cfg")) + entry(2, "k", "v") + entry(2, "blank", "") + entry(3, "b", b"\x00\xff")
    obj = protobuf.decode(envelope("v1", "ConfigMap", raw))[2]
    assert obj == {"apiVersion": "v1", "kind": "ConfigMap", "metadata": {"name": "cfg"},
                   "data": {"k": "v", "blank": ""}, "binaryData": {"b": "AP8="}}


def test_time_and_negative_ints():
    stamp = ld(9, num(1, 1700000000) + num(2, 0))  # deletionTimestamp *Time
    owner = ld(13, ld(1, "Deployment") + ld(3, "web") + ld(4, "u-1") + ld(5, "apps/v1") + num(6, 1) + num(7, 0))
    raw = ld(1, meta("pc", stamp, owner, ld(14, "a/b"))) + num(2, -5) + num(3, 0) + ld(4, "")
    obj = protobuf.decode(envelope("scheduling.k8s.io/v1", "PriorityClass", raw))[2]
    assert obj["metadata"] == {"name": "pc", "deletionTimestamp": "2023-11-14T22:13:20Z", "finalizers": ["a/b"],
                               "ownerReferences": [{"kind": "Deployment", "name": "web", "uid": "u-1",
                                                    "apiVersion": "apps/v1", "controller": True,
                                                    "blockOwnerDeletion": False}]}
    assert obj["value"] == -5 and "globalDefault" not in obj and "description" not in obj


def test_int_or_string_forms():
    ports = (ld(1, ld(1, "web") + ld(2, "TCP") + num(3, 80) + ld(4, int_or_string(8080)) + num(5, 0))
             + ld(1, ld(1, "named") + ld(2, "TCP") + num(3, 81) + ld(4, int_or_string("http")) + num(5, 0))
             + ld(1, ld(1, "") + ld(2, "TCP") + num(3, 82) + ld(4, int_or_string(0)) + num(5, 0)))
    spec = ports + entry(2, "app", "web") + ld(3, "") + ld(4, "ClusterIP") + num(13, 0)
    obj = protobuf.decode(envelope("v1", "Service", ld(1, meta("web")) + ld(2, spec) + ld(3, ld(1, b""))))[2]
    assert obj["spec"] == {"ports": [{"name": "web", "protocol": "TCP", "port": 80, "targetPort": 8080},
                                     {"name": "named", "protocol": "TCP", "port": 81, "targetPort": "http"},
                                     {"protocol": "TCP", "port": 82}],
                           "selector": {"app": "web"}, "type": "ClusterIP"}
    assert obj["status"] == {"loadBalancer": {}}


def container() -> bytes:
    probe = (ld(1, ld(2, ld(1, "/healthz") + ld(2, int_or_string("http")) + ld(3, "") + ld(4, "HTTP")))
             + num(2, 5) + num(3, 1) + num(4, 10) + num(5, 1) + num(6, 3))
    env = (ld(7, ld(1, "MODE") + ld(2, "prod"))
           + ld(7, ld(1, "TOKEN") + ld(2, "") + ld(3, ld(4, ld(1, ld(1, "creds")) + ld(2, "token") + num(3, 0))))
           + ld(7, ld(1, "POD") + ld(2, "") + ld(3, ld(1, ld(1, "v1") + ld(2, "metadata.name")))))
    resources = ld(8, entry(1, "cpu", ld(1, "500m")) + entry(2, "memory", ld(1, "64Mi")))
    security = ld(15, ld(1, ld(2, "ALL")) + num(4, 0) + num(5, 1) + num(7, 0))
    return (ld(1, "app") + ld(2, "nginx:1.27") + ld(3, "nginx") + ld(4, "-g") + ld(5, "")
            + ld(6, ld(1, "http") + num(2, 0) + num(3, 8080) + ld(4, "TCP") + ld(5, ""))
            + env + resources + ld(9, ld(1, "cfg") + num(2, 1) + ld(3, "/etc/cfg") + ld(4, "") + ld(6, ""))
            + ld(10, probe) + ld(13, "") + ld(14, "IfNotPresent") + security + num(16, 0) + num(17, 0) + num(18, 0)
            + ld(19, ld(1, "") + ld(2, ld(1, ld(1, "settings")) + num(2, 1))) + ld(20, ""))


def test_deployment_pod_template_and_pointer_zero_kept():
    config_map = ld(1, ld(1, "settings")) + ld(2, ld(1, "a") + ld(2, "a.txt")) + num(3, 0o644)
    volumes = (ld(1, ld(1, "cfg") + ld(2, ld(19, config_map)))
               + ld(1, ld(1, "scratch") + ld(2, ld(2, ld(1, "") + ld(2, ld(1, "1Gi")))))
               + ld(1, ld(1, "tok") + ld(2, ld(26, ld(1, ld(4, ld(1, "api") + num(2, 3600) + ld(3, "token")))))))
    affinity = ld(18, ld(1, ld(1, ld(1, ld(1, ld(1, "zone") + ld(2, "In") + ld(3, "a") + ld(3, "b"))))))
    toleration = ld(22, ld(1, "gpu") + ld(2, "Exists") + ld(3, "") + ld(4, "NoSchedule"))
    pod = (volumes + ld(2, container()) + ld(3, "Always") + num(4, 30) + ld(6, "ClusterFirst")
           + entry(7, "disk", "ssd") + ld(8, "runner") + ld(9, "") + ld(10, "") + num(11, 0) + num(12, 0)
           + num(13, 0) + ld(14, num(2, 0) + num(5, 2000)) + ld(16, "") + ld(17, "") + affinity + ld(19, "")
           + toleration + ld(24, "") + ld(20, ld(1, "init") + ld(2, "busybox") + ld(8, b"")))
    template = ld(1, meta("", entry(11, "app", "web"))) + ld(2, pod)
    strategy = ld(1, "RollingUpdate") + ld(2, ld(1, int_or_string(0)) + ld(2, int_or_string("25%")))
    spec = num(1, 0) + ld(2, entry(1, "app", "web")) + ld(3, template) + ld(4, strategy) + num(5, 0) + num(7, 0)
    status = num(1, 0) + num(2, 0) + num(3, 0) + num(4, 0) + num(5, 0) + num(7, 0)
    obj = protobuf.decode(envelope("apps/v1", "Deployment", ld(1, meta("web")) + ld(2, spec) + ld(3, status)))[2]
    spec_json = obj["spec"]
    assert spec_json["replicas"] == 0  # *int32: a present zero is meaningful
    assert "minReadySeconds" not in spec_json and "paused" not in spec_json
    assert spec_json["selector"] == {"matchLabels": {"app": "web"}}
    assert spec_json["strategy"] == {"type": "RollingUpdate", "rollingUpdate": {"maxUnavailable": 0, "maxSurge": "25%"}}
    assert obj["status"] == {}
    pod_json = spec_json["template"]["spec"]
    assert spec_json["template"]["metadata"] == {"labels": {"app": "web"}}
    assert pod_json["volumes"] == [
        {"name": "cfg", "configMap": {"name": "settings", "items": [{"key": "a", "path": "a.txt"}],
                                      "defaultMode": 0o644}},
        {"name": "scratch", "emptyDir": {"sizeLimit": "1Gi"}},
        {"name": "tok", "projected": {"sources": [{"serviceAccountToken": {"audience": "api",
                                                                           "expirationSeconds": 3600,
                                                                           "path": "token"}}]}}]
    assert pod_json["restartPolicy"] == "Always" and pod_json["terminationGracePeriodSeconds"] == 30
    assert pod_json["nodeSelector"] == {"disk": "ssd"} and pod_json["serviceAccountName"] == "runner"
    assert pod_json["securityContext"] == {"runAsUser": 0, "fsGroup": 2000}
    assert pod_json["affinity"] == {"nodeAffinity": {"requiredDuringSchedulingIgnoredDuringExecution": {
        "nodeSelectorTerms": [{"matchExpressions": [{"key": "zone", "operator": "In", "values": ["a", "b"]}]}]}}}
    assert pod_json["tolerations"] == [{"key": "gpu", "operator": "Exists", "effect": "NoSchedule"}]
    assert pod_json["initContainers"] == [{"name": "init", "image": "busybox", "resources": {}}]
    assert pod_json["containers"] == [{
        "name": "app", "image": "nginx:1.27", "command": ["nginx"], "args": ["-g"],
        "ports": [{"name": "http", "containerPort": 8080, "protocol": "TCP"}],
        "env": [{"name": "MODE", "value": "prod"},
                {"name": "TOKEN", "valueFrom": {"secretKeyRef": {"name": "creds", "key": "token",
                                                                 "optional": False}}},
                {"name": "POD", "valueFrom": {"fieldRef": {"apiVersion": "v1", "fieldPath": "metadata.name"}}}],
        "resources": {"limits": {"cpu": "500m"}, "requests": {"memory": "64Mi"}},
        "volumeMounts": [{"name": "cfg", "readOnly": True, "mountPath": "/etc/cfg"}],
        "livenessProbe": {"httpGet": {"path": "/healthz", "port": "http", "scheme": "HTTP"},
                          "initialDelaySeconds": 5, "timeoutSeconds": 1, "periodSeconds": 10,
                          "successThreshold": 1, "failureThreshold": 3},
        "imagePullPolicy": "IfNotPresent",
        "securityContext": {"capabilities": {"drop": ["ALL"]}, "runAsUser": 0, "runAsNonRoot": True,
                            "allowPrivilegeEscalation": False},
        "envFrom": [{"configMapRef": {"name": "settings", "optional": True}}]}]


def test_delete_options_keep_pointer_zeros():
    raw = num(1, 0) + ld(2, ld(1, "u-1")) + num(3, 0) + ld(4, "Orphan") + ld(5, "All")
    assert protobuf.decode(envelope("v1", "DeleteOptions", raw)) == ("v1", "DeleteOptions", {
        "apiVersion": "v1", "kind": "DeleteOptions", "gracePeriodSeconds": 0, "preconditions": {"uid": "u-1"},
        "orphanDependents": False, "propagationPolicy": "Orphan", "dryRun": ["All"]})
    empty = protobuf.decode(envelope("apps/v1", "DeleteOptions", b""))[2]
    assert empty == {"apiVersion": "apps/v1", "kind": "DeleteOptions"}


def test_rbac_binding_and_quota():
    raw = (ld(1, meta("rb")) + ld(2, ld(1, "ServiceAccount") + ld(2, "") + ld(3, "runner") + ld(4, "default"))
           + ld(3, ld(1, "rbac.authorization.k8s.io") + ld(2, "ClusterRole") + ld(3, "view")))
    obj = protobuf.decode(envelope("rbac.authorization.k8s.io/v1", "ClusterRoleBinding", raw))[2]
    assert obj["subjects"] == [{"kind": "ServiceAccount", "name": "runner", "namespace": "default"}]
    assert obj["roleRef"] == {"apiGroup": "rbac.authorization.k8s.io", "kind": "ClusterRole", "name": "view"}
    quota = ld(1, meta("q")) + ld(2, entry(1, "pods", ld(1, "2"))) + ld(3, b"")
    assert protobuf.decode(envelope("v1", "ResourceQuota", quota))[2]["spec"] == {"hard": {"pods": "2"}}


def test_unknown_field_number_is_an_error_naming_the_message():
    spec = num(1, 2) + num(99, 1)
    error = decode_error(envelope("apps/v1", "Deployment", ld(1, meta("web")) + ld(2, spec)))
    assert error.code == 400
    assert "unknown field 99 in message DeploymentSpec" in error.message
    nested = decode_error(envelope("v1", "Secret", ld(1, meta("s", ld(16, "x")))))
    assert nested.code == 400 and "unknown field 16 in message ObjectMeta" in nested.message


def test_unknown_kinds_answer_415_naming_the_kind():
    error = decode_error(envelope("apps/v1", "ReplicaSet", ld(1, meta("rs"))))
    assert error.code == 415 and error.reason == "UnsupportedMediaType"
    assert error.message == "the stand-in cannot decode protobuf for apps/v1 ReplicaSet; send JSON"
    custom = decode_error(envelope("gateway.networking.k8s.io/v1", "Gateway", ld(1, meta("gw"))))
    assert custom.code == 415 and "gateway.networking.k8s.io/v1 Gateway" in custom.message


def test_every_message_the_tables_name_exists():
    for message, fields in protobuf.MESSAGES.items():
        for number, field in fields.items():
            known = field.type in protobuf.SCALARS or field.type in protobuf.SPECIAL or field.type in protobuf.MESSAGES
            assert known, f"{message} field {number} ({field.name}) names the unknown type {field.type}"
    assert set(protobuf.KINDS.values()) <= set(protobuf.MESSAGES)


def test_malformed_bodies_are_400():
    assert decode_error(b'{"kind": "Namespace"}').code == 400
    truncated = envelope("v1", "Namespace", ld(1, meta("demo")))[:-12]
    assert decode_error(truncated).code == 400


# ---------------------------------------------------------------- raw HTTP against a stand-in


def http(cluster, method: str, path: str, body: bytes = b"",
         content_type: str = "application/vnd.kubernetes.protobuf") -> tuple[int, dict]:
    request = urllib.request.Request(cluster.url + path, data=body or None, method=method,
                                     headers={"Content-Type": content_type, "Accept": "application/json"})
    try:
        with urllib.request.urlopen(request, timeout=30) as response:
            return response.status, json.loads(response.read())
    except urllib.error.HTTPError as exc:
        return exc.code, json.loads(exc.read())


def test_protobuf_create_and_delete_options_over_http(cluster):
    base = "/api/v1/namespaces/default/configmaps"
    body = envelope("v1", "ConfigMap", ld(1, meta("pb-http")) + entry(2, "a", "b"))
    code, created = http(cluster, "POST", base, body)
    assert code == 201 and created["data"] == {"a": "b"} and created["metadata"]["uid"]
    dry = envelope("v1", "DeleteOptions", ld(5, "All"))
    assert http(cluster, "DELETE", f"{base}/pb-http", dry)[0] == 200
    assert http(cluster, "GET", f"{base}/pb-http")[0] == 200  # dryRun in the protobuf DeleteOptions: still there
    stale = envelope("v1", "DeleteOptions", ld(2, ld(1, "not-the-uid")))
    code, status = http(cluster, "DELETE", f"{base}/pb-http", stale)
    assert code == 409, status
    assert http(cluster, "DELETE", f"{base}/pb-http", envelope("v1", "DeleteOptions", num(1, 0)))[0] == 200
    assert http(cluster, "GET", f"{base}/pb-http")[0] == 404


def test_protobuf_refusals_over_http(cluster):
    code, status = http(cluster, "POST", "/apis/apps/v1/namespaces/default/replicasets",
                        envelope("apps/v1", "ReplicaSet", ld(1, meta("rs"))))
    assert (code, status["reason"]) == (415, "UnsupportedMediaType")
    assert status["message"] == "the stand-in cannot decode protobuf for apps/v1 ReplicaSet; send JSON"
    code, status = http(cluster, "POST", "/api/v1/namespaces/default/configmaps",
                        envelope("v1", "ConfigMap", ld(1, meta("bad")) + num(42, 1)))
    assert code == 400 and "unknown field 42 in message ConfigMap" in status["message"]
    code, status = http(cluster, "POST", "/api/v1/namespaces/default/configmaps",
                        envelope("v1", "Secret", ld(1, meta("wrong-kind"))))
    assert code == 400 and "does not match the expected kind" in status["message"]
    code, _body = http(cluster, "PATCH", "/api/v1/namespaces/default/configmaps/x", b"k8s\x00")
    assert code == 415


# ---------------------------------------------------------------- the real kubectl


def get_json(cluster, *args: str) -> dict:
    return json.loads(cluster.kubectl("get", *args, "-o", "json").stdout)


CREATES = {
    "namespace": (["namespace", "pb-ns"], ["namespace", "pb-ns"],
                  lambda o: o["metadata"]["labels"] == {"kubernetes.io/metadata.name": "pb-ns"}),
    "secret": (["secret", "generic", "pb-secret", "--from-literal=a=b", "--from-literal=empty="],
               ["secret", "pb-secret"], lambda o: o["data"] == {"a": "Yg==", "empty": ""} and o["type"] == "Opaque"),
    "configmap": (["configmap", "pb-cm", "--from-literal=a=b", "--from-literal=n=1"], ["configmap", "pb-cm"],
                  lambda o: o["data"] == {"a": "b", "n": "1"}),
    "serviceaccount": (["serviceaccount", "pb-sa"], ["serviceaccount", "pb-sa"],
                       lambda o: o["metadata"]["name"] == "pb-sa" and "secrets" not in o),
    "deployment": (["deployment", "pb-deploy", "--image=nginx:1.27", "--replicas=0", "--port=8080"],
                   ["deployment", "pb-deploy"],
                   lambda o: o["spec"]["replicas"] == 0
                   and o["spec"]["selector"] == {"matchLabels": {"app": "pb-deploy"}}
                   and o["spec"]["template"]["spec"]["containers"][0]["image"] == "nginx:1.27"
                   and o["spec"]["template"]["spec"]["containers"][0]["ports"][0]["containerPort"] == 8080),
    "service": (["service", "clusterip", "pb-svc", "--tcp=80:8080"], ["service", "pb-svc"],
                lambda o: o["spec"]["ports"][0]["port"] == 80 and o["spec"]["ports"][0]["targetPort"] == 8080
                and o["spec"]["type"] == "ClusterIP"),
    "job": (["job", "pb-job", "--image=busybox"], ["job", "pb-job"],
            lambda o: o["spec"]["template"]["spec"]["restartPolicy"] == "Never"
            and o["spec"]["template"]["spec"]["containers"][0]["image"] == "busybox"),
    "role": (["role", "pb-role", "--verb=get", "--resource=pods"], ["role", "pb-role"],
             lambda o: o["rules"] == [{"verbs": ["get"], "apiGroups": [""], "resources": ["pods"]}]),
    "rolebinding": (["rolebinding", "pb-rb", "--role=pb-role", "--serviceaccount=default:pb-sa"],
                    ["rolebinding", "pb-rb"],
                    lambda o: o["roleRef"]["name"] == "pb-role"
                    and o["subjects"] == [{"kind": "ServiceAccount", "name": "pb-sa", "namespace": "default"}]),
    "clusterrole": (["clusterrole", "pb-cr", "--verb=list", "--resource=deployments.apps"],
                    ["clusterrole", "pb-cr"],
                    lambda o: o["rules"] == [{"verbs": ["list"], "apiGroups": ["apps"], "resources": ["deployments"]}]),
    "clusterrolebinding": (["clusterrolebinding", "pb-crb", "--clusterrole=pb-cr", "--user=alice"],
                           ["clusterrolebinding", "pb-crb"],
                           lambda o: o["subjects"] == [{"kind": "User", "apiGroup": "rbac.authorization.k8s.io",
                                                        "name": "alice"}]),
    "priorityclass": (["priorityclass", "pb-pc", "--value=1000", "--description=pb"], ["priorityclass", "pb-pc"],
                      lambda o: o["value"] == 1000 and o["description"] == "pb"),
    "quota": (["quota", "pb-quota", "--hard=pods=2,requests.cpu=500m"], ["resourcequota", "pb-quota"],
              lambda o: o["spec"]["hard"] == {"pods": "2", "requests.cpu": "500m"}),
    "poddisruptionbudget": (["poddisruptionbudget", "pb-pdb", "--selector=app=x", "--min-available=0"],
                            ["poddisruptionbudget", "pb-pdb"],
                            lambda o: o["spec"]["minAvailable"] == 0),
    "cronjob": (["cronjob", "pb-cj", "--image=busybox", "--schedule=*/5 * * * *"], ["cronjob", "pb-cj"],
                lambda o: o["spec"]["schedule"] == "*/5 * * * *"),
    "ingress": (["ingress", "pb-ing", "--rule=a.example/=svc:80", "--class=envoy"], ["ingress", "pb-ing"],
                lambda o: o["spec"]["ingressClassName"] == "envoy" and o["spec"]["rules"] == [
                    {"host": "a.example", "http": {"paths": [{"path": "/", "pathType": "Exact", "backend": {
                        "service": {"name": "svc", "port": {"number": 80}}}}]}}]),
}


@pytest.mark.parametrize("what", list(CREATES))
def test_kubectl_create_dry_run_create_delete(cluster, what):
    create, get, check = CREATES[what]
    dry = cluster.kubectl("create", *create, "--dry-run=server", "-o", "json")
    assert check(json.loads(dry.stdout)), dry.stdout
    missing = cluster.kubectl("get", *get, check=False)
    assert missing.returncode != 0 and "not found" in missing.stderr  # server dry run stored nothing
    assert "created" in cluster.kubectl("create", *create).stdout
    stored = get_json(cluster, *get)
    assert check(stored), stored
    assert stored["metadata"]["uid"] and stored["metadata"]["resourceVersion"]
    again = cluster.kubectl("create", *create, check=False)
    assert again.returncode != 0 and "already exists" in again.stderr
    cluster.kubectl("delete", *get, "--wait=false")
    if what != "namespace":  # a namespace lingers as Terminating for a moment
        assert cluster.kubectl("get", *get, check=False).returncode != 0


def test_kubectl_secret_round_trips_byte_for_byte(cluster, tmp_path):
    payload = bytes(range(256)) * 3
    blob = tmp_path / "blob.bin"
    blob.write_bytes(payload)
    cluster.kubectl("create", "secret", "generic", "pb-bytes", "--from-literal=a=b", f"--from-file=blob={blob}")
    for data in (get_json(cluster, "secret", "pb-bytes")["data"],
                 client.CoreV1Api(cluster.client()).read_namespaced_secret("pb-bytes", "default").data):
        assert data == {"a": base64.b64encode(b"b").decode(), "blob": base64.b64encode(payload).decode()}
    cluster.kubectl("delete", "secret", "pb-bytes")


def test_kubectl_create_of_an_undecoded_kind_is_loud(cluster):
    refused = cluster.kubectl("create", "token", "default", check=False)
    assert refused.returncode != 0
    assert "the stand-in cannot decode protobuf for authentication.k8s.io/v1 TokenRequest; send JSON" in refused.stderr


# ---------------------------------------------------------------- the real helm 3 and helm 4


def chart(tmp_path: Path) -> Path:
    root = tmp_path / "tiny"
    (root / "templates").mkdir(parents=True)
    (root / "Chart.yaml").write_text("apiVersion: v2\nname: tiny\nversion: 0.1.0\n")
    (root / "templates" / "cm.yaml").write_text(
        "apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: {{ .Release.Name }}-cm\n"
        "data:\n  level: {{ .Values.level | default \"info\" | quote }}\n")
    return root


def release_of(secret: dict) -> dict:
    """A helm release Secret's `data.release`: base64 (Secret) of base64 of gzip of JSON."""
    return json.loads(gzip.decompress(base64.b64decode(base64.b64decode(secret["data"]["release"]))))


@pytest.mark.parametrize("helm", list(HELMS))
def test_helm_install_upgrade_uninstall(cluster, tmp_path, helm):
    env = {**cluster.env, "KUBECONFIG": cluster.kubeconfig, "HELM_CACHE_HOME": str(tmp_path / "cache"),
           "HELM_CONFIG_HOME": str(tmp_path / "config"), "HELM_DATA_HOME": str(tmp_path / "data")}
    ns, name = f"pb-{helm}", f"tiny-{helm}"

    def run(*args: str) -> str:
        proc = subprocess.run([str(HELMS[helm]), *args], capture_output=True, text=True, env=env, timeout=180,
                              check=False, cwd=tmp_path)
        assert proc.returncode == 0, f"{helm} {' '.join(args)}: {proc.stderr}"
        return proc.stdout

    tiny = str(chart(tmp_path))
    before = cluster.stats()["resources"]
    run("install", name, tiny, "-n", ns, "--create-namespace")
    listed = json.loads(run("list", "-n", ns, "-o", "json"))
    assert [(r["name"], r["status"], r["revision"]) for r in listed] == [(name, "deployed", "1")]
    assert get_json(cluster, "configmap", f"{name}-cm", "-n", ns)["data"] == {"level": "info"}
    secret = get_json(cluster, "secret", f"sh.helm.release.v1.{name}.v1", "-n", ns)
    assert secret["type"] == "helm.sh/release.v1"
    assert secret["metadata"]["labels"]["status"] == "deployed" and secret["metadata"]["labels"]["owner"] == "helm"
    release = release_of(secret)
    assert (release["name"], release["namespace"], release["info"]["status"]) == (name, ns, "deployed")

    run("upgrade", name, tiny, "-n", ns, "--set", "level=debug")
    listed = json.loads(run("list", "-n", ns, "-o", "json"))
    assert [(r["status"], r["revision"]) for r in listed] == [("deployed", "2")]
    assert get_json(cluster, "configmap", f"{name}-cm", "-n", ns)["data"] == {"level": "debug"}
    first = get_json(cluster, "secret", f"sh.helm.release.v1.{name}.v1", "-n", ns)
    assert first["metadata"]["labels"]["status"] == "superseded"  # a protobuf update (PUT)

    run("rollback", name, "1", "-n", ns)
    listed = json.loads(run("list", "-n", ns, "-o", "json"))
    assert [(r["status"], r["revision"]) for r in listed] == [("deployed", "3")]
    assert get_json(cluster, "configmap", f"{name}-cm", "-n", ns)["data"] == {"level": "info"}
    third = release_of(get_json(cluster, "secret", f"sh.helm.release.v1.{name}.v3", "-n", ns))
    assert (third["version"], third["info"]["status"], third.get("config") or {}) == (3, "deployed", {})

    run("uninstall", name, "-n", ns)
    assert json.loads(run("list", "-n", ns, "-o", "json")) == []
    left = get_json(cluster, "secrets", "-n", ns, "-l", "owner=helm")["items"]
    assert left == []  # the release Secrets went through protobuf DeleteOptions
    assert cluster.kubectl("get", "configmap", f"{name}-cm", "-n", ns, check=False).returncode != 0
    after = cluster.stats()["resources"]
    writes = {verb: after.get(f"{verb} secrets", 0) - before.get(f"{verb} secrets", 0)
              for verb in ("create", "update", "delete")}
    assert writes == {"create": 3, "update": 6, "delete": 3}, writes  # release Secrets, all in protobuf
