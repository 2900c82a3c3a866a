{{/*
THE controller's permissions: the one place to amend them. No wildcards; exactly what the controller uses
(tests/integration/test_rbac_audit.py compares them with the API server's audit log of its requests).

dihera.controller.namespacedRules: namespaced resources. Granted cluster-wide (ClusterRole) by default,
or by a Role in each of .Values.watchNamespaces.
dihera.controller.clusterRules: cluster-scoped resources, ClusterRole only (none with watchNamespaces).
dihera.controller.leaseRules: the Lease of leader election, by a Role in the release's namespace.
*/}}

{{- define "dihera.controller.namespacedRules" -}}
# The DIJobs it reconciles (watched; patched by a synced hand edit's stamp and by the
# scale-down of failurePolicy DropReplica; deleted by ttlSecondsAfterFinished) and their status.
- apiGroups: [diengine.opendilab.org]
  resources: [dijobs]
  verbs: [get, list, watch, patch, delete]
- apiGroups: [diengine.opendilab.org]
  resources: [dijobs/status]
  verbs: [patch]
# ownerReferences with blockOwnerDeletion on a DIJob (checked by OwnerReferencesPermissionEnforcement).
- apiGroups: [diengine.opendilab.org]
  resources: [dijobs/finalizers]
  verbs: [update]
# The Argo Workflow that runs each DIJob (created, converged by scaling, stopped by cleanPodPolicy,
# deleted by spec.suspend and created again on resume).
- apiGroups: [argoproj.io]
  resources: [workflows]
  verbs: [get, list, watch, create, patch, delete]
# Pods of the job (watched for status; deleted by cleanPodPolicy and scale-down).
- apiGroups: [""]
  resources: [pods]
  verbs: [list, watch, delete]
# The job's headless Service (created; read back when it already exists).
- apiGroups: [""]
  resources: [services]
  verbs: [get, create]
# The job's membership ConfigMap (watched for the controller's cache, label-selected; created; read and
# replaced with a resourceVersion when scaling).
- apiGroups: [""]
  resources: [configmaps]
  verbs: [get, list, watch, create, update]
# Events about DIJobs.
- apiGroups: [""]
  resources: [events]
  verbs: [create]
{{- if .Values.kueue.enabled }}
# Kueue (kueue.enabled, docs/queueing.md): a queued DIJob's Workload (watched, label-selected; created;
# its podSets resized when it is requeued) and its scale-ups' slices (listed; created; deleted when
# refused or no longer needed).
- apiGroups: [kueue.x-k8s.io]
  resources: [workloads]
  verbs: [get, list, watch, create, patch, delete]
# Released when evicted, Finished when the job ended, reclaimable pods after a scale-down.
- apiGroups: [kueue.x-k8s.io]
  resources: [workloads/status]
  verbs: [patch]
{{- end }}
{{- end }}

{{- define "dihera.controller.clusterRules" -}}
{{- if .Values.kueue.enabled }}
# Kueue: the node labels and tolerations of an admission's flavors; the value of a job's priority class.
- apiGroups: [kueue.x-k8s.io]
  resources: [resourceflavors, workloadpriorityclasses]
  verbs: [get]
{{- end }}
{{- end }}

{{- define "dihera.controller.leaseRules" -}}
# Leader election: the Lease the replicas share (read, created by the first, renewed and taken over by
# replacing it with its resourceVersion).
- apiGroups: [coordination.k8s.io]
  resources: [leases]
  verbs: [get, create, update]
{{- end }}
