"""Simulated controllers: what cert-manager, trust-manager, Envoy Gateway and the built-in workload
controllers would write back, so readiness waits can be tested without a real cluster.

Two ways in:
- the Python API (`Controllers.mark_*`), which tests call explicitly;
- automatic mode (`--simulate-controllers`): a background thread reconciles after writes, but only
  for products whose Helm release is deployed (a `helm.sh/release.v1` Secret labelled `owner=helm`,
  `status=deployed`). Nothing else is touched: no fake readiness for products not installed.
  The built-in workload controllers (Deployments, DaemonSets, StatefulSets, Jobs) always run; with
  `ready_after` seconds they report a workload ready only that long after its spec last changed, the
  way image pulls and container starts delay a real rollout.
"""

from __future__ import annotations

import base64
import copy
import datetime as dt
import gzip
import hashlib
import json
import threading
import time
from typing import Any

from cryptography import x509
from cryptography.hazmat.primitives import hashes, serialization
from cryptography.hazmat.primitives.asymmetric import ec, rsa
from cryptography.x509.oid import NameOID

from .store import APIError, Cluster, now

# The upstream charts whose controllers are simulated (chart names as their Helm releases record them).
CERT_MANAGER_CHART = "cert-manager"
TRUST_MANAGER_CHART = "trust-manager"
ENVOY_GATEWAY_CHART = "gateway-helm"
ENVOY_GATEWAY_CONTROLLER = "gateway.envoyproxy.io/gatewayclass-controller"
GATEWAY_ADDRESS = "203.0.113.10"  # TEST-NET-3: never routable
LB_ADDRESS = "203.0.113.20"
CM = "cert-manager.io"
WORKLOAD_KINDS = ("Deployment", "StatefulSet", "DaemonSet")
# Kinds whose readiness `ready_after` delays (the apps/v1 workloads, and batch/v1 Jobs).
DELAYED_KINDS = frozenset((*WORKLOAD_KINDS, "Job"))
IDLE_POLL = 0.2  # seconds between checks of the stop flag when nothing is pending


def _b64(data: bytes) -> str:
    return base64.b64encode(data).decode()


def decode_release(secret: dict[str, Any]) -> dict[str, Any] | None:
    """The Helm release JSON of a `helm.sh/release.v1` Secret (base64 of base64(gzip(JSON)))."""
    raw = (secret.get("data") or {}).get("release")
    if not raw:
        return None
    try:
        inner = base64.b64decode(base64.b64decode(raw))
        if inner[:2] == b"\x1f\x8b":
            inner = gzip.decompress(inner)
        return json.loads(inner)
    except (ValueError, OSError):
        return None


def _condition(kind: str, status: str, reason: str, message: str, generation: int | None = None,
               old: list[dict[str, Any]] | None = None) -> dict[str, Any]:
    previous = next((c for c in old or [] if c.get("type") == kind), None)
    stamp = previous["lastTransitionTime"] if previous and previous.get("status") == status else now()
    out = {"type": kind, "status": status, "reason": reason, "message": message, "lastTransitionTime": stamp}
    if generation is not None:
        out["observedGeneration"] = generation
    return out


def _has_condition(status: dict[str, Any], kind: str) -> bool:
    return any(c.get("type") == kind and c.get("status") == "True" for c in status.get("conditions") or [])


def _workload_available(obj: dict[str, Any], kind: str) -> bool:
    """Whether the status already reports every replica ready for the current spec (written by a pass or a test)."""
    spec, status = obj.get("spec") or {}, obj.get("status") or {}
    if status.get("observedGeneration") != obj["metadata"].get("generation"):
        return False
    if kind == "DaemonSet":
        return status.get("numberReady", 0) >= status.get("desiredNumberScheduled", 1) > 0
    replicas = spec.get("replicas", 1)
    return replicas > 0 and status.get("readyReplicas", 0) >= replicas


def _statefulset_revision(name: str, spec: dict[str, Any]) -> str:
    return f"{name}-{hashlib.sha256(json.dumps(spec, sort_keys=True).encode()).hexdigest()[:10]}"


# ---------------------------------------------------------------- certificates


def _key(algorithm: str | None) -> Any:
    if (algorithm or "").upper() == "RSA":
        return rsa.generate_private_key(public_exponent=65537, key_size=2048)
    return ec.generate_private_key(ec.SECP256R1())


