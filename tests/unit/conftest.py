"""Fixtures shared by the unit tests (helpers are in modules named for what they hold, never in test modules)."""

from __future__ import annotations

import pytest

from tests.builders import job, task
from tests.unit.fake_backend import FakeBackend


@pytest.fixture
def backend() -> FakeBackend:
    """The di-server's backend in memory holding team-a/dqn (a learner, 2 collectors, maxReplicas 6) and
    team-a/serial (one task of type none)."""
    b = FakeBackend()
    b.add(job(task("learner"), task("collector", replicas=2), name="dqn", maxReplicas=6))
    b.add(job(task("none", name="serial"), name="serial"))
    return b
