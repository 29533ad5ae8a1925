# sed -i '96s/if id(node.variable) not in skip:/if True:/' runtime/split_backward.py
"""``grads_ready`` tracks the leaves each forward reaches (``split_backward.graph_leaves``): the
stage's own inputs are leaves of its graph too, but no gradient the runner hands over, so they must
not be tracked, or the tracker keeps every microbatch's input activations alive past the step."""

from __future__ import annotations

import gc
import weakref

import torch
from torch import nn

from schedc.baselines import baseline_plan
from schedc.problem import Problem
from schedc.runtime import PipelineRunner, split_stages
from schedc.runtime.models import mlp_loss


class Watched(nn.Module):
    """A Linear that keeps a weak reference to each input it is given."""

    def __init__(self, seen: list[weakref.ref]) -> None:
        super().__init__()
        self.lin, self.seen = nn.Linear(4, 4), seen

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        self.seen.append(weakref.ref(x))
        return self.lin(x)


def test_stage_inputs_are_freed_after_a_step_with_grads_ready() -> None:
    """Stage 1's inputs (one leaf per microbatch) go once the step is over, as without grads_ready;
    tracking them as leaves that get gradients held them in the runner until the next step, and
    handed them to ``grads_ready``'s bookkeeping as if they were weights."""
    problem = Problem(p=1, m=2, v=2)
    seen: list[weakref.ref] = []
    layers = [nn.Linear(4, 4), Watched(seen)]
    handed: list[torch.Tensor] = []
    runner = PipelineRunner(baseline_plan("interleaved-zb", problem), split_stages(layers, problem, 0),
                            mlp_loss, grads_ready=handed.extend)
    torch.manual_seed(0)
    runner.step(torch.randn(4, 4), target=torch.randn(4, 4))
    gc.collect()
    assert len(seen) == problem.m
    assert [ref() for ref in seen] == [None] * problem.m
    assert {id(p) for p in handed} == {id(p) for layer in layers for p in layer.parameters()}
