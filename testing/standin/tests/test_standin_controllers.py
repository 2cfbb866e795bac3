"""Simulated controllers: explicit Python API, and automatic mode gated on deployed Helm releases."""

from __future__ import annotations

import base64
import gzip
import json
import time

import pytest
import yaml
from cryptography import x509
from cryptography.hazmat.primitives.asymmetric import ec, padding, rsa
from standin.controllers import issue_certificate
from standin.fixtures import UPSTREAM
from standin_http import Api

CERT_MANAGER_CRDS = UPSTREAM / "cert-manager" / "crds"
TRUST_MANAGER_CRD = UPSTREAM / "trust-manager" / "crds" / "trust.cert-manager.io_bundles.yaml"
GATEWAY_CRDS = UPSTREAM / "gateway-api" / "v1.5.1" / "experimental"

pytestmark = pytest.mark.skipif(not CERT_MANAGER_CRDS.is_dir() or not GATEWAY_CRDS.is_dir(),
                                reason="../shared/upstream (cert-manager and Gateway API CRDs) is absent")
CM = "/apis/cert-manager.io/v1"
GW = "/apis/gateway.networking.k8s.io/v1"


@pytest.fixture
def cluster(fresh_cluster):
    """A stand-in of its own per test (with simulated controllers): the tests do not depend on each other."""
    return fresh_cluster


@pytest.fixture
def api(cluster):
    api = Api(cluster.url)
    files = [*sorted(CERT_MANAGER_CRDS.glob("*.yaml")), TRUST_MANAGER_CRD,
             GATEWAY_CRDS / "gatewayclasses.gateway.networking.k8s.io.yaml",
             GATEWAY_CRDS / "gateways.gateway.networking.k8s.io.yaml"]
    for path in files:
        reply = api.post("/apis/apiextensions.k8s.io/v1/customresourcedefinitions", yaml.safe_load(path.read_text()))
        assert reply.code == 201, reply.body
    for ns in ("cert-manager", "apps", "labelled"):
        api.post("/api/v1/namespaces", {"metadata": {"name": ns, "labels": {"trust": "yes"} if ns == "labelled"
                                                     else {}}})
    return api


def release_secret(chart: str, ns: str, status: str = "deployed", version: int = 1) -> dict:
    """A Helm 3 release Secret the way helm stores it (base64(gzip(JSON)) inside the Secret's base64)."""
    release = {"name": f"mp-{chart}", "namespace": ns, "version": version, "config": {},
               "info": {"status": status}, "chart": {"metadata": {"name": chart, "version": "v1.0.0"}}}
    payload = base64.b64encode(gzip.compress(json.dumps(release).encode())).decode()
    return {"metadata": {"name": f"sh.helm.release.v1.mp-{chart}.v{version}", "namespace": ns,
                         "labels": {"owner": "helm", "name": f"mp-{chart}", "status": status,
                                    "version": str(version)}},
            "type": "helm.sh/release.v1", "data": {"release": base64.b64encode(payload.encode()).decode()}}


def install(api, chart, ns, status="deployed", version=1):
    reply = api.post(f"/api/v1/namespaces/{ns}/secrets", release_secret(chart, ns, status, version))
    assert reply.code == 201, reply.body


def wait_for(fetch, predicate, timeout=10.0):
    deadline = time.monotonic() + timeout
    value = fetch()
    while not predicate(value) and time.monotonic() < deadline:
        time.sleep(0.05)
        value = fetch()
    return value


def ready(obj, kind="Ready"):
    return any(c["type"] == kind and c["status"] == "True" for c in (obj.get("status") or {}).get("conditions") or [])


def _cert(name, ns, issuer, kind="Issuer", is_ca=False, secret=None):
    spec = {"secretName": secret or f"{name}-tls",
            "issuerRef": {"name": issuer, "kind": kind, "group": "cert-manager.io"},
            "commonName": name, "dnsNames": [f"{name}.example.com"]}
    if is_ca:
        spec["isCA"] = True
    return {"apiVersion": "cert-manager.io/v1", "kind": "Certificate", "metadata": {"name": name, "namespace": ns},
            "spec": spec}


