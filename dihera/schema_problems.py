"""Turn JSON-schema errors into :class:`~dihera.errors.Problem` lines (pure).

Shared by the DIJob check and the pod template check, so both name the field path, the bad value
and what would be valid, and both report an unknown field with the nearest valid one.
"""

from __future__ import annotations

import difflib
from collections.abc import Iterable, Mapping, Sequence
from typing import Any

import jsonschema

from dihera.errors import Problem, format_value

__all__ = ["field_path", "int_formats", "nearest", "schema_problems", "unknown_field"]

#: The integer formats of Kubernetes' OpenAPI, by their bound: a value v must hold -bound <= v < bound.
_INT_BOUNDS = {"int32": 2**31, "int64": 2**63}


def _in_range(bound: int) -> Any:
    def check(value: object) -> bool:
        number = isinstance(value, int | float) and not isinstance(value, bool)
        return not number or -bound <= value < bound  # type: ignore[operator]

    return check


def int_formats() -> jsonschema.FormatChecker:
    """A format checker for ``int32`` and ``int64`` only (what the API server enforces on a CRD's integers)."""
    checker = jsonschema.FormatChecker(formats=())
    for name, bound in _INT_BOUNDS.items():
        checker.checks(name)(_in_range(bound))
    return checker


def field_path(base: str, parts: Iterable[object]) -> str:
    """``spec.tasks[0].name`` from a base path and JSON-schema path parts."""
    out = base
    for part in parts:
        out += f"[{part}]" if isinstance(part, int) else (f".{part}" if out else str(part))
    return out or "(root)"


def nearest(key: str, valid: Sequence[str]) -> str | None:
    """The valid field a typo most likely meant (case first: ``backofflimit`` is ``backoffLimit``)."""
    by_case = {v.lower(): v for v in valid}
    if key.lower() in by_case:
        return by_case[key.lower()]
    match = difflib.get_close_matches(key.lower(), list(by_case), n=1, cutoff=0.6)
    return by_case[match[0]] if match else None


def unknown_field(path: str, key: str, valid: Sequence[str], what: str) -> Problem:
    """``spec.backofflimit: unknown field of the DIJob spec; did you mean backoffLimit?``."""
    guess = nearest(key, valid)
    hint = f"did you mean {guess}?" if guess else f"valid fields: {', '.join(sorted(valid))}"
    return Problem(path, f"unknown field of {what}; {hint}")


def _unknown(err: jsonschema.ValidationError, path: str, what: str) -> list[Problem]:
    properties = list(err.schema.get("properties", {})) if isinstance(err.schema, Mapping) else []
    extra = [k for k in err.instance if k not in properties] if isinstance(err.instance, Mapping) else []
    owner = err.schema.get("title", what) if isinstance(err.schema, Mapping) else what
    return [unknown_field(f"{path}.{k}" if path else k, k, properties, owner) for k in extra]


#: What each pattern of the DIJob schema stands for, in an error's words.
_PATTERNS = {
    "^[a-z0-9]([-a-z0-9]*[a-z0-9])?$": (
        "a DNS label (lower-case letters, digits and '-', starting and ending with a letter or digit)"
    ),
    "^/": "an absolute path (starting with /)",
    "^[0-9]+(\\.[0-9]+)?(Ki|Mi|Gi|Ti|Pi|Ei|k|M|G|T|P|E)?$": "a quantity (512Mi, 10Gi)",
    "^[a-zA-Z0-9][-a-zA-Z0-9_]*$": "a name of letters, digits, '-' and '_', starting with a letter or digit",
}


def _one(err: jsonschema.ValidationError, base: str, what: str) -> list[Problem]:
    path = field_path(base, err.absolute_path)
    if err.validator == "additionalProperties" and err.validator_value is False:
        return _unknown(err, "" if path == "(root)" else path, what)
    if err.validator == "enum":
        allowed = ", ".join(str(v) for v in (err.validator_value if isinstance(err.validator_value, list) else []))
        return [Problem(path, f"{format_value(err.instance)} is not valid; valid values: {allowed}")]
    if err.validator == "pattern":
        what_it_is = _PATTERNS.get(str(err.validator_value), f"a match of {err.validator_value}")
        return [Problem(path, f"{format_value(err.instance)} is not {what_it_is}")]
    if err.validator == "type":
        return [Problem(path, f"must be of type {err.validator_value}, got {format_value(err.instance)}")]
    if err.validator == "format" and err.validator_value in _INT_BOUNDS:
        bound = _INT_BOUNDS[err.validator_value]
        why = f"{format_value(err.instance)} is out of range for {err.validator_value}: {-bound}..{bound - 1}"
        return [Problem(path, why)]
    return [Problem(path, err.message)]


def schema_problems(validator: Any, instance: Any, base: str, what: str) -> list[Problem]:
    """Every problem ``validator`` finds in ``instance``; paths start at ``base``."""
    problems: list[Problem] = []
    for err in validator.iter_errors(instance):
        problems += _one(err, base, what)
    return problems
