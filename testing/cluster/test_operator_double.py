"""The operator test double (operator_double.py): its pure helpers, one pass over an in-memory API (FakeApi: no
cluster), and, live, a Certificate issued on a real kwok cluster (testing/cluster/run)."""

from __future__ import annotations

import base64
import copy
import datetime as dt
import gzip
import json
import re
import time
from pathlib import Path
from typing import Any

import pytest
from cryptography import x509
from cryptography.hazmat.primitives import serialization
from cryptography.hazmat.primitives.asymmetric import ec, ed25519, rsa

from cluster import operator_double as od
from cluster.fixtures import ClusterHandle, cluster  # noqa: F401  (the module's real cluster, with the double)

UPSTREAM = Path("/work/shared/upstream")


def release_secret(chart: str, ns: str, config: dict[str, Any] | None = None, gz: bool = True) -> dict[str, Any]:
    """A Helm release Secret as the API returns it (data.release is base64(base64(gzip(JSON)))."""
    raw = json.dumps({"name": chart, "chart": {"metadata": {"name": chart}}, "config": config or {}}).encode()
    inner = base64.b64encode(gzip.compress(raw) if gz else raw)
    return {"metadata": {"name": f"sh.helm.release.v1.{chart}.v1", "namespace": ns, "uid": f"uid-{chart}",
                         "resourceVersion": "1", "labels": {"owner": "helm", "status": "deployed"}},
            "type": "helm.sh/release.v1", "data": {"release": base64.b64encode(inner).decode()}}


# ------------------------------------------------------------------------------------------------ pure helpers


def test_decode_release_reads_gzip_and_plain_and_refuses_garbage() -> None:
    assert od.decode_release(release_secret("cert-manager", "cm"))["chart"]["metadata"]["name"] == "cert-manager"
    assert od.decode_release(release_secret("x", "cm", gz=False))["name"] == "x"
    assert od.decode_release({"data": {"release": "bm90IGpzb24="}}) is None
    assert od.decode_release({"data": {}}) is None


def test_merge_patch_nulls_removed_keys_and_keeps_equal_ones_out() -> None:
    old = {"a": 1, "b": {"c": 1, "d": 2}, "e": [1]}
    assert od.merge_patch(old, {"a": 1, "b": {"c": 1}, "e": [2]}) == {"b": {"d": None}, "e": [2]}
    assert od.merge_patch(old, old) == {}


def test_condition_keeps_its_transition_time_until_the_status_changes() -> None:
    old = [{"type": "Ready", "status": "True", "lastTransitionTime": "2000-01-01T00:00:00Z"}]
    same = od.condition("Ready", "True", "Ready", "ok", 3, old)
    assert same == {"type": "Ready", "status": "True", "reason": "Ready", "message": "ok",
                    "lastTransitionTime": "2000-01-01T00:00:00Z", "observedGeneration": 3}
    assert od.condition("Ready", "False", "X", "", None, old)["lastTransitionTime"] != "2000-01-01T00:00:00Z"


def test_selector_matches_labels_and_expressions() -> None:
    labels = {"a": "1", "b": "2"}
    assert od.selector_matches({}, labels)
    assert od.selector_matches({"matchLabels": {"a": "1"}, "matchExpressions": [
        {"key": "b", "operator": "In", "values": ["2"]}, {"key": "c", "operator": "DoesNotExist"}]}, labels)
    assert not od.selector_matches({"matchLabels": {"a": "2"}}, labels)
    assert not od.selector_matches({"matchExpressions": [{"key": "a", "operator": "NotIn", "values": ["1"]}]}, labels)
    assert not od.selector_matches({"matchExpressions": [{"key": "c", "operator": "Exists"}]}, labels)


def test_parse_duration_reads_go_durations() -> None:
    default = dt.timedelta(days=90)
    assert od.parse_duration("87600h", default) == dt.timedelta(hours=87600)
    assert od.parse_duration("1h30m10s", default) == dt.timedelta(hours=1, minutes=30, seconds=10)
    assert od.parse_duration(None, default) == default
    assert od.parse_duration("1 day", default) == default