def _verify(child: x509.Certificate, parent: x509.Certificate) -> None:
    key = parent.public_key()
    if isinstance(key, rsa.RSAPublicKey):
        key.verify(child.signature, child.tbs_certificate_bytes, padding.PKCS1v15(), child.signature_hash_algorithm)
    else:
        assert isinstance(key, ec.EllipticCurvePublicKey)
        key.verify(child.signature, child.tbs_certificate_bytes, ec.ECDSA(child.signature_hash_algorithm))


def _pem(secret, key):
    return base64.b64decode(secret["data"][key])


# ---------------------------------------------------------------- explicit Python API


def test_python_api_programs_a_gateway_and_sends_watch_events(cluster, api):
    api.post(f"{GW}/gatewayclasses", {"apiVersion": "gateway.networking.k8s.io/v1", "kind": "GatewayClass",
                                      "metadata": {"name": "manual"}, "spec": {"controllerName": "example.com/x"}})
    gw = {"apiVersion": "gateway.networking.k8s.io/v1", "kind": "Gateway", "metadata": {"name": "gw-manual"},
          "spec": {"gatewayClassName": "manual", "listeners": [{"name": "http", "protocol": "HTTP", "port": 80}]}}
    created = api.post(f"{GW}/namespaces/apps/gateways", gw).body
    time.sleep(0.3)
    untouched = api.get(f"{GW}/namespaces/apps/gateways/gw-manual").body
    assert not ready(untouched, "Programmed"), "a class of no installed controller stays unprogrammed"
    rv = int(created["metadata"]["resourceVersion"])
    result = cluster.controllers.mark_gateway_programmed("gw-manual", "apps", address="203.0.113.77")
    assert int(result["metadata"]["resourceVersion"]) > rv
    assert result["status"]["addresses"] == [{"type": "IPAddress", "value": "203.0.113.77"}]
    assert ready(result, "Programmed") and ready(result, "Accepted")
    assert result["status"]["listeners"][0]["name"] == "http"
    events = [e for e in cluster.api.events if e[2] == "MODIFIED" and e[3]["metadata"]["name"] == "gw-manual"]
    assert events, "status writes are watch events"


def test_python_api_over_http_debug_endpoint(api):
    svc = {"metadata": {"name": "lb"}, "spec": {"type": "LoadBalancer", "ports": [{"port": 443}]}}
    api.post("/api/v1/namespaces/apps/services", svc)
    reply = api.post("/_standin/controllers", {"action": "set_loadbalancer_ingress",
                                               "args": {"name": "lb", "ns": "apps"}})
    assert reply.code == 200
    status = api.get("/api/v1/namespaces/apps/services/lb").body["status"]
    assert status["loadBalancer"]["ingress"][0]["ip"] == "203.0.113.20"
    assert api.post("/_standin/controllers", {"action": "nope"}).code == 400


def test_python_api_certificate_with_real_pem(cluster, api):
    api.post(f"{CM}/namespaces/apps/issuers", {"apiVersion": "cert-manager.io/v1", "kind": "Issuer",
                                               "metadata": {"name": "manual-ss"}, "spec": {"selfSigned": {}}})
    api.post(f"{CM}/namespaces/apps/certificates", _cert("manual", "apps", "manual-ss"))
    cluster.controllers.mark_issuer_ready("manual-ss", "apps")
    cert = cluster.controllers.mark_certificate_ready("manual", "apps")
    assert ready(cert) and cert["status"]["notAfter"]
    secret = api.get("/api/v1/namespaces/apps/secrets/manual-tls").body
    assert secret["type"] == "kubernetes.io/tls"
    leaf = x509.load_pem_x509_certificate(_pem(secret, "tls.crt"))
    assert leaf.subject.rfc4514_string() == "CN=manual"
    assert _pem(secret, "ca.crt") == _pem(secret, "tls.crt"), "self-signed: ca.crt is the certificate itself"
    assert b"PRIVATE KEY" in _pem(secret, "tls.key")


