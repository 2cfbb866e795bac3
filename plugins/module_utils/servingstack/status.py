# Copyright 2026 The modelplane.serving authors
# Apache License 2.0 (see LICENSE)
"""A ServingStack's status: ``status.gateway`` from the objects in the target cluster, the conditions, components and
generation servingstack_status_update writes, and the one-line summaries of playbooks/status.yml.

Pure functions over API objects (dicts as the API returns them); the ``servingstack_status`` lookup fetches the
objects.
"""

from __future__ import annotations

import base64
import binascii
import datetime
import hashlib
import re
from typing import Any

# The key of the CA certificate in the CA Secret and in the ConfigMap trust-manager publishes it to.
CA_KEY = "ca.crt"

# Limits of the ServingStack status schema.
ADDRESS_MAX = 256
CA_MAX = 16384

_CERTIFICATE = re.compile(r"-----BEGIN CERTIFICATE-----\r?\n[A-Za-z0-9+/=\r\n]+?-----END CERTIFICATE-----")


def gateway_address(gateway: dict[str, Any] | None) -> str | None:
    """``status.addresses[0].value`` of a Gateway, or None before one is assigned."""
    addresses = ((gateway or {}).get("status") or {}).get("addresses") or []
    if not addresses or not isinstance(addresses[0], dict):
        return None
    value = addresses[0].get("value")
    if not isinstance(value, str) or not value or len(value) > ADDRESS_MAX:
        return None
    return value


def certificates(text: str | None) -> list[str]:
    """The PEM CERTIFICATE blocks in ``text`` (anything else, keys included, is dropped)."""
    if not text:
        return []
    return [block.replace("\r\n", "\n") + "\n" for block in _CERTIFICATE.findall(text)]


def first_certificate(text: str | None) -> str | None:
    """The first PEM CERTIFICATE block in ``text``, or None."""
    return next(iter(certificates(text)), None)


def ca_from_configmap(configmap: dict[str, Any] | None, key: str = CA_KEY) -> str | None:
    """The first certificate under ``data[key]`` of a ConfigMap."""
    return first_certificate(((configmap or {}).get("data") or {}).get(key))


def ca_from_secret(secret: dict[str, Any] | None, key: str = CA_KEY) -> str | None:
    """The first certificate under ``data[key]`` (base64) of a Secret; never ``tls.key``."""
    encoded = ((secret or {}).get("data") or {}).get(key)
    if not encoded:
        return None
    try:
        text = base64.b64decode(str(encoded), validate=True).decode("utf-8")
    except (binascii.Error, UnicodeDecodeError):
        return None
    return first_certificate(text)


def gateway_status(address: str | None, ca_certificate: str | None) -> dict[str, Any]:
    """``{gateway: {address, caCertificate}}`` with the missing keys left out (``{}`` when both are)."""
    gateway: dict[str, str] = {}
    if address:
        gateway["address"] = address
    if ca_certificate and len(ca_certificate) <= CA_MAX:
        gateway["caCertificate"] = ca_certificate
    return {"gateway": gateway} if gateway else {}


# ----------------------------------------------------------------------------- conditions and components
# status.conditions follow metav1.Condition; status.components is one entry per planned component.

READY = "Ready"
SYNCED = "Synced"
MESSAGE_MAX = 1024
SUMMARY_MAX = 400
LB_CONTROLLER_MISSING = (
    "the cluster has no load-balancer controller (a cloud provider's, MetalLB, cloud-provider-kind) to assign one")
