"""A sweep's search space and its trials (pure): which values each trial runs with.

A space maps a parameter name to a :class:`Dimension`: :class:`Choice` (a list of values),
:class:`IntRange` (``start``, ``stop`` exclusive, ``step``), :class:`Uniform` and :class:`LogUniform`
(continuous, random search only). :func:`configurations` expands it into configurations: the whole grid
(:class:`Grid`, in the order the space names its parameters, the last one varying fastest) or
``count`` draws (:class:`Random`, from ``random.Random(seed)``: the same seed, the same draws).
:func:`plan_trials` repeats every configuration over the seeds: trial ``i`` is configuration
``i // len(seeds)`` with seed ``seeds[i % len(seeds)]``.
"""

from __future__ import annotations

import math
import random
import re
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from itertools import product

__all__ = [
    "Choice",
    "Dimension",
    "Grid",
    "IntRange",
    "LogUniform",
    "Random",
    "Search",
    "SweepSpaceError",
    "Trial",
    "Uniform",
    "Value",
    "configurations",
    "plan_trials",
]

#: One parameter's value in a trial.
Value = bool | int | float | str
#: A parameter's name: it becomes the environment variable ``DIHERA_PARAM_<NAME>`` (upper case).
PARAM_NAME = re.compile(r"^[a-z][a-z0-9_]{0,39}$")


class SweepSpaceError(ValueError):
    """A search space, search or seed list that cannot make trials; the message names the field and the
    value. Not worth retrying: the experiment's definition has to change."""


@dataclass(frozen=True)
class Choice:
    """One of ``values`` (grid: each of them; random: uniformly)."""

    values: tuple[Value, ...]

    def __post_init__(self) -> None:
        if not self.values:
            raise SweepSpaceError("choice: give at least one value")
        for v in self.values:
            if not isinstance(v, (bool, int, float, str)) or (isinstance(v, float) and not math.isfinite(v)):
                raise SweepSpaceError(f"choice: {v!r} is not a finite number, a string or a bool")


@dataclass(frozen=True)
class IntRange:
    """The integers ``start, start + step, ...`` below ``stop`` (grid: each; random: uniformly)."""

    start: int
    stop: int
    step: int = 1

    def __post_init__(self) -> None:
        if self.step < 1 or self.stop <= self.start:
            raise SweepSpaceError(f"int_range({self.start}, {self.stop}, {self.step}): need start < stop and step >= 1")

    def values(self) -> tuple[int, ...]:
        return tuple(range(self.start, self.stop, self.step))


@dataclass(frozen=True)
class Uniform:
    """A float drawn uniformly from ``[low, high]`` (random search only)."""

    low: float
    high: float

    def __post_init__(self) -> None:
        if not (math.isfinite(self.low) and math.isfinite(self.high) and self.low < self.high):
            raise SweepSpaceError(f"uniform({self.low}, {self.high}): need finite low < high")


@dataclass(frozen=True)
class LogUniform:
    """A float whose logarithm is uniform on ``[log low, log high]`` (learning rates; random search only)."""

    low: float
    high: float

    def __post_init__(self) -> None:
        if not (0 < self.low < self.high and math.isfinite(self.high)):
            raise SweepSpaceError(f"loguniform({self.low}, {self.high}): need 0 < low < high")


Dimension = Choice | IntRange | Uniform | LogUniform


@dataclass(frozen=True)
class Grid:
    """Every combination of the (discrete) dimensions."""


@dataclass(frozen=True)
class Random:
    """``count`` configurations drawn with ``random.Random(seed)``."""

    count: int
    seed: int = 0

    def __post_init__(self) -> None:
        if self.count < 1:
            raise SweepSpaceError(f"random: count {self.count} must be at least 1")


Search = Grid | Random


@dataclass(frozen=True)
class Trial:
    """One trial: its index in the sweep, its parameters' values and its seed."""

    index: int
    values: Mapping[str, Value]
    seed: int


def _check_names(space: Mapping[str, Dimension]) -> None:
    if not space:
        raise SweepSpaceError("space: name at least one parameter")
    for name, dim in space.items():
        if not PARAM_NAME.match(name):
            raise SweepSpaceError(
                f"space.{name}: a parameter's name must match {PARAM_NAME.pattern} (it becomes DIHERA_PARAM_<NAME>)"
            )
        if not isinstance(dim, (Choice, IntRange, Uniform, LogUniform)):
            raise SweepSpaceError(f"space.{name}: {dim!r} is not a choice, int_range, uniform or loguniform")


def _draw(dim: Dimension, rng: random.Random) -> Value:
    if isinstance(dim, Choice):
        return dim.values[rng.randrange(len(dim.values))]
    if isinstance(dim, IntRange):
        return rng.randrange(dim.start, dim.stop, dim.step)
    if isinstance(dim, Uniform):
        return rng.uniform(dim.low, dim.high)
    return math.exp(rng.uniform(math.log(dim.low), math.log(dim.high)))


def configurations(space: Mapping[str, Dimension], search: Search) -> list[dict[str, Value]]:
    """The configurations ``search`` makes of ``space`` (deterministic)."""
    _check_names(space)
    names = list(space)
    if isinstance(search, Random):
        rng = random.Random(search.seed)
        return [{name: _draw(space[name], rng) for name in names} for _ in range(search.count)]
    axes: list[Sequence[Value]] = []
    for name in names:
        dim = space[name]
        if isinstance(dim, (Uniform, LogUniform)):
            raise SweepSpaceError(
                f"space.{name}: {type(dim).__name__.lower()} is continuous: a grid needs choice or int_range "
                "(or use random search)"
            )
        axes.append(dim.values if isinstance(dim, Choice) else dim.values())
    return [dict(zip(names, combo, strict=True)) for combo in product(*axes)]


def plan_trials(space: Mapping[str, Dimension], search: Search, seeds: Sequence[int]) -> list[Trial]:
    """Every configuration of ``space`` under ``search``, repeated over ``seeds``."""
    if not seeds:
        raise SweepSpaceError("seeds: give at least one seed (RL results over one seed mislead: give several)")
    if len(set(seeds)) != len(seeds):
        raise SweepSpaceError(f"seeds: {list(seeds)} repeats a seed")
    configs = configurations(space, search)
    return [
        Trial(index=i * len(seeds) + j, values=config, seed=seed)
        for i, config in enumerate(configs)
        for j, seed in enumerate(seeds)
    ]
