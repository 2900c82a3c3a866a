"""Sweeps: the search space, the trials' DIJobs, the Workflow, and the results table (pure)."""

from __future__ import annotations

import json
import math
import re
import statistics

import pytest
import yaml

from dihera import experiment as ex
from dihera.kube.experiments import trial_result
from dihera.sweeps import Goal, SweepSpaceError, TrialResult
from dihera.sweeps.results import best, by_configuration, csv_table, markdown_table, t975
from dihera.sweeps.space import configurations, plan_trials
from dihera.sweeps.sweep import parse_value, value_text

IMAGE = "dihera:0.1.0"


def job(name: str = "probe", namespace: str = "exp") -> ex.DIJob:
    return ex.dijob(name, [ex.task("learner", image="py:3", command=["python3", "-c", "1"], env={"A": "1"})],
                    namespace=namespace)  # fmt: skip


def test_a_grid_is_every_combination_the_last_parameter_fastest() -> None:
    space = {"lr": ex.choice(0.1, 0.01), "layers": ex.int_range(1, 4, 2)}
    assert configurations(space, ex.grid()) == [
        {"lr": 0.1, "layers": 1}, {"lr": 0.1, "layers": 3}, {"lr": 0.01, "layers": 1}, {"lr": 0.01, "layers": 3},
    ]  # fmt: skip


def test_trials_repeat_each_configuration_over_the_seeds() -> None:
    trials = plan_trials({"lr": ex.choice(0.1, 0.01)}, ex.grid(), [7, 8])
    assert [(t.index, dict(t.values), t.seed) for t in trials] == [
        (0, {"lr": 0.1}, 7), (1, {"lr": 0.1}, 8), (2, {"lr": 0.01}, 7), (3, {"lr": 0.01}, 8),
    ]  # fmt: skip


def test_random_search_is_the_same_for_the_same_seed_and_stays_in_bounds() -> None:
    space = {"lr": ex.loguniform(1e-5, 1e-1), "gamma": ex.uniform(0.9, 0.999), "n": ex.int_range(1, 10),
             "opt": ex.choice("adam", "sgd")}  # fmt: skip
    first, again = configurations(space, ex.random_search(200, seed=3)), configurations(space, ex.random_search(200, 3))
    assert first == again and first != configurations(space, ex.random_search(200, seed=4))
    for c in first:
        assert 1e-5 <= c["lr"] <= 1e-1 and 0.9 <= c["gamma"] <= 0.999 and c["n"] in range(1, 10)
        assert c["opt"] in ("adam", "sgd")
    # log-uniform: about as many draws in each decade
    decades = [math.floor(math.log10(c["lr"])) for c in first]
    assert all(25 <= decades.count(d) <= 75 for d in (-5, -4, -3, -2)), decades


@pytest.mark.parametrize(
    ("space", "search", "seeds", "message"),
    [
        ({"lr": ex.uniform(0.1, 0.2)}, ex.grid(), [0], "space.lr: uniform is continuous: a grid needs choice"),
        ({"LR": ex.choice(1)}, ex.grid(), [0], "space.LR: a parameter's name must match"),
        ({}, ex.grid(), [0], "space: name at least one parameter"),
        ({"lr": ex.choice(1)}, ex.grid(), [], "seeds: give at least one seed"),
        ({"lr": ex.choice(1)}, ex.grid(), [1, 1], "seeds: [1, 1] repeats a seed"),
    ],
)
def test_a_space_that_cannot_make_trials_is_refused_naming_the_field(
    space: dict[str, object], search: object, seeds: list[int], message: str
) -> None:
    with pytest.raises(SweepSpaceError, match=message.replace("[", r"\[").replace("]", r"\]")):
        plan_trials(space, search, seeds)  # type: ignore[arg-type]


@pytest.mark.parametrize(
    ("build", "message"),
    [
        (lambda: ex.choice(), "choice: give at least one value"),
        (lambda: ex.choice(float("nan")), "choice: nan is not a finite number"),
        (lambda: ex.int_range(3, 3), r"int_range\(3, 3, 1\): need start < stop"),
        (lambda: ex.uniform(1, 0), r"uniform\(1, 0\): need finite low < high"),
        (lambda: ex.loguniform(0, 1), r"loguniform\(0, 1\): need 0 < low < high"),
        (lambda: ex.random_search(0), "random: count 0 must be at least 1"),
    ],
)
def test_a_bad_dimension_is_refused_naming_it(build: object, message: str) -> None:
    with pytest.raises(SweepSpaceError, match=message):
        build()  # type: ignore[operator]


