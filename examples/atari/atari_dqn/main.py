"""Entry point for `ditask ... --main atari_dqn.main.main` (the package docstring says how it is run)."""

from __future__ import annotations

from copy import deepcopy
from typing import Any

import torch
from ding.config import compile_config
from ding.data import DequeBuffer
from ding.envs import SubprocessEnvManagerV2
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
    nstep_reward_enhancer,
    online_logger,
    termination_checker,
)
from ding.model import DQN
from ding.policy import DQNPolicy
from ding.utils import set_pkg_seed
from ditk import logging
from dizoo.atari.config.serial.pong.pong_dqn_config import create_config, main_config
from dizoo.atari.envs.atari_env import AtariEnv

EXP_NAME = "pong_dqn_dist"
MAX_ENV_STEP = int(1e7)


def _config() -> Any:
    main_config.exp_name = EXP_NAME
    main_config.policy.cuda = torch.cuda.is_available()  # dizoo's config asks for CUDA; train on CPU without
    # Only node 0 writes the formatted config (slow: yapf), as in DI-engine's example.
    return compile_config(main_config, create_cfg=create_config, auto=True, save_cfg=task.router.node_id == 0)


def _envs(cfg: Any, count: int, is_train: bool) -> SubprocessEnvManagerV2:
    """``count`` Atari envs in subprocesses (the manager resets one env at once: built only where used)."""
    env_cfg = deepcopy(cfg.env)
    env_cfg.is_train = is_train
    return SubprocessEnvManagerV2(env_fn=[lambda: AtariEnv(env_cfg) for _ in range(count)], cfg=cfg.env.manager)


def _add_role() -> None:
    """DI-engine's stock roles: node id (= DI_RANK under `ditask --platform k8s`) 0 learner, 1 evaluator,
    the others collectors."""
    if task.router.node_id == 0:
        task.add_role(task.role.LEARNER)
    elif task.router.node_id == 1:
        task.add_role(task.role.EVALUATOR)
    else:
        task.add_role(task.role.COLLECTOR)


def main() -> None:
    logging.getLogger().setLevel(logging.INFO)
    cfg = _config()
    ding_init(cfg)
    with task.start(async_mode=False, ctx=OnlineRLContext()):
        set_pkg_seed(cfg.seed, use_cuda=cfg.policy.cuda)
        model = DQN(**cfg.policy.model)
        buffer_ = DequeBuffer(size=cfg.policy.other.replay_buffer.replay_buffer_size)
        policy = DQNPolicy(cfg.policy, model=model)

        if task.router.is_active:  # under ditask: one role per process, context and model over the mesh
            _add_role()
            task.use(ContextExchanger(skip_n_iter=1))
            task.use(ModelExchanger(model))

        # Each middleware is a no-op on a process without its role (without ditask: one process, every role).
        if task.has_role(task.role.EVALUATOR):
            task.use(interaction_evaluator(cfg, policy.eval_mode, _envs(cfg, cfg.env.evaluator_env_num, False)))
        task.use(eps_greedy_handler(cfg))
        if task.has_role(task.role.COLLECTOR):
            task.use(StepCollector(cfg, policy.collect_mode, _envs(cfg, cfg.env.collector_env_num, True)))
        if task.has_role(task.role.LEARNER):  # on the learner only: the trajectories it received, once
            task.use(nstep_reward_enhancer(cfg))
        task.use(data_pusher(cfg, buffer_))
        task.use(OffPolicyLearner(cfg, policy.learn_mode, buffer_))
        task.use(online_logger(train_show_freq=100))
        task.use(CkptSaver(policy, cfg.exp_name, train_freq=1000))
        task.use(termination_checker(max_env_step=MAX_ENV_STEP))
        task.run()
