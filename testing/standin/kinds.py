"""Defaulting and light validation of built-in kinds (the subset our code can trip over)."""

from __future__ import annotations

import base64
import binascii
import re
from typing import Any

from .schema import Cause, show

DNS1123_LABEL = re.compile(r"^[a-z0-9]([-a-z0-9]*[a-z0-9])?$")
DNS1123_SUBDOMAIN = re.compile(r"^[a-z0-9]([-a-z0-9]*[a-z0-9])?(\.[a-z0-9]([-a-z0-9]*[a-z0-9])?)*$")
LABEL_VALUE = re.compile(r"^(([A-Za-z0-9][-A-Za-z0-9_.]*)?[A-Za-z0-9])?$")
QUALIFIED_NAME = re.compile(r"^([A-Za-z0-9][-A-Za-z0-9_.]*)?[A-Za-z0-9]$")
CONFIG_KEY = re.compile(r"^[-._a-zA-Z0-9]+$")

# Kinds whose names are DNS-1123 labels rather than subdomains.
LABEL_NAMED = {"Namespace", "Service"}
# Kinds whose names are path segments (anything but / and %); RBAC names allow ':' and capitals.
PATH_NAMED = {"Role", "ClusterRole", "RoleBinding", "ClusterRoleBinding", "ServiceAccount"}


def _invalid(field: str, value: Any, detail: str) -> Cause:
    return Cause("FieldValueInvalid", field, f"{field}: Invalid value: {show(value)}: {detail}")


def _required(field: str, detail: str = "") -> Cause:
    return Cause("FieldValueRequired", field, f"{field}: Required value" + (f": {detail}" if detail else ""))


def validate_name(kind: str, name: str) -> list[Cause]:
    field = "metadata.name"
    if kind in PATH_NAMED:
        if name in (".", "..") or "/" in name or "%" in name:
            return [_invalid(field, name, 'may not contain "/" or "%"')]
        return []
    if kind in LABEL_NAMED:
        if len(name) > 63 or not DNS1123_LABEL.match(name):
            return [_invalid(field, name, "a lowercase RFC 1123 label must consist of lower case alphanumeric "
                                          "characters or '-', and must start and end with an alphanumeric character "
                                          "(e.g. 'my-name',  or '123-abc', regex used for validation is "
                                          "'[a-z0-9]([-a-z0-9]*[a-z0-9])?')")]
        return []
    if len(name) > 253 or not DNS1123_SUBDOMAIN.match(name):
        return [_invalid(field, name, "a lowercase RFC 1123 subdomain must consist of lower case alphanumeric "
                                      "characters, '-' or '.', and must start and end with an alphanumeric character "
                                      "(e.g. 'example.com', regex used for validation is "
                                      "'[a-z0-9]([-a-z0-9]*[a-z0-9])?(\\.[a-z0-9]([-a-z0-9]*[a-z0-9])?)*')")]
    return []


def _qualified_key(field: str, key: str) -> list[Cause]:
    prefix, _slash, name = key.rpartition("/")
    problems = []
    if prefix and (len(prefix) > 253 or not DNS1123_SUBDOMAIN.match(prefix)):
        problems.append("prefix part must be a lowercase RFC 1123 subdomain")
    if not name or len(name) > 63 or not QUALIFIED_NAME.match(name):
        problems.append("name part must consist of alphanumeric characters, '-', '_' or '.', and must start and "
                        "end with an alphanumeric character")
    return [_invalid(field, key, p) for p in problems]


def validate_metadata(meta: dict[str, Any]) -> list[Cause]:
    causes = []
    for key, value in (meta.get("labels") or {}).items():
        causes.extend(_qualified_key("metadata.labels", key))
        if not isinstance(value, str) or len(value) > 63 or not LABEL_VALUE.match(value):
            causes.append(_invalid("metadata.labels", value,
                                   "a valid label must be an empty string or consist of alphanumeric characters, "
                                   "'-', '_' or '.', and must start and end with an alphanumeric character"))
    annotations = meta.get("annotations") or {}
    size = sum(len(k) + len(v) for k, v in annotations.items() if isinstance(v, str))
    if size > 262144:
        causes.append(Cause("FieldValueTooLong", "metadata.annotations",
                            "metadata.annotations: Too long: may not be more than 262144 bytes"))
    for key, value in annotations.items():
        causes.extend(_qualified_key("metadata.annotations", key))
        if not isinstance(value, str):
            causes.append(_invalid(f"metadata.annotations[{key}]", value, "must be a string"))
    return causes


