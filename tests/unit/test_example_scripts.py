"""The scripts the torch and TF_CONFIG examples run in their pods, run here as plain processes.

The env is what dihera renders for each replica (see builders.container_env). The pods' FQDNs
resolve only in the cluster: torch's MASTER_ADDR is pointed at 127.0.0.1, and the TF_CONFIG check
runs with a resolver that knows the names the test gives it (so no DNS query leaves the machine).
The torch test needs torch: give an interpreter that has it in ``DIHERA_TORCH_PYTHON``
(e.g. ``/tmp/torchvenv/bin/python``); without one it is skipped.
"""

from __future__ import annotations

import json
import os
import socket
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest
import yaml

from dihera.render import render
from dihera.validation import load_job
from tests.rendered import container_env

EXAMPLES = Path(__file__).resolve().parents[2] / "workflows"
TORCH_PYTHON = os.environ.get("DIHERA_TORCH_PYTHON", sys.executable)


def _example(name: str) -> tuple[dict[str, Any], str]:
    doc = yaml.safe_load((EXAMPLES / name).read_text(encoding="utf-8"))
    container = doc["spec"]["tasks"][0]["template"]["spec"]["containers"][0]
    assert container["command"] == ["python", "-c"]
    return doc, container["args"][0]


def _base_env() -> dict[str, str]:
    return {k: v for k, v in os.environ.items() if k in ("PATH", "HOME", "LANG")}


def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


def _has_torch() -> bool:
    probe = subprocess.run([TORCH_PYTHON, "-c", "import torch.distributed"], capture_output=True, check=False)
    return probe.returncode == 0


@pytest.mark.skipif(not _has_torch(), reason="no torch: set DIHERA_TORCH_PYTHON to an interpreter with torch")
def test_torch_allreduce_script_with_the_rendered_env() -> None:
    doc, script = _example("torch-allreduce.yaml")
    rendered = render(load_job(doc))
    port = str(_free_port())
    procs = []
    for index in range(2):
        env = container_env(rendered, f"learner-{index}")
        assert (env["WORLD_SIZE"], env["RANK"], env["LOCAL_RANK"]) == ("2", str(index), "0")
        env = {**_base_env(), **env, "MASTER_ADDR": "127.0.0.1", "MASTER_PORT": port, "GLOO_SOCKET_IFNAME": "lo"}
        procs.append(subprocess.Popen([TORCH_PYTHON, "-c", script], env=env, stdout=subprocess.PIPE, text=True))
    outputs = [p.communicate(timeout=240)[0] for p in procs]
    assert [p.returncode for p in procs] == [0, 0], outputs
    assert all("all_reduce sum 3.0 (expected 3.0)" in out for out in outputs), outputs


#: Runs before the pod script: names resolve from ``DIHERA_TEST_HOSTS`` only, so no DNS query leaves the machine.
_RESOLVER = """
import os, socket
_known = set(filter(None, os.environ.get("DIHERA_TEST_HOSTS", "").split(",")))
def _resolve(host, port, *args, **kwargs):
    if host not in _known:
        raise socket.gaierror(socket.EAI_NONAME, f"unknown host {host}")
    return [(socket.AF_INET, socket.SOCK_STREAM, 6, "", ("127.0.0.1", int(port)))]
socket.getaddrinfo = _resolve
"""


def _tf_run(env: dict[str, str], script: str, known: set[str]) -> subprocess.CompletedProcess[str]:
    full = {**_base_env(), **env, "TF_CHECK_TIMEOUT": "0", "DIHERA_TEST_HOSTS": ",".join(sorted(known))}
    return subprocess.run(
        [sys.executable, "-c", _RESOLVER + script], env=full, capture_output=True, text=True, timeout=60
    )


def _hosts(env: dict[str, str]) -> set[str]:
    config = json.loads(env["TF_CONFIG"])
    return {a.rsplit(":", 1)[0] for addresses in config["cluster"].values() for a in addresses}


@pytest.mark.parametrize("dag_task", ["chief-0", "worker-0", "worker-1", "ps-0"])
def test_tf_config_check_passes_when_every_address_resolves(dag_task: str) -> None:
    doc, script = _example("tf-config-check.yaml")
    env = container_env(render(load_job(doc)), dag_task)
    assert len(_hosts(env)) == 4 and env["DI_FQDN"] in _hosts(env)
    result = _tf_run(env, script, _hosts(env))
    assert result.returncode == 0, result.stderr
    assert "all 4 addresses resolve" in result.stdout


def test_tf_config_check_fails_naming_unresolved_addresses() -> None:
    doc, script = _example("tf-config-check.yaml")
    env = container_env(render(load_job(doc)), "worker-1")
    ps = "tf-config-check-ps-0.di-tf-config-check.default.svc.cluster.local"
    result = _tf_run(env, script, _hosts(env) - {ps})
    assert result.returncode == 1
    assert f"unresolved: {ps}:2222" in result.stderr


def test_tf_config_check_fails_when_the_task_entry_is_not_this_pod() -> None:
    doc, script = _example("tf-config-check.yaml")
    env = container_env(render(load_job(doc)), "worker-1")
    result = _tf_run({**env, "DI_FQDN": "another-pod"}, script, _hosts(env))
    assert result.returncode == 1 and "not this pod" in result.stderr