def test_values_reach_the_trials_as_env_labels_and_annotations() -> None:
    sweep = ex.sweep("lr-sweep", job(), {"lr": ex.choice(0.001), "opt": ex.choice("adam"), "big": ex.choice(True)},
                     seeds=[5], image=IMAGE, queue="team-a")  # fmt: skip
    (trial,) = sweep.trials
    manifest = sweep.trial_manifest(trial)
    meta = manifest["metadata"]
    assert meta["name"] == "lr-sweep-t00" and meta["namespace"] == "exp"
    assert meta["labels"] == {"diengine/experiment": "lr-sweep", "diengine/trial": "0",
                              "kueue.x-k8s.io/queue-name": "team-a"}  # fmt: skip
    assert meta["annotations"] == {"diengine/param.lr": "0.001", "diengine/param.opt": "adam",
                                   "diengine/param.big": "true", "diengine/seed": "5",
                                   "diengine/configuration": "0"}  # fmt: skip
    env = manifest["spec"]["tasks"][0]["template"]["spec"]["containers"][0]["env"]
    assert env == [
        {"name": "A", "value": "1"}, {"name": "DIHERA_PARAM_LR", "value": "0.001"},
        {"name": "DIHERA_PARAM_OPT", "value": "adam"}, {"name": "DIHERA_PARAM_BIG", "value": "true"},
        {"name": "DIHERA_SEED", "value": "5"}, {"name": "DIHERA_TRIAL", "value": "0"},
    ]  # fmt: skip
    assert job().to_manifest()["spec"]["tasks"][0]["template"]["spec"]["containers"][0]["env"] == [
        {"name": "A", "value": "1"}
    ], "the template job is not changed"


@pytest.mark.parametrize("value", [True, 3, -2, 0.001, 1e-05, 2.5e10, -0.5, "adam", "a/b:c", "1_000", "nan", "inf"])
def test_a_value_survives_its_text(value: object) -> None:
    back = parse_value(value_text(value))  # type: ignore[arg-type]
    assert back == value and type(back) is type(value)


def test_a_trial_starts_even_if_the_template_job_is_suspended_and_init_containers_get_the_values() -> None:
    template = {"spec": {"initContainers": [{"name": "prep", "image": "py:3"}],
                         "containers": [{"name": "main", "image": "py:3"}]}}  # fmt: skip
    suspended = ex.dijob("probe", [ex.task("learner", template=template)], namespace="exp", suspend=True)
    sweep = ex.sweep("s", suspended, {"lr": ex.choice(0.5)}, image=IMAGE)
    manifest = sweep.trial_manifest(sweep.trials[0])
    assert "suspend" not in manifest["spec"]
    spec = manifest["spec"]["tasks"][0]["template"]["spec"]
    assert {"name": "DIHERA_PARAM_LR", "value": "0.5"} in spec["initContainers"][0]["env"]


def test_a_sweep_is_refused_before_anything_is_made_naming_the_field() -> None:
    with pytest.raises(SweepSpaceError, match="name: 'Bad_Name' must match"):
        ex.sweep("Bad_Name", job(), {"lr": ex.choice(1)}, image=IMAGE)
    for metric in ("eval-return", "_x", "phase"):
        with pytest.raises(SweepSpaceError, match=f"metric: '{metric}' must match"):
            ex.sweep("s", job(), {"lr": ex.choice(1)}, image=IMAGE, metric=metric)
    with pytest.raises(SweepSpaceError, match="parallelism: 0 must be at least 1"):
        ex.sweep("s", job(), {"lr": ex.choice(1)}, image=IMAGE, parallelism=0)
    with pytest.raises(SweepSpaceError, match=re.escape("space.opt: 'a\"b': quotes")):
        ex.sweep("s", job(), {"opt": ex.choice('a"b')}, image=IMAGE)
    with pytest.raises(ValueError, match="'best'"):
        ex.sweep("s", job(), {"lr": ex.choice(1)}, image=IMAGE, goal="best")
    with pytest.raises(SweepSpaceError, match="queue: 'not a label!' is not a label value"):
        ex.sweep("s", job(), {"lr": ex.choice(1)}, image=IMAGE, queue="not a label!")