# ---------------------------------------------------------------- automatic mode


def test_nothing_happens_for_products_not_installed(cluster, api):
    api.post(f"{CM}/clusterissuers", {"apiVersion": "cert-manager.io/v1", "kind": "ClusterIssuer",
                                      "metadata": {"name": "early"}, "spec": {"selfSigned": {}}})
    install(api, "cert-manager", "cert-manager", status="failed")  # a failed release is not an installed product
    cluster.controllers.settle()
    time.sleep(0.2)
    assert not (api.get(f"{CM}/clusterissuers/early").body.get("status") or {}).get("conditions")


def test_cert_manager_issues_a_ca_chain(cluster, api):
    api.post(f"{CM}/clusterissuers", {"apiVersion": "cert-manager.io/v1", "kind": "ClusterIssuer",
                                      "metadata": {"name": "early"}, "spec": {"selfSigned": {}}})
    install(api, "cert-manager", "cert-manager", version=2)
    api.post(f"{CM}/clusterissuers", {"apiVersion": "cert-manager.io/v1", "kind": "ClusterIssuer",
                                      "metadata": {"name": "selfsigned"}, "spec": {"selfSigned": {}}})
    api.post(f"{CM}/namespaces/cert-manager/certificates", _cert("root", "cert-manager", "selfsigned",
                                                                 kind="ClusterIssuer", is_ca=True, secret="root-ca"))
    api.post(f"{CM}/clusterissuers", {"apiVersion": "cert-manager.io/v1", "kind": "ClusterIssuer",
                                      "metadata": {"name": "ca"}, "spec": {"ca": {"secretName": "root-ca"}}})
    api.post(f"{CM}/namespaces/apps/certificates", _cert("leaf", "apps", "ca", kind="ClusterIssuer"))
    leaf = wait_for(lambda: api.get(f"{CM}/namespaces/apps/certificates/leaf").body, ready)
    assert ready(leaf), leaf.get("status")
    assert ready(api.get(f"{CM}/clusterissuers/ca").body) and ready(api.get(f"{CM}/clusterissuers/early").body)
    root_secret = api.get("/api/v1/namespaces/cert-manager/secrets/root-ca").body
    leaf_secret = api.get("/api/v1/namespaces/apps/secrets/leaf-tls").body
    root = x509.load_pem_x509_certificate(_pem(root_secret, "tls.crt"))
    issued = x509.load_pem_x509_certificate(_pem(leaf_secret, "tls.crt"))
    assert _pem(leaf_secret, "ca.crt") == _pem(root_secret, "tls.crt"), "ca.crt is the CA issuer's certificate"
    assert issued.issuer == root.subject
    _verify(issued, root)
    assert root.extensions.get_extension_for_class(x509.BasicConstraints).value.ca
    names = issued.extensions.get_extension_for_class(x509.SubjectAlternativeName).value
    assert names.get_values_for_type(x509.DNSName) == ["leaf.example.com"]
    # Settled: another pass writes nothing.
    cluster.controllers.settle()
    rv = api.get(f"{CM}/namespaces/apps/certificates/leaf").body["metadata"]["resourceVersion"]
    cluster.controllers.reconcile_all()
    assert api.get(f"{CM}/namespaces/apps/certificates/leaf").body["metadata"]["resourceVersion"] == rv


