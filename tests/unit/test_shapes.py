"""The typed views of dihera/shapes: a field the watch cache does not keep cannot be read without a type error,
and the views agree with what reads them (objects.py's artifact fields, the raw-to-view boundary)."""

from __future__ import annotations

from pathlib import Path
from typing import get_type_hints

from mypy import api as mypy

from dihera.kube.watch.slim import kept_fields, slim_pod, slim_workflow
from dihera.objects import ARTIFACT_KEY_FIELDS, ARTIFACT_LOCATIONS, labels, metadata, slim_artifact
from dihera.shapes.configmap import ConfigMap, as_configmap
from dihera.shapes.pod import Pod, as_pod
from dihera.shapes.workflow import Artifact, ArtifactLocation, NodeStatus, Workflow, as_nodes, as_workflow

REPO = Path(__file__).resolve().parents[2]


def test_reading_a_field_the_cache_drops_is_a_type_error(tmp_path: Path) -> None:
    """The point of the shapes: ``spec.nodeName`` is not kept in the cache, so indexing it does not type-check,
    and ``.get`` of it answers ``object``, which does not type-check as the str it would be read as. (mypy lets
    a ``.get`` of an undeclared key compared with ``==`` or tested for truth pass: ``object`` allows both.)"""
    snippet = tmp_path / "snippet.py"
    snippet.write_text(
        "from dihera.shapes.pod import Pod\n\n\n"
        "def node(pod: Pod) -> str:\n"
        '    return pod["spec"]["nodeName"]\n\n\n'
        "def node_or_none(pod: Pod) -> str | None:\n"
        '    return pod.get("spec", {}).get("nodeName")\n'
    )
    out, _, code = mypy.run(["--strict", "--cache-dir", str(REPO / ".mypy_cache"), str(snippet)])
    assert code == 1 and 'snippet.py:5: error: TypedDict "PodSpec" has no key "nodeName"' in out, out
    assert 'snippet.py:9: error: Incompatible return value type (got "object", expected "str | None")' in out, out


def test_what_a_shape_declares_the_slim_copy_keeps() -> None:
    pod = {
        "metadata": {"name": "p", "labels": {"a": "b"}, "managedFields": [{}]},
        "spec": {"nodeName": "n", "containers": [{"name": "main", "image": "i"}]},
        "status": {"phase": "Running", "podIP": "10.0.0.1"},
    }
    assert slim_pod(pod) == {
        "metadata": {"name": "p", "labels": {"a": "b"}},
        "spec": {"containers": [{"name": "main"}]},
        "status": {"phase": "Running"},
    }
    assert {"metadata.name", "spec.containers.name", "status.phase"} <= set(kept_fields(Pod))
    assert "spec.nodeName" not in kept_fields(Pod)


def test_a_value_not_of_its_declared_type_is_not_kept() -> None:
    """The slim copy holds what its view says: a str where a str is declared, never a dict or a number."""
    pod = {"metadata": {"name": "p", "generation": "2"}, "status": {"phase": {"odd": 1}, "reason": "Evicted"}}
    assert slim_pod(pod) == {"metadata": {"name": "p"}, "status": {"reason": "Evicted"}}


def test_a_workflow_keeps_the_dag_templates_in_place() -> None:
    """Every template stays in its position (scaling patches ``/spec/templates/<i>``), even one emptied."""
    wf = {
        "metadata": {"name": "j"},
        "spec": {"templates": [{"container": {"image": "x"}}, {"name": "dijob", "dag": {"tasks": []}}]},
    }
    templates = slim_workflow(wf)["spec"]["templates"]
    assert templates == [{}, {"name": "dijob", "dag": {"tasks": []}}]


def test_objects_artifact_fields_are_the_ones_the_view_declares() -> None:
    assert set(ARTIFACT_LOCATIONS) == set(get_type_hints(Artifact)) - {"name"}
    assert set(ARTIFACT_KEY_FIELDS) == set(get_type_hints(ArtifactLocation))
    artifact: Artifact = {"name": "policy", "s3": {"key": "k"}}
    assert slim_artifact({**artifact, "path": "/w"}) == artifact  # type: ignore[typeddict-unknown-key]


def test_metadata_reads_any_object_raw_or_typed() -> None:
    raw: dict[str, object] = {"metadata": {"name": "j", "labels": {"k": "v"}}}
    assert metadata(raw) == {"name": "j", "labels": {"k": "v"}} and labels(raw) == {"k": "v"}
    assert metadata(None) == {} and metadata({"metadata": "not an object"}) == {}
    cm: ConfigMap = {"metadata": {"name": "c"}, "data": {}}
    assert metadata(cm)["name"] == "c"


def test_the_raw_to_view_boundary_is_the_object_itself() -> None:
    """A full object read from the API server is read through its view as it is (no copy, nothing dropped)."""
    raw: dict[str, object] = {"metadata": {"name": "p"}, "spec": {"nodeName": "n"}}
    assert as_pod(raw) is raw and as_configmap(raw) is raw and as_workflow(raw) is raw
    nodes: dict[str, object] = {"n1": {"name": "j.a-0", "type": "Pod"}}
    view: dict[str, NodeStatus] = dict(as_nodes(nodes))
    assert view["n1"]["type"] == "Pod"
    wf: Workflow = {"status": {"nodes": view}}
    assert wf["status"]["nodes"]["n1"].get("phase") is None