def test_lb_address_is_stable_in_the_documentation_range_and_avoids_taken_ones() -> None:
    first = od.lb_address("ns/web", [])
    assert first == od.lb_address("ns/web", ["203.0.113.1"])
    assert re.fullmatch(r"203\.0\.113\.\d+", first) and first != od.GATEWAY_ADDRESS
    assert 20 <= int(first.rsplit(".", 1)[1]) <= 254
    second = od.lb_address("ns/web", [first])
    assert second != first and second in od.LB_POOL
    assert od.lb_address("ns/web", od.LB_POOL) in od.LB_POOL  # a full pool still answers (a duplicate)


def _load(pems: tuple[bytes, bytes, bytes]) -> tuple[x509.Certificate, Any, x509.Certificate]:
    crt, key, ca = pems
    return (x509.load_pem_x509_certificate(crt), serialization.load_pem_private_key(key, None),
            x509.load_pem_x509_certificate(ca))


def test_issue_self_signed_ca_certificate() -> None:
    spec = {"isCA": True, "commonName": "root", "duration": "87600h", "privateKey": {"algorithm": "ECDSA", "size": 384}}
    pems = od.issue_certificate(spec, None)
    cert, key, ca = _load(pems)
    assert cert == ca and cert.issuer == cert.subject
    assert cert.subject.get_attributes_for_oid(x509.NameOID.COMMON_NAME)[0].value == "root"
    assert cert.extensions.get_extension_for_class(x509.BasicConstraints).value.ca
    assert cert.extensions.get_extension_for_class(x509.KeyUsage).value.key_cert_sign
    assert isinstance(key, ec.EllipticCurvePrivateKey) and key.curve.name == "secp384r1"
    assert pems[1].startswith(b"-----BEGIN EC PRIVATE KEY")  # PKCS1-style, cert-manager's default encoding
    assert cert.not_valid_after_utc - cert.not_valid_before_utc == dt.timedelta(hours=87600)
    assert od.load_key_pair({"data": {"tls.crt": base64.b64encode(pems[0]).decode(),
                                      "tls.key": base64.b64encode(pems[1]).decode()}}) is not None
    assert od.load_key_pair({"data": {"tls.crt": "eA==", "tls.key": "eA=="}}) is None


def test_issue_leaf_signed_by_a_ca_with_names_and_the_default_rsa_key() -> None:
    ca_pems = od.issue_certificate({"isCA": True, "commonName": "ca", "privateKey": {"algorithm": "ECDSA"}}, None)
    ca_cert, ca_key, _ = _load(ca_pems)
    spec = {"dnsNames": ["a.example", "*.b.example"], "ipAddresses": ["192.0.2.1"]}
    crt, key_pem, ca_crt = od.issue_certificate(spec, (ca_cert, ca_key))
    cert, key, ca = _load((crt, key_pem, ca_crt))
    assert ca == ca_cert and cert.issuer == ca_cert.subject
    cert.verify_directly_issued_by(ca_cert)
    assert isinstance(key, rsa.RSAPrivateKey) and key.key_size == 2048 and key_pem.startswith(b"-----BEGIN RSA")
    san = cert.extensions.get_extension_for_class(x509.SubjectAlternativeName)
    assert san.critical  # no commonName: an empty subject, as cert-manager issues it
    assert san.value.get_values_for_type(x509.DNSName) == ["a.example", "*.b.example"]
    assert [str(a) for a in san.value.get_values_for_type(x509.IPAddress)] == ["192.0.2.1"]
    assert not cert.extensions.get_extension_for_class(x509.BasicConstraints).value.ca
    times = od.certificate_times(crt, spec)
    assert times["notAfter"] > times["renewalTime"] > times["notBefore"]
    start, end = (dt.datetime.fromisoformat(times[k]) for k in ("notBefore", "notAfter"))
    assert dt.datetime.fromisoformat(times["renewalTime"]) == end - (end - start) / 3


def test_issue_ed25519_pkcs8() -> None:
    _, key, _ = _load(od.issue_certificate({"commonName": "e", "privateKey": {"algorithm": "Ed25519"}}, None))
    assert isinstance(key, ed25519.Ed25519PrivateKey)


def test_issuer_ready_for_selfsigned_and_ca_only() -> None:
    assert od.issuer_ready({"selfSigned": {}}, None) == ("True", "IsReady", "")
    assert od.issuer_ready({"ca": {"secretName": "x"}}, None)[:2] == ("False", "ErrGetKeyPair")
    assert od.issuer_ready({"ca": {"secretName": "x"}}, ("cert", "key"))[0] == "True"
    assert od.issuer_ready({"acme": {}}, None) is None