_PEM = re.compile(r"-----BEGIN [A-Z0-9 ]+-----.*?(?:-----END [A-Z0-9 ]+-----|$)", re.S)
_BEARER = re.compile(r"(?i)\b(bearer\s+)\S+")
# A setting's value: one run of characters up to a separator or a closing bracket. After a colon, where prose
# follows as often as a value does, not one that opens a bracket ("token: [Errno 111] Connection refused" is a
# message, not a token) nor a number of up to 3 digits (an HTTP status or errno: "secret: 404 Not Found").
_SETTING = r"(?i)((?:password|passwd|token|secret|api[_-]?key|private[_-]?key|credentials?)[\"']?\s*"
_VALUE = r"[^\s,;\"'})\]>]+"
_SECRET_ASSIGNED = re.compile(_SETTING + r"=\s*[\"']?)" + _VALUE)
_SECRET_LABELLED = re.compile(_SETTING + r":\s*[\"']?)" + r"(?![\[({<])(?!\d{1,3}(?![^\s,;\"'})\]>]))" + _VALUE)
_FLAG = re.compile(r"(?i)(--(?:kube-)?(?:token|password)[= ])\S+")
_BLOB = re.compile(r"[A-Za-z0-9+/=_-]{40,}")
_HEX = re.compile(r"[0-9a-fA-F]+")


def _blob(match: re.Match[str]) -> str:
    """A long run with a capital letter (base64 of anything random has some) or of hex digits is redacted; one of
    lower case letters, digits and punctuation is a path, a URL or an object's name (DNS-1123), which stays."""
    run = match.group(0)
    hexadecimal = _HEX.fullmatch(run) is not None and any(c.isdigit() for c in run) and any(c.isalpha() for c in run)
    return "<redacted>" if hexadecimal or any(c.isupper() for c in run) else run


def _clip(text: str, limit: int) -> str:
    return text if len(text) <= limit else text[:limit - 1] + "…"


def camel(name: str) -> str:
    """``cert_manager`` -> ``CertManager`` (a condition reason is CamelCase)."""
    return "".join(part[:1].upper() + part[1:] for part in re.split(r"[_\W]+", name) if part)


def error_summary(message: object, limit: int = SUMMARY_MAX) -> str:
    """One line saying why a task failed, with anything that looks like a credential removed.

    helm failures put helm's own error after ``stderr:``; that line is kept, with the list that follows a line
    ending in a colon (helm's "3 errors occurred:" then "* ..." lines). PEM blocks, bearer tokens,
    ``password=``/``token:``-style settings and long base64-looking runs become ``<redacted>``.
    """
    text = str(message or "")
    if "stderr:" in text:
        text = text.rsplit("stderr:", 1)[1]
    text = _PEM.sub("<redacted>", text)
    lines = [part.strip() for part in text.strip().splitlines()]
    line = lines[0] if lines else ""
    # helm's "N errors occurred:" (and any line ending in a colon) says why in the lines that follow.
    for more in lines[1:]:
        if (not line.endswith(":") and not more.startswith("*")) or not more:
            break
        line = f"{line} {more}"
    line = line or "failed"
    for pattern in (_BEARER, _FLAG, _SECRET_ASSIGNED, _SECRET_LABELLED):
        line = pattern.sub(r"\1<redacted>", line)
    return _clip(_BLOB.sub(_blob, line), limit)


def address_pending(gateway: dict[str, Any] | None, services: list[dict[str, Any]]) -> str:
    """Why the Gateway has no address, from what the cluster shows (``services``: the Gateway's Services)."""
    if gateway is None:
        return "the Gateway does not exist on the target cluster"
    meta = gateway.get("metadata") or {}
    where = f"{meta.get('namespace')}/{meta.get('name')}"
    for service in services:
        spec, found = service.get("spec") or {}, (service.get("status") or {}).get("loadBalancer") or {}
        if spec.get("type") == "LoadBalancer" and not found.get("ingress"):
            meta = service.get("metadata") or {}
            return (f"the LoadBalancer Service {meta.get('namespace')}/{meta.get('name')} of the Gateway has no "
                    f"ingress address: {LB_CONTROLLER_MISSING}")
    programmed = next((condition for condition in (gateway.get("status") or {}).get("conditions") or []
                       if isinstance(condition, dict) and condition.get("type") == "Programmed"), None)
    if programmed is None:
        return f"the Gateway {where} is not Programmed yet (its controller has not reported on it)"
    if programmed.get("status") != "True":
        said = programmed.get("message") or programmed.get("reason") or "no message"
        return f"the Gateway {where} is not Programmed: {said}"
    if not services:
        return f"the Gateway {where} is Programmed but has no Service yet"
    return f"the Gateway {where} is Programmed but reports no address yet"