# ---------------------------------------------------------------- decoding


def _json_type(value: Any) -> str:
    if isinstance(value, bool):
        return "bool"
    if isinstance(value, int | float):
        return "number"
    if isinstance(value, list):
        return "array"
    if isinstance(value, dict):
        return "object"
    return "null" if value is None else "string"


def decode_errors(kind: str, obj: dict[str, Any]) -> list[str]:
    """Go's JSON decoding refusals for string fields that YAML often turns into numbers or booleans.

    The API server answers these with 400 BadRequest before any validation.
    """
    problems: list[tuple[str, Any]] = []
    meta = obj.get("metadata") or {}
    for field in ("labels", "annotations"):
        problems += [(f"ObjectMeta.{field}", v) for v in (meta.get(field) or {}).values()]
    if kind in ("ConfigMap", "Secret"):
        for field in ("data", "stringData", "binaryData"):
            problems += [(f"{kind}.{field}", v) for v in (obj.get(field) or {}).values()]
    spec = obj.get("spec") if isinstance(obj.get("spec"), dict) else {}
    pod = spec.get("template", {}).get("spec") if isinstance(spec.get("template"), dict) else spec
    if isinstance(pod, dict):
        for group in ("initContainers", "containers"):
            for container in pod.get(group) or []:
                for env in (container.get("env") or []) if isinstance(container, dict) else []:
                    if isinstance(env, dict) and "value" in env:
                        problems.append(("EnvVar.value", env["value"]))
    return [f"json: cannot unmarshal {_json_type(v)} into Go struct field {where} of type string"
            for where, v in problems if v is not None and not isinstance(v, str)]


# ---------------------------------------------------------------- defaults


def _pull_policy(image: str) -> str:
    tail = image.rsplit("/", 1)[-1]
    if "@" in tail:
        return "IfNotPresent"
    if ":" not in tail or tail.endswith(":latest"):
        return "Always"
    return "IfNotPresent"


def default_pod_spec(spec: dict[str, Any]) -> None:
    spec.setdefault("restartPolicy", "Always")
    spec.setdefault("terminationGracePeriodSeconds", 30)
    spec.setdefault("dnsPolicy", "ClusterFirst")
    spec.setdefault("securityContext", {})
    spec.setdefault("schedulerName", "default-scheduler")
    if spec.get("serviceAccountName") and "serviceAccount" not in spec:
        spec["serviceAccount"] = spec["serviceAccountName"]
    for group in ("initContainers", "containers"):
        for container in spec.get(group) or []:
            if not isinstance(container, dict):
                continue
            if isinstance(container.get("image"), str):
                container.setdefault("imagePullPolicy", _pull_policy(container["image"]))
            container.setdefault("terminationMessagePath", "/dev/termination-log")
            container.setdefault("terminationMessagePolicy", "File")
            container.setdefault("resources", {})
            for port in container.get("ports") or []:
                if isinstance(port, dict):
                    port.setdefault("protocol", "TCP")


def _template(obj: dict[str, Any]) -> dict[str, Any] | None:
    spec = obj.get("spec")
    if isinstance(spec, dict) and isinstance(spec.get("template"), dict):
        return spec["template"]
    return None