def test_spec_digest_changes_with_certificate_or_issuer_spec() -> None:
    base = od.spec_digest({"dnsNames": ["a"]}, {"selfSigned": {}})
    assert base == od.spec_digest({"dnsNames": ["a"]}, {"selfSigned": {}})
    assert base != od.spec_digest({"dnsNames": ["b"]}, {"selfSigned": {}})
    assert base != od.spec_digest({"dnsNames": ["a"]}, {"ca": {"secretName": "x"}})


# -- Gateway API

GATEWAY = {"metadata": {"name": "gw", "namespace": "edge", "generation": 2}, "spec": {"gatewayClassName": "eg",
                                                                                     "listeners": [
    {"name": "http", "protocol": "HTTP", "port": 80, "allowedRoutes": {"namespaces": {"from": "All"}}},
    {"name": "https", "protocol": "HTTPS", "port": 443, "hostname": "*.example.com"},
    {"name": "tls", "protocol": "TLS", "port": 8443},
    {"name": "sel", "protocol": "HTTP", "port": 81, "allowedRoutes": {"namespaces": {
        "from": "Selector", "selector": {"matchLabels": {"team": "a"}}}}}]}}


def route(ns: str, parent: dict[str, Any], hostnames: list[str] | None = None, backends: list[dict[str, Any]]
          | None = None, status: dict[str, Any] | None = None) -> dict[str, Any]:
    out = {"metadata": {"name": "r", "namespace": ns, "generation": 1}, "spec": {
        "parentRefs": [{"group": od.GW_API, "kind": "Gateway", "name": "gw", "namespace": "edge", **parent}],
        "hostnames": hostnames or [], "rules": [{"backendRefs": backends or []}]}}
    return {**out, "status": status} if status else out


def parents_of(r: dict[str, Any], labels: dict[str, dict[str, str]] | None = None) -> tuple[list, list]:
    return od.route_parents(r, {("edge", "gw"): GATEWAY}, labels or {}, ("True", "ResolvedRefs", "ok"))


def accepted(parents: list[dict[str, Any]]) -> tuple[str, str]:
    cond = next(c for c in parents[-1]["conditions"] if c["type"] == "Accepted")
    return cond["status"], cond["reason"]


def test_gateway_status_programs_listeners_and_is_stable() -> None:
    status = od.gateway_status(GATEWAY, {"http": 2}, od.GATEWAY_ADDRESS)
    assert status["addresses"] == [{"type": "IPAddress", "value": "203.0.113.10"}]
    assert {c["type"]: c["status"] for c in status["conditions"]} == {"Accepted": "True", "Programmed": "True"}
    by_name = {ls["name"]: ls for ls in status["listeners"]}
    assert by_name["http"]["attachedRoutes"] == 2 and by_name["https"]["attachedRoutes"] == 0
    assert [k["kind"] for k in by_name["tls"]["supportedKinds"]] == ["TLSRoute"]
    assert all(c["observedGeneration"] == 2 for c in by_name["http"]["conditions"])
    assert od.gateway_status({**GATEWAY, "status": status}, {"http": 2}, od.GATEWAY_ADDRESS) == status


def test_route_attaches_to_the_listeners_that_admit_it() -> None:
    parents, on = parents_of(route("edge", {}))  # Same namespace: http (All), https (Same), not tls, not sel
    assert accepted(parents) == ("True", "Accepted")
    assert sorted(on) == [("edge", "gw", "http"), ("edge", "gw", "https")]
    assert parents[0]["controllerName"] == od.EG_CONTROLLER and parents[0]["parentRef"]["name"] == "gw"
    again, _ = parents_of(route("edge", {}, status={"parents": parents}))
    assert again == parents  # a second pass computes the same status (no write)


def test_route_from_another_namespace_and_selector() -> None:
    assert parents_of(route("apps", {}))[1] == [("edge", "gw", "http")]
    assert parents_of(route("apps", {"sectionName": "sel"}))[0][-1]["conditions"][0]["reason"] == \
        "NotAllowedByListeners"
    _, on = parents_of(route("apps", {"sectionName": "sel"}), {"apps": {"team": "a"}})
    assert on == [("edge", "gw", "sel")]


