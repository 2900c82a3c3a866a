"""A DIJob's results kept in the local control plane's object store (docs/artifacts.md), on the real node.

The job's learner writes a file and a directory into its working directory (an emptyDir) and ends; its
``spec.artifacts`` name both and a path it never writes. Argo's executor stores what exists in the
artifact repository (SeaweedFS's S3 gateway, ci/devcluster/objectstore.py) and archives the pod's logs
there. After the job Succeeded and cleanPodPolicy deleted its pod:

- ``status.artifacts`` lists the two stored (not the missing one), with their Argo node;
- argo server (the Argo UI's download) serves each; ``dihera outputs --download`` unpacks them and the
  bytes are the learner's;
- the learner's log is read back from the archive, its pod gone;
- in the Argo UI (a real browser), the learner's node lists the artifacts and its policy downloads;
- the Workflow Succeeded: the pod was deleted only once it had stored its outputs and ended.

Meanwhile a DIJob of the same name runs in a second namespace (issue 57: artifact keys must never collide).
Both namespaces' artifact repository uses Argo's default key format, ``{{workflow.name}}/{{pod.name}}``,
under which the two jobs' objects would have the same keys (a DIJob's Workflow and its pods are named after
the job): each job's objects are in the bucket (listed from the store) at keys naming its namespace and uid,
none shared, and each holds that job's own bytes. The second namespace archives no logs: an archived log's
key comes from the repository's key format alone (docs/artifacts.md), which dihera cannot set.
"""

from __future__ import annotations

import io
import secrets
import signal
import tarfile
import time
from pathlib import Path
from typing import Any, cast
from urllib.parse import quote

import httpx
import pytest
from kubernetes import client

from ci.devcluster import Cluster, Settings
from ci.devcluster.images import PYTHON_IMAGE
from dihera.cli import main as dihera
from dihera.kube.jobs import JobStore
from tests.integration.argo_ui import browser_page, click_graph_node, screenshot, wait_for
from tests.integration.artifact_store import REPOSITORIES, default_format_repository, stored_keys
from tests.integration.conftest import Poll, fresh_namespace
from tests.integration.controllers import Controller
from tests.integration.jobs import job_pods, manifest, phase_is
from tests.integration.realjobs import ON_REAL_NODE, executor_account

pytestmark = [pytest.mark.cluster, pytest.mark.realnode]

NAME = "kept"
ARTIFACTS = [
    {"name": "policy", "path": "/work/exp/policy.bin"},
    {"name": "experiment", "path": "/work/exp"},
    {"name": "never-written", "path": "/work/none"},
]
#: The learner's script: a policy file, a directory of two files, a log line naming the run's secret.
SCRIPT = (
    'mkdir -p /work/exp/tb && printf "%s" "$SECRET" > /work/exp/policy.bin '
    '&& echo "events $SECRET" > /work/exp/tb/events.1 && echo "config" > /work/exp/config.py '
    '&& echo "dihera-artifacts-test $SECRET"'
)


def learner(account: str, secret: str) -> dict[str, Any]:
    main = {
        "name": "di-container",
        "image": PYTHON_IMAGE,
        "imagePullPolicy": "Never",
        "command": ["sh", "-c", SCRIPT],
        "env": [{"name": "SECRET", "value": secret}],
        "volumeMounts": [{"name": "work", "mountPath": "/work"}],
        "securityContext": {"runAsUser": 65532, "runAsGroup": 65532, "runAsNonRoot": True},
    }
    spec = {
        "containers": [main],
        "volumes": [{"name": "work", "emptyDir": {}}],
        "serviceAccountName": account,
        "terminationGracePeriodSeconds": 1,
        **ON_REAL_NODE,
    }
    return {"type": "learner", "replicas": 1, "template": {"spec": spec}}


def _argo_url() -> str:
    url = Cluster(Settings.from_environ()).argo_ui_url()
    assert url, "the local control plane's default pair runs argo server"
    return url


def _unpacked(body: bytes) -> dict[str, bytes]:
    with tarfile.open(fileobj=io.BytesIO(body), mode="r:gz") as archive:
        return {m.name: archive.extractfile(m).read() for m in archive.getmembers() if m.isfile()}  # type: ignore[union-attr]