def apply_defaults(kind: str, obj: dict[str, Any], cluster_ip: str) -> None:
    """Set the defaults the API server would (idempotent: rerunning on a defaulted object is a no-op)."""
    spec = obj.get("spec") if isinstance(obj.get("spec"), dict) else None
    if kind == "Secret":
        obj.setdefault("type", "Opaque")
    elif kind == "Namespace":
        obj.setdefault("spec", {}).setdefault("finalizers", ["kubernetes"])
        obj.setdefault("status", {}).setdefault("phase", "Active")
        obj["metadata"].setdefault("labels", {})["kubernetes.io/metadata.name"] = obj["metadata"]["name"]
    elif kind == "Service" and spec is not None:
        spec.setdefault("type", "ClusterIP")
        spec.setdefault("sessionAffinity", "None")
        if spec["type"] != "ExternalName":
            spec.setdefault("clusterIP", cluster_ip)
            spec.setdefault("clusterIPs", [spec["clusterIP"]])
            spec.setdefault("ipFamilies", ["IPv4"])
            spec.setdefault("ipFamilyPolicy", "SingleStack")
            spec.setdefault("internalTrafficPolicy", "Cluster")
        if spec["type"] in ("LoadBalancer", "NodePort"):
            spec.setdefault("externalTrafficPolicy", "Cluster")
        if spec["type"] == "LoadBalancer":
            spec.setdefault("allocateLoadBalancerNodePorts", True)
        for port in spec.get("ports") or []:
            if isinstance(port, dict):
                port.setdefault("protocol", "TCP")
                if "port" in port:
                    port.setdefault("targetPort", port["port"])
        obj.setdefault("status", {}).setdefault("loadBalancer", {})
    elif kind == "Deployment" and spec is not None:
        spec.setdefault("replicas", 1)
        spec.setdefault("revisionHistoryLimit", 10)
        spec.setdefault("progressDeadlineSeconds", 600)
        strategy = spec.setdefault("strategy", {})
        strategy.setdefault("type", "RollingUpdate")
        if strategy["type"] == "RollingUpdate":
            rolling = strategy.setdefault("rollingUpdate", {})
            rolling.setdefault("maxUnavailable", "25%")
            rolling.setdefault("maxSurge", "25%")
    elif kind == "DaemonSet" and spec is not None:
        spec.setdefault("revisionHistoryLimit", 10)
        strategy = spec.setdefault("updateStrategy", {})
        strategy.setdefault("type", "RollingUpdate")
        if strategy["type"] == "RollingUpdate":
            rolling = strategy.setdefault("rollingUpdate", {})
            rolling.setdefault("maxUnavailable", 1)
            rolling.setdefault("maxSurge", 0)
    elif kind == "StatefulSet" and spec is not None:
        spec.setdefault("replicas", 1)
        spec.setdefault("podManagementPolicy", "OrderedReady")
        spec.setdefault("revisionHistoryLimit", 10)
        strategy = spec.setdefault("updateStrategy", {})
        strategy.setdefault("type", "RollingUpdate")
        if strategy["type"] == "RollingUpdate":
            strategy.setdefault("rollingUpdate", {}).setdefault("partition", 0)
        policy = spec.setdefault("persistentVolumeClaimRetentionPolicy", {})
        policy.setdefault("whenDeleted", "Retain")
        policy.setdefault("whenScaled", "Retain")
    elif kind == "Job" and spec is not None:
        spec.setdefault("backoffLimit", 6)
        spec.setdefault("completions", 1)
        spec.setdefault("parallelism", 1)
        spec.setdefault("completionMode", "NonIndexed")
        spec.setdefault("suspend", False)
    elif kind == "PriorityClass":
        obj.setdefault("preemptionPolicy", "PreemptLowerPriority")
    elif kind == "Pod" and spec is not None:
        default_pod_spec(spec)
    if kind in ("Deployment", "DaemonSet", "StatefulSet", "Job", "ReplicaSet"):
        template = _template(obj)
        if template is not None and isinstance(template.get("spec"), dict):
            # Jobs get the pod default restartPolicy Always too, which validation then refuses.
            default_pod_spec(template["spec"])


# ---------------------------------------------------------------- validation


def _pod_spec(spec: Any, field: str) -> list[Cause]:
    if not isinstance(spec, dict):
        return [_required(field)]
    causes = []
    containers = spec.get("containers")
    if not containers:
        causes.append(_required(f"{field}.containers"))
    names: set[str] = set()
    for group in ("initContainers", "containers"):
        for i, container in enumerate(spec.get(group) or []):
            base = f"{field}.{group}[{i}]"
            if not isinstance(container, dict):
                causes.append(_invalid(base, container, "must be an object"))
                continue
            name = container.get("name")
            if not name:
                causes.append(_required(f"{base}.name"))
            elif not DNS1123_LABEL.match(name) or len(name) > 63:
                causes.append(_invalid(f"{base}.name", name, "a lowercase RFC 1123 label must consist of lower "
                                                             "case alphanumeric characters or '-'"))
            elif name in names:
                causes.append(Cause("FieldValueDuplicate", f"{base}.name",
                                    f"{base}.name: Duplicate value: {show(name)}"))
            names.add(name or "")
            if group == "containers" and not container.get("image"):
                causes.append(_required(f"{base}.image"))
            for j, port in enumerate(container.get("ports") or []):
                number = port.get("containerPort") if isinstance(port, dict) else None
                if not isinstance(number, int) or not 0 < number < 65536:
                    causes.append(_invalid(f"{base}.ports[{j}].containerPort", number,
                                           "must be between 1 and 65535, inclusive"))
    return causes