def test_the_workflow_has_one_resource_node_per_trial_bounded_by_parallelism_then_the_summary() -> None:
    sweep = ex.sweep("lr-sweep", job(), {"lr": ex.choice(0.01, 0.5)}, seeds=[0, 1], parallelism=2, image=IMAGE,
                     service_account="sweeper", node_selector={"a": "b"},
                     tolerations=[{"key": "k", "operator": "Exists"}])  # fmt: skip
    wf = ex.sweep_workflow(sweep).to_dict()
    assert wf["metadata"]["name"] == "lr-sweep" and wf["metadata"]["namespace"] == "exp"
    spec = wf["spec"]
    assert spec["serviceAccountName"] == "sweeper" and "parallelism" not in spec
    assert spec["nodeSelector"] == {"a": "b"} and spec["tolerations"] == [{"key": "k", "operator": "Exists"}]
    dag, trials, trial, summary = spec["templates"]
    assert dag["dag"]["tasks"] == [
        {"name": "trials", "template": "trials"}, {"name": "summary", "template": "summary", "dependencies": ["trials"]}
    ]  # fmt: skip
    assert trials["parallelism"] == 2, "the trials' DAG bounds the trials live at a time"
    tasks = trials["dag"]["tasks"]
    names = [t["name"] for t in tasks]
    assert names == ["t00-lr-0p01-s0", "t01-lr-0p01-s1", "t02-lr-0p5-s0", "t03-lr-0p5-s1"], names
    assert all(t["continueOn"] == {"failed": True, "error": True} for t in tasks)
    args = {p["name"]: p["value"] for p in tasks[3]["arguments"]["parameters"]}
    assert args == {"job": "lr-sweep-t03", "trial": "3", "seed": "1", "configuration": "1", "param_lr": "0.5"}
    resource = trial["resource"]
    assert resource["action"] == "create" and resource["setOwnerReference"] is True
    # Argo's executor checks the DIJob's phase every second (its default: every 5 s)
    env = json.loads(trial["podSpecPatch"])["containers"][0]["env"]
    assert env == [{"name": "RESOURCE_STATE_CHECK_INTERVAL", "value": "1s"}]
    assert resource["successCondition"] == "status.phase == Succeeded"
    assert resource["failureCondition"] == "status.phase in (Failed,Suspended)"
    # the template, its placeholders substituted as Argo does, is trial 3's DIJob exactly, labelled with the
    # name of the pod that creates it (the Argo UI's pod link on the trial node finds the DIJob by it)
    text = resource["manifest"].replace("{{pod.name}}", "lr-sweep-trial-3141")
    for name, value in args.items():
        text = text.replace(f"{{{{inputs.parameters.{name}}}}}", value)
    expected = sweep.trial_manifest(sweep.trials[3])
    expected["metadata"]["labels"]["diengine/trial-pod"] = "lr-sweep-trial-3141"
    assert json.loads(text) == expected
    assert [p["valueFrom"]["jsonPath"] for p in trial["outputs"]["parameters"]] == [
        "{.status.phase}", "{.status.profilings.evalReturn}"
    ]  # fmt: skip
    command = summary["container"]["command"]
    assert command[:3] == ["dihera", "experiment", "summarize"] and summary["container"]["image"] == IMAGE
    assert summary["container"]["securityContext"]["readOnlyRootFilesystem"] is True


