"""``dihera convert``: older DIJob shapes become today's, every output validates, nothing is dropped silently."""

from __future__ import annotations

import io
from pathlib import Path
from typing import Any

import pytest
import yaml

from dihera.cli import main
from dihera.convert import KNOWN_API_VERSIONS, Counts, convert_documents
from dihera.validation import load_job, validate
from tests.builders.hostile_yaml import alias_line, nested_aliases

FIXTURES = Path(__file__).parent / "fixtures" / "convert"
#: DI-engine's old `ding -m dist` jobs are refused unless this flag is given (tests of other features pass it)
ALLOW = "--allow-v1alpha1-programs"


def _run(capsys: pytest.CaptureFixture[str], *args: str) -> tuple[int, list[dict[str, Any]], str]:
    code = main(["convert", *args])
    out, err = capsys.readouterr()
    return code, [d for d in yaml.safe_load_all(out) if d is not None], err


def _tasks(job: dict[str, Any]) -> dict[str, tuple[str, int]]:
    return {t["name"]: (t["type"], t["replicas"]) for t in job["spec"]["tasks"]}


def test_v1alpha1_counts_read_from_the_embedded_config(capsys: pytest.CaptureFixture[str]) -> None:
    code, (job,), err = _run(capsys, str(FIXTURES / "v1alpha1-counts-in-config.yaml"), ALLOW)
    assert code == 0 and validate(job) == []
    assert job["apiVersion"] == "diengine.opendilab.org/v2alpha1" and job["kind"] == "DIJob"
    assert job["metadata"] == {"name": "pong-dqn", "namespace": "rl", "labels": {"team": "rl"}}
    assert _tasks(job) == {"coordinator": ("none", 1), "collector": ("collector", 3), "learner": ("learner", 1)}
    assert job["spec"]["cleanPodPolicy"] == "Running" and job["spec"]["volumes"][0]["name"] == "shm"
    source = yaml.safe_load((FIXTURES / "v1alpha1-counts-in-config.yaml").read_text())
    assert job["spec"]["tasks"][2]["template"] == source["spec"]["learner"]["template"]  # kept whole
    assert "replicas 3, read from collector_num=3" in err and "learner_num=1" in err
    for variable, port in (("COORDINATOR_PORT", 22273), ("COLLECTOR_PORT", 22270), ("LEARNER_PORT", 22271)):
        assert f"uses ${variable}" in err and f"it was {port}" in err
    assert "spec.learner.template.spec.containers[0].args: uses $LEARNER_PORT" in err
    assert "spec.group: 'rl-group'" in err and "status: dropped" in err and "dropped uid, resourceVersion" in err


def test_v1alpha1_flags_win_over_the_config_and_say_so(capsys: pytest.CaptureFixture[str]) -> None:
    path = str(FIXTURES / "v1alpha1-counts-in-config.yaml")
    code, (job,), err = _run(capsys, path, "--collectors", "5", "--learners", "2", ALLOW)
    assert code == 0 and validate(job) == []
    assert _tasks(job)["collector"] == ("collector", 5) and _tasks(job)["learner"] == ("learner", 2)
    assert "replicas 5 from --collectors, not collector_num=3" in err


def test_v1alpha1_with_its_aggregator_config_in_the_same_stream(capsys: pytest.CaptureFixture[str]) -> None:
    code, (job,), err = _run(capsys, str(FIXTURES / "v1alpha1-with-aggregator.yaml"), ALLOW)
    assert code == 0 and validate(job) == []
    assert _tasks(job) == {
        "coordinator": ("none", 1),
        "collector": ("collector", 1),
        "learner": ("learner", 1),
        "aggregator": ("none", 1),
    }
    assert job["spec"]["priority"] == "high" and job["spec"]["cleanPodPolicy"] == "All"
    assert "no --collectors flag and no collector_num" in err and "no --learners flag" in err
    assert "uses $DI_COORDINATOR_ARGS" in err and "uses $AGGREGATOR_PORT" in err and "it was 22272" in err
    assert "created one aggregator per multi-GPU learner" in err


