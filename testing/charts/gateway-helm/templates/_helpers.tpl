{{- /* Ours. Follows envoyproxy/gateway charts/gateway-helm/templates/_helpers.tpl: eg.fullname (helm create's rule),
eg.labels, eg.image (deployment.envoyGateway.image.repository:tag when set, else global.images.envoyGateway.image,
else docker.io/envoyproxy/gateway:<appVersion>). */ -}}
{{- define "eg.name" -}}
{{- default .Chart.Name .Values.nameOverride | trunc 63 | trimSuffix "-" }}
{{- end }}

{{- define "eg.fullname" -}}
{{- if .Values.fullnameOverride }}
{{- .Values.fullnameOverride | trunc 63 | trimSuffix "-" }}
{{- else }}
{{- $name := default .Chart.Name .Values.nameOverride }}
{{- if contains $name .Release.Name }}
{{- .Release.Name | trunc 63 | trimSuffix "-" }}
{{- else }}
{{- printf "%s-%s" .Release.Name $name | trunc 63 | trimSuffix "-" }}
{{- end }}
{{- end }}
{{- end }}

{{- define "eg.labels" -}}
helm.sh/chart: {{ printf "%s-%s" .Chart.Name .Chart.Version | replace "+" "_" | trunc 63 | trimSuffix "-" }}
app.kubernetes.io/name: {{ include "eg.name" . }}
app.kubernetes.io/instance: {{ .Release.Name }}
app.kubernetes.io/version: {{ .Chart.AppVersion | quote }}
app.kubernetes.io/managed-by: {{ .Release.Service }}
{{- end }}

{{- define "eg.selectorLabels" -}}
control-plane: envoy-gateway
app.kubernetes.io/name: {{ include "eg.name" . }}
app.kubernetes.io/instance: {{ .Release.Name }}
{{- end }}

{{- define "eg.image" -}}
{{- if .Values.deployment.envoyGateway.image.repository }}
{{- printf "%s:%s" .Values.deployment.envoyGateway.image.repository (.Values.deployment.envoyGateway.image.tag | default .Chart.AppVersion) }}
{{- else if .Values.global.images.envoyGateway.image }}
{{- .Values.global.images.envoyGateway.image }}
{{- else }}
{{- printf "docker.io/envoyproxy/gateway:%s" .Chart.AppVersion }}
{{- end }}
{{- end }}

{{- define "eg.image.pullPolicy" -}}
{{- .Values.deployment.envoyGateway.imagePullPolicy | default .Values.global.images.envoyGateway.pullPolicy | default "IfNotPresent" }}
{{- end }}
