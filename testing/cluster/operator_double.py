#!/usr/bin/env python3
"""The operator TEST DOUBLE: what cert-manager, trust-manager, Envoy Gateway, a LoadBalancer IPAM and a volume
provisioner would write back to the API, for kwok clusters where none of them runs (see OPERATOR_DOUBLE.md).

One process watches the real API (kube-apiserver) and, whenever something it cares about changes, runs one
reconcile pass that lists what it needs and writes only what differs: a second pass over an unchanged cluster
writes nothing. Product behaviours run only while that product's Helm release is deployed; LoadBalancer
addresses and volumes always. Every write is logged on one line (never secret material) and sent with the
User-Agent `operator-double`, so request counts can leave it out.

Usage: python testing/cluster/operator_double.py --kubeconfig FILE   (runs until SIGTERM or SIGINT)
"""

from __future__ import annotations

import argparse
import base64
import contextlib
import datetime as dt
import gzip
import hashlib
import ipaddress
import json
import logging
import re
import signal
import sys
import threading
from collections.abc import Iterable, Iterator
from typing import Any, NamedTuple

from cryptography import x509
from cryptography.exceptions import UnsupportedAlgorithm
from cryptography.hazmat.primitives import hashes, serialization
from cryptography.hazmat.primitives.asymmetric import ec, ed25519, rsa
from cryptography.x509.oid import NameOID
from kubernetes.utils.quantity import parse_quantity

log = logging.getLogger("operator-double")
AGENT = "operator-double"  # User-Agent and field manager: testing/cluster/fixtures.py leaves these requests out
CM = "cert-manager.io"
GW_API = "gateway.networking.k8s.io"
EG_CONTROLLER = "gateway.envoyproxy.io/gatewayclass-controller"
CHARTS = {"cert-manager": "cert-manager", "trust-manager": "trust-manager", "envoy-gateway": "gateway-helm"}
GATEWAY_ADDRESS = "203.0.113.10"  # TEST-NET-3 (documentation range): nothing is ever sent there
LB_POOL = [f"203.0.113.{host}" for host in range(20, 255)]  # .1-.19 kept for fixed addresses like the Gateway's
DIGEST = "operator-double.test/spec-digest"  # on issued Secrets: the Certificate + issuer spec they were made from
PROVISIONER = "operator-double.test/hostpath"
METADATA_ONLY = "application/json;as=PartialObjectMetadata;g=meta.k8s.io;v=v1"  # names and versions only
DEBOUNCE = 0.05  # seconds: a burst of watch events makes one pass
RESYNC = 10.0  # seconds between passes when nothing is announced (a safety net, like informers' resync)
RETRY = 1.0  # seconds before another pass after a failed write
CRD_POLL = 0.1  # seconds between watch attempts on a resource whose CRD exists but is not served yet


class Res(NamedTuple):
    """One API resource: `/api/v1` or `/apis/<group>/<version>`, its plural, whether namespaced."""

    prefix: str
    plural: str
    namespaced: bool = True

    def path(self, ns: str | None = None, name: str | None = None, sub: str | None = None) -> str:
        where = f"/namespaces/{ns}" if self.namespaced and ns else ""
        return f"{self.prefix}{where}/{self.plural}" + (f"/{name}" if name else "") + (f"/{sub}" if sub else "")


SECRETS, CONFIGMAPS, SERVICES = Res("/api/v1", "secrets"), Res("/api/v1", "configmaps"), Res("/api/v1", "services")
NAMESPACES, PVCS = Res("/api/v1", "namespaces", False), Res("/api/v1", "persistentvolumeclaims")
PVS, CLASSES = Res("/api/v1", "persistentvolumes", False), Res("/apis/storage.k8s.io/v1", "storageclasses", False)
CRDS = Res("/apis/apiextensions.k8s.io/v1", "customresourcedefinitions", False)
ISSUERS, CLUSTER_ISSUERS = Res(f"/apis/{CM}/v1", "issuers"), Res(f"/apis/{CM}/v1", "clusterissuers", False)
CERTIFICATES = Res(f"/apis/{CM}/v1", "certificates")
BUNDLES = Res("/apis/trust.cert-manager.io/v1alpha1", "bundles", False)
GATEWAY_CLASSES = Res(f"/apis/{GW_API}/v1", "gatewayclasses", False)
GATEWAYS, HTTP_ROUTES = Res(f"/apis/{GW_API}/v1", "gateways"), Res(f"/apis/{GW_API}/v1", "httproutes")
WATCHED = (SECRETS, CONFIGMAPS, SERVICES, NAMESPACES, PVCS, PVS, CLASSES, CRDS, ISSUERS, CLUSTER_ISSUERS,
           CERTIFICATES, BUNDLES, GATEWAY_CLASSES, GATEWAYS, HTTP_ROUTES)

# ------------------------------------------------------------------------------------------------ pure helpers


def now() -> str:
    return dt.datetime.now(dt.UTC).strftime("%Y-%m-%dT%H:%M:%SZ")


def decode_release(secret: dict[str, Any]) -> dict[str, Any] | None:
    """The Helm 3/4 release JSON of a `helm.sh/release.v1` Secret: data.release is base64(base64(gzip(JSON)))."""
    try:
        inner = base64.b64decode(base64.b64decode((secret.get("data") or {})["release"]))
        return json.loads(gzip.decompress(inner) if inner[:2] == b"\x1f\x8b" else inner)
    except (KeyError, ValueError, OSError, TypeError):
        return None


def condition(kind: str, status: str, reason: str, message: str, generation: int | None,
              old: list[dict[str, Any]] | None) -> dict[str, Any]:
    """A status condition; its lastTransitionTime stays the old one while its status does not change."""
    before = next((c for c in old or [] if c.get("type") == kind), None)
    stamp = before["lastTransitionTime"] if before and before.get("status") == status else now()
    out = {"type": kind, "status": status, "reason": reason, "message": message, "lastTransitionTime": stamp}
    return out if generation is None else {**out, "observedGeneration": generation}