def test_aggregator_given_apart(capsys: pytest.CaptureFixture[str]) -> None:
    code, (job,), err = _run(
        capsys,
        str(FIXTURES / "nervexjob-actor.yaml"),
        "--aggregator",
        str(FIXTURES / "aggregator-config.yaml"),
        "--collectors",
        "2",
    )
    assert code == 0 and validate(job) == []
    assert _tasks(job) == {
        "coordinator": ("none", 1),
        "collector": ("collector", 2),
        "learner": ("learner", 1),
        "aggregator": ("none", 1),
    }
    assert job["spec"]["tasks"][3]["template"]["spec"]["containers"][0]["command"][-1] == "learner_aggregator"
    assert "spec.actor.template.spec.containers[0].command: uses $HOSTNAME.<domain>" in err


def test_v1_0_shape(capsys: pytest.CaptureFixture[str]) -> None:
    code, (job,), err = _run(capsys, str(FIXTURES / "v2alpha1-v1.0-shape.yaml"))
    assert code == 0 and validate(job) == []
    assert _tasks(job) == {"worker": ("none", 3)}
    assert (job["spec"]["minReplicas"], job["spec"]["maxReplicas"]) == (3, 5)
    assert "engineFields" not in job["spec"] and "template" not in job["spec"]
    assert "spec.engineFields.topology: 'mesh' is not passed to DI-engine by dihera: add `--topology mesh`" in err
    assert "parallelWorkers: dropped; the command already passes --parallel-workers" in err
    assert "spec.template.spec.containers[0].args: uses $DI_NODE_IDS_ARG, which DI-orchestrator set" in err
    assert load_job(job).total_replicas == 3


def test_v1alpha2_shape_with_top_level_engine_fields(capsys: pytest.CaptureFixture[str]) -> None:
    code, (job,), err = _run(capsys, str(FIXTURES / "v1alpha2-shape.yaml"))
    assert code == 0 and validate(job) == []
    assert _tasks(job) == {"worker": ("none", 1)} and "minReplicas" not in job["spec"]
    assert job["spec"]["priority"] == "high"
    assert "spec.parallelWorkers: 2 is not passed" in err and "spec.minReplicas: 0" in err
    assert "spec.topology: dropped; the command already passes --topology" in err


def test_unconvertible_input_fails_naming_every_field(capsys: pytest.CaptureFixture[str]) -> None:
    code, docs, err = _run(capsys, str(FIXTURES / "unconvertible.yaml"))
    assert code == 1 and docs == []
    assert "[0] (?): error: metadata.name: is required" in err
    assert "error: spec.cleanPodPolicy: 'Sometimes' is not valid; valid values: Running, All, None" in err
    assert "error: spec.collector.template: must be a pod template" in err
    assert "[1] (what): error: spec: not a DIJob shape dihera knows (spec keys: workers)" in err


def test_stdin_and_passthrough(capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch) -> None:
    text = (FIXTURES / "v2alpha1-v1.0-shape.yaml").read_text() + "---\napiVersion: v1\nkind: ConfigMap\n"
    text += "metadata: {name: cfg}\ndata: {a: b}\n"
    monkeypatch.setattr("sys.stdin", io.StringIO(text))
    code, docs, err = _run(capsys, "-")
    assert code == 0 and [d["kind"] for d in docs] == ["DIJob", "ConfigMap"]
    assert "<stdin>[1]: info: ConfigMap passed through unchanged" in err


def test_todays_shape_passes_through_and_round_trips(capsys: pytest.CaptureFixture[str]) -> None:
    code, (job,), _ = _run(capsys, str(Path(__file__).parents[2] / "workflows" / "job-with-tasks.yaml"))
    assert code == 0 and validate(job) == []
    code, (again,), _ = _run(capsys, str(Path(__file__).parents[2] / "workflows" / "job-with-tasks.yaml"))
    assert again == job


