"""Weights tied across stages (``ties=``) train as one shared weight of the unpipelined model.

The reference is the same MLP with its first Linear's weight *assigned* to its last Linear, so
autograd sums both uses into one gradient. The pipelined copy starts untied (the last stage holds
a different initial value): the runner must equalise the copies, then give each the summed
gradient, including across two steps accumulated without ``zero_grad``, and stay equal to the
reference through optimizer steps. Looped 1F1B puts the two copies on different ranks; ZB-V's
V shape puts stages 0 and 3 on rank 0, a tie inside one rank.
"""

from __future__ import annotations

import pytest
import torch
from torch import nn

from schedc.baselines import baseline_plan
from schedc.problem import Problem
from schedc.runtime import PipelineRunner, PlanMismatchError, split_stages, stage_parameter, stage_parameters
from schedc.runtime.models import mlp, mlp_loss, transformer
from tests.runtime_cases import run_baseline_cases

WIDTH = 8
CASES = {
    "1f1b/across-ranks": ("1f1b", Problem(p=2, m=4)),
    "zb-v/within-rank": ("zb-v", Problem(p=2, m=4, v=2, placement="vshape")),
}


def _batch(m: int, seed: int) -> tuple[torch.Tensor, torch.Tensor]:
    gen = torch.Generator().manual_seed(seed)
    return torch.randn(2 * m, WIDTH, generator=gen), torch.randn(2 * m, WIDTH, generator=gen)


def _tied_reference(num_stages: int) -> list[nn.Module]:
    layers = mlp(num_stages, WIDTH)
    layers[2 * (num_stages - 1)].weight = layers[0].weight
    return layers


def _pairs(piped: list[nn.Module], ref: list[nn.Module], mine: set[int]):
    """(pipelined parameter, reference parameter) by layer position, for this rank's parameters."""
    return [(a, b) for x, y in zip(piped, ref, strict=True)
            for a, b in zip(x.parameters(), y.parameters(), strict=True) if id(a) in mine]


def _worst(pairs, what) -> float:
    """Largest difference, or inf when assert_close (fp32 tolerance) fails."""
    worst = 0.0
    for a, b in pairs:
        try:
            torch.testing.assert_close(what(a), what(b))
        except AssertionError:
            return float("inf")
        worst = max(worst, float((what(a) - what(b)).abs().max()))
    return worst


def _worker(rank, _world, plans):
    out = {}
    for (case, plan), shared in ((c, s) for c in plans.items() for s in (False, True)):
        ns = plan.problem.num_stages
        ref = _tied_reference(ns)
        piped = _tied_reference(ns) if shared else mlp(ns, WIDTH)  # one Parameter, or two declared one
        stages = split_stages(piped, plan.problem, rank)
        mine = {id(p) for s in stages.values() for p in s.parameters()}
        tie = stage_parameters(piped, plan.problem, piped[0].weight) if shared else \
            [(0, "0.weight"), (ns - 1, "0.weight")]
        runner = PipelineRunner(plan, stages, mlp_loss, timeout=60, ties=[tie])
        pairs = _pairs(piped, ref, mine)
        checks = {"initial": _worst(pairs, lambda p: p.detach())}
        for k in range(2):  # two steps accumulated: the second must not re-add the first's sum
            x, y = _batch(plan.problem.m, seed=k)
            runner.step(x, target=y)
            mlp_loss(nn.Sequential(*ref)(x), y).backward()
        checks["accumulated grads"] = _worst(pairs, lambda p: p.grad)
        opt = torch.optim.SGD(list({id(a): a for a, _ in pairs}.values()), lr=0.1)  # a shared one once
        opt_ref = torch.optim.SGD(nn.Sequential(*ref).parameters(), lr=0.1)  # the shared weight once
        for k in range(2, 4):
            opt.step()
            opt.zero_grad()
            opt_ref.step()
            opt_ref.zero_grad()
            x, y = _batch(plan.problem.m, seed=k)
            runner.step(x, target=y)
            mlp_loss(nn.Sequential(*ref)(x), y).backward()
        checks["after optimizer steps"] = _worst(pairs, lambda p: p.detach())
        out[f"{case}{'/python-shared' if shared else ''}"] = checks
    return out


