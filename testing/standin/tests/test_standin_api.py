"""The Kubernetes API stand-in behaves like an API server where our code depends on it (raw HTTP)."""

from __future__ import annotations

import json
import threading
import time
import urllib.request
from pathlib import Path

import pytest
import yaml
from standin.fixtures import REPO, UPSTREAM, running_cluster
from standin_http import Api

GATEWAY_CRDS = UPSTREAM / "gateway-api" / "v1.5.1" / "experimental"
NS = "/api/v1/namespaces"


@pytest.fixture(scope="module")
def cluster(tmp_path_factory):
    """No simulated controllers here: nothing but the tests writes to this API server."""
    with running_cluster(tmp_path_factory.mktemp("plain"), simulate_controllers=False) as handle:
        yield handle


@pytest.fixture(scope="module")
def api(cluster):
    return Api(cluster.url)


def _cm(name, ns="default", **data):
    return {"apiVersion": "v1", "kind": "ConfigMap", "metadata": {"name": name, "namespace": ns},
            "data": data or {"k": "v"}}


def _ns(api, name):
    reply = api.post(NS, {"apiVersion": "v1", "kind": "Namespace", "metadata": {"name": name}})
    assert reply.code == 201, reply.body
    return name


def _crd(plural="widgets", group="test.standin.io", versions=None, scope="Namespaced", kind="Widget"):
    versions = versions or [{"name": "v1", "served": True, "storage": True, "subresources": {"status": {}},
                             "schema": {"openAPIV3Schema": {"type": "object", "properties": {
                                 "spec": {"type": "object", "required": ["size"], "properties": {
                                     "size": {"type": "integer", "minimum": 1, "maximum": 10},
                                     "mode": {"type": "string", "enum": ["a", "b"], "default": "a"},
                                     "min": {"type": "integer"}, "max": {"type": "integer"},
                                     "free": {"type": "object", "x-kubernetes-preserve-unknown-fields": True},
                                     "port": {"x-kubernetes-int-or-string": True},
                                     "name": {"type": "string", "pattern": "^[a-z]+$", "maxLength": 5},
                                     "items": {"type": "array", "maxItems": 2, "items": {"type": "string"}},
                                     "note": {"type": "string", "nullable": True},
                                 }, "x-kubernetes-validations": [
                                     {"rule": "!has(self.min) || !has(self.max) || self.min <= self.max",
                                      "message": "min must not exceed max"},
                                     {"rule": "self.size ??? 3", "message": "does not compile"},
                                 ]},
                                 "status": {"type": "object", "properties": {"ready": {"type": "boolean"}}},
                             }}}}]
    return {"apiVersion": "apiextensions.k8s.io/v1", "kind": "CustomResourceDefinition",
            "metadata": {"name": f"{plural}.{group}"},
            "spec": {"group": group, "scope": scope, "versions": versions,
                     "names": {"plural": plural, "singular": kind.lower(), "kind": kind, "shortNames": ["wd"]}}}


@pytest.fixture(scope="module")
def widgets(api):
    reply = api.post("/apis/apiextensions.k8s.io/v1/customresourcedefinitions", _crd())
    assert reply.code == 201, reply.body
    return "/apis/test.standin.io/v1/namespaces/default/widgets"


# ---------------------------------------------------------------- discovery and basics


def test_discovery_core_and_groups(api):
    assert api.get("/api").body["versions"] == ["v1"]
    core = api.get("/api/v1").body
    assert core["groupVersion"] == "v1" and core["kind"] == "APIResourceList"
    names = {r["name"] for r in core["resources"]}
    assert {"namespaces", "secrets", "configmaps", "services", "serviceaccounts", "events", "resourcequotas", "pods",
            "endpoints", "services/status"} <= names
    groups = {g["name"]: g for g in api.get("/apis").body["groups"]}
    for group in ("apps", "batch", "rbac.authorization.k8s.io", "apiextensions.k8s.io", "coordination.k8s.io",
                  "admissionregistration.k8s.io", "scheduling.k8s.io"):
        assert groups[group]["preferredVersion"]["version"] == "v1"
    apps = api.get("/apis/apps/v1").body
    assert {"deployments", "daemonsets", "statefulsets", "deployments/status"} <= {r["name"] for r in apps["resources"]}


def test_aggregated_discovery_request_gets_legacy_json(api):
    accept = "application/json;g=apidiscovery.k8s.io;v=v2;as=APIGroupDiscoveryList,application/json"
    reply = api.get("/apis", accept=accept)
    assert reply.code == 200 and reply.headers["Content-Type"] == "application/json"
    assert reply.body["kind"] == "APIGroupList"
    assert reply.headers["X-Test-Double"] == "kubernetes-api-standin", "it names itself a test double"


def test_version_health_and_system_namespaces(api):
    version = api.get("/version").body
    assert (version["major"], version["minor"]) == ("1", "34") and version["gitVersion"].startswith("v1.34.")
    assert api.get("/healthz").body == "ok" and api.get("/readyz").code == 200
    names = {n["metadata"]["name"] for n in api.get(NS).body["items"]}
    assert {"default", "kube-system", "kube-public"} <= names


def test_unknown_resource_is_404(api):
    reply = api.get("/apis/apps/v1/namespaces/default/gizmos")
    assert reply.code == 404 and reply.body["reason"] == "NotFound"


# ---------------------------------------------------------------- CRUD, lists, selectors


