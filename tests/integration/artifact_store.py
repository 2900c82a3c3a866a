"""The real node's object store seen from the tests (helpers, not tests): a namespace's own artifact repository
with Argo's default key format, and the keys the bucket holds under a prefix.

The local control plane's Argo ConfigMap sets a namespaced ``keyFormat`` (ci/devcluster/objectstore.py); a
namespace's ``artifact-repositories`` ConfigMap (Argo's per-namespace default) overrides it for the Workflows
there, so a test can run jobs under Argo's default format, ``{{workflow.name}}/{{pod.name}}``, the one that
names neither the namespace nor anything unique to the job. The keys are listed from the store itself
(SeaweedFS's filer on its loopback port: a bucket is the filer directory ``/buckets/<bucket>``, a key's
slashes its subdirectories), not from what Argo recorded.
"""

from __future__ import annotations

from typing import Any

import httpx
import yaml
from kubernetes import client

from ci.devcluster import Cluster, Settings, objectstore

__all__ = ["REPOSITORIES", "default_format_repository", "stored_keys"]

#: Argo's name for a namespace's artifact repositories (and its annotation naming the default one).
REPOSITORIES = "artifact-repositories"
DEFAULT_REPOSITORY = "workflows.argoproj.io/default-artifact-repository"
#: os.ModeDir in a filer entry's Mode (Go's fs.FileMode)
MODE_DIR = 1 << 31
#: entries per page of a filer listing
PAGE = 1000


def default_format_repository(cluster: client.ApiClient, namespace: str, archive_logs: bool) -> dict[str, Any]:
    """Make ``namespace``'s default artifact repository the local store with Argo's default key format (no
    ``keyFormat``); ``archive_logs``: Argo archives every pod's logs there too. Returns the repository."""
    repository = {
        "archiveLogs": archive_logs,
        "s3": {
            "bucket": objectstore.BUCKET,
            "endpoint": objectstore.ENDPOINT,
            "insecure": True,
            "region": objectstore.REGION,
            "useSDKCreds": True,  # the executors' and argo server's environment (ci/devcluster/objectstore.py)
        },
    }
    body = client.V1ConfigMap(
        metadata=client.V1ObjectMeta(name=REPOSITORIES, annotations={DEFAULT_REPOSITORY: "default"}),
        data={"default": yaml.safe_dump(repository, sort_keys=True)},
    )
    client.CoreV1Api(cluster).create_namespaced_config_map(namespace, body)
    return repository


def _filer() -> str:
    ports = Cluster(Settings.from_environ()).state.load_ports()
    assert ports and "store-filer" in ports, "the local control plane runs the real node's object store"
    return f"http://127.0.0.1:{ports['store-filer']}"


def _entries(http: httpx.Client, directory: str) -> list[dict[str, Any]]:
    """Every entry of one filer directory (its listing comes a page at a time)."""
    entries: list[dict[str, Any]] = []
    last = ""
    while True:
        resp = http.get(f"{directory}/", params={"limit": PAGE, "lastFileName": last})
        if resp.status_code == 404:
            return entries
        assert resp.status_code == 200, (directory, resp.status_code, resp.text[:300])
        page = resp.json()
        entries += page.get("Entries") or []
        if not page.get("ShouldDisplayLoadMore") or not page.get("LastFileName"):
            return entries
        last = page["LastFileName"]


def stored_keys(prefix: str) -> set[str]:
    """The keys of every object the bucket holds under the directory ``prefix`` (no leading slash)."""
    root = f"/buckets/{objectstore.BUCKET}"
    keys, todo = set(), [f"{root}/{prefix.strip('/')}"]
    with httpx.Client(base_url=_filer(), headers={"Accept": "application/json"}, timeout=30) as http:
        while todo:
            for entry in _entries(http, todo.pop()):
                path = str(entry["FullPath"])
                if int(entry.get("Mode") or 0) & MODE_DIR:
                    todo.append(path)
                else:
                    keys.add(path.removeprefix(f"{root}/"))
    return keys
