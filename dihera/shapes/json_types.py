"""Free JSON, typed without ``Any``: what dihera passes through without reading it field by field (a user's
pod template, Hera's output, a response body). A reader narrows a value with ``isinstance`` before it uses
it, so a wrong guess about the shape is a type error rather than a crash at run time.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import TypeAlias

__all__ = ["JsonObject", "JsonValue", "ReadJson", "ReadJsonObject"]

#: A JSON value as ``json.loads`` returns it.
JsonValue: TypeAlias = "bool | int | float | str | list[JsonValue] | dict[str, JsonValue] | None"
#: A JSON object as ``json.loads`` returns it.
JsonObject: TypeAlias = "dict[str, JsonValue]"
#: A JSON value only read (covariant: a ``dict[str, str]`` or a TypedDict's value is one).
ReadJson: TypeAlias = "bool | int | float | str | Sequence[ReadJson] | Mapping[str, ReadJson] | None"
#: A JSON object only read.
ReadJsonObject: TypeAlias = "Mapping[str, ReadJson]"
