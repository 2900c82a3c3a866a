"""Sweeps: one DIJob run over a search space and several seeds as one Argo Workflow (docs/experiments.md).

- :mod:`~dihera.sweeps.space`: the search space (choice, int_range, uniform, loguniform), grid or random
  search, the trials
- :mod:`~dihera.sweeps.sweep`: :class:`Sweep`, each trial's DIJob (its values as environment variables)
- :mod:`~dihera.sweeps.workflow`: the Workflow (one node per trial, then the summary)
- :mod:`~dihera.sweeps.plugin`: podless trials, the executor plugin that creates the trials' DIJobs
- :mod:`~dihera.sweeps.results`: the results table, the mean and 95 % interval over seeds, the best
- :mod:`~dihera.sweeps.stopping`: early stopping, the median rule or successive halving over the trials' histories
- :mod:`~dihera.sweeps.plot`: every trial's metric over iterations as an SVG chart (the summary's ``plot`` artifact)

Everything here is pure; reading the trials back from a cluster is :mod:`dihera.kube.experiments`.
Users build sweeps with :func:`dihera.experiment.sweep`.
"""

from dihera.sweeps.results import Goal, TrialResult
from dihera.sweeps.space import Choice, Grid, IntRange, LogUniform, Random, SweepSpaceError, Trial, Uniform
from dihera.sweeps.sweep import Runner, Sweep

__all__ = [
    "Choice",
    "Goal",
    "Grid",
    "IntRange",
    "LogUniform",
    "Random",
    "Runner",
    "Sweep",
    "SweepSpaceError",
    "Trial",
    "TrialResult",
    "Uniform",
]
