"""Typed views of the objects dihera reads: TypedDicts of their raw shapes (as the API server sends them)
with small view helpers, declared once. The watch layer keeps exactly the fields they declare, so a field a
decision reads but the cache drops is a type error, not a silent ``None`` (indexed: no such key; got with
``.get``: an ``object``, not the str or number it would be read as).

- ``meta``: the metadata every object shares (``ObjectMeta``, ``OwnerReference``)
- ``pod``: a pod (``Pod``: phase, conditions, container states, each container's memory limit)
- ``workflow``: an Argo Workflow (``Workflow``, its nodes' ``NodeStatus``, the entry DAG's tasks)
- ``configmap``: a ConfigMap (``ConfigMap``: the membership ConfigMap's metadata and data)
- ``service``: a job's headless Service, as the watch cache keeps it
- ``dijob``: the DIJob, its spec (tasks) and its status (conditions, replicas, progress, outputs)
- ``workload``: the Kueue Workload (podSets; conditions, admission, reclaimable pods; ``Workload``: what the
  watch cache keeps of it)
- ``training``: ``status.training``, the RL figures the replicas report (``TrainingStatus``)
- ``json_types``: free JSON without ``Any`` (a pod template's inside, Hera's output)
"""