def test_the_summary_stores_its_plot_and_tables_as_unarchived_artifacts_only_when_asked() -> None:
    def summary(**kw: object) -> dict[str, object]:
        sweep = ex.sweep("s", job(), {"lr": ex.choice(0.01)}, image=IMAGE, **kw)  # type: ignore[arg-type]
        (template,) = [t for t in ex.sweep_workflow(sweep).to_dict()["spec"]["templates"] if t["name"] == "summary"]
        return template["outputs"]  # type: ignore[no-any-return]

    assert "artifacts" not in summary(), "no artifact repository needed unless asked"
    stored = {a["name"]: (a["path"], a["archive"]) for a in summary(artifacts=True)["artifacts"]}
    assert stored == {
        "plot": ("/tmp/results/trials.svg", {"none": {}}),
        "table": ("/tmp/results/results.md", {"none": {}}),
        "table-csv": ("/tmp/results/results.csv", {"none": {}}),
    }, stored
    keys = {a["name"]: a["s3"]["key"] for a in summary(artifacts=True)["artifacts"]}  # whatever the key format
    prefix = "dihera/exp/s/{{workflow.uid}}/{{pod.name}}"
    assert keys == {"plot": f"{prefix}/plot/trials.svg", "table": f"{prefix}/table/results.md",
                    "table-csv": f"{prefix}/table-csv/results.csv"}, keys  # fmt: skip


def test_the_workflow_is_deterministic() -> None:
    def build() -> str:
        sweep = ex.sweep("r", job(), {"lr": ex.loguniform(1e-4, 1e-1)}, search=ex.random_search(5, seed=1),
                         seeds=[0, 1, 2], image=IMAGE)  # fmt: skip
        return yaml.safe_dump(ex.sweep_workflow(sweep).to_dict())

    assert build() == build()


def results() -> list[TrialResult]:
    rows = [(0, 0.01, 0, 99.0), (1, 0.01, 1, 100.0), (2, 0.5, 0, 50.0), (3, 0.5, 1, None)]
    return [
        TrialResult(i, f"s-t{i}", {"lr": lr}, seed, "Failed" if metric is None else "Succeeded", metric, 10.0 + i)
        for i, lr, seed, metric in rows
    ]


def test_the_interval_is_students_t_over_the_seeds() -> None:
    low, high = by_configuration(results())
    assert (low.reported, low.trials, low.mean) == (2, 2, 99.5)
    assert low.half_width == pytest.approx(12.706 * statistics.stdev([99, 100]) / math.sqrt(2))
    assert (high.reported, high.mean, high.half_width) == (1, 50.0, None), "one seed: no interval"
    assert t975(1) == 12.706 and t975(30) == 2.042 and t975(100) == 1.96
    assert best([low, high], Goal.MAXIMIZE) is low and best([low, high], Goal.MINIMIZE) is high
    assert best(by_configuration(results()[3:]), Goal.MAXIMIZE) is None


def test_configurations_are_grouped_by_their_index_not_their_values() -> None:
    twice = [TrialResult(i, f"s-t{i}", {"n": 1}, 0, "Succeeded", float(i), 1.0, configuration=i) for i in range(2)]
    assert [(c.trials, c.mean) for c in by_configuration(twice)] == [(1, 0.0), (1, 1.0)]


def test_the_tables() -> None:
    assert csv_table(results(), "evalReturn").splitlines() == [
        "trial,job,lr,seed,evalReturn,phase,seconds",
        "0,s-t0,0.01,0,99,Succeeded,10", "1,s-t1,0.01,1,100,Succeeded,11",
        "2,s-t2,0.5,0,50,Succeeded,12", "3,s-t3,0.5,1,,Failed,13",
    ]  # fmt: skip
    table = markdown_table(results(), "evalReturn", Goal.MAXIMIZE)
    assert "| 3 | 0.5 | 1 |  | Failed | 13 |" in table
    assert "| 0.01 | 2/2 | 99.5 | 93.15 .. 105.9 |" in table and "| 0.5 | 1/2 | 50 |  |" in table
    assert table.endswith('best (maximize mean evalReturn): {"lr": 0.01}\n')


def test_a_trial_is_read_back_from_its_dijob() -> None:
    dijob = {
        "metadata": {"name": "s-t2", "labels": {"diengine/trial": "2"},
                     "annotations": {"diengine/param.lr": "0.5", "diengine/param.opt": "adam", "diengine/seed": "1"}},
        "status": {"phase": "Succeeded", "profilings": {"evalReturn": 187, "other": "x"},
                   "startTime": "2026-11-27T10:00:00Z", "completionTimestamp": "2026-11-27T10:01:30Z"},
    }  # fmt: skip
    assert trial_result(dijob, "evalReturn") == TrialResult(2, "s-t2", {"lr": 0.5, "opt": "adam"}, 1, "Succeeded",
                                                            187.0, 90.0)  # fmt: skip
    assert trial_result(dijob, "other").metric is None and trial_result({"metadata": {}}, "m").phase == "Pending"
    dijob["status"]["profilings"]["evalReturnHistory"] = [[40, 20.5], [0, 9], ["x", 1], [80, 187]]
    assert trial_result(dijob, "evalReturn").history == ((0, 9.0), (40, 20.5), (80, 187.0)), "sorted, bad ones skipped"


