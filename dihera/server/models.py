"""Request and response bodies of the di-server (they make its OpenAPI document)."""

from __future__ import annotations

from typing import Any, Literal

from pydantic import BaseModel, ConfigDict, Field, field_validator

__all__ = [
    "Envelope",
    "ErrorBody",
    "ExperimentView",
    "JobSummary",
    "JobView",
    "PodView",
    "RemoveReplicasBody",
    "ReplicaOut",
    "ReplicasBody",
    "ScaleOut",
    "TaskOut",
    "TrainingReport",
    "TrialOut",
]


class ReplicasBody(BaseModel):
    """A replica count. Nothing else is accepted: the job comes from the path, never from the body."""

    model_config = ConfigDict(extra="forbid", strict=True)
    replicas: int = Field(ge=1, le=100_000, description="number of replicas (each task keeps at least one)")

    @field_validator("replicas", mode="before")
    @classmethod
    def _whole_number(cls, value: Any) -> Any:
        """JSON Schema's integer includes ``3.0``; strings and booleans stay refused (strict)."""
        return int(value) if isinstance(value, float) and value.is_integer() else value


class RemoveReplicasBody(BaseModel):
    """Replicas to remove, by name (``<task>-<index>``, as ``GET .../replicas`` lists them)."""

    model_config = ConfigDict(extra="forbid", strict=True)
    replicas: list[str] = Field(min_length=1, max_length=10_000, examples=[["collector-3"]])


class TaskOut(BaseModel):
    name: str
    type: str
    replicas: int = Field(description="live replicas (the membership), not only the spec")
    specReplicas: int


class JobSummary(BaseModel):
    namespace: str
    name: str
    phase: str | None
    replicas: int
    membershipGeneration: int | None = Field(description="None until the job has started")
    minReplicas: int | None
    maxReplicas: int | None
    tasks: list[TaskOut]


class ReplicaOut(BaseModel):
    name: str = Field(description="DAG task name, <task>-<index>; the Argo UI node name")
    rank: int
    task: str
    index: int
    fqdn: str
    pod: str | None = Field(description="pod name of the replica's current attempt")
    phase: str | None = Field(description="pod phase, None while no pod exists")


class JobView(BaseModel):
    """What the Argo UI's workflow link opens: the job, its replicas and its progress."""

    job: JobSummary
    progress: str | None = Field(description="the Workflow's progress N/M, as the Argo UI shows it (status.progress)")
    taskProgress: dict[str, str] = Field(description="per task, its live replicas' self-reported progress summed")
    checkpoint: dict[str, object] | None = Field(
        default=None,
        description="the last checkpoint the job reported (status.profilings.checkpoint: iteration, path, replica, "
        "time, onTerm), if any",
    )
    replicas: list[ReplicaOut]
    training: dict[str, Any] | None = Field(
        default=None, description="the RL figures the replicas reported (status.training), if any"
    )


class PodView(BaseModel):
    """What the Argo UI's pod link opens: the replica that pod ran or runs."""

    namespace: str
    job: str
    pod: str
    podPhase: str | None
    replica: ReplicaOut | None = Field(description="the replica, None when it left the job (scaled down, dropped)")
    current: bool = Field(description="the pod is the replica's current attempt (False: an earlier, retried one)")


class TrialOut(BaseModel):
    """One trial of a sweep: its DIJob, values and seed, how it ended or stands, and its metric."""

    index: int
    job: str
    values: dict[str, object]
    seed: int
    phase: str = Field(description="the DIJob's phase; Stopped when early stopping stopped it")
    metric: float | None = Field(description="the last value of the sweep's metric it reported")
    seconds: float | None = Field(description="from its start to its end, once it ended")


class ExperimentView(BaseModel):
    """What the Argo UI's workflow link opens on a sweep: its trials (the DIJobs labelled with its name)."""

    namespace: str
    name: str
    metric: str
    goal: str
    trials: int | None = Field(description="how many the sweep has (its Workflow's label), if known")
    counts: dict[str, int] = Field(description="trials done, running, failed, stopped (of those created)")
    best: dict[str, object] | None = Field(description="the best configuration so far: values, mean, halfWidth, seeds")
    rows: list[TrialOut]


class ScaleOut(BaseModel):
    namespace: str
    name: str
    changed: bool
    membershipGeneration: int
    replicas: dict[str, int]
    added: list[ReplicaOut]
    removed: list[str]


class ErrorBody(BaseModel):
    detail: str


class Envelope(BaseModel):
    """DI-orchestrator's answer: ``code`` 0 on success, 1 on error."""

    success: bool
    code: int
    message: str
    data: Any = None


class TrainingReport(BaseModel):
    """One replica's RL figures (``POST .../training``): its role, and only that role's figures
    (:data:`dihera.rl.merge.FIGURES`). NaN and infinities are accepted (Python's ``json`` writes them) and end
    up named in ``status.training.nonFinite``. The replica is the reporting pod when its own token is used."""

    model_config = ConfigDict(extra="forbid", strict=True)  # a boolean is no figure
    role: Literal["learner", "collector", "evaluator"]
    replica: str = Field(default="", max_length=253, description="who reports (ignored for a pod's own token)")
    iteration: float | None = Field(default=None, description="learner, evaluator: the learner's train iteration")
    iterationsPerSecond: float | None = Field(default=None, description="learner: train iterations per second")
    samplesPerSecond: float | None = Field(default=None, description="learner: samples consumed per second")
    dataWaitFraction: float | None = Field(default=None, description="learner: share of wall time waiting for data")
    loss: float | None = Field(default=None, description="learner: the last loss (only its finiteness is kept)")
    envSteps: float | None = Field(default=None, description="collector: env steps it collected")
    envStepsPerSecond: float | None = Field(default=None, description="collector: its env steps per second")
    modelIteration: float | None = Field(default=None, description="collector: the model iteration it acts with")
    return_: float | None = Field(default=None, alias="return", description="evaluator: the evaluation's mean return")

    def figures(self) -> dict[str, float]:
        """The figures given, by their wire names."""
        dumped = self.model_dump(by_alias=True, exclude={"role", "replica"}, exclude_none=True)
        return {str(k): float(v) for k, v in dumped.items()}
