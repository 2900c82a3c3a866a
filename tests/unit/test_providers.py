"""Env providers: the variables each replica sees (as Argo and the kubelet resolve them), rules, scaling."""

from __future__ import annotations

import json
from typing import Any

import pytest

from dihera import experiment as ex
from dihera.errors import InvalidJobError
from dihera.membership import Membership, Replica
from dihera.render import render
from dihera.render.providers import PROVIDERS
from dihera.scaling import ScaleError, ScaleRequest, plan_scale
from dihera.schema import dijob_schema
from dihera.validation import load_job, validate
from tests.builders import job, task
from tests.rendered import container_env, replica_template


def _with_provider(entry: dict[str, Any], **provider: Any) -> dict[str, Any]:
    return {**entry, "envProvider": provider}


def _fqdn(job_name: str, task_name: str, index: int) -> str:
    return f"{job_name}-{task_name}-{index}.di-{job_name}.default.svc.cluster.local"


def test_registry_matches_the_schema_enum() -> None:
    task_schema = dijob_schema()["properties"]["spec"]["properties"]["tasks"]["items"]
    assert sorted(task_schema["properties"]["envProvider"]["properties"]["name"]["enum"]) == sorted(PROVIDERS)
    roles = {r for p in PROVIDERS.values() for r in p.roles}
    assert set(task_schema["properties"]["envProvider"]["properties"]["role"]["enum"]) == roles


@pytest.mark.parametrize(
    ("dag_task", "expected"),
    [
        ("learner-0", {"RANK": "0"}),
        ("learner-1", {"RANK": "1"}),
    ],
)
def test_torch_two_replica_learner(dag_task: str, expected: dict[str, str]) -> None:
    j = load_job(job(_with_provider(task("learner", replicas=2), name="torch"), task("collector"), name="ddp"))
    env = container_env(render(j), dag_task)
    assert {k: env[k] for k in ("MASTER_ADDR", "MASTER_PORT", "WORLD_SIZE", "RANK", "LOCAL_RANK")} == {
        "MASTER_ADDR": _fqdn("ddp", "learner", 0),
        "MASTER_PORT": "29500",
        "WORLD_SIZE": "2",
        "LOCAL_RANK": "0",
        **expected,
    }
    assert env["DI_TASK_RANK"] == expected["RANK"]  # task-local, not the global DI_RANK


def test_torch_port_override_and_container_port_on_first_container_only() -> None:
    entry = task("learner", replicas=2)
    entry["template"]["spec"]["containers"].append({"name": "sidecar", "image": "busybox"})
    rendered = render(load_job(job(_with_provider(entry, name="torch", port=23456))))
    assert container_env(rendered, "learner-0")["MASTER_PORT"] == "23456"
    assert container_env(rendered, "learner-0", "sidecar")["MASTER_PORT"] == "23456"
    containers = replica_template(rendered, "learner-0")["containerSet"]["containers"]
    assert containers[0]["ports"] == [{"name": "torch-master", "containerPort": 23456, "protocol": "TCP"}]
    assert "ports" not in containers[1]


def test_torch_keeps_a_port_the_user_already_declares() -> None:
    entry = task("learner", replicas=2)
    entry["template"]["spec"]["containers"][0]["ports"] = [{"name": "ddp", "containerPort": 29500}]
    rendered = render(load_job(job(_with_provider(entry, name="torch"))))
    containers = replica_template(rendered, "learner-0")["containerSet"]["containers"]
    assert containers[0]["ports"] == [{"name": "ddp", "containerPort": 29500}]


def test_tasks_without_a_provider_render_as_before() -> None:
    rendered = render(load_job(job(task("learner", replicas=2), task("collector"))))
    env = container_env(rendered, "learner-1")
    assert not {"MASTER_ADDR", "TF_CONFIG", "DMLC_ROLE"} & set(env)
    assert set(rendered.configmap["data"]) == {
        "DI_NODES",
        "DI_LEARNER_NODES",
        "DI_COLLECTOR_NODES",
        "DI_MEMBERSHIP_GENERATION",
        "membership.json",
    }


