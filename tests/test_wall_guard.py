"""The one-worker wall-clock guard (solvers/wall_guard.py): each search's cap, and within ``solve``
one cap over all its searches (capping each phase alone let a 5 s solve run 16.5 s), which stops
a sequence of searches but never sizes a budget (that made one worker's windows follow the clock)."""

from __future__ import annotations

import importlib
import math
import time
from fractions import Fraction

from ortools.sat.python import cp_model

from schedc.problem import Problem
from schedc.solvers import BACKENDS, solve, wall_guard
from schedc.solvers.cpsat_params import set_limits
from schedc.solvers.cpsat_solve import Clock

portfolio = importlib.import_module("schedc.solvers.portfolio")


def test_a_search_gets_its_own_cap_outside_a_call_and_no_more_than_the_call_has_left_inside():
    assert wall_guard.deadline_left() == math.inf
    assert wall_guard.guard(5) == wall_guard.WALL_GUARD * 5 + 1
    with wall_guard.call_deadline(1, time.perf_counter() - 100):  # the call's cap has passed
        assert wall_guard.guard(5) == wall_guard.MIN_SECONDS
        solver = cp_model.CpSolver()
        set_limits(solver, 5, 1)
        assert solver.parameters.max_time_in_seconds == wall_guard.MIN_SECONDS
        assert solver.parameters.max_deterministic_time == 5
        assert Clock(5, 1).left() <= 0  # a sequence of searches (LNS, probes) stops
        assert Clock(5, 2).left() > 4  # several workers count wall time against their own limit
    with wall_guard.call_deadline(1, time.perf_counter()):  # about 4 s left: budgets stay the seed's
        clock = Clock(100, 1)
        clock.spend(30)
        assert clock.left() == 70  # it was cut to the 4 s: one worker's windows then followed the clock
    assert wall_guard.deadline_left() == math.inf


def test_solve_holds_its_phases_to_the_calls_cap(monkeypatch):
    """The backend and the bound phases run inside the call's deadline: its own limit's cap, counted
    from the call's start, and none is left behind once the call returns."""
    deadlines: list[float] = []

    def backend(incumbent, budget):
        deadlines.append(time.perf_counter() + wall_guard.deadline_left())
        return incumbent

    monkeypatch.setitem(BACKENDS, "cp-sat", backend)
    problem = Problem(p=4, m=8, v=2, placement="vshape", mem=(Fraction(3, 2),), tb=2)
    before = time.perf_counter()
    solve(problem, time_limit=2, workers=1, backend="cp-sat")
    after = time.perf_counter()
    assert len(deadlines) == 1
    left = 2 - portfolio._list_charge(problem, 2 / 4)  # the searches' time, after the list phase's
    start = deadlines[0] - (wall_guard.WALL_GUARD * left + 1)  # when the searches began
    assert before <= start <= after
    assert wall_guard.deadline_left() == math.inf


def test_an_inner_call_deadline_gives_the_outer_one_back():
    """Clearing the deadline on exit (``set(None)``) left an outer call's remaining searches with no
    wall-clock cap: guard() went back to WALL_GUARD * limit + 1 per search."""
    t0 = time.perf_counter()
    outer_cap, inner_cap = wall_guard.WALL_GUARD * 100 + 1, wall_guard.WALL_GUARD * 1 + 1
    with wall_guard.call_deadline(100, t0):
        with wall_guard.call_deadline(1, t0):
            assert wall_guard.deadline_left() <= inner_cap
        assert inner_cap < wall_guard.deadline_left() <= outer_cap
        assert wall_guard.guard(1000) <= outer_cap
    assert wall_guard.deadline_left() == math.inf
