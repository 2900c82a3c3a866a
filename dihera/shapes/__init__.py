"""Typed views of the objects dihera reads: TypedDicts of their raw shapes (as the API server sends them)
with small view helpers, declared once. The watch layer keeps exactly the fields they declare, so a field a
decision reads but the cache drops is a type error, not a silent ``None``.

- ``meta``: the metadata every object shares (``ObjectMeta``, ``OwnerReference``)
- ``dijob``: the DIJob, its spec (tasks) and its status (conditions, replicas, progress, outputs)
- ``workload``: the Kueue Workload (podSets; conditions, admission, reclaimable pods)
- ``json_types``: free JSON without ``Any`` (a pod template's inside, Hera's output)
"""
