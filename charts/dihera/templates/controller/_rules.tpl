{{/*
THE controller's permissions: the one place to amend them. No wildcards; exactly what the controller uses
(tests/integration/test_rbac_audit.py compares them with the API server's audit log of its requests).

dihera.controller.namespacedRules: namespaced resources. Granted cluster-wide (ClusterRole) by default,
or by a Role in each of .Values.watchNamespaces.
dihera.controller.clusterRules: cluster-scoped resources, ClusterRole only (none with watchNamespaces).
dihera.controller.leaseRules: the Lease of leader election, by a Role in the release's namespace.
*/}}

{{- define "dihera.controller.namespacedRules" -}}
# The DIJobs it reconciles: watched (dihera/kube/watch/watches.py: Watches), read live when the watch
# may be behind (dihera/kube/jobs.py: JobStore.get), stamped by a synced hand edit and scaled down by
# failurePolicy DropReplica (dihera/kube/scale_executor.py: ScaleStore.get_job, ScaleStore.patch_job),
# annotated with the collectors a shrunk job grows back to (dihera/kube/queues.py: QueueStore.annotate_job),
# suspended for an Argo SUSPEND (dihera/kube/jobs.py: JobStore.suspend), deleted by ttlSecondsAfterFinished
# (dihera/kube/jobs.py: JobStore.delete); their status written once a pass (dihera/kube/jobs.py:
# JobStore.patch_status).
- apiGroups: [diengine.opendilab.org]
  resources: [dijobs]
  verbs: [get, list, watch, patch, delete]
- apiGroups: [diengine.opendilab.org]
  resources: [dijobs/status]
  verbs: [patch]
# ownerReferences with blockOwnerDeletion on a DIJob (checked by OwnerReferencesPermissionEnforcement when
# the job's objects are created; dihera/objects.py: owner_reference).
- apiGroups: [diengine.opendilab.org]
  resources: [dijobs/finalizers]
  verbs: [update]
# The Argo Workflow that runs each DIJob, and copies of it: watched (dihera/kube/watch/watches.py: Watches),
# read and listed live (dihera/kube/objects.py: ObjectStore.get_workflow, ObjectStore.list_workflows), created
# and created again on resume
# (dihera/kube/objects.py: ObjectStore.create), converged by scaling and watched until Argo finishes the
# retired replicas
# (dihera/kube/scale_executor.py: ScaleStore.get_workflow, ScaleStore.patch_workflow, ScaleStore.watch_workflow),
# stopped by cleanPodPolicy (dihera/kube/objects.py: ObjectStore.shutdown_workflow),
# deleted by spec.suspend and Kueue's eviction, a copy deleted (dihera/kube/objects.py: ObjectStore.delete_workflow).
- apiGroups: [argoproj.io]
  resources: [workflows]
  verbs: [get, list, watch, create, patch, delete]
# Pods of the job: watched for the status (dihera/kube/watch/watches.py: Watches), listed live
# (dihera/kube/objects.py: ObjectStore.list_pods), deleted by cleanPodPolicy and scale-down
# (dihera/kube/objects.py: ObjectStore.delete_pods).
- apiGroups: [""]
  resources: [pods]
  verbs: [list, watch, delete]
# The job's headless Service: watched, label-selected (dihera/kube/watch/watches.py: Watches), created and
# created again when deleted, read back when it already exists (dihera/kube/objects.py: ObjectStore.create,
# ObjectStore.get_service), put back when edited (dihera/kube/objects.py: ObjectStore.put_back).
- apiGroups: [""]
  resources: [services]
  verbs: [get, list, watch, create, update]
# The job's membership ConfigMap: watched, label-selected (dihera/kube/watch/watches.py: Watches); created
# and created again when deleted (dihera/kube/objects.py: ObjectStore.create); read live
# (dihera/kube/objects.py: ObjectStore.get_configmap); replaced with a resourceVersion when scaling
# (dihera/kube/scale_executor.py: ScaleStore.get_configmap, ScaleStore.replace_configmap) and when put
# back (dihera/kube/objects.py: ObjectStore.put_back).
- apiGroups: [""]
  resources: [configmaps]
  verbs: [get, list, watch, create, update]
# The job's checkpoint claim (spec.checkpoint, docs/checkpoints.md): created before its Workflow, "already
# exists" taken as the job's (dihera/kube/objects.py: ObjectStore.create); deleted with the DIJob by the
# garbage collector (ownerReferences), never by the controller.
- apiGroups: [""]
  resources: [persistentvolumeclaims]
  verbs: [create]
# Events about DIJobs (dihera/kube/events.py: EventRecorder.post).
- apiGroups: [""]
  resources: [events]
  verbs: [create]
{{- if .Values.kueue.enabled }}
# Kueue (kueue.enabled, docs/queueing.md): a queued DIJob's Workload, watched, label-selected
# (dihera/kube/watch/watches.py: Watches), read, created, its podSets resized when it is requeued, and its
# scale-ups' slices listed, created, deleted when refused or no longer needed (dihera/kube/workloads.py:
# WorkloadStore.get, WorkloadStore.create, WorkloadStore.patch, WorkloadStore.list, WorkloadStore.delete).
- apiGroups: [kueue.x-k8s.io]
  resources: [workloads]
  verbs: [get, list, watch, create, patch, delete]
# Released when evicted, Finished when the job ended, reclaimable pods after a scale-down
# (dihera/kube/workloads.py: WorkloadStore.patch_status).
- apiGroups: [kueue.x-k8s.io]
  resources: [workloads/status]
  verbs: [patch]
# Shrink before eviction: the ClusterQueue a queued job's LocalQueue feeds (dihera/kube/queues.py:
# QueueStore.local_queue).
- apiGroups: [kueue.x-k8s.io]
  resources: [localqueues]
  verbs: [get]
{{- end }}
{{- end }}

{{- define "dihera.controller.clusterRules" -}}
{{- if .Values.kueue.enabled }}
# Kueue: the node labels and tolerations of an admission's flavors; the value of a job's priority class
# (dihera/kube/workloads.py: WorkloadStore.resource_flavor, WorkloadStore.priority_value).
- apiGroups: [kueue.x-k8s.io]
  resources: [resourceflavors, workloadpriorityclasses]
  verbs: [get]
# Shrink before eviction: a ClusterQueue's quota and what is reserved of it (dihera/kube/queues.py:
# QueueStore.cluster_queue).
- apiGroups: [kueue.x-k8s.io]
  resources: [clusterqueues]
  verbs: [get]
{{- end }}
{{- end }}

{{- define "dihera.controller.leaseRules" -}}
# Leader election: the Lease the replicas share, read, created by the first, renewed and taken over by
# replacing it with its resourceVersion (dihera/kube/lease.py: LeaderElector).
- apiGroups: [coordination.k8s.io]
  resources: [leases]
  verbs: [get, create, update]
{{- end }}
