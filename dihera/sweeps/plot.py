"""Every trial's metric over iterations as one SVG line chart (pure, deterministic): the sweep's plot.

One line per trial from its ``<metric>History`` (``[[iteration, value], ...]``, what early stopping reads),
coloured by configuration (the seeds of one configuration share a colour), drawn by how the trial ended:
solid when it Succeeded or still runs, dashed when early stopping stopped it, dotted when it Failed. The
legend names each trial by index, values, seed and phase; a trial that reported nothing is listed, not drawn.
Each line carries ``data-trial`` and ``data-points`` and a ``<title>`` (the browser shows it on hover).

SVG by hand rather than a plotting library: the summary step runs in dihera's image, which holds no
matplotlib (tens of MB, and minutes of the image build in CI) for one chart of lines and ticks.
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from xml.sax.saxutils import escape, quoteattr

from dihera.sweeps.results import TrialResult
from dihera.sweeps.sweep import value_text

__all__ = ["PALETTE", "history_plot", "ticks"]

#: Colour per configuration, in order (Okabe-Ito, readable by colour-blind viewers), then again.
PALETTE = ("#0072B2", "#E69F00", "#009E73", "#CC79A7", "#56B4E9", "#D55E00", "#F0E442", "#000000")
_DASH = {"Stopped": "6 4", "Failed": "2 3"}
_W, _H = 760, 420
_LEFT, _RIGHT, _TOP, _BOTTOM = 64, 250, 40, 48


def ticks(lo: float, hi: float, count: int = 5) -> list[float]:
    """About ``count`` round values (1, 2, 2.5 or 5 times a power of ten apart) covering ``lo`` .. ``hi``."""
    if not (math.isfinite(lo) and math.isfinite(hi)):
        raise ValueError(f"ticks: bounds {lo!r} .. {hi!r} must be finite")
    if hi <= lo:
        lo, hi = lo - 1.0, lo + 1.0
    raw = (hi - lo) / max(1, count - 1)
    power = 10.0 ** math.floor(math.log10(raw))
    step = next(m * power for m in (1, 2, 2.5, 5, 10) if m * power >= raw)
    first = math.floor(lo / step) * step
    out: list[float] = []
    k = 0
    while not out or out[-1] < hi - 1e-9 * step:
        out.append(round(first + k * step, 12))
        k += 1
    return out


def _config(r: TrialResult) -> str:
    return str(r.configuration) if r.configuration is not None else repr(sorted(r.values.items()))


def _fmt(x: float) -> str:
    return f"{x:.6g}"


def _label(r: TrialResult) -> str:
    values = " ".join(f"{k}={value_text(v)}" for k, v in r.values.items())
    return f"t{r.index} {values} s{r.seed} ({r.phase})".replace("  ", " ")


def _axes(xs: list[float], ys: list[float], metric: str) -> tuple[list[str], tuple[float, float, float, float]]:
    """The frame, ticks and axis titles; the data ranges the ticks cover."""
    xt, yt = ticks(min(xs), max(xs)), ticks(min(ys), max(ys))
    x0, x1, y0, y1 = xt[0], xt[-1], yt[0], yt[-1]
    right, bottom = _W - _RIGHT, _H - _BOTTOM
    out = [f'<rect x="{_LEFT}" y="{_TOP}" width="{right - _LEFT}" height="{bottom - _TOP}" fill="none" stroke="#888"/>']
    for t in xt:
        x = _LEFT + (t - x0) / ((x1 - x0) or 1) * (right - _LEFT)
        out.append(f'<text x="{x:.1f}" y="{bottom + 16}" text-anchor="middle">{_fmt(t)}</text>')
    for t in yt:
        y = bottom - (t - y0) / ((y1 - y0) or 1) * (bottom - _TOP)
        out.append(f'<line x1="{_LEFT}" x2="{right}" y1="{y:.1f}" y2="{y:.1f}" stroke="#eee"/>')
        out.append(f'<text x="{_LEFT - 6}" y="{y + 4:.1f}" text-anchor="end">{_fmt(t)}</text>')
    out.append(f'<text x="{(_LEFT + right) / 2:.1f}" y="{_H - 10}" text-anchor="middle">iteration</text>')
    out.append(f'<text x="14" y="{(_TOP + bottom) / 2:.1f}" transform="rotate(-90 14 {(_TOP + bottom) / 2:.1f})" '
               f'text-anchor="middle">{escape(metric)}</text>')  # fmt: skip
    return out, (x0, x1, y0, y1)


def _line(r: TrialResult, colour: str, ranges: tuple[float, float, float, float]) -> str:
    x0, x1, y0, y1 = ranges
    right, bottom = _W - _RIGHT, _H - _BOTTOM
    points = " ".join(
        f"{_LEFT + (i - x0) / ((x1 - x0) or 1) * (right - _LEFT):.1f},"
        f"{bottom - (v - y0) / ((y1 - y0) or 1) * (bottom - _TOP):.1f}"
        for i, v in r.history
    )
    dash = f' stroke-dasharray="{_DASH[r.phase]}"' if r.phase in _DASH else ""
    return (
        f'<polyline data-trial="{r.index}" data-points="{len(r.history)}" points="{points}" fill="none" '
        f'stroke="{colour}" stroke-width="2"{dash}><title>{escape(_label(r))}</title></polyline>'
    )


def history_plot(results: Sequence[TrialResult], metric: str) -> str:
    """The SVG document: each trial's ``metric`` over iterations (see the module's doc)."""
    ordered = sorted(results, key=lambda r: r.index)
    drawn = [r for r in ordered if r.history]
    by_config: dict[str, str] = {}
    for r in ordered:
        by_config.setdefault(_config(r), PALETTE[len(by_config) % len(PALETTE)])
    colour = {r.index: by_config[_config(r)] for r in ordered}
    title = f"{metric} over iterations: {len(drawn)} of {len(ordered)} trials reported"
    body = [f'<text x="{_LEFT}" y="24" font-size="15">{escape(title)}</text>']
    if drawn:
        frame, ranges = _axes(
            [float(i) for r in drawn for i, _ in r.history], [v for r in drawn for _, v in r.history], metric
        )
        body += frame + [_line(r, colour[r.index], ranges) for r in drawn]
    for n, r in enumerate(ordered):
        y = _TOP + 8 + n * 18
        dash = f' stroke-dasharray="{_DASH[r.phase]}"' if r.phase in _DASH else ""
        x = _W - _RIGHT + 16
        body.append(
            f'<line x1="{x}" x2="{x + 24}" y1="{y}" y2="{y}" stroke="{colour[r.index]}" stroke-width="2"{dash}/>'
        )
        label = _label(r) + ("" if r.history else ", no reports")
        body.append(f'<text x="{x + 30}" y="{y + 4}">{escape(label)}</text>')
    # the legend's longest label sets the width (about 6.5 px a character at 11 px)
    width = max(_W, _W - _RIGHT + 46 + round(6.5 * max((len(_label(r)) + 12 for r in ordered), default=0)))
    head = (
        f'<svg xmlns="http://www.w3.org/2000/svg" width="{width}" height="{max(_H, _TOP + 24 + 18 * len(ordered))}" '
        f'font-family="sans-serif" font-size="11" data-metric={quoteattr(metric)}>'
    )
    return "\n".join([head, '<rect width="100%" height="100%" fill="white"/>', *body, "</svg>"]) + "\n"
