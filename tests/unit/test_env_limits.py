"""Environment strings Linux will exec: the kernel's limit, the bound over the schema's maxima, the
worst-case 2,000-replica job rendered, and the names that still resolve."""

from __future__ import annotations

import errno
import json
import subprocess
from dataclasses import replace

import pytest

from dihera import RenderSettings, load_job, plan_membership, render
from dihera.constants import ENV_STRING_MARGIN, MAX_ENV_STRING
from dihera.env_limits import env_string_bytes, max_replicas, membership_env_bound, nodes_bytes, value_fits
from dihera.errors import OutOfBounds
from dihera.membership import Membership
from dihera.naming import Addressing
from dihera.render.env import membership_lists, node_lists
from dihera.render.providers import membership_data
from dihera.scaling import ScaleRequest, plan_scale
from dihera.schema import dijob_schema
from dihera.validation import MAX_HOSTNAME, validate
from tests.builders import job, task

#: Kubernetes' limit on a namespace name (a DNS label); not in the DIJob schema.
from tests.rendered import container_env, replica_template

MAX_NAMESPACE = 63


def _schema_max() -> tuple[int, int, int]:
    """The DIJob schema's maxima: job name length, task name length, replicas of one task."""
    schema = dijob_schema()
    item = schema["properties"]["spec"]["properties"]["tasks"]["items"]["properties"]
    return (
        schema["properties"]["metadata"]["properties"]["name"]["maxLength"],
        item["name"]["maxLength"],
        item["replicas"]["maximum"],
    )


def _longest_job_name(top: dict[str, int]) -> str:
    """The longest job name the schema and the hostname rule allow beside tasks (name -> highest index)."""
    max_job, _, _ = _schema_max()
    return "j" * min(max_job, *(MAX_HOSTNAME - len(f"-{t}-{i}") for t, i in top.items()))


def _big_job(name: str, collectors: int, collector_name: str | None = None, **spec: object) -> dict:
    manifest = job(
        task("learner"),
        task("collector", name=collector_name, replicas=collectors),
        task("evaluator"),
        name=name,
        **spec,
    )
    manifest["metadata"]["namespace"] = "n" * MAX_NAMESPACE
    return manifest


def test_the_limit_is_the_kernels() -> None:
    """``NAME=value`` of MAX_ENV_STRING - 1 bytes (NUL included: MAX_ENV_STRING) execs; one byte more does not."""
    name = "DI_NODES"
    fits = "x" * (MAX_ENV_STRING - len(name) - 2)
    assert env_string_bytes(name, fits) == MAX_ENV_STRING
    subprocess.run(["/bin/true"], env={name: fits}, check=True)
    with pytest.raises(OSError) as err:
        subprocess.run(["/bin/true"], env={name: fits + "x"}, check=True)
    assert err.value.errno == errno.E2BIG


def _shortest(membership: Membership) -> Membership:
    """``membership`` with every replica but index 0 of each task given a short hostname: its shortest form."""
    return Membership(membership.generation, tuple(replace(r, short=r.index != 0) for r in membership.replicas))


def test_the_bound_covers_every_rendered_membership() -> None:
    """Splits among tasks, vacant ranks left by named removals, a tensorflow cluster: never past the bound
    in the shortest form (short hostnames but for index 0), and the rendered form fits."""
    settings = RenderSettings()
    tf = {"name": "tensorflow", "allowScaling": True}
    worker = {**task("none", name="w", replicas=120), "envProvider": {**tf, "role": "worker"}}
    cases = [
        job(task("learner"), task("collector", replicas=30), task("evaluator"), name="a"),
        job(worker, name="tf"),
        job(task("none", name="x", replicas=3), task("none", name="y" * 40, replicas=11), name="b" * 18),
    ]
    for manifest in cases:
        j = load_job(manifest)
        first = plan_membership(j, None)
        big = max(j.tasks, key=lambda t: t.replicas)
        gone = [(big.name, i) for i in range(1, 8, 2)]
        holes = plan_membership(j.with_replicas(big.name, big.replicas - len(gone)), first, remove=gone)
        assert "127.0.0.1" in node_lists(j, holes, settings)["DI_NODES"].split(",")  # vacant ranks
        for rendered in (first, holes):
            assert not any(r.short for r in rendered.replicas)  # small jobs: long hostnames only
            assert all(value_fits(v) for v in membership_lists(j, rendered, settings)[1].values())
            membership = _shortest(rendered)
            tf_tasks = [t.name for t in j.tasks if t.env_provider is not None]
            bound = membership_env_bound(j.name, {t.name: t.replicas for t in j.tasks}, 0, tf_tasks)
            data = node_lists(j, membership, settings, Addressing.HOSTNAME)
            data.update(membership_data(j, membership, settings, Addressing.HOSTNAME))
            assert max(len(v) for v in data.values()) + ENV_STRING_MARGIN <= bound
            assert nodes_bytes(j.name, membership) == len(data["DI_NODES"])


