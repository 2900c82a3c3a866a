"""Scaling a queued job under its quota (pure): what a scale-up asks Kueue for, what a scale-down gives back.

A scale-up's added replicas are one more Workload, a *slice* (``dijob-<job>-g<generation>``, podSets of
the added counts only), that Kueue must admit before the new membership is committed; a scale-down
deletes the slices it no longer needs (newest first) and gives the rest of the excess back through the
job's Workload's ``status.reclaimablePods`` (Kueue frees that quota; the count never decreases while the
quota is reserved). When the job is requeued (evicted), its Workload is resized to the membership and
the slices deleted, so one Workload asks for the whole job again (docs/queueing.md).
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass

from dihera.shapes.workload import as_workload

__all__ = ["Release", "added_replicas", "plan_release", "pod_set_counts", "resize_ops"]


def added_replicas(before: Mapping[str, int], after: Mapping[str, int]) -> dict[str, int]:
    """Task → replicas a scale from ``before`` to ``after`` adds (tasks that do not grow are left out)."""
    return {t: n - before.get(t, 0) for t, n in after.items() if n > before.get(t, 0)}


def pod_set_counts(workload: Mapping[str, object]) -> dict[str, int]:
    """PodSet → count a Workload asks for, less what its status says is reclaimable."""
    reclaimable = {
        str(r.get("name")): int(r.get("count") or 0)
        for r in (as_workload(workload).get("status") or {}).get("reclaimablePods") or []
    }
    out: dict[str, int] = {}
    for p in (as_workload(workload).get("spec") or {}).get("podSets") or []:
        name = str(p.get("name"))
        out[name] = max(int(p.get("count") or 0) - reclaimable.get(name, 0), 0)
    return out


def _reclaimable(workload: Mapping[str, object]) -> dict[str, int]:
    entries = (as_workload(workload).get("status") or {}).get("reclaimablePods") or []
    return {str(r.get("name")): int(r.get("count") or 0) for r in entries}


@dataclass(frozen=True)
class Release:
    """What a scale-down gives back: slices to delete, and the base Workload's new ``reclaimablePods``
    (podSet → count; None: unchanged)."""

    delete: tuple[str, ...]
    reclaimable: Mapping[str, int] | None


def _covers(capacity: Mapping[str, int], needed: Mapping[str, int]) -> bool:
    return all(capacity.get(t, 0) >= n for t, n in needed.items())


def _capacity(base: Mapping[str, object], slices: Sequence[Mapping[str, object]]) -> dict[str, int]:
    """Task → replicas the base Workload and its slices hold quota for."""
    capacity = dict(pod_set_counts(base))
    for s in slices:
        for t, n in pod_set_counts(s).items():
            capacity[t] = capacity.get(t, 0) + n
    return capacity


def _unneeded_slices(
    capacity: dict[str, int], slices: Sequence[Mapping[str, object]], needed: Mapping[str, int]
) -> tuple[list[str], dict[str, int]]:
    """The slices (oldest first) whose quota ``needed`` can do without, newest first, and the capacity
    left once they are deleted."""
    delete: list[str] = []
    for s in reversed(slices):
        without = {t: capacity.get(t, 0) - pod_set_counts(s).get(t, 0) for t in capacity}
        if _covers(without, needed):
            delete.append(str(as_workload(s)["metadata"]["name"]))
            capacity = without
    return delete, capacity


def _excess(capacity: Mapping[str, int], needed: Mapping[str, int]) -> dict[str, int]:
    """Task → replicas ``capacity`` holds beyond ``needed`` (tasks with none are left out)."""
    return {t: capacity.get(t, 0) - needed.get(t, 0) for t in capacity if capacity.get(t, 0) > needed.get(t, 0)}


def _reclaim(base: Mapping[str, object], excess: Mapping[str, int]) -> dict[str, int] | None:
    """The base Workload's ``reclaimablePods`` grown by ``excess`` (at most each podSet's count); None
    when that changes nothing."""
    pod_sets = (as_workload(base).get("spec") or {}).get("podSets") or []
    spec_counts = {str(p.get("name")): int(p.get("count") or 0) for p in pod_sets}
    old = _reclaimable(base)
    reclaim = dict(old)
    for t, n in excess.items():
        if t in spec_counts:
            reclaim[t] = min(old.get(t, 0) + n, spec_counts[t])
    return reclaim if reclaim != old else None


def plan_release(
    base: Mapping[str, object], slices: Sequence[Mapping[str, object]], needed: Mapping[str, int]
) -> Release:
    """After a scale-down to ``needed`` (task → replicas): the slices (oldest first) no longer needed, newest
    first, and the base's reclaimable pods for what is still in excess."""
    delete, capacity = _unneeded_slices(_capacity(base, slices), slices, needed)
    excess = _excess(capacity, needed)
    if not excess:
        return Release(tuple(delete), None)
    return Release(tuple(delete), _reclaim(base, excess))


def resize_ops(base: Mapping[str, object], needed: Mapping[str, int]) -> list[dict[str, object]]:
    """JSON patch giving the base Workload's podSets the membership's counts ([]: already so), each guarded
    by a test of the podSet's name. Only while it reserves no quota (Kueue refuses podSet changes then):
    when the job is requeued after an eviction."""
    ops: list[dict[str, object]] = []
    for i, p in enumerate((as_workload(base).get("spec") or {}).get("podSets") or []):
        want = needed.get(str(p.get("name")))
        if want is not None and want > 0 and want != p.get("count"):
            ops.append({"op": "test", "path": f"/spec/podSets/{i}/name", "value": p.get("name")})
            ops.append({"op": "replace", "path": f"/spec/podSets/{i}/count", "value": want})
    return ops
