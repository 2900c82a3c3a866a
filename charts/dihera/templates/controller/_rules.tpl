{{/*
THE controller's permissions: the one place to amend them. No wildcards; only what the controller uses.

dihera.controller.namespacedRules: namespaced resources. Granted cluster-wide (ClusterRole) by default,
or by a Role in each of .Values.watchNamespaces.
dihera.controller.clusterRules: cluster-scoped resources, ClusterRole only. With watchNamespaces there is
no ClusterRole: kopf then logs that it cannot watch CRDs or namespaces and uses the listed namespaces as given.
*/}}

{{- define "dihera.controller.namespacedRules" -}}
# The DIJobs it reconciles (kopf patches finalizers and its own annotations; status is the job's state).
- apiGroups: [diengine.opendilab.org]
  resources: [dijobs]
  verbs: [get, list, watch, patch, update]
- apiGroups: [diengine.opendilab.org]
  resources: [dijobs/status]
  verbs: [get, patch, update]
- apiGroups: [diengine.opendilab.org]
  resources: [dijobs/finalizers]
  verbs: [update]
# The Argo Workflow that runs each DIJob.
- apiGroups: [argoproj.io]
  resources: [workflows]
  verbs: [get, list, watch, create, patch, update, delete]
# Pods of the job (status, cleanPodPolicy, stop without a kubelet).
- apiGroups: [""]
  resources: [pods]
  verbs: [get, list, watch, delete]
# The job's headless Service and its membership ConfigMap.
- apiGroups: [""]
  resources: [services, configmaps]
  verbs: [get, list, watch, create, patch, update, delete]
# Events about DIJobs (kopf posts per-object logs as events).
- apiGroups: ["", events.k8s.io]
  resources: [events]
  verbs: [create, patch]
# kopf peering in namespaced mode.
- apiGroups: [kopf.dev]
  resources: [kopfpeerings]
  verbs: [get, list, watch, patch]
{{- end }}

{{- define "dihera.controller.clusterRules" -}}
# kopf peering in cluster-wide mode.
- apiGroups: [kopf.dev]
  resources: [clusterkopfpeerings]
  verbs: [get, list, watch, patch]
# kopf scans the served resources and the namespaces.
- apiGroups: [apiextensions.k8s.io]
  resources: [customresourcedefinitions]
  verbs: [get, list, watch]
- apiGroups: [""]
  resources: [namespaces]
  verbs: [get, list, watch]
{{- end }}