def _tf_job() -> dict[str, Any]:
    return job(
        _with_provider(task(name="chief"), name="tensorflow"),
        _with_provider(task(name="worker", replicas=2), name="tensorflow"),
        _with_provider(task(name="ps"), name="tensorflow", port=2223),
        _with_provider(task("evaluator"), name="tensorflow"),
        task("collector"),
        name="tf",
    )


@pytest.mark.parametrize(
    ("dag_task", "role", "index"),
    [
        ("chief-0", "chief", 0),
        ("worker-0", "worker", 0),
        ("worker-1", "worker", 1),
        ("ps-0", "ps", 0),
        ("evaluator-0", "evaluator", 0),
    ],
)
def test_tf_config_for_chief_two_workers_and_a_ps(dag_task: str, role: str, index: int) -> None:
    rendered = render(load_job(_tf_job()))
    config = json.loads(container_env(rendered, dag_task)["TF_CONFIG"])
    assert config == {
        "cluster": {
            "chief": [f"{_fqdn('tf', 'chief', 0)}:2222"],
            "worker": [f"{_fqdn('tf', 'worker', 0)}:2222", f"{_fqdn('tf', 'worker', 1)}:2222"],
            "ps": [f"{_fqdn('tf', 'ps', 0)}:2223"],
        },
        "task": {"type": role, "index": index},
    }
    assert "TF_CONFIG" not in container_env(rendered, "collector-0")


def test_tf_role_from_the_role_field() -> None:
    rendered = render(load_job(job(_with_provider(task("learner", replicas=2), name="tensorflow", role="worker"))))
    config = json.loads(container_env(rendered, "learner-1")["TF_CONFIG"])
    assert config["task"] == {"type": "worker", "index": 1}
    assert list(config["cluster"]) == ["worker"]


def _mx_job() -> dict[str, Any]:
    return job(
        _with_provider(task(name="scheduler"), name="mxnet", port=9000),
        _with_provider(task(name="server", replicas=2), name="mxnet"),
        _with_provider(task("learner", replicas=3), name="mxnet", role="worker"),
        name="mx",
    )


@pytest.mark.parametrize(
    ("dag_task", "role"), [("scheduler-0", "scheduler"), ("server-1", "server"), ("learner-2", "worker")]
)
def test_dmlc_variables(dag_task: str, role: str) -> None:
    env = container_env(render(load_job(_mx_job())), dag_task)
    assert {k: v for k, v in env.items() if k.startswith("DMLC_")} == {
        "DMLC_ROLE": role,
        "DMLC_PS_ROOT_URI": _fqdn("mx", "scheduler", 0),
        "DMLC_PS_ROOT_PORT": "9000",
        "DMLC_NUM_SERVER": "2",
        "DMLC_NUM_WORKER": "3",
    }


@pytest.mark.parametrize(
    ("manifest", "path", "words"),
    [
        (
            job(_with_provider(task("learner"), name="torch", role="worker")),
            "spec.tasks[0].envProvider.role",
            "torch takes no role",
        ),
        (
            job(_with_provider(task("learner"), name="tensorflow")),
            "spec.tasks[0].envProvider.role",
            "'learner' is not a tensorflow role",
        ),
        (
            job(_with_provider(task("learner"), name="tensorflow", role="scheduler")),
            "spec.tasks[0].envProvider.role",
            "not a tensorflow role",
        ),
        (
            job(_with_provider(task(name="chief", replicas=2), name="tensorflow")),
            "spec.tasks[0].replicas",
            "exactly 1 replica",
        ),
        (job(_with_provider(task(name="worker"), name="mxnet")), "spec.tasks", "scheduler role"),
        (
            job(
                _with_provider(task(name="worker"), name="tensorflow"),
                _with_provider(task("learner"), name="tensorflow", role="worker"),
            ),
            "spec.tasks[1].envProvider.role",
            "already the role of task 'worker'",
        ),
        (
            job(_with_provider(task("learner"), name="pytorch")),
            "spec.tasks[0].envProvider.name",
            "valid values: torch, tensorflow, mxnet",
        ),
        (job(_with_provider(task("learner"), name="torch", port=70000)), "spec.tasks[0].envProvider.port", "70000"),
    ],
)
def test_provider_rules_name_the_field_and_value(manifest: dict[str, Any], path: str, words: str) -> None:
    problems = validate(manifest)
    assert any(p.path == path and words in p.message for p in problems), problems
    with pytest.raises(InvalidJobError):
        load_job(manifest)


