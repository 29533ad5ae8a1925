"""The list scheduler's priority rules say what RULES documents: the keys are the heuristics' whole
content, and a wrong key still gives a valid (only slower) plan, which no validity test notices."""

from __future__ import annotations

from fractions import Fraction

import pytest

from schedc.actions import Action
from schedc.problem import Problem
from schedc.solvers.bounds import memory_window
from schedc.solvers.paths import stage_paths
from schedc.solvers.priorities import cycle_ticks, task_keys
from schedc.solvers.scaled import scaled

PROBLEMS = [
    Problem(p=3, m=4, v=2, tf=1, tb=2, tw=Fraction(3, 2), comm=Fraction(1, 2)),
    Problem(p=2, m=5, v=2, placement="vshape", split=False,
            stage_costs=[(1, 2, 1), (2, 1, 1), (3, 1, 2), (1, 1, 1)]),
    Problem(p=4, m=3, v=1, tf=2, tb=1, tw=1, comm=1),
]


def _keys(problem: Problem, rule: str) -> dict:
    sc = scaled(problem)
    return {sc.action(t): k for t, k in enumerate(task_keys(sc, rule))}


@pytest.mark.parametrize("problem", PROBLEMS, ids=lambda pr: pr.describe())
def test_cycle_is_the_busiest_ranks_work_per_microbatch(problem: Problem) -> None:
    """Uncapped: the time one microbatch's tasks take on the busiest rank (in ticks)."""
    sc = scaled(problem)
    work = [sum(problem.duration(k, s) for s in problem.rank_stages[r] for k in problem.kinds)
            for r in range(problem.p)]
    assert cycle_ticks(sc) == max(work) * sc.time_scale


def test_a_tight_cap_stretches_the_cycle_to_its_throughput_limit() -> None:
    """Capped: the cap's time per microbatch (the larger of memory_window's two terms) when it
    exceeds the work."""
    problem = Problem(p=2, m=8, v=2, tf=1, tb=2, tw=3, comm=1, mem=1)
    sc = scaled(problem)
    work = max(sum(problem.duration(k, s) for s in problem.rank_stages[r] for k in problem.kinds)
               for r in range(problem.p)) * sc.time_scale
    limit = max(int(max(memory_window(problem, r)) * sc.time_scale / problem.m) for r in range(problem.p))
    assert limit > work and min(memory_window(problem, 0)) < max(memory_window(problem, 0))
    assert cycle_ticks(sc) == limit


@pytest.mark.parametrize("problem", PROBLEMS, ids=lambda pr: pr.describe())
def test_lst_is_the_latest_start_on_the_critical_path(problem: Problem) -> None:
    """'lst' of microbatch 0: critical path - tail - duration, the task's latest start."""
    paths = stage_paths(problem)
    cp = max(paths.head[k] + problem.duration(*k) + paths.tail[k] for k in paths.head)
    keys = _keys(problem, "lst")
    scale = problem.time_scale
    for a, key in keys.items():
        if a.mb == 0:
            assert key == (cp - paths.tail[a.kind, a.stage] - problem.duration(a.kind, a.stage)) * scale


@pytest.mark.parametrize("problem", PROBLEMS, ids=lambda pr: pr.describe())
def test_zb_bfs_takes_the_shallower_stage_first_and_zb_the_deeper(problem: Problem) -> None:
    for rule, shallow_first in (("zb", False), ("zb-bfs", True)):
        keys = _keys(problem, rule)
        for a, key in keys.items():
            if a.stage + 1 < problem.num_stages:
                deeper = keys[Action(a.kind, a.stage + 1, a.mb)]
                assert (key < deeper) == shallow_first, (rule, a)


@pytest.mark.parametrize("problem", PROBLEMS, ids=lambda pr: pr.describe())
def test_mb_takes_the_oldest_microbatch_first(problem: Problem) -> None:
    """'mb': every task of microbatch i before any of microbatch i + 1."""
    keys = _keys(problem, "mb")
    for i in range(problem.m - 1):
        assert max(k for a, k in keys.items() if a.mb == i) < min(k for a, k in keys.items() if a.mb == i + 1)


@pytest.mark.parametrize("problem", [pr for pr in PROBLEMS if pr.split], ids=lambda pr: pr.describe())
def test_lst_mb_defers_w_behind_every_other_task(problem: Problem) -> None:
    keys = _keys(problem, "lst-mb")
    assert min(k for a, k in keys.items() if a.kind == "W") > max(k for a, k in keys.items() if a.kind != "W")
