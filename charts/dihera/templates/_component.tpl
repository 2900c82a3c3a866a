{{/*
Objects the controller and the di-server each have, built the same way.
Each takes dict "root" $ "component" "<name>" (plus the arguments named below).
*/}}

{{/* A ServiceAccount, when .Values.<component>.serviceAccount.create. */}}
{{- define "dihera.serviceAccount" -}}
{{- $sa := (index .root.Values .component).serviceAccount }}
{{- if $sa.create }}
apiVersion: v1
kind: ServiceAccount
metadata:
  name: {{ include (printf "dihera.%s.serviceAccountName" .component) .root }}
  namespace: {{ .root.Release.Namespace }}
  labels:
    {{- include "dihera.componentLabels" . | nindent 4 }}
  {{- with $sa.annotations }}
  annotations:
    {{- toYaml . | nindent 4 }}
  {{- end }}
automountServiceAccountToken: true
{{- end }}
{{- end }}

{{/*
RBAC from the component's rule lists (templates/<component>/_rules.tpl): "dihera.<component>.namespacedRules"
and "dihera.<component>.clusterRules". Cluster-wide (no watchNamespaces): one ClusterRole with both lists.
With watchNamespaces: a Role with the namespaced rules in each namespace, and a ClusterRole with the
cluster rules only if "clusterRulesWhenNamespaced" is true.
*/}}
{{- define "dihera.rbac" -}}
{{- $root := .root }}
{{- $name := include "dihera.componentName" . }}
{{- $labels := include "dihera.componentLabels" . }}
{{- $sa := include (printf "dihera.%s.serviceAccountName" .component) $root }}
{{- $namespacedRules := include (printf "dihera.%s.namespacedRules" .component) $root }}
{{- $clusterRules := include (printf "dihera.%s.clusterRules" .component) $root }}
{{- $clusterRole := list }}
{{- if $root.Values.watchNamespaces }}
{{- range $ns := $root.Values.watchNamespaces }}
---
apiVersion: rbac.authorization.k8s.io/v1
kind: Role
metadata:
  name: {{ $name }}
  namespace: {{ $ns }}
  labels:
    {{- $labels | nindent 4 }}
rules:
  {{- $namespacedRules | nindent 2 }}
---
apiVersion: rbac.authorization.k8s.io/v1
kind: RoleBinding
metadata:
  name: {{ $name }}
  namespace: {{ $ns }}
  labels:
    {{- $labels | nindent 4 }}
roleRef:
  apiGroup: rbac.authorization.k8s.io
  kind: Role
  name: {{ $name }}
subjects:
  - kind: ServiceAccount
    name: {{ $sa }}
    namespace: {{ $root.Release.Namespace }}
{{- end }}
{{- if .clusterRulesWhenNamespaced }}
{{- $clusterRole = list $clusterRules }}
{{- end }}
{{- else }}
{{- $clusterRole = list $namespacedRules $clusterRules }}
{{- end }}
{{- if $clusterRole }}
---
apiVersion: rbac.authorization.k8s.io/v1
kind: ClusterRole
metadata:
  name: {{ $name }}
  labels:
    {{- $labels | nindent 4 }}
rules:
  {{- range $clusterRole }}
  {{- . | nindent 2 }}
  {{- end }}
---
apiVersion: rbac.authorization.k8s.io/v1
kind: ClusterRoleBinding
metadata:
  name: {{ $name }}
  labels:
    {{- $labels | nindent 4 }}
roleRef:
  apiGroup: rbac.authorization.k8s.io
  kind: ClusterRole
  name: {{ $name }}
subjects:
  - kind: ServiceAccount
    name: {{ $sa }}
    namespace: {{ $root.Release.Namespace }}
{{- end }}
{{- end }}

{{/* A ServiceMonitor scraping the Service port named "port" at /metrics. */}}
{{- define "dihera.serviceMonitor" -}}
{{- $sm := .root.Values.metrics.serviceMonitor }}
apiVersion: monitoring.coreos.com/v1
kind: ServiceMonitor
metadata:
  name: {{ include "dihera.componentName" . }}
  namespace: {{ .root.Release.Namespace }}
  labels:
    {{- include "dihera.componentLabels" . | nindent 4 }}
    {{- with $sm.labels }}
    {{- toYaml . | nindent 4 }}
    {{- end }}
spec:
  selector:
    matchLabels:
      {{- include "dihera.componentSelectorLabels" . | nindent 6 }}
  namespaceSelector:
    matchNames:
      - {{ .root.Release.Namespace }}
  endpoints:
    - port: {{ .port }}
      path: /metrics
      interval: {{ $sm.interval }}
      scrapeTimeout: {{ $sm.scrapeTimeout }}
      {{- if and (eq .component "server") .root.Values.server.tls.enabled }}
      scheme: https
      tlsConfig:
        serverName: {{ printf "%s.%s.svc" (include "dihera.componentName" .) .root.Release.Namespace }}
        ca:
          secret:
            name: {{ include "dihera.server.tlsSecretName" .root }}
            key: ca.crt
      {{- end }}
{{- end }}
