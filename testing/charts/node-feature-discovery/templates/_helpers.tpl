{{- /* Ours. Follows kubernetes-sigs/node-feature-discovery deployment/helm/node-feature-discovery/templates/_helpers.tpl:
node-feature-discovery.name / .fullname (helm create's rules); image image.repository:tag, tag defaulting to the
appVersion. */ -}}
{{- define "node-feature-discovery.name" -}}
{{- default .Chart.Name .Values.nameOverride | trunc 63 | trimSuffix "-" }}
{{- end }}

{{- define "node-feature-discovery.fullname" -}}
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

{{- define "node-feature-discovery.image" -}}
{{- printf "%s:%s" .Values.image.repository (.Values.image.tag | default .Chart.AppVersion) }}
{{- end }}

{{- /* (list <root> <component values> <component> <kind>) -> the master / gc Deployment or the worker DaemonSet. */ -}}
{{- define "node-feature-discovery.workload" -}}
{{- $root := index . 0 }}
{{- $values := index . 1 }}
{{- $component := index . 2 }}
{{- $kind := index . 3 }}
apiVersion: apps/v1
kind: {{ $kind }}
metadata:
  name: {{ include "node-feature-discovery.fullname" $root }}-{{ $component }}
  namespace: {{ $root.Release.Namespace }}
  labels:
    helm.sh/chart: {{ printf "%s-%s" $root.Chart.Name $root.Chart.Version | trunc 63 | trimSuffix "-" }}
    app.kubernetes.io/name: {{ include "node-feature-discovery.name" $root }}
    app.kubernetes.io/instance: {{ $root.Release.Name }}
    app.kubernetes.io/version: {{ $root.Chart.AppVersion | quote }}
    app.kubernetes.io/managed-by: {{ $root.Release.Service }}
    role: {{ $component }}
spec:
  {{- if eq $kind "Deployment" }}
  replicas: {{ $values.replicaCount | default 1 }}
  {{- else }}
  {{- with $values.updateStrategy }}
  updateStrategy:
    {{- toYaml . | nindent 4 }}
  {{- end }}
  {{- end }}
  selector:
    matchLabels:
      app.kubernetes.io/name: {{ include "node-feature-discovery.name" $root }}
      app.kubernetes.io/instance: {{ $root.Release.Name }}
      role: {{ $component }}
  template:
    metadata:
      labels:
        app.kubernetes.io/name: {{ include "node-feature-discovery.name" $root }}
        app.kubernetes.io/instance: {{ $root.Release.Name }}
        role: {{ $component }}
    spec:
      containers:
        - name: {{ $component }}
          image: {{ include "node-feature-discovery.image" $root | quote }}
          imagePullPolicy: {{ $root.Values.image.pullPolicy }}
          command: [{{ printf "nfd-%s" $component | quote }}]
      {{- with $values.nodeSelector }}
      nodeSelector:
        {{- toYaml . | nindent 8 }}
      {{- end }}
      {{- with $values.tolerations }}
      tolerations:
        {{- toYaml . | nindent 8 }}
      {{- end }}
{{- end }}
