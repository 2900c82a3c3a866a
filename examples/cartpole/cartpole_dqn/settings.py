"""The example's settings, read once from the environment at the entry point (no DI-engine needed)."""

from __future__ import annotations

import math
from collections.abc import Mapping
from dataclasses import dataclass

from .roles import world_size


@dataclass(frozen=True)
class Settings:
    """What `main` reads from the environment; nothing else in the package does.

    `learner_fresh`: a collector sends only while the learner's last beacon is at most this old (s);
    `learner_wait`: it holds a batch at most this long (s) waiting for one, then sends anyway;
    `extra_params`: > 0 adds an unused weight of about this many parameters to the model (see bigmodel);
    `checkpoint_dir`: the replica's directory in the job's checkpoint volume (`DI_CHECKPOINT_DIR`), where the
    learner resumes from and saves to every `checkpoint_every` iterations (see checkpoint); None: no checkpoints.
    In a sweep's trial (docs/experiments.md): `learning_rate` (`DIHERA_PARAM_LR`) and `seed` (`DIHERA_SEED`)
    override the config's; `trial` (`DIHERA_TRIAL`) set: the evaluator reports its returns to the di-server
    (`server_url`, `job_id`: `DI_SERVER_URL`, `DI_JOB_ID`; `server_ca`: `DI_SERVER_CA`, the CA of its HTTPS
    certificate; see metrics).
    """

    rank: int
    world: int
    train_iter_budget: int = 2000
    learner_fresh: float = 10.0
    learner_wait: float = 600.0
    extra_params: int = 0
    checkpoint_dir: str | None = None
    checkpoint_every: int = 100
    learning_rate: float | None = None
    seed: int | None = None
    trial: int | None = None
    server_url: str | None = None
    server_ca: str | None = None
    job_id: str | None = None
    #: seconds a collector sleeps after each collection step / the learner after each train step
    #: (`DIHERA_COLLECT_DELAY`, `DIHERA_TRAIN_DELAY`): slow one side to make the other wait (autoscaling's tests)
    collect_delay: float = 0.0
    train_delay: float = 0.0

    @classmethod
    def from_environ(cls, environ: Mapping[str, str], node_id: int) -> Settings:
        """Every problem is reported at once, naming the variable, its value and what would be valid."""
        problems: list[str] = []

        def number(key: str, default: float, *, integer: bool, minimum: float, exclusive: bool) -> float:
            raw = environ.get(key, "").strip()
            if not raw:
                return default
            try:
                value = int(raw) if integer else float(raw)
            except ValueError:
                value = math.nan
            if math.isnan(value) or value < minimum or (exclusive and value == minimum):
                kind = "an integer" if integer else "a number"
                bound = f"> {minimum:g}" if exclusive else f">= {minimum:g}"
                problems.append(f"{key}={raw!r}: want {kind} {bound}")
                return default
            return value

        def optional(key: str, *, integer: bool, minimum: float, exclusive: bool) -> float | None:
            if not environ.get(key, "").strip():
                return None
            value = number(key, math.nan, integer=integer, minimum=minimum, exclusive=exclusive)
            return None if math.isnan(value) else value

        lr = optional("DIHERA_PARAM_LR", integer=False, minimum=0, exclusive=True)
        seed = optional("DIHERA_SEED", integer=True, minimum=0, exclusive=False)
        trial = optional("DIHERA_TRIAL", integer=True, minimum=0, exclusive=False)
        settings = cls(
            rank=int(number("DI_RANK", node_id, integer=True, minimum=0, exclusive=False)),
            world=world_size(environ.get("DI_NODES", "")),
            train_iter_budget=int(number("DIHERA_TRAIN_ITER_BUDGET", 2000, integer=True, minimum=0, exclusive=True)),
            learner_fresh=number("DIHERA_LEARNER_FRESH", 10.0, integer=False, minimum=0, exclusive=True),
            learner_wait=number("DIHERA_LEARNER_WAIT", 600.0, integer=False, minimum=0, exclusive=False),
            extra_params=int(number("DIHERA_EXTRA_PARAMS", 0, integer=True, minimum=0, exclusive=False)),
            checkpoint_dir=environ.get("DI_CHECKPOINT_DIR", "").strip() or None,
            checkpoint_every=int(number("DIHERA_CHECKPOINT_EVERY", 100, integer=True, minimum=0, exclusive=True)),
            learning_rate=lr,
            seed=None if seed is None else int(seed),
            trial=None if trial is None else int(trial),
            server_url=environ.get("DI_SERVER_URL", "").strip() or None,
            server_ca=environ.get("DI_SERVER_CA", "").strip() or None,
            job_id=environ.get("DI_JOB_ID", "").strip() or None,
            collect_delay=number("DIHERA_COLLECT_DELAY", 0.0, integer=False, minimum=0, exclusive=False),
            train_delay=number("DIHERA_TRAIN_DELAY", 0.0, integer=False, minimum=0, exclusive=False),
        )
        if problems:
            raise ValueError("invalid environment: " + "; ".join(problems))
        return settings