def is_true(obj: dict[str, Any], kind: str) -> bool:
    return any(c.get("type") == kind and c.get("status") == "True"
               for c in (obj.get("status") or {}).get("conditions") or [])


def merge_patch(old: Any, new: Any) -> Any:
    """The JSON merge patch (RFC 7386) turning `old` into `new`: removed keys become null."""
    if not isinstance(old, dict) or not isinstance(new, dict):
        return new
    patch = {key: None for key in old if key not in new}
    patch.update({key: merge_patch(old.get(key), value) for key, value in new.items() if old.get(key) != value})
    return patch


def selector_matches(selector: dict[str, Any], labels: dict[str, str]) -> bool:
    """A metav1.LabelSelector (matchLabels, matchExpressions) against labels; an empty selector matches all."""
    if any(labels.get(k) != v for k, v in (selector.get("matchLabels") or {}).items()):
        return False
    for expr in selector.get("matchExpressions") or []:
        key, op, values = expr.get("key"), expr.get("operator"), expr.get("values") or []
        if ((op == "In" and labels.get(key) not in values) or (op == "NotIn" and labels.get(key) in values)
                or (op == "Exists" and key not in labels) or (op == "DoesNotExist" and key in labels)):
            return False
    return True


def parse_duration(text: str | None, default: dt.timedelta) -> dt.timedelta:
    """A Go duration (`87600h`, `1h30m`, `90s`); `default` when unset or unparsable."""
    parts = re.findall(r"(\d+(?:\.\d+)?)(h|ms|m|s)", text or "")
    if not parts or "".join(n + u for n, u in parts) != (text or ""):
        return default
    unit = {"h": 3600.0, "m": 60.0, "s": 1.0, "ms": 0.001}
    return dt.timedelta(seconds=sum(float(n) * unit[u] for n, u in parts))


def lb_address(key: str, taken: Iterable[str]) -> str:
    """A LoadBalancer address from LB_POOL for `key` (`<ns>/<name>`): the same one each time unless taken."""
    busy, start = set(taken), int(hashlib.sha256(key.encode()).hexdigest(), 16) % len(LB_POOL)
    ring = LB_POOL[start:] + LB_POOL[:start]
    return next((ip for ip in ring if ip not in busy), ring[0])


# -- certificates (cert-manager)


def _new_key(spec: dict[str, Any]) -> Any:
    """cert-manager's privateKey: algorithm RSA (the default; size 2048), ECDSA (256, 384, 521) or Ed25519."""
    key = spec.get("privateKey") or {}
    algorithm, size = (key.get("algorithm") or "RSA").upper(), key.get("size")
    if algorithm == "ECDSA":
        return ec.generate_private_key({384: ec.SECP384R1(), 521: ec.SECP521R1()}.get(size, ec.SECP256R1()))
    if algorithm == "ED25519":
        return ed25519.Ed25519PrivateKey.generate()
    return rsa.generate_private_key(public_exponent=65537, key_size=size or 2048)


def issue_certificate(spec: dict[str, Any], ca: tuple[Any, Any] | None) -> tuple[bytes, bytes, bytes]:
    """(tls.crt, tls.key, ca.crt) PEM for a Certificate spec: self-signed when `ca` (cert, key) is None, else signed
    by it (ca.crt is then the CA's certificate). Honours commonName, dnsNames, ipAddresses, isCA, duration and
    privateKey (algorithm, size, encoding: PKCS1 by default as cert-manager writes it)."""
    key = _new_key(spec)
    subject = x509.Name([x509.NameAttribute(NameOID.COMMON_NAME, spec["commonName"][:64])]
                        if spec.get("commonName") else [])
    start = dt.datetime.now(dt.UTC).replace(microsecond=0)
    is_ca = bool(spec.get("isCA"))
    builder = (x509.CertificateBuilder().subject_name(subject).public_key(key.public_key())
               .serial_number(x509.random_serial_number()).not_valid_before(start)
               .not_valid_after(start + parse_duration(spec.get("duration"), dt.timedelta(days=90)))
               .add_extension(x509.BasicConstraints(ca=is_ca, path_length=None), critical=True)
               .add_extension(x509.KeyUsage(
                   digital_signature=True, key_encipherment=isinstance(key, rsa.RSAPrivateKey), key_cert_sign=is_ca,
                   crl_sign=False, content_commitment=False, data_encipherment=False, key_agreement=False,
                   encipher_only=False, decipher_only=False), critical=True)
               .add_extension(x509.SubjectKeyIdentifier.from_public_key(key.public_key()), critical=False))
    sans = [x509.DNSName(n) for n in spec.get("dnsNames") or []]
    sans += [x509.IPAddress(ipaddress.ip_address(a)) for a in spec.get("ipAddresses") or []]
    if sans:
        builder = builder.add_extension(x509.SubjectAlternativeName(sans), critical=not subject)
    signer_cert, signer_key = ca if ca else (None, key)
    if signer_cert is not None:
        builder = builder.issuer_name(signer_cert.subject).add_extension(
            x509.AuthorityKeyIdentifier.from_issuer_public_key(signer_cert.public_key()), critical=False)
    else:
        builder = builder.issuer_name(subject)
    digest = None if isinstance(signer_key, ed25519.Ed25519PrivateKey) else hashes.SHA256()
    cert = builder.sign(signer_key, digest)
    pkcs8 = (spec.get("privateKey") or {}).get("encoding") == "PKCS8" or isinstance(key, ed25519.Ed25519PrivateKey)
    key_pem = key.private_bytes(serialization.Encoding.PEM, serialization.PrivateFormat.PKCS8 if pkcs8
                                else serialization.PrivateFormat.TraditionalOpenSSL, serialization.NoEncryption())
    pem = serialization.Encoding.PEM
    return cert.public_bytes(pem), key_pem, (signer_cert or cert).public_bytes(pem)