def _selector_matches(selector: Any, labels: dict[str, str]) -> bool:
    if not isinstance(selector, dict):
        return False
    for key, value in (selector.get("matchLabels") or {}).items():
        if labels.get(key) != value:
            return False
    for expr in selector.get("matchExpressions") or []:
        key, op, values = expr.get("key"), expr.get("operator"), expr.get("values") or []
        present = key in labels
        if (op == "In" and labels.get(key) not in values) or (op == "NotIn" and labels.get(key) in values):
            return False
        if (op == "Exists" and not present) or (op == "DoesNotExist" and present):
            return False
    return True


def _workload(kind: str, obj: dict[str, Any], old: dict[str, Any] | None) -> list[Cause]:
    spec = obj.get("spec")
    if not isinstance(spec, dict):
        return [_required("spec")]
    causes = []
    selector = spec.get("selector")
    has_selector = isinstance(selector, dict) and (selector.get("matchLabels") or selector.get("matchExpressions"))
    if kind != "Job" and not has_selector:
        causes.append(_required("spec.selector"))
    template = spec.get("template")
    if not isinstance(template, dict):
        causes.append(_required("spec.template"))
        return causes
    labels = (template.get("metadata") or {}).get("labels") or {}
    if kind != "Job" and isinstance(selector, dict) and selector and not _selector_matches(selector, labels):
        message = "`selector` does not match template `labels`"
        causes.append(_invalid("spec.template.metadata.labels", labels, message))
    causes.extend(_pod_spec(template.get("spec"), "spec.template.spec"))
    pod = template.get("spec") if isinstance(template.get("spec"), dict) else {}
    if kind == "Job" and pod.get("restartPolicy") not in ("OnFailure", "Never"):
        causes.append(Cause("FieldValueNotSupported", "spec.template.spec.restartPolicy",
                            f'spec.template.spec.restartPolicy: Unsupported value: {show(pod.get("restartPolicy"))}: '
                            'supported values: "OnFailure", "Never"'))
    for field in ("replicas",):
        value = spec.get(field)
        if value is not None and (not isinstance(value, int) or value < 0):
            causes.append(_invalid(f"spec.{field}", value, "must be greater than or equal to 0"))
    if old is not None and kind != "Job":
        old_sel = (old.get("spec") or {}).get("selector")
        if old_sel is not None and selector != old_sel:
            causes.append(_invalid("spec.selector", selector, "field is immutable"))
    return causes


def _service(obj: dict[str, Any]) -> list[Cause]:
    spec = obj.get("spec")
    if not isinstance(spec, dict):
        return [_required("spec")]
    causes = []
    kind = spec.get("type", "ClusterIP")
    if kind not in ("ClusterIP", "NodePort", "LoadBalancer", "ExternalName"):
        causes.append(Cause("FieldValueNotSupported", "spec.type",
                            f'spec.type: Unsupported value: {show(kind)}: supported values: "ClusterIP", '
                            '"ExternalName", "LoadBalancer", "NodePort"'))
    ports = spec.get("ports") or []
    if not ports and kind != "ExternalName" and spec.get("clusterIP") != "None":
        causes.append(_required("spec.ports"))
    for i, port in enumerate(ports):
        number = port.get("port") if isinstance(port, dict) else None
        if not isinstance(number, int) or not 0 < number < 65536:
            causes.append(_invalid(f"spec.ports[{i}].port", number, "must be between 1 and 65535, inclusive"))
        if len(ports) > 1 and isinstance(port, dict) and not port.get("name"):
            causes.append(_required(f"spec.ports[{i}].name"))
    return causes


def _data_keys(obj: dict[str, Any], fields: tuple[str, ...]) -> list[Cause]:
    causes = []
    for field in fields:
        for key in obj.get(field) or {}:
            if not CONFIG_KEY.match(key) or len(key) > 253:
                causes.append(_invalid(f"{field}[{key}]", key, "a valid config key must consist of alphanumeric "
                                                               "characters, '-', '_' or '.'"))
    return causes


