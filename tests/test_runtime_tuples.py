"""Stages that take and return several tensors (as torch's PipelineStage allows) train exactly.

The model's boundaries carry two differentiable tensors, a float tensor that needs no gradient
(a constant made inside a stage) and an integer tensor; stage 0 takes two inputs. Its gradients
after one pipelined step on real gloo processes must equal those of the same layers run one after
another on the full batch, for split and unsplit backward, one and two stages per rank.
"""

from __future__ import annotations

import pytest
import torch
from torch import nn

from schedc.baselines import baseline_plan
from schedc.problem import Problem
from schedc.runtime import PipelineRunner, PlanMismatchError, split_stages
from schedc.runtime.models import mlp_loss
from tests.runtime_cases import run_baseline_cases

WIDTH = 6


class Fork(nn.Module):
    """(x, z) -> (a, b, a constant, integer labels)."""

    def __init__(self) -> None:
        super().__init__()
        self.a, self.b = nn.Linear(WIDTH, WIDTH), nn.Linear(WIDTH, WIDTH)

    def forward(self, x, z):
        c = torch.full((x.shape[0], 1), 2.0)
        return self.a(x) + z, torch.tanh(self.b(x)), c, (x[:, 0] > 0).long()


class Mix(nn.Module):
    def __init__(self) -> None:
        super().__init__()
        self.lin = nn.Linear(WIDTH, WIDTH)

    def forward(self, a, b, c, labels):
        return a * b * c + self.lin(a), b, c, labels


class Join(nn.Module):
    def __init__(self) -> None:
        super().__init__()
        self.lin = nn.Linear(WIDTH, WIDTH)

    def forward(self, a, b, c, labels):
        return self.lin(a + b) * c + labels.unsqueeze(1).float()


def layers(num_stages: int) -> list[nn.Module]:
    torch.manual_seed(0)
    return [Fork(), *(Mix() for _ in range(num_stages - 2)), Join()]


def _run_all(mods, x, z):
    value = (x, z)
    for mod in mods:
        value = mod(*value)
    return value


def _batch(m: int):
    gen = torch.Generator().manual_seed(3)
    return (torch.randn(2 * m, WIDTH, generator=gen), torch.randn(2 * m, WIDTH, generator=gen),
            torch.randn(2 * m, WIDTH, generator=gen))


CASES = {
    "1f1b/split": ("1f1b", Problem(p=2, m=4)),
    "gpipe/unsplit": ("gpipe", Problem(p=2, m=4, split=False)),
    "interleaved-1f1b/split": ("interleaved-1f1b", Problem(p=2, m=4, v=2)),
    "zb-v/split": ("zb-v", Problem(p=2, m=4, v=2, placement="vshape")),
}


def _worker(rank, _world, plans):
    out = {}
    for case, plan in plans.items():
        problem = plan.problem
        x, z, y = _batch(problem.m)
        ref = layers(problem.num_stages)
        mlp_loss(_run_all(ref, x, z), y).backward()
        mods = layers(problem.num_stages)
        stages = split_stages(mods, problem, rank)
        PipelineRunner(plan, stages, mlp_loss, timeout=60).step((x, z), target=y)
        mine = [pair for s in stages for pair in zip(mods[s].parameters(), ref[s].parameters(), strict=True)]
        try:
            for a, b in mine:
                torch.testing.assert_close(a.grad, b.grad)
            out[case] = max(float((a.grad - b.grad).abs().max()) for a, b in mine)
        except AssertionError as err:
            out[case] = str(err).splitlines()[0]
    return out


@pytest.fixture(scope="module")
def results():
    return run_baseline_cases(_worker, CASES)


@pytest.mark.parametrize("case", sorted(CASES))
def test_tuple_boundaries_give_the_full_batch_gradients(results, case):
    for per_rank in results:
        assert isinstance(per_rank[case], float) and per_rank[case] < 1e-5, per_rank[case]


def test_a_stage_output_that_is_not_tensors_is_a_clear_error():
    problem = Problem(p=1, m=2, v=2)
    stages = {0: nn.Linear(WIDTH, WIDTH), 1: nn.Sequential(nn.Linear(WIDTH, WIDTH), nn.Flatten())}
    stages[0].forward = lambda x: {"hidden": x}
    runner = PipelineRunner(baseline_plan("interleaved-1f1b", problem), stages, mlp_loss)
    with pytest.raises(PlanMismatchError, match="the output of stage 0 must be a tensor or a tuple"):
        runner.step(torch.randn(4, WIDTH), target=torch.randn(4, WIDTH))


def test_profiling_times_stages_with_tuple_boundaries():
    from schedc.runtime.profile import time_stages

    x, z, y = _batch(1)
    mods = layers(3)
    times = time_stages(mods, (x, z), mlp_loss, y, repeats=2, warmup=1)
    assert len(times) == 3 and all(t.tf > 0 and t.tb > 0 and t.tw > 0 for t in times)
    assert all(p.grad is None for mod in mods for p in mod.parameters())