def test_route_rejections() -> None:
    assert accepted(parents_of(route("edge", {"sectionName": "nope"}))[0]) == ("False", "NoMatchingParent")
    assert accepted(parents_of(route("edge", {"port": 8443}))[0]) == ("False", "NotAllowedByListeners")
    mismatch = parents_of(route("edge", {"sectionName": "https"}, hostnames=["other.org"]))
    assert accepted(mismatch[0]) == ("False", "NoMatchingListenerHostname") and mismatch[1] == []
    assert parents_of(route("edge", {"sectionName": "https"}, hostnames=["api.example.com"]))[1] == [
        ("edge", "gw", "https")]


def test_route_keeps_other_controllers_entries_and_ignores_other_gateways() -> None:
    theirs = {"parentRef": {"name": "gw"}, "controllerName": "example.com/other", "conditions": []}
    parents, _ = parents_of(route("edge", {}, status={"parents": [theirs]}))
    assert parents[0] == theirs and len(parents) == 2
    assert parents_of(route("edge", {"name": "elsewhere"}))[0] == []


def test_route_resolved_refs() -> None:
    kinds = {("", "Service"), ("inference.networking.k8s.io", "InferencePool")}
    backends = {("", "Service", "edge", "svc"), ("inference.networking.k8s.io", "InferencePool", "edge", "pool")}
    pool = {"group": "inference.networking.k8s.io", "kind": "InferencePool", "name": "pool"}
    assert od.route_resolved(route("edge", {}, backends=[{"name": "svc"}, pool]), backends, kinds)[0] == "True"
    assert od.route_resolved(route("edge", {}, backends=[{"name": "gone"}]), backends, kinds)[1] == "BackendNotFound"
    assert od.route_resolved(route("edge", {}, backends=[{"name": "svc", "namespace": "x"}]), backends, kinds)[1] \
        == "RefNotPermitted"
    assert od.route_resolved(route("edge", {}, backends=[{"kind": "Backend", "group": "g", "name": "b"}]),
                             backends, kinds)[1] == "InvalidKind"


def test_hostnames_meet() -> None:
    assert od.hostnames_meet(None, ["a.b"]) and od.hostnames_meet("a.b", [])
    assert od.hostnames_meet("*.example.com", ["x.example.com"])
    assert od.hostnames_meet("x.example.com", ["*.example.com"])
    assert not od.hostnames_meet("*.example.com", ["example.org"])


# -- volumes

CLAIM = {"metadata": {"name": "data", "namespace": "ns", "uid": "u1"}, "spec": {
    "accessModes": ["ReadWriteOnce"], "resources": {"requests": {"storage": "2Gi"}}}, "status": {"phase": "Pending"}}


def test_volume_for_a_claim_is_prebound_and_fits_it() -> None:
    pv = od.volume_for(CLAIM)
    assert pv["metadata"]["name"] == "pvc-u1" and pv["spec"]["claimRef"]["uid"] == "u1"
    assert pv["spec"]["capacity"] == {"storage": "2Gi"} and pv["spec"]["storageClassName"] == ""
    available = {**pv, "spec": {**pv["spec"], "claimRef": None}, "status": {"phase": "Available"}}
    assert od.volume_fits(available, CLAIM)
    small = copy.deepcopy(available)
    small["spec"]["capacity"]["storage"] = "1Gi"
    assert not od.volume_fits(small, CLAIM)
    assert not od.volume_fits({**available, "spec": {**available["spec"], "storageClassName": "fast"}}, CLAIM)


# ------------------------------------------------------------------------------------------------ one pass, no cluster


class FakeApi:
    """An in-memory API for Double: list/get, and merge-patch/create/delete through `request`; counts writes."""

    PATH = re.compile(r"^(?P<prefix>/api/v1|/apis/[^/]+/[^/]+)(?:/namespaces/(?P<ns>[^/]+))?/(?P<plural>[^/]+)"
                      r"(?:/(?P<name>[^/]+))?(?:/(?P<sub>status))?$")

    def __init__(self, objects: dict[od.Res, list[dict[str, Any]]]) -> None:
        self.store = {res: {(o["metadata"].get("namespace"), o["metadata"]["name"]): o for o in items}
                      for res, items in objects.items()}
        self.writes: list[str] = []

    def list(self, res: od.Res, **query: str) -> list[dict[str, Any]]:
        items = copy.deepcopy(list(self.store.get(res, {}).values()))
        if "labelSelector" in query:
            items = [o for o in items if (o["metadata"].get("labels") or {}).get("owner") == "helm"]
        return items

    def get(self, res: od.Res, ns: str | None, name: str) -> dict[str, Any] | None:
        return copy.deepcopy(self.store.get(res, {}).get((ns if res.namespaced else None, name)))

    def request(self, method: str, path: str, query: Any = None, body: Any = None, content_type: str = "") -> Any:
        m = self.PATH.match(path)
        res = next(r for r in od.WATCHED if (r.prefix, r.plural) == (m["prefix"], m["plural"]))
        self.writes.append(f"{method} {path}")
        objects = self.store.setdefault(res, {})
        if method == "POST":
            obj = copy.deepcopy(body)
            obj["metadata"].setdefault("uid", f"uid-{len(self.writes)}")
            objects[(obj["metadata"].get("namespace"), obj["metadata"]["name"])] = obj
            return obj
        key = (m["ns"], m["name"])
        if method == "DELETE":
            return objects.pop(key)
        objects[key] = apply_merge_patch(objects[key], body)
        return copy.deepcopy(objects[key])


