"""Names dihera adds to every replica's pod: a template taking one is refused by validation, naming the field.

Written as a careless user would try it: a DI-orchestrator habit (``DI_RANK`` set by hand), a volume
copied from a rendered Workflow, a mount at dihera's path. And the lists agree with what is rendered.
"""

from __future__ import annotations

from typing import Any

import pytest

from dihera.constants import CHECKPOINT_DIR_ENV, MEMBERSHIP_VOLUME
from dihera.render.env import di_env
from dihera.render.providers import PROVIDERS
from dihera.render.settings import RenderSettings
from dihera.reserved import MEMBERSHIP_MOUNT, PROVIDER_ENV, REPLICA_ENV, reserved_env
from dihera.validation import apply_defaults, checkpoint_tasks, load_job, validate
from tests.builders import container, job, task

PEM = "-----BEGIN CERTIFICATE-----\nMIIB\n-----END CERTIFICATE-----\n"
POD = "spec.tasks[0].template.spec"


def messages(manifest: Any) -> list[str]:
    return [str(p) for p in validate(manifest)]


def _provider(entry: dict[str, Any], **provider: Any) -> dict[str, Any]:
    return {**entry, "envProvider": provider}


def _with_env(*env: dict[str, Any], init: bool = False) -> dict[str, Any]:
    """A learner and a collector; the learner's container (``init``: an init container of it) has ``env``."""
    entry = task("learner")
    entry["template"]["spec"]["initContainers" if init else "containers"] = [
        container("init" if init else "main", env=list(env))
    ]
    if init:
        entry["template"]["spec"]["containers"] = [container("main")]
    return job(entry, task("collector"))


@pytest.mark.parametrize("name", [*REPLICA_ENV, "DI_LEARNER_NODES", "DI_COLLECTOR_NODES"])
def test_a_variable_dihera_sets_is_refused_naming_the_field(name: str) -> None:
    manifest = _with_env({"name": "A", "value": "1"}, {"name": name, "value": "3"})
    (problem,) = messages(manifest)
    assert problem.startswith(f"{POD}.containers[0].env[1].name: {name!r} is set by dihera ")
    assert "an entry of that name would be dropped; choose another name" in problem


def test_di_orchestrators_habit_all_at_once_and_in_init_containers() -> None:
    manifest = _with_env({"name": "DI_RANK", "value": "0"}, {"name": "DI_NODES", "value": "a,b"}, init=True)
    assert messages(manifest) == [
        f"{POD}.initContainers[0].env[0].name: 'DI_RANK' is set by dihera on every replica (docs/rendering.md), "
        "ahead of the container's own variables: an entry of that name would be dropped; choose another name "
        "(a value may refer to it: $(DI_RANK))",
        f"{POD}.initContainers[0].env[1].name: 'DI_NODES' is set by dihera on every replica (docs/rendering.md), "
        "ahead of the container's own variables: an entry of that name would be dropped; choose another name "
        "(a value may refer to it: $(DI_NODES))",
    ]


def test_referring_to_dihera_variables_and_other_di_names_stay_valid() -> None:
    manifest = _with_env(
        {"name": "MY_RANK", "value": "$(DI_RANK)"},
        {"name": "DI_EVALUATOR_NODES", "value": "x"},  # no evaluator task: dihera does not set it
        {"name": "MASTER_PORT", "value": "1"},  # no torch envProvider on this task
        {"name": CHECKPOINT_DIR_ENV, "value": "/x"},  # no checkpoint
    )
    assert messages(manifest) == []


def test_provider_and_checkpoint_variables_are_refused_on_the_tasks_that_get_them() -> None:
    learner = _provider(task("learner"), name="torch")
    learner["template"]["spec"]["containers"][0]["env"] = [
        {"name": "MASTER_PORT", "value": "1"},
        {"name": CHECKPOINT_DIR_ENV, "value": "/x"},
    ]
    collector = task("collector")
    collector["template"]["spec"]["containers"][0]["env"] = [{"name": "MASTER_PORT", "value": "1"}]
    manifest = job(learner, collector)
    manifest["spec"]["checkpoint"] = {"size": "1Gi"}  # mounted by the learner only
    assert [p.split(": ", 1)[0] for p in messages(manifest)] == [
        f"{POD}.containers[0].env[0].name",
        f"{POD}.containers[0].env[1].name",
    ]
    assert "'MASTER_PORT' is set by the task's torch envProvider (docs/providers.md)" in messages(manifest)[0]


