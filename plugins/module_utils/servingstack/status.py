# Copyright 2026 The modelplane.serving authors
# Apache License 2.0 (see LICENSE)
"""A ServingStack's status: ``status.gateway`` from the objects in the target cluster (the ``servingstack_status``
lookup reads them), the conditions, components and generation servingstack_status_update writes, and the summary
of playbooks/status.yml.

Pure functions over API objects (dicts as the API returns them).
"""

from __future__ import annotations

import base64
import binascii
import hashlib
import re
from typing import Any

# Limits of the ServingStack status schema.
ADDRESS_MAX = 256
CA_MAX = 16384
# How the spec module's message starts when it refuses a ServingStack (outcome.py).
INVALID_SPEC = "invalid ServingStack:"
# How the message of a converge that waited for another run's Lease in vain starts (lease.py, busy_message).
ANOTHER_CONVERGE = "another converge of the target cluster"

_CERTIFICATE = re.compile(r"-----BEGIN CERTIFICATE-----\r?\n[A-Za-z0-9+/=\r\n]+?-----END CERTIFICATE-----")


def gateway_address(gateway: dict[str, Any] | None) -> str | None:
    """``status.addresses[0].value`` of a Gateway, or None before one is assigned."""
    addresses = ((gateway or {}).get("status") or {}).get("addresses") or []
    first = next(iter(addresses), None)
    value = first.get("value") if isinstance(first, dict) else None
    return value if isinstance(value, str) and 0 < len(value) <= ADDRESS_MAX else None


def first_certificate(text: str | None) -> str | None:
    """The first PEM CERTIFICATE block in ``text``, or None (anything else, keys included, is never returned)."""
    found = _CERTIFICATE.search(text or "")
    return found.group(0).replace("\r\n", "\n") + "\n" if found else None


def ca_certificate(source: dict[str, Any] | None, encoded: bool = False) -> str | None:
    """The first certificate under ``data["ca.crt"]`` of a ConfigMap, or of a Secret (``encoded``: base64), if it
    fits the status; never the Secret's ``tls.key``."""
    text = ((source or {}).get("data") or {}).get("ca.crt")
    if text and encoded:
        try:
            text = base64.b64decode(str(text), validate=True).decode("utf-8")
        except (binascii.Error, UnicodeDecodeError):
            return None
    found = first_certificate(text)
    return found if found and len(found) <= CA_MAX else None


LB_CONTROLLER_MISSING = (
    "the cluster has no load-balancer controller (a cloud provider's, MetalLB, cloud-provider-kind) to assign one")


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


# ----------------------------------------------------------------------------- error summaries
MESSAGE_MAX = 1024
SUMMARY_MAX = 400
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
    """``text`` within ``limit`` characters: its start and its end, joined by "…". Both ends are kept because the
    cause is often last (ansible-core puts the task and the plugin before a lookup's or filter's own message)."""
    if len(text) <= limit:
        return text
    head = (limit - 1) // 3
    return text[:head] + "…" + text[len(text) - (limit - 1 - head):]


def error_summary(message: object) -> str:
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
    for more in lines[1:]:
        if (not line.endswith(":") and not more.startswith("*")) or not more:
            break
        line = f"{line} {more}"
    line = line or "failed"
    for pattern in (_BEARER, _FLAG, _SECRET_ASSIGNED, _SECRET_LABELLED):
        line = pattern.sub(r"\1<redacted>", line)
    return _clip(_BLOB.sub(_blob, line), SUMMARY_MAX)


# ----------------------------------------------------------------------------- conditions and components
# status.conditions follow metav1.Condition; status.components is one entry per planned component.
READY = "Ready"
SYNCED = "Synced"
# The target refused the credentials (401, or 403 to the converge's identity), or the client could not use them
# (a kubeconfig that does not load, an exec credential plugin that failed).
_REFUSED = re.compile(r"\b(?:Unauthorized|Forbidden)\b|cannot load the kubeconfig|\bexec(?: plugin)?:", re.I)
# The target's API server did not answer: connection refused or reset, DNS, TLS, a timeout.
_UNREACHABLE = re.compile(
    r"cannot reach the cluster|Connection (?:refused|reset|aborted)|Remote end closed|No route to host|"
    r"Network is unreachable|Name or service not known|nodename nor servname|name resolution|Failed to resolve|"
    r"No address associated|getaddrinfo|\bSSL|certificate verify failed|timed out|Max retries exceeded", re.I)


def stopped_reason(stopped_at: str, message: str) -> str:
    """The condition reason of a converge that stopped at ``stopped_at`` with ``message`` (the reasons and the
    places a converge stops are servingstack_status_update's ``stopped`` and ``stopped_at``). ``message`` is the failed
    task's as ansible-core gives it, so our own words are looked for anywhere in it."""
    if stopped_at == "spec":
        return "InvalidSpec" if INVALID_SPEC in message else "ConvergeFailed"
    if stopped_at == "credentials" or _REFUSED.search(message):
        return "CredentialsUnavailable"
    if _UNREACHABLE.search(message):
        return "ClusterUnreachable"
    if stopped_at == "lease":
        return "ConvergeInProgress" if ANOTHER_CONVERGE in message else "ConvergeFailed"
    return "PreflightFailed" if stopped_at == "preflight" else "ConvergeFailed"


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