@pytest.mark.parametrize(
    "bad", [{}, {"name": 3}, {"name": "torch", "port": "x"}, "torch", {"name": "tensorflow", "role": 5}]
)
def test_malformed_env_provider_is_reported_not_crashed_on(bad: Any) -> None:
    problems = validate(job({**task("learner"), "envProvider": bad}))
    assert problems and all(
        p.path.startswith("spec.tasks[0].envProvider") or p.path == "spec.tasks[0]" for p in problems
    ), problems


def _running(manifest: dict[str, Any]) -> tuple[Any, Membership, dict[str, Any]]:
    j = load_job(manifest)
    rendered = render(j)
    return j, rendered.membership, rendered.workflow


@pytest.mark.parametrize(
    "request_",
    [
        ScaleRequest.add("learner", 1),
        ScaleRequest.remove("learner", 1),
        ScaleRequest.set_replicas("learner", 3),
        ScaleRequest.remove_named(["learner-1"]),
    ],
)
def test_scaling_a_torch_task_is_refused(request_: ScaleRequest) -> None:
    j, membership, workflow = _running(
        job(_with_provider(task("learner", replicas=2), name="torch"), task("collector"))
    )
    with pytest.raises(ScaleError) as err:
        plan_scale(j, membership, workflow, request_)
    assert err.value.reason == "invalid"
    assert "spec.tasks[0].replicas" in str(err.value) and "allowScaling: true" in str(err.value)


def test_a_spec_edit_of_a_torch_task_is_refused_through_the_same_planner() -> None:
    j, membership, workflow = _running(job(_with_provider(task("learner", replicas=2), name="torch")))
    with pytest.raises(ScaleError, match="torch env provider"):
        plan_scale(j.with_replicas("learner", 4), membership, workflow, ScaleRequest.sync())


def test_other_tasks_still_scale_and_opt_in_allows_torch() -> None:
    j, membership, workflow = _running(
        job(_with_provider(task("learner", replicas=2), name="torch"), task("collector"))
    )
    assert plan_scale(j, membership, workflow, ScaleRequest.add("collector", 2)).replicas == {
        "learner": 2,
        "collector": 3,
    }
    j, membership, workflow = _running(
        job(_with_provider(task("learner", replicas=2), name="torch", allowScaling=True), task("collector"))
    )
    plan = plan_scale(j, membership, workflow, ScaleRequest.add("learner", 1))
    assert plan.replicas["learner"] == 3
    assert render(plan.job, membership=plan.membership).configmap["data"]["TORCH_LEARNER_WORLD_SIZE"] == "3"


def test_world_size_follows_the_membership() -> None:
    j = load_job(job(_with_provider(task("learner", replicas=2), name="torch", allowScaling=True), name="ddp"))
    after = Membership(2, (Replica(0, "learner", 0),))
    assert render(j.with_replicas("learner", 1), membership=after).configmap["data"]["TORCH_LEARNER_WORLD_SIZE"] == "1"


def test_python_api_and_manifest_round_trip() -> None:
    j = ex.dijob(
        "ddp",
        [
            ex.task("learner", replicas=2, image="img", env_provider=ex.env_provider("torch", port=23456)),
            ex.task("collector", image="img"),
        ],
    )
    spec = j.tasks[0].env_provider
    assert spec is not None and (spec.name, spec.port, spec.allow_scaling) == ("torch", 23456, False)
    assert load_job(j.to_manifest()) == j
    assert j.to_manifest()["spec"]["tasks"][0]["envProvider"] == {"name": "torch", "port": 23456, "allowScaling": False}


def test_rendering_is_deterministic_and_one_template_per_task() -> None:
    manifest = _tf_job()
    first, second = render(load_job(manifest)), render(load_job(manifest))
    assert first.objects() == second.objects()
    names = [t["name"] for t in first.workflow["spec"]["templates"]]
    assert names == ["dijob", "chief", "worker", "ps", "evaluator", "collector"]