@pytest.mark.parametrize("collector_name", [None, "c"])
def test_the_worst_case_2000_replica_job_renders_every_env_string_below_the_limit(collector_name: str | None) -> None:
    """1 learner + 2,000 collectors + 1 evaluator, the longest job name the hostname allows and a 63-character
    namespace: every variable of the largest rank's container is an environment string Linux execs."""
    top_task = collector_name or "collector"
    name = _longest_job_name({"learner": 0, top_task: 1999, "evaluator": 0})
    rendered = render(load_job(_big_job(name, 2000, collector_name)))
    form, _ = membership_lists(load_job(_big_job(name, 2000, collector_name)), rendered.membership, RenderSettings())
    assert form is Addressing.HOSTNAME  # FQDNs (217 bytes each here) would be 440 KiB
    env = container_env(rendered, f"{top_task}-1999")
    assert MAX_HOSTNAME in (len(f"{name}-{top_task}-1999"), len(f"{name}-evaluator-0"))
    nodes = env["DI_NODES"].split(",")
    assert len(nodes) == 2002 and nodes[int(env["DI_RANK"])] == f"{name}-{top_task}-1999"
    sizes = {k: env_string_bytes(k, v) for k, v in env.items()}
    assert max(sizes.values()) < MAX_ENV_STRING, sizes
    assert not any(r.short for r in rendered.membership.replicas)  # 2,002 long bare hostnames fit
    assert membership_env_bound(name, {"learner": 1, top_task: 2000, "evaluator": 1}) <= sizes["DI_NODES"]
    # the bare names resolve through the search domain the pod gets
    patch = json.loads(replica_template(rendered, f"{top_task}-1999")["podSpecPatch"])
    assert patch["dnsConfig"]["searches"] == [f"di-{name}.{'n' * MAX_NAMESPACE}.svc.cluster.local"]


def test_the_form_is_the_longest_that_fits() -> None:
    """Small jobs keep DI-orchestrator's FQDNs; larger ones get <hostname>.di-<job>, then bare hostnames."""
    settings = RenderSettings()
    for collectors, form in ((3, Addressing.FQDN), (800, Addressing.SERVICE), (2000, Addressing.HOSTNAME)):
        j = load_job(_big_job("dqn" + "x" * 30, collectors))
        chosen, data = membership_lists(j, plan_membership(j, None), settings)
        assert chosen is form, (collectors, chosen)
        assert all(value_fits(v) for v in data.values())
        first = data["DI_NODES"].split(",")[0]
        assert (
            first
            == {
                Addressing.FQDN: f"{j.name}-learner-0.di-{j.name}.{j.namespace}.svc.cluster.local",
                Addressing.SERVICE: f"{j.name}-learner-0.di-{j.name}",
                Addressing.HOSTNAME: f"{j.name}-learner-0",
            }[form]
        )


def test_every_job_validation_accepts_fits_over_the_schemas_maxima() -> None:
    """For the longest names the schema allows at each index width, the largest total validation accepts
    renders within the limit and one replica more is refused, naming the field; the schema's maximum
    replicas is refused outright."""
    _, max_task, max_replicas_schema = _schema_max()
    for task_name in ("c", "collector", "t" * max_task):
        for top in (9, 99, 999, 9999):
            name = _longest_job_name({task_name: top})
            fit = max_replicas(name, {task_name: 1})
            assert membership_env_bound(name, {task_name: 1}, fit) <= MAX_ENV_STRING
            assert membership_env_bound(name, {task_name: 1}, fit + 1) > MAX_ENV_STRING
            manifest = job(task("none", name=task_name), name=name)
            if len(f"{name}-{task_name}-{fit}") <= MAX_HOSTNAME:  # the hostname rule allows one more
                assert not validate({**manifest, "spec": {**manifest["spec"], "maxReplicas": fit}})
                problems = validate({**manifest, "spec": {**manifest["spec"], "maxReplicas": fit + 1}})
                assert [p.path for p in problems] == ["spec.maxReplicas"], problems
            else:  # every total the hostname rule allows fits
                assert fit >= 10 ** len(str(top))
    problems = validate(_big_job("dqn", max_replicas_schema))
    assert [p.path for p in problems] == ["spec.tasks"]
    assert "Linux execs no process" in problems[0].message and "at most" in problems[0].message