def wanted_conditions(plan: list[dict[str, Any]], failed: dict[str, str], address: str | None,
                      pending: str, recovered: list[str] | None = None) -> list[dict[str, str]]:
    """``Ready`` and ``Synced`` (``type``, ``status``, ``reason``, ``message``; ``merge_conditions`` adds the rest).

    A component that failed: both False, ``<Component>Failed`` for the first in plan order, the message naming each
    with its error. Else Synced is True, and Ready True once the gateway has an ``address`` (``pending``: why not).
    """
    names = [str(component["name"]) for component in plan]
    failures = [name for name in names if name in failed] + sorted(set(failed) - set(names))
    if failures:
        # A condition's reason is CamelCase: cert_manager -> CertManagerFailed.
        reason = "".join(part[:1].upper() + part[1:] for part in re.split(r"[_\W]+", failures[0]) if part) + "Failed"
        message = "; ".join(f"{name}: {error_summary(failed[name])}" for name in failures)
        return [_condition(kind, "False", reason, message) for kind in (READY, SYNCED)]
    ready = (["True", "Available", f"every component converged and the gateway is at {address}"] if address
             else ["False", "GatewayAddressPending", pending])
    # Releases a run that did not finish left pending, and this one recovered first, are said until the next run.
    said = "".join(f"; {error_summary(line)}" for line in recovered or [])
    synced = ["True", "Converged", f"all {len(names)} components converged{said}"]
    return [_condition(READY, *ready), _condition(SYNCED, *synced)]


def _condition(kind: str, status: str, reason: str, message: str) -> dict[str, str]:
    return {"type": kind, "status": status, "reason": reason, "message": _clip(message, MESSAGE_MAX)}


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


def status_update(current: dict[str, Any], params: dict[str, Any], now: str,
                  diff: bool = False) -> tuple[dict[str, Any], dict[str, Any]]:
    """(the module's result, the JSON merge patch of ``status`` to write: empty when the status is as wanted).

    The keys servingstack_status_update owns, from the status ``current`` and the module's ``params`` (its options
    say which it writes when); ``now`` for a condition's transition time. A key left out is left as it is."""
    plan, stopped, generation = params["components"], params.get("stopped"), params["observed_generation"]
    stopped_at = params.get("stopped_at") or "components"
    failed = {str(name): str(error) for name, error in (params["failed"] or {}).items()}
    wanted: dict[str, Any] = {}
    result: dict[str, Any] = {}
    if params["status"] is not None:
        wanted["gateway"] = dict(params["status"].get("gateway") or {})
    # Stopped before the components were done, nothing of the target was read: status.components stays as it is.
    # Once they ran, what each came to is known, and the message names those that did not converge.
    if plan is not None and (not stopped or stopped_at == "status"):
        wanted["components"] = components_status(plan, failed, current.get("components"))
    found = None
    if stopped:
        if stopped_at == "status" and failed:
            stopped = f"{', '.join(failed)} did not converge, then {stopped}"
        reason = stopped_reason(stopped_at, stopped)
        found = [_condition(kind, "False", reason, error_summary(stopped)) for kind in (READY, SYNCED)]
    elif plan is not None:
        address = wanted.get("gateway", {}).get("address")
        pending = (params["status"] or {}).get("pending") or "the Gateway has no address yet"
        result["pending"] = "" if address else pending
        found = wanted_conditions(plan, failed, address, result["pending"], params.get("recovered"))
    if found is not None:
        wanted["conditions"] = merge_conditions(current.get("conditions"), found, generation, now)
        if generation is not None:
            wanted["observedGeneration"] = result["observed_generation"] = generation
    before = {**current, "gateway": dict(current.get("gateway") or {})}
    patch = {key: value for key, value in wanted.items() if before.get(key) != value}
    if "gateway" in patch:  # a merge patch: the keys the gateway no longer has are removed
        patch["gateway"] = {**dict.fromkeys(before["gateway"]), **patch["gateway"]}
    result.update({"changed": bool(patch), "gateway": before["gateway"], **wanted})
    result.pop("observedGeneration", None)
    if diff:
        result["diff"] = {"before": {key: current.get(key) for key in wanted}, "after": wanted}
    return result, patch


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


def summary(status: dict[str, Any] | None, conditions: list[dict[str, Any]] | None = None,
            error: str | None = None) -> dict[str, Any]:
    """One cluster's summary in ``playbooks/status.yml`` (the ``servingstack_status_summary`` filter): ``address``,
    ``ca_fingerprint``, ``ready`` and ``error``.

    ``ready`` is the ServingStack's Ready condition where the converge wrote one (True/False), else whether the
    gateway has an address; None when the status could not be read (``error`` says why)."""
    gateway = (status or {}).get("gateway") or {}
    ready = next((item.get("status") == "True" for item in conditions or [] if item.get("type") == READY),
                 bool(gateway.get("address")))
    return {"address": gateway.get("address"), "ca_fingerprint": ca_fingerprint(gateway.get("caCertificate")),
            "ready": None if error else ready, "error": error_summary(error) if error else None}
