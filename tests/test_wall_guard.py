"""The one-worker wall-clock guard (solvers/wall_guard.py): each search's cap, and within ``solve``
the call's own cap over all its phases (capping each phase alone let a 5 s solve run 16.5 s)."""

from __future__ import annotations

import math
import time
from fractions import Fraction

from ortools.sat.python import cp_model

from schedc.problem import Problem
from schedc.solvers import BACKENDS, solve, wall_guard
from schedc.solvers.cpsat_solve import Clock, set_limits


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
    start = deadlines[0] - (wall_guard.WALL_GUARD * 2 + 1)  # the call's start, as the deadline counts it
    assert before <= start <= after
    assert wall_guard.deadline_left() == math.inf