def test_create_sets_server_fields_and_duplicate_is_409(api):
    reply = api.post(f"{NS}/default/configmaps", _cm("crud-a"))
    assert reply.code == 201
    meta = reply.body["metadata"]
    assert meta["uid"] and meta["creationTimestamp"] and int(meta["resourceVersion"]) > 0
    again = api.post(f"{NS}/default/configmaps", _cm("crud-a"))
    assert again.code == 409 and again.body["reason"] == "AlreadyExists"
    assert again.body["message"] == 'configmaps "crud-a" already exists'


def test_resource_version_is_a_cluster_wide_counter(api):
    first = int(api.post(f"{NS}/default/configmaps", _cm("rv-1")).body["metadata"]["resourceVersion"])
    second = int(api.post(f"{NS}/default/secrets", {"metadata": {"name": "rv-2"}}).body["metadata"]["resourceVersion"])
    assert second == first + 1


def test_create_in_missing_namespace_is_404(api):
    reply = api.post(f"{NS}/nowhere/configmaps", _cm("x", ns="nowhere"))
    assert reply.code == 404 and reply.body["message"] == 'namespaces "nowhere" not found'


def test_invalid_names_and_labels_are_422(api):
    reply = api.post(f"{NS}/default/configmaps", _cm("Bad_Name"))
    assert reply.code == 422 and reply.body["details"]["causes"][0]["field"] == "metadata.name"
    body = _cm("labels-bad")
    body["metadata"]["labels"] = {"a": "-no-"}
    assert api.post(f"{NS}/default/configmaps", body).code == 422


def test_list_has_kind_and_selectors_filter(api):
    _ns(api, "sel")
    for name, tier in (("one", "web"), ("two", "db"), ("three", None)):
        body = _cm(name, ns="sel")
        if tier:
            body["metadata"]["labels"] = {"tier": tier}
        api.post(f"{NS}/sel/configmaps", body)
    listing = api.get(f"{NS}/sel/configmaps").body
    assert listing["kind"] == "ConfigMapList" and listing["apiVersion"] == "v1"
    assert listing["metadata"]["resourceVersion"]

    def names(query):
        return sorted(i["metadata"]["name"] for i in api.get(f"{NS}/sel/configmaps?{query}").body["items"])

    assert names("labelSelector=tier%3Dweb") == ["one"]
    assert names("labelSelector=tier%20in%20(web,db)") == ["one", "two"]
    assert names("labelSelector=tier%20notin%20(web)") == ["three", "two"]
    assert names("labelSelector=!tier") == ["three"]
    assert names("labelSelector=tier") == ["one", "two"]
    assert names("fieldSelector=metadata.name%3Dtwo") == ["two"]
    assert names("fieldSelector=metadata.name!%3Dtwo") == ["one", "three"]
    all_ns = api.get("/api/v1/configmaps?fieldSelector=metadata.namespace%3Dsel").body["items"]
    assert len(all_ns) == 3
    bad = api.get(f"{NS}/sel/configmaps?fieldSelector=data.k%3Dv")
    assert bad.code == 400 and "field label not supported" in bad.body["message"]


def test_put_conflict_and_noop_keep_resource_version(api):
    created = api.post(f"{NS}/default/configmaps", _cm("put-a")).body
    rv = created["metadata"]["resourceVersion"]
    same = api.put(f"{NS}/default/configmaps/put-a", created).body
    assert same["metadata"]["resourceVersion"] == rv, "a no-op update must not bump resourceVersion"
    created["data"] = {"k": "changed"}
    updated = api.put(f"{NS}/default/configmaps/put-a", created)
    assert updated.code == 200 and updated.body["metadata"]["resourceVersion"] != rv
    stale = api.put(f"{NS}/default/configmaps/put-a", created)  # still carries the old resourceVersion
    assert stale.code == 409 and stale.body["reason"] == "Conflict"
    missing = api.put(f"{NS}/default/configmaps/nope", _cm("nope"))
    assert missing.code == 404


def test_service_cluster_ip_survives_an_update_that_omits_it(api):
    svc = {"apiVersion": "v1", "kind": "Service", "metadata": {"name": "keep-ip"},
           "spec": {"selector": {"app": "x"}, "ports": [{"port": 80}]}}
    created = api.post(f"{NS}/default/services", svc).body
    assert created["spec"]["clusterIP"].startswith("10.96.") and created["spec"]["ports"][0]["targetPort"] == 80
    svc["metadata"]["resourceVersion"] = created["metadata"]["resourceVersion"]
    replaced = api.put(f"{NS}/default/services/keep-ip", svc).body
    assert replaced["spec"]["clusterIP"] == created["spec"]["clusterIP"]
    assert replaced["metadata"]["resourceVersion"] == created["metadata"]["resourceVersion"], "no-op PUT"


def test_immutable_and_oversized_config(api):
    body = _cm("frozen")
    body["immutable"] = True
    api.post(f"{NS}/default/configmaps", body)
    reply = api.patch(f"{NS}/default/configmaps/frozen", {"data": {"k": "other"}})
    assert reply.code == 422 and "field is immutable when `immutable` is set" in reply.body["message"]
    big = api.post(f"{NS}/default/secrets", {"metadata": {"name": "big"}, "stringData": {"blob": "x" * 1_100_000}})
    assert big.code == 422 and "1048576" in big.body["message"]


