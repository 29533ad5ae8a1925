# sed -i '33s/a.kind in ("W", "B")/a.kind in ("W",)/' runtime/grads_ready.py
# sed -i '53s/self.finished.add(action.stage)/pass/' runtime/grads_ready.py
"""``grads_ready`` is handed a stage's parameters at that stage's last backward (runtime/grads_ready.py),
not all at the step's end: the overlap it exists for. Two stages on one rank, with the backward
split (its last W) or whole (its last B)."""

from __future__ import annotations

import pytest
import torch
from torch import nn

from schedc.baselines import baseline_plan
from schedc.problem import Problem
from schedc.runtime import PipelineRunner, split_stages
from schedc.runtime.models import mlp_loss


@pytest.mark.parametrize("name, split", [("interleaved-1f1b", False), ("interleaved-zb", True)])
def test_each_stage_s_parameters_are_handed_over_at_its_own_last_backward(name: str, split: bool) -> None:
    """Stage 1's last backward runs before stage 0's (stage 0's last one needs stage 1's gradient), so
    ``grads_ready`` gets stage 1's weight and bias in a first call and stage 0's in a second. A tracker
    that missed the last backward of a plan without W (or never marked a stage done) handed all four
    in one call at the step's end, and nothing overlapped."""
    problem = Problem(p=1, m=2, v=2, split=split)
    torch.manual_seed(0)
    layers = [nn.Linear(4, 4), nn.Linear(4, 4)]
    calls: list[list[torch.Tensor]] = []
    runner = PipelineRunner(baseline_plan(name, problem), split_stages(layers, problem, 0), mlp_loss,
                            grads_ready=lambda params: calls.append(list(params)))
    plan_order = [(a.stage, a.kind) for a in runner.plan.orders[0]]
    last = {s: max(i for i, (t, kind) in enumerate(plan_order) if t == s and kind in "WB") for s in (0, 1)}
    assert last[1] < last[0]
    runner.step(torch.randn(4, 4), target=torch.randn(4, 4))
    assert [sorted(id(p) for p in call) for call in calls] == [
        sorted(id(p) for p in layers[1].parameters()), sorted(id(p) for p in layers[0].parameters())]
