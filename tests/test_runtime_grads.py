"""Pipelined steps on real gloo processes equal the unpipelined model on the full batch.

One launch per world size runs every plan of that size (process start-up dominates on small
machines): gradients after one step, parameters after a few optimizer steps, and gradients of
torch.distributed.pipelining's own runtime fed schedc's exported CSV.
"""

from __future__ import annotations

import os
from dataclasses import replace
from fractions import Fraction
from importlib import import_module

import pytest
import torch
from torch import nn

from schedc.baselines import baseline_plan
from schedc.plan import Plan
from schedc.problem import Problem
from schedc.runtime import PipelineRunner, split_stages
from schedc.runtime.launch import run_local
from schedc.runtime.models import mlp, mlp_loss
from schedc.solvers import solve
from schedc.torch_csv import write_csv

WIDTH = 8
SPLIT, UNSPLIT = Problem(p=2, m=4), Problem(p=2, m=4, split=False)
V2 = Problem(p=2, m=4, v=2)
VSHAPE = Problem(p=2, m=4, v=2, placement="vshape")

TWO_RANKS = {
    "gpipe/split": ("gpipe", SPLIT), "gpipe/unsplit": ("gpipe", UNSPLIT),
    "1f1b/split": ("1f1b", SPLIT), "1f1b/unsplit": ("1f1b", UNSPLIT),
    "interleaved-1f1b/split": ("interleaved-1f1b", V2),
    "interleaved-1f1b/unsplit": ("interleaved-1f1b", Problem(p=2, m=4, v=2, split=False)),
    "interleaved-zb/split": ("interleaved-zb", V2),
    "looped-bfs/unsplit": ("looped-bfs", Problem(p=2, m=4, v=2, split=False)),
    "zb-h1/split": ("zb-h1", SPLIT), "zb-h2/split": ("zb-h2", SPLIT), "zb-v/split": ("zb-v", VSHAPE),
    "dualpipev/split": ("dualpipev", VSHAPE),
    "dualpipev/unsplit": ("dualpipev", replace(VSHAPE, split=False)),
    "torch-dualpipev/mixed": ("torch-dualpipev", VSHAPE),
    "solver/split": ("solver", replace(SPLIT, tf=2, tw=Fraction(1, 2), comm=1)),
    "solver/unsplit": ("solver", replace(UNSPLIT, tb=3, mem=(2,))),
    "solver/vshape": ("solver", replace(VSHAPE, tf=Fraction(3, 2), comm=Fraction(1, 2))),
    "solver/looped-v2": ("solver", replace(V2, stage_costs=((1, 1, 1), (2, 1, 1), (1, 3, 1), (1, 1, 2)))),
}
FOUR_RANKS = {
    "1f1b/split": ("1f1b", Problem(p=4, m=4)),
    "interleaved-1f1b/unsplit": ("interleaved-1f1b", Problem(p=4, m=4, v=2, split=False)),
    "zb-h1/split": ("zb-h1", Problem(p=4, m=4)),
    "zb-v/split": ("zb-v", Problem(p=4, m=4, v=2, placement="vshape")),
    "solver/split": ("solver", Problem(p=4, m=4, tf=2, comm=1, mem=(3,))),
}
OPTIMIZER = ("1f1b/unsplit", "zb-v/split", "solver/split")
TORCH_CSV = ("1f1b/split", "1f1b/unsplit", "interleaved-1f1b/split", "interleaved-zb/split", "zb-h1/split",
             "zb-v/split", "dualpipev/split", "torch-dualpipev/mixed", "solver/split")


def _plan(name: str, problem: Problem) -> Plan:
    """The plan of a case: a missing baseline or solver fails the test run, never skips it.
    torch-dualpipev: torch's own DualPipeV orders, which mix whole backwards (B) with split ones."""
    if name == "solver":
        return solve(problem, time_limit=2, workers=1)
    if name == "torch-dualpipev":
        state = type("State", (), {"pp_group_size": problem.p, "_n_microbatches": problem.m})()
        generate = import_module("torch.distributed.pipelining.schedules").ScheduleDualPipeV
        orders = {r: generate._calculate_single_rank_operations(state, r) for r in range(problem.p)}
        return Plan(problem=problem, orders=orders, source=name)
    return baseline_plan(name, problem)


def _batch(m: int, seed: int) -> tuple[torch.Tensor, torch.Tensor]:
    gen = torch.Generator().manual_seed(seed)
    return torch.randn(2 * m, WIDTH, generator=gen), torch.randn(2 * m, WIDTH, generator=gen)


def _close(mine, want) -> float:
    """Largest error, or inf when assert_close (fp32 tolerance) fails."""
    worst = 0.0
    for a, b in zip(mine, want, strict=True):
        try:
            torch.testing.assert_close(a, b)
        except AssertionError:
            return float("inf")
        worst = max(worst, float((a - b).abs().max()))
    return worst