def test_non_string_values_are_refused_like_go_decoding(api):
    reply = api.post(f"{NS}/default/configmaps", {"metadata": {"name": "num"}, "data": {"port": 8080}})
    assert reply.code == 400 and reply.body["message"] == (
        'ConfigMap in version "v1" cannot be handled as a ConfigMap: json: cannot unmarshal number into Go struct '
        "field ConfigMap.data of type string")
    deploy = _deployment("envnum")
    deploy["spec"]["template"]["spec"]["containers"][0]["env"] = [{"name": "DEBUG", "value": True}]
    reply = api.post("/apis/apps/v1/namespaces/default/deployments", deploy)
    assert reply.code == 400 and "EnvVar.value" in reply.body["message"]


def test_secret_string_data_and_type(api):
    body = {"metadata": {"name": "sd"}, "stringData": {"pw": "hunter2"}}
    created = api.post(f"{NS}/default/secrets", body).body
    assert created["type"] == "Opaque" and created["data"] == {"pw": "aHVudGVyMg=="} and "stringData" not in created
    created["type"] = "kubernetes.io/tls"
    assert api.put(f"{NS}/default/secrets/sd", created).code == 422  # type is immutable


# ---------------------------------------------------------------- patches


def _deployment(name="web", ns="default"):
    return {"apiVersion": "apps/v1", "kind": "Deployment", "metadata": {"name": name, "namespace": ns},
            "spec": {"selector": {"matchLabels": {"app": name}}, "template": {
                "metadata": {"labels": {"app": name}},
                "spec": {"containers": [
                    {"name": "a", "image": "img:1", "env": [{"name": "X", "value": "1"}],
                     "ports": [{"containerPort": 80}]},
                    {"name": "b", "image": "img:2"}]}}}}


def test_strategic_merge_merges_lists_by_key(api):
    path = "/apis/apps/v1/namespaces/default/deployments/smp"
    assert api.post("/apis/apps/v1/namespaces/default/deployments", _deployment("smp")).code == 201
    patch = {"spec": {"template": {"spec": {"containers": [
        {"name": "a", "env": [{"name": "Y", "value": "2"}], "ports": [{"containerPort": 81}]}]}}}}
    body = api.patch(path, patch, "strategic").body
    containers = body["spec"]["template"]["spec"]["containers"]
    assert [c["name"] for c in containers] == ["a", "b"]
    assert [e["name"] for e in containers[0]["env"]] == ["X", "Y"]
    assert [p["containerPort"] for p in containers[0]["ports"]] == [80, 81]
    assert containers[0]["image"] == "img:1"
    merged = api.patch(path, {"spec": {"template": {"spec": {"containers": [{"name": "a", "image": "img:3"}]}}}})
    assert [c["name"] for c in merged.body["spec"]["template"]["spec"]["containers"]] == ["a"]  # merge patch replaces
    deleted = api.patch(path, {"spec": {"template": {"spec": {"containers": [
        {"name": "b", "image": "img:2"}, {"name": "a", "$patch": "delete"}]}}}}, "strategic").body
    assert [c["name"] for c in deleted["spec"]["template"]["spec"]["containers"]] == ["b"]


def test_json_patch_and_generation(api):
    path = "/apis/apps/v1/namespaces/default/deployments/gen"
    created = api.post("/apis/apps/v1/namespaces/default/deployments", _deployment("gen")).body
    assert created["metadata"]["generation"] == 1
    labelled = api.patch(path, [{"op": "add", "path": "/metadata/labels", "value": {"x": "y"}}], "json").body
    assert labelled["metadata"]["generation"] == 1, "metadata changes do not bump generation"
    scaled = api.patch(path, [{"op": "replace", "path": "/spec/replicas", "value": 3}], "json").body
    assert scaled["metadata"]["generation"] == 2 and scaled["spec"]["replicas"] == 3
    rv = scaled["metadata"]["resourceVersion"]
    noop = api.patch(path, {"spec": {"replicas": 3}}, "strategic").body
    assert noop["metadata"]["resourceVersion"] == rv and noop["metadata"]["generation"] == 2
    bad = api.patch(path, [{"op": "test", "path": "/spec/replicas", "value": 9}], "json")
    assert bad.code == 422


def test_status_is_a_separate_subresource(api):
    base = "/apis/apps/v1/namespaces/default/deployments"
    body = _deployment("st")
    body["status"] = {"replicas": 5}
    created = api.post(base, body).body
    assert "replicas" not in (created.get("status") or {}), "create ignores .status"
    main = api.patch(f"{base}/st", {"status": {"replicas": 7}}).body
    assert "replicas" not in (main.get("status") or {}), "writes to the main resource ignore .status"
    status = api.patch(f"{base}/st/status", {"status": {"replicas": 2}, "spec": {"replicas": 9}}).body
    assert status["status"]["replicas"] == 2 and status["spec"]["replicas"] == 1, "/status writes ignore spec"
    assert status["metadata"]["generation"] == 1
    assert api.get(f"{base}/st/status").body["status"]["replicas"] == 2


def test_builtin_validation(api):
    base = "/apis/apps/v1/namespaces/default/deployments"
    body = _deployment("nosel")
    del body["spec"]["selector"]
    reply = api.post(base, body)
    assert reply.code == 422 and "spec.selector: Required value" in reply.body["message"]
    body = _deployment("mismatch")
    body["spec"]["template"]["metadata"]["labels"] = {"app": "other"}
    assert api.post(base, body).code == 422
    job = {"apiVersion": "batch/v1", "kind": "Job", "metadata": {"name": "j"},
           "spec": {"template": {"spec": {"containers": [{"name": "c", "image": "i"}]}}}}
    reply = api.post("/apis/batch/v1/namespaces/default/jobs", job)
    assert reply.code == 422 and "restartPolicy" in reply.body["message"]
    svc = {"apiVersion": "v1", "kind": "Service", "metadata": {"name": "s"}, "spec": {"ports": [{"port": 0}]}}
    assert api.post(f"{NS}/default/services", svc).code == 422


