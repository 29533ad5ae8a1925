# sed -i '25s/"W": 2},  # backward first/"W": 1},  # backward first/' solvers/priorities.py
# sed -i '26s/"W": 1, "F": 2/"W": 2, "F": 1/' solvers/priorities.py
# sed -i '61s/(m + 1) \* stages/(m - 1) * stages/' solvers/priorities.py
# sed -i '62s/\[stages\] \* num_sk/[stages - 1] * num_sk/' solvers/priorities.py
# sed -i '65s/+ stages - 1 - stage\[sk\]/+ stage[sk]/' solvers/priorities.py
# sed -i '128s/memory_window(problem, r)/memory_window(problem, 0)/' solvers/priorities.py
"""The priority rules' keys order tasks as ``priorities.RULES`` documents, over every pair of tasks:
zb / 1f1b / ff by kind class, then the older microbatch, then the deeper stage; mb by microbatch,
then zb's class, then the deeper stage; and the cycle of the path rules counts every capped rank's
own throughput limit. A wrong key still gives a valid plan (only a slower one), which no validity
test notices."""

from __future__ import annotations

from fractions import Fraction
from itertools import pairwise

import pytest

from schedc.problem import Problem
from schedc.solvers.bounds import memory_window
from schedc.solvers.priorities import cycle_ticks, task_keys
from schedc.solvers.scaled import scaled

PROBLEMS = [
    Problem(p=3, m=4, v=2, tf=1, tb=2, tw=Fraction(3, 2), comm=Fraction(1, 2)),
    Problem(p=2, m=5, v=2, placement="vshape", split=False,
            stage_costs=[(1, 2, 1), (2, 1, 1), (3, 1, 2), (1, 1, 1)]),
    Problem(p=8, m=4, v=1, tf=1, tb=1, tw=1, comm=1),
]
IDS = [pr.describe() for pr in PROBLEMS]

CLASSES = {
    "zb": {"I": 0, "B": 0, "F": 1, "W": 2},
    "1f1b": {"I": 0, "B": 0, "W": 1, "F": 2},
    "ff": {"F": 0, "I": 1, "B": 1, "W": 2},
}


def _keys(problem: Problem, rule: str) -> dict:
    sc = scaled(problem)
    return {sc.action(t): k for t, k in enumerate(task_keys(sc, rule))}


def _same_order(keys: dict, rank) -> None:
    """The keys order every pair of tasks as ``rank`` does (a strict total order: no ties)."""
    ordered = sorted(keys, key=rank)
    assert len({rank(a) for a in ordered}) == len(ordered)
    for a, b in pairwise(ordered):
        assert keys[a] < keys[b], (a, b)


@pytest.mark.parametrize("problem", PROBLEMS, ids=IDS)
@pytest.mark.parametrize("rule", ["zb", "1f1b", "ff"])
def test_class_rules_order_by_class_then_microbatch_then_deeper_stage(problem: Problem, rule: str) -> None:
    cls = CLASSES[rule]
    keys = _keys(problem, rule)
    _same_order(keys, lambda a: (cls[a.kind], a.mb, -a.stage, a.kind))


@pytest.mark.parametrize("problem", PROBLEMS, ids=IDS)
def test_mb_orders_by_microbatch_then_class_then_deeper_stage(problem: Problem) -> None:
    cls = CLASSES["zb"]
    _same_order(_keys(problem, "mb"), lambda a: (a.mb, cls[a.kind], -a.stage, a.kind))


def test_the_cycle_takes_each_capped_ranks_own_throughput_limit() -> None:
    """Only rank 1 is capped here: its cap's time per microbatch (memory_window's larger term)
    exceeds the work, so it is the cycle; rank 0's window (none) must not stand in for it."""
    problem = Problem(p=2, m=8, v=2, tf=1, tb=2, tw=3, comm=1, mem=(None, Fraction(1, 2)))
    sc = scaled(problem)
    work = max(sum(problem.duration(k, s) for s in problem.rank_stages[r] for k in problem.kinds)
               for r in range(problem.p)) * sc.time_scale
    window = memory_window(problem, 1)
    assert memory_window(problem, 0) is None and window is not None
    limit = int(max(window) * sc.time_scale / problem.m)
    assert limit > work
    assert cycle_ticks(sc) == limit
