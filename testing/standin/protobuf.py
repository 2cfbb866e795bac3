"""Decoding of Kubernetes protobuf request bodies (`application/vnd.kubernetes.protobuf`) into JSON-shaped dicts.

client-go >= 1.32 sends protobuf for built-in kinds through its typed clients (kubectl's `create`
generators, helm's release Secrets) and does not fall back to JSON after a 415. A body is the magic
`k8s\\0` followed by a `runtime.Unknown` {1 typeMeta {1 apiVersion, 2 kind}, 2 raw, 3 contentEncoding,
4 contentType}; `raw` is the object's own message.

This is our own wire-format reader plus a hand-written table of the messages we accept. The field
numbers follow the public wire format in k8s.io/api
`{core,apps,batch,rbac,networking,scheduling,policy}/v1/generated.proto`
and k8s.io/apimachinery `pkg/apis/meta/v1`, `pkg/runtime`, `pkg/util/intstr`, `pkg/api/resource`
`generated.proto`; which fields are Go pointers follows the matching `types.go`.

Go's generated marshalers write every non-pointer string/int/bool field, even when zero: a zero
non-pointer scalar means unset and is dropped (as JSON `omitempty` would). Pointer fields are written
only when set, so a present zero is kept (`replicas: 0`). A zero `Time` or `IntOrString` that is not a
pointer is dropped; other non-pointer messages stay (possibly `{}`, as Go's JSON writes them).
An unknown field number is a 400 naming the message; a kind missing from the table is a 415.
"""

from __future__ import annotations

import base64
import datetime
import json
from collections.abc import Iterator
from typing import Any, NamedTuple

from .store import APIError

MAGIC = b"k8s\x00"
VARINT, FIXED64, LENGTH, FIXED32 = 0, 1, 2, 5
SCALARS = {"s", "b", "i32", "i64", "by"}  # string, bool, int32, int64, bytes (base64 in JSON)
SPECIAL = {"Time", "Quantity", "IntOrString", "FieldsV1", "raw"}  # messages with their own JSON form; raw bytes

