{{- /* Ours. Follows ai-dynamo/grove operator/charts/templates/_helpers.tpl: operator.config.data (the
OperatorConfiguration, here reduced to the parts the collection sets: leader election, log level and the scheduler
profiles), operator.config.name (grove-operator-cm-<first 8 of its sha256>), image (<repository>:<tag>). */ -}}
{{- define "operator.config.data" -}}
config.yaml: |
  apiVersion: operator.config.grove.io/v1alpha1
  kind: OperatorConfiguration
  leaderElection:
    enabled: {{ .Values.config.leaderElection.enabled }}
    resourceNamespace: {{ .Release.Namespace }}
  logLevel: {{ .Values.config.logLevel | default "info" }}
  logFormat: {{ .Values.config.logFormat | default "json" }}
  {{- with .Values.config.scheduler }}
  scheduler:
    {{- toYaml . | nindent 4 }}
  {{- end }}
{{- end -}}

{{- define "operator.config.name" -}}
grove-operator-cm-{{ include "operator.config.data" . | sha256sum | trunc 8 }}
{{- end -}}

{{- define "image" -}}
{{ required "$.repository is required" .repository }}:{{ required "$.tag is required" .tag }}
{{- end -}}

{{- define "common.chart.labels" -}}
chart: "{{ .Chart.Name }}-{{ .Chart.Version }}"
release: "{{ .Release.Name }}"
{{- end -}}