def test_trust_manager_bundle_targets(cluster, api):
    crt, key, ca = issue_certificate({"commonName": "root", "isCA": True}, None)
    api.post("/api/v1/namespaces/cert-manager/secrets", {
        "metadata": {"name": "root-ca"}, "type": "kubernetes.io/tls",
        "data": {k: base64.b64encode(v).decode() for k, v in (("tls.crt", crt), ("tls.key", key), ("ca.crt", ca))}})
    bundle = {"apiVersion": "trust.cert-manager.io/v1alpha1", "kind": "Bundle", "metadata": {"name": "roots"},
              "spec": {"sources": [{"secret": {"name": "root-ca", "key": "ca.crt"}}],
                       "target": {"configMap": {"key": "ca.pem"},
                                  "namespaceSelector": {"matchLabels": {"trust": "yes"}}}}}
    assert api.post("/apis/trust.cert-manager.io/v1alpha1/bundles", bundle).code == 201
    time.sleep(0.3)
    assert api.get("/api/v1/namespaces/labelled/configmaps/roots").code == 404, "trust-manager is not installed"
    install(api, "trust-manager", "cert-manager")
    target = wait_for(lambda: api.get("/api/v1/namespaces/labelled/configmaps/roots"), lambda r: r.code == 200)
    assert target.code == 200
    root_secret = api.get("/api/v1/namespaces/cert-manager/secrets/root-ca").body
    assert target.body["data"]["ca.pem"].strip() == _pem(root_secret, "ca.crt").decode().strip()
    assert api.get("/api/v1/namespaces/apps/configmaps/roots").code == 404, "namespaceSelector limits targets"
    assert ready(api.get("/apis/trust.cert-manager.io/v1alpha1/bundles/roots").body, "Synced")


def test_envoy_gateway_programs_its_gateways(cluster, api):
    api.post(f"{GW}/gatewayclasses", {"apiVersion": "gateway.networking.k8s.io/v1", "kind": "GatewayClass",
                                      "metadata": {"name": "eg"},
                                      "spec": {"controllerName": "gateway.envoyproxy.io/gatewayclass-controller"}})
    gw = {"apiVersion": "gateway.networking.k8s.io/v1", "kind": "Gateway", "metadata": {"name": "edge"},
          "spec": {"gatewayClassName": "eg", "listeners": [{"name": "http", "protocol": "HTTP", "port": 8080}]}}
    api.post(f"{GW}/namespaces/apps/gateways", gw)
    api.post(f"{GW}/namespaces/apps/gateways", dict(gw, metadata={"name": "foreign"},
                                                    spec=dict(gw["spec"], gatewayClassName="other")))
    time.sleep(0.3)
    assert not ready(api.get(f"{GW}/gatewayclasses/eg").body, "Accepted"), "Envoy Gateway is not installed yet"
    install(api, "gateway-helm", "cert-manager")
    edge = wait_for(lambda: api.get(f"{GW}/namespaces/apps/gateways/edge").body, lambda o: ready(o, "Programmed"))
    assert ready(edge, "Programmed") and edge["status"]["addresses"][0]["value"] == "203.0.113.10"
    assert ready(api.get(f"{GW}/gatewayclasses/eg").body, "Accepted")
    foreign = api.get(f"{GW}/namespaces/apps/gateways/foreign").body
    assert not ready(foreign, "Programmed") and "addresses" not in foreign["status"], "other classes are left alone"