# Field specs: "jsonName TYPE" where TYPE is a scalar, a special or a message name, prefixed by
# `*` (Go pointer: a present zero is kept), `[]` (repeated), `{}` (map<string, TYPE>) or `^` (embedded
# with `json:",inline"`: its fields land in the parent).
META = {  # k8s.io/apimachinery pkg/apis/meta/v1/generated.proto, types.go
    "ObjectMeta": {1: "name s", 2: "generateName s", 3: "namespace s", 4: "selfLink s", 5: "uid s",
                   6: "resourceVersion s", 7: "generation i64", 8: "creationTimestamp Time",
                   9: "deletionTimestamp *Time", 10: "deletionGracePeriodSeconds *i64", 11: "labels {}s",
                   12: "annotations {}s", 13: "ownerReferences []OwnerReference", 14: "finalizers []s",
                   17: "managedFields []ManagedFieldsEntry"},
    "OwnerReference": {1: "kind s", 3: "name s", 4: "uid s", 5: "apiVersion s", 6: "controller *b",
                       7: "blockOwnerDeletion *b"},
    "ManagedFieldsEntry": {1: "manager s", 2: "operation s", 3: "apiVersion s", 4: "time *Time", 6: "fieldsType s",
                           7: "fieldsV1 *FieldsV1", 8: "subresource s"},
    "LabelSelector": {1: "matchLabels {}s", 2: "matchExpressions []LabelSelectorRequirement"},
    "LabelSelectorRequirement": {1: "key s", 2: "operator s", 3: "values []s"},
    "Condition": {1: "type s", 2: "status s", 3: "observedGeneration i64", 4: "lastTransitionTime Time",
                  5: "reason s", 6: "message s"},
    "DeleteOptions": {1: "gracePeriodSeconds *i64", 2: "preconditions *Preconditions", 3: "orphanDependents *b",
                      4: "propagationPolicy *s", 5: "dryRun []s",
                      6: "ignoreStoreReadErrorWithClusterBreakingPotential *b"},
    "Preconditions": {1: "uid *s", 2: "resourceVersion *s"},
}
_REF = {1: "^LocalObjectReference"}
CORE = {  # k8s.io/api core/v1/generated.proto, types.go
    "Namespace": {1: "metadata ObjectMeta", 2: "spec NamespaceSpec", 3: "status NamespaceStatus"},
    "NamespaceSpec": {1: "finalizers []s"},
    "NamespaceStatus": {1: "phase s", 2: "conditions []NamespaceCondition"},
    "NamespaceCondition": {1: "type s", 2: "status s", 4: "lastTransitionTime Time", 5: "reason s", 6: "message s"},
    "Secret": {1: "metadata ObjectMeta", 2: "data {}by", 3: "type s", 4: "stringData {}s", 5: "immutable *b"},
    "ConfigMap": {1: "metadata ObjectMeta", 2: "data {}s", 3: "binaryData {}by", 4: "immutable *b"},
    "ServiceAccount": {1: "metadata ObjectMeta", 2: "secrets []ObjectReference",
                       3: "imagePullSecrets []LocalObjectReference", 4: "automountServiceAccountToken *b"},
    "ObjectReference": {1: "kind s", 2: "namespace s", 3: "name s", 4: "uid s", 5: "apiVersion s",
                        6: "resourceVersion s", 7: "fieldPath s"},
    "LocalObjectReference": {1: "name s"},
    "Service": {1: "metadata ObjectMeta", 2: "spec ServiceSpec", 3: "status ServiceStatus"},
    "ServiceSpec": {1: "ports []ServicePort", 2: "selector {}s", 3: "clusterIP s", 4: "type s", 5: "externalIPs []s",
                    7: "sessionAffinity s", 8: "loadBalancerIP s", 9: "loadBalancerSourceRanges []s",
                    10: "externalName s", 11: "externalTrafficPolicy s", 12: "healthCheckNodePort i32",
                    13: "publishNotReadyAddresses b", 14: "sessionAffinityConfig *SessionAffinityConfig",
                    17: "ipFamilyPolicy *s", 18: "clusterIPs []s", 19: "ipFamilies []s",
                    20: "allocateLoadBalancerNodePorts *b", 21: "loadBalancerClass *s", 22: "internalTrafficPolicy *s",
                    23: "trafficDistribution *s"},
    "ServicePort": {1: "name s", 2: "protocol s", 3: "port i32", 4: "targetPort IntOrString", 5: "nodePort i32",
                    6: "appProtocol *s"},
    "SessionAffinityConfig": {1: "clientIP *ClientIPConfig"},
    "ClientIPConfig": {1: "timeoutSeconds *i32"},
    "ServiceStatus": {1: "loadBalancer LoadBalancerStatus", 2: "conditions []Condition"},
    "LoadBalancerStatus": {1: "ingress []LoadBalancerIngress"},
    "LoadBalancerIngress": {1: "ip s", 2: "hostname s", 3: "ipMode *s", 4: "ports []PortStatus"},
    "PortStatus": {1: "port i32", 2: "protocol s", 3: "error *s"},
    "ResourceQuota": {1: "metadata ObjectMeta", 2: "spec ResourceQuotaSpec", 3: "status ResourceQuotaStatus"},
    "ResourceQuotaSpec": {1: "hard {}Quantity", 2: "scopes []s", 3: "scopeSelector *ScopeSelector"},
    "ScopeSelector": {1: "matchExpressions []ScopedResourceSelectorRequirement"},
    "ScopedResourceSelectorRequirement": {1: "scopeName s", 2: "operator s", 3: "values []s"},
    "ResourceQuotaStatus": {1: "hard {}Quantity", 2: "used {}Quantity"},
    "PodTemplateSpec": {1: "metadata ObjectMeta", 2: "spec PodSpec"},
    "PodSpec": {1: "volumes []Volume", 2: "containers []Container", 3: "restartPolicy s",
                4: "terminationGracePeriodSeconds *i64", 5: "activeDeadlineSeconds *i64", 6: "dnsPolicy s",
                7: "nodeSelector {}s", 8: "serviceAccountName s", 9: "serviceAccount s", 10: "nodeName s",
                11: "hostNetwork b", 12: "hostPID b", 13: "hostIPC b", 14: "securityContext *PodSecurityContext",
                15: "imagePullSecrets []LocalObjectReference", 16: "hostname s", 17: "subdomain s",
                18: "affinity *Affinity", 19: "schedulerName s", 20: "initContainers []Container",
                21: "automountServiceAccountToken *b", 22: "tolerations []Toleration", 23: "hostAliases []HostAlias",
                24: "priorityClassName s", 25: "priority *i32", 26: "dnsConfig *PodDNSConfig",
                27: "shareProcessNamespace *b", 28: "readinessGates []PodReadinessGate", 29: "runtimeClassName *s",
                30: "enableServiceLinks *b", 31: "preemptionPolicy *s", 32: "overhead {}Quantity",
                33: "topologySpreadConstraints []TopologySpreadConstraint", 35: "setHostnameAsFQDN *b",
                36: "os *PodOS", 37: "hostUsers *b", 38: "schedulingGates []PodSchedulingGate",
                39: "resourceClaims []PodResourceClaim", 40: "resources *ResourceRequirements",
                41: "hostnameOverride *s"},
    "Container": {1: "name s", 2: "image s", 3: "command []s", 4: "args []s", 5: "workingDir s",
                  6: "ports []ContainerPort", 7: "env []EnvVar", 8: "resources ResourceRequirements",
                  9: "volumeMounts []VolumeMount", 10: "livenessProbe *Probe", 11: "readinessProbe *Probe",
                  12: "lifecycle *Lifecycle", 13: "terminationMessagePath s", 14: "imagePullPolicy s",
                  15: "securityContext *SecurityContext", 16: "stdin b", 17: "stdinOnce b", 18: "tty b",
                  19: "envFrom []EnvFromSource", 20: "terminationMessagePolicy s", 21: "volumeDevices []VolumeDevice",
                  22: "startupProbe *Probe", 23: "resizePolicy []ContainerResizePolicy", 24: "restartPolicy *s"},
    "ContainerPort": {1: "name s", 2: "hostPort i32", 3: "containerPort i32", 4: "protocol s", 5: "hostIP s"},
    "ContainerResizePolicy": {1: "resourceName s", 2: "restartPolicy s"},
    "EnvVar": {1: "name s", 2: "value s", 3: "valueFrom *EnvVarSource"},
    "EnvVarSource": {1: "fieldRef *ObjectFieldSelector", 2: "resourceFieldRef *ResourceFieldSelector",
                     3: "configMapKeyRef *ConfigMapKeySelector", 4: "secretKeyRef *SecretKeySelector",
                     5: "fileKeyRef *FileKeySelector"},
    "ObjectFieldSelector": {1: "apiVersion s", 2: "fieldPath s"},
    "ResourceFieldSelector": {1: "containerName s", 2: "resource s", 3: "divisor Quantity"},
    "ConfigMapKeySelector": {**_REF, 2: "key s", 3: "optional *b"},
    "SecretKeySelector": {**_REF, 2: "key s", 3: "optional *b"},
    "FileKeySelector": {1: "volumeName s", 2: "path s", 3: "key s", 4: "optional *b"},
    "EnvFromSource": {1: "prefix s", 2: "configMapRef *ConfigMapEnvSource", 3: "secretRef *SecretEnvSource"},
    "ConfigMapEnvSource": {**_REF, 2: "optional *b"},
    "SecretEnvSource": {**_REF, 2: "optional *b"},
    "ResourceRequirements": {1: "limits {}Quantity", 2: "requests {}Quantity", 3: "claims []ResourceClaim"},
    "ResourceClaim": {1: "name s", 2: "request s"},
    "Probe": {1: "^ProbeHandler", 2: "initialDelaySeconds i32", 3: "timeoutSeconds i32", 4: "periodSeconds i32",
              5: "successThreshold i32", 6: "failureThreshold i32", 7: "terminationGracePeriodSeconds *i64"},
    "ProbeHandler": {1: "exec *ExecAction", 2: "httpGet *HTTPGetAction", 3: "tcpSocket *TCPSocketAction",
                     4: "grpc *GRPCAction"},
    "ExecAction": {1: "command []s"},
    "HTTPGetAction": {1: "path s", 2: "port IntOrString", 3: "host s", 4: "scheme s", 5: "httpHeaders []HTTPHeader",
                      6: "protocol *s"},
    "HTTPHeader": {1: "name s", 2: "value s"},
    "TCPSocketAction": {1: "port IntOrString", 2: "host s"},
    "GRPCAction": {1: "port i32", 2: "service *s", 3: "mode *s"},
    "Lifecycle": {1: "postStart *LifecycleHandler", 2: "preStop *LifecycleHandler", 3: "stopSignal *s"},
    "LifecycleHandler": {1: "exec *ExecAction", 2: "httpGet *HTTPGetAction", 3: "tcpSocket *TCPSocketAction",
                         4: "sleep *SleepAction"},
    "SleepAction": {1: "seconds i64"},
    "VolumeMount": {1: "name s", 2: "readOnly b", 3: "mountPath s", 4: "subPath s", 5: "mountPropagation *s",
                    6: "subPathExpr s", 7: "recursiveReadOnly *s"},
    "VolumeDevice": {1: "name s", 2: "devicePath s"},
    "SecurityContext": {1: "capabilities *Capabilities", 2: "privileged *b", 3: "seLinuxOptions *SELinuxOptions",
                        4: "runAsUser *i64", 5: "runAsNonRoot *b", 6: "readOnlyRootFilesystem *b",
                        7: "allowPrivilegeEscalation *b", 8: "runAsGroup *i64", 9: "procMount *s",
                        10: "windowsOptions *WindowsSecurityContextOptions", 11: "seccompProfile *SeccompProfile",
                        12: "appArmorProfile *AppArmorProfile"},
    "Capabilities": {1: "add []s", 2: "drop []s"},
    "SELinuxOptions": {1: "user s", 2: "role s", 3: "type s", 4: "level s"},
    "SeccompProfile": {1: "type s", 2: "localhostProfile *s"},
    "AppArmorProfile": {1: "type s", 2: "localhostProfile *s"},
    "WindowsSecurityContextOptions": {1: "gmsaCredentialSpecName *s", 2: "gmsaCredentialSpec *s",
                                      3: "runAsUserName *s", 4: "hostProcess *b"},
    "PodSecurityContext": {1: "seLinuxOptions *SELinuxOptions", 2: "runAsUser *i64", 3: "runAsNonRoot *b",
                           4: "supplementalGroups []i64", 5: "fsGroup *i64", 6: "runAsGroup *i64",
                           7: "sysctls []Sysctl", 8: "windowsOptions *WindowsSecurityContextOptions",
                           9: "fsGroupChangePolicy *s", 10: "seccompProfile *SeccompProfile",
                           11: "appArmorProfile *AppArmorProfile", 12: "supplementalGroupsPolicy *s",
                           13: "seLinuxChangePolicy *s"},
    "Sysctl": {1: "name s", 2: "value s"},
    "Volume": {1: "name s", 2: "^VolumeSource"},
    "VolumeSource": {1: "hostPath *HostPathVolumeSource", 2: "emptyDir *EmptyDirVolumeSource",
                     6: "secret *SecretVolumeSource", 10: "persistentVolumeClaim *PersistentVolumeClaimVolumeSource",
                     16: "downwardAPI *DownwardAPIVolumeSource", 19: "configMap *ConfigMapVolumeSource",
                     26: "projected *ProjectedVolumeSource", 28: "csi *CSIVolumeSource"},
    "HostPathVolumeSource": {1: "path s", 2: "type *s"},
    "EmptyDirVolumeSource": {1: "medium s", 2: "sizeLimit *Quantity", 3: "mode *i32"},
    "SecretVolumeSource": {1: "secretName s", 2: "items []KeyToPath", 3: "defaultMode *i32", 4: "optional *b",
                           5: "defaultUser *i64"},
    "ConfigMapVolumeSource": {**_REF, 2: "items []KeyToPath", 3: "defaultMode *i32", 4: "optional *b",
                              5: "defaultUser *i64"},
    "KeyToPath": {1: "key s", 2: "path s", 3: "mode *i32", 4: "user *i64"},
    "PersistentVolumeClaimVolumeSource": {1: "claimName s", 2: "readOnly b"},
    "ProjectedVolumeSource": {1: "sources []VolumeProjection", 2: "defaultMode *i32", 3: "defaultUser *i64"},
    "VolumeProjection": {1: "secret *SecretProjection", 2: "downwardAPI *DownwardAPIProjection",
                         3: "configMap *ConfigMapProjection", 4: "serviceAccountToken *ServiceAccountTokenProjection"},
    "SecretProjection": {**_REF, 2: "items []KeyToPath", 4: "optional *b"},
    "ConfigMapProjection": {**_REF, 2: "items []KeyToPath", 4: "optional *b"},
    "DownwardAPIProjection": {1: "items []DownwardAPIVolumeFile"},
    "ServiceAccountTokenProjection": {1: "audience s", 2: "expirationSeconds *i64", 3: "path s", 4: "user *i64"},
    "DownwardAPIVolumeSource": {1: "items []DownwardAPIVolumeFile", 2: "defaultMode *i32", 3: "defaultUser *i64"},
    "DownwardAPIVolumeFile": {1: "path s", 2: "fieldRef *ObjectFieldSelector",
                              3: "resourceFieldRef *ResourceFieldSelector", 4: "mode *i32", 5: "user *i64"},
    "CSIVolumeSource": {1: "driver s", 2: "readOnly *b", 3: "fsType *s", 4: "volumeAttributes {}s",
                        5: "nodePublishSecretRef *LocalObjectReference"},
    "Toleration": {1: "key s", 2: "operator s", 3: "value s", 4: "effect s", 5: "tolerationSeconds *i64"},
    "Affinity": {1: "nodeAffinity *NodeAffinity", 2: "podAffinity *PodAffinity", 3: "podAntiAffinity *PodAffinity"},
    "NodeAffinity": {1: "requiredDuringSchedulingIgnoredDuringExecution *NodeSelector",
                     2: "preferredDuringSchedulingIgnoredDuringExecution []PreferredSchedulingTerm"},
    "NodeSelector": {1: "nodeSelectorTerms []NodeSelectorTerm"},
    "NodeSelectorTerm": {1: "matchExpressions []NodeSelectorRequirement", 2: "matchFields []NodeSelectorRequirement"},
    "NodeSelectorRequirement": {1: "key s", 2: "operator s", 3: "values []s"},
    "PreferredSchedulingTerm": {1: "weight i32", 2: "preference NodeSelectorTerm"},
    # PodAffinity and PodAntiAffinity have the same fields; one table serves both.
    "PodAffinity": {1: "requiredDuringSchedulingIgnoredDuringExecution []PodAffinityTerm",
                    2: "preferredDuringSchedulingIgnoredDuringExecution []WeightedPodAffinityTerm"},
    "PodAffinityTerm": {1: "labelSelector *LabelSelector", 2: "namespaces []s", 3: "topologyKey s",
                        4: "namespaceSelector *LabelSelector", 5: "matchLabelKeys []s", 6: "mismatchLabelKeys []s"},
    "WeightedPodAffinityTerm": {1: "weight i32", 2: "podAffinityTerm PodAffinityTerm"},
    "TopologySpreadConstraint": {1: "maxSkew i32", 2: "topologyKey s", 3: "whenUnsatisfiable s",
                                 4: "labelSelector *LabelSelector", 5: "minDomains *i32", 6: "nodeAffinityPolicy *s",
                                 7: "nodeTaintsPolicy *s", 8: "matchLabelKeys []s"},
    "HostAlias": {1: "ip s", 2: "hostnames []s"},
    "PodDNSConfig": {1: "nameservers []s", 2: "searches []s", 3: "options []PodDNSConfigOption"},
    "PodDNSConfigOption": {1: "name s", 2: "value *s"},
    "PodReadinessGate": {1: "conditionType s"},
    "PodOS": {1: "name s"},
    "PodSchedulingGate": {1: "name s"},
    "PodResourceClaim": {1: "name s", 3: "resourceClaimName *s", 4: "resourceClaimTemplateName *s"},
    "TypedLocalObjectReference": {1: "apiGroup *s", 2: "kind s", 3: "name s"},
}
APPS = {  # k8s.io/api apps/v1/generated.proto, types.go
    "Deployment": {1: "metadata ObjectMeta", 2: "spec DeploymentSpec", 3: "status DeploymentStatus"},
    "DeploymentSpec": {1: "replicas *i32", 2: "selector *LabelSelector", 3: "template PodTemplateSpec",
                       4: "strategy DeploymentStrategy", 5: "minReadySeconds i32", 6: "revisionHistoryLimit *i32",
                       7: "paused b", 9: "progressDeadlineSeconds *i32"},
    "DeploymentStrategy": {1: "type s", 2: "rollingUpdate *RollingUpdateDeployment"},
    "RollingUpdateDeployment": {1: "maxUnavailable *IntOrString", 2: "maxSurge *IntOrString"},
    "DeploymentStatus": {1: "observedGeneration i64", 2: "replicas i32", 3: "updatedReplicas i32",
                         4: "availableReplicas i32", 5: "unavailableReplicas i32",
                         6: "conditions []DeploymentCondition", 7: "readyReplicas i32", 8: "collisionCount *i32",
                         9: "terminatingReplicas *i32"},
    "DeploymentCondition": {1: "type s", 2: "status s", 4: "reason s", 5: "message s", 6: "lastUpdateTime Time",
                            7: "lastTransitionTime Time"},
}
BATCH = {  # k8s.io/api batch/v1/generated.proto, types.go
    "Job": {1: "metadata ObjectMeta", 2: "spec JobSpec", 3: "status JobStatus"},
    "JobSpec": {1: "parallelism *i32", 2: "completions *i32", 3: "activeDeadlineSeconds *i64",
                4: "selector *LabelSelector", 5: "manualSelector *b", 6: "template PodTemplateSpec",
                7: "backoffLimit *i32", 8: "ttlSecondsAfterFinished *i32", 9: "completionMode *s", 10: "suspend *b",
                11: "podFailurePolicy *PodFailurePolicy", 12: "backoffLimitPerIndex *i32", 13: "maxFailedIndexes *i32",
                14: "podReplacementPolicy *s", 15: "managedBy *s", 16: "successPolicy *SuccessPolicy"},
    "JobStatus": {1: "conditions []JobCondition", 2: "startTime *Time", 3: "completionTime *Time", 4: "active i32",
                  5: "succeeded i32", 6: "failed i32", 7: "completedIndexes s",
                  8: "uncountedTerminatedPods *UncountedTerminatedPods", 9: "ready *i32", 10: "failedIndexes *s",
                  11: "terminating *i32"},
    "JobCondition": {1: "type s", 2: "status s", 3: "lastProbeTime Time", 4: "lastTransitionTime Time",
                     5: "reason s", 6: "message s"},
    "UncountedTerminatedPods": {1: "succeeded []s", 2: "failed []s"},
    "PodFailurePolicy": {1: "rules []PodFailurePolicyRule"},
    "PodFailurePolicyRule": {1: "action s", 2: "onExitCodes *PodFailurePolicyOnExitCodesRequirement",
                             3: "onPodConditions []PodFailurePolicyOnPodConditionsPattern"},
    "PodFailurePolicyOnExitCodesRequirement": {1: "containerName *s", 2: "operator s", 3: "values []i32"},
    "PodFailurePolicyOnPodConditionsPattern": {1: "type s", 2: "status s"},
    "SuccessPolicy": {1: "rules []SuccessPolicyRule"},
    "SuccessPolicyRule": {1: "succeededIndexes *s", 2: "succeededCount *i32"},
    "CronJob": {1: "metadata ObjectMeta", 2: "spec CronJobSpec", 3: "status CronJobStatus"},
    "CronJobSpec": {1: "schedule s", 2: "startingDeadlineSeconds *i64", 3: "concurrencyPolicy s", 4: "suspend *b",
                    5: "jobTemplate JobTemplateSpec", 6: "successfulJobsHistoryLimit *i32",
                    7: "failedJobsHistoryLimit *i32", 8: "timeZone *s"},
    "CronJobStatus": {1: "active []ObjectReference", 4: "lastScheduleTime *Time", 5: "lastSuccessfulTime *Time"},
    "JobTemplateSpec": {1: "metadata ObjectMeta", 2: "spec JobSpec"},
}
RBAC = {  # k8s.io/api rbac/v1/generated.proto, types.go
    "Role": {1: "metadata ObjectMeta", 2: "rules []PolicyRule"},
    "ClusterRole": {1: "metadata ObjectMeta", 2: "rules []PolicyRule", 3: "aggregationRule *AggregationRule"},
    "RoleBinding": {1: "metadata ObjectMeta", 2: "subjects []Subject", 3: "roleRef RoleRef"},
    "PolicyRule": {1: "verbs []s", 2: "apiGroups []s", 3: "resources []s", 4: "resourceNames []s",
                   5: "nonResourceURLs []s"},
    "Subject": {1: "kind s", 2: "apiGroup s", 3: "name s", 4: "namespace s"},
    "RoleRef": {1: "apiGroup s", 2: "kind s", 3: "name s"},
    "AggregationRule": {1: "clusterRoleSelectors []LabelSelector"},
}
NETWORKING = {  # k8s.io/api networking/v1/generated.proto, types.go
    "Ingress": {1: "metadata ObjectMeta", 2: "spec IngressSpec", 3: "status IngressStatus"},
    "IngressSpec": {1: "defaultBackend *IngressBackend", 2: "tls []IngressTLS", 3: "rules []IngressRule",
                    4: "ingressClassName *s"},
    "IngressBackend": {3: "resource *TypedLocalObjectReference", 4: "service *IngressServiceBackend"},
    "IngressServiceBackend": {1: "name s", 2: "port ServiceBackendPort"},
    "ServiceBackendPort": {1: "name s", 2: "number i32"},
    "IngressTLS": {1: "hosts []s", 2: "secretName s"},
    "IngressRule": {1: "host s", 2: "^IngressRuleValue"},
    "IngressRuleValue": {1: "http *HTTPIngressRuleValue"},
    "HTTPIngressRuleValue": {1: "paths []HTTPIngressPath"},
    "HTTPIngressPath": {1: "path s", 2: "backend IngressBackend", 3: "pathType *s"},
    "IngressStatus": {1: "loadBalancer IngressLoadBalancerStatus"},
    "IngressLoadBalancerStatus": {1: "ingress []IngressLoadBalancerIngress"},
    "IngressLoadBalancerIngress": {1: "ip s", 2: "hostname s", 4: "ports []IngressPortStatus"},
    "IngressPortStatus": {1: "port i32", 2: "protocol s", 3: "error *s"},
}
OTHER = {  # k8s.io/api scheduling/v1 and policy/v1 generated.proto, types.go
    "PriorityClass": {1: "metadata ObjectMeta", 2: "value i32", 3: "globalDefault b", 4: "description s",
                      5: "preemptionPolicy *s"},
    "PodDisruptionBudget": {1: "metadata ObjectMeta", 2: "spec PodDisruptionBudgetSpec",
                            3: "status PodDisruptionBudgetStatus"},
    "PodDisruptionBudgetSpec": {1: "minAvailable *IntOrString", 2: "selector *LabelSelector",
                                3: "maxUnavailable *IntOrString", 4: "unhealthyPodEvictionPolicy *s"},
    "PodDisruptionBudgetStatus": {1: "observedGeneration i64", 2: "disruptedPods {}Time", 3: "disruptionsAllowed i32",
                                  4: "currentHealthy i32", 5: "desiredHealthy i32", 6: "expectedPods i32",
                                  7: "conditions []Condition"},
}