def test_nested_unknown_and_mistyped_builtin_fields(api):
    base = "/apis/apps/v1/namespaces/default/deployments"
    body = _deployment("typo")
    body["spec"]["template"]["spec"]["containers"][0]["imagePullPolcy"] = "Always"
    strict = api.post(f"{base}?fieldValidation=Strict", body)
    assert strict.code == 400
    assert 'unknown field "spec.template.spec.containers[0].imagePullPolcy"' in strict.body["message"]
    warned = api.post(base, body)
    assert warned.code == 201 and "imagePullPolcy" not in warned.body["spec"]["template"]["spec"]["containers"][0]
    body = _deployment("mistyped")
    body["spec"]["replicas"] = "2"
    reply = api.post(base, body)
    assert reply.code == 400 and "cannot unmarshal string into Go struct field spec.replicas of type int32" in \
        reply.body["message"]
    body = _deployment("quantity")
    body["spec"]["template"]["spec"]["containers"][0]["resources"] = {"limits": {"cpu": 1, "memory": "1Gi"}}
    assert api.post(base, body).code == 201, "Quantities accept numbers, as in Go"


def test_unknown_builtin_field_is_warned_or_refused(api):
    body = _cm("unknown-field")
    body["spec"] = {"oops": True}
    strict = api.post(f"{NS}/default/configmaps?fieldValidation=Strict", body)
    assert strict.code == 400 and 'unknown field "spec"' in strict.body["message"]
    warned = api.post(f"{NS}/default/configmaps", body)
    assert warned.code == 201 and "spec" not in warned.body
    assert any('unknown field \\"spec\\"' in w or 'unknown field "spec"' in w for w in warned.warnings)


# ---------------------------------------------------------------- dry run


def test_dry_run_stores_nothing_on_every_verb(api):
    path = f"{NS}/default/configmaps"
    created = api.post(f"{path}?dryRun=All", _cm("dry"))
    assert created.code == 201 and created.body["metadata"]["uid"]
    assert api.get(f"{path}/dry").code == 404
    api.post(path, _cm("dry2"))
    rv = api.get(f"{path}/dry2").body["metadata"]["resourceVersion"]
    patched = api.patch(f"{path}/dry2?dryRun=All", {"data": {"k": "new"}})
    assert patched.body["data"]["k"] == "new"
    put = api.get(f"{path}/dry2").body
    put["data"] = {"z": "1"}
    assert api.put(f"{path}/dry2?dryRun=All", put).body["data"] == {"z": "1"}
    applied = api.patch(f"{path}/dry3?dryRun=All&fieldManager=t", json.dumps(_cm("dry3")), "apply")
    assert applied.code == 201
    assert api.delete(f"{path}/dry2?dryRun=All").code == 200
    current = api.get(f"{path}/dry2").body
    assert current["data"] == {"k": "v"} and current["metadata"]["resourceVersion"] == rv
    assert api.get(f"{path}/dry3").code == 404


# ---------------------------------------------------------------- server-side apply


def test_server_side_apply_creates_merges_and_conflicts(api):
    path = f"{NS}/default/configmaps/ssa"
    cfg = {"apiVersion": "v1", "kind": "ConfigMap", "metadata": {"name": "ssa"}, "data": {"a": "1", "b": "2"}}
    assert api.patch(path, json.dumps(cfg), "apply").code == 422  # fieldManager is required
    created = api.patch(f"{path}?fieldManager=one", yaml.safe_dump(cfg), "apply")
    assert created.code == 201 and created.body["data"] == {"a": "1", "b": "2"}
    rv = created.body["metadata"]["resourceVersion"]
    again = api.patch(f"{path}?fieldManager=one", yaml.safe_dump(cfg), "apply").body
    assert again["metadata"]["resourceVersion"] == rv, "a no-op apply must not bump resourceVersion"
    other = {"apiVersion": "v1", "kind": "ConfigMap", "metadata": {"name": "ssa"}, "data": {"a": "X", "c": "3"}}
    conflict = api.patch(f"{path}?fieldManager=two", json.dumps(other), "apply")
    assert conflict.code == 409 and 'conflict with "one"' in conflict.body["message"]
    forced = api.patch(f"{path}?fieldManager=two&force=true", json.dumps(other), "apply").body
    assert forced["data"] == {"a": "X", "b": "2", "c": "3"}
    cfg["data"] = {"b": "2"}  # manager one stops applying "a": it now belongs to "two" and stays
    shrunk = api.patch(f"{path}?fieldManager=one", json.dumps(cfg), "apply").body
    assert shrunk["data"] == {"a": "X", "b": "2", "c": "3"}
    other["data"] = {"a": "X"}  # manager two drops "c": removed
    assert api.patch(f"{path}?fieldManager=two", json.dumps(other), "apply").body["data"] == {"a": "X", "b": "2"}


# ---------------------------------------------------------------- deletion