def _one_step(rank, plan):
    """Gradients of this rank's parameters after one pipelined step, and the reference's."""
    problem = plan.problem
    x, y = _batch(problem.m, seed=1)
    layers = mlp(problem.num_stages, WIDTH)
    full = nn.Sequential(*layers)
    loss_ref = mlp_loss(full(x), y)
    loss_ref.backward()
    want = {id(p): p.grad.clone() for p in full.parameters()}
    full.zero_grad(set_to_none=True)
    stages = split_stages(layers, problem, rank)
    loss = PipelineRunner(plan, stages, mlp_loss, timeout=60).step(x, target=y)
    mine = [p for s in sorted(stages) for p in stages[s].parameters()]
    errors = {"grads": _close([p.grad for p in mine], [want[id(p)] for p in mine])}
    if loss is not None:
        errors["loss"] = _close([loss], [loss_ref.detach()])
    return errors, [p.grad.clone() for p in mine]


def _optimizer_steps(rank, plan, steps=3):
    problem = plan.problem
    piped, ref = mlp(problem.num_stages, WIDTH), nn.Sequential(*mlp(problem.num_stages, WIDTH))
    stages = split_stages(piped, problem, rank)
    mine = {id(p) for s in stages.values() for p in s.parameters()}
    runner = PipelineRunner(plan, stages, mlp_loss, timeout=60)
    opt = torch.optim.Adam([p for s in stages.values() for p in s.parameters()], lr=0.05)
    opt_ref = torch.optim.Adam(ref.parameters(), lr=0.05)
    for k in range(steps):
        x, y = _batch(problem.m, seed=10 + k)
        runner.step(x, target=y)
        opt.step()
        opt.zero_grad()
        mlp_loss(ref(x), y).backward()
        opt_ref.step()
        opt_ref.zero_grad()
    pairs = [(a, b) for a, b in zip(nn.Sequential(*piped).parameters(), ref.parameters(), strict=True)
             if id(a) in mine]
    return _close([a.detach() for a, _ in pairs], [b.detach() for _, b in pairs])


def _torch_runtime_grads(rank, plan, csv_path):
    """torch.distributed.pipelining's runtime on the same model, loading schedc's CSV."""
    from torch.distributed.pipelining import PipelineStage
    from torch.distributed.pipelining.schedules import _PipelineScheduleRuntime

    problem = plan.problem
    x, y = _batch(problem.m, seed=1)
    stages = split_stages(mlp(problem.num_stages, WIDTH), problem, rank)
    cpu = torch.device("cpu")
    torch_stages = [PipelineStage(stages[s], s, problem.num_stages, cpu) for s in sorted(stages)]
    schedule = _PipelineScheduleRuntime(torch_stages, problem.m, loss_fn=mlp_loss)
    schedule._load_csv(csv_path)
    schedule.step(*((x,) if 0 in stages else ()), target=y if problem.num_stages - 1 in stages else None)
    return [p.grad.clone() for s in sorted(stages) for p in stages[s].parameters()]


def _worker(rank, world, plans, csv_dir):
    """Every check of every plan on this rank: {case: {check: error}}."""
    out = {}
    for case, plan in plans.items():
        errors, grads = _one_step(rank, plan)
        if case in OPTIMIZER:
            errors["optimizer"] = _optimizer_steps(rank, plan)
        if case in TORCH_CSV:
            path = os.path.join(csv_dir, case.replace("/", "_") + ".csv")
            if rank == 0:
                write_csv(plan, path)
            torch.distributed.barrier()
            errors["torch-csv"] = _close(_torch_runtime_grads(rank, plan, path), grads)
        out[case] = errors
    return out


def _run(world, cases, tmp_path_factory):
    plans = {case: _plan(*spec) for case, spec in cases.items()}
    # two ranks in fresh interpreters: with their own string-hash seeds, as torchrun's, they must agree
    # all the same; four from the fork server (four spawned interpreters took about 15 s more)
    per_rank = run_local(_worker, world, plans, str(tmp_path_factory.mktemp("csv")), timeout=240,
                         spawn=world == 2)
    merged = {c: {} for c in plans}
    for result in per_rank:
        for case, errors in result.items():
            for check, err in errors.items():
                merged[case][check] = max(err, merged[case].get(check, 0.0))
    return plans, merged


@pytest.fixture(scope="module")
def two_ranks(tmp_path_factory):
    return _run(2, TWO_RANKS, tmp_path_factory)


@pytest.fixture(scope="module")
def four_ranks(tmp_path_factory):
    return _run(4, FOUR_RANKS, tmp_path_factory)


def _result(results, case, check):
    _, merged = results
    return merged[case][check]


@pytest.mark.parametrize("case", sorted(TWO_RANKS))
def test_two_ranks_gradients_equal_the_full_batch(two_ranks, case):
    assert _result(two_ranks, case, "grads") < float("inf")
    assert _result(two_ranks, case, "loss") < float("inf")


@pytest.mark.parametrize("case", sorted(FOUR_RANKS))
def test_four_ranks_gradients_equal_the_full_batch(four_ranks, case):
    assert _result(four_ranks, case, "grads") < float("inf")
    assert _result(four_ranks, case, "loss") < float("inf")


@pytest.mark.parametrize("case", OPTIMIZER)
def test_optimizer_steps_give_the_unpipelined_parameters(two_ranks, case):
    assert _result(two_ranks, case, "optimizer") < float("inf")


@pytest.mark.parametrize("case", TORCH_CSV)
def test_torch_runtime_on_our_csv_gives_our_gradients(two_ranks, case):
    assert _result(two_ranks, case, "torch-csv") < float("inf")
