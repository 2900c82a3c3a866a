{{/*
THE di-server's permissions: the one place to amend them. No wildcards; only what the server uses.

dihera.server.namespacedRules: granted cluster-wide (ClusterRole) by default, or by a Role in each of
.Values.watchNamespaces.
dihera.server.clusterRules: cluster-scoped APIs, always in a ClusterRole (it authenticates and authorizes
its callers with TokenReviews and SubjectAccessReviews).
*/}}

{{- define "dihera.server.namespacedRules" -}}
# Jobs: read them, scale them (spec.tasks[].replicas), record profilings in status.
- apiGroups: [diengine.opendilab.org]
  resources: [dijobs]
  verbs: [get, list, watch, patch, update]
- apiGroups: [diengine.opendilab.org]
  resources: [dijobs/status]
  verbs: [get, patch]
# The job's Workflow (replica addresses, scale-down of running nodes).
- apiGroups: [argoproj.io]
  resources: [workflows]
  verbs: [get, list, watch, patch, update]
# The job's membership ConfigMap.
- apiGroups: [""]
  resources: [configmaps]
  verbs: [get, list, watch, patch, update]
# Replica pods: addresses, and deletion on scale-down.
- apiGroups: [""]
  resources: [pods]
  verbs: [get, list, watch, delete]
{{- end }}

{{- define "dihera.server.clusterRules" -}}
# Who is calling (bearer token) and may they do it.
- apiGroups: [authentication.k8s.io]
  resources: [tokenreviews]
  verbs: [create]
- apiGroups: [authorization.k8s.io]
  resources: [subjectaccessreviews]
  verbs: [create]
{{- end }}