# (apiVersion, kind) of a request body -> its message. DeleteOptions is accepted under any apiVersion.
KINDS = {
    ("v1", "Namespace"): "Namespace", ("v1", "Secret"): "Secret", ("v1", "ConfigMap"): "ConfigMap",
    ("v1", "ServiceAccount"): "ServiceAccount", ("v1", "Service"): "Service",
    ("v1", "ResourceQuota"): "ResourceQuota", ("apps/v1", "Deployment"): "Deployment",
    ("batch/v1", "Job"): "Job", ("batch/v1", "CronJob"): "CronJob",
    ("rbac.authorization.k8s.io/v1", "Role"): "Role", ("rbac.authorization.k8s.io/v1", "ClusterRole"): "ClusterRole",
    ("rbac.authorization.k8s.io/v1", "RoleBinding"): "RoleBinding",
    ("rbac.authorization.k8s.io/v1", "ClusterRoleBinding"): "RoleBinding",  # the same fields as RoleBinding
    ("scheduling.k8s.io/v1", "PriorityClass"): "PriorityClass",
    ("policy/v1", "PodDisruptionBudget"): "PodDisruptionBudget", ("networking.k8s.io/v1", "Ingress"): "Ingress",
}
UNKNOWN = {1: "typeMeta TypeMeta", 2: "raw raw", 3: "contentEncoding s", 4: "contentType s"}  # pkg/runtime
TYPE_META = {1: "apiVersion s", 2: "kind s"}