def test_a_running_job_taken_up_before_the_rule_is_still_loaded() -> None:
    manifest = _with_env({"name": "DI_RANK", "value": "3"})
    assert messages(manifest) != []
    manifest["status"] = {"phase": "Running"}
    assert messages(manifest) == []  # the renderer keeps dropping the entry, as it did when the job started


def test_dihera_s_volume_name_is_refused_in_a_template_and_in_the_job() -> None:
    manifest = job(task("learner"))
    manifest["spec"]["tasks"][0]["template"]["spec"]["volumes"] = [{"name": MEMBERSHIP_VOLUME, "emptyDir": {}}]
    manifest["spec"]["volumes"] = [{"name": MEMBERSHIP_VOLUME, "emptyDir": {}}]
    why = "'dihera-membership' is the membership ConfigMap's volume, which dihera adds to every replica's pod"
    assert messages(manifest) == [
        f"{POD}.volumes[0].name: {why}; choose another name",
        f"spec.volumes[0].name: {why}; choose another name",
    ]


def test_a_template_volume_named_as_a_job_volume_or_twice_is_refused() -> None:
    manifest = job(task("learner"))
    manifest["spec"]["volumes"] = [{"name": "shm", "emptyDir": {"medium": "Memory"}}]
    manifest["spec"]["tasks"][0]["template"]["spec"]["volumes"] = [
        {"name": "data", "emptyDir": {}},
        {"name": "shm", "emptyDir": {}},
        {"name": "data", "emptyDir": {}},
    ]
    assert messages(manifest) == [
        f"{POD}.volumes[1].name: 'shm' is also the name of spec.volumes[0], which dihera adds to every task's pod; "
        "choose another name (or use the job's volume)",
        f"{POD}.volumes[2].name: 'data' is already the name of {POD}.volumes[0]",
    ]


@pytest.mark.parametrize("path", [MEMBERSHIP_MOUNT, MEMBERSHIP_MOUNT + "/"])
def test_a_mount_at_the_membership_path_is_refused(path: str) -> None:
    manifest = job(task("learner"))
    pod = manifest["spec"]["tasks"][0]["template"]["spec"]
    pod["volumes"] = [{"name": "cfg", "emptyDir": {}}]
    pod["containers"][0]["volumeMounts"] = [
        {"name": "cfg", "mountPath": "/etc/dihera"},
        {"name": "cfg", "mountPath": path},
    ]
    assert messages(manifest) == [
        f"{POD}.containers[0].volumeMounts[1].mountPath: {path!r} is where dihera mounts the membership ConfigMap "
        f"({MEMBERSHIP_VOLUME}) in each container; use another path"
    ]


# -- the lists are what the renderer sets ----------------------------------------------------------------
JOBS = {
    "torch-and-checkpoint": job(_provider(task("learner", replicas=2), name="torch"), task("collector")),
    "tensorflow": job(
        _provider(task(name="chief"), name="tensorflow"),
        _provider(task(name="worker", replicas=2), name="tensorflow"),
        _provider(task(name="ps"), name="tensorflow"),
        _provider(task("evaluator"), name="tensorflow"),
    ),
    "mxnet": job(
        _provider(task(name="scheduler"), name="mxnet"),
        _provider(task(name="server"), name="mxnet"),
        _provider(task("learner"), name="mxnet", role="worker"),
    ),
}
JOBS["torch-and-checkpoint"]["spec"]["checkpoint"] = {"size": "1Gi"}


@pytest.mark.parametrize("manifest", JOBS.values(), ids=JOBS.keys())
def test_the_reserved_names_are_exactly_the_rendered_ones(manifest: dict[str, Any]) -> None:
    typed = load_job(manifest)
    spec = apply_defaults(manifest)["spec"]
    mounting = checkpoint_tasks(spec)
    for t, entry in zip(typed.tasks, spec["tasks"], strict=True):
        rendered = {e["name"] for e in di_env(typed, t, RenderSettings(server_ca=PEM))}
        assert set(reserved_env(spec["tasks"], entry, t.name in mounting)) == rendered, t.name


def test_every_provider_is_listed() -> None:
    assert set(PROVIDER_ENV) == set(PROVIDERS)