def test_finalizers_hold_deletion_until_removed(api):
    body = _cm("fin")
    body["metadata"]["finalizers"] = ["example.com/hold"]
    api.post(f"{NS}/default/configmaps", body)
    deleted = api.delete(f"{NS}/default/configmaps/fin?propagationPolicy=Foreground")
    assert deleted.code == 200 and deleted.body["metadata"]["deletionTimestamp"]
    held = api.get(f"{NS}/default/configmaps/fin")
    assert held.code == 200 and held.body["metadata"]["deletionTimestamp"]
    assert api.patch(f"{NS}/default/configmaps/fin", {"metadata": {"finalizers": None}}).code == 200
    assert api.get(f"{NS}/default/configmaps/fin").code == 404


def test_owner_references_cascade_unless_orphaned(api):
    owner = api.post(f"{NS}/default/configmaps", _cm("owner")).body
    ref = {"apiVersion": "v1", "kind": "ConfigMap", "name": "owner", "uid": owner["metadata"]["uid"]}
    child = _cm("child")
    child["metadata"]["ownerReferences"] = [ref]
    api.post(f"{NS}/default/configmaps", child)
    api.delete(f"{NS}/default/configmaps/owner")
    assert api.get(f"{NS}/default/configmaps/child").code == 404


def test_namespace_termination(api):
    _ns(api, "doomed")
    api.post(f"{NS}/doomed/configmaps", _cm("plain", ns="doomed"))
    held = _cm("held", ns="doomed")
    held["metadata"]["finalizers"] = ["example.com/hold"]
    api.post(f"{NS}/doomed/configmaps", held)
    reply = api.delete(f"{NS}/doomed")
    assert reply.code == 200 and reply.body["status"]["phase"] == "Terminating"
    assert api.get(f"{NS}/doomed").body["status"]["phase"] == "Terminating"
    assert api.get(f"{NS}/doomed/configmaps/plain").code == 404
    refused = api.post(f"{NS}/doomed/configmaps", _cm("late", ns="doomed"))
    assert refused.code == 403 and "being terminated" in refused.body["message"]
    api.patch(f"{NS}/doomed/configmaps/held", {"metadata": {"finalizers": []}})
    assert api.get(f"{NS}/doomed").code == 404


# ---------------------------------------------------------------- watch


def _watch(url, into, ready):
    with urllib.request.urlopen(url, timeout=30) as resp:
        assert resp.headers["Content-Type"] == "application/json"
        ready.set()
        for line in resp:
            into.append(json.loads(line))


def test_watch_streams_events_and_honours_timeout(cluster, api):
    _ns(api, "watched")
    rv = api.get(f"{NS}/watched/configmaps").body["metadata"]["resourceVersion"]
    events, ready = [], threading.Event()
    url = f"{cluster.url}{NS}/watched/configmaps?watch=true&resourceVersion={rv}&timeoutSeconds=2"
    thread = threading.Thread(target=_watch, args=(url, events, ready))
    started = time.monotonic()
    thread.start()
    ready.wait(5)
    api.post(f"{NS}/watched/configmaps", _cm("w", ns="watched"))
    api.patch(f"{NS}/watched/configmaps/w", {"data": {"k": "2"}})
    api.post(f"{NS}/default/configmaps", _cm("elsewhere"))
    api.delete(f"{NS}/watched/configmaps/w")
    thread.join(10)
    assert 1.5 < time.monotonic() - started < 6, "timeoutSeconds ends the watch"
    assert [e["type"] for e in events] == ["ADDED", "MODIFIED", "DELETED"]
    assert all(e["object"]["metadata"]["namespace"] == "watched" for e in events)
    versions = [int(e["object"]["metadata"]["resourceVersion"]) for e in events]
    assert versions == sorted(versions)
    # Resuming from the ADDED event replays what followed it; no resourceVersion lists current objects first.
    replay, ready2 = [], threading.Event()
    _watch(f"{cluster.url}{NS}/watched/configmaps?watch=1&resourceVersion={versions[0]}&timeoutSeconds=1",
           replay, ready2)
    assert [e["type"] for e in replay] == ["MODIFIED", "DELETED"]
    # A label change that moves an object into or out of a selector is ADDED / DELETED for that watcher.
    rv = api.get(f"{NS}/watched/configmaps").body["metadata"]["resourceVersion"]
    moves, ready4 = [], threading.Event()
    url = f"{cluster.url}{NS}/watched/configmaps?watch=1&resourceVersion={rv}&timeoutSeconds=2&labelSelector=tier%3Dweb"
    thread = threading.Thread(target=_watch, args=(url, moves, ready4))
    thread.start()
    ready4.wait(5)
    api.post(f"{NS}/watched/configmaps", _cm("mover", ns="watched"))
    api.patch(f"{NS}/watched/configmaps/mover", {"metadata": {"labels": {"tier": "web"}}})
    api.patch(f"{NS}/watched/configmaps/mover", {"data": {"k": "3"}})
    api.patch(f"{NS}/watched/configmaps/mover", {"metadata": {"labels": {"tier": "db"}}})
    thread.join(10)
    assert [e["type"] for e in moves] == ["ADDED", "MODIFIED", "DELETED"]
    initial, ready3 = [], threading.Event()
    _watch(f"{cluster.url}{NS}/default/configmaps?watch=1&timeoutSeconds=1&fieldSelector=metadata.name%3Delsewhere",
           initial, ready3)
    assert [(e["type"], e["object"]["metadata"]["name"]) for e in initial] == [("ADDED", "elsewhere")]


# ---------------------------------------------------------------- CRDs


