# sed -i '62s/world if group is None else dist.get_process_group_ranks(group)/world/' runtime/loss_scaling.py
# sed -i '32s/ and scaler.is_enabled()//' runtime/loss_scaling.py
"""check_scaler compares the scaler's process group with the pipeline's own group, not the world:
with data parallelism the world holds other pipelines, so a scaler over the pipeline's group is
enough, and one over the world holds every rank of the pipeline too."""

from __future__ import annotations

import pytest

torch = pytest.importorskip("torch")


def _verdicts(rank: int, _world: int) -> dict[str, str] | None:
    import torch.distributed as dist
    from torch.distributed.fsdp.sharded_grad_scaler import ShardedGradScaler

    from schedc.errors import ArgumentError
    from schedc.runtime.loss_scaling import check_scaler

    pipeline = dist.new_group([0])  # collective: every rank makes it; rank 0's pipeline, rank 1 is another
    scalers = {"pipeline's group": ShardedGradScaler("cpu", process_group=pipeline),
               "world": ShardedGradScaler("cpu")}
    if rank != 0:
        return None
    out = {}
    for what, scaler in scalers.items():
        try:
            check_scaler(scaler, p=2, group=pipeline, rank=rank)
            out[what] = "accepted"
        except ArgumentError as err:
            out[what] = str(err)
    return out


def test_a_scaler_over_the_pipelines_group_or_the_world_is_accepted() -> None:
    """Both hold every global rank of the pipeline (rank 0 here): refusing either would refuse a
    scaler that sees every inf check the pipeline makes (ranks outside the pipeline don't matter)."""
    from schedc.runtime.launch import run_local

    verdicts = run_local(_verdicts, 2)
    assert verdicts[1] is None
    assert verdicts[0] == {"pipeline's group": "accepted", "world": "accepted"}


def _disabled_on_one_rank(rank: int, _world: int) -> list:
    import warnings

    from torch.amp import GradScaler
    from torch.nn import functional

    from schedc.baselines import baseline_plan
    from schedc.problem import Problem
    from schedc.runtime import PipelineRunner, split_stages
    from schedc.runtime.models import mlp
    from tests.runtime_cases import WIDTH, batch

    problem = Problem(p=2, m=2)
    layers = mlp(problem.num_stages, WIDTH)
    stages = split_stages(layers, problem, rank)
    runner = PipelineRunner(baseline_plan("1f1b", problem), stages, functional.mse_loss, timeout=60)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")  # torch warns where it would default to CUDA
        scaler = GradScaler("cpu", enabled=False) if rank == 0 else None
    runner.step(*batch(2), scaler=scaler)
    return [p.grad.clone() for s in stages.values() for p in s.parameters()]


def test_a_disabled_scaler_on_one_rank_is_no_scaler() -> None:
    """``GradScaler(enabled=False)`` scales nothing, so a rank passing it runs the plain step its
    peer (passing None) runs: the ranks agree, and the gradients are the unscaled ones."""
    from torch import nn

    from schedc.runtime.launch import run_local
    from schedc.runtime.models import mlp
    from tests.runtime_cases import WIDTH, batch, reference_grads

    grads = run_local(_disabled_on_one_rank, 2)
    layers = mlp(2, WIDTH)
    want = reference_grads(layers, *batch(2), 2)
    got = [g for per_rank in grads for g in per_rank]
    assert len(got) == len(want) == sum(1 for layer in layers if isinstance(layer, nn.Linear)) * 2
    for g, w in zip(got, want, strict=True):
        torch.testing.assert_close(g, w)