class Field(NamedTuple):
    """One entry of a message table."""

    name: str
    type: str  # a scalar, a special, or a message name
    pointer: bool = False
    repeated: bool = False
    map: bool = False
    inline: bool = False


def parse_spec(spec: str) -> Field:
    """`"replicas *i32"` -> Field("replicas", "i32", pointer=True); `"^VolumeSource"` is an inline field."""
    name, _space, typ = spec.rpartition(" ")
    flags = {"pointer": False, "repeated": False, "map": False, "inline": False}
    for prefix, flag in (("*", "pointer"), ("[]", "repeated"), ("{}", "map"), ("^", "inline")):
        if typ.startswith(prefix):
            typ, flags[flag] = typ[len(prefix):], True
    return Field(name, typ, **flags)


MESSAGES: dict[str, dict[int, Field]] = {
    message: {number: parse_spec(spec) for number, spec in fields.items()}
    for table in (META, CORE, APPS, BATCH, RBAC, NETWORKING, OTHER, {"Unknown": UNKNOWN, "TypeMeta": TYPE_META})
    for message, fields in table.items()
}


# ---------------------------------------------------------------- wire format


def bad(message: str) -> APIError:
    return APIError(400, "BadRequest", f"error decoding protobuf request body: {message}")


def read_varint(data: bytes, pos: int) -> tuple[int, int]:
    """(value, next position) of the base-128 varint at `pos`."""
    value = shift = 0
    while True:
        if pos >= len(data) or shift > 63:
            raise bad("truncated or overlong varint")
        byte = data[pos]
        pos += 1
        value |= (byte & 0x7F) << shift
        shift += 7
        if not byte & 0x80:
            return value, pos


