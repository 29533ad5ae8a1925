"""CP-SAT's stall trigger and the LNS polish that takes the rest of its time (solvers/solve.py)."""

from __future__ import annotations

import importlib

from schedc.problem import Problem
from schedc.solvers.cpsat_model import build_model
from schedc.solvers.cpsat_solve import solve_model
from schedc.solvers.incumbent import best_incumbent
from schedc.solvers.solve import Budget, CpsatSolver, analytic_bound

solve_module = importlib.import_module("schedc.solvers.solve")  # the package re-exports solve()
HARD = Problem(p=4, m=8, v=2, placement="vshape", tf=1, tb=2, tw=1, mem=(2,))
"""Two stages per rank, unequal costs, tight cap: CP-SAT does not prove it in a fraction of a second."""


def test_stall_stops_an_open_search_early():
    incumbent = best_incumbent(HARD)
    cm = build_model(HARD, horizon=incumbent.makespan)
    result = solve_model(cm, time_limit=30, workers=2, stall=0.0)
    assert result.stalled and not result.optimal and result.wall < 10


def test_stalled_search_is_polished_and_keeps_its_bound(monkeypatch):
    """With a stall at once, the plan comes from LNS on CP-SAT's plan: valid, within the cap, no worse
    than the incumbent, and still carrying CP-SAT's proven bound."""
    monkeypatch.setattr(solve_module, "STALL_SHARE", 0.0)
    incumbent = best_incumbent(HARD)
    floor = analytic_bound(HARD, "makespan")
    plan = CpsatSolver()(incumbent, Budget(3.0, 2, 0, None, floor))
    assert not plan.violations() and plan.fits()
    assert floor <= plan.lower_bound <= plan.value <= incumbent.value


def test_one_worker_never_stalls(monkeypatch):
    """One worker keeps same seed, same plan: no wall-clock trigger."""
    monkeypatch.setattr(solve_module, "STALL_SHARE", 0.0)
    incumbent = best_incumbent(HARD)
    budget = Budget(1.0, 1, 0, None, analytic_bound(HARD, "makespan"))
    assert CpsatSolver()(incumbent, budget).orders == CpsatSolver()(incumbent, budget).orders