def test_early_stopping_is_a_daemon_beside_the_trials() -> None:
    sweep = ex.sweep("s", job(), {"lr": ex.choice(0.01, 0.5)}, seeds=[0, 1], parallelism=2, image=IMAGE,
                     early_stopping=ex.median_stopping(min_iterations=5, min_trials=2))  # fmt: skip
    templates = {t["name"]: t for t in ex.sweep_workflow(sweep).to_dict()["spec"]["templates"]}
    assert [t["name"] for t in templates["sweep"]["dag"]["tasks"]] == ["early-stopping", "trials", "summary"]
    assert templates["sweep"]["dag"]["tasks"][0]["continueOn"] == {"failed": True, "error": True}
    stopper = templates["early-stopping"]
    assert stopper["daemon"] is True and stopper["container"]["image"] == IMAGE
    assert stopper["container"]["command"] == [
        "dihera", "experiment", "stop-trials", "--namespace", "exp", "--experiment", "s",
        "--workflow-uid", "{{workflow.uid}}", "--metric", "evalReturn", "--goal", "maximize",
        "--min-iterations", "5", "--min-trials", "2",
    ]  # fmt: skip
    with pytest.raises(ValueError, match="min_iterations 1 and min_trials 0 must be >= 1"):
        ex.median_stopping(min_trials=0)
    with pytest.raises(SweepSpaceError, match="early_stopping with queue 'q': a stopped trial is suspended"):
        ex.sweep("s", job(), {"lr": ex.choice(1)}, image=IMAGE, queue="q", early_stopping=ex.median_stopping())


def test_successive_halving_renders_its_rule_and_the_daemon_reads_it_back() -> None:
    from dihera.cli import build_parser
    from dihera.cli.experiments import stopping_rule
    from dihera.sweeps.stopping import MedianStopping, SuccessiveHalving

    for rule in (ex.successive_halving(min_iterations=40, reduction=2, min_trials=3), ex.median_stopping(7, 3)):
        sweep = ex.sweep("s", job(), {"lr": ex.choice(0.01, 0.5)}, image=IMAGE, early_stopping=rule)
        templates = {t["name"]: t for t in ex.sweep_workflow(sweep).to_dict()["spec"]["templates"]}
        command = templates["early-stopping"]["container"]["command"]
        assert stopping_rule(build_parser().parse_args(command[1:])) == rule, command
    assert ex.successive_halving(40, 2, 3).to_args() == [
        "--rule", "halving", "--min-iterations", "40", "--reduction", "2", "--min-trials", "3",
    ]  # fmt: skip
    assert isinstance(ex.successive_halving(), SuccessiveHalving) and isinstance(ex.median_stopping(), MedianStopping)
    with pytest.raises(ValueError, match="reduction 1 must be >= 2"):
        ex.successive_halving(reduction=1)
    with pytest.raises(ValueError, match="min_iterations 0 and min_trials 2 must be >= 1"):
        ex.successive_halving(min_iterations=0)


def test_successive_halving_rungs_grow_by_the_reduction() -> None:
    from dihera.sweeps.stopping import SuccessiveHalving

    rule = SuccessiveHalving(min_iterations=10, reduction=3)
    assert [rule.rungs(i) for i in (0, 9, 10, 29, 30, 90)] == [[], [], [10], [10], [10, 30], [10, 30, 90]]


AT_30 = [[(30, 50.0)], [(30, 60.0), (40, 61.0)], [(20, 99.0)]]  # the last did not reach iteration 30


