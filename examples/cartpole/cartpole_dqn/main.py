"""Entry point for `ditask ... --main cartpole_dqn.main.main`: the pipeline of DI-engine's DQN example,
distributed, with the learner beacon and the collector send gate (`link`) and the log lines of the
package docstring."""

from __future__ import annotations

import os
import socket
import threading
import time
from typing import Any

import gym
from dihera_figures import dihera_figures
from ding.config import compile_config, save_config
from ding.data import DequeBuffer
from ding.envs import BaseEnvManagerV2, DingEnvWrapper
from ding.framework import ding_init, task
from ding.framework.context import OnlineRLContext
from ding.framework.middleware import (
    CkptSaver,
    ContextExchanger,
    ModelExchanger,
    OffPolicyLearner,
    StepCollector,
    data_pusher,
    eps_greedy_handler,
    interaction_evaluator,
    online_logger,
)
from ding.model import DQN
from ding.policy import DQNPolicy
from ding.utils import set_pkg_seed
from ditk import logging
from dizoo.classic_control.cartpole.config.cartpole_dqn_config import create_config, main_config

from .bigmodel import attach_extra, extra_digest, parameter_count, state_bytes
from .checkpoint import checkpointer, resumable_logger
from .gate import incarnation_id
from .link import LearnerBeacon, collector_gate, kick
from .metrics import CheckpointReporter, MetricsReporter, http_sender, profilings_url
from .middleware import collector_model_report, collector_report, evaluator_report, learner_progress, pause
from .report import emit
from .roles import pick_role
from .settings import Settings

STOP_VALUE = 195.0
EXP_NAME = "cartpole_dqn_dist"
PROGRESS_EVERY = 20
ROLE_OF = {"learner": "LEARNER", "evaluator": "EVALUATOR", "collector": "COLLECTOR"}


def _config(settings: Settings) -> Any:
    main_config.exp_name = EXP_NAME
    main_config.env.stop_value = STOP_VALUE
    if settings.learning_rate is not None:  # a sweep's trial (DIHERA_PARAM_LR)
        main_config.policy.learn.learning_rate = settings.learning_rate
    # a sweep's trial sets the seed (DIHERA_SEED; each process adds its rank); compile_config writes cfg.seed
    # No process formats and saves the config here (yapf: 5-40 s before the learner could subscribe);
    # the learner writes it once its subscriptions exist (_write_config).
    seed = settings.seed if settings.seed is not None else 0
    return compile_config(main_config, create_cfg=create_config, auto=True, save_cfg=False, seed=seed)


def _write_config(cfg: Any) -> threading.Thread:
    """The files `compile_config(save_cfg=True)` writes (total_config.py, formatted_total_config.py), from
    a thread: formatting with yapf takes seconds of the learner's CPU, not of its start."""

    def _write() -> None:
        os.makedirs(cfg.exp_name, exist_ok=True)
        save_config(cfg, os.path.join(cfg.exp_name, "total_config.py"), save_formatted=True)

    writer = threading.Thread(target=_write, name="dihera-config-writer", daemon=True)
    writer.start()
    return writer


def _envs(count: int, cfg: Any) -> BaseEnvManagerV2:
    return BaseEnvManagerV2(
        env_fn=[lambda: DingEnvWrapper(gym.make("CartPole-v0")) for _ in range(count)], cfg=cfg.env.manager
    )


def _model(cfg: Any, settings: Settings) -> DQN:
    model = DQN(**cfg.policy.model)
    if settings.extra_params > 0:
        attach_extra(model, settings.extra_params, cfg.seed + settings.rank)
    return model


