"""A plan's status says whether a proof was tried: 'heuristic' only for the list plan left untouched by
any search. A CP-SAT search that ran but found nothing (no time to load even the hint) hands back the
incumbent marked 'feasible' (searched, gap open); solve must not relabel it 'heuristic' because its
source is still the list scheduler's."""

from __future__ import annotations

import importlib
from dataclasses import replace
from fractions import Fraction

from schedc.problem import Problem
from schedc.solvers.cpsat_solve import CpsatResult
from schedc.solvers.incumbent import best_incumbent
from schedc.solvers.portfolio import analytic_bound, solve

cpsat_solve = importlib.import_module("schedc.solvers.cpsat_solve")
portfolio = importlib.import_module("schedc.solvers.portfolio")


def test_a_search_that_found_nothing_leaves_the_list_plan_feasible_not_heuristic(monkeypatch):
    problem = Problem(p=2, m=3, v=2, tf=1, tb=2, tw=1)  # list plan 13, analytic bound 25/2
    incumbent = best_incumbent(problem)
    floor = analytic_bound(problem, "makespan")
    assert floor < incumbent.value  # else no search runs

    def no_solution(cm, **kwargs):
        return CpsatResult("UNKNOWN", None, None, Fraction(0), 0.0)

    monkeypatch.setattr(cpsat_solve, "solve_model", no_solution)
    plan = solve(problem, time_limit=2, workers=2, backend="cp-sat")
    assert (plan.value, plan.lower_bound, plan.status) == (incumbent.value, floor, "feasible")


def test_finish_keeps_heuristic_only_for_the_untouched_list_plan():
    problem = Problem(p=2, m=3, v=2, tf=1, tb=2, tw=1)  # list plan 13, analytic bound 25/2
    incumbent = best_incumbent(problem)
    floor = analytic_bound(problem, "makespan")
    finish = portfolio._finish
    assert incumbent.status == "heuristic" and finish(incumbent, incumbent, floor, 0.0).status == "heuristic"
    searched = replace(incumbent, status="feasible")  # what cpsat_run returns when CP-SAT found nothing
    assert finish(searched, incumbent, floor, 0.0).status == "feasible"
