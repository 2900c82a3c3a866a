"""The CRD's CEL rules and their Python twins (dihera/validation/cel.py) cannot drift apart: every
``x-kubernetes-validations`` rule of the schema has exactly one twin in the table and every ``cel_*`` function is
in it, and each twin refuses a job breaking its rule under the rule's field path, through ``validate`` too."""

from __future__ import annotations

import importlib
import inspect
import pkgutil
import re
from collections import Counter
from collections.abc import Callable, Iterator
from typing import Any

import pytest

import dihera.validation
from dihera.errors import Problem
from dihera.schema import dijob_schema
from dihera.validation import apply_defaults, validate
from dihera.validation.cel import CEL_TWINS, CEL_TWINS_ELSEWHERE, CelTwin, twin_problems
from dihera.validation.structure import Defaulted
from tests.builders import job, task


def schema_rules(node: Any = None, at: str = "") -> Iterator[tuple[str, str, str]]:
    """``(node, message, fieldPath)`` of every CEL rule of the DIJob schema; ``node`` as the table writes it."""
    node = dijob_schema() if node is None else node
    for rule in node.get("x-kubernetes-validations", []):
        yield at, rule["message"], rule.get("fieldPath", "")
    for key, sub in node.get("properties", {}).items():
        yield from schema_rules(sub, f"{at}.{key}" if at else key)
    if isinstance(node.get("items"), dict):
        yield from schema_rules(node["items"], f"{at}[]")


def listed() -> list[tuple[str, str]]:
    return [(t.node, t.message) for t in CEL_TWINS] + [(t.node, t.message) for t in CEL_TWINS_ELSEWHERE]


def test_every_rule_of_the_schema_has_exactly_one_twin_and_every_twin_a_rule() -> None:
    rules = Counter((node, message) for node, message, _ in schema_rules())
    twins = Counter(listed())
    assert len(rules) >= 13  # the walk reaches the DIJob's, spec's, a checkpoint's and a task's rules
    assert not rules - twins, f"CEL rules without a twin in dihera/validation/cel.py: {sorted(rules - twins)}"
    assert not twins - rules, f"twins of no CEL rule of the schema (message or place changed?): {sorted(twins - rules)}"
    assert all(n == 1 for n in twins.values()), f"rules listed twice: {[k for k, n in twins.items() if n > 1]}"


def cel_functions() -> set[Callable[..., Any]]:
    """Every function named ``cel_*`` defined in a module of dihera.validation."""
    found = set()
    for info in pkgutil.iter_modules(dihera.validation.__path__, "dihera.validation."):
        module = importlib.import_module(info.name)
        found |= {
            f for name, f in inspect.getmembers(module, inspect.isfunction)
            if name.startswith("cel_") and f.__module__ == module.__name__
        }  # fmt: skip
    return found


def test_every_cel_function_is_the_twin_of_one_rule() -> None:
    twins = [t.twin for t in CEL_TWINS]
    assert len(set(twins)) == len(twins), "one function is the twin of two rules"
    assert set(twins) == cel_functions()
    assert all(t.why and callable(t.twin) for t in CEL_TWINS_ELSEWHERE)


def _task(type_: str, name: str, **fields: Any) -> dict[str, Any]:
    return {**task(type_, name), **fields}


