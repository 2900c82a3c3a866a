"""An Idempotency-Key holds across di-server replicas: the keys live on the DIJob, not in a process.

Two di-servers run in-process (uvicorn on two loopback ports) as the chart's server ServiceAccount,
as in test_server_scaling.py; the same request with the same key sent to each scales once. Then the
fault the key is for: a di-server (a `dihera server` process) SIGKILLed after it scaled the job, before
its answer reached `dihera scale --server`; the CLI sends the request again with its key, another
replica answers it from the DIJob's records, and the job is scaled once.
"""

from __future__ import annotations

import json
import os
import signal
import subprocess
import time
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path
from typing import Any

import httpx
import pytest
from kubernetes import client

from dihera.constants import ANNOTATION_IDEMPOTENCY
from dihera.schema import GROUP, PLURAL, VERSION
from dihera.server import ServerSettings
from tests.integration.conftest import Poll
from tests.integration.controllers import DIHERA, free_port
from tests.integration.proxies import answer_losing_proxy
from tests.integration.servers import membership, running_server, sa_token, spec_replicas, start_job

pytestmark = pytest.mark.cluster


def add_one(url: str, token: str, namespace: str, name: str, key: str) -> dict[str, Any]:
    resp = httpx.post(
        f"{url}/v2alpha1/job/{namespace}.{name}/replicas",
        json={"replicas": 1},
        headers={"Authorization": f"Bearer {token}", "Idempotency-Key": key},
        timeout=60,
    )
    assert resp.status_code == 200, resp.text
    body: dict[str, Any] = resp.json()
    return body


def test_the_same_key_sent_to_two_servers_scales_once(
    dijob_crd: None,
    cluster: client.ApiClient,
    namespace: str,
    server_kubeconfig: Path,
) -> None:
    name = "twice"
    start_job(cluster, namespace, name, collectors=1, maxReplicas=8)
    token = sa_token(cluster, namespace, "caller", ["get", "patch"])
    settings = ServerSettings(namespaces=(namespace,), auth_cache_seconds=0.0)
    with running_server(settings, server_kubeconfig) as one, running_server(settings, server_kubeconfig) as two:
        assert one != two
        first = add_one(one, token, namespace, name, "retry-1")
        again = add_one(two, token, namespace, name, "retry-1")
        assert again == first and first["data"]["changed"] is True
        assert membership(cluster, namespace, name)[0].generation == 2
        assert spec_replicas(cluster, namespace, name)["collector"] == 2

        # the same key on both at once: one claims it, the other waits for its answer
        with ThreadPoolExecutor(2) as pool:
            answers = list(pool.map(lambda url: add_one(url, token, namespace, name, "race-1"), [one, two]))
        assert answers[0] == answers[1]
        assert membership(cluster, namespace, name)[0].generation == 3
        assert spec_replicas(cluster, namespace, name)["collector"] == 3

        # a new key scales again
        add_one(two, token, namespace, name, "retry-2")
        assert spec_replicas(cluster, namespace, name)["collector"] == 4
    body: Any = client.CustomObjectsApi(cluster).get_namespaced_custom_object(GROUP, VERSION, namespace, PLURAL, name)
    keys = json.loads(body["metadata"]["annotations"][ANNOTATION_IDEMPOTENCY])
    assert sorted(keys) == ["race-1", "retry-1", "retry-2"] and all(k["status"] == 200 for k in keys.values())


def ready(url: str) -> bool:
    try:
        return httpx.get(f"{url}/readyz", timeout=2).status_code == 200
    except httpx.TransportError:
        return False


def test_an_answer_lost_with_its_server_is_asked_again_by_the_cli_and_the_job_scales_once(
    dijob_crd: None,
    cluster: client.ApiClient,
    namespace: str,
    server_kubeconfig: Path,
    tmp_path: Path,
    poll: Poll,
) -> None:
    name = "lost"
    start_job(cluster, namespace, name, collectors=1, maxReplicas=8)
    token = sa_token(cluster, namespace, "caller", ["get", "patch"])
    settings = ServerSettings(namespaces=(namespace,), auth_cache_seconds=0.0)
    port, log = free_port(), tmp_path / "doomed.log"
    # plain HTTP, asked for: the proxy in between reads the request to lose its answer
    argv = [DIHERA, "server", "--plain-http", "--kubeconfig", str(server_kubeconfig), "--port", str(port),
            "-n", namespace]  # fmt: skip
    env = {k: v for k, v in os.environ.items() if not k.startswith("DIHERA_")}
    with log.open("wb") as out:
        doomed = subprocess.Popen(argv, stdout=out, stderr=subprocess.STDOUT, env=env)
    try:
        poll(lambda: ready(f"http://127.0.0.1:{port}"), 60, "the doomed di-server to be ready")
        with running_server(settings, server_kubeconfig) as other:
            other_port = int(other.rsplit(":", 1)[1])
            with answer_losing_proxy(port, other_port, die=lambda: doomed.send_signal(signal.SIGKILL)) as (url, routed):
                t = time.monotonic()
                cli = subprocess.run(
                    [DIHERA, "scale", f"{namespace}/{name}", "--task", "collector", "--add", "1",
                     "--server", url, "--token", token, "--retry-seconds", "30"],
                    capture_output=True, text=True, timeout=120, env=env,
                )  # fmt: skip
                took = time.monotonic() - t
    finally:
        doomed.kill()
        doomed.wait(10)
    print(f"the CLI's scale through a lost answer: {took:.2f}s; its stderr: {cli.stderr.strip()}")
    assert cli.returncode == 0, (cli.stdout, cli.stderr, log.read_text(errors="replace")[-2000:])
    assert doomed.returncode == -signal.SIGKILL and routed == [port, other_port], (doomed.returncode, routed)
    assert "RemoteProtocolError" in cli.stderr and "sending it again" in cli.stderr, cli.stderr
    answer = json.loads(cli.stdout)
    assert answer["changed"] is True, answer  # the first answer, kept on the DIJob, not a second scaling
    # scaled once: one membership change, one replica more, one key recorded (the CLI's, answered 200)
    assert membership(cluster, namespace, name)[0].generation == 2
    assert spec_replicas(cluster, namespace, name)["collector"] == 2
    body: Any = client.CustomObjectsApi(cluster).get_namespaced_custom_object(GROUP, VERSION, namespace, PLURAL, name)
    keys = json.loads(body["metadata"]["annotations"][ANNOTATION_IDEMPOTENCY])
    assert len(keys) == 1 and next(iter(keys)).startswith("dihera-cli-"), keys
    assert next(iter(keys.values()))["status"] == 200, keys
    assert next(iter(keys)) in cli.stderr  # the retry line names the key it sent again
