"""Entry point for `ditask ... --main cartpole_dqn.main.main`: the pipeline of DI-engine's DQN example,
distributed, with a one-shot start-up barrier and the log lines of the package docstring."""

from __future__ import annotations

import os
from typing import Any

import gym
from ding.config import compile_config
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

from .middleware import StartupBarrier, collector_report, evaluator_report, learner_progress
from .report import emit
from .roles import barrier_timeout, pick_role, world_size

STOP_VALUE = 195.0
EXP_NAME = "cartpole_dqn_dist"
PROGRESS_EVERY = 20
ROLE_OF = {"learner": "LEARNER", "evaluator": "EVALUATOR", "collector": "COLLECTOR"}


def _config() -> Any:
    main_config.exp_name = EXP_NAME
    main_config.env.stop_value = STOP_VALUE
    # Only one process writes the formatted config (slow: yapf); the others skip it.
    return compile_config(main_config, create_cfg=create_config, auto=True, save_cfg=task.router.node_id == 0)


def _envs(count: int, cfg: Any) -> BaseEnvManagerV2:
    return BaseEnvManagerV2(
        env_fn=[lambda: DingEnvWrapper(gym.make("CartPole-v0")) for _ in range(count)], cfg=cfg.env.manager
    )


def main() -> None:
    logging.getLogger().setLevel(logging.INFO)
    rank = int(os.environ.get("DI_RANK", task.router.node_id or 0))
    world = world_size(os.environ.get("DI_NODES", ""))
    timeout = barrier_timeout(os.environ)
    budget = int(os.environ.get("DIHERA_TRAIN_ITER_BUDGET", "2000"))
    cfg = _config()
    ding_init(cfg)
    with task.start(async_mode=False, ctx=OnlineRLContext()):
        role = pick_role(task.router.labels or (), task.router.node_id or 0)
        task.add_role(getattr(task.role, ROLE_OF[role]))
        emit("role", role=role, node=task.router.node_id, world=world)
        set_pkg_seed(cfg.seed + rank, use_cuda=cfg.policy.cuda)
        model = DQN(**cfg.policy.model)
        buffer_ = DequeBuffer(size=cfg.policy.other.replay_buffer.replay_buffer_size)
        policy = DQNPolicy(cfg.policy, model=model)
        task.use(StartupBarrier(role, rank, world, timeout))
        task.use(ContextExchanger(skip_n_iter=1))
        task.use(ModelExchanger(model))
        task.use(interaction_evaluator(cfg, policy.eval_mode, _envs(cfg.env.evaluator_env_num, cfg)))
        task.use(evaluator_report(STOP_VALUE))
        task.use(eps_greedy_handler(cfg))
        task.use(StepCollector(cfg, policy.collect_mode, _envs(cfg.env.collector_env_num, cfg)))
        task.use(collector_report(PROGRESS_EVERY))
        task.use(data_pusher(cfg, buffer_))
        task.use(OffPolicyLearner(cfg, policy.learn_mode, buffer_))
        task.use(learner_progress(PROGRESS_EVERY, budget))
        task.use(online_logger(train_show_freq=10))
        task.use(CkptSaver(policy, cfg.exp_name, train_freq=100))
        task.run()