@pytest.mark.parametrize(
    ("trial", "others", "ended", "goal", "decision"),
    [
        # at rung 10 among 50, 60: the cutoff of the best third of 20, 50, 60 is 53.33; 20 is below it
        ([(10, 20.0)], [[(10, 50.0)], [(10, 60.0)]], [], Goal.MAXIMIZE, (10, 53.33, 3)),
        ([(10, 55.0)], [[(10, 50.0)], [(10, 60.0)]], [], Goal.MAXIMIZE, (10, 56.67, 3)),  # not the best third
        ([(10, 65.0)], [[(10, 50.0)], [(10, 60.0)]], [], Goal.MAXIMIZE, None),  # the best: goes on
        # at iteration 35 judged at rung 30 on its best up to 30, against trials that reached 30
        ([(10, 5.0), (30, 70.0), (35, 1.0)], AT_30, [], Goal.MAXIMIZE, None),
        ([(10, 5.0), (30, 55.0), (35, 99.0)], AT_30, [], Goal.MAXIMIZE, (30, 56.67, 3)),
        # minimizing: the best third is the lowest
        ([(10, 20.0)], [[(10, 50.0)], [(10, 60.0)]], [], Goal.MINIMIZE, None),
        ([(10, 70.0)], [[(10, 50.0)], [(10, 60.0)]], [], Goal.MINIMIZE, (10, 56.67, 3)),
        # one other trial at the rung: fewer than min_trials; an ended trial counts with its final best
        ([(10, 20.0)], [[(10, 50.0)]], [], Goal.MAXIMIZE, None),
        ([(30, 20.0)], [[(30, 50.0)]], [[(10, 196.0)]], Goal.MAXIMIZE, (30, 98.67, 3)),
        ([(5, 1.0)], [[(10, 50.0)], [(10, 60.0)]], [], Goal.MAXIMIZE, None),  # before the first rung
        # past rung 30 before anyone else: still judged at rung 10, which others reached
        ([(10, 1.0), (30, 2.0)], [[(10, 50.0)], [(10, 60.0)], [(10, 70.0)]], [], Goal.MAXIMIZE, (10, 60.0, 4)),
    ],
)
def test_successive_halving_keeps_the_best_fraction_at_each_rung(
    trial: list[tuple[int, float]],
    others: list[list[tuple[int, float]]],
    ended: list[list[tuple[int, float]]],
    goal: Goal,
    decision: tuple[int, float, int] | None,
) -> None:
    from dihera.sweeps.stopping import SuccessiveHalving

    got = SuccessiveHalving(min_iterations=10, reduction=3, min_trials=2).decide(trial, others, goal, ended)
    assert (None if got is None else (got.iteration, round(got.threshold, 2), got.compared)) == decision, got
    if got is not None:
        reason = got.reason("evalReturn")
        assert reason.startswith(f"successive halving at rung {got.iteration}: best evalReturn "), reason
        assert reason.endswith(f"the cutoff of the best 1/3 of the {got.compared} trials at that rung"), reason


GOOD = [(10, 50.0), (20, 120.0), (30, 190.0), (40, 200.0)]
BETTER = [(10, 60.0), (20, 150.0), (30, 195.0), (40, 200.0)]


@pytest.mark.parametrize(
    ("trial", "others", "stop_at"),
    [
        ([(10, 10.0), (20, 15.0)], [GOOD, BETTER], 20),  # worse than both at iteration 20: median 135
        ([(10, 10.0), (20, 130.0)], [GOOD, BETTER], 20),  # 130 < median(120, 150) = 135
        ([(10, 10.0), (20, 140.0)], [GOOD, BETTER], None),  # better than the median at 20
        ([(10, 10.0), (20, 15.0)], [GOOD], None),  # one other trial: fewer than min_trials
        ([(10, 10.0), (20, 15.0)], [GOOD, [(10, 80.0)]], None),  # the second did not reach iteration 20
        ([(2, 1.0)], [GOOD, BETTER], None),  # before min_iterations
        ([], [GOOD, BETTER], None),  # nothing reported yet
        ([(10, 100.0), (20, 15.0)], [GOOD, [(10, 20.0), (20, 30.0)]], None),  # best so far 100 > median 75
        ([(0, 1.0), (10, 2.0)], [[(0, 5.0), (10, 50.0)], [(0, 9.0), (10, 60.0)]], 10),  # reports from iteration 0
    ],
)
def test_the_median_stopping_rule_compares_best_values_at_matching_iterations(
    trial: list[tuple[int, float]], others: list[list[tuple[int, float]]], stop_at: int | None
) -> None:
    from dihera.sweeps.stopping import MedianStopping

    decision = MedianStopping(min_iterations=5, min_trials=2).decide(trial, others, Goal.MAXIMIZE)
    assert (decision.iteration if decision else None) == stop_at, decision