def test_crd_status_discovery_and_deletion(api, widgets):
    crd = api.get("/apis/apiextensions.k8s.io/v1/customresourcedefinitions/widgets.test.standin.io").body
    conditions = {c["type"]: c["status"] for c in crd["status"]["conditions"]}
    assert conditions == {"Established": "True", "NamesAccepted": "True"}
    assert crd["status"]["acceptedNames"]["kind"] == "Widget"
    assert "test.standin.io" in {g["name"] for g in api.get("/apis").body["groups"]}
    resources = {r["name"] for r in api.get("/apis/test.standin.io/v1").body["resources"]}
    assert resources == {"widgets", "widgets/status"}
    # a second CRD to delete, with an object in it
    other = _crd(plural="gadgets", kind="Gadget")
    assert api.post("/apis/apiextensions.k8s.io/v1/customresourcedefinitions", other).code == 201
    gadget = {"apiVersion": "test.standin.io/v1", "kind": "Gadget", "metadata": {"name": "g"}, "spec": {"size": 1}}
    assert api.post("/apis/test.standin.io/v1/namespaces/default/gadgets", gadget).code == 201
    api.delete("/apis/apiextensions.k8s.io/v1/customresourcedefinitions/gadgets.test.standin.io")
    assert api.get("/apis/test.standin.io/v1/namespaces/default/gadgets").code == 404
    assert "gadgets" not in {r["name"] for r in api.get("/apis/test.standin.io/v1").body["resources"]}
    # recreated: its old objects are gone
    api.post("/apis/apiextensions.k8s.io/v1/customresourcedefinitions", other)
    assert api.get("/apis/test.standin.io/v1/namespaces/default/gadgets").body["items"] == []


def test_crd_deletion_waits_for_instance_finalizers(api):
    crd = _crd(plural="holds", kind="Hold")
    api.post("/apis/apiextensions.k8s.io/v1/customresourcedefinitions", crd)
    base = "/apis/test.standin.io/v1/namespaces/default/holds"
    held = {"apiVersion": "test.standin.io/v1", "kind": "Hold", "metadata": {"name": "h", "finalizers": ["x/y"]},
            "spec": {"size": 1}}
    api.post(base, held)
    api.post(base, dict(held, metadata={"name": "free"}))
    crd_path = "/apis/apiextensions.k8s.io/v1/customresourcedefinitions/holds.test.standin.io"
    assert api.delete(crd_path).code == 200
    terminating = api.get(crd_path).body
    assert terminating["metadata"]["deletionTimestamp"]
    assert {c["type"] for c in terminating["status"]["conditions"]} >= {"Terminating", "Established"}
    assert api.get(f"{base}/free").code == 404 and api.get(f"{base}/h").body["metadata"]["deletionTimestamp"]
    refused = api.post(base, dict(held, metadata={"name": "late"}))
    assert refused.code == 405 and "terminating" in refused.body["message"]
    api.patch(f"{base}/h", {"metadata": {"finalizers": None}})
    assert api.get(crd_path).code == 404
    assert api.get(base).code == 404


def test_crd_name_must_match_spec(api):
    bad = _crd(plural="things")
    bad["metadata"]["name"] = "wrong.test.standin.io"
    reply = api.post("/apis/apiextensions.k8s.io/v1/customresourcedefinitions", bad)
    assert reply.code == 422 and reply.body["details"]["causes"][0]["field"] == "metadata.name"


def test_preferred_version_is_deterministic(api):
    versions = []
    for name, storage in (("v1alpha1", False), ("v1beta1", True), ("v1", False)):
        version = json.loads(json.dumps(_crd()["spec"]["versions"][0]))
        version.update(name=name, storage=storage)
        versions.append(version)
    assert api.post("/apis/apiextensions.k8s.io/v1/customresourcedefinitions",
                    _crd(plural="multis", group="multi.standin.io", versions=versions, kind="Multi")).code == 201
    group = api.get("/apis/multi.standin.io").body
    assert [v["version"] for v in group["versions"]] == ["v1", "v1beta1", "v1alpha1"]
    assert group["preferredVersion"]["version"] == "v1"
    obj = {"apiVersion": "multi.standin.io/v1beta1", "kind": "Multi", "metadata": {"name": "m"}, "spec": {"size": 2}}
    api.post("/apis/multi.standin.io/v1beta1/namespaces/default/multis", obj)
    assert api.get("/apis/multi.standin.io/v1/namespaces/default/multis/m").body["apiVersion"] == "multi.standin.io/v1"


