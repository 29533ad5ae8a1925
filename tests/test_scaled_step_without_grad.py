# sed -i '102s/call != "eval" and/call == "step" and/' runtime/arguments.py
"""``step`` trains, so under ``torch.no_grad()`` it is refused up front (runtime/runner.py
``_prepare``), with a GradScaler as without one: a check for the plain step only let the scaled
step run its forwards without a graph, fail part-way with another error and leave the runner
aborted for every later step."""

from __future__ import annotations

import pytest
import torch
from torch.amp import GradScaler

from schedc.baselines import baseline_plan
from schedc.problem import Problem
from schedc.runtime import GradDisabledError, PipelineRunner, split_stages
from schedc.runtime.models import mlp, mlp_loss


def test_a_scaled_step_under_no_grad_is_refused_before_it_starts() -> None:
    """The refusal is GradDisabledError, and the runner still trains afterwards (nothing ran)."""
    problem = Problem(p=1, m=2)
    runner = PipelineRunner(baseline_plan("1f1b", problem), split_stages(mlp(1, 4), problem, 0), mlp_loss)
    x, y = torch.randn(4, 4), torch.randn(4, 4)
    scaler = GradScaler("cpu")
    with torch.no_grad(), pytest.raises(GradDisabledError, match=r"outside torch\.no_grad\(\)"):
        runner.step(x, y, scaler=scaler)
    assert runner.aborted is None
    loss = runner.step(x, y, scaler=scaler)
    assert loss is not None and torch.isfinite(loss)
