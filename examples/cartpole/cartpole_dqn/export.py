"""`python -m cartpole_dqn.export POLICY OUT`: a trained policy's Q-network as TorchScript, for serving.

POLICY as `cartpole_dqn.evaluate` takes it (a checkpoint file, or a directory holding one). OUT gets the
network alone (no optimizer, no target network, no DI-engine needed to run it): `torch.jit.load(OUT)` maps a
batch of CartPole observations (N x 4 floats) to Q-values (N x 2); the greedy action is their argmax. The
export is checked before it is kept: loaded back, it gives the Q-values the policy's model gives on 64 random
observations. One line on stdout:

    dihera-exported file=<OUT> bytes=<size> params=<model parameters> max_diff=<largest difference>
"""

from __future__ import annotations

import argparse
import sys
from pathlib import Path
from typing import Any

#: How close the reloaded export's Q-values must be to the model's.
TOLERANCE = 1e-5


def export(model: Any, out: Path) -> float:
    """Trace `model`'s Q-values into TorchScript at `out`; the largest difference after loading it back."""
    import torch

    class QValues(torch.nn.Module):
        def __init__(self, net: Any) -> None:
            super().__init__()
            self.net = net

        def forward(self, obs: torch.Tensor) -> torch.Tensor:
            return self.net(obs)["logit"]

    wrapped = QValues(model).eval()
    torch.manual_seed(0)
    with torch.no_grad():
        traced = torch.jit.trace(wrapped, torch.zeros(1, 4))
        out.parent.mkdir(parents=True, exist_ok=True)
        traced.save(str(out))
        probe = torch.randn(64, 4)
        return float((torch.jit.load(str(out))(probe) - wrapped(probe)).abs().max())


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m cartpole_dqn.export", description=__doc__.split("\n")[0])
    parser.add_argument("policy", type=Path, help="a .pth.tar file, or a directory holding one")
    parser.add_argument("out", type=Path, help="the TorchScript file to write")
    args = parser.parse_args(argv)
    from .evaluate import load_policy
    from .report import emit

    try:
        _, _, model, params = load_policy(args.policy)
    except FileNotFoundError as err:
        print(f"cartpole_dqn.export: {err}", file=sys.stderr)
        return 2
    diff = export(model, args.out)
    if diff > TOLERANCE:
        args.out.unlink()
        print(f"cartpole_dqn.export: the reloaded export differs by {diff} (> {TOLERANCE}): not kept", file=sys.stderr)
        return 1
    emit("exported", file=args.out, bytes=args.out.stat().st_size, params=params, max_diff=diff)
    return 0


if __name__ == "__main__":
    sys.exit(main())
