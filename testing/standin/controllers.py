"""Simulated controllers: what cert-manager, trust-manager, Envoy Gateway and the built-in workload
controllers would write back, so readiness waits can be tested without a real cluster.

Two ways in:
- the Python API (`Controllers.mark_*`), which tests call explicitly;
- automatic mode (`--simulate-controllers`): a background thread reconciles after writes, but only
  for products whose Helm release is deployed (a `helm.sh/release.v1` Secret labelled `owner=helm`,
  `status=deployed`). Nothing else is touched: no fake readiness for products not installed.
  The built-in controllers and the kubelet always run: Deployment -> ReplicaSet -> Pods, DaemonSet and
  StatefulSet Pods (and claims from `volumeClaimTemplates`), Job completion, Service Endpoints and
  PersistentVolumeClaim binding; every status is computed from the pods, as the real controllers do. With
  `ready_after` seconds a pod turns Ready (a Job completes, a claim binds) only that long after it was
  created, the way image pulls and container starts delay a real rollout.
"""

from __future__ import annotations

import base64
import contextlib
import copy
import datetime as dt
import gzip
import hashlib
import itertools
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
# Kinds whose spec changes `ready_after` counts from (Job completion, PVC binding; workloads count per pod).
DELAYED_KINDS = frozenset((*WORKLOAD_KINDS, "Job", "PersistentVolumeClaim"))
POD_ALPHABET = "bcdfghjklmnpqrstvwxz2456789"  # k8s.io/apimachinery rand: generated names and template hashes
NODE_NAME = "standin-node"  # the one node the simulated scheduler and kubelet run pods on
NODE_IP = "192.0.2.10"  # TEST-NET-1
REVISION = "deployment.kubernetes.io/revision"
REVISION_HASH = "controller-revision-hash"
SKIP_MIRROR = "endpointslice.kubernetes.io/skip-mirror"  # set by the Endpoints controller on what it manages
SKIP_COPY = frozenset(("kubectl.kubernetes.io/last-applied-configuration", REVISION,
                       "deployment.kubernetes.io/revision-history", "deployment.kubernetes.io/desired-replicas",
                       "deployment.kubernetes.io/max-replicas", "deprecated.deployment.rollback.to"))
_POD_IPS = itertools.count(1)


def _next_pod_ip() -> str:
    n = next(_POD_IPS)
    return f"10.244.{(n // 250) % 250}.{n % 250 + 1}"


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


def _release_summary(secret: dict[str, Any]) -> dict[str, Any] | None:
    """{name, namespace, chart, config} of a release Secret, or None when it holds no chart."""
    release = decode_release(secret)
    chart = ((release or {}).get("chart") or {}).get("metadata", {}).get("name")
    if not chart:
        return None
    return {"name": release.get("name"), "namespace": secret["metadata"]["namespace"],
            "chart": chart, "config": release.get("config") or {}}


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


def _fnv32a(data: bytes) -> int:
    value = 0x811C9DC5
    for byte in data:
        value = ((value ^ byte) * 0x01000193) & 0xFFFFFFFF
    return value


def template_hash(template: dict[str, Any], collision_count: int = 0) -> str:
    """A pod template's hash as the controllers print it: `rand.SafeEncodeString` of an FNV-32a sum, so only
    the consonants and digits of POD_ALPHABET (`pod-template-hash`, `controller-revision-hash`). The sum is taken
    over canonical JSON, not Go's struct dump, so the values differ from a real cluster's; the form does not."""
    data = json.dumps(template, sort_keys=True, separators=(",", ":")).encode()
    if collision_count:
        data += str(collision_count).encode()
    return "".join(POD_ALPHABET[ord(c) % len(POD_ALPHABET)] for c in str(_fnv32a(data)))


def _without_hash(template: dict[str, Any]) -> dict[str, Any]:
    out = copy.deepcopy(template)
    labels = (out.get("metadata") or {}).get("labels")
    if isinstance(labels, dict):
        labels.pop("pod-template-hash", None)
        if not labels:
            out["metadata"].pop("labels")
    if "metadata" in out and not out["metadata"]:
        out.pop("metadata")
    return out


def _owner_ref(owner: dict[str, Any]) -> dict[str, Any]:
    meta = owner["metadata"]
    return {"apiVersion": owner["apiVersion"], "kind": owner["kind"], "name": meta["name"], "uid": meta["uid"],
            "controller": True, "blockOwnerDeletion": True}


def _controlled_by(obj: dict[str, Any], owner: dict[str, Any]) -> bool:
    return any(ref.get("uid") == owner["metadata"]["uid"] and ref.get("controller")
               for ref in obj["metadata"].get("ownerReferences") or [])