def test_converted_job_that_dihera_refuses_is_an_error() -> None:
    doc = yaml.safe_load((FIXTURES / "v1alpha1-with-aggregator.yaml").read_text().split("---\n")[1])
    doc["metadata"]["name"] = "9-starts-with-a-digit"
    result = convert_documents([("f", doc)], Counts(), allow_v1alpha1_programs=True)
    assert result.failed and result.objects == []
    assert any("metadata.name" in n.message and "(in the converted job)" in n.message for n in result.notes)


def test_document_without_kind_is_taken_as_a_job() -> None:
    doc = yaml.safe_load((FIXTURES / "v1alpha2-shape.yaml").read_text())
    del doc["kind"]
    result = convert_documents([("f", doc)])
    assert not result.failed and result.objects[0]["kind"] == "DIJob"


@pytest.mark.parametrize("bad", ["0", "-1", "x"])
def test_count_flags_must_be_positive(capsys: pytest.CaptureFixture[str], bad: str) -> None:
    with pytest.raises(SystemExit):
        main(["convert", str(FIXTURES / "v1alpha2-shape.yaml"), "--collectors", bad])
    assert "--collectors" in capsys.readouterr().err


def test_a_list_and_a_component_replicas_field_are_accepted() -> None:
    doc = yaml.safe_load((FIXTURES / "nervexjob-actor.yaml").read_text())
    doc["spec"]["learner"]["replicas"] = 2
    doc["spec"]["learner"]["resources"] = {"gpus": 1}
    result = convert_documents([("f", {"apiVersion": "v1", "kind": "List", "items": [doc]})])
    assert not result.failed
    (job,) = result.objects
    assert _tasks(job)["learner"] == ("learner", 2)
    said = [str(n) for n in result.notes]
    assert "f.items[0] (nervex-job): info: spec.learner: replicas 2, read from spec.learner.replicas" in said
    assert any("spec.learner.resources: unknown" in n for n in said)


# DI-engine's old `ding -m dist` pipeline (dihera/convert/programs.py): it needs DI-orchestrator's v1alpha1 API.

SAMPLE = FIXTURES / "di-orchestrator-v0.2.2-dijob-cartpole.yaml"
MIGRATION_TITLE = "From `ding -m dist` to `ditask`"


def test_di_orchestrators_sample_is_refused_saying_why_and_where_to_go(capsys: pytest.CaptureFixture[str]) -> None:
    code, docs, err = _run(capsys, str(SAMPLE))
    assert code == 1 and docs == []  # nothing to pipe into kubectl apply
    (error,) = [line for line in err.splitlines() if ": error: " in line]
    assert error.startswith(f"{SAMPLE} (cartpole-dqn): error: spec.coordinator.template.spec.containers[0]: ")
    for said in (
        "`ding -m dist`",
        "cannot train under dihera",
        "DI-orchestrator's v1alpha1 API (/v1alpha1/replicas at di-server.di-system:8080)",
        "shared filesystem",
        f'Move it to `ditask` (docs/migration.md, "{MIGRATION_TITLE}")',
        "--allow-v1alpha1-programs",
    ):
        assert said in error, said
    assert "uses $COORDINATOR_PORT" in err  # the port variables that expand to nothing, as before


def test_the_flag_converts_it_as_it_is_with_the_same_words_as_a_warning(capsys: pytest.CaptureFixture[str]) -> None:
    code, (job,), err = _run(capsys, str(SAMPLE), ALLOW)
    assert code == 0 and validate(job) == []
    assert _tasks(job) == {"coordinator": ("none", 1), "collector": ("collector", 2), "learner": ("learner", 1)}
    assert ": error: " not in err
    (warning,) = [line for line in err.splitlines() if "`ding -m dist`" in line]
    assert ": warning: spec.coordinator.template.spec.containers[0]: " in warning and "v1alpha1 API" in warning
    assert "--allow-v1alpha1-programs" not in warning