def test_custom_resource_schema_validation(api, widgets):
    def make(name, spec):
        return {"apiVersion": "test.standin.io/v1", "kind": "Widget", "metadata": {"name": name}, "spec": spec}

    ok = api.post(widgets, make("ok", {"size": 2, "port": "http", "free": {"any": {"thing": 1}}, "note": None,
                                       "extra": 1}))
    assert ok.code == 201, ok.body
    assert ok.body["spec"]["mode"] == "a", "schema defaults are applied"
    assert "extra" not in ok.body["spec"] and ok.body["spec"]["free"] == {"any": {"thing": 1}}
    assert any("spec.extra" in w for w in ok.warnings)
    strict = api.post(f"{widgets}?fieldValidation=Strict", make("strict", {"size": 2, "extra": 1}))
    assert strict.code == 400 and 'unknown field "spec.extra"' in strict.body["message"]
    cases = {
        "spec.size: Required value": {},
        "spec.size: Invalid value: 0: spec.size in body should be greater than or equal to 1": {"size": 0},
        "spec.size: Invalid value: 11: spec.size in body should be less than or equal to 10": {"size": 11},
        'spec.size: Invalid value: "string": spec.size in body must be of type integer: "string"': {"size": "2"},
        'spec.mode: Unsupported value: "c": supported values: "a", "b"': {"size": 1, "mode": "c"},
        "spec.name: Invalid value: \"AB\": spec.name in body should match '^[a-z]+$'": {"size": 1, "name": "AB"},
        "spec.name: Too long: may not be more than 5 bytes": {"size": 1, "name": "abcdef"},
        "spec.items: Too many: 3: must have at most 2 items": {"size": 1, "items": ["a", "b", "c"]},
        'spec.port: Invalid value: "boolean": spec.port in body must be of type integer or string: "boolean"':
            {"size": 1, "port": True},
    }
    for expected, spec in cases.items():
        reply = api.post(widgets, make("bad", spec))
        assert reply.code == 422, (spec, reply.body)
        assert reply.body["reason"] == "Invalid"
        assert reply.body["message"] == f'Widget.test.standin.io "bad" is invalid: {expected}', reply.body["message"]
        assert reply.body["details"]["causes"][0]["field"] == expected.split(":", maxsplit=1)[0]


def test_cel_rules_are_enforced_and_uncompilable_ones_counted(api, widgets):
    reply = api.post(widgets, {"apiVersion": "test.standin.io/v1", "kind": "Widget", "metadata": {"name": "cel"},
                               "spec": {"size": 1, "min": 5, "max": 2}})
    assert reply.code == 422 and "min must not exceed max" in reply.body["message"]
    assert reply.body["details"]["causes"][0]["field"] == "spec"
    report = api.get("/_standin/cel").body
    assert report["available"] and report["rejected"] >= 1
    assert any(u["rule"] == "self.size ??? 3" for u in report["uncompiled"])
    fine = {"apiVersion": "test.standin.io/v1", "kind": "Widget", "metadata": {"name": "cel-ok"},
            "spec": {"size": 3, "min": 1, "max": 2}}
    assert api.post(widgets, fine).code == 201, "a rule that does not compile never rejects"


def test_strategic_merge_patch_on_custom_resource_is_415(api, widgets):
    api.post(widgets, {"apiVersion": "test.standin.io/v1", "kind": "Widget", "metadata": {"name": "smp"},
                       "spec": {"size": 1}})
    reply = api.patch(f"{widgets}/smp", {"spec": {"size": 2}}, "strategic")
    assert reply.code == 415 and reply.body["reason"] == "UnsupportedMediaType"
    assert api.patch(f"{widgets}/smp", {"spec": {"size": 2}}).body["metadata"]["generation"] == 2
    status = api.patch(f"{widgets}/smp/status", {"status": {"ready": True}}).body
    assert status["status"] == {"ready": True} and status["metadata"]["generation"] == 2


@pytest.mark.skipif(not GATEWAY_CRDS.is_dir(), reason="../shared/upstream/gateway-api is absent")
def test_gateway_api_crds_load_and_validate(cluster, api):
    for path in sorted(GATEWAY_CRDS.glob("*.yaml")):
        crd = yaml.safe_load(path.read_text())
        assert api.post("/apis/apiextensions.k8s.io/v1/customresourcedefinitions", crd).code == 201, path.name
    base = "/apis/gateway.networking.k8s.io/v1/namespaces/default/gateways"

    def gateway(name, port, hostname=None, protocol="HTTP"):
        listener = {"name": "l", "protocol": protocol, "port": port}
        if hostname:
            listener["hostname"] = hostname
        return {"apiVersion": "gateway.networking.k8s.io/v1", "kind": "Gateway", "metadata": {"name": name},
                "spec": {"gatewayClassName": "eg", "listeners": [listener]}}

    bad = api.post(base, gateway("x", 0))
    assert bad.code == 422
    assert bad.body["message"] == ('Gateway.gateway.networking.k8s.io "x" is invalid: spec.listeners[0].port: Invalid '
                                   "value: 0: spec.listeners[0].port in body should be greater than or equal to 1")
    assert bad.body["details"]["causes"][0]["field"] == "spec.listeners[0].port"
    good = api.post(base, gateway("good", 80))
    assert good.code == 201, good.body
    # A Gateway API CEL rule: hostname must not be set for TCP listeners.
    tcp = api.post(base, gateway("tcp", 80, hostname="a.example.com", protocol="TCP"))
    assert tcp.code == 422 and "hostname" in tcp.body["message"]
    report = api.get("/_standin/cel").body
    assert report["compiled"] > 100


def test_servingstack_crd_loads(api):
    crd_file = REPO / "crds" / "servingstacks.infrastructure.modelplane.ai.yaml"
    crd = yaml.safe_load(crd_file.read_text())
    reply = api.post("/apis/apiextensions.k8s.io/v1/customresourcedefinitions", crd)
    assert reply.code == 201, reply.body
    version = next(v["name"] for v in crd["spec"]["versions"] if v.get("storage"))
    listing = api.get(f"/apis/infrastructure.modelplane.ai/{version}/servingstacks")
    assert listing.code == 200 and listing.body["kind"] == "ServingStackList"
    example = yaml.safe_load((REPO / "examples" / "servingstack.yaml").read_text())
    ns = example["metadata"].get("namespace", "default")
    api.post(NS, {"metadata": {"name": ns}})
    path = f"/apis/infrastructure.modelplane.ai/{version}/namespaces/{ns}/servingstacks?dryRun=All"
    assert api.post(path, example).code == 201
    # The CRD's own CEL rule (unique listener ports) is enforced.
    example["spec"]["gateway"] = {"listeners": [{"name": "a", "port": 80, "protocol": "HTTP"},
                                                {"name": "b", "port": 80, "protocol": "TCP"}]}
    reply = api.post(path, example)
    assert reply.code == 422 and "each listener port must be unique" in reply.body["message"]
    assert reply.body["details"]["causes"][0]["field"] == "spec.gateway.listeners"


