"""Peers before main in rendering: every replica's pod gets the dihera-wait-peers init container first."""

from __future__ import annotations

import importlib.metadata
from pathlib import Path

import pytest
import yaml

from dihera import RenderSettings, load_job, render, validate
from dihera.cli import build_parser
from dihera.cli.controller import settings_from_args
from dihera.constants import ANNOTATION_PEER_WAIT_TIMEOUT, DEFAULT_IMAGE, PEER_WAIT_CONTAINER
from dihera.peers import parse_nodes, peers_to_wait_for
from tests.builders import container, job, task
from tests.rendered import replica_template

CHART = Path(__file__).resolve().parents[2] / "charts" / "dihera"


def three_tasks(**meta: object) -> dict:
    manifest = job(task("learner"), task("collector", replicas=2), task("evaluator"), name="dqn")
    manifest["metadata"].update(meta)
    return manifest


def wait_container(rendered, dag_task: str) -> dict:  # type: ignore[no-untyped-def]
    inits = replica_template(rendered, dag_task).get("initContainers") or []
    assert [c["name"] for c in inits].count(PEER_WAIT_CONTAINER) <= 1
    return inits[0] if inits and inits[0]["name"] == PEER_WAIT_CONTAINER else {}


def test_every_replica_gets_the_wait_with_its_rank_and_the_job_node_list() -> None:
    rendered = render(load_job(three_tasks()))
    nodes = parse_nodes(rendered.configmap["data"]["DI_NODES"])
    for rank, node in enumerate(["learner-0", "collector-0", "collector-1", "evaluator-0"]):
        wait = wait_container(rendered, node)
        assert wait["command"] == ["dihera", "wait-peers", "--timeout", "300"]
        assert wait["env"] == [
            {"name": "DI_RANK", "value": str(rank)},
            {"name": "DI_NODES", "valueFrom": {"configMapKeyRef": {"name": "di-dqn", "key": "DI_NODES"}}},
        ]
        # what the process then waits for: its own FQDN and every lower rank's
        assert [p.host for p in peers_to_wait_for(rank, nodes)] == nodes[: rank + 1]


def test_the_wait_is_hardened_small_and_runs_the_projects_image() -> None:
    wait = wait_container(render(load_job(three_tasks())), "learner-0")
    assert (wait["image"], wait["imagePullPolicy"]) == (DEFAULT_IMAGE, "IfNotPresent")
    assert wait["securityContext"] == {
        "runAsNonRoot": True,
        "runAsUser": 65532,
        "runAsGroup": 65532,
        "readOnlyRootFilesystem": True,
        "allowPrivilegeEscalation": False,
        "capabilities": {"drop": ["ALL"]},
        "seccompProfile": {"type": "RuntimeDefault"},
    }
    assert wait["resources"] == {
        "requests": {"cpu": "10m", "memory": "32Mi"},
        "limits": {"cpu": "500m", "memory": "64Mi"},
    }
    assert wait["terminationMessagePolicy"] == "FallbackToLogsOnError"


def test_the_users_init_containers_run_after_the_wait() -> None:
    manifest = job(task("none", name="w", initContainers=[container("setup")]))
    inits = replica_template(render(load_job(manifest)), "w-0")["initContainers"]
    assert [c["name"] for c in inits] == [PEER_WAIT_CONTAINER, "setup"]


def test_settings_choose_the_image_pull_policy_and_bound() -> None:
    settings = RenderSettings(peer_wait_image="reg/dihera:9", peer_wait_image_pull_policy="Never", peer_wait_timeout=45)
    wait = wait_container(render(load_job(three_tasks()), settings), "evaluator-0")
    assert (wait["image"], wait["imagePullPolicy"]) == ("reg/dihera:9", "Never")
    assert wait["command"][-2:] == ["--timeout", "45"]
    with pytest.raises(ValueError, match="peer_wait_timeout -1 must be >= 0 seconds"):
        RenderSettings(peer_wait_timeout=-1)