def issue_certificate(spec: dict[str, Any], ca: tuple[Any, Any] | None) -> tuple[bytes, bytes, bytes]:
    """(tls.crt, tls.key, ca.crt) PEM for a Certificate spec; self-signed when `ca` is None."""
    key = _key((spec.get("privateKey") or {}).get("algorithm"))
    common = spec.get("commonName") or (spec.get("dnsNames") or ["standin"])[0]
    subject = x509.Name([x509.NameAttribute(NameOID.COMMON_NAME, common[:64])])
    start = dt.datetime.now(dt.UTC) - dt.timedelta(minutes=1)
    builder = (x509.CertificateBuilder().subject_name(subject).public_key(key.public_key())
               .serial_number(x509.random_serial_number()).not_valid_before(start)
               .not_valid_after(start + dt.timedelta(days=90)))
    is_ca = bool(spec.get("isCA"))
    builder = builder.add_extension(x509.BasicConstraints(ca=is_ca, path_length=None), critical=True)
    if is_ca:
        builder = builder.add_extension(x509.KeyUsage(
            digital_signature=True, key_cert_sign=True, crl_sign=True, content_commitment=False,
            key_encipherment=False, data_encipherment=False, key_agreement=False, encipher_only=False,
            decipher_only=False), critical=True)
    sans: list[x509.GeneralName] = [x509.DNSName(n) for n in spec.get("dnsNames") or []]
    if sans:
        builder = builder.add_extension(x509.SubjectAlternativeName(sans), critical=False)
    if ca is None:
        cert = builder.issuer_name(subject).sign(key, hashes.SHA256())
        ca_pem = cert.public_bytes(serialization.Encoding.PEM)
    else:
        ca_cert, ca_key = ca
        cert = builder.issuer_name(ca_cert.subject).sign(ca_key, hashes.SHA256())
        ca_pem = ca_cert.public_bytes(serialization.Encoding.PEM)
    key_pem = key.private_bytes(serialization.Encoding.PEM, serialization.PrivateFormat.PKCS8,
                                serialization.NoEncryption())
    return cert.public_bytes(serialization.Encoding.PEM), key_pem, ca_pem


