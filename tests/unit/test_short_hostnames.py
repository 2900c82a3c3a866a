"""Short hostnames: which replicas get one, how the membership stores it, the ``<task>-short`` template,
scaling's DAG append, the collision rule (docs/rendering.md, "Names in the node lists")."""

from __future__ import annotations

import copy
import json
import subprocess
from dataclasses import replace
from typing import Any

import jsonpatch  # type: ignore[import-untyped]

from dihera import RenderSettings, load_job, plan_membership, render
from dihera.constants import ENV_STRING_MARGIN, MAX_ENV_STRING
from dihera.env_limits import nodes_bytes
from dihera.membership import Membership, Replica, assign_hostnames
from dihera.model import DIJob
from dihera.naming import Addressing, fqdn, hostname, short_hostname, short_template_name
from dihera.render.env import node_lists
from dihera.render.objects import membership_configmap
from dihera.render.workflow import build_workflow, short_variant
from dihera.scaling import ScaleRequest, plan_scale, workflow_patch
from dihera.validation import validate
from tests.builders import job, task
from tests.rendered import container_env, replica_template

MAX_VALUE = MAX_ENV_STRING - ENV_STRING_MARGIN
NAMESPACE = "n" * 63


def _big(name: str, collectors: int, **spec: Any) -> DIJob:
    manifest = job(task("learner"), task("collector", replicas=collectors), task("evaluator"), name=name, **spec)
    manifest["metadata"]["namespace"] = NAMESPACE
    return load_job(manifest)


def test_the_json_keeps_short_only_when_true_and_reads_old_json() -> None:
    old = '{"generation":3,"replicas":[{"index":0,"rank":0,"task":"learner"},{"index":4,"rank":1,"task":"c"}]}'
    m = Membership.from_json(old)
    assert m.replicas == (Replica(0, "learner", 0), Replica(1, "c", 4))
    assert m.to_json() == old  # a membership without short hostnames keeps its JSON byte for byte
    mixed = Membership(4, (Replica(0, "learner", 0), Replica(1, "c", 4, short=True)))
    assert '{"index":4,"rank":1,"short":true,"task":"c"}' in mixed.to_json()
    assert Membership.from_json(mixed.to_json()) == mixed


def test_a_replica_names_its_actual_hostname() -> None:
    assert Replica(5, "collector", 7).hostname("dqn") == "dqn-collector-7" == hostname("dqn", "collector", 7)
    assert Replica(5, "collector", 7, short=True).hostname("dqn") == "collector-7" == short_hostname("collector", 7)
    assert fqdn("dqn", "ns", "collector", 7, "cluster.local", short=True) == "collector-7.di-dqn.ns.svc.cluster.local"


def test_exactly_the_replicas_whose_long_hostnames_would_not_fit_get_short_ones() -> None:
    """48-character job name, 63-character namespace: 2,002 long bare hostnames fit (127,009 bytes); of 100
    more collectors those whose long names still fit stay long, lowest rank first, the rest are short."""
    j = _big("j" * 48, 2100)
    first = plan_membership(_big("j" * 48, 2000), None)
    assert not any(r.short for r in first.replicas) and nodes_bytes(j.name, first) == 127009
    grown = plan_membership(j, first)
    assert set(first.replicas) <= set(grown.replicas)  # live replicas keep their hostnames
    added = sorted(set(grown.replicas) - set(first.replicas))
    long_added = [r for r in added if not r.short]
    assert [r.rank for r in added] == list(range(2002, 2102))
    assert added == long_added + [r for r in added if r.short]  # long ones first, by rank
    size = nodes_bytes(j.name, grown)
    assert size <= MAX_VALUE
    # one more long name would not fit
    first_short = next(r for r in added if r.short)
    one_more = Membership(2, tuple(replace(r, short=False) if r == first_short else r for r in grown.replicas))
    assert nodes_bytes(j.name, one_more) > MAX_VALUE


def test_a_first_membership_too_large_for_long_names_keeps_index_0_long() -> None:
    j = _big("j" * 48, 2100)
    m = plan_membership(j, None)
    assert [r for r in m.replicas if r.index == 0 and r.short] == []
    assert m.replicas[-1] == Replica(2101, "evaluator", 0)
    assert any(r.short for r in m.replicas) and nodes_bytes(j.name, m) <= MAX_VALUE
    # nothing fits long any more: every joining replica but index 0 is short
    assert all(r.short for r in assign_hostnames(j, m.replicas, [Replica(2102, "collector", 2100)]))


def _small() -> tuple[DIJob, Membership]:
    j = load_job(job(task("learner"), task("collector", replicas=3), task("evaluator"), name="dqn"))
    m = plan_membership(j, None)
    return j, Membership(
        m.generation, tuple(replace(r, short=r.task == "collector" and r.index > 0) for r in m.replicas)
    )