def components_status(plan: list[dict[str, Any]], failed: dict[str, str],
                      previous: list[dict[str, Any]] | None) -> list[dict[str, Any]]:
    """``[{name, version, ready}]`` in plan order: a converged component has its planned version; one that
    did not converge keeps the version the status had for it (what was installed before), if any."""
    before = {entry.get("name"): entry for entry in previous or [] if isinstance(entry, dict)}
    found = []
    for component in plan:
        name = str(component["name"])
        entry: dict[str, Any] = {"name": name}
        if name not in failed:
            entry["version"] = str(component.get("version") or "")
        elif before.get(name, {}).get("version"):
            entry["version"] = str(before[name]["version"])
        entry["ready"] = name not in failed
        found.append(entry)
    return found


def _condition(kind: str, ok: bool, reason: str, message: str) -> dict[str, str]:
    """``type``/``status``/``reason``/``message`` only; ``merge_conditions`` adds the rest."""
    return {"type": kind, "status": str(ok), "reason": reason, "message": _clip(message, MESSAGE_MAX)}


def wanted_conditions(plan: list[dict[str, Any]], failed: dict[str, str], address: str | None,
                      pending: str) -> list[dict[str, str]]:
    """``Ready`` (every component converged and the gateway has an address) and ``Synced`` (every component
    converged); ``pending`` says why there is no address."""
    names = [str(component["name"]) for component in plan]
    failures = [name for name in names if name in failed] + sorted(set(failed) - set(names))
    if failures:
        message = "; ".join(f"{name}: {error_summary(failed[name])}" for name in failures)
        return [_condition(kind, False, f"{camel(failures[0])}Failed", message) for kind in (READY, SYNCED)]
    ready = (_condition(READY, True, "Available", f"every component converged and the gateway is at {address}")
             if address else _condition(READY, False, "GatewayAddressPending", pending))
    return [ready, _condition(SYNCED, True, "Converged", f"all {len(names)} components converged")]


# Where a converge can stop (the servingstack role's servingstack_stopped_at), in order: reading the spec; making the
# target's credentials ready (its kubeconfig Secret, the cloud identity's token, the connection options); the
# preflight, the first call to the target; the rest before the components are done (outside any one component);
# reading the target's status once the components ran (the target stopped answering part-way).
STOPPED_AT = ("spec", "credentials", "preflight", "components", "status")
# The spec module's message when it refuses a ServingStack (outcome.PREFIX).
INVALID_SPEC = "invalid ServingStack:"
# The target refused the credentials (401, or 403 to the converge's identity), or the client could not use them
# (a kubeconfig that does not load, an exec credential plugin that failed).
_REFUSED = re.compile(r"\b(?:Unauthorized|Forbidden)\b|cannot load the kubeconfig|\bexec(?: plugin)?:", re.I)
# The target's API server did not answer: connection refused or reset, DNS, TLS, a timeout.
_UNREACHABLE = re.compile(
    r"cannot reach the cluster|Connection (?:refused|reset|aborted)|Remote end closed|No route to host|"
    r"Network is unreachable|Name or service not known|nodename nor servname|name resolution|Failed to resolve|"
    r"No address associated|getaddrinfo|\bSSL|certificate verify failed|timed out|Max retries exceeded", re.I)