class Controllers:
    """Controller simulation bound to one Cluster."""

    def __init__(self, cluster: Cluster, automatic: bool = False, ready_after: float = 0.0) -> None:
        if ready_after < 0:
            raise ValueError(f"ready_after must be >= 0 seconds, not {ready_after}")
        self.cluster = cluster
        self.automatic = automatic
        self.ready_after = float(ready_after)
        # uid -> (generation, time.monotonic() when that generation was written): when the spec last changed.
        self._spec_changed: dict[str, tuple[int | None, float]] = {}
        # The earliest time.monotonic() at which a delayed workload becomes ready (None: nothing pending).
        self._next_due: float | None = None
        self._dirty = threading.Event()
        self._stop = threading.Event()
        self._idle = threading.Event()
        self._idle.set()
        self._thread: threading.Thread | None = None
        self.reconciles = 0
        if automatic:
            cluster.hooks.append(self._on_event)
            self._thread = threading.Thread(target=self._loop, name="standin-controllers", daemon=True)
            self._thread.start()

    # ------------------------------------------------------------ plumbing

    def _on_event(self, kind: str, rt: Any, obj: dict[str, Any]) -> None:
        if rt.kind in DELAYED_KINDS:
            self._note_spec_change(kind, obj)
        self._idle.clear()
        self._dirty.set()

    def _note_spec_change(self, event: str, obj: dict[str, Any]) -> None:
        """Remember when a workload's spec (generation) last changed: its readiness delay counts from the write."""
        meta = obj["metadata"]
        if event == "DELETED":
            self._spec_changed.pop(meta["uid"], None)
            return
        seen = self._spec_changed.get(meta["uid"])
        if seen is None or seen[0] != meta.get("generation"):
            self._spec_changed[meta["uid"]] = (meta.get("generation"), time.monotonic())

    def _loop(self) -> None:
        while not self._stop.is_set():
            woken = self._dirty.wait(self._sleep_time())
            if self._stop.is_set():
                return
            if not woken and not self._delay_expired():
                continue
            self._idle.clear()
            self._dirty.clear()
            if woken:
                self._stop.wait(0.02)  # coalesce bursts of writes like a work queue would
            try:
                self.reconcile_all()
            except Exception:  # a simulation bug must not kill the thread; the next write retries
                import traceback

                traceback.print_exc()
            if not self._dirty.is_set():
                self._idle.set()

    def _sleep_time(self) -> float:
        """How long the loop may sleep: until the next readiness delay expires, which no write announces."""
        due = self._next_due
        if due is None:
            return IDLE_POLL
        return min(IDLE_POLL, max(0.0, due - time.monotonic()))

    def _delay_expired(self) -> bool:
        due = self._next_due
        return due is not None and time.monotonic() >= due

    def settle(self, timeout: float = 10.0) -> bool:
        """Wait until automatic reconciliation has caught up with every write.

        Readiness delays (`ready_after`) still pending are not waited for: their not-ready status is written.
        """
        return self._idle.wait(timeout)

    def stop(self) -> None:
        self._stop.set()
        self._dirty.set()

    def _type(self, api_version: str, kind: str) -> Any:
        return self.cluster.kind_type(api_version, kind)

    def _get(self, api_version: str, kind: str, name: str, ns: str | None = None) -> dict[str, Any] | None:
        rt = self._type(api_version, kind)
        if rt is None:
            return None
        try:
            return self.cluster.get(rt, ns, name)
        except APIError:
            return None

    def _list(self, api_version: str, kind: str) -> list[dict[str, Any]]:
        rt = self._type(api_version, kind)
        return [] if rt is None else self.cluster.list(rt, None)["items"]

    def _set_status(self, obj: dict[str, Any], status: dict[str, Any]) -> dict[str, Any]:
        rt = self._type(obj["apiVersion"], obj["kind"])
        if obj.get("status") == status:
            return obj
        body = copy.deepcopy(obj)
        body["status"] = status
        body["metadata"].pop("resourceVersion", None)
        meta = obj["metadata"]
        return self.cluster.update(rt, meta.get("namespace"), meta["name"], body, sub="status" if rt.status else None)

    def _put(self, api_version: str, kind: str, ns: str | None, body: dict[str, Any]) -> dict[str, Any]:
        """Create or update an object the way a controller would (only writing when it differs)."""
        rt = self._type(api_version, kind)
        name = body["metadata"]["name"]
        body = dict(body, apiVersion=api_version, kind=kind)
        try:
            current = self.cluster.get(rt, ns, name)
        except APIError:
            return self.cluster.create(rt, ns, body)
        merged = copy.deepcopy(current)
        for key, value in body.items():
            if key == "metadata":
                for mkey in ("labels", "annotations"):
                    if value.get(mkey):
                        merged["metadata"].setdefault(mkey, {}).update(value[mkey])
            else:
                merged[key] = value
        merged["metadata"].pop("resourceVersion", None)
        return self.cluster.update(rt, ns, name, merged)

    # ------------------------------------------------------------ product detection

    def releases(self) -> list[dict[str, Any]]:
        """Deployed Helm releases: [{name, namespace, chart}] from release Secrets."""
        rt = self.cluster.type_for("", "v1", "secrets")
        out = []
        for secret in self.cluster.list(rt, None, "owner=helm,status=deployed")["items"]:
            if secret.get("type") != "helm.sh/release.v1":
                continue
            release = decode_release(secret)
            chart = ((release or {}).get("chart") or {}).get("metadata", {}).get("name")
            if chart:
                out.append({"name": release.get("name"), "namespace": secret["metadata"]["namespace"],
                            "chart": chart, "config": release.get("config") or {}})
        return out

    def installed(self, chart: str) -> dict[str, Any] | None:
        return next((r for r in self.releases() if r["chart"] == chart), None)

    # ------------------------------------------------------------ automatic reconciliation

    def reconcile_all(self) -> None:
        with self.cluster.lock:
            self.reconciles += 1
            self._next_due = None  # recomputed below from the workloads still waiting
            cert_manager = self.installed(CERT_MANAGER_CHART)
            if cert_manager:
                for kind in ("ClusterIssuer", "Issuer"):
                    for issuer in self._list(f"{CM}/v1", kind):
                        self.mark_issuer_ready(issuer["metadata"]["name"], issuer["metadata"].get("namespace"),
                                               kind=kind, only_if_valid=True)
                for cert in self._list(f"{CM}/v1", "Certificate"):
                    self.mark_certificate_ready(cert["metadata"]["name"], cert["metadata"]["namespace"],
                                                only_if_valid=True)
            if self.installed(TRUST_MANAGER_CHART):
                for bundle in self._list("trust.cert-manager.io/v1alpha1", "Bundle"):
                    self.sync_bundle(bundle["metadata"]["name"])
            if self.installed(ENVOY_GATEWAY_CHART):
                for gc in self._list("gateway.networking.k8s.io/v1", "GatewayClass"):
                    if (gc.get("spec") or {}).get("controllerName") == ENVOY_GATEWAY_CONTROLLER:
                        self.mark_gatewayclass_accepted(gc["metadata"]["name"])
                ours = {gc["metadata"]["name"] for gc in self._list("gateway.networking.k8s.io/v1", "GatewayClass")
                        if (gc.get("spec") or {}).get("controllerName") == ENVOY_GATEWAY_CONTROLLER}
                for gw in self._list("gateway.networking.k8s.io/v1", "Gateway"):
                    if (gw.get("spec") or {}).get("gatewayClassName") in ours:
                        self.mark_gateway_programmed(gw["metadata"]["name"], gw["metadata"]["namespace"])
            # The built-in workload controllers and the kubelet are part of every cluster.
            for kind in WORKLOAD_KINDS:
                for obj in self._list("apps/v1", kind):
                    if not obj["metadata"].get("deletionTimestamp"):
                        self._reconcile_workload(obj, kind)
            for job in self._list("batch/v1", "Job"):
                if not job["metadata"].get("deletionTimestamp"):
                    self._reconcile_job(job)

    # ------------------------------------------------------------ readiness delay (ready_after)

    def _ready_at(self, obj: dict[str, Any]) -> float | None:
        """When `obj` may report ready (time.monotonic()), or None when it may now: `ready_after` after its spec
        last changed."""
        if self.ready_after <= 0:
            return None
        meta = obj["metadata"]
        seen = self._spec_changed.get(meta["uid"])
        if seen is None or seen[0] != meta.get("generation"):  # written before the hook saw it: count from now
            seen = (meta.get("generation"), time.monotonic())
            self._spec_changed[meta["uid"]] = seen
        due = seen[1] + self.ready_after
        return due if due > time.monotonic() else None

    def _schedule(self, due: float) -> None:
        """Wake the loop at `due`: no write will announce that a delay has expired."""
        self._next_due = due if self._next_due is None else min(self._next_due, due)

    def _reconcile_workload(self, obj: dict[str, Any], kind: str) -> None:
        name, ns = obj["metadata"]["name"], obj["metadata"]["namespace"]
        no_pods = kind != "DaemonSet" and (obj.get("spec") or {}).get("replicas", 1) == 0
        due = None if no_pods or _workload_available(obj, kind) else self._ready_at(obj)
        if due is None:  # also keeps a workload a test marked available explicitly
            self.mark_workload_available(name, ns, kind)
            return
        self._schedule(due)
        self.mark_workload_progressing(name, ns, kind)

    def _reconcile_job(self, job: dict[str, Any]) -> None:
        spec, status = job.get("spec") or {}, job.get("status") or {}
        # A suspended Job runs no pod; a finished one is never rewritten (completionTime would move).
        if spec.get("suspend") or _has_condition(status, "Complete") or _has_condition(status, "Failed"):
            return
        name, ns = job["metadata"]["name"], job["metadata"]["namespace"]
        due = self._ready_at(job)
        if due is None:
            self.mark_job_complete(name, ns)
            return
        self._schedule(due)
        self.mark_job_running(name, ns)

    # ------------------------------------------------------------ workloads and services

    def mark_workload_available(self, name: str, ns: str, kind: str = "Deployment") -> dict[str, Any]:
        obj = self._get("apps/v1", kind, name, ns)
        if obj is None:
            raise APIError(404, "NotFound", f'{kind.lower()}s.apps "{name}" not found')
        spec, gen = obj.get("spec") or {}, obj["metadata"].get("generation")
        old = (obj.get("status") or {}).get("conditions")
        if kind == "DaemonSet":
            status = {"currentNumberScheduled": 1, "desiredNumberScheduled": 1, "numberAvailable": 1,
                      "numberMisscheduled": 0, "numberReady": 1, "observedGeneration": gen,
                      "updatedNumberScheduled": 1}
        elif kind == "StatefulSet":
            replicas = spec.get("replicas", 1)
            revision = _statefulset_revision(name, spec)
            status = {"availableReplicas": replicas, "currentReplicas": replicas, "readyReplicas": replicas,
                      "replicas": replicas, "updatedReplicas": replicas, "observedGeneration": gen,
                      "currentRevision": revision, "updateRevision": revision, "collisionCount": 0}
        else:
            replicas = spec.get("replicas", 1)
            status = {"observedGeneration": gen, "replicas": replicas, "updatedReplicas": replicas,
                      "readyReplicas": replicas, "availableReplicas": replicas, "conditions": [
                          _condition("Available", "True", "MinimumReplicasAvailable",
                                     "Deployment has minimum availability.", old=old),
                          _condition("Progressing", "True", "NewReplicaSetAvailable",
                                     f'ReplicaSet "{name}" has successfully progressed.', old=old)]}
            for cond in status["conditions"]:
                cond["lastUpdateTime"] = cond["lastTransitionTime"]
            if replicas == 0:
                for key in ("readyReplicas", "availableReplicas"):
                    status.pop(key)
        return self._set_status(obj, status)

    def mark_workload_progressing(self, name: str, ns: str, kind: str = "Deployment") -> dict[str, Any]:
        """The status while pods start (`ready_after`): the spec is observed, its pods exist, none is ready yet.

        Zero counts are left out, as the Go types' `omitempty` does. An update makes every replica unready
        for the delay (no rolling-update overlap of old ready pods): simpler, and what the waits measure is
        the same, the time until the new pods are ready.
        """
        obj = self._get("apps/v1", kind, name, ns)
        if obj is None:
            raise APIError(404, "NotFound", f'{kind.lower()}s.apps "{name}" not found')
        spec, gen = obj.get("spec") or {}, obj["metadata"].get("generation")
        old_status = obj.get("status") or {}
        replicas = spec.get("replicas", 1)
        if kind == "DaemonSet":
            status = {"currentNumberScheduled": 1, "desiredNumberScheduled": 1, "numberMisscheduled": 0,
                      "numberReady": 0, "numberUnavailable": 1, "observedGeneration": gen,
                      "updatedNumberScheduled": 1}
        elif kind == "StatefulSet":
            revision = _statefulset_revision(name, spec)
            status = {"availableReplicas": 0, "currentReplicas": replicas, "replicas": replicas,
                      "updatedReplicas": replicas, "observedGeneration": gen,
                      "currentRevision": old_status.get("currentRevision") or revision, "updateRevision": revision,
                      "collisionCount": 0}
        else:
            old = old_status.get("conditions")
            status = {"observedGeneration": gen, "replicas": replicas, "updatedReplicas": replicas,
                      "unavailableReplicas": replicas, "conditions": [
                          _condition("Available", "False", "MinimumReplicasUnavailable",
                                     "Deployment does not have minimum availability.", old=old),
                          _condition("Progressing", "True", "ReplicaSetUpdated",
                                     f'ReplicaSet "{name}" is progressing.', old=old)]}
            for cond in status["conditions"]:
                cond["lastUpdateTime"] = cond["lastTransitionTime"]
        return self._set_status(obj, status)

    def mark_deployment_available(self, name: str, ns: str) -> dict[str, Any]:
        return self.mark_workload_available(name, ns, "Deployment")

    def mark_job_running(self, name: str, ns: str) -> dict[str, Any]:
        """The status of a Job whose pods run but have not finished yet (`ready_after`)."""
        obj = self._get("batch/v1", "Job", name, ns)
        if obj is None:
            raise APIError(404, "NotFound", f'jobs.batch "{name}" not found')
        spec = obj.get("spec") or {}
        active = min(spec.get("parallelism", 1), spec.get("completions") or spec.get("parallelism", 1))
        status = {"active": active, "ready": 0, "startTime": obj["metadata"]["creationTimestamp"]}
        return self._set_status(obj, status)

    def mark_job_complete(self, name: str, ns: str) -> dict[str, Any]:
        obj = self._get("batch/v1", "Job", name, ns)
        if obj is None:
            raise APIError(404, "NotFound", f'jobs.batch "{name}" not found')
        succeeded = (obj.get("spec") or {}).get("completions") or 1
        status = {"succeeded": succeeded, "active": 0, "ready": 0,
                  "startTime": obj["metadata"]["creationTimestamp"], "completionTime": now(), "conditions": [
                      _condition("SuccessCriteriaMet", "True", "CompletionsReached", "Reached expected number of "
                                 "succeeded pods"),
                      _condition("Complete", "True", "CompletionsReached", "Reached expected number of succeeded "
                                 "pods")]}
        return self._set_status(obj, status)

    def set_loadbalancer_ingress(self, name: str, ns: str, ip: str = LB_ADDRESS) -> dict[str, Any]:
        obj = self._get("v1", "Service", name, ns)
        if obj is None:
            raise APIError(404, "NotFound", f'services "{name}" not found')
        return self._set_status(obj, {"loadBalancer": {"ingress": [{"ip": ip, "ipMode": "VIP"}]}})

    # ------------------------------------------------------------ Gateway API / Envoy Gateway

    def mark_gatewayclass_accepted(self, name: str) -> dict[str, Any]:
        obj = self._get("gateway.networking.k8s.io/v1", "GatewayClass", name)
        if obj is None:
            raise APIError(404, "NotFound", f'gatewayclasses.gateway.networking.k8s.io "{name}" not found')
        gen = obj["metadata"].get("generation")
        old = (obj.get("status") or {}).get("conditions")
        status = dict(obj.get("status") or {})
        status["conditions"] = [_condition("Accepted", "True", "Accepted", "Valid GatewayClass", gen, old)]
        return self._set_status(obj, status)

    def mark_gateway_programmed(self, name: str, ns: str, address: str = GATEWAY_ADDRESS) -> dict[str, Any]:
        obj = self._get("gateway.networking.k8s.io/v1", "Gateway", name, ns)
        if obj is None:
            raise APIError(404, "NotFound", f'gateways.gateway.networking.k8s.io "{name}" not found')
        gen = obj["metadata"].get("generation")
        old_status = obj.get("status") or {}
        old = old_status.get("conditions")
        listeners = []
        for listener in (obj.get("spec") or {}).get("listeners") or []:
            prev = next((ls.get("conditions") for ls in old_status.get("listeners") or []
                         if ls.get("name") == listener.get("name")), None)
            kinds = [{"group": "gateway.networking.k8s.io", "kind": "HTTPRoute"},
                     {"group": "gateway.networking.k8s.io", "kind": "GRPCRoute"}]
            if listener.get("protocol") in ("TLS", "TCP", "UDP"):
                kinds = [{"group": "gateway.networking.k8s.io", "kind": f'{listener["protocol"]}Route'}]
            listeners.append({"name": listener.get("name"), "attachedRoutes": 0, "supportedKinds": kinds,
                              "conditions": [
                                  _condition("Accepted", "True", "Accepted", "Listener has been successfully "
                                             "translated", gen, prev),
                                  _condition("Programmed", "True", "Programmed", "Sending translated listener "
                                             "configuration to the data plane", gen, prev),
                                  _condition("ResolvedRefs", "True", "ResolvedRefs", "Listener has been successfully "
                                             "translated", gen, prev)]})
        status = {"addresses": [{"type": "IPAddress", "value": address}], "conditions": [
            _condition("Accepted", "True", "Accepted", "The Gateway has been scheduled by Envoy Gateway", gen, old),
            _condition("Programmed", "True", "Programmed", "Address assigned to the Gateway, 1/1 envoy replicas "
                       "available", gen, old)]}
        if listeners:
            status["listeners"] = listeners
        return self._set_status(obj, status)

    # ------------------------------------------------------------ cert-manager

    def _ca_secret_namespace(self, kind: str, ns: str | None) -> str:
        if kind == "ClusterIssuer":
            release = self.installed(CERT_MANAGER_CHART)
            return (release or {}).get("namespace") or "cert-manager"
        return ns or "default"

    def _load_ca(self, secret: dict[str, Any] | None) -> tuple[Any, Any] | None:
        data = (secret or {}).get("data") or {}
        try:
            cert = x509.load_pem_x509_certificate(base64.b64decode(data["tls.crt"]))
            key = serialization.load_pem_private_key(base64.b64decode(data["tls.key"]), password=None)
        except (KeyError, ValueError, TypeError):
            return None
        return cert, key

    def mark_issuer_ready(self, name: str, ns: str | None = None, kind: str = "Issuer",
                          only_if_valid: bool = False) -> dict[str, Any] | None:
        obj = self._get(f"{CM}/v1", kind, name, ns if kind == "Issuer" else None)
        if obj is None:
            raise APIError(404, "NotFound", f'{kind.lower()}s.{CM} "{name}" not found')
        spec = obj.get("spec") or {}
        gen = obj["metadata"].get("generation")
        old = (obj.get("status") or {}).get("conditions")
        ready = ("True", "IsReady", "")
        if "ca" in spec:
            secret_ns = self._ca_secret_namespace(kind, ns)
            secret = self._get("v1", "Secret", (spec["ca"] or {}).get("secretName", ""), secret_ns)
            if self._load_ca(secret) is None:
                ready = ("False", "ErrGetKeyPair", f"Error getting keypair for CA issuer: secret "
                                                   f"\"{(spec['ca'] or {}).get('secretName')}\" not found or invalid")
            else:
                ready = ("True", "KeyPairVerified", "Signing CA verified")
        elif "selfSigned" in spec:
            ready = ("True", "IsReady", "")
        elif only_if_valid:
            return None  # ACME, Vault, ... are not simulated
        status = {"conditions": [_condition("Ready", ready[0], ready[1], ready[2], gen, old)]}
        return self._set_status(obj, status)

    def mark_certificate_ready(self, name: str, ns: str, only_if_valid: bool = False) -> dict[str, Any] | None:
        cert = self._get(f"{CM}/v1", "Certificate", name, ns)
        if cert is None:
            raise APIError(404, "NotFound", f'certificates.{CM} "{name}" not found')
        spec = cert.get("spec") or {}
        ref = spec.get("issuerRef") or {}
        kind = ref.get("kind") or "Issuer"
        issuer = self._get(f"{CM}/v1", kind, ref.get("name", ""), ns if kind == "Issuer" else None)
        gen = cert["metadata"].get("generation")
        old = (cert.get("status") or {}).get("conditions")
        issuer_ready = any(c.get("type") == "Ready" and c.get("status") == "True"
                           for c in ((issuer or {}).get("status") or {}).get("conditions") or [])
        if issuer is None or not issuer_ready:
            if only_if_valid and issuer is not None and not (issuer.get("status") or {}):
                return None  # the issuer is reconciled first; come back on the next pass
            message = f'Issuer "{ref.get("name")}" not found' if issuer is None else f'Issuer "{ref.get("name")}" ' \
                                                                                     "is not ready"
            return self._set_status(cert, {"conditions": [_condition("Ready", "False", "IssuerNotReady", message,
                                                                     gen, old)]})
        digest = hashlib.sha256(json.dumps([spec, issuer.get("spec")], sort_keys=True).encode()).hexdigest()[:16]
        secret = self._get("v1", "Secret", spec.get("secretName", ""), ns)
        annotations = (secret or {}).get("metadata", {}).get("annotations") or {}
        if secret is None or annotations.get("standin.test/spec-digest") != digest:
            ca = None
            if "ca" in (issuer.get("spec") or {}):
                ca_ns = self._ca_secret_namespace(kind, ns)
                ca = self._load_ca(self._get("v1", "Secret", issuer["spec"]["ca"].get("secretName", ""), ca_ns))
            crt, key, ca_crt = issue_certificate(spec, ca)
            self._put("v1", "Secret", ns, {
                "metadata": {"name": spec["secretName"], "namespace": ns, "annotations": {
                    f"{CM}/certificate-name": name, f"{CM}/issuer-name": ref.get("name", ""),
                    f"{CM}/issuer-kind": kind, f"{CM}/issuer-group": ref.get("group") or CM,
                    f"{CM}/common-name": spec.get("commonName", ""),
                    f"{CM}/alt-names": ",".join(spec.get("dnsNames") or []),
                    "standin.test/spec-digest": digest},
                    "labels": {"controller.cert-manager.io/fao": "true"}},
                "type": "kubernetes.io/tls",
                "data": {"tls.crt": _b64(crt), "tls.key": _b64(key), "ca.crt": _b64(ca_crt)}})
            parsed = x509.load_pem_x509_certificate(crt)
            times = {"notBefore": parsed.not_valid_before_utc.strftime("%Y-%m-%dT%H:%M:%SZ"),
                     "notAfter": parsed.not_valid_after_utc.strftime("%Y-%m-%dT%H:%M:%SZ"),
                     "renewalTime": (parsed.not_valid_after_utc - dt.timedelta(days=30)).strftime(
                         "%Y-%m-%dT%H:%M:%SZ")}
            revision = ((cert.get("status") or {}).get("revision") or 0) + 1
        else:
            status = cert.get("status") or {}
            times = {k: status[k] for k in ("notBefore", "notAfter", "renewalTime") if k in status}
            revision = status.get("revision") or 1
        status = dict(times, revision=revision, conditions=[
            _condition("Ready", "True", "Ready", "Certificate is up to date and has not expired", gen, old)])
        return self._set_status(cert, status)

    # ------------------------------------------------------------ trust-manager

    def sync_bundle(self, name: str) -> dict[str, Any]:
        bundle = self._get("trust.cert-manager.io/v1alpha1", "Bundle", name)
        if bundle is None:
            raise APIError(404, "NotFound", f'bundles.trust.cert-manager.io "{name}" not found')
        release = self.installed(TRUST_MANAGER_CHART) or {}
        trust_ns = (((release.get("config") or {}).get("app") or {}).get("trust") or {}).get("namespace") \
            or "cert-manager"
        spec = bundle.get("spec") or {}
        gen = bundle["metadata"].get("generation")
        old = (bundle.get("status") or {}).get("conditions")
        pems: list[str] = []
        missing = None
        for source in spec.get("sources") or []:
            if "inLine" in source:
                pems.append(source["inLine"].strip())
            elif "secret" in source or "configMap" in source:
                kind = "Secret" if "secret" in source else "ConfigMap"
                ref = source.get("secret") or source.get("configMap") or {}
                obj = self._get("v1", kind, ref.get("name", ""), trust_ns)
                data = (obj or {}).get("data") or {}
                if obj is None or ref.get("key") not in data:
                    missing = f'{kind} "{trust_ns}/{ref.get("name")}" key "{ref.get("key")}" not found'
                    continue
                value = data[ref["key"]]
                pems.append((base64.b64decode(value).decode() if kind == "Secret" else value).strip())
        if missing:
            return self._set_status(bundle, {"conditions": [_condition("Synced", "False", "SourceNotFound",
                                                                       missing, gen, old)]})
        target = (spec.get("target") or {}).get("configMap") or {}
        selector = (spec.get("target") or {}).get("namespaceSelector") or {}
        ns_rt = self.cluster.type_for("", "v1", "namespaces")
        from .kinds import _selector_matches

        content = "\n".join(pems) + "\n"
        for ns in self.cluster.list(ns_rt, None)["items"]:
            labels = ns["metadata"].get("labels") or {}
            if ns["metadata"].get("deletionTimestamp") or (selector and not _selector_matches(selector, labels)):
                continue
            if target.get("key"):
                self._put("v1", "ConfigMap", ns["metadata"]["name"], {
                    "metadata": {"name": name, "namespace": ns["metadata"]["name"],
                                 "labels": {"trust.cert-manager.io/bundle": name}},
                    "data": {target["key"]: content}})
        return self._set_status(bundle, {"conditions": [_condition(
            "Synced", "True", "Synced", "Successfully synced Bundle to all namespaces", gen, old)]})


_ACTIONS = {
    "mark_gateway_programmed", "mark_gatewayclass_accepted", "mark_certificate_ready", "mark_issuer_ready",
    "mark_deployment_available", "mark_workload_available", "mark_workload_progressing", "mark_job_complete",
    "mark_job_running", "set_loadbalancer_ingress",
    "sync_bundle", "releases", "reconcile_all",
}


def call(cluster: Cluster, action: str, args: dict[str, Any]) -> Any:
    """Run one Python-API action for the `POST /_standin/controllers` debug endpoint."""
    if action not in _ACTIONS:
        raise APIError(400, "BadRequest", f"action: unknown controller action {action!r}; one of {sorted(_ACTIONS)}")
    return getattr(Controllers(cluster), action)(**args)
