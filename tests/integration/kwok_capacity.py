"""More kwok capacity for a large job, added to a running local control plane and removed after.

The dev cluster starts with 4 kwok nodes of 110 pods (440 in all: enough for every other test, and
a cluster-up as fast as before). A test or benchmark that needs more adds nodes of its own, which
kwok takes up while it runs, and deletes them at its end (pods left on them are garbage-collected).
"""

from __future__ import annotations

import math
import time
from collections.abc import Iterator
from contextlib import contextmanager

from kubernetes import client
from kubernetes.client.rest import ApiException

from ci.devcluster.manifests import nodes

__all__ = ["BIG_NODE_PODS", "FIRST_BIG_NODE", "kwok_capacity"]

#: Pods per added node, and the first added node's number (kwok-node-100, ...): clear of the 4 nodes
#: every cluster has.
BIG_NODE_PODS = 1000
FIRST_BIG_NODE = 100


def _ready(core: client.CoreV1Api, name: str) -> bool:
    try:
        node = core.read_node(name)
    except ApiException as err:
        if err.status == 404:
            return False
        raise
    conditions = (node.status.conditions if node.status else None) or []
    return any(c.type == "Ready" and c.status == "True" for c in conditions)


@contextmanager
def kwok_capacity(api: client.ApiClient, pods: int, timeout: float = 60) -> Iterator[list[str]]:
    """Room for ``pods`` more pods: ceil(pods / 1000) kwok nodes, Ready before this yields their names."""
    core = client.CoreV1Api(api)
    added = nodes(math.ceil(pods / BIG_NODE_PODS), first=FIRST_BIG_NODE, pods=BIG_NODE_PODS)
    names = [n["metadata"]["name"] for n in added]
    try:
        for node in added:
            try:
                core.create_node(node)
            except ApiException as err:
                if err.status != 409:  # left by an interrupted run: kwok manages it all the same
                    raise
        deadline = time.monotonic() + timeout
        while not all(_ready(core, n) for n in names):
            if time.monotonic() > deadline:
                raise TimeoutError(f"kwok nodes {', '.join(names)} not Ready after {timeout:.0f}s")
            time.sleep(0.5)
        yield names
    finally:
        for name in names:
            try:
                core.delete_node(name)
            except ApiException as err:
                if err.status != 404:
                    raise