def read_fields(data: bytes) -> Iterator[tuple[int, int, int | bytes]]:
    """(field number, wire type, value) of each field: an int for varint/fixed, bytes for length-delimited."""
    pos = 0
    while pos < len(data):
        key, pos = read_varint(data, pos)
        number, wire = key >> 3, key & 7
        value: int | bytes
        if wire == VARINT:
            value, pos = read_varint(data, pos)
        elif wire in (FIXED64, FIXED32):
            size = 8 if wire == FIXED64 else 4
            if pos + size > len(data):
                raise bad("truncated fixed-size field")
            value, pos = int.from_bytes(data[pos:pos + size], "little"), pos + size
        elif wire == LENGTH:
            size, pos = read_varint(data, pos)
            if pos + size > len(data):
                raise bad("truncated length-delimited field")
            value, pos = data[pos:pos + size], pos + size
        else:
            raise bad(f"unsupported wire type {wire} for field {number}")
        if number == 0:
            raise bad("field number 0")
        yield number, wire, value


def signed(value: int, bits: int) -> int:
    """A varint read as a two's complement int32/int64 (negative ints take ten bytes on the wire)."""
    value &= (1 << 64) - 1
    value = value - (1 << 64) if value >= 1 << 63 else value
    if bits == 32:
        value = ((value + (1 << 31)) & 0xFFFFFFFF) - (1 << 31)
    return value


