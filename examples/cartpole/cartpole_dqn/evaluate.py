"""`python -m cartpole_dqn.evaluate POLICY [--episodes N] [--out DIR]`: a trained policy run in CartPole.

POLICY is a file DI-engine's `CkptSaver` (`final.pth.tar`, `eval.pth.tar`) or the checkpointer
(`iteration_<n>.pth.tar`) wrote, or a directory holding one (what `dihera outputs --download` unpacks, an
Argo input artifact): the newest `final`, else `eval`, else `iteration_*` file in it. The weights are loaded
into DI-engine's DQN policy as the learner built it (with the unused big weight when the file has one:
bigmodel), and its eval mode plays `--episodes` episodes (greedy, as DI-engine's evaluator). One line per
episode and one in the end, on stdout:

    dihera-evaluated-episode episode=<i> return=<r>
    dihera-evaluated file=<path> episodes=<n> mean=<r> min=<r> params=<model parameters>

With `--out DIR`, the mean return also goes to `DIR/mean` and the whole result to `DIR/evaluation.json` (a
pipeline's evaluate step outputs them: workflows/python/cartpole_pipeline.py).
"""

from __future__ import annotations

import argparse
import json
import sys
from pathlib import Path
from typing import Any

#: What a directory is searched for, best first.
PREFERRED = ("final.pth.tar", "eval.pth.tar")


def find_policy(path: Path) -> Path:
    """The file to load: `path` itself, or the best file under the directory `path`."""
    if path.is_file():
        return path
    files = sorted(p for p in path.rglob("*.pth.tar") if p.is_file())
    for name in PREFERRED:
        named = [p for p in files if p.name == name]
        if named:
            return named[0]
    iterations = [p for p in files if p.name.startswith("iteration_")]
    if not iterations:
        raise FileNotFoundError(f"{path}: no final.pth.tar, eval.pth.tar or iteration_*.pth.tar in it")
    return max(iterations, key=lambda p: int(p.name.removeprefix("iteration_").split(".")[0]))


def load_policy(path: Path) -> tuple[Path, Any, Any, int]:
    """The file under `path` (`find_policy`), DI-engine's DQN policy and its model with its weights, and the
    model's parameter count."""
    import torch

    found = find_policy(path)
    state = torch.load(found, map_location="cpu", weights_only=True)
    policy, model, params = _policy(state)
    return found, policy, model, params


def _policy(state: dict[str, Any]) -> tuple[Any, Any, int]:
    from ding.config import compile_config
    from ding.model import DQN
    from ding.policy import DQNPolicy
    from dizoo.classic_control.cartpole.config.cartpole_dqn_config import create_config, main_config

    from .bigmodel import EXTRA, attach_extra, parameter_count

    cfg = compile_config(main_config, create_cfg=create_config, auto=True, save_cfg=False)
    model = DQN(**cfg.policy.model)
    extra = state["model"].get(f"{EXTRA}.weight")
    if extra is not None:
        attach_extra(model, int(extra.numel()), 0)
    policy = DQNPolicy(cfg.policy, model=model, enable_field=["learn", "eval"])
    policy.learn_mode.load_state_dict(state)  # model, target model and optimizer, as CkptSaver saved them
    return policy, model, parameter_count(model)


def play(policy: Any, seed: int) -> float:
    """One greedy episode of CartPole-v0 (the example's env), its return."""
    import gym
    import numpy as np
    import torch
    from ding.envs import DingEnvWrapper

    env = DingEnvWrapper(gym.make("CartPole-v0"))
    env.seed(seed)
    obs, total = env.reset(), 0.0
    while True:
        out = policy.eval_mode.forward({0: torch.as_tensor(obs).float()})
        step = env.step(out[0]["action"].numpy())
        total += float(np.asarray(step.reward).reshape(-1)[0])
        if step.done:
            env.close()
            return total
        obs = step.obs


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m cartpole_dqn.evaluate", description=__doc__.split("\n")[0])
    parser.add_argument("policy", type=Path, help="a .pth.tar file, or a directory holding one")
    parser.add_argument("--episodes", type=int, default=1)
    parser.add_argument("--seed", type=int, default=0)
    parser.add_argument("--out", type=Path, help="a directory for `mean` and `evaluation.json`")
    args = parser.parse_args(argv)
    from .report import emit

    try:
        path, policy, _, params = load_policy(args.policy)
    except FileNotFoundError as err:
        print(f"cartpole_dqn.evaluate: {err}", file=sys.stderr)
        return 2
    returns = []
    for episode in range(args.episodes):
        returns.append(play(policy, args.seed + episode))
        emit("evaluated-episode", episode=episode, **{"return": returns[-1]})
    mean = sum(returns) / len(returns)
    emit("evaluated", file=path, episodes=len(returns), mean=mean, min=min(returns), params=params)
    if args.out:
        args.out.mkdir(parents=True, exist_ok=True)
        (args.out / "mean").write_text(f"{mean}\n")
        result = {"file": str(path), "episodes": len(returns), "mean": mean, "min": min(returns), "returns": returns}
        (args.out / "evaluation.json").write_text(json.dumps(result) + "\n")
    return 0


if __name__ == "__main__":
    sys.exit(main())
