"""Every window's claim holds: a window CP-SAT proves optimal replays at exactly its claim, and a claim
below the incumbent comes with a plan that reaches it. The sub-model's constant (the part of the
suffix that waits for nothing free: its rank's last prefix task, its prefix inputs plus their
latency) must be right, or lns takes unimprovable windows for proven ones and claims what no replay
reaches."""

from __future__ import annotations

from fractions import Fraction

import pytest

from schedc.plan import Plan
from schedc.problem import Problem
from schedc.solvers.incumbent import best_incumbent, sequential_orders
from schedc.solvers.lns import Window, solve_window

CASES = [  # (problem, incumbent): a poor one-microbatch-at-a-time plan, and the quick incumbent
    (Problem(p=3, m=3, split=False, tf=2, tb=1, tw=1, comm=Fraction(3, 2)), "sequential"),
    (Problem(p=3, m=3, split=False, tf=1, tb=1, tw=1, comm=4), "best"),
]


@pytest.mark.parametrize("objective", ["makespan", "span"])
@pytest.mark.parametrize(("problem", "start"), CASES, ids=lambda x: x if isinstance(x, str) else x.describe())
def test_every_window_claim_holds(problem, start, objective):
    if start == "sequential":
        incumbent = Plan(problem=problem, orders=sequential_orders(problem), source=start,
                         objective=objective)
    else:
        incumbent = best_incumbent(problem, objective)
    end = int(incumbent.makespan * problem.time_scale)
    for a in range(8):
        for b in range(a + 1, 9):
            window = Window(a * end // 8, b * end // 8 + (b == 8))
            result = solve_window(incumbent, window, time_limit=2, workers=1)
            if result.plan is None:
                assert result.claimed is None or result.claimed >= incumbent.value, (a, b)
                continue
            assert result.plan.fits() and result.plan.value <= result.claimed
            if result.optimal:
                assert result.plan.value == result.claimed, (a, b)