# ---------------------------------------------------------------- values


def rfc3339(data: bytes) -> str | None:
    """A meta.v1.Time {1 seconds, 2 nanos} as JSON writes it (second precision); None for the zero time."""
    seconds = nanos = 0
    for number, wire, value in read_fields(data):
        if wire != VARINT or number not in (1, 2):
            raise bad(f"unknown field {number} in message Time")
        seconds, nanos = (signed(int(value), 64), nanos) if number == 1 else (seconds, signed(int(value), 32))
    if seconds == 0 and nanos == 0:
        return None
    moment = datetime.datetime(1970, 1, 1, tzinfo=datetime.UTC) + datetime.timedelta(seconds=seconds)
    return moment.strftime("%Y-%m-%dT%H:%M:%SZ")


def int_or_string(data: bytes) -> int | str | None:
    """An intstr.IntOrString {1 type (0 int, 1 string), 2 intVal, 3 strVal}; None for the zero value."""
    kind, number_value, text = 0, 0, ""
    for number, wire, value in read_fields(data):
        if number == 1 and wire == VARINT:
            kind = int(value)
        elif number == 2 and wire == VARINT:
            number_value = signed(int(value), 32)
        elif number == 3 and wire == LENGTH:
            text = text_of(value, "IntOrString")
        else:
            raise bad(f"unknown field {number} in message IntOrString")
    if kind == 1:
        return text
    return number_value if number_value or kind else None


