"""A DIJob's learning curve as one SVG chart (pure, deterministic): the di-server's live view of it.

From ``status.training.curve`` (at most 200 points, newest last): the evaluation return over learner
iterations (solid, left axis; a dot per evaluation) and the env steps per second of all collectors
together (dashed, right axis). Each line carries ``data-series`` and ``data-points`` and a ``<title>``
(the browser shows it on hover). SVG by hand, like the sweep's plot (:mod:`dihera.sweeps.plot`, whose
ticks it shares): no plotting library in dihera's image.
"""

from __future__ import annotations

import math
from collections.abc import Mapping, Sequence
from typing import Any
from xml.sax.saxutils import escape

from dihera.sweeps.plot import ticks

__all__ = ["learning_curve_svg"]

_W, _H = 760, 380
_LEFT, _RIGHT, _TOP, _BOTTOM = 64, 72, 48, 48
_RETURN, _RATE = "#0072B2", "#E69F00"


def _fmt(x: float) -> str:
    return f"{x:.6g}"


def _series(curve: Sequence[Mapping[str, Any]], key: str) -> list[tuple[float, float]]:
    out = []
    for point in curve:
        x, y = point.get("iteration"), point.get(key)
        if isinstance(x, int | float) and isinstance(y, int | float) and math.isfinite(x) and math.isfinite(y):
            out.append((float(x), float(y)))
    return out


class _Frame:
    """The iteration axis shared by both series, and one value axis per side."""

    def __init__(self, xs: list[float]) -> None:
        self.xt = ticks(min(xs), max(xs))
        self.right, self.bottom = _W - _RIGHT, _H - _BOTTOM

    def x(self, value: float) -> float:
        x0, x1 = self.xt[0], self.xt[-1]
        return _LEFT + (value - x0) / ((x1 - x0) or 1) * (self.right - _LEFT)

    def y(self, value: float, yt: list[float]) -> float:
        y0, y1 = yt[0], yt[-1]
        return self.bottom - (value - y0) / ((y1 - y0) or 1) * (self.bottom - _TOP)

    def axes(self) -> list[str]:
        out = [
            f'<rect x="{_LEFT}" y="{_TOP}" width="{self.right - _LEFT}" height="{self.bottom - _TOP}" '
            'fill="none" stroke="#888"/>'
        ]
        for t in self.xt:
            out.append(f'<text x="{self.x(t):.1f}" y="{self.bottom + 16}" text-anchor="middle">{_fmt(t)}</text>')
        out.append(f'<text x="{(_LEFT + self.right) / 2:.1f}" y="{_H - 10}" text-anchor="middle">iteration</text>')
        return out

    def value_axis(self, yt: list[float], left: bool, title: str, colour: str) -> list[str]:
        x, anchor = (_LEFT - 6, "end") if left else (self.right + 6, "start")
        out = [f'<text x="{x}" y="{self.y(t, yt) + 4:.1f}" text-anchor="{anchor}" fill="{colour}">{_fmt(t)}</text>'
               for t in yt]  # fmt: skip
        if left:
            out += [f'<line x1="{_LEFT}" x2="{self.right}" y1="{self.y(t, yt):.1f}" y2="{self.y(t, yt):.1f}" '
                    'stroke="#eee"/>' for t in yt]  # fmt: skip
        tx = 14 if left else _W - 10
        mid = (_TOP + self.bottom) / 2
        out.append(f'<text x="{tx}" y="{mid:.1f}" transform="rotate(-90 {tx} {mid:.1f})" text-anchor="middle" '
                   f'fill="{colour}">{escape(title)}</text>')  # fmt: skip
        return out

    def line(self, name: str, points: list[tuple[float, float]], yt: list[float], colour: str, dash: str) -> list[str]:
        drawn = " ".join(f"{self.x(x):.1f},{self.y(y, yt):.1f}" for x, y in points)
        dashed = f' stroke-dasharray="{dash}"' if dash else ""
        last = points[-1]
        out = [f'<polyline data-series="{name}" data-points="{len(points)}" points="{drawn}" fill="none" '
               f'stroke="{colour}" stroke-width="2"{dashed}><title>{escape(name)}: {_fmt(last[1])} at iteration '
               f"{_fmt(last[0])}</title></polyline>"]  # fmt: skip
        if not dash:
            out += [
                f'<circle cx="{self.x(x):.1f}" cy="{self.y(y, yt):.1f}" r="2.5" fill="{colour}"/>' for x, y in points
            ]
        return out


def _title(training: Mapping[str, Any], job: str) -> str:
    evaluation = training.get("evaluation") or {}
    parts = [f"DIJob {job}"]
    if "value" in evaluation:
        parts.append(f"return {_fmt(evaluation['value'])} (best {_fmt(evaluation.get('best', evaluation['value']))})")
    if "iteration" in training:
        parts.append(f"iteration {training['iteration']}")
    if "envStepsPerSecond" in training:
        parts.append(f"{_fmt(training['envStepsPerSecond'])} env steps/s")
    return ", ".join(parts)


def learning_curve_svg(training: Mapping[str, Any] | None, job: str) -> str:
    """The SVG document of the job ``job``'s (``<namespace>/<name>``) ``status.training`` (see the module's doc)."""
    training = training or {}
    curve = [p for p in training.get("curve") or [] if isinstance(p, Mapping)]
    returns, rates = _series(curve, "value"), _series(curve, "envStepsPerSecond")
    body = [f'<text x="{_LEFT}" y="24" font-size="15">{escape(_title(training, job))}</text>']
    if returns or rates:
        frame = _Frame([x for x, _ in returns + rates])
        body += frame.axes()
        if returns:
            yt = ticks(min(y for _, y in returns), max(y for _, y in returns))
            body += frame.value_axis(yt, True, "return", _RETURN) + frame.line("return", returns, yt, _RETURN, "")
        if rates:
            yt = ticks(min(y for _, y in rates), max(y for _, y in rates))
            body += frame.value_axis(yt, False, "env steps/s", _RATE)
            body += frame.line("env steps/s", rates, yt, _RATE, "6 4")
    else:
        body.append(f'<text x="{_LEFT}" y="{_TOP + 24}">No figures reported yet (docs/training-figures.md).</text>')
    head = (
        f'<svg xmlns="http://www.w3.org/2000/svg" width="{_W}" height="{_H}" font-family="sans-serif" font-size="11">'
    )
    return "\n".join([head, '<rect width="100%" height="100%" fill="white"/>', *body, "</svg>"]) + "\n"
