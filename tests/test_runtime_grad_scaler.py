"""float16 with a GradScaler: ``step(x, y, scaler=scaler)`` scales every gradient as
``scaler.scale(loss).backward()`` does on the unpipelined model, and with torch's ShardedGradScaler
the ranks agree on skipping a step when any of them found an inf (``loss_scaling.py``)."""

from __future__ import annotations

import copy

import pytest

from schedc.problem import Problem

torch = pytest.importorskip("torch")

from torch import nn  # noqa: E402
from torch.amp import GradScaler  # noqa: E402
from torch.distributed.fsdp.sharded_grad_scaler import ShardedGradScaler  # noqa: E402
from torch.nn import functional  # noqa: E402

from schedc.baselines import baseline_plan  # noqa: E402
from schedc.errors import ArgumentError  # noqa: E402
from schedc.runtime import PipelineRunner, split_stages  # noqa: E402
from schedc.runtime.models import mlp  # noqa: E402
from tests.runtime_cases import WIDTH, batch, run_baseline_cases  # noqa: E402

M = 4
CASES = {"1f1b": ("1f1b", Problem(p=2, m=M, split=False)),
         "zb-v": ("zb-v", Problem(p=2, m=M, v=2, placement="vshape"))}


def _reference(layers: list[nn.Module], x: torch.Tensor, y: torch.Tensor) -> tuple[list, list, float]:
    """The unpipelined model under torch's recipe: its scaled gradients, its unscaled ones, the loss."""
    model = nn.Sequential(*copy.deepcopy(layers))
    scaler, total = GradScaler("cpu"), 0.0
    for xs, ys in zip(x.chunk(M), y.chunk(M), strict=True):
        with torch.autocast("cpu", dtype=torch.float16):
            loss = functional.mse_loss(model(xs), ys) / M
            scaler.scale(loss).backward()
        total += float(loss.detach())
    scaled = [p.grad.clone() for p in model.parameters()]
    scaler.unscale_(torch.optim.SGD(model.parameters(), lr=0.1))
    return scaled, [p.grad for p in model.parameters()], total


@pytest.mark.parametrize("name", ["1f1b", "interleaved-zb"])
def test_one_rank_scales_and_unscales_as_the_unpipelined_model(name):
    problem = Problem(p=1, m=M, v=1 if name == "1f1b" else 2)
    layers = mlp(problem.num_stages, WIDTH)
    x, y = batch(M)
    want_scaled, want, want_loss = _reference(layers, x, y)
    runner = PipelineRunner(baseline_plan(name, problem), split_stages(layers, problem, 0),
                            functional.mse_loss)
    scaler = GradScaler("cpu")
    with torch.autocast("cpu", dtype=torch.float16):
        loss = runner.step(x, y, scaler=scaler)
    params = [p for layer in layers for p in layer.parameters()]
    assert float(loss) == pytest.approx(want_loss, rel=1e-6)  # the loss returned is unscaled
    for got, expected in zip([p.grad for p in params], want_scaled, strict=True):
        torch.testing.assert_close(got, expected, rtol=0, atol=0)
    optimizer = torch.optim.SGD(params, lr=0.1)
    scaler.unscale_(optimizer)
    for got, expected in zip([p.grad for p in params], want, strict=True):
        torch.testing.assert_close(got, expected, rtol=0, atol=0)
    scaler.step(optimizer)
    scaler.update()
    assert scaler.get_scale() == 2.0**16  # nothing overflowed: the step ran, the scale stays


class Refusing(ShardedGradScaler):
    """A scaler whose start fails as torch's does on a device it does not support."""

    def scale(self, outputs):
        raise AssertionError("Expected supported device, got cpu\nmore")


def _worker(rank: int, _world: int, plans: dict) -> dict:
    out = {}
    for case, plan in plans.items():
        layers = mlp(plan.problem.num_stages, WIDTH)
        stages = split_stages(layers, plan.problem, rank)
        runner = PipelineRunner(plan, stages, functional.mse_loss, timeout=60)
        x, y = batch(M)
        scaler = ShardedGradScaler("cpu")
        with torch.autocast("cpu", dtype=torch.float16):
            runner.step(x, y, scaler=scaler)
        params = [p for s in stages.values() for p in s.parameters()]
        optimizer = torch.optim.SGD(params, lr=0.1)
        scaler.unscale_(optimizer)
        mine = {id(p) for p in params}
        out[case] = {(i, n): p.grad.clone() for i, layer in enumerate(layers)
                     for n, p in layer.named_parameters() if id(p) in mine}
        scaler.step(optimizer)
        scaler.update()
        optimizer.zero_grad()
        with torch.autocast("cpu", dtype=torch.float16):  # an inf on rank 1 alone skips every rank's step
            runner.step(x, y, scaler=scaler)
        if rank == 1:
            params[0].grad[0] = float("inf")
        before = [p.detach().clone() for p in params]
        scaler.step(optimizer)
        scaler.update()
        unchanged = all(torch.equal(b, p) for b, p in zip(before, params, strict=True))
        out[(case, "skipped")] = (unchanged, scaler.get_scale())
    plan = plans["1f1b"]
    stages = split_stages(mlp(plan.problem.num_stages, WIDTH), plan.problem, rank)
    import torch.distributed as dist

    rank_0 = dist.new_group([0])  # collective: every rank makes it
    for what, scaler in (("plain", GradScaler("cpu")),
                         ("one rank", ShardedGradScaler("cpu") if rank == 0 else None),
                         ("partial group", ShardedGradScaler("cpu", process_group=rank_0)),
                         ("refusing", Refusing("cpu") if rank == 1 else ShardedGradScaler("cpu"))):
        runner = PipelineRunner(plan, stages, functional.mse_loss, timeout=60)
        try:
            runner.step(*batch(M), scaler=scaler)
            out[what] = ("none", "")
        except Exception as err:
            out[what] = (type(err).__name__, str(err))
    return out