def single_string(data: bytes, message: str) -> str:
    """The one string field 1 of resource.Quantity or the raw bytes of FieldsV1."""
    out = ""
    for number, wire, value in read_fields(data):
        if number != 1 or wire != LENGTH:
            raise bad(f"unknown field {number} in message {message}")
        out = text_of(value, message)
    return out


def text_of(value: int | bytes, where: str) -> str:
    if not isinstance(value, bytes):
        raise bad(f"expected a length-delimited string in {where}")
    try:
        return value.decode()
    except UnicodeDecodeError as exc:
        raise bad(f"invalid UTF-8 in {where}: {exc}") from exc


def length_delimited(type_name: str, data: bytes, where: str) -> Any:
    """The JSON value of a length-delimited field: string, bytes (base64), a special or a table message."""
    if type_name == "s":
        return text_of(data, where)
    if type_name == "by":
        return base64.b64encode(data).decode()
    if type_name == "raw":  # runtime.Unknown.raw: the object's message, decoded by the caller
        return data
    if type_name in ("Quantity", "FieldsV1"):
        text = single_string(data, type_name)
        return text if type_name == "Quantity" else json.loads(text or "{}")
    if type_name == "Time":
        return rfc3339(data)
    return int_or_string(data) if type_name == "IntOrString" else decode_message(data, type_name)