def _pipeline(cfg: Any, settings: Settings, model: DQN, metrics: MetricsReporter | None) -> tuple[Any, Any]:
    """Register the middlewares (each a no-op on a process without its role); return the exchangers."""
    buffer_ = DequeBuffer(size=cfg.policy.other.replay_buffer.replay_buffer_size)
    policy = DQNPolicy(cfg.policy, model=model)
    # Before the learner announces itself (kick): its peers' first model and iteration are the restored ones.
    ckpt = checkpointer(policy.learn_mode, settings.checkpoint_dir, settings.checkpoint_every)
    if ckpt is not None:
        ckpt.on_saved = _checkpoint_reports(settings)
        ckpt.resume(task.ctx)
    context_exchanger, model_exchanger = ContextExchanger(skip_n_iter=1), ModelExchanger(model)
    task.use(context_exchanger)
    task.use(model_exchanger)
    task.use(interaction_evaluator(cfg, policy.eval_mode, _envs(cfg.env.evaluator_env_num, cfg)))
    task.use(evaluator_report(STOP_VALUE, metrics))
    task.use(eps_greedy_handler(cfg))
    task.use(StepCollector(cfg, policy.collect_mode, _envs(cfg.env.collector_env_num, cfg)))
    task.use(collector_report(PROGRESS_EVERY))
    task.use(pause(task.role.COLLECTOR, settings.collect_delay))
    if settings.extra_params > 0:
        task.use(collector_model_report(model))
    task.use(data_pusher(cfg, buffer_))
    learner = OffPolicyLearner(cfg, policy.learn_mode, buffer_)
    task.use(ckpt.around(learner) if ckpt is not None else learner)
    task.use(learner_progress(PROGRESS_EVERY, settings.train_iter_budget))
    task.use(pause(task.role.LEARNER, settings.train_delay))
    task.use(resumable_logger(online_logger(train_show_freq=10)))
    # DI-engine's own saver keeps the best-evaluated (evaluator) and the final policy (learner and evaluator) in
    # <exp_name>/ckpt, which spec.artifacts keeps; no periodic saves: it would keep every one of them in the
    # working directory, and the learner's periodic checkpoints are the checkpointer's (two, in the volume).
    task.use(CkptSaver(policy, cfg.exp_name))
    # RL figures into the DIJob's status.training (examples/figures/dihera_figures.py; a no-op without a di-server)
    task.use(dihera_figures())
    # Last: runs after StepCollector and before the backward pass in which ContextExchanger sends.
    task.use(collector_gate(settings.learner_fresh, settings.learner_wait))
    return context_exchanger, model_exchanger


def _announce_learner(cfg: Any, settings: Settings, model: DQN, exchangers: tuple[Any, Any]) -> threading.Thread:
    """On the learner, its subscriptions made: beacon, kick, contract lines, then the config files."""
    incarnation = incarnation_id(socket.gethostname(), os.getpid(), time.time())
    LearnerBeacon(incarnation).start()
    kick(*exchangers)
    emit("learner-up", role="learner", node=task.router.node_id, incarnation=incarnation)
    if settings.extra_params > 0:
        emit("model", params=parameter_count(model), bytes=state_bytes(model), digest=extra_digest(model))
    return _write_config(cfg)


def _checkpoint_reports(settings: Settings) -> Any:
    """With a di-server: the learner's checkpoints reported into the DIJob's status (`status.profilings.checkpoint`;
    the replica is its checkpoint directory's name, `<task>-<index>`); the periodic ones with the usual timeout and
    sent again when they failed, the one saved on SIGTERM with a short one: it is sent within the pod's grace
    period (5 s in the example), after the save (0.1-1.2 s)."""
    if not settings.server_url or not settings.job_id or not settings.checkpoint_dir:
        return None
    url = profilings_url(settings.server_url, settings.job_id)
    reporter = CheckpointReporter(
        http_sender(url, ca=settings.server_ca),
        os.path.basename(settings.checkpoint_dir.rstrip("/")),
        send_final=http_sender(url, timeout=1.5, ca=settings.server_ca),
    )
    return reporter.saved


def _metrics(settings: Settings) -> MetricsReporter | None:
    """In a sweep's trial (DIHERA_TRIAL) with a di-server: the evaluator's reporter (metrics)."""
    if settings.trial is None or not settings.server_url or not settings.job_id:
        return None
    return MetricsReporter(http_sender(profilings_url(settings.server_url, settings.job_id), ca=settings.server_ca))


def main() -> None:
    logging.getLogger().setLevel(logging.INFO)
    settings = Settings.from_environ(os.environ, task.router.node_id or 0)
    cfg = _config(settings)
    ding_init(cfg)
    writer: threading.Thread | None = None
    metrics: MetricsReporter | None = None
    with task.start(async_mode=False, ctx=OnlineRLContext()):
        role = pick_role(task.router.labels or (), task.router.node_id or 0)
        task.add_role(getattr(task.role, ROLE_OF[role]))
        emit("role", role=role, node=task.router.node_id, world=settings.world)
        set_pkg_seed(cfg.seed + settings.rank, use_cuda=cfg.policy.cuda)
        model = _model(cfg, settings)
        metrics = _metrics(settings) if role == "evaluator" else None
        exchangers = _pipeline(cfg, settings, model, metrics)
        writer = _announce_learner(cfg, settings, model, exchangers) if role == "learner" else None
        task.run()
    if metrics is not None:  # the last return reaches the DIJob's status before the evaluator exits
        metrics.close()
    if writer is not None:  # after the task stopped (its finish sent): the config files complete
        writer.join(timeout=120)