def _download_in_the_argo_ui(url: str, namespace: str, workflow: str, node: str, shots: Path) -> bytes:
    """The learner's node in the Argo UI, its INPUTS/OUTPUTS tab, the policy's download link clicked: the bytes."""
    with browser_page() as page:
        page.goto(f"{url}/workflows/{namespace}/{workflow}?nodeId={node}")
        wait_for(page, lambda: click_graph_node(page, node) or None, "the learner's node in the graph")
        page.get_by_text("INPUTS/OUTPUTS", exact=True).first.click()
        link = page.locator("a[href*='/outputs/policy']").first
        wait_for(page, lambda: link.is_visible() or None, "the policy artifact's download link")
        screenshot(page, shots, "artifacts-node-outputs")
        with page.expect_download() as info:
            link.click()
        return Path(info.value.path()).read_bytes()


def _listed(jobs: JobStore, namespace: str, poll: Poll) -> list[dict[str, str]]:
    """The job's ``status.artifacts`` once it lists the two the learner stored."""

    def listed() -> list[dict[str, str]] | None:
        stored = ((jobs.get(namespace, NAME) or {}).get("status") or {}).get("artifacts") or []
        return stored if len(stored) >= 2 else None

    stored: list[dict[str, str]] = poll(listed, 60, f"{namespace}/{NAME}'s status.artifacts lists what it stored")
    assert [(a["replica"], a["name"]) for a in stored] == [("learner-0", "experiment"), ("learner-0", "policy")]
    return stored


def _keys_are_the_jobs_own(
    cluster: client.ApiClient, jobs: JobStore, stored: dict[str, list[dict[str, str]]]
) -> dict[str, set[str]]:
    """Each namespace's Workflow used its namespace's repository (Argo's default key format); each job's keys
    name its namespace, the job and its uid, no key is the other's, and the bucket holds exactly those objects
    under the job's prefix (listed from the store)."""
    keys = {}
    for namespace, entries in stored.items():
        wf = cast(
            dict[str, Any],
            client.CustomObjectsApi(cluster).get_namespaced_custom_object(
                "argoproj.io", "v1alpha1", namespace, "workflows", NAME
            ),
        )
        ref = wf["status"]["artifactRepositoryRef"]
        assert (ref.get("configMap"), ref.get("namespace")) == (REPOSITORIES, namespace), ref
        assert "keyFormat" not in ref["artifactRepository"]["s3"], ref  # Argo's default: {{workflow.name}}/{{pod.name}}
        uid = (jobs.get(namespace, NAME) or {})["metadata"]["uid"]
        prefix = f"dihera/{namespace}/{NAME}/{uid}/"
        keys[namespace] = {a["key"] for a in entries}
        assert all(k.startswith(prefix) for k in keys[namespace]), (prefix, entries)
        assert stored_keys(prefix) == keys[namespace], (prefix, sorted(stored_keys(prefix)))
    first, second = keys.values()
    assert first.isdisjoint(second), keys
    return keys


def test_a_jobs_artifacts_and_logs_are_kept_in_the_object_store_and_downloaded(
    controller: Controller,
    controller_kubeconfig: Path,
    cluster: client.ApiClient,
    namespace: str,
    poll: Poll,
    kubeconfig: Path,
    tmp_path: Path,
) -> None:
    with fresh_namespace(cluster) as other:
        second = Controller(controller_kubeconfig, other, tmp_path / "controller-other.log")
        second.start()
        try:
            _kept_in_two_namespaces(cluster, namespace, other, poll, kubeconfig, tmp_path)
        finally:
            second.kill(signal.SIGTERM)
            print(second.logs()[-3000:])  # shown by pytest when the test failed


