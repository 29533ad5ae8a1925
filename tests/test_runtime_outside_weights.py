"""Weights that ``split_stages`` saw beyond a rank's stages: a weight shared in Python across ranks
that was frozen at the split and unfrozen since, and another rank's stage weight given a gradient
here. Both trained silently wrong (the copies apart, or a gradient lost to this rank's copy)."""

from __future__ import annotations

import copy
import gc
import weakref

import torch
from torch import nn

from schedc.baselines import baseline_plan
from schedc.problem import Problem
from schedc.runtime import PipelineRunner, PlanMismatchError, split_stages, stage_parameters
from schedc.runtime.launch import run_local
from schedc.runtime.models import mlp, mlp_loss
from schedc.runtime.shared_weights import outside_weights

WIDTH = 4


def _batch(seed: int) -> tuple[torch.Tensor, torch.Tensor]:
    gen = torch.Generator().manual_seed(seed)
    return torch.randint(0, 5, (4,), generator=gen), torch.randint(0, 5, (4,), generator=gen)


def _tied_layers() -> list[nn.Module]:
    """nanoGPT's tie (head.weight = embedding.weight), the two on stages of two ranks."""
    torch.manual_seed(0)
    emb, head = nn.Embedding(5, WIDTH), nn.Linear(WIDTH, 5, bias=False)
    head.weight = emb.weight
    return [emb, nn.Linear(WIDTH, WIDTH), nn.Tanh(), head]


def _unfrozen(rank: int, _world: int) -> list[object]:
    """Frozen for a warm-up step while the runner is built, then unfrozen: without a tie the step
    is refused on every rank; with one declared from the start, the copies get the summed gradient."""
    problem, answers = Problem(p=2, m=2), []
    plan = baseline_plan("1f1b", problem)
    for tied in (False, True):
        layers = _tied_layers()
        reference = copy.deepcopy(nn.Sequential(*layers))
        weight = layers[0].weight
        weight.requires_grad_(False)
        ties = [stage_parameters(layers, problem, weight)] if tied else []
        runner = PipelineRunner(plan, split_stages(layers, problem, rank), nn.functional.cross_entropy,
                                timeout=60, ties=ties)
        runner.step(*_batch(0))
        weight.requires_grad_(True)
        try:
            runner.step(*_batch(1))
        except PlanMismatchError as err:  # refused before the step's state (its microbatches) was built
            answers.append(str(err) if runner._ctx is None else "kept the refused step's state")
            continue
        x, y = _batch(1)
        sum(nn.functional.cross_entropy(reference(a), b) for a, b in zip(x.chunk(2), y.chunk(2), strict=True)
            ).div(2).backward()
        answers.append(torch.allclose(weight.grad, reference[0].weight.grad, atol=1e-6))
    return answers


def test_a_shared_weight_unfrozen_after_the_split_needs_its_tie_on_every_rank():
    for rank, (untied, tied) in enumerate(run_local(_unfrozen, 2)):
        assert untied == (f"rank {rank}: unfrozen since split_stages: stage 0's '0.weight' and stage 1's "
                          "'1.weight' are one Parameter in Python, held on different ranks: declare them "
                          "as a tie, ties=[stage_parameters(layers, problem, param)], or each rank's copy "
                          "trains apart")
        assert tied is True


def _loss_term(rank: int, _world: int, placement: str) -> object:
    """An L1 term on stage 0's bias in the loss: rank 1's copy took its gradient, and the bias that
    rank 0 trains missed it, silently. In a V shape stage 0 and the loss share rank 0: exact."""
    problem = Problem(p=2, m=2, v=2 if placement == "vshape" else 1, placement=placement)
    layers = mlp(problem.num_stages, WIDTH)
    reference = copy.deepcopy(nn.Sequential(*layers))

    def loss(output: torch.Tensor, target: torch.Tensor) -> torch.Tensor:
        return mlp_loss(output, target) + layers[0].bias.abs().sum()

    gen = torch.Generator().manual_seed(0)
    x, y = torch.randn(4, WIDTH, generator=gen), torch.randn(4, WIDTH, generator=gen)
    plan = baseline_plan("zb-v" if placement == "vshape" else "1f1b", problem)
    runner = PipelineRunner(plan, split_stages(layers, problem, rank), loss, timeout=60)
    try:
        runner.step(x, target=y)
    except PlanMismatchError as err:
        return str(err)
    sum(mlp_loss(reference(a), b) + reference[0].bias.abs().sum()
        for a, b in zip(x.chunk(2), y.chunk(2), strict=True)).div(2).backward()
    return rank != 0 or torch.allclose(layers[0].bias.grad, reference[0].bias.grad, atol=1e-6)