def stopped_reason(stopped_at: str, message: str) -> str:
    """The condition reason of a converge that stopped at ``stopped_at`` (one of STOPPED_AT) with ``message``.

    ``InvalidSpec``: the spec module refused the ServingStack. ``CredentialsUnavailable``: the kubeconfig Secret or
    the identity's credential is missing or unusable, or the target refused them. ``ClusterUnreachable``: the
    target's API server could not be reached. ``PreflightFailed``: the preflight refused the cluster.
    ``ConvergeFailed``: anything else (the live ServingStack could not be read, a wrong chart mirror setting...).
    """
    text = str(message or "")
    if stopped_at == "spec":
        return "InvalidSpec" if text.startswith(INVALID_SPEC) else "ConvergeFailed"
    if stopped_at == "credentials" or _REFUSED.search(text):
        return "CredentialsUnavailable"
    if _UNREACHABLE.search(text):
        return "ClusterUnreachable"
    return "PreflightFailed" if stopped_at == "preflight" else "ConvergeFailed"


def stopped_conditions(stopped_at: str, message: str) -> list[dict[str, str]]:
    """``Ready`` and ``Synced``, both ``False`` with the reason (``stopped_reason``) and ``message`` summarised on
    one line without credentials (``error_summary``)."""
    return [_condition(kind, False, stopped_reason(stopped_at, message), error_summary(message))
            for kind in (READY, SYNCED)]


def merge_conditions(previous: list[dict[str, Any]] | None, wanted: list[dict[str, str]], generation: int | None,
                     now: str) -> list[dict[str, Any]]:
    """``wanted`` with ``observedGeneration`` and ``lastTransitionTime``: kept from ``previous`` while the
    condition's status stays the same, ``now`` when it changes (as metav1.Condition asks)."""
    before = {entry.get("type"): entry for entry in previous or [] if isinstance(entry, dict)}
    merged = []
    for condition in wanted:
        old = before.get(condition["type"]) or {}
        stamp = old.get("lastTransitionTime") if old.get("status") == condition["status"] else None
        entry: dict[str, Any] = {**condition, "lastTransitionTime": stamp or now}
        if generation is not None:
            entry["observedGeneration"] = generation
        merged.append(entry)
    return merged


def ca_fingerprint(pem: str | None) -> str | None:
    """``SHA256:AB:CD:...`` of the first certificate in ``pem`` (as ``openssl x509 -fingerprint -sha256``), or None."""
    found = first_certificate(pem)
    if not found:
        return None
    body = "".join(line for line in found.splitlines() if not line.startswith("-----"))
    try:
        der = base64.b64decode(body, validate=False)
    except (binascii.Error, ValueError):
        return None
    digest = hashlib.sha256(der).hexdigest().upper()
    return "SHA256:" + ":".join(digest[index:index + 2] for index in range(0, len(digest), 2))


def summary(status: dict[str, Any] | None, conditions: list[dict[str, Any]] | None,
            error: str | None) -> dict[str, Any]:
    """One cluster's line of ``playbooks/status.yml``: ``address``, ``ca_fingerprint``, ``ready`` and ``error``.

    ``ready`` is the ServingStack's Ready condition where the converge wrote one (True/False), else whether the
    gateway has an address; None when the status could not be read (``error`` says why)."""
    gateway = (status or {}).get("gateway") or {}
    ready_condition = next((item for item in conditions or [] if item.get("type") == "Ready"), None)
    if error:
        ready = None
    elif ready_condition is not None:
        ready = ready_condition.get("status") == "True"
    else:
        ready = bool(gateway.get("address"))
    return {"address": gateway.get("address"), "ca_fingerprint": ca_fingerprint(gateway.get("caCertificate")),
            "ready": ready, "error": error_summary(task_error(error)) if error else None}


def summary_line(name: str, found: dict[str, Any]) -> str:
    """``<name>: address <address|pending>, CA <fingerprint|->, Ready <True|False>`` or ``<name>: <error>``."""
    if found.get("error"):
        return f"{name}: cannot read the status: {found['error']}"
    return (f"{name}: address {found.get('address') or 'pending'}, CA {found.get('ca_fingerprint') or '-'}, "
            f"Ready {found.get('ready')}")


_WRAPPERS = re.compile(
    r"^(?:(?:Task|Action) failed: )*(?:Finalization of task args for '[^']+' failed: )?"
    r"(?:Error while resolving value for '[^']+': )?(?:The (?:lookup|filter|test) plugin '[^']+' failed: )?")


