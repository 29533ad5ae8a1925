# sed -i '108s/loss.numel() != 1/loss.dim() != 0/' runtime/handlers.py
"""``loss_fn`` must return one number per microbatch (runtime/handlers.py ``checked_loss``): a
one-element tensor of shape (1,) is one number, as ``loss.backward()`` takes it, and trains exactly
as the 0-d loss does; only more than one element is refused."""

from __future__ import annotations

import copy

import pytest
import torch
from torch import nn

from schedc.baselines import baseline_plan
from schedc.problem import Problem
from schedc.runtime import PipelineRunner, PlanMismatchError, split_stages
from schedc.runtime.models import mlp, mlp_loss


def _step(layers: list[nn.Module], loss_fn, problem: Problem) -> torch.Tensor:
    plan = baseline_plan("interleaved-zb", problem)
    runner = PipelineRunner(plan, split_stages(layers, problem, 0), loss_fn)
    torch.manual_seed(3)
    return runner.step(torch.randn(4, 4), target=torch.randn(4, 4))


def test_a_loss_of_shape_one_trains_as_a_scalar_loss() -> None:
    """Same loss, same gradients as with the 0-d loss; a check on ``dim() == 0`` instead of one
    element refused this loss, which ``loss.backward()`` accepts."""
    problem = Problem(p=1, m=2, v=2)
    torch.manual_seed(0)
    scalar_layers = mlp(2, 4)
    shaped_layers = copy.deepcopy(scalar_layers)
    want = _step(scalar_layers, mlp_loss, problem)
    got = _step(shaped_layers, lambda out, y: mlp_loss(out, y).reshape(1), problem)
    torch.testing.assert_close(got.reshape(()), want)
    for a, b in zip(nn.Sequential(*scalar_layers).parameters(), nn.Sequential(*shaped_layers).parameters(),
                    strict=True):
        torch.testing.assert_close(b.grad, a.grad)
    with pytest.raises(PlanMismatchError, match=r"must return one number per microbatch .* got \(2,\)"):
        _step(mlp(2, 4), lambda out, y: mlp_loss(out, y).reshape(1).repeat(2), problem)
