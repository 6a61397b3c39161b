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
{{- $frameworks := list "batch/job" }}
{{- range (include "baton.integrations" . | fromJsonArray) }}
{{- if not .external }}{{ $frameworks = append $frameworks .framework }}{{ end }}
{{- end }}
{{- $integrations := deepCopy ($config.integrations | default dict) }}
{{- $_ := set $integrations "frameworks" $frameworks }}
{{- $_ := set $config "integrations" $integrations }}
{{- $externals := list }}
{{- range (include "baton.integrations" . | fromJsonArray) }}
{{- if .external }}{{ $externals = append $externals (dict "name" .framework) }}{{ end }}
{{- end }}
{{- if $externals }}
{{- $mk := deepCopy ($config.multiKueue | default dict) }}
{{- $_ := set $mk "externalFrameworks" $externals }}
{{- $_ := set $config "multiKueue" $mk }}
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

{{/*
The job kinds enabled besides batch/v1 Jobs, as a JSON list of
{framework, group, version, kind, plural, worker, external}: integrations.frameworks
("auto": each built-in kind whose API the cluster serves at install time), then, on the
manager, integrations.externalFrameworks. RBAC and admission policies are rendered for
these only.
*/}}
{{- define "baton.integrations" -}}
{{- $builtIn := list
  (dict "framework" "jobset.x-k8s.io/jobset" "group" "jobset.x-k8s.io" "version" "v1alpha2" "kind" "JobSet" "plural" "jobsets" "worker" true "external" false)
  (dict "framework" "trainer.kubeflow.org/trainjob" "group" "trainer.kubeflow.org" "version" "v1alpha1" "kind" "TrainJob" "plural" "trainjobs" "worker" true "external" false)
  (dict "framework" "ray.io/rayjob" "group" "ray.io" "version" "v1" "kind" "RayJob" "plural" "rayjobs" "worker" true "external" false) }}
{{- $chosen := (.Values.integrations | default dict).frameworks | default "auto" }}
{{- $out := list }}
{{- range $builtIn }}
{{- $on := false }}
{{- if eq (toString $chosen) "auto" }}
{{- $on = $.Capabilities.APIVersions.Has (printf "%s/%s/%s" .group .version .kind) }}
{{- else }}
{{- $on = has .framework $chosen }}
{{- end }}
{{- if $on }}{{ $out = append $out . }}{{ end }}
{{- end }}
{{- if eq .Values.mode "manager" }}
{{- range ((.Values.integrations | default dict).externalFrameworks | default list) }}
{{- $parts := splitn "." 3 .name }}
{{- if not (and $parts._0 $parts._1 $parts._2) }}
{{- fail (printf "integrations.externalFrameworks: %q is not Kind.version.group" .name) }}
{{- end }}
{{- $plural := .plural | default (printf "%ss" (lower $parts._0)) }}
{{- $out = append $out (dict "framework" .name "group" $parts._2 "version" $parts._1 "kind" $parts._0 "plural" $plural "worker" false "external" true) }}
{{- end }}
{{- end }}
{{- toJson $out }}
{{- end }}
