{{/*
THE di-server's permissions: the one place to amend them. No wildcards; exactly what the server uses
(tests/integration/test_rbac_audit.py compares them with the API server's audit log of its requests).

dihera.server.namespacedRules: granted cluster-wide (ClusterRole) by default, or by a Role in each of
.Values.watchNamespaces.
dihera.server.clusterRules: cluster-scoped APIs, always in a ClusterRole (it authenticates and authorizes
its callers with TokenReviews and SubjectAccessReviews).
*/}}

{{- define "dihera.server.namespacedRules" -}}
# Jobs: read them (watch cache), scale them (spec.tasks[].replicas, stamp, Idempotency-Keys), record profilings.
- apiGroups: [diengine.opendilab.org]
  resources: [dijobs]
  verbs: [get, list, watch, patch]
- apiGroups: [diengine.opendilab.org]
  resources: [dijobs/status]
  verbs: [patch]
# The job's Workflow (read and converged when scaling; watched until Argo finishes retired replicas).
- apiGroups: [argoproj.io]
  resources: [workflows]
  verbs: [get, patch, watch]
# The job's membership ConfigMap (watch cache; replaced with a resourceVersion when scaling).
- apiGroups: [""]
  resources: [configmaps]
  verbs: [get, list, watch, update]
# Replica pods: addresses (watch cache), and deletion on scale-down.
- apiGroups: [""]
  resources: [pods]
  verbs: [list, watch, delete]
{{- if .Values.kueue.enabled }}
# Kueue (kueue.enabled, docs/queueing.md): a scale-up of a queued job asks for its added replicas with a
# slice Workload (created, read until admitted, deleted when refused); a scale-down deletes the slices
# it no longer needs (listed) and marks the rest reclaimable (status).
- apiGroups: [kueue.x-k8s.io]
  resources: [workloads]
  verbs: [get, list, create, delete]
- apiGroups: [kueue.x-k8s.io]
  resources: [workloads/status]
  verbs: [patch]
# A slice is owned by its DIJob (blockOwnerDeletion, checked by OwnerReferencesPermissionEnforcement).
- apiGroups: [diengine.opendilab.org]
  resources: [dijobs/finalizers]
  verbs: [update]
{{- end }}
{{- end }}

{{- define "dihera.server.clusterRules" -}}
# Who is calling (bearer token) and may they do it.
- apiGroups: [authentication.k8s.io]
  resources: [tokenreviews]
  verbs: [create]
- apiGroups: [authorization.k8s.io]
  resources: [subjectaccessreviews]
  verbs: [create]
{{- if .Values.kueue.enabled }}
# Kueue: the value of a job's priority class (a scale-up's slice has the job's).
- apiGroups: [kueue.x-k8s.io]
  resources: [workloadpriorityclasses]
  verbs: [get]
{{- end }}
{{- end }}
