"""The resource types the stand-in serves: built-in kinds plus every established CRD version."""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

VERBS = ["create", "delete", "deletecollection", "get", "list", "patch", "update", "watch"]


@dataclass(frozen=True)
class ResourceType:
    """One served resource (group, version, plural) and how the server treats it."""

    group: str
    version: str
    plural: str
    kind: str
    namespaced: bool
    short_names: tuple[str, ...] = ()
    status: bool = False  # has a separate /status subresource
    generation: bool = False  # metadata.generation is maintained
    schema: dict[str, Any] | None = None  # openAPIV3Schema (custom resources only)
    custom: bool = False  # served from a CRD (strategic merge patch answers 415)
    categories: tuple[str, ...] = ()
    scale: bool = False
    validations: tuple[Any, ...] = field(default=(), compare=False)

    @property
    def group_version(self) -> str:
        return f"{self.group}/{self.version}" if self.group else self.version

    @property
    def singular(self) -> str:
        return self.kind.lower()

    @property
    def qualified(self) -> str:
        """The name a Status message uses: `Gateway.gateway.networking.k8s.io`, or `Pod` for core."""
        return f"{self.kind}.{self.group}" if self.group else self.kind

    @property
    def resource_key(self) -> str:
        """`deployments.apps`, `secrets`: how request counts name a resource."""
        return f"{self.plural}.{self.group}" if self.group else self.plural

    def discovery(self) -> list[dict[str, Any]]:
        entry: dict[str, Any] = {
            "name": self.plural,
            "singularName": self.singular,
            "namespaced": self.namespaced,
            "kind": self.kind,
            "verbs": list(VERBS),
        }
        if self.short_names:
            entry["shortNames"] = list(self.short_names)
        if self.categories:
            entry["categories"] = list(self.categories)
        out = [entry]
        if self.status:
            out.append(
                {
                    "name": f"{self.plural}/status",
                    "singularName": "",
                    "namespaced": self.namespaced,
                    "kind": self.kind,
                    "verbs": ["get", "patch", "update"],
                }
            )
        return out


def _t(group: str, version: str, plural: str, kind: str, namespaced: bool = True, **kw: Any) -> ResourceType:
    return ResourceType(group, version, plural, kind, namespaced, **kw)


BUILTIN: tuple[ResourceType, ...] = (
    _t("", "v1", "namespaces", "Namespace", False, short_names=("ns",), status=True),
    _t("", "v1", "secrets", "Secret"),
    _t("", "v1", "configmaps", "ConfigMap", short_names=("cm",)),
    _t("", "v1", "services", "Service", short_names=("svc",), status=True, categories=("all",)),
    _t("", "v1", "serviceaccounts", "ServiceAccount", short_names=("sa",)),
    _t("", "v1", "events", "Event", short_names=("ev",)),
    _t("", "v1", "resourcequotas", "ResourceQuota", short_names=("quota",), status=True),
    _t("", "v1", "pods", "Pod", short_names=("po",), status=True, categories=("all",)),
    _t("", "v1", "endpoints", "Endpoints", short_names=("ep",)),
    _t("", "v1", "nodes", "Node", False, short_names=("no",), status=True),
    _t("", "v1", "persistentvolumeclaims", "PersistentVolumeClaim", short_names=("pvc",), status=True),
    _t("apps", "v1", "deployments", "Deployment", short_names=("deploy",), status=True, generation=True,
       categories=("all",), scale=True),
    _t("apps", "v1", "daemonsets", "DaemonSet", short_names=("ds",), status=True, generation=True,
       categories=("all",)),
    _t("apps", "v1", "statefulsets", "StatefulSet", short_names=("sts",), status=True, generation=True,
       categories=("all",), scale=True),
    _t("apps", "v1", "replicasets", "ReplicaSet", short_names=("rs",), status=True, generation=True,
       categories=("all",), scale=True),
    _t("batch", "v1", "jobs", "Job", status=True, generation=True, categories=("all",)),
    _t("batch", "v1", "cronjobs", "CronJob", short_names=("cj",), status=True, generation=True),
    _t("rbac.authorization.k8s.io", "v1", "roles", "Role"),
    _t("rbac.authorization.k8s.io", "v1", "rolebindings", "RoleBinding"),
    _t("rbac.authorization.k8s.io", "v1", "clusterroles", "ClusterRole", False),
    _t("rbac.authorization.k8s.io", "v1", "clusterrolebindings", "ClusterRoleBinding", False),
    _t("apiextensions.k8s.io", "v1", "customresourcedefinitions", "CustomResourceDefinition", False,
       short_names=("crd", "crds"), status=True, generation=True),
    _t("coordination.k8s.io", "v1", "leases", "Lease"),
    _t("admissionregistration.k8s.io", "v1", "validatingwebhookconfigurations", "ValidatingWebhookConfiguration",
       False, generation=True),
    _t("admissionregistration.k8s.io", "v1", "mutatingwebhookconfigurations", "MutatingWebhookConfiguration",
       False, generation=True),
    _t("admissionregistration.k8s.io", "v1", "validatingadmissionpolicies", "ValidatingAdmissionPolicy", False,
       status=True, generation=True),
    _t("admissionregistration.k8s.io", "v1", "validatingadmissionpolicybindings",
       "ValidatingAdmissionPolicyBinding", False, generation=True),
    _t("scheduling.k8s.io", "v1", "priorityclasses", "PriorityClass", False, short_names=("pc",)),
    _t("policy", "v1", "poddisruptionbudgets", "PodDisruptionBudget", short_names=("pdb",), status=True,
       generation=True),
    _t("networking.k8s.io", "v1", "networkpolicies", "NetworkPolicy", short_names=("netpol",), generation=True),
    _t("networking.k8s.io", "v1", "ingresses", "Ingress", short_names=("ing",), status=True, generation=True),
    _t("storage.k8s.io", "v1", "storageclasses", "StorageClass", False, short_names=("sc",)),
)