def test_the_2000_replica_job_grows_to_2100_with_names_that_fit_and_is_refused_past_them() -> None:
    """Long bare hostnames fit 2,102 replicas up to a 46-character job name beside "collector"; with the
    longest job name the hostname rule allows there (48), the replicas that join past what fits get short
    hostnames: the job is admitted and grows to 2,100 collectors. A total that does not fit even with short
    hostnames is refused at admission, naming the field and how many fit."""
    for length in (46, 48):
        manifest = _big_job("j" * length, 2000, maxReplicas=2102)
        assert not validate(manifest)
        j = load_job(manifest).with_replicas("collector", 2100)
        membership = plan_membership(j, plan_membership(load_job(manifest), None))
        _, data = membership_lists(j, membership, RenderSettings())
        assert max(env_string_bytes(k, v) for k, v in data.items()) < MAX_ENV_STRING
        short = [r for r in membership.replicas if r.short]
        assert bool(short) is (length == 48)
        for r in short:  # the long names of the replicas before it fitted, its own did not
            assert r.task == "collector" and r.rank == max(x.rank for x in membership.replicas if not x.short) + 1 + (
                short.index(r)
            )
    name = _longest_job_name({"collector": 9999})
    fit = max_replicas(name, {"learner": 1, "collector": 1, "evaluator": 1})
    refused = validate(_big_job(name, 2000, maxReplicas=fit + 1))
    assert [p.path for p in refused] == ["spec.maxReplicas"]
    assert f"at most {fit} replicas fit" in refused[0].message
    assert not validate(_big_job(name, 2000, maxReplicas=fit))


def test_a_scale_up_past_the_limit_is_refused_and_a_scale_down_never_is() -> None:
    """Through the di-server or the CLI a request is planned on the exact membership (indices of retired
    replicas are never reused, so they can outgrow the spec's count): refused past the limit, nothing changed."""
    name = _longest_job_name({"learner": 0, "collector": 2099, "evaluator": 0})
    j = load_job(_big_job(name, 2000))
    rendered = render(j)
    with pytest.raises(OutOfBounds) as err:
        plan_scale(j, rendered.membership, rendered.workflow, ScaleRequest.add("collector", 300))
    assert "DI_NODES would be" in str(err.value) and "nothing changed" in str(err.value)
    fits = plan_scale(j, rendered.membership, rendered.workflow, ScaleRequest.add("collector", 100))
    assert len(fits.membership.replicas) == 2102
    assert nodes_bytes(name, fits.membership) <= MAX_ENV_STRING - ENV_STRING_MARGIN
    down = plan_scale(j, rendered.membership, rendered.workflow, ScaleRequest.set_replicas("collector", 1900))
    assert len(down.membership.replicas) == 1902


def test_the_search_domain_is_added_to_the_users_dns_config() -> None:
    """The user's dnsConfig (options, nameservers, own searches) is kept; the job's domain comes last, once."""
    domain = "di-dqn.default.svc.cluster.local"
    user = {"options": [{"name": "ndots", "value": "2"}], "searches": [domain, "corp.example"]}
    rendered = render(load_job(job(task("learner", dnsConfig=user), name="dqn")))
    patch = json.loads(replica_template(rendered, "learner-0")["podSpecPatch"])
    assert patch["dnsConfig"] == {
        "options": [{"name": "ndots", "value": "2"}],
        "searches": ["corp.example", domain],
    }


def test_a_running_job_is_not_failed_by_an_edit_past_the_limit() -> None:
    """The rule refuses a new job; once the controller took the job up (status.phase), an edit past the limit
    is refused by the scaling plan (nothing changed) instead of making the stored job invalid."""
    too_big = _big_job(_longest_job_name({"collector": 8999}), 9000)
    assert [p.path for p in validate(too_big)] == ["spec.tasks"]
    assert not validate({**too_big, "status": {"phase": "Running"}})
