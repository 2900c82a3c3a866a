"""schemathesis against the di-server's own OpenAPI document: no 5xx, every answer as documented.

The app runs in-process (ASGI) over the in-memory backend (tests/unit/fake_backend.py), where every job id
the generator invents resolves to a running job, so requests reach the scaling code instead of
stopping at 404. The fake reviewer accepts the admin token. Bounded and derandomized: the same
examples on every run, in a few seconds.
"""

from __future__ import annotations

from typing import Any

import pytest
import schemathesis
from hypothesis import HealthCheck, settings

from dihera.kube.snapshot import JobSnapshot
from dihera.scaling import ScaleRequest
from dihera.scaling.executor import ScaleResult
from dihera.server import ServerSettings, create_app
from tests.builders import job as job_doc
from tests.builders import task
from tests.unit.fake_backend import ADMIN, FakeBackend

pytestmark = pytest.mark.filterwarnings("ignore::DeprecationWarning")
JOB = ("team-a", "dqn")


class AnyJobBackend(FakeBackend):
    """Every namespace/name is the one job ``team-a/dqn`` (1 learner, 2 collectors, at most 6 replicas)."""

    def job(self, namespace: str, name: str) -> JobSnapshot | None:
        return super().job(*JOB)

    def scale(self, namespace: str, name: str, request: ScaleRequest) -> ScaleResult:
        return super().scale(*JOB, request)

    def record_profilings(self, namespace: str, name: str, data: Any) -> bool:
        return super().record_profilings(*JOB, data)


def _app() -> Any:
    backend = AnyJobBackend()
    backend.add(job_doc(task("learner"), task("collector", replicas=2), name=JOB[1], maxReplicas=6), JOB[0])
    return create_app(ServerSettings(idempotency_seconds=0.0), backend)


schema = schemathesis.openapi.from_asgi("/openapi.json", _app())


@schema.parametrize()
@settings(
    max_examples=15,
    derandomize=True,
    deadline=None,
    database=None,
    suppress_health_check=[HealthCheck.too_slow, HealthCheck.filter_too_much],
)
def test_every_route_answers_as_documented(case: schemathesis.Case) -> None:
    # Left out: "schema-valid data gets a 2xx". A well-formed request may still be refused by the job's
    # state (400 outside minReplicas/maxReplicas, a task keeps one replica), which the schema cannot say.
    response = case.call_and_validate(
        headers={"Authorization": f"Bearer {ADMIN}"},
        excluded_checks=[schemathesis.checks.positive_data_acceptance],
    )
    assert response.status_code < 500, response.text
