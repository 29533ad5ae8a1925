# sed -i '180s/allow_unused=True/allow_unused=False/' runtime/split_backward.py
# sed -i '192s/allow_unused=True/allow_unused=False/' runtime/split_backward.py
"""A stage may ignore one of its floating-point inputs (runtime/split_backward.py
``backward_input``): its I then sends a zero gradient for it (a gradient message always has every
tensor), with or without weights on the stage, instead of failing in autograd because the input
was not used in the graph."""

from __future__ import annotations

import copy

import pytest
import torch
from torch import nn

from schedc.baselines import baseline_plan
from schedc.problem import Problem
from schedc.runtime import PipelineRunner, split_stages
from schedc.runtime.models import mlp_loss


class Two(nn.Module):
    """Two float outputs, both made from the weights."""

    def __init__(self) -> None:
        super().__init__()
        self.a, self.b = nn.Linear(4, 4), nn.Linear(4, 4)

    def forward(self, x: torch.Tensor) -> tuple[torch.Tensor, torch.Tensor]:
        return self.a(x), self.b(x)


class FirstOnly(nn.Module):
    """Uses its first input only; ``weights`` decides whether it has any."""

    def __init__(self, weights: bool) -> None:
        super().__init__()
        self.f = nn.Linear(4, 4) if weights else nn.Tanh()

    def forward(self, h: torch.Tensor, _ignored: torch.Tensor) -> torch.Tensor:
        return self.f(h)


@pytest.mark.parametrize("weights", [True, False])
def test_an_ignored_float_input_gets_a_zero_gradient(weights: bool) -> None:
    """Split plan (I then W): the gradients equal the unpipelined ones, where ``b`` gets none (zero
    here, as the message carries zeros for the ignored input)."""
    torch.manual_seed(0)
    layers = [Two(), FirstOnly(weights)]
    x, y = torch.randn(4, 4), torch.randn(4, 4)
    ref = copy.deepcopy(layers)
    for xs, ys in zip(x.chunk(2), y.chunk(2), strict=True):
        (mlp_loss(ref[1](*ref[0](xs)), ys) / 2).backward()
    problem = Problem(p=1, m=2, v=2)
    plan = baseline_plan("interleaved-zb", problem)
    runner = PipelineRunner(plan, split_stages(layers, problem, 0), mlp_loss)
    runner.step(x, target=y)
    for p, want in zip(nn.Sequential(*layers).parameters(), nn.Sequential(*ref).parameters(), strict=True):
        if want.grad is None:
            assert p.grad is None or not p.grad.any()
        else:
            torch.testing.assert_close(p.grad, want.grad)
    assert layers[0].a.weight.grad.any()
