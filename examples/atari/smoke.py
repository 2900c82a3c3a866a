"""The Atari example's pipeline, small, on the one ROM ale-py ships (Tetris): checks without the Atari ROMs
that it builds, connects, trains and ends. Not a training run (Tetris with Pong's model and a few hundred
env steps).

    ditask --package examples/atari --main smoke.main --parallel-workers 4 --topology mesh --ports 52270

(4 local processes: node 0 learner, 1 evaluator, 2 and 3 collectors; every one exits 0 once the
collectors pass SMOKE_MAX_ENV_STEP, default 600.) Needs DI-engine's image packages
(ci/images/di-engine/requirements.txt) plus ale-py and OpenCV (ci/images/di-engine-atari/requirements.txt).
"""

from __future__ import annotations

import os

import atari_dqn.main as atari

atari.main_config.env.env_id = "ALE/Tetris-v5"  # bundled with ale-py; its gym id is ALE's v5 form
atari.main_config.policy.model.action_shape = 5  # Tetris' minimal action set
atari.main_config.env.collector_env_num = 2
atari.main_config.env.evaluator_env_num = 1
atari.main_config.env.n_evaluator_episode = 1
atari.main_config.policy.collect.n_sample = 32
atari.main_config.policy.learn.update_per_collect = 2
atari.main_config.policy.other.replay_buffer.replay_buffer_size = 2000
atari.EXP_NAME = "atari_smoke"
atari.MAX_ENV_STEP = int(os.environ.get("SMOKE_MAX_ENV_STEP", "600"))


def main() -> None:
    atari.main()