def load_key_pair(secret: dict[str, Any] | None) -> tuple[Any, Any] | None:
    """(certificate, private key) from a TLS Secret's tls.crt/tls.key, or None when missing or invalid."""
    data = (secret or {}).get("data") or {}
    try:
        return (x509.load_pem_x509_certificate(base64.b64decode(data["tls.crt"])),
                serialization.load_pem_private_key(base64.b64decode(data["tls.key"]), password=None))
    except (KeyError, ValueError, TypeError, UnsupportedAlgorithm):
        return None


def certificate_times(crt: bytes, spec: dict[str, Any]) -> dict[str, str]:
    """Certificate status notBefore/notAfter/renewalTime of an issued certificate (renewBefore, else 1/3 of it)."""
    cert = x509.load_pem_x509_certificate(crt)
    start, end = cert.not_valid_before_utc, cert.not_valid_after_utc
    renew = parse_duration(spec.get("renewBefore"), (end - start) / 3)
    stamp = "%Y-%m-%dT%H:%M:%SZ"
    return {"notBefore": start.strftime(stamp), "notAfter": end.strftime(stamp),
            "renewalTime": (end - renew).strftime(stamp)}


def spec_digest(cert_spec: dict[str, Any], issuer_spec: dict[str, Any]) -> str:
    return hashlib.sha256(json.dumps([cert_spec, issuer_spec], sort_keys=True).encode()).hexdigest()[:16]


def issuer_ready(spec: dict[str, Any], ca: tuple[Any, Any] | None) -> tuple[str, str, str] | None:
    """The Ready condition (status, reason, message) of a selfSigned or CA issuer; None for the kinds left alone."""
    if "ca" in spec:
        if ca:
            return "True", "KeyPairVerified", "Signing CA verified"
        return "False", "ErrGetKeyPair", (f'Error getting keypair for CA issuer: secret '
                                          f'"{(spec["ca"] or {}).get("secretName")}" not found or invalid')
    return ("True", "IsReady", "") if "selfSigned" in spec else None


# -- Gateway API (Envoy Gateway)


def gateway_status(gateway: dict[str, Any], attached: dict[str, int], address: str) -> dict[str, Any]:
    """Envoy Gateway's status for a Gateway of its class: Accepted, Programmed, the address, per-listener status
    with `attachedRoutes` from `attached` (listener name -> routes accepted on it)."""
    gen, old = gateway["metadata"].get("generation"), gateway.get("status") or {}
    listeners = []
    for listener in (gateway.get("spec") or {}).get("listeners") or []:
        name = listener.get("name")
        prev = next((ls for ls in old.get("listeners") or [] if ls.get("name") == name), {}).get("conditions")
        protocol = listener.get("protocol")
        kinds = [f"{protocol}Route"] if protocol in ("TLS", "TCP", "UDP") else ["HTTPRoute", "GRPCRoute"]
        listeners.append({"name": name, "attachedRoutes": attached.get(name, 0), "supportedKinds": [
            {"group": GW_API, "kind": k} for k in kinds], "conditions": [
                condition(c, "True", c, message, gen, prev) for c, message in (
                    ("Accepted", "Listener has been successfully translated"),
                    ("Programmed", "Sending translated listener configuration to the data plane"),
                    ("ResolvedRefs", "Listener has been successfully translated"))]})
    status = {**old, "addresses": [{"type": "IPAddress", "value": address}], "conditions": [
        condition("Accepted", "True", "Accepted", "The Gateway has been scheduled by Envoy Gateway", gen,
                  old.get("conditions")),
        condition("Programmed", "True", "Programmed", "Address assigned to the Gateway, 1/1 envoy replicas available",
                  gen, old.get("conditions"))]}
    status.pop("listeners", None)
    return {**status, "listeners": listeners} if listeners else status


def hostnames_meet(listener_host: str | None, route_hosts: list[str]) -> bool:
    """Whether a listener's hostname and a route's hostnames intersect (either side may be a `*.` wildcard)."""
    def covers(pattern: str, host: str) -> bool:
        return host == pattern or (pattern.startswith("*.") and host.endswith(pattern[1:]))

    return not listener_host or not route_hosts or any(
        covers(listener_host, h) or covers(h, listener_host) for h in route_hosts)


def route_resolved(route: dict[str, Any], backends: set[tuple[str, str, str, str]],
                   backend_kinds: set[tuple[str, str]]) -> tuple[str, str, str]:
    """The ResolvedRefs condition of an HTTPRoute: every backendRef names an existing Service (or a kind the release
    lists in extensionManager.backendResources) in the route's namespace. ReferenceGrants are not modelled."""
    ns = route["metadata"]["namespace"]
    for r, rule in enumerate((route.get("spec") or {}).get("rules") or []):
        for b, ref in enumerate(rule.get("backendRefs") or []):
            group, kind, name = ref.get("group", ""), ref.get("kind", "Service"), ref.get("name")
            where = f"Failed to process route rule {r} backendRef {b}"
            if ref.get("namespace", ns) != ns:
                return "False", "RefNotPermitted", (f"{where}: backendRef {name} in namespace {ref['namespace']} "
                                                    "is not permitted by any ReferenceGrant.")
            if (group, kind) not in backend_kinds:
                return "False", "InvalidKind", f"{where}: {kind} is not a supported backend kind."
            if (group, kind, ns, name) not in backends:
                return "False", "BackendNotFound", f"{where}: {kind.lower()} {ns}/{name} not found."
    return "True", "ResolvedRefs", "Resolved all the Object references for the Route"


