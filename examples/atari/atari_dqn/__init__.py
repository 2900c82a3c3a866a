"""Distributed DQN on Atari Pong for a DIJob, started with `ditask --platform k8s`.

    ditask --platform k8s --topology mesh --package <dir holding this package> \
        --main atari_dqn.main.main --ports <port>

DI-engine's own distributed DQN pipeline (``ding/example/dqn.py``: the role from the node id, which
``ditask --platform k8s`` sets to DI_RANK: 0 learner, 1 evaluator, others collectors; no ``--labels``)
with dizoo's Pong DQN config (``dizoo/atari/config/serial/pong/pong_dqn_config.py``: stop value 20,
n-step 3 rewards on the learner) and dizoo's Atari env (``dizoo.atari.envs.atari_env``, which needs
ale-py, OpenCV and the Atari ROMs: ci/images/di-engine-atari). DI-engine's
``dizoo/atari/example/atari_dqn_dist.py`` is not used: it imports ``context_exchanger`` and
``model_exchanger``, which no DI-engine release exports (0.4.5 to 0.5.3 raise ImportError).

The DIJob's tasks must be listed learner, evaluator, collector (ranks follow the spec's order). Every
process writes ``./pong_dqn_dist/`` (config, TensorBoard events, checkpoints): the working directory must
be writable. The evaluator ends the job when its mean return reaches the stop value; every process then
exits 0. Collectors also stop after 10 million env steps.
"""