def apply_merge_patch(target: Any, patch: Any) -> Any:
    if not isinstance(patch, dict):
        return patch
    out = dict(target) if isinstance(target, dict) else {}
    for key, value in patch.items():
        if value is None:
            out.pop(key, None)
        else:
            out[key] = apply_merge_patch(out.get(key), value)
    return out


def cr(kind: str, name: str, ns: str | None, spec: dict[str, Any], **extra: Any) -> dict[str, Any]:
    meta = {"name": name, "uid": f"uid-{kind}-{name}", "generation": 1, **({"namespace": ns} if ns else {})}
    return {"kind": kind, "metadata": meta, "spec": spec, **extra}


def test_one_pass_does_every_product_and_a_second_pass_writes_nothing() -> None:
    ns = [{"metadata": {"name": n, "labels": {"kubernetes.io/metadata.name": n}}} for n in ("cm", "edge", "apps")]
    api = FakeApi({
        od.NAMESPACES: ns,
        od.SECRETS: [release_secret("cert-manager", "cm"),
                     release_secret("trust-manager", "cm", {"app": {"trust": {"namespace": "cm"}}}),
                     release_secret("gateway-helm", "edge")],
        od.SERVICES: [{"metadata": {"name": "lb", "namespace": "edge"}, "spec": {"type": "LoadBalancer"}},
                      {"metadata": {"name": "svc", "namespace": "edge"}, "spec": {"type": "ClusterIP"}}],
        od.PVCS: [CLAIM],
        od.CLUSTER_ISSUERS: [cr("ClusterIssuer", "self", None, {"selfSigned": {}}),
                             cr("ClusterIssuer", "ca", None, {"ca": {"secretName": "root"}})],
        od.ISSUERS: [cr("Issuer", "acme", "edge", {"acme": {}})],
        od.CERTIFICATES: [cr("Certificate", "root", "cm", {"isCA": True, "commonName": "root", "secretName": "root",
                                                           "issuerRef": {"kind": "ClusterIssuer", "name": "self"}}),
                          cr("Certificate", "tls", "edge", {"dnsNames": ["a.example"], "secretName": "tls",
                                                            "privateKey": {"algorithm": "ECDSA"},
                                                            "issuerRef": {"kind": "ClusterIssuer", "name": "ca"}}),
                          cr("Certificate", "le", "edge", {"secretName": "le", "issuerRef": {"name": "acme"}})],
        od.BUNDLES: [cr("Bundle", "trust", None, {"sources": [{"secret": {"name": "root", "key": "ca.crt"}}],
                                                  "target": {"configMap": {"key": "ca.crt"}, "namespaceSelector": {
                                                      "matchLabels": {"kubernetes.io/metadata.name": "apps"}}}})],
        od.GATEWAY_CLASSES: [cr("GatewayClass", "eg", None, {"controllerName": od.EG_CONTROLLER}),
                             cr("GatewayClass", "other", None, {"controllerName": "example.com/x"})],
        od.GATEWAYS: [cr("Gateway", "gw", "edge", GATEWAY["spec"])],
        od.HTTP_ROUTES: [route("edge", {}, backends=[{"name": "svc"}])],
    })
    double = od.Double(api)
    passes = [double.reconcile() for _ in range(4)]
    # Pass 1 issues the CA's Secret after the CA issuer was checked; pass 2 readies that issuer and signs the leaf.
    assert passes[0] > 0 and passes[1] == 3 and passes[2:] == [0, 0], api.writes
    tls = api.get(od.SECRETS, "edge", "tls")
    leaf = x509.load_pem_x509_certificate(base64.b64decode(tls["data"]["tls.crt"]))
    assert tls["type"] == "kubernetes.io/tls" and base64.b64decode(tls["data"]["ca.crt"]) == base64.b64decode(
        api.get(od.SECRETS, "cm", "root")["data"]["tls.crt"])
    assert leaf.extensions.get_extension_for_class(x509.SubjectAlternativeName).value.get_values_for_type(
        x509.DNSName) == ["a.example"]
    assert od.is_true(api.get(od.CERTIFICATES, "edge", "tls"), "Ready")
    assert "status" not in api.get(od.CERTIFICATES, "edge", "le")  # ACME is left alone
    assert api.get(od.CONFIGMAPS, "apps", "trust")["data"]["ca.crt"].startswith("-----BEGIN CERTIFICATE")
    assert api.get(od.CONFIGMAPS, "edge", "trust") is None and od.is_true(api.get(od.BUNDLES, None, "trust"), "Synced")
    assert od.is_true(api.get(od.GATEWAY_CLASSES, None, "eg"), "Accepted")
    assert "status" not in api.get(od.GATEWAY_CLASSES, None, "other")
    gw = api.get(od.GATEWAYS, "edge", "gw")
    assert od.is_true(gw, "Programmed") and gw["status"]["listeners"][0]["attachedRoutes"] == 1
    assert api.get(od.HTTP_ROUTES, "edge", "r")["status"]["parents"][0]["conditions"][1]["status"] == "True"
    ingress = api.get(od.SERVICES, "edge", "lb")["status"]["loadBalancer"]["ingress"]
    assert ingress == [{"ip": od.lb_address("edge/lb", []), "ipMode": "VIP"}]
    assert "status" not in api.get(od.SERVICES, "edge", "svc")
    assert api.get(od.PVS, None, "pvc-u1")["spec"]["claimRef"]["name"] == "data"

    # A changed Certificate spec re-issues its Secret; an unchanged one is never rewritten.
    before = api.get(od.SECRETS, "cm", "root")["data"]["tls.crt"]
    api.store[od.CERTIFICATES][("edge", "tls")]["spec"]["dnsNames"] = ["b.example"]
    assert double.reconcile() == 2  # the Secret and the status (revision 2)
    assert api.get(od.CERTIFICATES, "edge", "tls")["status"]["revision"] == 2
    assert api.get(od.SECRETS, "cm", "root")["data"]["tls.crt"] == before
    # Without the releases, nothing product-specific is written any more.
    api.store[od.SECRETS] = {k: v for k, v in api.store[od.SECRETS].items() if "helm" not in k[1]}
    api.store[od.CERTIFICATES][("edge", "tls")]["spec"]["dnsNames"] = ["c.example"]
    assert double.reconcile() == 0


