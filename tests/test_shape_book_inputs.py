# sed -i '62s/if self.problem.p > 1 else/if self.problem.p >= 1 else/' runtime/shape_book.py
"""The shape book on one rank: variable_shapes with no process group to agree over."""

from __future__ import annotations

import torch
from torch import nn

from schedc.baselines import baseline_plan
from schedc.problem import Problem
from schedc.runtime import PipelineRunner, split_stages
from schedc.runtime.models import mlp, mlp_loss
from tests.runtime_cases import WIDTH


def test_a_one_rank_runner_with_variable_shapes_takes_each_batch_size() -> None:
    """One rank has no peer to agree with and no process group: the agreement must be skipped, as
    the plan check is, or its all-reduce fails without torch.distributed."""
    problem = Problem(p=1, m=2)
    layers = mlp(2, WIDTH)
    runner = PipelineRunner(baseline_plan("1f1b", problem), split_stages(layers, problem, 0), mlp_loss,
                            variable_shapes=True)
    model = nn.Sequential(*layers)
    for rows in (4, 6, 4):
        x, y = torch.randn(rows, WIDTH), torch.randn(rows, WIDTH)
        loss = runner.step(x, y)
        with torch.no_grad():
            want = sum(mlp_loss(model(xs), ys) / 2 for xs, ys in zip(x.chunk(2), y.chunk(2), strict=True))
        torch.testing.assert_close(loss, want)