def test_an_operator_server_config_is_refused_in_any_shape() -> None:
    doc = yaml.safe_load((FIXTURES / "v2alpha1-v1.0-shape.yaml").read_text())
    doc["spec"]["template"]["spec"]["containers"][0]["args"] = [
        "python -c \"system_config = dict(coordinator=dict(operator_server=dict(system_addr='x:8080')))\""
    ]
    result = convert_documents([("f", doc)])
    assert result.failed and result.objects == []
    assert any(n.level == "error" and "v1alpha1 API" in n.message for n in result.notes)


@pytest.mark.parametrize(
    "command",
    [
        ["ding", "-m", "dist", "--module", "collector", "-c", "c.pkl"],
        ["/bin/bash", "-c", "ding --mode dist --module collector -c c.pkl"],
    ],
)
def test_ding_dist_without_the_api_is_a_warning_outside_v1alpha1(command: list[str]) -> None:
    doc = yaml.safe_load((FIXTURES / "v2alpha1-v1.0-shape.yaml").read_text())
    container = doc["spec"]["template"]["spec"]["containers"][0]
    container.pop("args", None)
    container["command"] = command
    result = convert_documents([("f", doc)])
    assert not result.failed
    (note,) = [n for n in result.notes if "`ding -m dist`" in n.message]
    assert note.level == "warning" and "shared filesystem" in note.message
    assert note.message.startswith("spec.template.spec.containers[0]: ")


def test_a_v1alpha1_job_running_ding_dist_in_a_command_list_is_refused() -> None:
    doc = yaml.safe_load((FIXTURES / "v1alpha1-with-aggregator.yaml").read_text().split("---\n")[1])
    result = convert_documents([("f", doc)])
    assert result.failed
    assert any(n.level == "error" and "`ding -m dist`" in n.message for n in result.notes)


def test_other_programs_are_not_flagged() -> None:
    doc = yaml.safe_load((FIXTURES / "v2alpha1-v1.0-shape.yaml").read_text())  # ditask
    result = convert_documents([("f", doc)])
    assert not result.failed and not any("ding -m dist" in n.message for n in result.notes)


def test_the_migration_section_exists_and_its_after_job_is_valid_stock_dqn() -> None:
    text = (Path(__file__).parents[2] / "docs" / "migration.md").read_text(encoding="utf-8")
    assert f"\n## {MIGRATION_TITLE}\n" in text
    section = text.split(f"\n## {MIGRATION_TITLE}\n", 1)[1].split("\n## ", 1)[0]
    after = section.split("**After**", 1)[1]
    job = yaml.safe_load(after.split("```yaml\n", 1)[1].split("```\n", 1)[0])
    assert validate(job) == []
    assert [t["type"] for t in job["spec"]["tasks"]] == ["learner", "evaluator", "collector"]
    (args,) = {tuple(t["template"]["spec"]["containers"][0]["args"]) for t in job["spec"]["tasks"]}
    assert args == ("--platform", "k8s", "--topology", "mesh", "--main", "ding.example.dqn.main", "--ports", "22270")
    # the sample quoted before it is DI-orchestrator's own (the fixture)
    learner = "ding -m dist --module spawn_learner -c /ding/cartpole_dqn_config_k8s.py.pkl -s 0 -lp $LEARNER_PORT"
    assert learner in section and learner in SAMPLE.read_text()


# -- bad input: read as `validate` reads it, never guessed ------------------------------------------------
def test_a_key_given_twice_fails_naming_its_line_and_prints_nothing(
    capsys: pytest.CaptureFixture[str], tmp_path: Path
) -> None:
    text = (FIXTURES / "v2alpha1-v1.0-shape.yaml").read_text()
    path = tmp_path / "twice.yaml"
    path.write_text(text.replace("metadata:\n", "metadata:\n  name: first\n", 1))  # the fixture names it too
    code = main(["convert", str(path)])
    out, err = capsys.readouterr()
    assert code == 1 and out == ""
    line = text.splitlines().index("metadata:") + 1
    assert err.startswith(f"{path}: error: line ")
    assert f"duplicate key 'name' (first at line {line + 1})" in err


