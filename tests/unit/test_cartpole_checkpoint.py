"""The CartPole example's checkpoints (cartpole_dqn/checkpoint.py, ckpt_files.py; docs/checkpoints.md): which files
count, what is pruned, the settings; with DI-engine (``DIHERA_DING_PYTHON``, see test_cartpole_example.py) a real
DQN learner's state saved and resumed: weights, optimizer, train_iter, env_step and the target network's count,
an unreadable newest file skipped for the one before it."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pytest

sys.path.insert(0, str(Path(__file__).resolve().parents[2] / "examples" / "cartpole"))

from cartpole_dqn.ckpt_files import checkpoint_name, iterations, leftovers, stale
from cartpole_dqn.settings import Settings

EXAMPLE = Path(__file__).resolve().parents[2] / "examples" / "cartpole"
DING_PYTHON = os.environ.get("DIHERA_DING_PYTHON")


def test_newest_first_others_ignored_and_the_old_ones_pruned(tmp_path: Path) -> None:
    for name in (checkpoint_name(40), checkpoint_name(100), checkpoint_name(7), "eval.pth.tar", "iteration_x.pth.tar"):
        (tmp_path / name).write_bytes(b"x")
    (tmp_path / f"{checkpoint_name(120)}.tmp.42").write_bytes(b"cut off")
    assert [n for n, _ in iterations(tmp_path)] == [100, 40, 7]
    assert [p.name for p in stale(tmp_path, 2)] == [checkpoint_name(7)]
    assert [p.name for p in leftovers(tmp_path)] == ["iteration_120.pth.tar.tmp.42"]
    assert iterations(tmp_path / "missing") == [] and leftovers(tmp_path / "missing") == []


def test_settings_read_the_checkpoint_directory_and_interval() -> None:
    plain = Settings.from_environ({"DI_NODES": "a,b"}, 0)
    assert plain.checkpoint_dir is None and plain.checkpoint_every == 100
    set_ = Settings.from_environ({"DI_CHECKPOINT_DIR": "/ckpt/learner-0", "DIHERA_CHECKPOINT_EVERY": "20"}, 0)
    assert set_.checkpoint_dir == "/ckpt/learner-0" and set_.checkpoint_every == 20
    with pytest.raises(ValueError, match="DIHERA_CHECKPOINT_EVERY='0': want an integer > 0"):
        Settings.from_environ({"DIHERA_CHECKPOINT_EVERY": "0"}, 0)


_RESUME_CHECK = """
import sys, types, torch
from ding.config import compile_config
from ding.model import DQN
from ding.policy import DQNPolicy
from dizoo.classic_control.cartpole.config.cartpole_dqn_config import create_config, main_config
from cartpole_dqn.checkpoint import Checkpointer
from cartpole_dqn.ckpt_files import checkpoint_name, iterations

directory = sys.argv[1]
cfg = compile_config(main_config, create_cfg=create_config, auto=True, save_cfg=False)

def policy():
    return DQNPolicy(cfg.policy, model=DQN(**cfg.policy.model))

first = policy()
model = first.learn_mode.get_attribute("model")
with torch.no_grad():
    for p in model.parameters():
        p.add_(0.5)
saver = Checkpointer(first.learn_mode, directory, every=10)
for it in (10, 20, 30):  # keep=2: iteration 10 is pruned
    saver.save(types.SimpleNamespace(train_iter=it, env_step=it * 8))
assert [n for n, _ in iterations(__import__("pathlib").Path(directory))] == [30, 20]
open(f"{directory}/{checkpoint_name(40)}", "wb").write(b"torn")  # a newer file that cannot be read

second = policy()
ctx = types.SimpleNamespace(train_iter=0, env_step=0)
assert Checkpointer(second.learn_mode, directory, every=10).resume(ctx) == 30
assert (ctx.train_iter, ctx.env_step) == (30, 240), vars(ctx)
for a, b in zip(model.state_dict().values(), second.learn_mode.get_attribute("model").state_dict().values()):
    assert torch.equal(a, b)
assert second.learn_mode.get_attribute("target_model")._update_count == 30

