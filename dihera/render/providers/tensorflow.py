"""``tensorflow``: ``TF_CONFIG``, as Kubeflow's TFJob gives it.

Every task using the provider is one TF role: its ``envProvider.role``, else its name when the name
is a role (``chief``, ``master``, ``worker``, ``ps``, ``evaluator``). ``TF_CONFIG`` is
``{"cluster": {role: ["<name>:<port>", ...]}, "task": {"type": role, "index": <index>}}``: the
cluster lists every live replica of every tensorflow task in index order, the evaluator excepted
(TensorFlow keeps the evaluator out of the cluster); names are FQDNs unless the job is too large
for them (:func:`dihera.render.env.membership_lists`). The cluster is one key of the membership
ConfigMap (``TF_CLUSTER``), read into ``DI_TF_CLUSTER`` and spliced into ``TF_CONFIG`` with
``$(DI_TF_CLUSTER)``, so one template serves every replica.
"""

from __future__ import annotations

import json
from collections.abc import Sequence

from dihera.errors import Problem
from dihera.membership import Membership
from dihera.model import DIJob, Task
from dihera.naming import Addressing
from dihera.render.providers.base import (
    INDEX,
    Env,
    Provider,
    ProviderTask,
    config_ref,
    literal,
    member_address,
    role_problems,
    single_replica_problems,
    tasks_with,
)
from dihera.render.settings import RenderSettings

__all__ = ["CLUSTER_KEY", "PROVIDER"]

DEFAULT_PORT = 2222
CLUSTER_KEY = "TF_CLUSTER"
CLUSTER_VAR = "DI_TF_CLUSTER"
#: Roles outside the cluster spec (TensorFlow's evaluator runs beside the cluster).
OUTSIDE_CLUSTER = frozenset({"evaluator"})


def _env(job: DIJob, task: Task, settings: RenderSettings) -> Env:
    del settings
    assert task.env_provider is not None
    role = PROVIDER.role(task.name, task.env_provider)
    # spaces keep Argo's ``{{...}}`` apart from JSON's closing braces
    config = f'{{"cluster": $({CLUSTER_VAR}), "task": {{"type": "{role}", "index": {INDEX} }} }}'
    return [config_ref(job, CLUSTER_VAR, CLUSTER_KEY), literal("TF_CONFIG", config)]


def _membership_data(job: DIJob, membership: Membership, settings: RenderSettings, form: Addressing) -> dict[str, str]:
    cluster: dict[str, list[str]] = {}
    for t in tasks_with(job, "tensorflow"):
        assert t.env_provider is not None
        role = PROVIDER.role(t.name, t.env_provider)
        if role is None or role in OUTSIDE_CLUSTER:
            continue
        port = PROVIDER.port(t.env_provider)
        replicas = sorted(membership.of_task(t.name), key=lambda r: r.index)
        cluster[role] = [f"{member_address(job, t.name, r.index, settings, form, r.short)}:{port}" for r in replicas]
    if not tasks_with(job, "tensorflow"):
        return {}
    return {CLUSTER_KEY: json.dumps(cluster, sort_keys=True, separators=(",", ":"))}


def _check(tasks: Sequence[ProviderTask]) -> list[Problem]:
    problems = role_problems(PROVIDER, tasks) + single_replica_problems(PROVIDER, tasks, ("chief", "master"))
    leaders = [t for t in tasks if PROVIDER.role(t.task, t.spec) in ("chief", "master")]
    if len(leaders) > 1:
        problems.append(Problem(f"{leaders[1].path}.role", "a tensorflow job has one chief or master, not both"))
    return problems


PROVIDER = Provider(
    name="tensorflow",
    default_port=DEFAULT_PORT,
    roles=("chief", "master", "worker", "ps", "evaluator"),
    env=_env,
    membership_data=_membership_data,
    check=_check,
    port_name="tf-port",
)
