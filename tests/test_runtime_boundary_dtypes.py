"""Boundary tensors between ranks (gloo): every dtype of ``shapes.DTYPES`` crosses with its gradient,
and a rank that fails on the first step, before sending a shape or before the plan check, makes its
peer fail at once, not at its timeout."""

from __future__ import annotations

import pytest
import torch
import torch.distributed as dist
from torch import nn

from schedc.baselines import baseline_plan
from schedc.problem import Problem
from schedc.runtime import PeerError, PipelineRunner, PlanMismatchError, split_stages
from schedc.runtime.launch import run_local
from schedc.runtime.models import mlp_loss
from tests.runtime_cases import batch, reference_grads
from tests.test_runtime_grad_patterns import FromComplex, ToComplex


class InPlace(nn.Module):
    """Changes its (received) input in place: refused on the rank that holds it, before its output's
    shape goes out."""

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return x.relu_()


def _worker(rank: int, world: int) -> dict:
    out = {}
    torch.manual_seed(0)
    layers = [ToComplex(), FromComplex()]
    x, y = batch()
    ref = reference_grads(layers, x, y, 2)
    plan = baseline_plan("1f1b", Problem(p=2, m=2))
    PipelineRunner(plan, split_stages(layers, plan.problem, rank), mlp_loss, timeout=60).step(x, y)
    counts = [len(list(layer.parameters())) for layer in layers]
    wanted = ref[:counts[0]] if rank == 0 else ref[counts[0]:]
    got = [p.grad for p in layers[rank].parameters()]
    out["complex"] = all(g is not None and torch.allclose(g, w) for g, w in zip(got, wanted, strict=True))
    looped = baseline_plan("interleaved-1f1b", Problem(p=2, m=2, v=2))  # rank 1 holds stages 1 and 3
    bad = [nn.Linear(8, 8), InPlace(), nn.Linear(8, 8), nn.Linear(8, 8)]
    runner = PipelineRunner(looped, split_stages(bad, looped.problem, rank), mlp_loss, timeout=120)
    try:
        runner.step(x, y)
        out["failure"] = ("none", "")
    except (PlanMismatchError, PeerError) as err:
        out["failure"] = (type(err).__name__, str(err))
    group = dist.new_group([0, 1])  # the failure above may leave its group's connections closed
    fresh = PipelineRunner(plan, split_stages(layers, plan.problem, rank), mlp_loss, group, timeout=120)
    try:  # rank 0 forgets the input: it fails before the plan check, which rank 1 waited in
        fresh.step(None if rank == 0 else x, y)
        out["no input"] = ("none", "")
    except (PlanMismatchError, PeerError) as err:
        out["no input"] = (type(err).__name__, str(err))
    return out


@pytest.fixture(scope="module")
def results():
    return run_local(_worker, 2, timeout=170)


def test_a_complex_boundary_crosses_ranks_with_its_gradient(results):
    """complex64 was missing from the shape message's dtypes: one rank failed, its peer timed out."""
    assert [r["complex"] for r in results] == [True, True]


def test_a_rank_failing_before_its_shape_goes_out_makes_its_peer_fail_at_once(results):
    """Rank 0 waited for the shape of stage 1's output for its whole timeout (120 s here); the
    failure notice ends its wait with an error that points at rank 1's."""
    (kind0, text0), (kind1, text1) = (r["failure"] for r in results)
    assert kind1 == "PlanMismatchError" and "stage 1 modifies its input in place" in text1
    assert (kind0, text0) == ("PlanMismatchError", "rank 0: rank 1 failed before it could send the shape "
                                                   "of stage 1's output (its own error says why)")


def test_a_rank_failing_before_the_plan_check_makes_its_peer_fail_at_once(results):
    """Rank 0 called step() without the input and stays alive (a loop that catches the error): rank 1
    waited in the first step's plan check for its whole timeout (120 s here)."""
    (kind0, text0), (kind1, text1) = (r["no input"] for r in results)
    assert kind0 == "PlanMismatchError" and "step() needs the input" in text0
    assert (kind1, text1) == ("PlanMismatchError", "rank 1: rank 0 failed before its first step or eval "
                                                   "(its own error says why)")
