"""A run resumed from checkpoints continues as the uninterrupted run: the runner keeps no training
state of its own (the weights are the stage modules', the moments the optimizer's), so stage and
optimizer state dicts saved after step 3, loaded into freshly built stages and a new runner, give
the losses of steps 4-6 bit for bit. Two gloo ranks, AdamW, 1F1B and ZB-V."""

from __future__ import annotations

import copy

import pytest

torch = pytest.importorskip("torch")

from schedc.problem import Problem  # noqa: E402
from schedc.runtime import PipelineRunner, split_stages  # noqa: E402
from schedc.runtime.models import mlp, mlp_loss  # noqa: E402
from tests.runtime_cases import WIDTH, run_baseline_cases  # noqa: E402

M = 4
CASES = {"1f1b": ("1f1b", Problem(p=2, m=M)), "zb-v": ("zb-v", Problem(p=2, m=M, v=2, placement="vshape"))}


def _batch(k: int) -> tuple:
    generator = torch.Generator().manual_seed(k)
    return torch.randn(M * 2, WIDTH, generator=generator), torch.randn(M * 2, WIDTH, generator=generator)


def _built(plan, rank: int, state: dict | None = None) -> tuple:
    torch.manual_seed(0)
    stages = split_stages(mlp(4, WIDTH), plan.problem, rank)
    optimizer = torch.optim.AdamW([p for s in stages.values() for p in s.parameters()], lr=1e-2)
    if state is not None:  # a checkpoint: what a training loop saves and loads with torch.save / load
        for index, stage in stages.items():
            stage.load_state_dict(state["stages"][index])
        optimizer.load_state_dict(state["optimizer"])
    return stages, optimizer, PipelineRunner(plan, stages, mlp_loss, timeout=60)


def _trained(stages, optimizer, runner, steps: range) -> list:
    losses = []
    for k in steps:
        x, y = _batch(k)
        optimizer.zero_grad()
        loss = runner.step(x if runner.holds_first else None, target=y if runner.holds_last else None)
        optimizer.step()
        losses.append(None if loss is None else loss.item())
    return losses


def _worker(rank: int, _world: int, plans: dict) -> dict:
    out = {}
    for case, plan in plans.items():
        uninterrupted = _trained(*_built(plan, rank), range(6))
        stages, optimizer, runner = _built(plan, rank)
        first = _trained(stages, optimizer, runner, range(3))
        state = copy.deepcopy({"stages": {k: s.state_dict() for k, s in stages.items()},
                               "optimizer": optimizer.state_dict()})
        resumed = _trained(*_built(plan, rank, state), range(3, 6))
        out[case] = (uninterrupted, first + resumed)
    return out


def test_a_run_resumed_from_checkpoints_continues_bit_for_bit() -> None:
    results = run_baseline_cases(_worker, CASES)
    for rank_out in results:
        for case, (uninterrupted, resumed) in rank_out.items():
            assert resumed == uninterrupted, case
    runs = [run for rank_out in results for run, _ in rank_out.values()]
    reported = [loss for run in runs for loss in run if loss is not None]
    assert len(reported) == 2 * 6 and len(set(reported)) >= 6  # the last stage's losses, moving as it trains