# ---------------------------------------------------------------- stats


def test_request_counts_per_verb_and_resource(cluster, api):
    cluster.reset_stats()
    api.post(f"{NS}/default/configmaps", _cm("counted"))
    api.get(f"{NS}/default/configmaps/counted")
    api.get(f"{NS}/default/configmaps")
    api.patch(f"{NS}/default/configmaps/counted", {"data": {"a": "b"}})
    api.delete(f"{NS}/default/configmaps/counted")
    stats = api.get("/_standin/stats").body
    assert stats["verbs"] == {"create": 1, "get": 1, "list": 1, "patch": 1, "delete": 1}
    assert stats["resources"]["create configmaps"] == 1
    assert cluster.stats()["total"] == 5
    assert api.post("/_standin/reset-stats", {}).code == 200
    assert cluster.stats()["total"] == 0


def test_cli_writes_kubeconfig_and_serves(tmp_path):
    import subprocess
    import sys

    kubeconfig = tmp_path / "kc"
    proc = subprocess.Popen([sys.executable, str(Path(__file__).resolve().parents[1] / "run"),
                             "--kubeconfig", str(kubeconfig)], stdout=subprocess.PIPE, text=True)
    try:
        line = proc.stdout.readline()
        assert "stand-in serving" in line
        assert oct(kubeconfig.stat().st_mode & 0o777) == "0o600"
        server = yaml.safe_load(kubeconfig.read_text())["clusters"][0]["cluster"]["server"]
        assert server.startswith("http://127.0.0.1:")
        assert Api(server).get("/version").code == 200
    finally:
        proc.terminate()
        assert proc.wait(10) == 0


# ---------------------------------------------------------------- the kubernetes Python client


def test_python_client_typed_and_dynamic(cluster, api, widgets):
    from kubernetes import client
    from kubernetes.client.rest import ApiException

    core = client.CoreV1Api(cluster.client())
    config_map = client.V1ConfigMap(metadata=client.V1ObjectMeta(name="py"), data={"a": "b"})
    core.create_namespaced_config_map("default", config_map)
    assert core.read_namespaced_config_map("py", "default").data == {"a": "b"}
    with pytest.raises(ApiException) as err:
        core.create_namespaced_config_map("default", {"metadata": {"name": "py"}})
    assert err.value.status == 409
    dyn = cluster.dynamic()
    widget_api = dyn.resources.get(api_version="test.standin.io/v1", kind="Widget")
    created = widget_api.create(body={"apiVersion": "test.standin.io/v1", "kind": "Widget",
                                      "metadata": {"name": "dyn"}, "spec": {"size": 4}}, namespace="default")
    assert created.spec.mode == "a"
    assert [w.metadata.name for w in widget_api.get(namespace="default", label_selector="").items]
    # a CRD created after the client cached discovery is found on the next lookup
    api.post("/apis/apiextensions.k8s.io/v1/customresourcedefinitions", _crd(plural="latecomers", kind="Latecomer"))
    late = dyn.resources.get(api_version="test.standin.io/v1", kind="Latecomer")
    assert late.namespaced and late.get(namespace="default").items == []


def _upstream_crds():
    files = [p for p in sorted(UPSTREAM.glob("**/*.yaml"))
             if "crds" in p.parts and p.name not in ("Chart.yaml", "values.yaml") and "v1.6.0" not in p.parts
             and "standard" not in p.parts]
    files += sorted((UPSTREAM / "gateway-api-inference-extension" / "v1.0.2").glob("*.yaml"))
    files += sorted(GATEWAY_CRDS.glob("*.yaml"))
    crds = {}
    for path in files:
        for doc in yaml.safe_load_all(path.read_text()):
            if doc and doc.get("kind") == "CustomResourceDefinition":
                crds.setdefault(doc["metadata"]["name"], doc)
    return crds


@pytest.mark.skipif(not UPSTREAM.is_dir(), reason="../shared/upstream is absent")
def test_every_upstream_crd_loads_and_its_cel_rules_compile(tmp_path):
    with running_cluster(tmp_path, simulate_controllers=False) as fresh:
        api = Api(fresh.url)
        crds = _upstream_crds()
        assert len(crds) >= 25
        for name, crd in crds.items():
            reply = api.post("/apis/apiextensions.k8s.io/v1/customresourcedefinitions", crd)
            assert reply.code == 201, (name, reply.body)
        report = api.get("/_standin/cel").body
        assert report["uncompiled"] == [] and report["compiled"] > 500
        groups = {g["name"] for g in api.get("/apis").body["groups"]}
        assert {"cert-manager.io", "gateway.networking.k8s.io", "inference.networking.k8s.io",
                "leaderworkerset.x-k8s.io", "trust.cert-manager.io", "monitoring.coreos.com"} <= groups