@pytest.mark.parametrize(
    ("annotation", "settings_timeout", "expected"),
    [
        (None, 300, "300"),
        ("30", 300, "30"),
        ("600", 0, "600"),
        ("0", 300, None),
        (None, 0, None),
    ],
)
def test_the_jobs_annotation_overrides_the_platforms_bound_and_0_turns_it_off(
    annotation: str | None, settings_timeout: int, expected: str | None
) -> None:
    meta = {"annotations": {ANNOTATION_PEER_WAIT_TIMEOUT: annotation}} if annotation is not None else {}
    rendered = render(load_job(three_tasks(**meta)), RenderSettings(peer_wait_timeout=settings_timeout))
    for node in ["learner-0", "collector-1"]:
        wait = wait_container(rendered, node)
        assert (wait["command"][-1] if wait else None) == expected
        if expected is None:  # no init container at all when the user has none either
            assert "initContainers" not in replica_template(rendered, node)


def test_rendering_stays_deterministic() -> None:
    manifest = three_tasks(annotations={ANNOTATION_PEER_WAIT_TIMEOUT: "12"})
    assert render(load_job(manifest)).workflow == render(load_job(manifest)).workflow


def test_validation_names_a_bad_annotation_and_the_reserved_container_name() -> None:
    manifest = job(
        task("none", name="w", initContainers=[container(PEER_WAIT_CONTAINER)]),
        task("none", name="v", containers=[container(PEER_WAIT_CONTAINER)]),
    )
    manifest["metadata"]["annotations"] = {ANNOTATION_PEER_WAIT_TIMEOUT: "5m"}
    assert [str(p) for p in validate(manifest)] == [
        "metadata.annotations.diengine/peer-wait-timeout: '5m' is not a whole number of seconds >= 0 "
        "(0 turns the wait off)",
        "spec.tasks[0].template.spec.initContainers[0].name: 'dihera-wait-peers' is the name of the init container "
        "dihera adds to every replica (docs/rendering.md); choose another name",
        "spec.tasks[1].template.spec.containers[0].name: 'dihera-wait-peers' is the name of the init container "
        "dihera adds to every replica (docs/rendering.md); choose another name",
    ]


def test_the_default_image_is_the_charts_default_image_of_this_version() -> None:
    chart = yaml.safe_load((CHART / "Chart.yaml").read_text())
    values = yaml.safe_load((CHART / "values.yaml").read_text())
    assert f"{values['image']['repository']}:{chart['appVersion']}" == DEFAULT_IMAGE
    assert f"dihera:{importlib.metadata.version('dihera')}" == DEFAULT_IMAGE
    assert values["peerWaitTimeout"] == RenderSettings().peer_wait_timeout


def test_controller_takes_the_wait_from_flags_then_the_charts_variables() -> None:
    def settings(argv: list[str], env: dict[str, str]) -> RenderSettings:
        return settings_from_args(build_parser().parse_args(["controller", *argv]), env).render

    env = {
        "DIHERA_PEER_WAIT_IMAGE": "reg/dihera:1",
        "DIHERA_PEER_WAIT_IMAGE_PULL_POLICY": "Always",
        "DIHERA_PEER_WAIT_TIMEOUT": "20",
    }
    s = settings([], env)
    assert (s.peer_wait_image, s.peer_wait_image_pull_policy, s.peer_wait_timeout) == ("reg/dihera:1", "Always", 20)
    s = settings(["--peer-wait-image", "x:2", "--peer-wait-timeout", "0"], env)
    assert (s.peer_wait_image, s.peer_wait_timeout) == ("x:2", 0)
    assert settings([], {}) == RenderSettings()
    with pytest.raises(ValueError, match="'soon' is not a whole number of seconds"):
        settings([], {"DIHERA_PEER_WAIT_TIMEOUT": "soon"})
