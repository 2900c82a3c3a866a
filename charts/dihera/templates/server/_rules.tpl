{{/*
THE di-server's permissions: the one place to amend them. No wildcards; exactly what the server uses
(tests/integration/test_rbac_audit.py compares them with the API server's audit log of its requests).

dihera.server.namespacedRules: granted cluster-wide (ClusterRole) by default, or by a Role in each of
.Values.watchNamespaces.
dihera.server.clusterRules: cluster-scoped APIs, always in a ClusterRole (it authenticates and authorizes
its callers with TokenReviews and SubjectAccessReviews).
*/}}

{{- define "dihera.server.namespacedRules" -}}
# Jobs: watched (dihera/kube/watch/watches.py: Watches), read and scaled, spec.tasks[].replicas and the
# stamp (dihera/kube/scale_executor.py: ScaleStore.get_job, ScaleStore.patch_job), their Idempotency-Keys
# kept (dihera/kube/key_annotations.py: AnnotationKeyStore.run), their profilings recorded
# (dihera/kube/profilings.py: write_profilings) and their RL figures written (dihera/kube/training.py:
# write_training; a 422 read back by uid: get).
- apiGroups: [diengine.opendilab.org]
  resources: [dijobs]
  verbs: [get, list, watch, patch]
- apiGroups: [diengine.opendilab.org]
  resources: [dijobs/status]
  verbs: [patch]
# The job's Workflow: read, converged when scaling, watched until Argo finishes the retired replicas
# (dihera/kube/scale_executor.py: ScaleStore.get_workflow, ScaleStore.patch_workflow, ScaleStore.watch_workflow).
- apiGroups: [argoproj.io]
  resources: [workflows]
  verbs: [get, patch, watch]
# The job's membership ConfigMap: watched (dihera/kube/watch/watches.py: Watches), read and replaced with a
# resourceVersion when scaling (dihera/kube/scale_executor.py: ScaleStore.get_configmap, ScaleStore.replace_configmap).
- apiGroups: [""]
  resources: [configmaps]
  verbs: [get, list, watch, update]
# Replica pods: their addresses and phases watched (dihera/kube/watch/watches.py: Watches), the retired ones
# deleted on scale-down (dihera/kube/scale_executor.py: ScaleStore.list_pods, ScaleStore.delete_pods).
- apiGroups: [""]
  resources: [pods]
  verbs: [list, watch, delete]
{{- if .Values.kueue.enabled }}
# Kueue (kueue.enabled, docs/queueing.md): a scale-up of a queued job asks for its added replicas with a
# slice Workload (created, read until admitted, deleted when refused); a scale-down deletes the slices
# it no longer needs (listed) and marks the rest reclaimable (status) (dihera/kube/workloads.py:
# QuotaGate.admit, QuotaGate.release).
- apiGroups: [kueue.x-k8s.io]
  resources: [workloads]
  verbs: [get, list, create, delete]
- apiGroups: [kueue.x-k8s.io]
  resources: [workloads/status]
  verbs: [patch]
# A slice is owned by its DIJob (blockOwnerDeletion, checked by OwnerReferencesPermissionEnforcement;
# dihera/objects.py: owner_reference).
- apiGroups: [diengine.opendilab.org]
  resources: [dijobs/finalizers]
  verbs: [update]
{{- end }}
{{- end }}

{{- define "dihera.server.clusterRules" -}}
# Who is calling (bearer token) and may they do it (dihera/kube/auth.py: Authenticator.authenticate,
# Authenticator.allowed).
- apiGroups: [authentication.k8s.io]
  resources: [tokenreviews]
  verbs: [create]
- apiGroups: [authorization.k8s.io]
  resources: [subjectaccessreviews]
  verbs: [create]
{{- if .Values.kueue.enabled }}
# Kueue: the value of a job's priority class, a scale-up's slice has the job's (dihera/kube/workloads.py:
# WorkloadStore.priority_value).
- apiGroups: [kueue.x-k8s.io]
  resources: [workloadpriorityclasses]
  verbs: [get]
{{- end }}
{{- end }}