def scalar(field: Field, wire: int, value: int | bytes, where: str) -> Any:
    """The JSON value of one field occurrence (None for a zero special that JSON would leave out)."""
    expected = VARINT if field.type in ("b", "i32", "i64") else LENGTH
    if wire != expected:
        raise bad(f"field {where}.{field.name} has wire type {wire}, expected {expected}")
    if isinstance(value, bytes):
        return length_delimited(field.type, value, f"{where}.{field.name}")
    return bool(value) if field.type == "b" else signed(value, 32 if field.type == "i32" else 64)


def is_zero(value: Any) -> bool:
    return value is None or (value in ("", 0, False) and not isinstance(value, dict | list))


def packed(field: Field, wire: int, value: int | bytes, where: str) -> list[Any]:
    """The items of one occurrence of a repeated field (a packed varint list counts as several)."""
    if wire == LENGTH and field.type in ("b", "i32", "i64"):
        items, pos, data = [], 0, bytes(value)
        while pos < len(data):
            item, pos = read_varint(data, pos)
            items.append(scalar(field, VARINT, item, where))
        return items
    return [scalar(field, wire, value, where)]


def map_entry(field: Field, value: int | bytes, where: str) -> tuple[str, Any]:
    """(key, value) of one map entry message {1 key, 2 value}; a missing value is the type's zero."""
    if not isinstance(value, bytes):
        raise bad(f"map field {where}.{field.name} is not length-delimited")
    key, item = "", None
    value_field = field._replace(map=False, pointer=True)
    for number, wire, data in read_fields(value):
        if number == 1:
            key = text_of(data, f"{where}.{field.name} key")
        elif number == 2:
            item = scalar(value_field, wire, data, where)
        else:
            raise bad(f"unknown field {number} in a map entry of {where}.{field.name}")
    if item is None:
        item = {"s": "", "by": "", "Quantity": "0", "Time": None}.get(field.type, {})
    return key, item


def decode_message(data: bytes, message: str) -> dict[str, Any]:
    """A message of the table as the dict Go's JSON encoding would give for it."""
    fields = MESSAGES[message]
    out: dict[str, Any] = {}
    for number, wire, value in read_fields(data):
        field = fields.get(number)
        if field is None:
            raise bad(f"unknown field {number} in message {message}")
        if field.map:
            key, item = map_entry(field, value, message)
            out.setdefault(field.name, {})[key] = item
        elif field.repeated:
            out.setdefault(field.name, []).extend(packed(field, wire, value, message))
        elif field.inline:
            if wire != LENGTH:
                raise bad(f"inline field {number} of {message} is not length-delimited")
            out.update(decode_message(bytes(value), field.type))
        else:
            item = scalar(field, wire, value, message)
            if field.pointer and item is None and field.type == "IntOrString":
                item = 0
            if is_zero(item) and not field.pointer:
                out.pop(field.name, None)
            elif item is not None:
                out[field.name] = item
    return out


# ---------------------------------------------------------------- entry point


def unsupported(api_version: str, kind: str) -> APIError:
    return APIError(415, "UnsupportedMediaType",
                    f"the stand-in cannot decode protobuf for {api_version or '<no apiVersion>'} "
                    f"{kind or '<no kind>'}; send JSON")


def decode(body: bytes) -> tuple[str, str, dict[str, Any]]:
    """(apiVersion, kind, object incl. apiVersion/kind) of a `k8s\\0` + runtime.Unknown protobuf body."""
    if not body.startswith(MAGIC):
        raise bad("the body does not start with the protobuf magic k8s\\x00")
    envelope = decode_message(body[len(MAGIC):], "Unknown")
    type_meta = envelope.get("typeMeta") or {}
    api_version, kind = type_meta.get("apiVersion", ""), type_meta.get("kind", "")
    if envelope.get("contentEncoding"):
        raise unsupported(api_version, kind)
    message = "DeleteOptions" if kind == "DeleteOptions" else KINDS.get((api_version, kind))
    if message is None:
        raise unsupported(api_version, kind)
    obj = {"apiVersion": api_version, "kind": kind, **decode_message(envelope.get("raw", b""), message)}
    return api_version, kind, obj