def test_short_replicas_run_the_short_template_with_their_hostname_and_fqdn() -> None:
    j, m = _small()
    rendered = render(j, RenderSettings(), m)
    templates = [t["name"] for t in rendered.workflow["spec"]["templates"]]
    assert templates == ["dijob", "learner", "collector", "evaluator", "collector-short"]
    dag = {t["name"]: t["template"] for t in rendered.workflow["spec"]["templates"][0]["dag"]["tasks"]}
    assert dag == {"learner-0": "learner", "collector-0": "collector", "collector-1": "collector-short",
                   "collector-2": "collector-short", "evaluator-0": "evaluator"}  # fmt: skip
    for name, host in (("collector-0", "dqn-collector-0"), ("collector-2", "collector-2")):
        t = replica_template(rendered, name)
        assert json.loads(t["podSpecPatch"])["hostname"] == host
        assert t["metadata"]["labels"]["diengine/pod"] == f"dqn-{name}"  # label lookups unchanged
        env = container_env(rendered, name)
        assert env["DI_FQDN"] == f"{host}.di-dqn.default.svc.cluster.local"
        assert env["DI_NODES"].split(",")[int(env["DI_RANK"])].split(".")[0] == host
    # the scaler's derivation is the renderer's variant
    by_name = {t["name"]: t for t in rendered.workflow["spec"]["templates"]}
    assert short_variant(by_name["collector"]) == by_name["collector-short"]
    assert node_lists(j, m, RenderSettings(), Addressing.HOSTNAME)["DI_COLLECTOR_NODES"] == (
        "dqn-collector-0,collector-1,collector-2"
    )
    assert '"short":true' in membership_configmap(j, m, RenderSettings())["data"]["membership.json"]


def test_a_job_without_short_hostnames_renders_no_short_template() -> None:
    j, m = _small()
    plain = plan_membership(j, None)
    assert build_workflow(j, plain, RenderSettings()).to_dict() != build_workflow(j, m, RenderSettings()).to_dict()
    names = [t["name"] for t in render(j).workflow["spec"]["templates"]]
    assert names == ["dijob", "learner", "collector", "evaluator"]


def test_scaling_appends_short_replicas_with_the_short_template_added_once() -> None:
    j = load_job(job(task("learner"), task("collector", replicas=2), task("evaluator"), name="dqn"))
    rendered = render(j)
    workflow = copy.deepcopy(rendered.workflow)
    m = rendered.membership
    up = Membership(2, (*m.replicas, Replica(4, "collector", 2, short=True), Replica(5, "collector", 3)))
    patched = jsonpatch.apply_patch(workflow, workflow_patch(up, workflow))
    by_name = {t["name"]: t for t in patched["spec"]["templates"]}
    assert short_template_name("collector") in by_name
    dag = {t["name"]: t["template"] for t in by_name["dijob"]["dag"]["tasks"]}
    assert dag["collector-2"] == "collector-short" and dag["collector-3"] == "collector"
    variant = by_name["collector-short"]
    assert json.loads(variant["podSpecPatch"])["hostname"] == "collector-{{inputs.parameters.index}}"
    assert variant["metadata"]["annotations"]["diengine/replicas"] == "6"
    assert variant["metadata"]["labels"]["diengine/pod"] == "dqn-collector-{{inputs.parameters.index}}"
    assert workflow_patch(up, patched) == []
    # a later short replica reuses the template; the UI's columns count the task once
    more = Membership(3, (*up.replicas, Replica(6, "collector", 4, short=True)))
    ops = workflow_patch(more, patched)
    again = jsonpatch.apply_patch(patched, ops)
    assert [t["name"] for t in again["spec"]["templates"]].count("collector-short") == 1
    assert again["spec"]["templates"][-1]["metadata"]["annotations"]["diengine/replicas"] == "7"
    assert "collector-short" not in json.dumps(again["metadata"]["annotations"])


def test_the_scale_plan_gives_new_replicas_short_hostnames_past_what_fits() -> None:
    j = _big("j" * 48, 2000)
    rendered = render(j)
    plan = plan_scale(j, rendered.membership, rendered.workflow, ScaleRequest.add("collector", 100))
    assert len(plan.added) == 100 and any(r.short for r in plan.added) and not plan.added[0].short
    ops = workflow_patch(plan.membership, rendered.workflow)
    assert sum(1 for o in ops if o["path"] == "/spec/templates/-") == 1


def test_a_task_named_after_the_job_and_another_task_or_a_short_template_is_refused() -> None:
    """``dqn-collector-3`` would be both collector-3's long hostname and dqn-collector task's index 3 short one."""
    problems = validate(job(task("none", name="collector"), task("none", name="dqn-collector"), name="dqn"))
    assert [p.path for p in problems] == ["spec.tasks[1].name"]
    assert "'dqn-collector'" in problems[0].message and "'collector'" in problems[0].message
    assert not validate(job(task("none", name="collector"), task("none", name="dqn-learner"), name="dqn"))


def test_the_largest_replica_of_the_job_scaled_to_2100_execs_with_its_whole_environment() -> None:
    """1 + 2,100 + 1, a 48-character job name, a 63-character namespace, the 100 collectors joined by a
    scale-up: the largest replica (collector-2099, a short hostname) gets every variable Linux execs."""
    j = _big("j" * 48, 2100)
    membership = plan_membership(j, plan_membership(_big("j" * 48, 2000), None))
    rendered = render(j, RenderSettings(), membership)
    env = container_env(rendered, "collector-2099")
    nodes = env["DI_NODES"].split(",")
    assert (len(nodes), env["DI_RANK"], nodes[2101]) == (2102, "2101", "collector-2099")
    assert nodes[0] == f"{j.name}-learner-0" and len(env["DI_NODES"]) == 130910
    assert env["DI_FQDN"] == f"collector-2099.di-{j.name}.{NAMESPACE}.svc.cluster.local"
    subprocess.run(["/bin/true"], env=env, check=True)  # E2BIG if any string were over the limit
    problems = validate(job(task("none", name="collector"), task("none", name="collector-short"), name="dqn"))
    assert [p.path for p in problems] == ["spec.tasks[1].name"] and "'collector'" in problems[0].message
    assert not validate(job(task("none", name="collector-short"), name="dqn"))
