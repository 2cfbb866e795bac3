{{- /* Ours. Follows kai-scheduler/KAI-Scheduler deployments/kai-scheduler/templates/_helpers.tpl: kai-scheduler.image
(<registry, per image or global.registry>/<image.name>:<tag, per image, else global.tag, else the appVersion>). */ -}}
{{- define "kai-scheduler.image" -}}
{{- $image := index . 0 }}
{{- $root := index . 1 }}
{{- printf "%s/%s:%s" ($image.registry | default $root.Values.global.registry) $image.name ($image.tag | default $root.Values.global.tag | default $root.Chart.AppVersion) }}
{{- end }}

{{- define "kai-scheduler.labels" -}}
helm.sh/chart: {{ printf "%s-%s" .Chart.Name .Chart.Version | replace "+" "_" | trunc 63 | trimSuffix "-" }}
app.kubernetes.io/instance: {{ .Release.Name }}
app.kubernetes.io/version: {{ .Chart.AppVersion | quote }}
app.kubernetes.io/managed-by: {{ .Release.Service }}
{{- end }}