def _int_or_percent(value: Any, total: int, round_up: bool) -> int:
    """`intstr.GetScaledValueFromIntOrPercent`: `25%` of 3 is 0 rounded down, 1 rounded up."""
    if isinstance(value, str) and value.endswith("%"):
        scaled = int(value[:-1]) * total / 100
        return int(-(-scaled // 1)) if round_up else int(scaled // 1)
    return int(value or 0)


def deployment_max_unavailable(spec: dict[str, Any]) -> int:
    """`deploymentutil.MaxUnavailable`: 0 for Recreate or no replicas; maxSurge and maxUnavailable both 0 means 1."""
    replicas = spec.get("replicas", 1)
    strategy = spec.get("strategy") or {}
    if strategy.get("type", "RollingUpdate") != "RollingUpdate" or replicas == 0:
        return 0
    rolling = strategy.get("rollingUpdate") or {}
    surge = _int_or_percent(rolling.get("maxSurge", "25%"), replicas, True)
    unavailable = _int_or_percent(rolling.get("maxUnavailable", "25%"), replicas, False)
    if surge == 0 and unavailable == 0:
        unavailable = 1
    return min(unavailable, replicas)


def _pod_is_ready(pod: dict[str, Any]) -> bool:
    return _has_condition(pod.get("status") or {}, "Ready")


def _omit_zero(status: dict[str, Any], *keys: str) -> dict[str, Any]:
    """Drop the zero counts Go's `omitempty` leaves out of the JSON."""
    for key in keys:
        if not status.get(key):
            status.pop(key, None)
    return status


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
        # pod uid -> time.monotonic() when the kubelet reports its containers ready (`ready_after` after creation).
        self._pod_due: dict[str, float] = {}
        # kind -> controller uid -> children, listed once per automatic pass (None outside a pass).
        self._children: dict[str, dict[str, list[dict[str, Any]]]] | None = None
        # (uid, resourceVersion) of a release Secret -> its summary: a pass asks for the releases several times,
        # and decoding a large chart's release (base64, gzip, JSON) each time was most of the stand-in's CPU.
        self._release_summaries: dict[tuple[str, str], dict[str, Any] | None] = {}
        if automatic:
            cluster.hooks.append(self._on_event)
            self._thread = threading.Thread(target=self._loop, name="standin-controllers", daemon=True)
            self._thread.start()

    # ------------------------------------------------------------ plumbing

    def _on_event(self, kind: str, rt: Any, obj: dict[str, Any]) -> None:
        if rt.kind in DELAYED_KINDS:
            self._note_spec_change(kind, obj)
        elif rt.kind == "Pod" and kind == "DELETED":
            self._pod_due.pop(obj["metadata"].get("uid", ""), None)
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
        summaries: dict[tuple[str, str], dict[str, Any] | None] = {}
        for secret in self.cluster.list(rt, None, "owner=helm,status=deployed")["items"]:
            if secret.get("type") != "helm.sh/release.v1":
                continue
            key = (secret["metadata"]["uid"], secret["metadata"]["resourceVersion"])
            summaries[key] = (self._release_summaries[key] if key in self._release_summaries
                              else _release_summary(secret))
        self._release_summaries = summaries  # only the Secrets listed now: deleted or replaced ones go
        return [summary for summary in summaries.values() if summary]

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
                self.attach_http_routes()
            # The built-in workload controllers and the kubelet are part of every cluster.
            self._children = {}
            try:
                for kind in WORKLOAD_KINDS:
                    for obj in self._list("apps/v1", kind):
                        if not obj["metadata"].get("deletionTimestamp"):
                            self._reconcile_workload(obj, kind)
            finally:
                self._children = None
            for pvc in self._list("v1", "PersistentVolumeClaim"):
                self._sync_claim(pvc)
            self._reconcile_services()
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

    # ------------------------------------------------------------ workload chains (kube-controller-manager, kubelet)

    def _reconcile_workload(self, obj: dict[str, Any], kind: str) -> None:
        self._sync_workload(obj, kind, "auto")

    def _sync_workload(self, obj: dict[str, Any], kind: str, mode: str) -> dict[str, Any]:
        """Bring a workload's ReplicaSets/Pods (or Pods) in line with its spec and write its status from them.

        mode: `auto` (pods turn ready `ready_after` seconds after they were created), `ready` (every pod ready
        now: the explicit API) or `unready` (every pod started but not ready). Runs under the cluster lock, so an
        explicit call never interleaves with an automatic pass.
        """
        with self.cluster.lock:
            if kind == "Deployment":
                return self._sync_deployment(obj, mode)
            if kind == "DaemonSet":
                return self._sync_daemonset(obj, mode)
            return self._sync_statefulset(obj, mode)

    def _owned(self, api_version: str, kind: str, ns: str, owner: dict[str, Any]) -> list[dict[str, Any]]:
        """The objects `owner` controls. In a reconcile pass one list per kind is indexed by controller uid (each
        owner is synced once per pass and only touches its own children), so a pass stays linear in objects."""
        rt = self._type(api_version, kind)
        if self._children is None:
            return [o for o in self.cluster.list(rt, ns)["items"] if _controlled_by(o, owner)]
        if kind not in self._children:
            index: dict[str, list[dict[str, Any]]] = {}
            for obj in self.cluster.peek(rt):  # read-only: every write below goes through a copy
                for ref in obj["metadata"].get("ownerReferences") or []:
                    if ref.get("controller") and ref.get("uid"):
                        index.setdefault(ref["uid"], []).append(obj)
            self._children[kind] = index
        return list(self._children[kind].get(owner["metadata"]["uid"], []))

    def _delete(self, obj: dict[str, Any]) -> None:
        rt = self._type(obj["apiVersion"], obj["kind"])
        with contextlib.suppress(APIError):
            self.cluster.delete(rt, obj["metadata"].get("namespace"), obj["metadata"]["name"])
        self._pod_due.pop(obj["metadata"]["uid"], None)

    def _create_pod(self, owner: dict[str, Any], template: dict[str, Any], labels: dict[str, str],
                    name: str | None = None, extra_spec: dict[str, Any] | None = None) -> dict[str, Any]:
        tmeta = template.get("metadata") or {}
        meta: dict[str, Any] = {"namespace": owner["metadata"]["namespace"], "labels": labels,
                                "ownerReferences": [_owner_ref(owner)]}
        if name:
            meta["name"] = name
        else:
            meta["generateName"] = f'{owner["metadata"]["name"]}-'
        if tmeta.get("annotations"):
            meta["annotations"] = dict(tmeta["annotations"])
        spec = dict(copy.deepcopy(template.get("spec") or {}), nodeName=NODE_NAME, **(extra_spec or {}))
        rt = self._type("v1", "Pod")
        pod = self.cluster.create(rt, meta["namespace"], {"apiVersion": "v1", "kind": "Pod", "metadata": meta,
                                                          "spec": spec})
        self._pod_due[pod["metadata"]["uid"]] = time.monotonic() + self.ready_after
        return pod

    def _pod_should_be_ready(self, pod: dict[str, Any], mode: str) -> bool:
        uid = pod["metadata"]["uid"]
        if mode == "ready":
            self._pod_due[uid] = 0.0
            return True
        if mode == "unready":
            self._pod_due[uid] = time.monotonic() + self.ready_after
            return False
        if _pod_is_ready(pod):
            return True  # the kubelet does not take a started container's readiness back here
        due = self._pod_due.get(uid)
        if due is None:  # created before this controller ran (or by another instance): count from now
            due = self._pod_due[uid] = time.monotonic() + self.ready_after
        if due > time.monotonic():
            self._schedule(due)
            return False
        return True

    def _pod_status(self, pod: dict[str, Any], ready: bool) -> dict[str, Any]:
        """What the kubelet reports: Running and Ready, or (`ready_after`) Pending while containers are created."""
        old = pod.get("status") or {}
        conds = old.get("conditions")
        containers = [c for c in (pod.get("spec") or {}).get("containers") or [] if isinstance(c, dict)]
        names = [c.get("name", "") for c in containers]
        ip = old.get("podIP") or _next_pod_ip()
        created = pod["metadata"]["creationTimestamp"]

        def cond(kind: str, ok: bool, reason: str = "", message: str = "") -> dict[str, Any]:
            out = _condition(kind, "True" if ok else "False", reason, message, old=conds)
            out["lastProbeTime"] = None
            if ok:
                out.pop("reason")
                out.pop("message")
            return out

        unready = f"containers with unready status: [{' '.join(names)}]"
        conditions = [cond("PodReadyToStartContainers", True), cond("Initialized", True),
                      cond("Ready", ready, "ContainersNotReady", unready),
                      cond("ContainersReady", ready, "ContainersNotReady", unready), cond("PodScheduled", True)]
        statuses = []
        for c in containers:
            entry: dict[str, Any] = {"name": c.get("name"), "image": c.get("image"), "imageID": "", "ready": ready,
                                     "restartCount": 0, "started": ready}
            if ready:
                digest = hashlib.sha256(f'{pod["metadata"]["uid"]}/{c.get("name")}'.encode()).hexdigest()
                entry["containerID"] = f"containerd://{digest}"
                entry["state"] = {"running": {"startedAt": now()}}
            else:
                entry["state"] = {"waiting": {"reason": "ContainerCreating"}}
            statuses.append(entry)
        qos = "BestEffort"
        if any((c.get("resources") or {}).get("requests") or (c.get("resources") or {}).get("limits")
               for c in containers):
            qos = "Burstable"
        return {"phase": "Running" if ready else "Pending", "conditions": conditions, "hostIP": NODE_IP,
                "hostIPs": [{"ip": NODE_IP}], "podIP": ip, "podIPs": [{"ip": ip}], "startTime": created,
                "qosClass": qos, "containerStatuses": statuses}

    def _sync_pod(self, pod: dict[str, Any], mode: str) -> bool:
        """Write the pod's status (only when its readiness changes) and tell whether it is ready."""
        ready = self._pod_should_be_ready(pod, mode)
        status = pod.get("status") or {}
        if status.get("phase") in ("Running", "Pending") and _pod_is_ready(pod) == ready and status.get("podIP"):
            return ready
        self._set_status(pod, self._pod_status(pod, ready))
        return ready

    def _sync_replicaset(self, rs: dict[str, Any], mode: str) -> tuple[int, int]:
        """The ReplicaSet controller: `spec.replicas` pods named `<rs>-<5 chars>`; returns (pods, ready pods)."""
        spec = rs.get("spec") or {}
        want = spec.get("replicas", 1)
        template = spec.get("template") or {}
        pods = [p for p in self._owned("v1", "Pod", rs["metadata"]["namespace"], rs)
                if not p["metadata"].get("deletionTimestamp")]
        pods.sort(key=lambda p: (p["metadata"]["creationTimestamp"], p["metadata"]["name"]))
        while len(pods) > want:
            self._delete(pods.pop())
        while len(pods) < want:
            pods.append(self._create_pod(rs, template, dict((template.get("metadata") or {}).get("labels") or {})))
        ready = sum(self._sync_pod(p, mode) for p in pods)
        status = _omit_zero({"replicas": len(pods), "fullyLabeledReplicas": len(pods), "readyReplicas": ready,
                             "availableReplicas": ready, "observedGeneration": rs["metadata"].get("generation")},
                            "fullyLabeledReplicas", "readyReplicas", "availableReplicas")
        self._set_status(rs, status)
        return len(pods), ready

    def _sync_deployment(self, dep: dict[str, Any], mode: str) -> dict[str, Any]:
        """The Deployment controller: a ReplicaSet `<deployment>-<pod-template-hash>` per pod template (found again
        by template equality ignoring the hash, as `deploymentutil.FindNewReplicaSet` does); old ones scaled to 0."""
        meta, spec = dep["metadata"], dep.get("spec") or {}
        ns, name = meta["namespace"], meta["name"]
        replicas = spec.get("replicas", 1)
        template = spec.get("template") or {}
        rss = sorted(self._owned("apps/v1", "ReplicaSet", ns, dep),
                     key=lambda r: (r["metadata"]["creationTimestamp"], r["metadata"]["name"]))
        plain = _without_hash(template)
        new = next((r for r in rss if _without_hash((r.get("spec") or {}).get("template") or {}) == plain), None)
        revisions = [int((r["metadata"].get("annotations") or {}).get(REVISION) or 0) for r in rss]
        top = max(revisions, default=0)
        if new is None and not (spec.get("paused") and rss):
            digest = template_hash(template, (dep.get("status") or {}).get("collisionCount") or 0)
            rs_template = copy.deepcopy(template)
            rs_template.setdefault("metadata", {}).setdefault("labels", {})["pod-template-hash"] = digest
            selector = copy.deepcopy(spec.get("selector") or {})
            selector.setdefault("matchLabels", {})["pod-template-hash"] = digest
            rs_spec: dict[str, Any] = {"replicas": replicas, "selector": selector, "template": rs_template}
            if spec.get("minReadySeconds"):
                rs_spec["minReadySeconds"] = spec["minReadySeconds"]
            rt = self._type("apps/v1", "ReplicaSet")
            new = self.cluster.create(rt, ns, {
                "apiVersion": "apps/v1", "kind": "ReplicaSet",
                "metadata": {"name": f"{name}-{digest}", "namespace": ns,
                             "labels": dict(rs_template["metadata"]["labels"]),
                             "annotations": self._rs_annotations(dep, replicas, top + 1),
                             "ownerReferences": [_owner_ref(dep)]},
                "spec": rs_spec})
            rss.append(new)
        elif new is not None:
            revision = int((new["metadata"].get("annotations") or {}).get(REVISION) or 0)
            want = self._rs_annotations(dep, replicas, revision if revision == top else top + 1)
            if (new.get("spec") or {}).get("replicas") != replicas or any(
                    (new["metadata"].get("annotations") or {}).get(k) != v for k, v in want.items()):
                body = copy.deepcopy(new)
                body["metadata"].setdefault("annotations", {}).update(want)
                body["metadata"].pop("resourceVersion", None)
                body["spec"]["replicas"] = replicas
                new = self.cluster.update(self._type("apps/v1", "ReplicaSet"), ns, new["metadata"]["name"], body)
                rss = [new if r["metadata"]["uid"] == new["metadata"]["uid"] else r for r in rss]
        total = ready = updated = 0
        for rs in rss:
            if new is not None and rs["metadata"]["uid"] != new["metadata"]["uid"] \
                    and (rs.get("spec") or {}).get("replicas", 1) != 0:
                body = copy.deepcopy(rs)
                body["metadata"].pop("resourceVersion", None)
                body["spec"]["replicas"] = 0
                rs = self.cluster.update(self._type("apps/v1", "ReplicaSet"), ns, rs["metadata"]["name"], body)
            count, ok = self._sync_replicaset(rs, mode)
            total, ready = total + count, ready + ok
            if new is not None and rs["metadata"]["uid"] == new["metadata"]["uid"]:
                updated = count
        revision = (new["metadata"].get("annotations") or {}).get(REVISION) if new is not None else None
        if revision and (meta.get("annotations") or {}).get(REVISION) != revision:
            body = copy.deepcopy(dep)
            body["metadata"].setdefault("annotations", {})[REVISION] = revision
            body["metadata"].pop("resourceVersion", None)
            dep = self.cluster.update(self._type("apps/v1", "Deployment"), ns, name, body)
        old = (dep.get("status") or {}).get("conditions")
        available = ready >= replicas - deployment_max_unavailable(spec)
        complete = updated == replicas and ready == replicas and total == replicas
        rs_name = new["metadata"]["name"] if new is not None else name
        status = _omit_zero({"observedGeneration": dep["metadata"].get("generation"), "replicas": total,
                             "updatedReplicas": updated, "readyReplicas": ready, "availableReplicas": ready,
                             "unavailableReplicas": max(0, replicas - ready)},
                            "replicas", "updatedReplicas", "readyReplicas", "availableReplicas", "unavailableReplicas")
        conditions = [
            _condition("Available", "True", "MinimumReplicasAvailable", "Deployment has minimum availability.", old=old)
            if available else _condition("Available", "False", "MinimumReplicasUnavailable",
                                         "Deployment does not have minimum availability.", old=old),
            _condition("Progressing", "True", "NewReplicaSetAvailable",
                       f'ReplicaSet "{rs_name}" has successfully progressed.', old=old)
            if complete else _condition("Progressing", "True", "ReplicaSetUpdated",
                                        f'ReplicaSet "{rs_name}" is progressing.', old=old)]
        for cond in conditions:
            previous = next((c for c in old or [] if c.get("type") == cond["type"]), None)
            same = previous and previous.get("reason") == cond["reason"] and previous.get("status") == cond["status"]
            cond["lastUpdateTime"] = previous.get("lastUpdateTime", cond["lastTransitionTime"]) if same else now()
        status["conditions"] = conditions
        return self._set_status(dep, status)

    @staticmethod
    def _rs_annotations(dep: dict[str, Any], replicas: int, revision: int) -> dict[str, str]:
        """The new ReplicaSet's annotations: the Deployment's own (but kubectl's last-applied configuration and
        the controller's bookkeeping ones, as `copyDeploymentAnnotationsToReplicaSet` skips), revision, replicas."""
        spec = dep.get("spec") or {}
        rolling = (spec.get("strategy") or {}).get("rollingUpdate") or {}
        surge = _int_or_percent(rolling.get("maxSurge", "25%"), replicas, True) \
            if (spec.get("strategy") or {}).get("type", "RollingUpdate") == "RollingUpdate" else 0
        out = {k: v for k, v in (dep["metadata"].get("annotations") or {}).items() if k not in SKIP_COPY}
        out.update({"deployment.kubernetes.io/desired-replicas": str(replicas),
                    "deployment.kubernetes.io/max-replicas": str(replicas + surge), REVISION: str(revision)})
        return out

    def _sync_daemonset(self, ds: dict[str, Any], mode: str) -> dict[str, Any]:
        """The DaemonSet controller on the stand-in's one node: one pod `<ds>-<5 chars>` of the current template."""
        spec, gen = ds.get("spec") or {}, ds["metadata"].get("generation")
        template = spec.get("template") or {}
        digest = template_hash(template)
        pods = [p for p in self._owned("v1", "Pod", ds["metadata"]["namespace"], ds)
                if not p["metadata"].get("deletionTimestamp")]
        for pod in [p for p in pods if (p["metadata"].get("labels") or {}).get(REVISION_HASH) != digest]:
            self._delete(pod)  # RollingUpdate with maxUnavailable 1 on one node: replace the pod
            pods.remove(pod)
        for pod in pods[1:]:
            self._delete(pod)
        pods = pods[:1]
        if not pods:
            labels = dict((template.get("metadata") or {}).get("labels") or {}, **{
                REVISION_HASH: digest, "pod-template-generation": str(gen)})
            pods.append(self._create_pod(ds, template, labels))
        ready = sum(self._sync_pod(p, mode) for p in pods)
        status = _omit_zero({"currentNumberScheduled": len(pods), "desiredNumberScheduled": 1,
                             "numberAvailable": ready, "numberMisscheduled": 0, "numberReady": ready,
                             "numberUnavailable": 1 - ready, "observedGeneration": gen,
                             "updatedNumberScheduled": len(pods)}, "numberAvailable", "numberUnavailable")
        return self._set_status(ds, status)

    def _sync_statefulset(self, sts: dict[str, Any], mode: str) -> dict[str, Any]:
        """The StatefulSet controller: pods `<sts>-0..n-1` labelled with their revision, PVCs from
        `volumeClaimTemplates`; a template change replaces the pods at or above the partition."""
        meta, spec = sts["metadata"], sts.get("spec") or {}
        ns, name, gen = meta["namespace"], meta["name"], meta.get("generation")
        replicas = spec.get("replicas", 1)
        template = spec.get("template") or {}
        update_revision = f"{name}-{template_hash(template)}"
        old_status = sts.get("status") or {}
        current_revision = old_status.get("currentRevision") or update_revision
        strategy = spec.get("updateStrategy") or {}
        rolling = strategy.get("type", "RollingUpdate") == "RollingUpdate"
        partition = ((strategy.get("rollingUpdate") or {}).get("partition") or 0) if rolling else 0
        by_ordinal: dict[int, dict[str, Any]] = {}
        for pod in self._owned("v1", "Pod", ns, sts):
            ordinal = pod["metadata"]["name"].rsplit("-", 1)[-1]
            if pod["metadata"].get("deletionTimestamp"):
                continue
            if not ordinal.isdigit() or int(ordinal) >= replicas:
                self._delete(pod)
            else:
                by_ordinal[int(ordinal)] = pod
        for ordinal, pod in list(by_ordinal.items()):
            if rolling and ordinal >= partition and \
                    (pod["metadata"].get("labels") or {}).get(REVISION_HASH) != update_revision:
                self._delete(pod)
                del by_ordinal[ordinal]
        selector_labels = (spec.get("selector") or {}).get("matchLabels") or {}
        for claim in spec.get("volumeClaimTemplates") or []:
            for ordinal in range(replicas):
                claim_name = f'{(claim.get("metadata") or {}).get("name")}-{name}-{ordinal}'
                if self._get("v1", "PersistentVolumeClaim", claim_name, ns) is None:
                    self.cluster.create(self._type("v1", "PersistentVolumeClaim"), ns, {
                        "apiVersion": "v1", "kind": "PersistentVolumeClaim",
                        "metadata": {"name": claim_name, "namespace": ns, "labels": dict(selector_labels)},
                        "spec": copy.deepcopy(claim.get("spec") or {})})
        for ordinal in range(replicas):
            if ordinal not in by_ordinal:
                pod_name = f"{name}-{ordinal}"
                labels = dict((template.get("metadata") or {}).get("labels") or {}, **{
                    REVISION_HASH: update_revision, "statefulset.kubernetes.io/pod-name": pod_name,
                    "apps.kubernetes.io/pod-index": str(ordinal)})
                extra: dict[str, Any] = {"hostname": pod_name}
                if spec.get("serviceName"):
                    extra["subdomain"] = spec["serviceName"]
                by_ordinal[ordinal] = self._create_pod(sts, template, labels, name=pod_name, extra_spec=extra)
        pods = list(by_ordinal.values())
        ready = sum(self._sync_pod(p, mode) for p in pods)
        updated = sum((p["metadata"].get("labels") or {}).get(REVISION_HASH) == update_revision for p in pods)
        if rolling and updated == replicas and ready == replicas:
            current_revision = update_revision  # completeRollingUpdate
        current = sum((p["metadata"].get("labels") or {}).get(REVISION_HASH) == current_revision for p in pods)
        status = _omit_zero({"availableReplicas": ready, "collisionCount": 0, "currentReplicas": current,
                             "currentRevision": current_revision, "observedGeneration": gen,
                             "readyReplicas": ready, "replicas": len(pods), "updateRevision": update_revision,
                             "updatedReplicas": updated}, "currentReplicas", "readyReplicas", "updatedReplicas")
        return self._set_status(sts, status)

    def _sync_claim(self, pvc: dict[str, Any]) -> None:
        """A dynamic provisioner and the PV controller: a claim is `Bound` (`ready_after` after its creation)."""
        status = pvc.get("status") or {}
        if status.get("phase") == "Bound" or pvc["metadata"].get("deletionTimestamp"):
            return
        due = self._ready_at(pvc)
        if due is not None:
            self._schedule(due)
            if status.get("phase") != "Pending":
                self._set_status(pvc, {"phase": "Pending"})
            return
        self.mark_claim_bound(pvc["metadata"]["name"], pvc["metadata"]["namespace"])

    def mark_claim_bound(self, name: str, ns: str) -> dict[str, Any]:
        pvc = self._get("v1", "PersistentVolumeClaim", name, ns)
        if pvc is None:
            raise APIError(404, "NotFound", f'persistentvolumeclaims "{name}" not found')
        spec = pvc.get("spec") or {}
        if not spec.get("volumeName"):
            body = copy.deepcopy(pvc)
            body["metadata"].pop("resourceVersion", None)
            body["spec"]["volumeName"] = f'pvc-{pvc["metadata"]["uid"]}'
            body["metadata"].setdefault("annotations", {}).update({
                "pv.kubernetes.io/bind-completed": "yes", "pv.kubernetes.io/bound-by-controller": "yes"})
            pvc = self.cluster.update(self._type("v1", "PersistentVolumeClaim"), ns, name, body)
            spec = pvc["spec"]
        status: dict[str, Any] = {"phase": "Bound", "accessModes": list(spec.get("accessModes") or [])}
        storage = ((spec.get("resources") or {}).get("requests") or {}).get("storage")
        if storage is not None:
            status["capacity"] = {"storage": storage}
        return self._set_status(pvc, status)

    def _sync_endpoints(self, svc: dict[str, Any], pods: list[dict[str, Any]]) -> None:
        """The Endpoints controller: the ready (`addresses`) and not-ready (`notReadyAddresses`) IPs of the pods
        the Service selects, with its ports resolved against each pod (named target ports too)."""
        spec, meta = svc.get("spec") or {}, svc["metadata"]
        selector = spec.get("selector") or {}
        if spec.get("type") == "ExternalName" or not selector:
            return
        subsets: dict[tuple[Any, ...], dict[str, Any]] = {}
        for pod in pods:
            labels = pod["metadata"].get("labels") or {}
            ip = (pod.get("status") or {}).get("podIP")
            if pod["metadata"]["namespace"] != meta["namespace"] or not ip or pod["metadata"].get(
                    "deletionTimestamp") or any(labels.get(k) != v for k, v in selector.items()):
                continue
            ports = []
            for port in spec.get("ports") or []:
                target = port.get("targetPort", port.get("port"))
                if isinstance(target, str):
                    target = next((p.get("containerPort") for c in (pod.get("spec") or {}).get("containers") or []
                                   for p in c.get("ports") or [] if p.get("name") == target), None)
                if target is None:
                    continue
                entry = {"port": target, "protocol": port.get("protocol", "TCP")}
                if port.get("name"):
                    entry["name"] = port["name"]
                ports.append(entry)
            key = tuple(sorted(json.dumps(p, sort_keys=True) for p in ports))
            subset = subsets.setdefault(key, {"ports": ports})
            address = {"ip": ip, "nodeName": NODE_NAME, "targetRef": {
                "kind": "Pod", "name": pod["metadata"]["name"], "namespace": meta["namespace"],
                "uid": pod["metadata"]["uid"]}}
            subset.setdefault("addresses" if _pod_is_ready(pod) else "notReadyAddresses", []).append(address)
        for subset in subsets.values():
            for field in ("addresses", "notReadyAddresses"):
                if field in subset:
                    subset[field].sort(key=lambda a: a["ip"])
            if not subset["ports"]:
                subset.pop("ports")
        labels = dict(meta.get("labels") or {}, **{SKIP_MIRROR: "true"})
        if spec.get("clusterIP") == "None":
            labels["service.kubernetes.io/headless"] = ""
        body: dict[str, Any] = {"metadata": {"name": meta["name"], "namespace": meta["namespace"], "labels": labels}}
        if subsets:
            body["subsets"] = [subsets[k] for k in sorted(subsets)]
        current = self._get("v1", "Endpoints", meta["name"], meta["namespace"])
        if current is not None and current.get("subsets") == body.get("subsets") and all(
                (current["metadata"].get("labels") or {}).get(k) == v for k, v in labels.items()):
            return
        if current is not None and "subsets" not in body:
            current = copy.deepcopy(current)
            current.pop("subsets", None)
            current["metadata"].setdefault("labels", {}).update(labels)
            current["metadata"].pop("resourceVersion", None)
            self.cluster.update(self._type("v1", "Endpoints"), meta["namespace"], meta["name"], current)
            return
        self._put("v1", "Endpoints", meta["namespace"], body)

    def _reconcile_services(self) -> None:
        pods = self.cluster.peek(self._type("v1", "Pod"))  # read-only
        services = self.cluster.peek(self._type("v1", "Service"))
        for svc in services:
            if not svc["metadata"].get("deletionTimestamp"):
                self._sync_endpoints(svc, pods)
        names = {(s["metadata"]["namespace"], s["metadata"]["name"]) for s in services}
        for ep in self._list("v1", "Endpoints"):
            ep_meta = ep["metadata"]
            if (ep_meta.get("labels") or {}).get(SKIP_MIRROR) == "true" and \
                    (ep_meta["namespace"], ep_meta["name"]) not in names:
                self._delete(ep)

    def mark_workload_available(self, name: str, ns: str, kind: str = "Deployment") -> dict[str, Any]:
        """Every pod of the workload Running and Ready now (never delayed), and the status that follows."""
        obj = self._get("apps/v1", kind, name, ns)
        if obj is None:
            raise APIError(404, "NotFound", f'{kind.lower()}s.apps "{name}" not found')
        return self._sync_workload(obj, kind, "ready")

    def mark_workload_progressing(self, name: str, ns: str, kind: str = "Deployment") -> dict[str, Any]:
        """The status while pods start (`ready_after`): the spec is observed, its pods exist, none is ready yet.

        Zero counts are left out, as the Go types' `omitempty` does.
        """
        obj = self._get("apps/v1", kind, name, ns)
        if obj is None:
            raise APIError(404, "NotFound", f'{kind.lower()}s.apps "{name}" not found')
        return self._sync_workload(obj, kind, "unready")

    def mark_deployment_available(self, name: str, ns: str) -> dict[str, Any]:
        return self.mark_workload_available(name, ns, "Deployment")

    def mark_job_running(self, name: str, ns: str) -> dict[str, Any]:
        """The status of a Job whose pods run but have not finished yet (`ready_after`)."""
        obj = self._get("batch/v1", "Job", name, ns)
        if obj is None:
            raise APIError(404, "NotFound", f'jobs.batch "{name}" not found')
        spec = obj.get("spec") or {}
        active = min(spec.get("parallelism", 1), spec.get("completions") or spec.get("parallelism", 1))
        status = {"active": active, "ready": 0, "startTime": obj["metadata"]["creationTimestamp"],
                  "terminating": 0, "uncountedTerminatedPods": {}}
        return self._set_status(obj, status)

    def mark_job_complete(self, name: str, ns: str) -> dict[str, Any]:
        """A finished Job as the Job controller of Kubernetes 1.31+ writes it: `SuccessCriteriaMet`, then
        `Complete`, `succeeded` = `completions`, `completionTime` (no `active`: zero is omitted)."""
        obj = self._get("batch/v1", "Job", name, ns)
        if obj is None:
            raise APIError(404, "NotFound", f'jobs.batch "{name}" not found')
        succeeded = (obj.get("spec") or {}).get("completions") or 1
        done = now()
        conditions = [
            _condition("SuccessCriteriaMet", "True", "CompletionsReached", "Reached expected number of succeeded pods"),
            _condition("Complete", "True", "CompletionsReached", "Reached expected number of succeeded pods")]
        for cond in conditions:
            cond["lastProbeTime"] = done
        status = {"succeeded": succeeded, "ready": 0, "terminating": 0, "uncountedTerminatedPods": {},
                  "startTime": (obj.get("status") or {}).get("startTime") or obj["metadata"]["creationTimestamp"],
                  "completionTime": done, "conditions": conditions}
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
            before = next((ls for ls in old_status.get("listeners") or []
                           if ls.get("name") == listener.get("name")), {})
            prev = before.get("conditions")
            kinds = [{"group": "gateway.networking.k8s.io", "kind": "HTTPRoute"},
                     {"group": "gateway.networking.k8s.io", "kind": "GRPCRoute"}]
            if listener.get("protocol") in ("TLS", "TCP", "UDP"):
                kinds = [{"group": "gateway.networking.k8s.io", "kind": f'{listener["protocol"]}Route'}]
            # attach_http_routes counts the routes; programming the Gateway again keeps its count.
            listeners.append({"name": listener.get("name"), "attachedRoutes": before.get("attachedRoutes", 0),
                              "supportedKinds": kinds,
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

    def attach_http_routes(self) -> None:
        """What Envoy Gateway writes on HTTPRoutes and on the Gateways they attach to.

        A parentRef naming a Programmed Gateway of an Envoy Gateway class gets a `status.parents[]` entry
        (controllerName, the parentRef as written, `Accepted` and `ResolvedRefs`); entries of other
        controllers are kept. Routes whose parents are not ours get nothing, as Envoy Gateway ignores them.
        The route attaches to each listener the parentRef selects (`sectionName`, `port`) whose protocol
        takes HTTPRoutes, whose `allowedRoutes.namespaces` admits the route's namespace (All, Same, or a
        Selector on the namespace's labels) and whose hostname meets the route's hostnames; none left is
        `Accepted=False` (NoMatchingParent, NotAllowedByListeners or NoMatchingListenerHostname).
        `ResolvedRefs` is True when every backendRef names an existing object of a kind Envoy Gateway
        routes to in the route's namespace: a Service, or a kind the gateway-helm release's
        `config.envoyGateway.extensionManager.backendResources` lists (the InferencePool). Each listener's
        `attachedRoutes` counts the routes accepted on it. Not modelled: ReferenceGrants (a backendRef in
        another namespace is RefNotPermitted), filters, and GRPCRoutes.
        """
        from .kinds import _selector_matches

        gw_api = "gateway.networking.k8s.io"
        release = self.installed(ENVOY_GATEWAY_CHART) or {}
        extension = (((release.get("config") or {}).get("config") or {}).get("envoyGateway") or {}) \
            .get("extensionManager") or {}
        backend_kinds = {("", "Service")} | {(r.get("group", ""), r.get("kind"))
                                             for r in extension.get("backendResources") or []}
        classes = {gc["metadata"]["name"] for gc in self._list(f"{gw_api}/v1", "GatewayClass")
                   if (gc.get("spec") or {}).get("controllerName") == ENVOY_GATEWAY_CONTROLLER}
        gateways = {(gw["metadata"]["namespace"], gw["metadata"]["name"]): gw
                    for gw in self._list(f"{gw_api}/v1", "Gateway")
                    if (gw.get("spec") or {}).get("gatewayClassName") in classes
                    and not gw["metadata"].get("deletionTimestamp")
                    and _has_condition(gw.get("status") or {}, "Programmed")}
        namespaces = {ns["metadata"]["name"]: ns["metadata"].get("labels") or {}
                      for ns in self.cluster.list(self.cluster.type_for("", "v1", "namespaces"), None)["items"]}
        attached: dict[tuple[str, str, str], int] = {}

        def hostnames_meet(listener_host: str | None, route_hosts: list[str]) -> bool:
            if not listener_host or not route_hosts:
                return True

            def covers(pattern: str, host: str) -> bool:
                return host == pattern or (pattern.startswith("*.") and host.endswith(pattern[1:]))

            return any(covers(listener_host, h) or covers(h, listener_host) for h in route_hosts)

        for route in self._list(f"{gw_api}/v1", "HTTPRoute"):
            meta, spec = route["metadata"], route.get("spec") or {}
            if meta.get("deletionTimestamp"):
                continue
            route_ns, gen = meta["namespace"], meta.get("generation")
            old_parents = (route.get("status") or {}).get("parents") or []
            parents = [p for p in old_parents if p.get("controllerName") != ENVOY_GATEWAY_CONTROLLER]
            unresolved = None
            for rule_index, rule in enumerate(spec.get("rules") or []):
                for ref_index, ref in enumerate(rule.get("backendRefs") or []):
                    group, kind = ref.get("group", ""), ref.get("kind", "Service")
                    where = f"Failed to process route rule {rule_index} backendRef {ref_index}"
                    if ref.get("namespace", route_ns) != route_ns:
                        unresolved = ("RefNotPermitted", f"{where}: backendRef {ref.get('name')} in namespace "
                                      f"{ref.get('namespace')} is not permitted by any ReferenceGrant.")
                    elif (group, kind) not in backend_kinds:
                        unresolved = ("InvalidKind", f"{where}: {kind} is not a supported backend kind.")
                    elif self._get("v1" if group == "" else next(
                            (f"{group}/{r.get('version')}" for r in extension.get("backendResources") or []
                             if (r.get("group"), r.get("kind")) == (group, kind)), ""),
                            kind, ref.get("name", ""), route_ns) is None:
                        unresolved = ("BackendNotFound", f"{where}: {kind.lower()} {route_ns}/{ref.get('name')} "
                                      "not found.")
            for parent_ref in spec.get("parentRefs") or []:
                if (parent_ref.get("group", gw_api), parent_ref.get("kind", "Gateway")) != (gw_api, "Gateway"):
                    continue
                key = (parent_ref.get("namespace", route_ns), parent_ref.get("name"))
                gateway = gateways.get(key)
                if gateway is None:
                    continue
                listeners = [ls for ls in (gateway.get("spec") or {}).get("listeners") or []
                             if parent_ref.get("sectionName") in (None, ls.get("name"))
                             and parent_ref.get("port") in (None, ls.get("port"))]
                if not listeners:
                    accepted = ("False", "NoMatchingParent", "No listeners match this parent ref.")
                else:
                    allowed = []
                    for listener in listeners:
                        if listener.get("protocol") not in ("HTTP", "HTTPS"):
                            continue
                        namespaces_rule = ((listener.get("allowedRoutes") or {}).get("namespaces") or {})
                        origin = namespaces_rule.get("from", "Same")
                        if origin == "Same" and route_ns != key[0]:
                            continue
                        if origin == "Selector" and not _selector_matches(namespaces_rule.get("selector") or {},
                                                                          namespaces.get(route_ns, {})):
                            continue
                        allowed.append(listener)
                    matching = [ls for ls in allowed if hostnames_meet(ls.get("hostname"), spec.get("hostnames") or [])]
                    if not allowed:
                        accepted = ("False", "NotAllowedByListeners",
                                    "No listeners included by this parent ref allowed this attachment.")
                    elif not matching:
                        accepted = ("False", "NoMatchingListenerHostname",
                                    "There were no hostname intersections between the HTTPRoute and this parent "
                                    "ref's Listener(s).")
                    else:
                        accepted = ("True", "Accepted", "Route is accepted")
                        for listener in matching:
                            slot = (key[0], key[1], listener.get("name"))
                            attached[slot] = attached.get(slot, 0) + 1
                prev = next((p.get("conditions") for p in old_parents
                             if p.get("controllerName") == ENVOY_GATEWAY_CONTROLLER
                             and p.get("parentRef") == parent_ref), None)
                resolved = ("False", *unresolved) if unresolved else \
                    ("True", "ResolvedRefs", "Resolved all the Object references for the Route")
                parents.append({"parentRef": parent_ref, "controllerName": ENVOY_GATEWAY_CONTROLLER, "conditions": [
                    _condition("Accepted", *accepted, gen, prev), _condition("ResolvedRefs", *resolved, gen, prev)]})
            if parents != old_parents:
                self._set_status(route, {**(route.get("status") or {}), "parents": parents})
        for (ns, name), gateway in gateways.items():
            status = copy.deepcopy(gateway.get("status") or {})
            for listener in status.get("listeners") or []:
                listener["attachedRoutes"] = attached.get((ns, name, listener.get("name")), 0)
            if status != (gateway.get("status") or {}):
                self._set_status(gateway, status)

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
    "mark_job_running", "mark_claim_bound", "set_loadbalancer_ingress", "attach_http_routes",
    "sync_bundle", "releases", "reconcile_all",
}


def call(cluster: Cluster, action: str, args: dict[str, Any]) -> Any:
    """Run one Python-API action for the `POST /_standin/controllers` debug endpoint."""
    if action not in _ACTIONS:
        raise APIError(400, "BadRequest", f"action: unknown controller action {action!r}; one of {sorted(_ACTIONS)}")
    return getattr(Controllers(cluster), action)(**args)