def route_parents(route: dict[str, Any], gateways: dict[tuple[str, str], dict[str, Any]],
                  ns_labels: dict[str, dict[str, str]], resolved: tuple[str, str, str],
                  ) -> tuple[list[dict[str, Any]], list[tuple[str, str, str]]]:
    """Envoy Gateway's `status.parents` for an HTTPRoute, and the (ns, gateway, listener) it is accepted on.

    Each parentRef naming one of `gateways` (ours) gets an entry; entries of other controllers are kept. The route
    attaches to the listeners the parentRef selects (sectionName, port) that take HTTP, admit its namespace
    (allowedRoutes.namespaces.from Same/All/Selector) and share a hostname with it."""
    meta, spec = route["metadata"], route.get("spec") or {}
    ns, gen = meta["namespace"], meta.get("generation")
    old = (route.get("status") or {}).get("parents") or []
    parents = [p for p in old if p.get("controllerName") != EG_CONTROLLER]
    attached: list[tuple[str, str, str]] = []
    for ref in spec.get("parentRefs") or []:
        key = (ref.get("namespace", ns), ref.get("name"))
        if (ref.get("group", GW_API), ref.get("kind", "Gateway")) != (GW_API, "Gateway") or key not in gateways:
            continue
        listeners = [ls for ls in (gateways[key].get("spec") or {}).get("listeners") or []
                     if ref.get("sectionName") in (None, ls.get("name")) and ref.get("port") in (None, ls.get("port"))]
        allowed = []
        for listener in listeners:
            rule = (listener.get("allowedRoutes") or {}).get("namespaces") or {}
            origin = rule.get("from", "Same")
            if listener.get("protocol") in ("HTTP", "HTTPS") and (
                    origin == "All" or (origin == "Same" and ns == key[0])
                    or (origin == "Selector" and selector_matches(rule.get("selector") or {}, ns_labels.get(ns, {})))):
                allowed.append(listener)
        matching = [ls for ls in allowed if hostnames_meet(ls.get("hostname"), spec.get("hostnames") or [])]
        if not listeners:
            accepted = ("False", "NoMatchingParent", "No listeners match this parent ref.")
        elif not allowed:
            accepted = ("False", "NotAllowedByListeners",
                        "No listeners included by this parent ref allowed this attachment.")
        elif not matching:
            accepted = ("False", "NoMatchingListenerHostname", "There were no hostname intersections between the "
                                                               "HTTPRoute and this parent ref's Listener(s).")
        else:
            accepted = ("True", "Accepted", "Route is accepted")
            attached += [(key[0], key[1], ls.get("name")) for ls in matching]
        prev = next((p.get("conditions") for p in old
                     if p.get("controllerName") == EG_CONTROLLER and p.get("parentRef") == ref), None)
        parents.append({"parentRef": ref, "controllerName": EG_CONTROLLER, "conditions": [
            condition("Accepted", *accepted, gen, prev), condition("ResolvedRefs", *resolved, gen, prev)]})
    return parents, attached


# -- volumes


def volume_fits(pv: dict[str, Any], claim: dict[str, Any]) -> bool:
    """Whether the PV controller could bind this unclaimed, Available PV to the claim."""
    spec, want = pv.get("spec") or {}, claim.get("spec") or {}
    quantity = lambda text: float(parse_quantity(text or "0"))  # noqa: E731
    return (not spec.get("claimRef") and (pv.get("status") or {}).get("phase") == "Available"
            and (spec.get("storageClassName") or "") == (want.get("storageClassName") or "")
            and set(want.get("accessModes") or []) <= set(spec.get("accessModes") or [])
            and spec.get("volumeMode", "Filesystem") == want.get("volumeMode", "Filesystem")
            and quantity((spec.get("capacity") or {}).get("storage"))
            >= quantity(((want.get("resources") or {}).get("requests") or {}).get("storage")))


def volume_for(claim: dict[str, Any]) -> dict[str, Any]:
    """The PersistentVolume a provisioner makes for a claim: pre-bound (claimRef), so the PV controller binds it."""
    meta, spec = claim["metadata"], claim.get("spec") or {}
    name = f"pvc-{meta['uid']}"
    return {"apiVersion": "v1", "kind": "PersistentVolume", "metadata": {
        "name": name, "annotations": {"pv.kubernetes.io/provisioned-by": PROVISIONER}}, "spec": {
        "capacity": {"storage": ((spec.get("resources") or {}).get("requests") or {}).get("storage", "1Gi")},
        "accessModes": spec.get("accessModes") or ["ReadWriteOnce"], "persistentVolumeReclaimPolicy": "Delete",
        "storageClassName": spec.get("storageClassName") or "", "volumeMode": spec.get("volumeMode", "Filesystem"),
        "hostPath": {"path": f"/tmp/operator-double/{name}", "type": "DirectoryOrCreate"},
        "claimRef": {"apiVersion": "v1", "kind": "PersistentVolumeClaim", "namespace": meta["namespace"],
                     "name": meta["name"], "uid": meta["uid"]}}}


# ------------------------------------------------------------------------------------------------ the API


class ApiError(Exception):
    def __init__(self, status: int, message: str) -> None:
        super().__init__(f"{status}: {message}")
        self.status = status


class Api:
    """kube-apiserver through the `kubernetes` client's configuration and connection pool (JSON in and out)."""

    def __init__(self, kubeconfig: str) -> None:
        from kubernetes import client, config

        configuration = client.Configuration()
        config.load_kube_config(config_file=kubeconfig, client_configuration=configuration, persist_config=False)
        configuration.connection_pool_maxsize = 2 * len(WATCHED) + 8  # one connection per watch, and the passes'
        self.client = client.ApiClient(configuration)
        self.client.user_agent = AGENT

    def open(self, method: str, path: str, query: dict[str, Any] | None = None, body: Any = None,
             content_type: str = "application/json", timeout: float | tuple[float, float] = 15.0,
             accept: str = "application/json") -> Any:
        headers = {"Accept": accept, "Content-Type": content_type}
        _, url, headers, body, _ = self.client.param_serialize(
            method, path, query_params=list((query or {}).items()), header_params=headers, body=body,
            auth_settings=["BearerToken"])
        return self.client.call_api(method, url, headers, body, _request_timeout=timeout).response

    def request(self, method: str, path: str, **kwargs: Any) -> Any:
        resp = self.open(method, path, **kwargs)
        data = resp.data
        resp.release_conn()
        if resp.status >= 300:  # the body is a Status: its message says why
            raise ApiError(resp.status, re.sub(r'.*"message":"([^"]*)".*', r"\1", data[:1000].decode(errors="replace")))
        return json.loads(data) if data else None

    def get(self, res: Res, ns: str | None, name: str, accept: str = "application/json", **query: str
            ) -> dict[str, Any] | None:
        """The object (the list when `name` is ""), or None when it (or its resource: a CRD) does not exist."""
        try:
            return self.request("GET", res.path(ns, name), query=query, accept=accept)
        except ApiError as err:
            if err.status != 404:
                raise
            return None

    def list(self, res: Res, metadata_only: bool = False, **query: str) -> list[dict[str, Any]]:
        """Every object (all namespaces), or only their metadata; none while the resource is not served."""
        accept = f"{METADATA_ONLY}List,application/json" if metadata_only else "application/json"
        return (self.get(res, None, "", accept, **query) or {}).get("items", [])

    def watch(self, res: Res, resource_version: str | None, timeout: int) -> Iterator[dict[str, Any]]:
        query = {"watch": "1", "timeoutSeconds": str(timeout), "allowWatchBookmarks": "true"}
        resp = self.open("GET", res.path(), query={**query, **({"resourceVersion": resource_version}
                                                                if resource_version else {})},
                         timeout=(5.0, timeout + 10.0), accept=METADATA_ONLY)
        try:
            if resp.status >= 300:
                raise ApiError(resp.status, resp.data[:200].decode(errors="replace"))
            buffer = b""
            for chunk in resp.stream(None, decode_content=False):
                buffer += chunk
                *lines, buffer = buffer.split(b"\n")
                yield from (json.loads(line) for line in lines if line.strip())
        finally:
            resp.release_conn()


