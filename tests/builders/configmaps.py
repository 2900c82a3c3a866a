"""ConfigMaps: a job's membership ConfigMap as the controller watches it, and companion objects of DIJob files."""

from __future__ import annotations

import copy
from typing import Any, Self

from dihera.membership import Membership
from tests.builders.objects import ObjectBuilder

__all__ = ["ConfigMapBuilder", "configmap"]


class ConfigMapBuilder(ObjectBuilder):
    """A ConfigMap: ``ConfigMapBuilder("di-j").job("j").membership(LIVE).obj()``; ``data`` always there."""

    def __init__(self, name: str) -> None:
        super().__init__(name)
        self._data: dict[str, str] = {}

    def data(self, **data: str) -> Self:
        self._data.update(data)
        return self

    def membership(self, membership: Membership) -> Self:
        """``membership.json``: the membership as the renderer writes it."""
        self._data["membership.json"] = membership.to_json()
        return self

    def obj(self) -> dict[str, Any]:
        return {"metadata": self.metadata(), "data": copy.deepcopy(self._data)}


def configmap(name: str = "config-py", **data: str) -> dict[str, Any]:
    """A companion object as published DIJob files carry it: the DI-engine config in a ConfigMap."""
    return {
        "apiVersion": "v1",
        "kind": "ConfigMap",
        "metadata": {"name": name},
        "data": data or {"config.py": "main_config = dict(exp_name='x')\n"},
    }