from cartpole_dqn.checkpoint import resumable_logger  # an empty train_output reaches online_logger as None
shown = []
log = resumable_logger(lambda ctx: shown.append(ctx.train_output))
log(types.SimpleNamespace(train_output=[]))
log(types.SimpleNamespace(train_output=[{"cur_lr": 0.001}]))
assert shown == [None, [{"cur_lr": 0.001}]], shown
print("ok")
"""


@pytest.mark.skipif(not DING_PYTHON, reason="no DI-engine: set DIHERA_DING_PYTHON")
def test_a_dqn_learner_resumes_from_its_newest_readable_checkpoint(tmp_path: Path) -> None:
    env = {**os.environ, "PYTHONPATH": str(EXAMPLE), "OMP_NUM_THREADS": "1"}
    done = subprocess.run(
        [str(DING_PYTHON), "-c", _RESUME_CHECK, str(tmp_path)],
        env=env,
        capture_output=True,
        text=True,
        check=False,
        timeout=300,
    )
    assert done.returncode == 0 and done.stdout.strip().endswith("ok"), (done.stdout[-2000:], done.stderr[-3000:])
    assert "dihera-checkpoint-unreadable file=iteration_40.pth.tar" in done.stdout, done.stdout
    assert "dihera-resumed iter=30 env_step=240 file=iteration_30.pth.tar" in done.stdout, done.stdout


_SIGTERM_CHECK = """
import os, signal, sys, types
from ding.config import compile_config
from ding.model import DQN
from ding.policy import DQNPolicy
from dizoo.classic_control.cartpole.config.cartpole_dqn_config import create_config, main_config
from cartpole_dqn.checkpoint import Checkpointer

directory, mode = sys.argv[1], sys.argv[2]
cfg = compile_config(main_config, create_cfg=create_config, auto=True, save_cfg=False)
policy = DQNPolicy(cfg.policy, model=DQN(**cfg.policy.model))
ctx = types.SimpleNamespace(train_iter=57, env_step=456)
saver = Checkpointer(policy.learn_mode, directory, every=100)
assert saver.on_sigterm(lambda: ctx)
if mode == "between steps":  # the learner waits for data: saved at once, as of its last step
    os.kill(os.getpid(), signal.SIGTERM)
elif mode == "inside a step":  # deferred: the step completes (iteration 58), then saved
    saver.save(ctx)  # iteration 57: the next periodic save is 100 iterations away
    def learner(c):
        os.kill(os.getpid(), signal.SIGTERM)
        print("dihera-step-ended", flush=True)
        c.train_iter += 1
    saver.around(learner)(ctx)
elif mode == "already saved":
    saver.save(ctx)
    os.kill(os.getpid(), signal.SIGTERM)
print("not terminated", flush=True)
"""


@pytest.mark.skipif(not DING_PYTHON, reason="no DI-engine: set DIHERA_DING_PYTHON")
@pytest.mark.parametrize(
    ("mode", "line", "files"),
    [
        ("between steps", "dihera-terminated iter=57 saved=1", ["iteration_57.pth.tar"]),
        ("inside a step", "dihera-terminated iter=58 saved=1", ["iteration_57.pth.tar", "iteration_58.pth.tar"]),
        ("already saved", "dihera-terminated iter=57 saved=0", ["iteration_57.pth.tar"]),
    ],
)
def test_sigterm_saves_the_last_completed_step_and_exits_143(
    tmp_path: Path, mode: str, line: str, files: list[str]
) -> None:
    env = {**os.environ, "PYTHONPATH": str(EXAMPLE), "OMP_NUM_THREADS": "1"}
    done = subprocess.run(
        [str(DING_PYTHON), "-c", _SIGTERM_CHECK, str(tmp_path), mode],
        env=env,
        capture_output=True,
        text=True,
        check=False,
        timeout=300,
    )
    out = done.stdout
    assert done.returncode == 143 and line in out and "not terminated" not in out, (out[-2000:], done.stderr[-3000:])
    assert sorted(p.name for p in tmp_path.iterdir()) == files
    if mode == "inside a step":  # not saved before the step ended
        assert out.index("dihera-step-ended") < out.index("dihera-checkpoint iter=58"), out
