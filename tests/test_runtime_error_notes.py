"""A user's own error inside a step keeps its type and message and gains a note naming the rank and
the action (``rank_label.noted``): torch's "mat1 and mat2 must have the same dtype" named neither."""

from __future__ import annotations

import pytest
import torch
from torch import nn

from schedc.baselines import baseline_plan
from schedc.problem import Problem
from schedc.runtime import PipelineRunner, PlanMismatchError
from schedc.runtime.models import mlp_loss


class FailingBackward(torch.autograd.Function):
    @staticmethod
    def forward(ctx, x: torch.Tensor) -> torch.Tensor:
        return x.clone()

    @staticmethod
    def backward(ctx, grad: torch.Tensor) -> torch.Tensor:
        raise ValueError("the user's backward fails")


class Stage(nn.Module):
    def __init__(self, fail: str) -> None:
        super().__init__()
        self.lin, self.fail = nn.Linear(4, 4), fail

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        if self.fail == "forward" and not x.is_meta:  # past the first step's shape probe, which names it
            raise KeyError("the user's forward fails")
        out = self.lin(x)
        return FailingBackward.apply(out) if self.fail == "backward" else out


def _losing(out: torch.Tensor, y: torch.Tensor) -> torch.Tensor:
    raise ArithmeticError("the user's loss fails")


@pytest.mark.parametrize("fail, stage, error, note", [
    ("forward", 0, KeyError, "0F0 (F of stage 0, microbatch 0)"),
    ("forward", 1, KeyError, "1F0 (F of stage 1, microbatch 0)"),
    ("backward", 1, ValueError, "1I0 (I of stage 1, microbatch 0)"),
    ("loss", 1, ArithmeticError, "1F0 (F of stage 1, microbatch 0)"),
])
def test_a_user_error_in_a_step_is_noted_with_where_it_ran(fail, stage, error, note):
    problem = Problem(p=1, m=2, v=2)
    stages = {s: Stage(fail if s == stage and fail != "loss" else "") for s in range(2)}
    runner = PipelineRunner(baseline_plan("interleaved-zb", problem), stages,
                            _losing if fail == "loss" else mlp_loss)
    with pytest.raises(error) as raised:
        runner.step(torch.randn(4, 4), torch.randn(4, 4))
    assert f"the user's {fail} fails" in str(raised.value)
    assert raised.value.__notes__ == [f"schedc: raised on rank 0 in {note}"]


def test_eval_notes_a_forward_error_and_the_runtime_s_own_errors_get_none():
    problem = Problem(p=1, m=2)
    runner = PipelineRunner(baseline_plan("1f1b", problem), {0: Stage("forward")}, mlp_loss)
    with pytest.raises(KeyError) as raised:
        runner.eval(torch.randn(4, 4))
    assert raised.value.__notes__ == ["schedc: raised on rank 0 in 0F0 (F of stage 0, microbatch 0)"]
    runner = PipelineRunner(baseline_plan("1f1b", problem), {0: Stage("")}, lambda out, y: out.sum().item())
    with pytest.raises(PlanMismatchError, match=r"^rank 0: loss_fn must return one number") as raised:
        runner.step(torch.randn(4, 4), torch.randn(4, 4))
    assert not getattr(raised.value, "__notes__", None)
