"""The di-server's write of status.training (dihera/kube/training.py): a JSON patch that tests the uid, and a
DIJob gone or created again under its name told apart from other refusals."""

from __future__ import annotations

from typing import Any

import pytest
from kubernetes.client.exceptions import ApiException

from dihera.kube import training as kube_training


class Api:
    def __init__(self, uid: str | None, status: int = 0) -> None:
        self.uid, self.status, self.patches, self.kwargs = uid, status, [], {}  # type: ignore[var-annotated]

    def patch_namespaced_custom_object_status(self, *args: Any, **kwargs: Any) -> dict[str, Any]:
        self.patches.append(args[-1])
        self.kwargs = kwargs
        if self.status:
            raise ApiException(status=self.status)
        return {}

    def get_namespaced_custom_object(self, *args: Any) -> dict[str, Any]:
        if self.uid is None:
            raise ApiException(status=404)
        return {"metadata": {"uid": self.uid, "resourceVersion": "7"}, "status": {"phase": "Running"}}


def _use(monkeypatch: pytest.MonkeyPatch, api: Api) -> Api:
    monkeypatch.setattr(kube_training.client, "CustomObjectsApi", lambda _: api)
    return api


def test_the_patch_tests_the_uid_then_replaces_training(monkeypatch: pytest.MonkeyPatch) -> None:
    api = _use(monkeypatch, Api("u1"))
    assert kube_training.write_training(None, "ns", "j", "u1", {"iteration": 3})  # type: ignore[arg-type]
    assert api.patches == [[
        {"op": "test", "path": "/metadata/uid", "value": "u1"},
        {"op": "add", "path": "/status/training", "value": {"iteration": 3}},
    ]]  # fmt: skip
    assert api.kwargs["_content_type"] == "application/json-patch+json"


@pytest.mark.parametrize(("uid", "status"), [(None, 404), ("u2", 422), (None, 422)], ids=["gone", "new", "gone-422"])
def test_a_job_gone_or_created_again_is_false(monkeypatch: pytest.MonkeyPatch, uid: str | None, status: int) -> None:
    _use(monkeypatch, Api(uid, status))
    assert not kube_training.write_training(None, "ns", "j", "u1", {})  # type: ignore[arg-type]


def test_another_refusal_is_raised(monkeypatch: pytest.MonkeyPatch) -> None:
    _use(monkeypatch, Api("u1", 422))  # the same object: e.g. no status yet
    with pytest.raises(ApiException):
        kube_training.write_training(None, "ns", "j", "u1", {})  # type: ignore[arg-type]
    _use(monkeypatch, Api("u1", 500))
    with pytest.raises(ApiException):
        kube_training.write_training(None, "ns", "j", "u1", {})  # type: ignore[arg-type]


class NoStatus(Api):
    """A DIJob the controller has not written yet: no ``/status`` to add a field to (the API server: 422)."""

    def __init__(self) -> None:
        super().__init__("u1")

    def patch_namespaced_custom_object_status(self, *args: Any, **kwargs: Any) -> dict[str, Any]:
        self.patches.append(args[-1])
        if len(self.patches) == 1:
            raise ApiException(status=422)
        return {}

    def get_namespaced_custom_object(self, *args: Any) -> dict[str, Any]:
        return {"metadata": {"uid": "u1", "resourceVersion": "7"}}


def test_a_job_without_a_status_gets_one_under_its_resource_version(monkeypatch: pytest.MonkeyPatch) -> None:
    api = _use(monkeypatch, NoStatus())
    assert kube_training.write_training(None, "ns", "j", "u1", {"iteration": 1})  # type: ignore[arg-type]
    assert api.patches[-1] == [
        {"op": "test", "path": "/metadata/uid", "value": "u1"},
        {"op": "test", "path": "/metadata/resourceVersion", "value": "7"},
        {"op": "add", "path": "/status", "value": {"training": {"iteration": 1}}},
    ]