# ------------------------------------------------------------------------------------------------ reconciling


def live(items: list[dict[str, Any]]) -> list[dict[str, Any]]:
    """The objects not being deleted (a controller leaves those to their finalizers)."""
    return [o for o in items if not o["metadata"].get("deletionTimestamp")]


def _ref(res: Res, obj: dict[str, Any]) -> str:
    meta = obj["metadata"]
    return f"{res.plural} {meta.get('namespace') + '/' if meta.get('namespace') else ''}{meta['name']}"


class Double:
    """One reconcile pass (`reconcile()`) over everything the double stands in for. Not thread-safe: one caller."""

    def __init__(self, api: Api) -> None:
        self.api = api
        self.writes = 0
        self.failed = False  # a write failed during the last pass: try again soon
        self.extra_watches: set[Res] = set()  # backend kinds the Envoy Gateway release names
        self._releases: dict[tuple[str, str], tuple[str, dict[str, Any]] | None] = {}
        self._terminating: set[str] = set()

    # -- writes: each logs one line, counts, and never aborts the pass
    def _write(self, what: str, res: Res, obj: dict[str, Any], method: str, path: str, body: Any,
               content_type: str = "application/json", note: str = "") -> dict[str, Any] | None:
        if obj["metadata"].get("namespace") in self._terminating:
            return None  # the namespace is going away: creates would be refused, statuses are moot
        try:
            out = self.api.request(method, path, query={"fieldManager": AGENT}, body=body, content_type=content_type)
        except ApiError as err:
            if err.status != 404:  # 404: deleted meanwhile (or its CRD was); nothing to retry
                self.failed = True
            log.warning("%s %s failed: %s", what, _ref(res, obj), err)
            return None
        self.writes += 1
        log.info("%s %s%s", what, _ref(res, obj), note)
        return out

    def set_status(self, res: Res, obj: dict[str, Any], status: dict[str, Any], note: str = "") -> dict[str, Any]:
        """Write `status` through the status subresource when it differs; the object as it is then."""
        old = obj.get("status") or {}
        if status == old:
            return obj
        meta = obj["metadata"]
        out = self._write("status", res, obj, "PATCH", res.path(meta.get("namespace"), meta["name"], "status"),
                          {"status": merge_patch(old, status)}, "application/merge-patch+json", note)
        if out is not None and out.get("status") != status:
            log.warning("the API stored another status than written for %s: the next pass will write again",
                        _ref(res, obj))
        return out or obj

    def set_condition(self, res: Res, obj: dict[str, Any], kind: str, status: str, reason: str, message: str,
                      **fields: Any) -> dict[str, Any]:
        """`set_status` with the one condition `kind` (and `fields`) replacing those in the object's status."""
        old = obj.get("status") or {}
        return self.set_status(res, obj, {**old, **fields, "conditions": [condition(
            kind, status, reason, message, obj["metadata"].get("generation"), old.get("conditions"))]},
            f" {kind}={status}")

    def apply(self, res: Res, current: dict[str, Any] | None, body: dict[str, Any], note: str = "") -> bool:
        """Create `body`, or merge-patch it when one of its labels, annotations, ownerReferences or data keys differs
        (other keys are left as they are). False when the write failed."""
        meta, path = body["metadata"], res.path(body["metadata"].get("namespace"))
        if current is None:
            return self._write("create", res, body, "POST", path, body, note=note) is not None
        now_meta, refs = current["metadata"], current["metadata"].get("ownerReferences") or []
        if (all((now_meta.get(k) or {}).get(n) == v for k in ("labels", "annotations")
                for n, v in meta.get(k, {}).items())
                and all(r in refs for r in meta.get("ownerReferences") or [])
                and all((current.get("data") or {}).get(n) == v for n, v in (body.get("data") or {}).items())):
            return True
        patch = {"metadata": {k: meta[k] for k in ("labels", "annotations", "ownerReferences") if k in meta},
                 "data": body.get("data") or {}}
        return self._write("update", res, body, "PATCH", f"{path}/{meta['name']}", patch,
                           "application/merge-patch+json", note) is not None

    # -- the pass
    def releases(self) -> dict[str, tuple[str, dict[str, Any]]]:
        """chart name -> (release namespace, values) of the deployed Helm releases (decoded once per version)."""
        seen: dict[tuple[str, str], tuple[str, dict[str, Any]] | None] = {}
        for item in self.api.list(SECRETS, metadata_only=True, labelSelector="owner=helm,status=deployed",
                                  fieldSelector="type=helm.sh/release.v1"):
            meta = item["metadata"]
            key = (meta["uid"], meta["resourceVersion"])
            if key not in self._releases:  # a release Secret may be megabytes: read it only when it changed
                release = decode_release(self.api.get(SECRETS, meta["namespace"], meta["name"]) or {}) or {}
                chart = ((release.get("chart") or {}).get("metadata") or {}).get("name")
                self._releases[key] = (chart, {"namespace": meta["namespace"],
                                               "config": release.get("config") or {}}) if chart else None
            seen[key] = self._releases[key]
        self._releases = seen
        return {chart: (info["namespace"], info["config"]) for chart, info in filter(None, seen.values())}

    def reconcile(self) -> int:
        """One pass; returns how many writes it made."""
        before, self.failed = self.writes, False
        namespaces = self.api.list(NAMESPACES)
        self._terminating = {n["metadata"]["name"] for n in namespaces if n["metadata"].get("deletionTimestamp")}
        releases = self.releases()
        services = self.api.list(SERVICES)
        self.load_balancers(services)
        self.volumes()
        if CHARTS["cert-manager"] in releases:
            self.cert_manager(*releases[CHARTS["cert-manager"]])
        if CHARTS["trust-manager"] in releases:
            self.trust_manager(releases[CHARTS["trust-manager"]][1], namespaces)
        if CHARTS["envoy-gateway"] in releases:
            self.envoy_gateway(releases[CHARTS["envoy-gateway"]][1], namespaces, services)
        return self.writes - before

    def load_balancers(self, services: list[dict[str, Any]]) -> None:
        """LoadBalancer IPAM: one stable address from LB_POOL per Service of type LoadBalancer."""
        taken = {i.get("ip") for s in services for i in ((s.get("status") or {}).get("loadBalancer") or {}).get(
            "ingress") or []}
        for svc in sorted(services, key=lambda s: (s["metadata"]["namespace"], s["metadata"]["name"])):
            old = svc.get("status") or {}
            ips = [i.get("ip") for i in (old.get("loadBalancer") or {}).get("ingress") or []]
            if (svc.get("spec") or {}).get("type") == "LoadBalancer" and not svc["metadata"].get("deletionTimestamp"):
                ip = ips[0] if len(ips) == 1 and ips[0] in LB_POOL else lb_address(
                    f"{svc['metadata']['namespace']}/{svc['metadata']['name']}", taken)
                taken.add(ip)
                self.set_status(SERVICES, svc, {**old, "loadBalancer": {"ingress": [{"ip": ip, "ipMode": "VIP"}]}},
                                f" loadBalancer {ip}")
            elif any(ip in LB_POOL for ip in ips):  # no longer a LoadBalancer: the address goes back
                self.set_status(SERVICES, svc, {**old, "loadBalancer": {}}, " loadBalancer released")

    def volumes(self) -> None:
        """A dynamic provisioner: a PV pre-bound to each claim left Pending (kube-controller-manager binds them), and
        the deletion of its PVs once Released. Claims with storageClassName "" (static binding only), a selector,
        a volumeName, a matching Available PV, or a WaitForFirstConsumer class and no selected node are left."""
        claims = [c for c in live(self.api.list(PVCS)) if (c.get("status") or {}).get("phase", "Pending") == "Pending"]
        pvs = self.api.list(PVS)
        for pv in live(pvs):
            if ((pv["metadata"].get("annotations") or {}).get("pv.kubernetes.io/provisioned-by") == PROVISIONER
                    and (pv.get("status") or {}).get("phase") == "Released"
                    and (pv.get("spec") or {}).get("persistentVolumeReclaimPolicy") == "Delete"):
                self._write("delete", PVS, pv, "DELETE", PVS.path(None, pv["metadata"]["name"]), None,
                            note=" (Released)")
        if not claims:
            return
        classes = {c["metadata"]["name"]: c for c in self.api.list(CLASSES)}
        bound_to = {((pv.get("spec") or {}).get("claimRef") or {}).get("uid") for pv in pvs}
        for claim in claims:
            spec, meta = claim.get("spec") or {}, claim["metadata"]
            sc = classes.get(spec.get("storageClassName") or "") or {}
            if (spec.get("storageClassName") == "" or spec.get("selector") or spec.get("volumeName")
                    or meta["uid"] in bound_to or any(volume_fits(pv, claim) for pv in pvs)
                    or (sc.get("volumeBindingMode") == "WaitForFirstConsumer"
                        and "volume.kubernetes.io/selected-node" not in (meta.get("annotations") or {}))):
                continue
            self._write("create", PVS, volume_for(claim), "POST", PVS.path(), volume_for(claim),
                        note=f" for claim {meta['namespace']}/{meta['name']}")

    # -- cert-manager
    def cert_manager(self, release_ns: str, values: dict[str, Any]) -> None:
        """Issuers (selfSigned, ca) Ready; Certificates get their kubernetes.io/tls Secret and Ready."""
        cluster_ns = values.get("clusterResourceNamespace") or release_ns  # where ClusterIssuers read CA Secrets
        issuers: dict[tuple[str, str | None, str], dict[str, Any]] = {}
        for kind, res in (("ClusterIssuer", CLUSTER_ISSUERS), ("Issuer", ISSUERS)):
            for issuer in self.api.list(res):
                meta, spec = issuer["metadata"], issuer.get("spec") or {}
                ns = meta.get("namespace") or cluster_ns
                ca = load_key_pair(self.api.get(SECRETS, ns, (spec.get("ca") or {}).get("secretName", ""))
                                   ) if "ca" in spec and (spec["ca"] or {}).get("secretName") else None
                ready = issuer_ready(spec, ca)
                if ready and not meta.get("deletionTimestamp"):
                    issuer = self.set_condition(res, issuer, "Ready", *ready)
                issuers[(kind, meta.get("namespace"), meta["name"])] = {**issuer, "ca": ca}
        for cert in live(self.api.list(CERTIFICATES)):
            self.certificate(cert, issuers)

    def certificate(self, cert: dict[str, Any], issuers: dict[tuple[str, str | None, str], dict[str, Any]]) -> None:
        meta, spec = cert["metadata"], cert.get("spec") or {}
        ns, status = meta["namespace"], cert.get("status") or {}
        ref = spec.get("issuerRef") or {}
        kind = ref.get("kind") or "Issuer"
        if (ref.get("group") or CM) != CM or not spec.get("secretName"):
            return  # an external issuer's (or invalid): not cert-manager's to sign
        issuer = issuers.get((kind, ns if kind == "Issuer" else None, ref.get("name", "")))
        if issuer is None or not is_true(issuer, "Ready"):
            if issuer is not None and issuer_ready(issuer.get("spec") or {}, None) is None:
                return  # ACME, Vault, ...: not simulated
            what = f'{kind} "{ref.get("name")}"' + (" not found" if issuer is None else " is not ready")
            self.set_condition(CERTIFICATES, cert, "Ready", "False", "IssuerNotReady", what)
            return
        digest = spec_digest(spec, issuer.get("spec") or {})
        secret = self.api.get(SECRETS, ns, spec["secretName"])
        crt = base64.b64decode(((secret or {}).get("data") or {}).get("tls.crt", ""))
        times, revision = None, status.get("revision") or 1
        if ((secret or {}).get("metadata", {}).get("annotations") or {}).get(DIGEST) == digest:
            with contextlib.suppress(ValueError):  # someone else's bytes: issue again
                times = certificate_times(crt, spec)
        if times is None:  # missing, made from another spec or issuer, or unreadable: (re-)issue
            crt, key, ca_crt = issue_certificate(spec, issuer["ca"] if "ca" in (issuer.get("spec") or {}) else None)
            template = spec.get("secretTemplate") or {}
            annotations = {**(template.get("annotations") or {}), f"{CM}/certificate-name": meta["name"],
                           f"{CM}/issuer-name": ref.get("name", ""), f"{CM}/issuer-kind": kind,
                           f"{CM}/issuer-group": CM, f"{CM}/common-name": spec.get("commonName", ""),
                           f"{CM}/alt-names": ",".join(spec.get("dnsNames") or []), DIGEST: digest}
            body = {"apiVersion": "v1", "kind": "Secret", "type": "kubernetes.io/tls", "metadata": {
                "name": spec["secretName"], "namespace": ns, "annotations": annotations,
                "labels": {**(template.get("labels") or {}), "controller.cert-manager.io/fao": "true"}},
                "data": {k: base64.b64encode(v).decode() for k, v in (("tls.crt", crt), ("tls.key", key),
                                                                         ("ca.crt", ca_crt))}}
            if not self.apply(SECRETS, secret, body, f" (issued for Certificate {ns}/{meta['name']})"):
                return
            times, revision = certificate_times(crt, spec), (status.get("revision") or 0) + 1
        self.set_condition(CERTIFICATES, cert, "Ready", "True", "Ready",
                           "Certificate is up to date and has not expired", **times, revision=revision)

    # -- trust-manager
    def trust_manager(self, values: dict[str, Any], namespaces: list[dict[str, Any]]) -> None:
        """Each Bundle's sources (secret/configMap keys in the trust namespace, inLine) concatenated into a ConfigMap
        named after it in every namespace its target.namespaceSelector matches; Synced (False on a missing source)."""
        trust_ns = ((values.get("app") or {}).get("trust") or {}).get("namespace") or "cert-manager"
        for bundle in live(self.api.list(BUNDLES)):
            meta, spec = bundle["metadata"], bundle.get("spec") or {}
            pems, missing = [], None
            for source in spec.get("sources") or []:
                if "inLine" in source:
                    pems.append(source["inLine"].strip())
                elif "secret" in source or "configMap" in source:
                    res, ref = (SECRETS, source["secret"]) if "secret" in source else (CONFIGMAPS, source["configMap"])
                    data = ((self.api.get(res, trust_ns, ref.get("name", "")) or {}).get("data") or {})
                    if ref.get("key") not in data:
                        kind = "Secret" if res is SECRETS else "ConfigMap"
                        missing = f'{kind} "{trust_ns}/{ref.get("name")}" key "{ref.get("key")}" not found'
                        continue
                    value = data[ref["key"]]
                    pems.append((base64.b64decode(value).decode() if res is SECRETS else value).strip())
            if missing:
                self.set_condition(BUNDLES, bundle, "Synced", "False", "SourceNotFound", missing)
                continue
            target = spec.get("target") or {}
            key, selector = (target.get("configMap") or {}).get("key"), target.get("namespaceSelector") or {}
            owner = {"apiVersion": BUNDLES.prefix[6:], "kind": "Bundle", "name": meta["name"], "uid": meta["uid"],
                     "controller": True, "blockOwnerDeletion": True}
            for ns in namespaces:
                name = ns["metadata"]["name"]
                if key and name not in self._terminating and selector_matches(selector, ns["metadata"].get("labels")
                                                                              or {}):
                    self.apply(CONFIGMAPS, self.api.get(CONFIGMAPS, name, meta["name"]), {
                        "apiVersion": "v1", "kind": "ConfigMap", "data": {key: "\n".join(pems) + "\n"},
                        "metadata": {"name": meta["name"], "namespace": name, "ownerReferences": [owner],
                                     "labels": {"trust.cert-manager.io/bundle": meta["name"]}}},
                        f" (Bundle {meta['name']})")
            self.set_condition(BUNDLES, bundle, "Synced", "True", "Synced",
                               "Successfully synced Bundle to all namespaces")

    # -- Envoy Gateway
    def envoy_gateway(self, values: dict[str, Any], namespaces: list[dict[str, Any]],
                      services: list[dict[str, Any]]) -> None:
        """GatewayClasses of Envoy Gateway's controllerName Accepted; their Gateways Accepted/Programmed with an
        address and listener status; HTTPRoutes' parent status and the listeners' attachedRoutes."""
        classes = set()
        for gc in self.api.list(GATEWAY_CLASSES):
            if (gc.get("spec") or {}).get("controllerName") == EG_CONTROLLER:
                classes.add(gc["metadata"]["name"])
                self.set_condition(GATEWAY_CLASSES, gc, "Accepted", "True", "Accepted", "Valid GatewayClass")
        gateways = {(g["metadata"]["namespace"], g["metadata"]["name"]): g for g in live(self.api.list(GATEWAYS))
                    if (g.get("spec") or {}).get("gatewayClassName") in classes}
        extension = ((values.get("config") or {}).get("envoyGateway") or {}).get("extensionManager") or {}
        backend_kinds, backends = {("", "Service")}, {("", "Service", s["metadata"]["namespace"], s["metadata"]["name"])
                                                      for s in services}
        for kind in extension.get("backendResources") or []:
            res = Res(f"/apis/{kind.get('group')}/{kind.get('version')}", kind.get("kind", "").lower() + "s")
            self.extra_watches.add(res)
            backend_kinds.add((kind.get("group", ""), kind.get("kind")))
            backends |= {(kind.get("group", ""), kind.get("kind"), o["metadata"]["namespace"], o["metadata"]["name"])
                         for o in self.api.list(res)}
        ns_labels = {n["metadata"]["name"]: n["metadata"].get("labels") or {} for n in namespaces}
        attached: dict[tuple[str, str], dict[str, int]] = {}
        for route in live(self.api.list(HTTP_ROUTES)):
            parents, on = route_parents(route, gateways, ns_labels, route_resolved(route, backends, backend_kinds))
            for ns, gw, listener in on:
                attached.setdefault((ns, gw), {}).setdefault(listener, 0)
                attached[(ns, gw)][listener] += 1
            if parents != ((route.get("status") or {}).get("parents") or []):
                self.set_status(HTTP_ROUTES, route, {**(route.get("status") or {}), "parents": parents}, " parents")
        for key, gateway in gateways.items():
            self.set_status(GATEWAYS, gateway, gateway_status(gateway, attached.get(key, {}), GATEWAY_ADDRESS),
                            " Programmed=True")