def test_envoy_gateway_attaches_http_routes_and_counts_them(cluster, api):
    """Routes naming a Programmed Gateway of Envoy Gateway's class get status.parents as Envoy Gateway writes them,
    and each listener counts the routes accepted on it; a listener's allowedRoutes and the backend kinds Envoy
    Gateway knows decide Accepted and ResolvedRefs."""
    reply = api.post("/apis/apiextensions.k8s.io/v1/customresourcedefinitions",
                     yaml.safe_load((GATEWAY_CRDS / "httproutes.gateway.networking.k8s.io.yaml").read_text()))
    assert reply.code == 201, reply.body
    api.post(f"{GW}/gatewayclasses", {"apiVersion": "gateway.networking.k8s.io/v1", "kind": "GatewayClass",
                                      "metadata": {"name": "eg"},
                                      "spec": {"controllerName": "gateway.envoyproxy.io/gatewayclass-controller"}})
    api.post(f"{GW}/namespaces/apps/gateways", {
        "apiVersion": "gateway.networking.k8s.io/v1", "kind": "Gateway", "metadata": {"name": "edge"},
        "spec": {"gatewayClassName": "eg", "listeners": [
            {"name": "http", "protocol": "HTTP", "port": 80},  # allowedRoutes defaults to the Gateway's namespace
            {"name": "open", "protocol": "HTTP", "port": 8081, "allowedRoutes": {"namespaces": {"from": "All"}}}]}})
    api.post("/api/v1/namespaces/apps/services", {"metadata": {"name": "svc"}, "spec": {"ports": [{"port": 80}]}})

    def route(name, parent, backend):
        return {"apiVersion": "gateway.networking.k8s.io/v1", "kind": "HTTPRoute", "metadata": {"name": name},
                "spec": {"parentRefs": [parent], "rules": [{"backendRefs": [backend]}]}}

    service = {"name": "svc", "port": 80}
    pool = {"group": "inference.networking.k8s.io", "kind": "InferencePool", "name": "pool"}
    for name, ns, parent, backend in (
            ("local", "apps", {"name": "edge"}, service),
            ("same-only", "labelled", {"name": "edge", "namespace": "apps", "sectionName": "http"}, service),
            ("to-pool", "labelled", {"name": "edge", "namespace": "apps"}, pool),
            ("elsewhere", "apps", {"name": "nope"}, service)):
        reply = api.post(f"{GW}/namespaces/{ns}/httproutes", route(name, parent, backend))
        assert reply.code == 201, reply.body
    install(api, "gateway-helm", "cert-manager")  # its values list no InferencePool backendResources
    cluster.controllers.settle(10)

    def parents(name, ns):
        found = api.get(f"{GW}/namespaces/{ns}/httproutes/{name}").body.get("status", {}).get("parents", [])
        return [{c["type"]: (c["status"], c["reason"]) for c in p["conditions"]} for p in found]

    edge = wait_for(lambda: api.get(f"{GW}/namespaces/apps/gateways/edge").body,
                    lambda o: [ls["attachedRoutes"] for ls in o["status"].get("listeners", [])] == [1, 2])
    assert [ls["attachedRoutes"] for ls in edge["status"]["listeners"]] == [1, 2], edge["status"]
    local = api.get(f"{GW}/namespaces/apps/httproutes/local").body["status"]["parents"]
    assert local[0]["controllerName"] == "gateway.envoyproxy.io/gatewayclass-controller"
    assert local[0]["parentRef"]["name"] == "edge"
    assert parents("local", "apps") == [{"Accepted": ("True", "Accepted"), "ResolvedRefs": ("True", "ResolvedRefs")}]
    # Its Service is looked for in the route's own namespace, where there is none.
    assert parents("same-only", "labelled") == [{"Accepted": ("False", "NotAllowedByListeners"),
                                                 "ResolvedRefs": ("False", "BackendNotFound")}]
    assert parents("to-pool", "labelled") == [{"Accepted": ("True", "Accepted"),
                                               "ResolvedRefs": ("False", "InvalidKind")}]
    assert parents("elsewhere", "apps") == [], "a parent Envoy Gateway does not own gets no status from it"
    api.delete(f"{GW}/namespaces/apps/httproutes/local")
    edge = wait_for(lambda: api.get(f"{GW}/namespaces/apps/gateways/edge").body,
                    lambda o: [ls["attachedRoutes"] for ls in o["status"]["listeners"]] == [0, 1])
    assert [ls["attachedRoutes"] for ls in edge["status"]["listeners"]] == [0, 1], edge["status"]


def test_deployments_become_available(cluster, api):
    deploy = {"apiVersion": "apps/v1", "kind": "Deployment", "metadata": {"name": "web"},
              "spec": {"replicas": 2, "selector": {"matchLabels": {"app": "web"}},
                       "template": {"metadata": {"labels": {"app": "web"}},
                                    "spec": {"containers": [{"name": "c", "image": "img:1"}]}}}}
    api.post("/apis/apps/v1/namespaces/apps/deployments", deploy)
    obj = wait_for(lambda: api.get("/apis/apps/v1/namespaces/apps/deployments/web").body,
                   lambda o: (o.get("status") or {}).get("availableReplicas") == 2)
    assert obj["status"]["readyReplicas"] == 2 and obj["status"]["observedGeneration"] == 1
    assert ready(obj, "Available")
