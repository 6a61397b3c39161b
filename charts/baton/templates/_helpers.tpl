{{/* The chart name, shortened to fit label values. */}}
{{- define "baton.name" -}}
{{- default .Chart.Name .Values.nameOverride | trunc 63 | trimSuffix "-" }}
{{- end }}

{{/*
The full name of the release's objects: fullnameOverride, else the release name when it
already contains the chart name, else <release>-<chart>.
*/}}
{{- define "baton.fullname" -}}
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

{{- define "baton.chart" -}}
{{- printf "%s-%s" .Chart.Name .Chart.Version | replace "+" "_" | trunc 63 | trimSuffix "-" }}
{{- end }}

{{/* Labels every object carries. */}}
{{- define "baton.labels" -}}
helm.sh/chart: {{ include "baton.chart" . }}
app.kubernetes.io/name: {{ include "baton.name" . }}
app.kubernetes.io/instance: {{ .Release.Name | quote }}
app.kubernetes.io/version: {{ .Values.image.tag | default .Chart.AppVersion | trunc 63 | trimSuffix "-" | quote }}
app.kubernetes.io/managed-by: {{ .Release.Service }}
app.kubernetes.io/part-of: baton
{{- end }}

{{/* Labels that select the pods (and the metrics Service's endpoints). */}}
{{- define "baton.selectorLabels" -}}
app.kubernetes.io/name: {{ include "baton.name" . }}
app.kubernetes.io/instance: {{ .Release.Name | quote }}
app.kubernetes.io/component: {{ .Values.mode }}
{{- end }}

{{- define "baton.serviceAccountName" -}}
{{- if .Values.serviceAccount.create }}
{{- default (include "baton.fullname" .) .Values.serviceAccount.name }}
{{- else }}
{{- required "serviceAccount.name is required when serviceAccount.create is false" .Values.serviceAccount.name }}
{{- end }}
{{- end }}

{{- define "baton.managerAccessName" -}}
{{- default (printf "%s-manager-access" (include "baton.fullname" .) | trunc 63 | trimSuffix "-") .Values.managerAccess.serviceAccountName }}
{{- end }}

{{- define "baton.image" -}}
{{- printf "%s:%s" .Values.image.repository (.Values.image.tag | default .Chart.AppVersion) }}
{{- end }}

{{/*
The configuration file: the config values as given, plus the two bind addresses, which
follow ports.* so that probes, Service and binary agree.
*/}}
{{- define "baton.configFile" -}}
{{- $config := deepCopy (.Values.config | default dict) }}
{{- with $config.workerClient }}
{{- if hasKey . "qps" }}
{{- $qps := float64 .qps }}
{{- if le $qps 0.0 }}
{{- fail (printf "config.workerClient.qps must be a positive number (got %v)" .qps) }}
{{- end }}
{{- $_ := set . "qps" $qps }}
{{- end }}
{{- end }}
{{- $_ := set $config "metricsBindAddress" (printf "0.0.0.0:%d" (int .Values.ports.metrics)) }}
{{- $_ := set $config "healthProbeBindAddress" (printf "0.0.0.0:%d" (int .Values.ports.health)) }}
{{- toYaml $config }}
{{- end }}

{{/* Refuses combinations that would deploy something broken. */}}
{{- define "baton.validate" -}}
{{- if not (has .Values.mode (list "manager" "worker")) }}
{{- fail (printf "mode must be manager or worker (got %q)" .Values.mode) }}
{{- end }}
{{- if eq (int .Values.ports.metrics) (int .Values.ports.health) }}
{{- fail "ports.metrics and ports.health must differ" }}
{{- end }}
{{- $le := (.Values.config | default dict).leaderElection | default dict }}
{{- if and (gt (int .Values.replicas) 1) (eq (toString $le.enabled) "false") }}
{{- fail "replicas > 1 needs leader election: do not set config.leaderElection.enabled to false" }}
{{- end }}
{{- end }}

{{/*
"true" when the chart installs the MutatingAdmissionPolicy that suspends queued Jobs:
jobs.admissionPolicies.mutating true, or auto where the cluster serves the v1 API.
*/}}
{{- define "baton.jobs.mutatingPolicy" -}}
{{- $mode := toString (dig "admissionPolicies" "mutating" "auto" (.Values.jobs | default dict)) }}
{{- $served := .Capabilities.APIVersions.Has "admissionregistration.k8s.io/v1/MutatingAdmissionPolicy" }}
{{- if or (eq $mode "true") (and (eq $mode "auto") $served) }}true{{ end }}
{{- end }}

{{/* "true" when the chart installs the ValidatingAdmissionPolicy for queued Jobs. */}}
{{- define "baton.jobs.validatingPolicy" -}}
{{- if eq (toString (dig "admissionPolicies" "validating" true (.Values.jobs | default dict))) "true" }}true{{ end }}
{{- end }}
