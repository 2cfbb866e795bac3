{{- /* Ours. Follows prometheus-community kube-prometheus-stack templates/_helpers.tpl: kube-prometheus-stack.name,
.fullname (helm create's rule, cut at 26 characters), .operator.fullname (prometheusOperator.fullnameOverride, else
<fullname>-operator), .prometheus.crname / .alertmanager.crname (<fullname>-prometheus / -alertmanager), labels
with release: <release> (what the *SelectorNilUsesHelmValues selectors match). */ -}}
{{- define "kube-prometheus-stack.name" -}}
{{- default .Chart.Name .Values.nameOverride | trunc 50 | trimSuffix "-" }}
{{- end }}

{{- define "kube-prometheus-stack.fullname" -}}
{{- if .Values.fullnameOverride }}
{{- .Values.fullnameOverride | trunc 26 | trimSuffix "-" }}
{{- else }}
{{- $name := default .Chart.Name .Values.nameOverride }}
{{- if contains $name .Release.Name }}
{{- .Release.Name | trunc 26 | trimSuffix "-" }}
{{- else }}
{{- printf "%s-%s" .Release.Name $name | trunc 26 | trimSuffix "-" }}
{{- end }}
{{- end }}
{{- end }}

{{- define "kube-prometheus-stack.operator.fullname" -}}
{{- if .Values.prometheusOperator.fullnameOverride }}
{{- .Values.prometheusOperator.fullnameOverride | trunc 63 | trimSuffix "-" }}
{{- else }}
{{- printf "%s-operator" (include "kube-prometheus-stack.fullname" .) }}
{{- end }}
{{- end }}

{{- /* The operator's ServiceAccount: prometheusOperator.serviceAccount.name, else the operator fullname when
serviceAccount.create, else "default" (upstream's kube-prometheus-stack.operator.serviceAccountName). */ -}}
{{- define "kube-prometheus-stack.operator.serviceAccountName" -}}
{{- $account := .Values.prometheusOperator.serviceAccount }}
{{- $account.name | default (ternary (include "kube-prometheus-stack.operator.fullname" .) "default" $account.create) }}
{{- end }}

{{- define "kube-prometheus-stack.prometheus.crname" -}}
{{- printf "%s-prometheus" (include "kube-prometheus-stack.fullname" .) }}
{{- end }}

{{- define "kube-prometheus-stack.alertmanager.crname" -}}
{{- printf "%s-alertmanager" (include "kube-prometheus-stack.fullname" .) }}
{{- end }}

{{- define "kube-prometheus-stack.labels" -}}
app.kubernetes.io/managed-by: {{ .Release.Service }}
app.kubernetes.io/instance: {{ .Release.Name }}
app.kubernetes.io/version: {{ .Chart.Version | quote }}
app.kubernetes.io/part-of: {{ include "kube-prometheus-stack.name" . }}
chart: {{ printf "%s-%s" .Chart.Name .Chart.Version }}
release: {{ .Release.Name | quote }}
heritage: {{ .Release.Service | quote }}
{{- end }}

{{- /* (list <image values> <default tag>) -> registry/repository:tag */ -}}
{{- define "kube-prometheus-stack.image" -}}
{{- $image := index . 0 }}
{{- printf "%s/%s:%s" $image.registry $image.repository ($image.tag | default (index . 1)) }}
{{- end }}

{{- /* (list <root> <kind> <spec values>): the monitor selector upstream writes for <kind> (podMonitor, serviceMonitor):
the given selector, else release=<release> when <kind>SelectorNilUsesHelmValues, else {} (select all). */ -}}
{{- define "kube-prometheus-stack.selector" -}}
{{- $root := index . 0 }}
{{- $kind := index . 1 }}
{{- $spec := index . 2 }}
{{- $selector := index $spec (printf "%sSelector" $kind) }}
{{- if $selector }}
{{ $kind }}Selector:
  {{- toYaml $selector | nindent 2 }}
{{- else if index $spec (printf "%sSelectorNilUsesHelmValues" $kind) }}
{{ $kind }}Selector:
  matchLabels:
    release: {{ $root.Release.Name | quote }}
{{- else }}
{{ $kind }}Selector: {}
{{- end }}
{{ $kind }}NamespaceSelector: {{ toYaml (index $spec (printf "%sNamespaceSelector" $kind) | default dict) | nindent 2 }}
{{- end }}
