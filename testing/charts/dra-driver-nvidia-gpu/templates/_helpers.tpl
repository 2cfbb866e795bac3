{{- /* Ours. Follows kubernetes-sigs/dra-driver-nvidia-gpu deployments/helm/dra-driver-nvidia-gpu/templates/_helpers.tpl:
dra-driver-nvidia-gpu.name (nameOverride or the chart name: workloads are named after it, not the release),
.namespace (namespaceOverride or the release's), .fullimage (image.repository:image.tag, defaulting to
v<appVersion>), .resourceApiVersion (resourceApiVersion, else the newest resource.k8s.io the cluster serves, else
empty: validation.yaml then fails), .fullname (fullnameOverride, else <release>-<name> unless the release name contains
the name) and .serviceAccountName (<fullname>-service-account, or serviceAccount.name). */ -}}
{{- define "dra-driver-nvidia-gpu.name" -}}
{{- default .Chart.Name .Values.nameOverride | trunc 63 | trimSuffix "-" }}
{{- end }}

{{- define "dra-driver-nvidia-gpu.fullname" -}}
{{- $name := default .Chart.Name .Values.nameOverride }}
{{- if .Values.fullnameOverride }}
{{- .Values.fullnameOverride | trunc 63 | trimSuffix "-" }}
{{- else if contains $name .Release.Name }}
{{- .Release.Name | trunc 63 | trimSuffix "-" }}
{{- else }}
{{- printf "%s-%s" .Release.Name $name | trunc 63 | trimSuffix "-" }}
{{- end }}
{{- end }}

{{- define "dra-driver-nvidia-gpu.serviceAccountName" -}}
{{- if .Values.serviceAccount.create }}
{{- default (printf "%s-service-account" (include "dra-driver-nvidia-gpu.fullname" .)) .Values.serviceAccount.name }}
{{- else }}
{{- default "default" .Values.serviceAccount.name }}
{{- end }}
{{- end }}

{{- define "dra-driver-nvidia-gpu.namespace" -}}
{{- default .Release.Namespace .Values.namespaceOverride }}
{{- end }}

{{- define "dra-driver-nvidia-gpu.fullimage" -}}
{{- printf "%s:%s" .Values.image.repository (.Values.image.tag | default (printf "v%s" .Chart.AppVersion)) }}
{{- end }}

{{- define "dra-driver-nvidia-gpu.resourceApiVersion" -}}
{{- if .Values.resourceApiVersion }}
{{- .Values.resourceApiVersion }}
{{- else if .Capabilities.APIVersions.Has "resource.k8s.io/v1" }}
{{- "resource.k8s.io/v1" }}
{{- else if .Capabilities.APIVersions.Has "resource.k8s.io/v1beta2" }}
{{- "resource.k8s.io/v1beta2" }}
{{- else if .Capabilities.APIVersions.Has "resource.k8s.io/v1beta1" }}
{{- "resource.k8s.io/v1beta1" }}
{{- end }}
{{- end }}

{{- define "dra-driver-nvidia-gpu.labels" -}}
helm.sh/chart: {{ printf "%s-%s" .Chart.Name .Chart.Version | replace "+" "_" | trunc 63 | trimSuffix "-" }}
app.kubernetes.io/name: {{ include "dra-driver-nvidia-gpu.name" . }}
app.kubernetes.io/instance: {{ .Release.Name }}
app.kubernetes.io/version: {{ .Chart.AppVersion | quote }}
app.kubernetes.io/managed-by: {{ .Release.Service }}
{{- end }}

{{- define "dra-driver-nvidia-gpu.selectorLabels" -}}
{{ include "dra-driver-nvidia-gpu.name" .context }}-component: {{ .component }}
{{- end }}
