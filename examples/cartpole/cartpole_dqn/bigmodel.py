"""An optional unused weight that makes the exchanged model as big as an Atari DQN (`DIHERA_EXTRA_PARAMS`).

DI-engine's ModelExchanger sends the learner's whole `state_dict` after every iteration. The extra
`nn.Linear` is part of it but not of the forward pass and has no gradient, so training is unchanged; it
is initialised from a per-process seed, so a collector's copy equals the learner's only once a model
sent by the learner was loaded, which its digest shows. Needs torch only (not DI-engine).
"""

from __future__ import annotations

import hashlib
import math
import pickle

import torch
from torch import nn

#: The attribute (and state_dict prefix) of the extra layer.
EXTRA = "dihera_extra"


def extra_side(params: int) -> int:
    """The side n of the square, bias-free n x n weight closest to `params` parameters (1300 for 1.69 M)."""
    return max(1, round(math.sqrt(params)))


def attach_extra(model: nn.Module, params: int, seed: int) -> nn.Linear:
    """Add the unused layer to `model`, initialised from `seed` without touching torch's global RNG (the
    training's random stream is the same with and without it)."""
    side = extra_side(params)
    with torch.random.fork_rng(devices=[]):
        torch.manual_seed(seed)
        layer = nn.Linear(side, side, bias=False)
    layer.requires_grad_(False)
    model.add_module(EXTRA, layer)
    return layer


def extra_digest(model: nn.Module) -> str:
    """The first 16 hex digits of the SHA-256 of the extra weight's bytes."""
    weight = getattr(model, EXTRA).weight.detach().cpu().contiguous()
    return hashlib.sha256(weight.numpy().tobytes()).hexdigest()[:16]


def parameter_count(model: nn.Module) -> int:
    return sum(p.numel() for p in model.parameters())


def state_bytes(model: nn.Module) -> int:
    """Size of the pickled state_dict, about what ModelExchanger puts on the wire per model."""
    return len(pickle.dumps(model.state_dict(), protocol=pickle.HIGHEST_PROTOCOL))
