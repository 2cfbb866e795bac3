{{- /* Ours. Follows cert-manager/trust-manager deploy/charts/trust-manager/templates/_helpers.tpl: trust-manager.name
(nameOverride or the chart name: the Deployment and Service are named after it, not the release),
trust-manager.namespace (namespace value or the release's), the image rule (image.repository, else
imageRegistry/imageNamespace/image.name; tag defaulting to the appVersion). */ -}}
{{- define "trust-manager.name" -}}
{{- default .Chart.Name .Values.nameOverride | trunc 63 | trimSuffix "-" }}
{{- end }}

{{- define "trust-manager.namespace" -}}
{{- default .Release.Namespace .Values.namespace }}
{{- end }}

{{- define "trust-manager.labels" -}}
helm.sh/chart: {{ printf "%s-%s" .Chart.Name .Chart.Version | replace "+" "_" | trunc 63 | trimSuffix "-" }}
app.kubernetes.io/name: {{ include "trust-manager.name" . }}
app.kubernetes.io/instance: {{ .Release.Name }}
app.kubernetes.io/version: {{ .Chart.AppVersion | quote }}
app.kubernetes.io/managed-by: {{ .Release.Service }}
{{- end }}

{{- define "trust-manager.image" -}}
{{- $repository := .Values.image.repository | default (printf "%s/%s/%s" .Values.imageRegistry .Values.imageNamespace .Values.image.name) }}
{{- printf "%s:%s" $repository (.Values.image.tag | default .Chart.AppVersion) }}
{{- end }}
