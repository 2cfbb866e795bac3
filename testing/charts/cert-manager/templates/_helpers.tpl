{{- /* Ours. Follows cert-manager deploy/charts/cert-manager/templates/_helpers.tpl: cert-manager.name,
cert-manager.fullname (helm create's rule), webhook.fullname / cainjector.fullname (<fullname cut at 55>-webhook,
-cainjector), cert-manager.namespace (namespace value or the release's), and the image rule
(image.repository, else imageRegistry/imageNamespace/image.name; tag defaulting to the appVersion). */ -}}
{{- define "cert-manager.name" -}}
{{- default .Chart.Name .Values.nameOverride | trunc 63 | trimSuffix "-" }}
{{- end }}

{{- define "cert-manager.fullname" -}}
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

{{- define "webhook.fullname" -}}
{{- printf "%s-webhook" (include "cert-manager.fullname" . | trunc 55 | trimSuffix "-") }}
{{- end }}

{{- define "cainjector.fullname" -}}
{{- printf "%s-cainjector" (include "cert-manager.fullname" . | trunc 52 | trimSuffix "-") }}
{{- end }}

{{- define "startupapicheck.fullname" -}}
{{- printf "%s-startupapicheck" (include "cert-manager.fullname" . | trunc 47 | trimSuffix "-") }}
{{- end }}

{{- define "cert-manager.namespace" -}}
{{- default .Release.Namespace .Values.namespace }}
{{- end }}

{{- define "cert-manager.labels" -}}
helm.sh/chart: {{ printf "%s-%s" .Chart.Name .Chart.Version | replace "+" "_" | trunc 63 | trimSuffix "-" }}
app.kubernetes.io/instance: {{ .Release.Name }}
app.kubernetes.io/version: {{ .Chart.AppVersion | quote }}
app.kubernetes.io/managed-by: {{ .Release.Service }}
{{- end }}

{{- /* (list <image values> <root>) -> registry/namespace/name:tag */ -}}
{{- define "cert-manager.image" -}}
{{- $image := index . 0 }}
{{- $root := index . 1 }}
{{- $repository := $image.repository | default (printf "%s/%s/%s" $root.Values.imageRegistry $root.Values.imageNamespace $image.name) }}
{{- printf "%s:%s" $repository ($image.tag | default $root.Chart.AppVersion) }}
{{- end }}

{{- /* (list <serviceAccount values> <fullname>) -> the account a component runs as: serviceAccount.name, else
the component's fullname when serviceAccount.create, else "default" (upstream's *.serviceAccountName). */ -}}
{{- define "cert-manager.serviceAccountName" -}}
{{- $account := index . 0 }}
{{- if $account.create }}{{ $account.name | default (index . 1) }}{{ else }}{{ $account.name | default "default" }}{{ end }}
{{- end }}

{{- /* (list <root> <component values> <name> <app label> <component> <container>) -> one controller Deployment;
<container> holds the container's args, ports and probes, as each upstream Deployment template gives them. */ -}}
{{- define "cert-manager.deployment" -}}
{{- $root := index . 0 }}
{{- $values := index . 1 }}
{{- $name := index . 2 }}
{{- $app := index . 3 }}
{{- $component := index . 4 }}
{{- $container := index . 5 }}
apiVersion: apps/v1
kind: Deployment
metadata:
  name: {{ $name }}
  namespace: {{ include "cert-manager.namespace" $root }}
  labels:
    app: {{ $app }}
    app.kubernetes.io/name: {{ $app }}
    app.kubernetes.io/component: {{ $component | quote }}
    {{- include "cert-manager.labels" $root | nindent 4 }}
spec:
  replicas: {{ $values.replicaCount | default 1 }}
  selector:
    matchLabels:
      app.kubernetes.io/name: {{ $app }}
      app.kubernetes.io/instance: {{ $root.Release.Name }}
      app.kubernetes.io/component: {{ $component | quote }}
  {{- with $values.strategy }}
  strategy:
    {{- toYaml . | nindent 4 }}
  {{- end }}
  template:
    metadata:
      labels:
        app: {{ $app }}
        app.kubernetes.io/name: {{ $app }}
        app.kubernetes.io/instance: {{ $root.Release.Name }}
        app.kubernetes.io/component: {{ $component | quote }}
    spec:
      serviceAccountName: {{ include "cert-manager.serviceAccountName" (list $values.serviceAccount $name) }}
      containers:
        - name: {{ printf "cert-manager-%s" $component }}
          image: {{ include "cert-manager.image" (list $values.image $root) | quote }}
          imagePullPolicy: {{ $values.image.pullPolicy }}
          {{- toYaml $container | nindent 10 }}
          env:
            - name: POD_NAMESPACE
              valueFrom:
                fieldRef:
                  fieldPath: metadata.namespace
      {{- with $values.tolerations }}
      tolerations:
        {{- toYaml . | nindent 8 }}
      {{- end }}
{{- end }}

{{- /* (dict "root" "kind" "name" "namespace" "rules" "account" "app" "component" and optional "aggregate" (labels),
"hook" (annotations), "bind" (set: no binding)) -> a Role or ClusterRole and, unless "bind" is set, its binding to the
component's ServiceAccount <account> in the release namespace: the shape of every role in upstream's *rbac.yaml. */ -}}
{{- define "cert-manager.role" -}}
{{- $root := .root }}
{{- range $kind := ternary (list .kind) (list .kind (printf "%sBinding" .kind)) (hasKey . "bind") }}
---
apiVersion: rbac.authorization.k8s.io/v1
kind: {{ $kind }}
metadata:
  name: {{ $.name }}
  {{- with $.namespace }}
  namespace: {{ . }}
  {{- end }}
  {{- with $.hook }}
  annotations:
    {{- toYaml . | nindent 4 }}
  {{- end }}
  labels:
    app: {{ $.app }}
    app.kubernetes.io/name: {{ $.app }}
    app.kubernetes.io/component: {{ $.component | quote }}
    {{- include "cert-manager.labels" $root | nindent 4 }}
    {{- if not (hasSuffix "Binding" $kind) }}
    {{- range $.aggregate }}
    {{ . }}: "true"
    {{- end }}
    {{- end }}
{{- if hasSuffix "Binding" $kind }}
roleRef:
  apiGroup: rbac.authorization.k8s.io
  kind: {{ $.kind }}
  name: {{ $.name }}
subjects:
  - kind: ServiceAccount
    name: {{ $.account }}
    namespace: {{ include "cert-manager.namespace" $root }}
{{- else }}
rules:
  {{- toYaml $.rules | nindent 2 }}
{{- end }}
{{- end }}
{{- end }}