def test_another_ranks_stage_weight_in_the_loss_is_refused_where_its_gradient_would_be_lost():
    assert run_local(_loss_term, 2, "looped")[1] == (
        "rank 1: stage 0's 0.bias (layer 0, on rank 0) got a gradient on rank 1, which holds only a copy "
        "of it: that part of its gradient never reaches the weight its own rank trains; use a stage's "
        "weight only on the rank that holds the stage")
    assert run_local(_loss_term, 2, "vshape") == [True, True]


def test_outside_weights_are_the_other_ranks_stages_weights_less_those_shared_with_this_rank():
    problem = Problem(p=2, m=2)
    layers = mlp(2, WIDTH)  # stage 0: layers 0-1, stage 1: layers 2-3
    outside = outside_weights(layers, [(0, 2), (2, 4)], problem, 0)
    assert [where for _, where in outside] == ["stage 1's 0.weight (layer 2, on rank 1)",
                                              "stage 1's 0.bias (layer 2, on rank 1)"]
    assert [ref() for ref, _ in outside] == [layers[2].weight, layers[2].bias]
    layers[2].weight = layers[0].weight  # shared with rank 0's stage: a tie's matter, not an outside one
    assert [where for _, where in outside_weights(layers, [(0, 2), (2, 4)], problem, 0)] == [
        "stage 1's 0.bias (layer 2, on rank 1)"]
    assert outside_weights(layers, [(0, 4)], Problem(p=1, m=2), 0) == ()


def _three_ranks_unfrozen(rank: int, _world: int) -> str:
    """The tied weight on stages 0 and 2 of three ranks, unfrozen through each rank's own stages:
    rank 1, which holds no copy, waited for an activation until its timeout while the holders
    refused the step."""
    problem = Problem(p=3, m=3)
    layers = _tied_layers()
    layers[0].weight.requires_grad_(False)
    stages = split_stages(layers, problem, rank)
    runner = PipelineRunner(baseline_plan("1f1b", problem), stages, nn.functional.cross_entropy, timeout=60)
    x, y = torch.randint(0, 5, (6,)), torch.randint(0, 5, (6,))
    runner.step(x, target=y)
    for module in stages.values():
        module.requires_grad_(True)
    try:
        runner.step(x, target=y)
    except PlanMismatchError as err:
        return str(err)
    return "stepped"


def test_a_rank_holding_no_copy_of_an_unfrozen_shared_weight_refuses_the_step_too():
    for rank, answer in enumerate(run_local(_three_ranks_unfrozen, 3)):
        assert answer.startswith(f"rank {rank}: unfrozen since split_stages: stage 0's '0.weight' and "
                                 "stage 2's '0.weight' are one Parameter in Python")


def _tied_and_outside(rank: int, _world: int) -> str:
    """A declared tie, and a loss term on stage 0's bias on rank 1: rank 1 refused the step before
    the tie's gradient exchange, and rank 0 waited for it until its timeout."""
    problem = Problem(p=2, m=2)
    layers = _tied_layers()

    def loss(output: torch.Tensor, target: torch.Tensor) -> torch.Tensor:
        return nn.functional.cross_entropy(output, target) + layers[1].bias.abs().sum()

    ties = [stage_parameters(layers, problem, layers[0].weight)]
    runner = PipelineRunner(baseline_plan("1f1b", problem), split_stages(layers, problem, rank), loss,
                            timeout=60, ties=ties)
    try:
        runner.step(*_batch(0))
    except PlanMismatchError as err:
        return str(err)
    return "stepped"


def test_the_refusing_rank_finishes_the_steps_exchanges_first():
    stepped, refused = run_local(_tied_and_outside, 2)
    assert stepped == "stepped" and refused.startswith("rank 1: stage 0's 1.bias (layer 1, on rank 0) got a "
                                                       "gradient on rank 1")


def _freed(rank: int, _world: int) -> tuple[int, int]:
    """Every layer built on every rank, then dropped: the runner kept the other ranks' weights alive
    (the whole model on each rank), through what it watches."""
    problem = Problem(p=2, m=2)
    layers = mlp(2, WIDTH)
    refs = [weakref.ref(param) for layer in layers for param in layer.parameters()]
    runner = PipelineRunner(baseline_plan("1f1b", problem), split_stages(layers, problem, rank), mlp_loss,
                            timeout=60)
    del layers
    gc.collect()
    assert runner.stages
    return sum(ref() is not None for ref in refs), len(refs)


def test_the_runner_keeps_no_other_ranks_weights_alive():
    assert run_local(_freed, 2) == [(2, 4), (2, 4)]