#: A job breaking each rule, by the rule's twin (or, for a rule checked elsewhere, its message's start).
BREAKING: dict[str, dict[str, Any]] = {
    "cel_hostname_length": job(task("learner"), name="j" * 60),
    "cel_unique_task_names": job(task("none", "a"), task("none", "a")),
    "cel_one_task_per_singleton_type": job(task("learner", "l1"), task("learner", "l2")),
    "cel_min_not_above_max": job(task("learner"), minReplicas=3, maxReplicas=2),
    "cel_total_at_least_min": job(task("learner"), minReplicas=2),
    "cel_total_at_most_max": job(task("learner", replicas=3), maxReplicas=2),
    "cel_success_targets_exist": job(task("learner"), successPolicy={"targetTasks": ["nope"]}),
    "cel_checkpoint_tasks_exist": job(task("learner"), checkpoint={"tasks": ["nope"]}),
    "cel_checkpoint_size_above_zero": job(task("learner"), checkpoint={"size": "0Gi"}),
    "cel_none_task_named": job(task("learner"), task("none")),
    "cel_drop_replica_allows_scaling": job(
        _task("none", "w", failurePolicy="DropReplica", envProvider={"name": "torch"})
    ),
    "cel_autoscaling_collector_only": job(_task("learner", "learner", autoscaling={"maxReplicas": 2})),
    "cel_autoscaling_min_not_above_max": job(
        task("learner"), _task("collector", "collector", autoscaling={"minReplicas": 3, "maxReplicas": 2})
    ),
    "cel_autoscaling_data_wait_in_range": job(
        task("learner"),
        _task("collector", "collector", autoscaling={"maxReplicas": 2, "targetDataWaitFraction": 1}),
    ),
    "cel_autoscaling_replay_ratio_above_zero": job(
        task("learner"), _task("collector", "collector", autoscaling={"maxReplicas": 2, "targetReplayRatio": 0})
    ),
    "artifacts[].task": job(task("learner"), artifacts=[{"name": "out", "path": "/tmp/out", "task": "nope"}]),
    "envProvider.role": job(_task("none", "w", envProvider={"name": "tensorflow", "role": "scheduler"})),
}


def field_path(node: str, message: str) -> re.Pattern[str]:
    """Where the API server reports the rule (its node and fieldPath), as a pattern of a problem's path."""
    (relative,) = [f for n, m, f in schema_rules() if (n, m) == (node, message)]
    where = ".".join(p for p in (node, relative.lstrip(".")) if p)
    return re.compile(re.escape(where).replace(r"\[\]", r"\[\d+\]") + r"($|[.\[])")


def _under(problems: list[Problem], pattern: re.Pattern[str]) -> list[Problem]:
    return [p for p in problems if pattern.match(p.path)]


@pytest.mark.parametrize("rule", CEL_TWINS, ids=lambda t: t.twin.__name__)
def test_a_twin_refuses_a_job_breaking_its_rule_under_the_rule_s_field_path(rule: CelTwin) -> None:
    manifest = BREAKING[rule.twin.__name__]
    defaulted = apply_defaults(manifest)
    job_ = Defaulted(defaulted["metadata"]["name"], defaulted["spec"])
    found = rule.twin(job_)
    assert found, f"{rule.twin.__name__} accepts a job breaking {rule.message!r}"
    assert _under(found, field_path(rule.node, rule.message)) == found
    assert set(found) <= set(twin_problems(job_)) and set(found) <= set(validate(manifest))


@pytest.mark.parametrize("rule", CEL_TWINS_ELSEWHERE, ids=lambda t: t.message.split(" ")[0])
def test_validate_refuses_a_job_breaking_a_rule_checked_elsewhere(rule: Any) -> None:
    problems = validate(BREAKING[rule.message.split(" ")[0]])
    assert _under(problems, field_path(rule.node, rule.message)), problems


#: minReplicas above maxReplicas: no total of replicas is within both.
ALSO_BROKEN = {"cel_min_not_above_max": ["cel_total_at_least_min"]}


def test_the_jobs_breaking_a_rule_are_otherwise_valid_in_their_twin_s_eyes() -> None:
    """Each breaking job breaks its own rule only, of all the twins (so each example proves its own twin)."""
    for rule in CEL_TWINS:
        defaulted = apply_defaults(BREAKING[rule.twin.__name__])
        job_ = Defaulted(defaulted["metadata"]["name"], defaulted["spec"])
        others = [t.twin.__name__ for t in CEL_TWINS if t is not rule and t.twin(job_)]
        assert others == ALSO_BROKEN.get(rule.twin.__name__, []), f"{rule.twin.__name__}'s job breaks {others} too"
