"""Data-parallel replicas whose loss scales differ (``dp_group`` with a float16 scaler): their
averages would mix gradients of two scales without a word, so every step's replica check compares
the scale too. Two replicas, each a one-rank pipeline, on two gloo processes."""

from __future__ import annotations

import pytest
import torch
from torch import nn
from torch.amp import GradScaler
from torch.nn import functional

from schedc.baselines import baseline_plan
from schedc.problem import Problem
from schedc.runtime import PipelineRunner, split_stages
from schedc.runtime.launch import run_local

W, M = 4, 2


def _runner(rank: int, world: int) -> tuple[PipelineRunner, list[nn.Module]]:
    import torch.distributed as dist

    pipelines, dp = [dist.new_group([r]) for r in range(world)], dist.new_group(list(range(world)))
    plan = baseline_plan("1f1b", Problem(p=1, m=M))
    torch.manual_seed(0)
    layers = [nn.Linear(W, W), nn.Linear(W, W)]
    runner = PipelineRunner(plan, split_stages(layers, plan.problem, 0), functional.mse_loss, pipelines[rank],
                            dp_group=dp, timeout=30)
    return runner, layers


def _outcome(step) -> str:
    try:
        step()
    except Exception as err:
        return f"{type(err).__name__}: {err}"
    return "stepped"


def _scales(rank: int, world: int) -> dict:
    """Scales that part after an inf that one replica alone saw (a gradient edited after the
    step), then a scaler on one replica only; each on its own runner."""
    x, y = torch.ones(2 * M, W), torch.zeros(2 * M, W)
    out = {}
    runner, layers = _runner(rank, world)
    scaler = GradScaler("cpu", init_scale=256.0)
    opt = torch.optim.SGD([p for layer in layers for p in layer.parameters()], lr=0.1)
    out["same"] = _outcome(lambda: runner.step(x, target=y, scaler=scaler))
    if rank == 1:
        layers[0].weight.grad[0, 0] = float("inf")  # this replica's scale halves, the other's stays
    scaler.step(opt)
    scaler.update()
    out["scale"] = scaler.get_scale()
    opt.zero_grad()
    out["parted"] = _outcome(lambda: runner.step(x, target=y, scaler=scaler))
    alone, _ = _runner(rank, world)
    out["one-scaler"] = _outcome(lambda: alone.step(x, target=y, scaler=GradScaler("cpu") if rank else None))
    return out


@pytest.fixture(scope="module")
def scale_results() -> list[dict]:
    return run_local(_scales, 2, timeout=120)


def test_replicas_whose_loss_scales_parted_are_refused_in_one_line(scale_results) -> None:
    """Before, the second step averaged gradients scaled by 128 with gradients scaled by 256 (found
    by a data-parallel bug hunt: the unscaled norms came out 1.5 and 0.75 times the true one)."""
    assert [r["scale"] for r in scale_results] == [256.0, 128.0]
    for replica, per_rank in enumerate(scale_results):
        label = "rank 0 (global rank 1)" if replica else "rank 0"
        assert per_rank["same"] == "stepped"
        for name in ("parted", "one-scaler"):
            assert per_rank[name].startswith(f"PlanMismatchError: {label}: the data-parallel replicas"), name
            assert "scale their losses differently" in per_rank[name] and "\n" not in per_rank[name]
