"""A pod's facts are worked out once per version: a pass over a big job redoes only the pods that changed."""

from __future__ import annotations

import copy
from typing import Any

from dihera.controller.decide.replicas import pod_facts
from tests.builders import PodBuilder


def pod(version: str, phase: str = "Running", uid: str | None = "u1") -> dict[str, Any]:
    """A collector's pod at ``version``: its main container running, or (another phase) in CrashLoopBackOff."""
    built = PodBuilder("j-collector-0-1").version(version).created("t").phase(phase)
    if uid:
        built.uid(uid)
    if phase == "Running":
        return built.running("main").obj()
    return built.waiting("main", "CrashLoopBackOff", "back-off").obj()


def test_the_same_version_is_worked_out_once() -> None:
    first = pod("10")
    assert pod_facts(first) is pod_facts(copy.deepcopy(first))  # another copy of that version (a live read)


def test_a_new_version_is_worked_out_again() -> None:
    running, stuck = pod_facts(pod("20")), pod_facts(pod("21", phase="Pending"))
    assert (running.phase, running.problem) == ("Running", None)
    assert (stuck.phase, stuck.problem) == ("Pending", ("CrashLoopBackOff", "container main: back-off"))


def test_a_pod_without_uid_or_version_is_never_remembered() -> None:
    assert pod_facts(pod("30", uid=None)) is not pod_facts(pod("30", uid=None))
    assert pod_facts(pod("", phase="Pending")).phase == "Pending"
