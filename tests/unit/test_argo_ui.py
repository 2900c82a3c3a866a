"""dihera.argo_ui: the Workflow's UI annotations and the columns and links of Argo's ConfigMap."""

from __future__ import annotations

import pytest
import yaml

from dihera import cli, load_job, render
from dihera.argo_ui import UI_COLUMNS, argo_config, columns, configmap_data, describe, links, ui_annotations
from tests.builders import job, task

TASKS = [("learner", "learner", 1), ("evaluator", "evaluator", 1), ("collector", "collector", 2)]


def flattened(markdown: str) -> str:
    """What the Argo UI's list row shows of a description (ui/src/workflows/utils.ts escapeInvalidMarkdown)."""
    return markdown.replace("\n", " ").replace("```", "").strip()


def test_the_descriptions_first_sentence_reads_alone_in_the_list_row() -> None:
    text = describe("team-a/dqn", TASKS, 3)
    first = text.split("\n\n")[0]
    assert first == "4 replicas: learner 1, evaluator 1, collector 2 (membership generation 3)."
    assert flattened(text).startswith(first + " ")
    assert "\n| learner | learner | 1 |\n" in text and text.rstrip().endswith("DI-engine job `team-a/dqn`.")


def test_every_column_reads_an_annotation_the_workflow_carries() -> None:
    rendered = render(load_job(job(task("learner"), task("collector", replicas=2), name="dqn"))).workflow
    annotations = rendered["metadata"]["annotations"]
    assert [c["key"] for c in columns()] == [key for _, key in UI_COLUMNS]
    assert {c["key"]: annotations[c["key"]] for c in columns()} == {
        "diengine/replicas": "3",
        "diengine/task-replicas": "learner 1, collector 2",
        "diengine/membership-generation": "1",
    }
    assert set(ui_annotations("default/dqn", [("learner", "learner", 1)], 1)) <= set(annotations)


def test_links_point_at_the_di_server_with_argos_substitutions() -> None:
    workflow, pod, trial = links("http://127.0.0.1:8081/")
    assert (workflow["scope"], pod["scope"], trial["scope"]) == ("workflow", "pod", "pod")
    job_url = "http://127.0.0.1:8081/ui/namespaces/${metadata.namespace}/dijobs/${workflow.metadata.labels.diengine/job}"
    # one workflow link for a DIJob's Workflow and a sweep's: the di-server redirects by the labels
    assert workflow["url"] == (
        "http://127.0.0.1:8081/ui/namespaces/${metadata.namespace}/workflows/${metadata.name}"
        "?dijob=${workflow.metadata.labels.diengine/job}&experiment=${workflow.metadata.labels.diengine/experiment}"
        "&metric=${workflow.metadata.labels.diengine/metric}&goal=${workflow.metadata.labels.diengine/goal}"
        "&trials=${workflow.metadata.labels.diengine/trials}"
    )
    assert pod["url"] == job_url + "/pods/${metadata.name}"
    assert trial["url"] == "http://127.0.0.1:8081/ui/namespaces/${metadata.namespace}/trials/${metadata.name}"


@pytest.mark.parametrize("url", ["127.0.0.1:8081", "ftp://host", "http://host/x?y=1", "http://", "http://a b"])
def test_a_bad_server_url_is_refused_naming_it(url: str) -> None:
    with pytest.raises(ValueError, match=r"server_url: .* is not an http"):
        links(url)


def test_configmap_data_is_the_config_as_yaml_strings() -> None:
    data = configmap_data("https://dihera.example.com/di")
    assert {key: yaml.safe_load(value) for key, value in data.items()} == argo_config("https://dihera.example.com/di")


def test_the_cli_prints_both_forms(capsys: pytest.CaptureFixture[str]) -> None:
    assert cli.main(["argo-ui-config", "--server-url", "http://127.0.0.1:9000"]) == 0
    printed = yaml.safe_load(capsys.readouterr().out)
    assert printed == configmap_data("http://127.0.0.1:9000")
    assert cli.main(["argo-ui-config", "--server-url", "http://127.0.0.1:9000", "--helm"]) == 0
    assert yaml.safe_load(capsys.readouterr().out) == {"controller": argo_config("http://127.0.0.1:9000")}
    assert cli.main(["argo-ui-config", "--server-url", "nope"]) == 2
    assert "server_url: 'nope'" in capsys.readouterr().err
