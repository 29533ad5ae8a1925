# sed -i '200s/saved.inputs = saved.outputs = ()/saved.outputs = ()/' runtime/handlers.py
"""I keeps only what W needs (runtime/handlers.py ``input_grad``): a stage without weights needs
nothing for W, so its I frees its input activation too, as it frees the graph (split_backward);
keeping the stage's inputs in its saved state held one activation per microbatch until a W that
does nothing."""

from __future__ import annotations

import gc
import weakref

import torch
from torch import nn

from schedc.actions import Action
from schedc.problem import Problem
from schedc.runtime import split_stages
from schedc.runtime.comm import Mailbox
from schedc.runtime.handlers import HANDLERS, StepContext
from schedc.runtime.models import mlp_loss


class WatchedTanh(nn.Module):
    """A weightless stage that keeps a weak reference to each input it is given."""

    def __init__(self) -> None:
        super().__init__()
        self.seen: list[weakref.ref] = []

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        self.seen.append(weakref.ref(x))
        return torch.tanh(x)


def test_a_weightless_stage_frees_its_input_at_its_i() -> None:
    """Run F0 F1 F2 I2 I1 by hand: after stage 1's I its input leaf is gone, before any W ran."""
    problem = Problem(p=1, m=1, v=3)
    watched = WatchedTanh()
    stages = split_stages([nn.Linear(4, 4), watched, nn.Linear(4, 4)], problem, 0)
    params = {s: list(m.parameters()) for s, m in stages.items()}
    ctx = StepContext(stages=stages, params=params, num_stages=3,
                      mailbox=Mailbox(None, 0, 3, 1.0, torch.device("cpu")),
                      inputs=[torch.randn(2, 4)], targets=[torch.randn(2, 4)], loss_fn=mlp_loss,
                      loss_scale=1.0)
    for kind, stage in (("F", 0), ("F", 1), ("F", 2), ("I", 2)):
        HANDLERS[kind](ctx, Action(kind, stage, 0))
    gc.collect()
    assert watched.seen[0]() is not None  # held for stage 1's backward
    HANDLERS["I"](ctx, Action("I", 1, 0))
    gc.collect()
    assert watched.seen[0]() is None
    assert ctx.saved[(1, 0)].weight_work is not None  # its W is still to run (and does nothing)