def test_a_bundle_with_a_missing_source_is_not_synced() -> None:
    api = FakeApi({od.SECRETS: [release_secret("trust-manager", "cm")], od.NAMESPACES: [{"metadata": {"name": "a"}}],
                   od.BUNDLES: [cr("Bundle", "b", None, {"sources": [{"configMap": {"name": "x", "key": "k"}}],
                                                         "target": {"configMap": {"key": "k"}}})]})
    od.Double(api).reconcile()
    synced = api.get(od.BUNDLES, None, "b")["status"]["conditions"][0]
    assert (synced["status"], synced["reason"]) == ("False", "SourceNotFound")
    assert api.get(od.CONFIGMAPS, "a", "b") is None


# ------------------------------------------------------------------------------------------------ live (kwok cluster)


def double_writes(handle: ClusterHandle) -> list[str]:
    """The operator double's writes kube-apiserver logged (audit log, written in batches: let it settle)."""
    log, size = handle.audit_log, -1
    assert log is not None
    while size != log.stat().st_size:
        size = log.stat().st_size
        time.sleep(0.5)
    events = [json.loads(line) for line in log.read_text().splitlines() if line.strip()]
    return [f"{e['verb']} {e['objectRef'].get('resource')} {e['objectRef'].get('name')}" for e in events
            if e.get("stage") == "ResponseComplete" and str(e.get("userAgent", "")).startswith(od.AGENT)
            and e["verb"] in ("create", "update", "patch", "delete")]


