"""The sweep's plot: every trial's metric over iterations as SVG (pure)."""

from __future__ import annotations

import xml.etree.ElementTree as ET

import pytest

from dihera.sweeps import TrialResult
from dihera.sweeps.plot import PALETTE, history_plot, ticks

SVG = "{http://www.w3.org/2000/svg}"


def trials() -> list[TrialResult]:
    return [
        TrialResult(0, "s-t0", {"lr": 0.01}, 0, "Succeeded", 99.0, 30.0, 0, ((10, 5.0), (20, 40.0), (30, 99.0))),
        TrialResult(1, "s-t1", {"lr": 0.01}, 1, "Failed", 100.0, 20.0, 0, ((10, 6.0), (20, 100.0))),
        TrialResult(2, "s-t2", {"lr": 0.5}, 0, "Stopped", 3.0, 40.0, 1, ((10, 1.0), (40, 3.0))),
        TrialResult(3, "s-t3", {"lr": 0.5}, 1, "Pending", None, None, 1, ()),
    ]


def lines(svg: str) -> dict[str, ET.Element]:
    return {e.get("data-trial", ""): e for e in ET.fromstring(svg).iter(f"{SVG}polyline")}


def points(line: ET.Element) -> list[tuple[float, float]]:
    return [(float(x), float(y)) for x, y in (p.split(",") for p in (line.get("points") or "").split())]


def test_each_trial_that_reported_is_a_line_coloured_by_configuration_and_drawn_by_how_it_ended() -> None:
    svg = history_plot(trials(), "evalReturn")
    drawn = lines(svg)
    assert sorted(drawn) == ["0", "1", "2"], "trial 3 reported nothing: listed, not drawn"
    assert [len(points(drawn[k])) for k in ("0", "1", "2")] == [3, 2, 2]
    assert drawn["0"].get("stroke") == drawn["1"].get("stroke") == PALETTE[0], "seeds of one configuration"
    assert drawn["2"].get("stroke") == PALETTE[1]
    assert drawn["0"].get("stroke-dasharray") is None and drawn["2"].get("stroke-dasharray") == "6 4"
    assert drawn["1"].get("stroke-dasharray") == "2 3", "failed: dotted"
    assert drawn["2"].findtext(f"{SVG}title") == "t2 lr=0.5 s0 (Stopped)"
    text = " ".join(t.text or "" for t in ET.fromstring(svg).iter(f"{SVG}text"))
    assert "evalReturn over iterations: 3 of 4 trials reported" in text and "t3 lr=0.5 s1 (Pending), no reports" in text


def test_a_line_climbs_on_screen_as_its_values_climb_and_iterations_go_right() -> None:
    (x0, y0), (x1, y1), (x2, y2) = points(lines(history_plot(trials(), "evalReturn"))["0"])
    assert x0 < x1 < x2 and y0 > y1 > y2, "SVG's y grows downwards"
    # the same iteration is at the same x in every line
    assert points(lines(history_plot(trials(), "evalReturn"))["2"])[0][0] == x0


def test_the_plot_is_deterministic_and_escapes_what_it_writes() -> None:
    odd = [TrialResult(0, "s-t0", {"opt": "a<b&c"}, 0, "Running", 1.0, None, None, ((1, 1.0),))]
    svg = history_plot(odd, "loss")
    assert svg == history_plot(odd, "loss")
    (line,) = lines(svg).values()
    assert line.findtext(f"{SVG}title") == "t0 opt=a<b&c s0 (Running)", "parsed back from escaped text"
    assert len(points(line)) == 1
    assert ET.fromstring(history_plot([], "loss")).tag == f"{SVG}svg", "no trials: an empty chart, still SVG"


@pytest.mark.parametrize(
    ("lo", "hi", "expected"),
    [
        (0, 99, [0, 25, 50, 75, 100]),
        (1, 4, [1, 2, 3, 4]),
        (-0.3, 0.7, [-0.5, -0.25, 0, 0.25, 0.5, 0.75]),
        (5, 5, [4, 4.5, 5, 5.5, 6]),
        (9.5, 200.2, [0, 50, 100, 150, 200, 250]),
    ],
)
def test_ticks_are_round_and_cover_the_range(lo: float, hi: float, expected: list[float]) -> None:
    got = ticks(lo, hi)
    assert got == pytest.approx(expected) and got[0] <= lo and got[-1] >= hi


def test_ticks_refuse_what_cannot_be_drawn() -> None:
    with pytest.raises(ValueError, match=r"ticks: bounds nan \.\. 1 must be finite"):
        ticks(float("nan"), 1)
