"""Hera models from the user's dicts, failing on any key the model would drop (pure).

Hera's models ignore unknown keys, so ``Model.model_validate(data)`` silently loses a misspelled
field. Everything dihera writes itself is built with keyword arguments (mypy checks the names);
what comes from the DIJob's pod template goes through :func:`strict`, which validates and then
checks that every key given survived.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import TypeVar

import pydantic

__all__ = ["UnknownFieldError", "strict", "strict_list"]

M = TypeVar("M", bound=pydantic.BaseModel)


class UnknownFieldError(ValueError):
    """A dict held keys its Hera model does not know; ``fields`` are their paths."""

    def __init__(self, model: str, fields: Sequence[str]) -> None:
        self.fields = tuple(fields)
        super().__init__(f"unknown field(s) for {model}: {', '.join(self.fields)}")


def _lost(given: object, kept: object, path: str) -> list[str]:
    if isinstance(given, Mapping) and isinstance(kept, Mapping):
        lost = [f"{path}.{k}" for k, v in given.items() if k not in kept and v is not None]
        return lost + [p for k, v in given.items() if k in kept for p in _lost(v, kept[k], f"{path}.{k}")]
    if isinstance(given, list) and isinstance(kept, list):
        return [p for i, (g, k) in enumerate(zip(given, kept, strict=False)) for p in _lost(g, k, f"{path}[{i}]")]
    return []


def strict(model: type[M], data: Mapping[str, object], path: str) -> M:
    """``model`` from ``data``; :class:`UnknownFieldError` naming every key the model would drop."""
    obj = model.model_validate(data)
    lost = _lost(data, obj.model_dump(by_alias=True, exclude_none=True, mode="json"), path)
    if lost:
        raise UnknownFieldError(model.__name__, lost)
    return obj


def strict_list(model: type[M], items: Sequence[Mapping[str, object]], path: str) -> list[M]:
    return [strict(model, item, f"{path}[{i}]") for i, item in enumerate(items)]