@pytest.mark.parametrize(
    ("trial", "ended", "others", "stop_at"),
    [
        # both peers ended (at their stop value) before iteration 40: their final bests count there
        ([(20, 10.0), (40, 12.0)], [[(10, 60.0), (20, 196.0)], [(10, 50.0), (30, 197.0)]], [], 40),
        ([(20, 10.0), (40, 199.0)], [[(10, 60.0), (20, 196.0)], [(10, 50.0), (30, 197.0)]], [], None),
        # an ended peer's best up to the trial's iteration only, when it went beyond it
        ([(10, 55.0)], [[(10, 50.0), (20, 196.0)], [(10, 60.0), (20, 197.0)]], [], None),
        # a running peer short of iteration 40 is not compared there: one ended peer is too few
        ([(20, 10.0), (40, 12.0)], [[(20, 196.0)]], [[(10, 80.0)]], None),
        ([(20, 10.0), (40, 12.0)], [[(20, 196.0)]], [[(10, 80.0), (40, 90.0)]], 40),
        ([(20, 10.0), (40, 12.0)], [[]], [[(10, 80.0), (40, 90.0)]], None),  # an ended peer that never reported
        # a slower seed of a good setting, past where the fast ones ended: the stopped trials count too
        ([(400, 150.0), (720, 190.0)], [[(680, 200.0)], [(685, 199.0)], [(300, 10.0)], [(480, 34.0)]], [], None),
    ],
)
def test_an_ended_trial_counts_with_its_final_best_after_it_ended(
    trial: list[tuple[int, float]],
    ended: list[list[tuple[int, float]]],
    others: list[list[tuple[int, float]]],
    stop_at: int | None,
) -> None:
    from dihera.sweeps.stopping import MedianStopping

    decision = MedianStopping(min_iterations=5, min_trials=2).decide(trial, others, Goal.MAXIMIZE, ended)
    assert (decision.iteration if decision else None) == stop_at, decision


def test_trials_to_stop_from_their_dijobs() -> None:
    from dihera.sweeps.stopping import MedianStopping, trials_to_stop

    def dijob(phase: str, history: list[list[float]], stopped: bool = False) -> dict[str, object]:
        annotations = {"diengine/stopped": "earlier"} if stopped else {}
        return {"metadata": {"annotations": annotations},
                "status": {"phase": phase, "profilings": {"evalReturnHistory": history}}}  # fmt: skip

    jobs = {
        "t0": dijob("Succeeded", [[10, 50], [20, 120]]),
        "t1": dijob("Failed", [[10, 60], [20, 150]]),
        "t2": dijob("Running", [[10, 5], [20, 9]]),
        "t3": dijob("Running", [[10, 5], [20, 9]], stopped=True),
        "t4": dijob("Suspended", [[10, 5], [20, 9]]),
        "t5": dijob("Running", [[10, 55], [20, "x"], [True, 3]]),  # malformed points are skipped
        "t6": dijob("Running", [[10, 70], [20, 80], [30, 90]]),
    }
    decisions = trials_to_stop(jobs, "evalReturn", MedianStopping(min_iterations=5), Goal.MAXIMIZE)
    # t2 against the ended t0, t1, t3 and the others that reached iteration 20 (t4, t6; t5's point there is
    # malformed: it reached 10 only); t5 at 10 beats the median of 50, 60, 5, 5, 5, 70; t3 is stopped
    # already, t4 suspended; t6 at 30 against the ended t0, t1, t3 (their final bests 120, 150, 9)
    assert sorted(decisions) == ["t2", "t6"], decisions
    assert decisions["t2"].reason("evalReturn") == (
        "median stopping rule at iteration 20: best evalReturn 9 is worse than the median 80 of 5 other trials'"
        " best values up to that iteration"
    )
    assert (decisions["t6"].iteration, decisions["t6"].threshold, decisions["t6"].compared) == (30, 120, 3)
