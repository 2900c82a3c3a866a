{{/*
Names. Kubernetes names are limited to 63 characters (DNS-1123 labels): every name is truncated there.
*/}}

{{/* The chart name (or nameOverride). */}}
{{- define "dihera.name" -}}
{{- default .Chart.Name .Values.nameOverride | trunc 63 | trimSuffix "-" }}
{{- end }}

{{/*
The full name prefixing every object: fullnameOverride, else the release name when it contains the chart
name (release `dihera` gives `dihera`), else `<release>-<chart>`.
*/}}
{{- define "dihera.fullname" -}}
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

{{/* `<fullname>-<component>`, truncated: dict "root" $ "component" "controller". */}}
{{- define "dihera.componentName" -}}
{{- $full := include "dihera.fullname" .root | trunc (int (sub 62 (len .component))) | trimSuffix "-" }}
{{- printf "%s-%s" $full .component }}
{{- end }}

{{/* chart label value: name-version */}}
{{- define "dihera.chart" -}}
{{- printf "%s-%s" .Chart.Name .Chart.Version | replace "+" "_" | trunc 63 | trimSuffix "-" }}
{{- end }}

{{/* Labels of every object. */}}
{{- define "dihera.labels" -}}
helm.sh/chart: {{ include "dihera.chart" . }}
{{ include "dihera.selectorLabels" . }}
app.kubernetes.io/version: {{ .Chart.AppVersion | quote }}
app.kubernetes.io/managed-by: {{ .Release.Service }}
app.kubernetes.io/part-of: dihera
{{- with .Values.commonLabels }}
{{ toYaml . }}
{{- end }}
{{- end }}

{{/* Labels selecting the release's objects (stable across upgrades). */}}
{{- define "dihera.selectorLabels" -}}
app.kubernetes.io/name: {{ include "dihera.name" . }}
app.kubernetes.io/instance: {{ .Release.Name }}
{{- end }}

{{/* Labels of one component's objects: dict "root" $ "component" "controller". */}}
{{- define "dihera.componentLabels" -}}
{{ include "dihera.labels" .root }}
app.kubernetes.io/component: {{ .component }}
{{- end }}

{{/* Selector labels of one component's pods: dict "root" $ "component" "controller". */}}
{{- define "dihera.componentSelectorLabels" -}}
{{ include "dihera.selectorLabels" .root }}
app.kubernetes.io/component: {{ .component }}
{{- end }}

{{/* ServiceAccount names. */}}
{{- define "dihera.controller.serviceAccountName" -}}
{{- if .Values.controller.serviceAccount.create }}
{{- default (include "dihera.componentName" (dict "root" . "component" "controller")) .Values.controller.serviceAccount.name }}
{{- else }}
{{- default "default" .Values.controller.serviceAccount.name }}
{{- end }}
{{- end }}

{{- define "dihera.server.serviceAccountName" -}}
{{- if .Values.server.serviceAccount.create }}
{{- default (include "dihera.componentName" (dict "root" . "component" "server")) .Values.server.serviceAccount.name }}
{{- else }}
{{- default "default" .Values.server.serviceAccount.name }}
{{- end }}
{{- end }}

{{/* The image reference: repository:tag, tag defaulting to the chart's appVersion. */}}
{{- define "dihera.image" -}}
{{- printf "%s:%s" .Values.image.repository (default .Chart.AppVersion .Values.image.tag) }}
{{- end }}

{{/* The settings ConfigMap's name. */}}
{{- define "dihera.settingsName" -}}
{{- include "dihera.componentName" (dict "root" . "component" "settings") }}
{{- end }}

{{/* The Lease the controller replicas elect their leader with (in the release's namespace). */}}
{{- define "dihera.leaseName" -}}
{{- default (include "dihera.componentName" (dict "root" . "component" "controller")) .Values.leaderElection.leaseName }}
{{- end }}

{{/* The di-server's URL given to DI-engine pods as DI_SERVER_URL. */}}
{{- define "dihera.serverURL" -}}
{{- if .Values.server.url }}
{{- .Values.server.url }}
{{- else }}
{{- $svc := include "dihera.componentName" (dict "root" . "component" "server") }}
{{- $scheme := ternary "https" "http" .Values.server.tls.enabled }}
{{- printf "%s://%s.%s.svc.%s:%d" $scheme $svc .Release.Namespace .Values.clusterDomain (int .Values.server.service.port) }}
{{- end }}
{{- end }}

{{/* The Secret holding the di-server's certificate (tls.crt, tls.key) and its CA (ca.crt). */}}
{{- define "dihera.server.tlsSecretName" -}}
{{- if eq .Values.server.tls.source "secret" }}
{{- required "server.tls.existingSecret: the Secret's name is needed with server.tls.source=secret" .Values.server.tls.existingSecret }}
{{- else }}
{{- include "dihera.componentName" (dict "root" . "component" "server-tls") }}
{{- end }}
{{- end }}

{{/* The names in the di-server's certificate: its Service's, then server.tls.dnsNames. */}}
{{- define "dihera.server.dnsNames" -}}
{{- $svc := include "dihera.componentName" (dict "root" . "component" "server") }}
{{- $ns := .Release.Namespace }}
{{- $names := list $svc (printf "%s.%s" $svc $ns) (printf "%s.%s.svc" $svc $ns) (printf "%s.%s.svc.%s" $svc $ns .Values.clusterDomain) }}
{{- concat $names .Values.server.tls.dnsNames | uniq | toJson }}
{{- end }}

{{/* Where the di-server's pod sees its certificate, and the controller's the CA. */}}
{{- define "dihera.server.tlsDir" -}}/etc/dihera/tls{{- end }}
{{- define "dihera.controller.serverCADir" -}}/etc/dihera/server-ca{{- end }}

{{/*
CEL: whether the object named by the argument ("object" or "oldObject") carries dihera's marks (the policy
in admission-policy-writes.yaml): the label diengine/job, and app.kubernetes.io/managed-by=dihera or an
ownerReference to the DIJob or the Workflow that label names.
*/}}
{{- define "dihera.ownMarks" -}}
{{- $o := . -}}
has({{ $o }}.metadata.labels) && 'diengine/job' in {{ $o }}.metadata.labels && (
('app.kubernetes.io/managed-by' in {{ $o }}.metadata.labels && {{ $o }}.metadata.labels['app.kubernetes.io/managed-by'] == 'dihera') ||
(has({{ $o }}.metadata.ownerReferences) && {{ $o }}.metadata.ownerReferences.exists(r, r.name == {{ $o }}.metadata.labels['diengine/job'] &&
((r.kind == 'DIJob' && r.apiVersion.startsWith('diengine.opendilab.org/')) || (r.kind == 'Workflow' && r.apiVersion.startsWith('argoproj.io/'))))))
{{- end }}