# ------------------------------------------------------------------------------------------------ the process


class Runner:
    """Watch threads mark the double dirty; the main loop runs a pass shortly after (or every RESYNC seconds)."""

    def __init__(self, api: Api) -> None:
        self.api, self.double = api, Double(api)
        self.stop, self.dirty = threading.Event(), threading.Event()
        self.crds = threading.Condition()  # notified on every CRD event: resources appear and disappear
        self.crd_events, self.crd_names = 0, set[str]()  # CustomResourceDefinitions that exist
        self.watching: set[Res] = set()

    def shutdown(self) -> None:
        self.stop.set()
        self.dirty.set()
        with self.crds:
            self.crds.notify_all()

    def watch(self, res: Res) -> None:
        if res not in self.watching:
            self.watching.add(res)
            threading.Thread(target=self._watch, args=(res,), name=f"watch {res.plural}", daemon=True).start()

    def _watch(self, res: Res) -> None:
        version, failing = None, False
        while not self.stop.is_set():
            seen = self.crd_events
            try:
                for event in self.api.watch(res, version, timeout=50):
                    if event.get("type") == "ERROR":  # 410 Gone: the version is too old; start afresh
                        version = None
                        break
                    version = ((event.get("object") or {}).get("metadata") or {}).get("resourceVersion") or version
                    if event.get("type") != "BOOKMARK":
                        self.dirty.set()
                    if res is CRDS and event.get("type") in ("ADDED", "MODIFIED", "DELETED"):
                        with self.crds:
                            name = event["object"]["metadata"]["name"]
                            (self.crd_names.discard if event["type"] == "DELETED" else self.crd_names.add)(name)
                            self.crd_events += 1
                            self.crds.notify_all()
                failing = False
            except ApiError as err:
                version = None
                if err.status == 404 and f"{res.plural}.{res.prefix.split('/')[2]}" in self.crd_names:
                    self.stop.wait(CRD_POLL)  # its CRD exists: the API serves it within a second or so
                elif err.status == 404:  # not served: wait until a CRD changes (or a while)
                    with self.crds:
                        self.crds.wait_for(lambda s=seen: self.crd_events != s or self.stop.is_set(), timeout=30.0)
                else:
                    self.stop.wait(RETRY)
            except Exception as err:  # the connection dropped (the API restarting?): once per streak
                (log.debug if failing else log.warning)("watch of %s interrupted: %r", res.plural, err)
                failing = True
                self.stop.wait(RETRY)

    def run(self) -> None:
        for res in WATCHED:
            self.watch(res)
        broken = False  # the last pass failed as a whole (the API unreachable?): say so once per streak
        while not self.stop.is_set():
            self.dirty.wait(RESYNC)
            if self.stop.wait(DEBOUNCE):
                break
            self.dirty.clear()
            try:
                self.double.reconcile()
                broken = False
            except Exception as err:
                (log.debug if broken else log.warning)("pass failed: %r", err)
                broken = self.double.failed = True
            for res in self.double.extra_watches:
                self.watch(res)
            if self.double.failed:
                retry = threading.Timer(RETRY, self.dirty.set)
                retry.daemon = True
                retry.start()


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--kubeconfig", required=True, help="the cluster's kubeconfig")
    parser.add_argument("--verbose", action="store_true", help="debug logging (watch reconnections...)")
    args = parser.parse_args(argv)
    logging.basicConfig(level=logging.DEBUG if args.verbose else logging.INFO, stream=sys.stderr,
                        format="%(asctime)s operator-double %(levelname)s %(message)s")
    logging.getLogger("urllib3").setLevel(logging.ERROR)
    logging.getLogger("kubernetes").setLevel(logging.WARNING)  # its debug lines would show request bodies
    runner = Runner(Api(args.kubeconfig))
    for sig in (signal.SIGTERM, signal.SIGINT):
        signal.signal(sig, lambda *_: runner.shutdown())
    log.info("started (a TEST DOUBLE of cert-manager, trust-manager, Envoy Gateway, LB IPAM, a provisioner)")
    runner.run()
    log.info("stopped after %d writes", runner.double.writes)
    return 0


if __name__ == "__main__":
    sys.exit(main())