def get(handle: ClusterHandle, *what: str) -> dict[str, Any]:
    proc = handle.kubectl("get", *what, "-o", "json", check=False)
    return json.loads(proc.stdout) if proc.returncode == 0 else {}


def wait_for(check: Any, timeout: float = 10.0) -> float:
    """Seconds until `check()` is true (fails after `timeout`)."""
    start = time.monotonic()
    while not check():
        assert time.monotonic() - start < timeout, "timed out"
        time.sleep(0.1)
    return time.monotonic() - start


@pytest.mark.slow
def test_live_certificate_gets_its_secret_and_ready_once(cluster: ClusterHandle) -> None:  # noqa: F811
    """On a real kwok cluster: with the cert-manager CRDs and a (fake) deployed cert-manager release, a Certificate
    gets a real TLS Secret and Ready; a change that needs nothing gets no write; a spec change re-issues."""
    cluster.kubectl("apply", "--server-side", "-f", str(UPSTREAM / "cert-manager" / "crds"))
    release = release_secret("cert-manager", "default")
    release["metadata"] = {k: v for k, v in release["metadata"].items() if k not in ("uid", "resourceVersion")}
    objects = [{"apiVersion": "v1", "kind": "Secret", **release},
               {"apiVersion": "cert-manager.io/v1", "kind": "ClusterIssuer", "metadata": {"name": "self"},
                "spec": {"selfSigned": {}}},
               {"apiVersion": "v1", "kind": "Service", "metadata": {"name": "lb", "namespace": "default"},
                "spec": {"type": "LoadBalancer", "ports": [{"port": 80}]}}]
    cluster.kubectl("apply", "-f", "-", input=json.dumps({"apiVersion": "v1", "kind": "List", "items": objects}))
    wait_for(lambda: od.is_true(get(cluster, "clusterissuer", "self"), "Ready"))  # first: a single Ready write
    cluster.kubectl("apply", "-f", "-", input=json.dumps({
        "apiVersion": "cert-manager.io/v1", "kind": "Certificate", "metadata": {"name": "web", "namespace": "default"},
        "spec": {"secretName": "web-tls", "dnsNames": ["web.example"], "privateKey": {"algorithm": "ECDSA"},
                 "issuerRef": {"kind": "ClusterIssuer", "name": "self"}}}))
    took = wait_for(lambda: od.is_true(get(cluster, "certificate", "web"), "Ready"))
    assert took < 5.0
    secret = get(cluster, "secret", "web-tls")
    assert secret["type"] == "kubernetes.io/tls"
    crt = x509.load_pem_x509_certificate(base64.b64decode(secret["data"]["tls.crt"]))
    key = serialization.load_pem_private_key(base64.b64decode(secret["data"]["tls.key"]), None)
    assert crt.public_key() == key.public_key() and secret["data"]["ca.crt"] == secret["data"]["tls.crt"]
    assert crt.extensions.get_extension_for_class(x509.SubjectAlternativeName).value.get_values_for_type(
        x509.DNSName) == ["web.example"]
    wait_for(lambda: get(cluster, "service", "lb").get("status", {}).get("loadBalancer", {}).get("ingress"))
    assert get(cluster, "service", "lb")["status"]["loadBalancer"]["ingress"] == [
        {"ip": od.lb_address("default/lb", []), "ipMode": "VIP"}]

    writes = double_writes(cluster)
    assert sorted(writes) == ["create secrets web-tls", "patch certificates web", "patch clusterissuers self",
                              "patch services lb"], writes  # one write each, through /status where it exists
    version = get(cluster, "certificate", "web")["metadata"]["resourceVersion"]
    cluster.kubectl("label", "certificate", "web", "touched=yes")
    time.sleep(1.0)
    assert double_writes(cluster) == writes  # nothing to do: no write
    assert get(cluster, "certificate", "web")["metadata"]["resourceVersion"] != version  # (the label's)

    cluster.kubectl("patch", "certificate", "web", "--type=merge", "-p", '{"spec":{"dnsNames":["new.example"]}}')
    wait_for(lambda: get(cluster, "certificate", "web").get("status", {}).get("revision") == 2)
    renewed = x509.load_pem_x509_certificate(base64.b64decode(get(cluster, "secret", "web-tls")["data"]["tls.crt"]))
    assert renewed.extensions.get_extension_for_class(x509.SubjectAlternativeName).value.get_values_for_type(
        x509.DNSName) == ["new.example"]