def _immutable_and_size(obj: dict[str, Any], old: dict[str, Any] | None, fields: tuple[str, ...]) -> list[Cause]:
    causes = []

    def length(field: str, value: str) -> int:  # Secret data and binaryData count decoded bytes
        if (field == "data" and obj.get("kind") != "Secret") or field not in ("data", "binaryData"):
            return len(value.encode())
        try:
            return len(base64.b64decode(value))
        except (binascii.Error, ValueError):
            return len(value)

    size = sum(len(k) + length(f, v) for f in fields for k, v in (obj.get(f) or {}).items() if isinstance(v, str))
    if size > 1024 * 1024:
        causes.append(Cause("FieldValueTooLong", "data", "data: Too long: may not be more than 1048576 bytes"))
    if old is not None and old.get("immutable"):
        for field in fields:
            if (obj.get(field) or {}) != (old.get(field) or {}):
                causes.append(Cause("FieldValueForbidden", field,
                                    f"{field}: Forbidden: field is immutable when `immutable` is set"))
        if not obj.get("immutable"):
            causes.append(Cause("FieldValueForbidden", "immutable",
                                "immutable: Forbidden: field is immutable when `immutable` is set"))
    return causes


def _secret(obj: dict[str, Any], old: dict[str, Any] | None) -> list[Cause]:
    causes = _data_keys(obj, ("data",)) + _immutable_and_size(obj, old, ("data",))
    for key, value in (obj.get("data") or {}).items():
        try:
            base64.b64decode(value or "", validate=True)
        except (binascii.Error, TypeError, ValueError):
            causes.append(_invalid(f"data[{key}]", "<secret>", "illegal base64 data"))
    if old is not None and old.get("type") != obj.get("type"):
        causes.append(_invalid("type", obj.get("type"), "field is immutable"))
    if obj.get("type") == "kubernetes.io/tls":
        for key in ("tls.crt", "tls.key"):
            if key not in (obj.get("data") or {}):
                causes.append(_required(f"data[{key}]"))
    return causes


def _rbac_rules(obj: dict[str, Any]) -> list[Cause]:
    causes = []
    for i, rule in enumerate(obj.get("rules") or []):
        if not isinstance(rule, dict) or not rule.get("verbs"):
            causes.append(_required(f"rules[{i}].verbs", "verbs must contain at least one value"))
        elif not rule.get("nonResourceURLs") and not rule.get("resources"):
            causes.append(_required(f"rules[{i}].resources", "resource rules must supply at least one resource"))
    return causes


def _binding(obj: dict[str, Any], old: dict[str, Any] | None) -> list[Cause]:
    ref = obj.get("roleRef")
    causes = []
    if not isinstance(ref, dict) or not ref.get("name") or not ref.get("kind"):
        causes.append(_required("roleRef"))
    elif old is not None and old.get("roleRef") != ref:
        causes.append(_invalid("roleRef", ref, "cannot change roleRef"))
    for i, subject in enumerate(obj.get("subjects") or []):
        if not isinstance(subject, dict) or not subject.get("name"):
            causes.append(_required(f"subjects[{i}].name"))
        elif subject.get("kind") == "ServiceAccount" and not subject.get("namespace") and \
                obj.get("kind") == "ClusterRoleBinding":
            causes.append(_required(f"subjects[{i}].namespace"))
    return causes


def validate(kind: str, obj: dict[str, Any], old: dict[str, Any] | None) -> list[Cause]:
    """Light validation of built-in kinds, in the API server's words."""
    if kind in ("Deployment", "DaemonSet", "StatefulSet", "Job", "ReplicaSet"):
        return _workload(kind, obj, old)
    if kind == "Pod":
        return _pod_spec(obj.get("spec"), "spec")
    if kind == "Service":
        return _service(obj)
    if kind == "ConfigMap":
        return _data_keys(obj, ("data", "binaryData")) + _immutable_and_size(obj, old, ("data", "binaryData"))
    if kind == "Secret":
        return _secret(obj, old)
    if kind in ("Role", "ClusterRole"):
        return _rbac_rules(obj)
    if kind in ("RoleBinding", "ClusterRoleBinding"):
        return _binding(obj, old)
    if kind == "PriorityClass" and not isinstance(obj.get("value"), int):
        return [_required("value")]
    return []
