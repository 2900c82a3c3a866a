"""A pipeline (pure): one DIJob trained to its end, then steps that take the policy it stored.

``train`` creates the DIJob (named ``<pipeline>-train``, labelled ``diengine/experiment: <pipeline>``, owned by
the Workflow) and ends with it; ``locate`` waits until the DIJob's ``status.artifacts`` lists ``policy`` (one of
the job's ``spec.artifacts``: the controller records it once Argo stored it) and outputs its key; then
``evaluate`` and, if given, ``export`` run with that artifact as their input at :data:`POLICY_PATH`, each a
container of the user's (:class:`Step`): their output parameters (files they write) and output artifacts are
the pipeline's results, shown on their nodes in the Argo UI.
"""

from __future__ import annotations

import copy
import re
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

from dihera.constants import LABEL_EXPERIMENT
from dihera.model import DIJob
from dihera.shapes.dijob import DIJobObject
from dihera.validation import load_job

__all__ = ["PIPELINE_NAME", "POLICY_PATH", "Pipeline", "PipelineError", "Step"]

#: Where a step finds the policy: the stored file, or a directory holding it (a stored directory's archive).
POLICY_PATH = "/tmp/policy"
#: The Workflow's name and the prefix of its DIJob's (``<name>-train``).
PIPELINE_NAME = re.compile(r"^[a-z]([-a-z0-9]{0,40}[a-z0-9])?$")
#: An output parameter's or artifact's name (Argo's rule, and readable in the UI).
OUTPUT_NAME = re.compile(r"^[a-zA-Z]([-_a-zA-Z0-9]{0,60}[a-zA-Z0-9])?$")


class PipelineError(ValueError):
    """A pipeline that cannot run; the message names the field and the value."""


@dataclass(frozen=True)
class Step:
    """A container run after training with the policy at :data:`POLICY_PATH`.

    ``outputs``: output parameters, each a file the container writes (name -> path); ``artifacts``: output
    artifacts (name -> path), stored in Argo's artifact repository; ``env``, ``working_dir``, ``resources``
    (a container's ``resources``) as in a pod spec.
    """

    image: str
    command: Sequence[str]
    outputs: Mapping[str, str] = field(default_factory=dict)
    artifacts: Mapping[str, str] = field(default_factory=dict)
    env: Mapping[str, str] = field(default_factory=dict)
    working_dir: str | None = None
    resources: Mapping[str, Any] | None = None

    def problems(self, where: str) -> list[str]:
        found = [] if self.image else [f"{where}.image: empty"]
        found += [] if self.command else [f"{where}.command: empty"]
        for kind, names in (("outputs", self.outputs), ("artifacts", self.artifacts)):
            for name, path in names.items():
                if not OUTPUT_NAME.match(name):
                    found.append(f"{where}.{kind}: {name!r} must match {OUTPUT_NAME.pattern}")
                if not path.startswith("/"):
                    found.append(f"{where}.{kind}.{name}: {path!r} is not an absolute path")
        return found


@dataclass(frozen=True)
class Pipeline:
    """``job`` trained, then ``evaluate`` (and ``export``) run on its stored artifact ``policy``.

    ``image``: dihera's, for the ``locate`` step; ``locate_timeout``: seconds ``locate`` waits for the artifact
    after the job Succeeded. ``service_account``, ``node_selector``, ``tolerations``: of the pipeline's own pods;
    the ServiceAccount may create and get DIJobs (docs/experiments.md).
    Raises :class:`PipelineError` naming the field.
    """

    name: str
    job: DIJob
    policy: str
    evaluate: Step
    image: str
    export: Step | None = None
    service_account: str | None = None
    node_selector: Mapping[str, str] | None = None
    tolerations: Sequence[Mapping[str, object]] = ()
    locate_timeout: int = 300

    def __post_init__(self) -> None:
        problems = [] if PIPELINE_NAME.match(self.name) else [f"name: {self.name!r} must match {PIPELINE_NAME.pattern}"]
        stored = [a.name for a in self.job.artifacts]
        if self.policy not in stored:
            problems.append(
                f"policy: {self.policy!r} is not one of the job's spec.artifacts ({', '.join(stored) or 'none'})"
            )
        problems += self.evaluate.problems("evaluate")
        problems += self.export.problems("export") if self.export else []
        if self.locate_timeout < 1:
            problems.append(f"locate_timeout: {self.locate_timeout} must be at least 1 second")
        if problems:
            raise PipelineError("; ".join(problems))
        load_job(self.job_manifest(), source=f"pipeline {self.name}")

    @property
    def namespace(self) -> str:
        return self.job.namespace

    @property
    def job_name(self) -> str:
        return f"{self.name}-train"

    def job_manifest(self) -> DIJobObject:
        """The DIJob the ``train`` step creates: ``job`` named ``<name>-train``, labelled with the pipeline."""
        manifest = copy.deepcopy(self.job.to_manifest())
        meta = manifest["metadata"]
        meta["name"] = self.job_name
        meta["labels"] = {**meta.get("labels", {}), LABEL_EXPERIMENT: self.name}
        manifest["spec"].pop("suspend", None)
        return manifest