def _kept_in_two_namespaces(
    cluster: client.ApiClient, namespace: str, other: str, poll: Poll, kubeconfig: Path, tmp_path: Path
) -> None:
    jobs, secret, other_secret = JobStore(cluster), secrets.token_hex(8), secrets.token_hex(8)
    default_format_repository(cluster, namespace, archive_logs=True)
    default_format_repository(cluster, other, archive_logs=False)
    tasks = {
        namespace: learner(executor_account(cluster, namespace), secret),
        other: learner(executor_account(cluster, other), other_secret),
    }
    started = time.monotonic()
    for ns, task in tasks.items():  # both at once: same name, same pod names, Argo's default key format
        jobs.create(manifest(NAME, ns, task, cleanPodPolicy="All", artifacts=ARTIFACTS))
    for ns in tasks:
        poll(phase_is(jobs, ns, NAME, "Succeeded"), 180, f"{ns}/{NAME} Succeeded")
    succeeded = time.monotonic() - started

    stored = _listed(jobs, namespace, poll)
    theirs = _listed(jobs, other, poll)
    keys = _keys_are_the_jobs_own(cluster, jobs, {namespace: stored, other: theirs})
    workflow = (jobs.get(namespace, NAME) or {})["status"]["workflowName"]
    poll(lambda: not job_pods(cluster, namespace, NAME) or None, 90, "the pod deleted (cleanPodPolicy All)")
    # deleted once it had ended: its node Succeeded, not failed by a deletion while it stored its outputs
    argo = client.CustomObjectsApi(cluster)

    def workflow_ended() -> dict[str, Any] | None:
        found = argo.get_namespaced_custom_object("argoproj.io", "v1alpha1", namespace, "workflows", workflow)
        wf = cast(dict[str, Any], found)
        return wf["status"] if wf.get("status", {}).get("phase") in ("Succeeded", "Failed", "Error") else None

    ended = poll(workflow_ended, 60, f"Workflow {workflow} ended")
    assert ended["phase"] == "Succeeded", ended.get("message")

    url, node = _argo_url(), stored[0]["node"]
    with httpx.Client(base_url=url, timeout=30) as http:
        got = {}
        for name in ("policy", "experiment"):
            resp = http.get(f"/artifacts/{namespace}/{workflow}/{quote(node)}/{name}")
            assert resp.status_code == 200, (name, resp.status_code, resp.text[:300])
            got[name] = _unpacked(resp.content)
        logs = http.get(f"/artifact-files/{namespace}/workflows/{workflow}/{quote(node)}/outputs/di-container-logs")
        resp = http.get(f"/artifacts/{other}/{workflow}/{quote(theirs[0]['node'])}/policy")
        assert resp.status_code == 200, (resp.status_code, resp.text[:300])
        assert _unpacked(resp.content) == {"policy.bin": other_secret.encode()}  # its own, not overwritten
    assert got["policy"] == {"policy.bin": secret.encode()}, got["policy"]
    assert got["experiment"]["exp/policy.bin"] == secret.encode(), sorted(got["experiment"])
    assert set(got["experiment"]) == {"exp/policy.bin", "exp/tb/events.1", "exp/config.py"}, sorted(got["experiment"])
    assert logs.status_code == 200 and f"dihera-artifacts-test {secret}" in logs.text, (logs.status_code, logs.text)

    policy = _download_in_the_argo_ui(
        url, namespace, workflow, node, Cluster(Settings.from_environ()).state.screenshots
    )
    assert _unpacked(policy) == {"policy.bin": secret.encode()}

    out = tmp_path / "outputs"
    argv = ["outputs", f"{namespace}/{NAME}", "--kubeconfig", str(kubeconfig), "--argo-server", url, "--download"]
    assert dihera([*argv, str(out)]) == 0
    assert (out / "learner-0" / "policy" / "policy.bin").read_bytes() == secret.encode()
    assert (out / "learner-0" / "experiment" / "exp" / "tb" / "events.1").read_text() == f"events {secret}\n"
    print(
        f"\n[artifacts] real node: Succeeded {succeeded:.1f} s after create; {len(stored)} artifacts listed, "
        f"downloaded through argo server and `dihera outputs`; the log read from the archive, its pod deleted; "
        f"a same-named job in {other}: {len(keys[other])} objects at keys of its own ({sorted(keys[other])[0]})"
    )