@pytest.fixture(scope="module")
def results():
    return run_baseline_cases(_worker, CASES)


@pytest.mark.parametrize("case", sorted([*CASES, *(f"{c}/python-shared" for c in CASES)]))
@pytest.mark.parametrize("check", ["initial", "accumulated grads", "after optimizer steps"])
def test_tied_weights_match_one_shared_weight(results, case, check):
    for per_rank in results:
        assert per_rank[case][check] < 1e-4


@pytest.mark.parametrize("tie, message", [
    ([(0, "0.weight")], "two or more distinct stages"),
    ([(0, "0.weight"), (5, "0.weight")], "outside the plan's 2 stages"),
    ([(0, "nope"), (1, "0.weight")], "stage 0 has no parameter 'nope'"),
])
def test_bad_ties_fail_before_any_communication(tie, message):
    problem = Problem(p=1, m=2, v=2)
    stages = split_stages(mlp(2, WIDTH), problem, 0)
    with pytest.raises(PlanMismatchError, match=message):
        PipelineRunner(baseline_plan("interleaved-1f1b", problem), stages, mlp_loss, ties=[tie])


def test_a_copy_in_two_ties_is_refused():
    """Ties were summed one after the other: the second re-summed the copy the first had made and
    never reached the first's other copies, which drifted apart (stage 1's copy off by 0.1)."""
    problem = Problem(p=1, m=2, v=3)
    stages = split_stages(mlp(3, WIDTH), problem, 0)
    ties = [[(0, "0.weight"), (1, "0.weight")], [(0, "0.weight"), (2, "0.weight")]]
    with pytest.raises(PlanMismatchError, match=r"stage 0's '0\.weight' is in ties 0 and 1: list all the "
                                                r"copies of one weight in one tie"):
        PipelineRunner(baseline_plan("interleaved-1f1b", problem), stages, mlp_loss, ties=ties)


def test_a_tie_inside_one_rank_needs_no_process_group():
    problem = Problem(p=1, m=2, v=2)
    layers = mlp(2, WIDTH)
    plan = baseline_plan("interleaved-1f1b", problem)
    tie = [(0, "0.weight"), (1, "0.weight")]
    runner = PipelineRunner(plan, split_stages(layers, problem, 0), mlp_loss, ties=[tie])
    assert torch.equal(layers[0].weight, layers[2].weight)
    x, y = _batch(2, seed=0)
    runner.step(x, target=y)
    ref = _tied_reference(2)  # one shared weight: its grad is the sum over both uses
    mlp_loss(nn.Sequential(*ref)(x), y).backward()
    assert _worst(_pairs(layers, ref, {id(p) for layer in layers for p in layer.parameters()}),
                  lambda p: p.grad) < float("inf")
    assert torch.equal(layers[0].weight.grad, layers[2].weight.grad)


def test_stage_parameter_names_what_split_stages_holds():
    layers = transformer(blocks=2, width=16, heads=2, seq=4, vocab=8)
    problem = Problem(p=2, m=2)
    for param in (layers[0].tokens.weight, layers[-1][1].weight, layers[1].mlp[0].bias):
        stage, name = stage_parameter(layers, problem, param)
        held = split_stages(layers, problem, problem.stage_rank[stage])[stage]
        assert dict(held.named_parameters())[name] is param
    with pytest.raises(PlanMismatchError, match="not in any of the layers"):
        stage_parameter(layers, problem, nn.Parameter(torch.zeros(1)))


def test_a_weight_shared_in_python_is_named_in_every_stage_that_holds_it():
    """head.weight = tokens.weight (nanoGPT's tie): stage_parameter found stage 0 for both sides,
    and the README's recipe built a tie of stage 0 twice."""
    layers = transformer(blocks=2, width=16, heads=2, seq=4, vocab=8)
    layers[-1][1].weight = layers[0].tokens.weight
    problem = Problem(p=2, m=2)
    held = stage_parameters(layers, problem, layers[0].tokens.weight)
    assert [s for s, _ in held] == [0, 1]
    for stage, name in held:
        module = split_stages(layers, problem, problem.stage_rank[stage])[stage]
        assert dict(module.named_parameters())[name] is layers[0].tokens.weight
    with pytest.raises(PlanMismatchError, match=r"shared by stages 0, 1: tie them with ties=\[stage_param"):
        stage_parameter(layers, problem, layers[-1][1].weight)