@pytest.mark.parametrize(
    ("version", "kind"),
    [("diengine.opendilab.org/v3", "DIJob"), ("example.com/v1", "DIJob"), ("diengine.opendilab.org/v1", "NerveXJob")],
)
def test_an_unknown_api_version_is_an_error_naming_it_and_the_known_ones(
    capsys: pytest.CaptureFixture[str], tmp_path: Path, version: str, kind: str
) -> None:
    job = yaml.safe_load((Path(__file__).parents[2] / "workflows" / "job-with-tasks.yaml").read_text())
    path = tmp_path / "job.yaml"
    path.write_text(yaml.safe_dump({**job, "apiVersion": version, "kind": kind}))
    code = main(["convert", str(path)])
    out, err = capsys.readouterr()
    assert code == 1 and out == ""
    assert f"{path} ({job['metadata']['name']}): error: apiVersion: {version!r} is not a version of {kind} " in err
    assert f"known: {', '.join(KNOWN_API_VERSIONS)}" in err
    assert "is written" not in err  # never rewritten on a guess


def test_an_unknown_kind_of_a_dijob_group_is_an_error_and_other_groups_pass_through() -> None:
    ours = {"apiVersion": "diengine.opendilab.org/v2alpha1", "kind": "DIJobTemplate", "metadata": {"name": "t"}}
    theirs = {"apiVersion": "example.com/v1", "kind": "Thing", "metadata": {"name": "x"}}
    result = convert_documents([("f[0]", ours), ("f[1]", theirs)])
    assert [(n.document, n.level, n.message) for n in result.notes] == [
        (
            "f[0] (t)",
            "error",
            "kind: 'DIJobTemplate' is not a kind of diengine.opendilab.org/v2alpha1 dihera converts; "
            "known: DIJob, NerveXJob, AggregatorConfig",
        ),
        ("f[1]", "info", "Thing passed through unchanged"),
    ]


def test_an_aggregator_config_given_apart_with_an_unknown_version_is_an_error() -> None:
    aggregator = yaml.safe_load((FIXTURES / "aggregator-config.yaml").read_text())
    job = yaml.safe_load((FIXTURES / "v1alpha1-counts-in-config.yaml").read_text())
    result = convert_documents([("f", job)], aggregators=[("a", {**aggregator, "apiVersion": "x/v0"})])
    assert result.failed
    assert [n.document for n in result.notes if n.level == "error" and n.message.startswith("apiVersion: 'x/v0'")] == [
        "a"
    ]


def test_every_fixture_names_a_known_version() -> None:
    for path in FIXTURES.glob("*.yaml"):
        for doc in yaml.safe_load_all(path.read_text()):
            assert doc.get("apiVersion") in KNOWN_API_VERSIONS, path.name


def test_a_file_that_is_not_utf8_is_named(capsys: pytest.CaptureFixture[str], tmp_path: Path) -> None:
    path = tmp_path / "latin1.yaml"
    path.write_bytes("metadata:\n  name: caf\u00e9\n".encode("latin-1"))
    assert main(["convert", str(path)]) == 1
    assert capsys.readouterr().err == f"{path}: not UTF-8 text (byte 0xe9 at offset 21, line 2); save it as UTF-8\n"


def test_nested_aliases_are_refused_before_anything_is_walked(
    capsys: pytest.CaptureFixture[str], tmp_path: Path
) -> None:
    path = tmp_path / "lol.yaml"
    path.write_text(nested_aliases(20, "container"))
    assert main(["convert", str(path)]) == 1
    out, err = capsys.readouterr()
    assert out == "" and err.startswith(f"{path}: error: line {alias_line(6, 'container')}: document 1 (line 1): ")