def task_error(message: object) -> str:
    """A failed task's message on one line, without the layers Ansible wraps around a lookup's or a template's
    error ("Task failed: Finalization of task args for 'set_fact' failed: Error while resolving value for ...")."""
    text = " ".join(str(message or "").split())
    return _WRAPPERS.sub("", text) or "failed"


# The options of the servingstack_status_update module (besides kubernetes.core's connection options).
UPDATE_OPTIONS: dict[str, dict[str, Any]] = {
    "name": {"type": "str", "required": True},
    "namespace": {"type": "str", "required": True},
    "status": {"type": "dict"},
    "components": {"type": "list", "elements": "dict"},
    "failed": {"type": "dict", "default": {}},
    "stopped": {"type": "str"},
    "stopped_at": {"type": "str", "default": "components", "choices": list(STOPPED_AT)},
    "observed_generation": {"type": "int"},
}


def now() -> str:
    """The current time as a condition's ``lastTransitionTime`` (RFC 3339, UTC, seconds)."""
    return datetime.datetime.now(datetime.timezone.utc).strftime("%Y-%m-%dT%H:%M:%SZ")  # noqa: UP017 (any Python 3)


def status_update(current: dict[str, Any], params: dict[str, Any], now: str,
                  diff: bool = False) -> tuple[dict[str, Any], dict[str, Any]]:
    """(the module's result, the JSON merge patch of ``status`` to write: empty when the status is as wanted).

    The keys servingstack_status_update owns, from the status ``current`` and the module's ``params``; ``now`` for a
    condition's transition time. ``gateway`` with ``status`` (a key it no longer has is removed); with ``stopped`` the
    conditions and ``observedGeneration`` (stopped at ``status``, once the components ran, ``components`` too); else,
    with ``components``, the conditions, ``components`` and ``observedGeneration``. A key left out is left as it is."""
    wanted: dict[str, Any] = {}
    result: dict[str, Any] = {}
    if params["status"] is not None:
        wanted["gateway"] = dict(params["status"].get("gateway") or {})
    plan, message, generation = params["components"], params.get("stopped"), params["observed_generation"]
    failed = {str(name): str(error) for name, error in (params["failed"] or {}).items()}
    conditions = None
    if message:
        stopped_at = params.get("stopped_at") or "components"
        # Once the components ran, what each came to is known and the message names those that did not converge;
        # stopped before, nothing of the target was read and status.components stays as it is.
        if stopped_at == "status" and plan is not None:
            wanted["components"] = components_status(plan, failed, current.get("components"))
            message = f"{', '.join(failed)} did not converge, then {message}" if failed else message
        conditions = stopped_conditions(stopped_at, message)
    elif plan is not None:
        address = wanted.get("gateway", {}).get("address")
        pending = (params["status"] or {}).get("pending") or "the Gateway has no address yet"
        result["pending"] = "" if address else pending
        conditions = wanted_conditions(plan, failed, address, result["pending"])
        wanted["components"] = components_status(plan, failed, current.get("components"))
    if conditions is not None:
        wanted["conditions"] = merge_conditions(current.get("conditions"), conditions, generation, now)
        if generation is not None:
            wanted["observedGeneration"] = generation
    patch = {key: value for key, value in wanted.items() if key != "gateway" and current.get(key) != value}
    before = dict(current.get("gateway") or {})
    if "gateway" in wanted:
        gateway = {key: None for key in before if key not in wanted["gateway"]}
        gateway.update({key: value for key, value in wanted["gateway"].items() if before.get(key) != value})
        if gateway:
            patch["gateway"] = gateway
    result.update({"changed": bool(patch), "gateway": before, **wanted})
    if "observedGeneration" in result:
        result["observed_generation"] = result.pop("observedGeneration")
    if diff:
        result["diff"] = {"before": {key: current.get(key) for key in wanted}, "after": wanted}
    return result, patch
