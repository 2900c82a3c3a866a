"""Watch events the API server sent, by resource: how many and how many bytes (all watchers together).

Read from kube-apiserver's own metrics (``apiserver_watch_events_total`` and the ``_sum`` of
``apiserver_watch_events_sizes``), so the difference between a run through the controller and the same
run created directly is what the controller's watches added (every watcher of a resource gets every
event of it: Argo's, the scheduler's, kwok's, the controller's). :func:`watch_events` answers {} where
the metrics cannot be read.
"""

from __future__ import annotations

import re
from typing import Any

from kubernetes.client.exceptions import ApiException
from urllib3.exceptions import HTTPError

__all__ = ["RESOURCES", "sent", "watch_events"]

#: The resources a DIJob's run makes watch traffic for.
RESOURCES = ("pods", "workflows", "dijobs", "configmaps", "events")
_SAMPLE = re.compile(r"^(apiserver_watch_events_total|apiserver_watch_events_sizes_sum)\{([^}]*)\} (\S+)$")


def watch_events(api: Any) -> dict[str, tuple[float, float]]:
    """Resource → (events, bytes) sent since the API server started."""
    try:
        token = api.configuration.api_key.get("authorization") or api.configuration.api_key.get("BearerToken")
        headers = {"Authorization": token} if token else {}
        response = api.call_api("GET", f"{api.configuration.host}/metrics", header_params=headers)
        response.read()
        text = response.data.decode()
    except (ApiException, HTTPError, OSError):  # a cluster whose metrics we may not read: no figure
        return {}
    out: dict[str, list[float]] = {}
    for line in text.splitlines():
        match = _SAMPLE.match(line)
        if not match:
            continue
        labels = dict(re.findall(r'(\w+)="([^"]*)"', match.group(2)))
        resource = labels.get("resource") or labels.get("kind", "").lower() + "s"
        counts = out.setdefault(resource, [0.0, 0.0])
        counts[0 if match.group(1).endswith("_total") else 1] += float(match.group(3))
    return {k: (v[0], v[1]) for k, v in out.items()}


def sent(before: dict[str, tuple[float, float]], after: dict[str, tuple[float, float]]) -> str:
    """``"pods 3520 (41.2 MB), workflows ..."`` for :data:`RESOURCES` between two readings."""
    parts = []
    for resource in RESOURCES:
        if resource in after:
            events = after[resource][0] - before.get(resource, (0.0, 0.0))[0]
            size = after[resource][1] - before.get(resource, (0.0, 0.0))[1]
            parts.append(f"{resource} {events:.0f} ({size / 1e6:.1f} MB)")
    return ", ".join(parts) if parts else "not readable"