@pytest.fixture(scope="module")
def results() -> list[dict]:
    return run_baseline_cases(_worker, CASES)


def test_two_ranks_unscale_to_the_unpipelined_gradients(results):
    for case, (_, problem) in CASES.items():
        layers = mlp(problem.num_stages, WIDTH)
        _, want, _ = _reference(layers, *batch(M))
        named = {(i, n): g for (i, n), g in zip(((i, n) for i, layer in enumerate(layers)
                                                 for n, _ in layer.named_parameters()), want, strict=True)}
        seen = set()
        for per_rank in results:
            for key, grad in per_rank[case].items():
                torch.testing.assert_close(grad, named[key], rtol=0, atol=0, msg=f"{case} {key}")
                seen.add(key)
        assert seen == set(named)


def test_an_inf_on_one_rank_skips_the_step_on_every_rank(results):
    for case in CASES:
        for per_rank in results:  # unchanged parameters, and the scale backed off alike
            assert per_rank[(case, "skipped")] == (True, 2.0**15)


def test_a_plain_scaler_across_ranks_is_refused_in_one_line(results):
    for rank, per_rank in enumerate(results):
        kind, message = per_rank["plain"]
        assert kind == "ArgumentError"
        assert message.startswith(f"rank {rank}: a GradScaler checks only this rank's gradients for inf")
        assert "ShardedGradScaler" in message and "\n" not in message


def test_a_scaler_on_one_rank_only_fails_every_rank_at_once(results):
    for rank, per_rank in enumerate(results):
        kind, message = per_rank["one rank"]
        assert kind == "PlanMismatchError"
        assert message.startswith(f"rank {rank}: the ranks' first calls differ")
        assert "step(scaler=...)" in message


def test_a_scaler_that_is_not_a_grad_scaler_is_refused():
    problem = Problem(p=1, m=2)
    runner = PipelineRunner(baseline_plan("1f1b", problem), split_stages(mlp(1, WIDTH), problem, 0),
                            functional.mse_loss)
    with pytest.raises(ArgumentError) as err:
        runner.step(*batch(2), scaler=2.0**16)
    assert str(err.value) == ("rank 0: scaler must be a torch.amp.GradScaler (for p > 1 a torch.distributed."
                              "fsdp.sharded_grad_scaler.ShardedGradScaler), got float")


def test_a_disabled_plain_scaler_passes_on_any_pipeline():
    """``GradScaler(enabled=use_amp)`` with amp off scales nothing and checks no inf, so the ranks
    cannot disagree: it is let through for p > 1 too (refusing it broke that common pattern)."""
    import warnings

    from torch.amp import GradScaler

    from schedc.runtime.loss_scaling import check_scaler

    with warnings.catch_warnings():
        warnings.simplefilter("ignore")  # torch warns that CUDA is missing where it defaults to it
        disabled = GradScaler("cpu", enabled=False)
    check_scaler(disabled, p=2, group=None, rank=0)


def test_a_scaler_over_part_of_the_pipeline_is_refused(results):
    """Its all-reduce would leave rank 1's inf checks out; rank 1 is outside its group itself."""
    for rank, per_rank in enumerate(results):
        assert per_rank["partial group"] == (
            "ArgumentError", f"rank {rank}: the scaler's process_group lacks the pipeline's global ranks "
                             "[1], whose inf checks it would not see: build it over the pipeline's group or "
                             "the world")


def test_a_scaler_that_cannot_start_on_one_rank_fails_its_peer_at_once(results):
    """It starts before the call's first collective, where its peer learns of it (after the shape
    walk, the peer went into the step and waited until its timeout)."""
    assert results[1]["refusing"] == ("ArgumentError", "rank 1: the scaler could not scale a loss on cpu "
                                      "(Expected supported device, got cpu)")
    assert results[0]["refusing"] == ("PlanMismatchError", "rank 0: rank 1 failed before its first step or "
                                      "eval (its own error says why)")


def test_a_scaler_that_cannot_start_on_the_device_is_one_line():
    """An AssertionError from inside torch becomes the rank's one line."""
    problem = Problem(p=1, m=2)
    runner = PipelineRunner(baseline_plan("1f1b", problem), split_stages(mlp(1, WIDTH), problem, 0),
                            functional.mse_loss)
    with pytest.raises(ArgumentError) as err:
        runner.step(*batch(2), scaler=Refusing("cpu", enabled=True))
    assert str(err.value) == ("rank 0: the scaler could not scale a loss on cpu (Expected supported device, "
                              "got cpu)")