def _unused_tie(rank: int, _world: int) -> list[bool]:
    """A tie of a parameter no stage uses: after a step every copy's grad is None on every rank."""
    problem = Problem(p=2, m=2)
    layers = mlp(2, WIDTH)
    for layer in (layers[0], layers[2]):
        layer.register_parameter("spare", nn.Parameter(torch.randn(3)))
    ties = [[(0, "0.weight"), (1, "0.weight")], [(0, "0.spare"), (1, "0.spare")]]
    runner = PipelineRunner(baseline_plan("1f1b", problem), split_stages(layers, problem, rank), mlp_loss,
                            timeout=60, ties=ties)
    runner.step(*_batch(2, seed=0))
    mine = layers[0] if rank == 0 else layers[2]
    return [mine.spare.grad is None, mine.weight.grad is not None]


@pytest.mark.parametrize("ranks", [1, 2])
def test_a_tied_weight_no_copy_uses_keeps_no_gradient(ranks):
    """As in the unpipelined model (an optimizer such as Adam skips a None gradient but not a zero)."""
    from schedc.runtime.launch import run_local

    if ranks == 2:
        assert run_local(_unused_tie, 2) == [[True, True], [True, True]]
        return
    problem = Problem(p=1, m=2, v=2)
    layers = mlp(2, WIDTH)
    for layer in (layers[0], layers[2]):
        layer.register_parameter("spare", nn.Parameter(torch.randn(3)))
    runner = PipelineRunner(baseline_plan("interleaved-1f1b", problem), split_stages(layers, problem, 0),
                            mlp_loss, ties=[[(0, "0.spare"), (1, "0.spare")]])
    runner.step(*_batch(2, seed=0))
    assert layers[0].spare.grad is None and layers[2].spare.grad is None


def _untied(rank: int, _world: int) -> list[str]:
    """nanoGPT's tie (head.weight = tokens.weight) with the two stages on two ranks: without ties=
    each rank's copy got only its own stage's gradient, silently."""
    layers = transformer(blocks=2, width=16, heads=2, seq=4, vocab=8)
    layers[-1][1].weight = layers[0].tokens.weight
    problem = Problem(p=2, m=2)
    plan = baseline_plan("1f1b", problem)
    try:
        PipelineRunner(plan, split_stages(layers, problem, rank), None, timeout=60)
        untied = "built"
    except PlanMismatchError as err:
        untied = str(err)
    tie = stage_parameters(layers, problem, layers[0].tokens.weight)
    PipelineRunner(plan, split_stages(layers, problem, rank), None, timeout=60, ties=[tie])
    return [untied, repr(tie)]


def test_a_weight_shared_in_python_across_ranks_without_a_tie_is_refused_on_every_rank():
    from schedc.runtime.launch import run_local

    for rank, (untied, tie) in enumerate(run_local(_untied, 2)):
        assert untied == (f"rank {rank}: stage 0's '0.tokens.weight' and stage 1's '1.1.weight' are one "
                          "Parameter in Python, held on different ranks: declare them as a tie, "
                          "ties=[stage_parameters(layers, problem, param)], or each rank's copy trains apart")
        assert tie == "[(0, '0.tokens.weight'), (1, '1.1.weight')]"


def test_a_weight_shared_on_one_rank_needs_no_tie():
    """V shape: rank 0 holds stages 0 and 3, whose shared weight stays one Parameter there."""
    problem = Problem(p=2, m=2, v=2, placement="vshape")
    layers = mlp(4, WIDTH)
    layers[-2].weight = layers[0].weight
    assert split_stages(layers, problem, 0).shared == split_stages(layers, problem, 1).shared == ()
    looped = Problem(p=2, m=2, v=2)  # stages 0 and 3 on ranks 0 and 1
    assert [[s for s, _ in weight] for weight in split_stages(layers, looped, 0).shared] == [[0, 3]]
    layers[0].weight.requires_grad_(False)  # frozen: its copies cannot drift apart
    assert split_stages(layers, looped, 0).shared == ()
