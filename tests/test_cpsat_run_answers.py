# sed -i '267s/bound >= incumbent.value/bound > incumbent.value/' solvers/cpsat_solve.py
# sed -i '266s/max(floor, result.bound)/result.bound/' solvers/cpsat_solve.py
# sed -i '272s/max(floor, result.bound)/result.bound/' solvers/cpsat_solve.py
# sed -i '283s/plan.value > result.objective/plan.value < result.objective/' solvers/cpsat_solve.py
"""``cpsat_run``'s answer (solvers/cpsat_solve.py): its status and bound follow what CP-SAT proved and
the floor it was given, whether CP-SAT found a solution or not, and a solution whose makespan
variable CP-SAT left slack (allowed for a non-optimal solution) replays without an internal error."""

from __future__ import annotations

import importlib
from dataclasses import replace
from fractions import Fraction

from schedc.problem import Problem
from schedc.solvers.cpsat_solve import CpsatResult, cpsat_run
from schedc.solvers.incumbent import best_incumbent
from schedc.solvers.portfolio import analytic_bound

cpsat_solve = importlib.import_module("schedc.solvers.cpsat_solve")

PROBLEM = Problem(p=2, m=3, v=2, tf=1, tb=2, tw=1)  # list plan 13, analytic bound 25/2


def _no_solution(bound: Fraction):
    def stand_in(cm, **kwargs) -> CpsatResult:
        return CpsatResult("UNKNOWN", None, None, bound, 0.0)

    return stand_in


def test_no_solution_with_a_bound_at_the_incumbent_proves_it_optimal(monkeypatch) -> None:
    """CP-SAT found no solution (no time to load the hint) but proved the incumbent's value: the
    incumbent is optimal, and must say so rather than 'feasible'."""
    incumbent = best_incumbent(PROBLEM)
    monkeypatch.setattr(cpsat_solve, "solve_model", _no_solution(incumbent.value))
    plan, _ = cpsat_run(incumbent, time_limit=1, workers=2, floor=analytic_bound(PROBLEM, "makespan"))
    assert (plan.value, plan.lower_bound, plan.status) == (incumbent.value, incumbent.value, "optimal")


def test_no_solution_keeps_the_floor_above_cpsat_bound(monkeypatch) -> None:
    """The floor is proven (analytic bound) even where CP-SAT's own bound is 0: the answer's bound
    is the floor, not CP-SAT's weaker one."""
    incumbent = best_incumbent(PROBLEM)
    floor = analytic_bound(PROBLEM, "makespan")
    assert 0 < floor < incumbent.value
    monkeypatch.setattr(cpsat_solve, "solve_model", _no_solution(Fraction(0)))
    plan, _ = cpsat_run(incumbent, time_limit=1, workers=2, floor=floor)
    assert (plan.lower_bound, plan.status) == (floor, "feasible")


def test_a_feasible_solution_is_feasible_and_keeps_the_floor(monkeypatch) -> None:
    """CP-SAT stopped with a solution it did not prove (FEASIBLE) and a bound below the floor: the
    plan is 'feasible', never 'optimal', and its bound is the floor."""
    incumbent = best_incumbent(PROBLEM)
    floor = analytic_bound(PROBLEM, "makespan")
    real = cpsat_solve.solve_model

    def unproven(cm, **kwargs) -> CpsatResult:
        return replace(real(cm, **kwargs), status="FEASIBLE", bound=Fraction(0))

    monkeypatch.setattr(cpsat_solve, "solve_model", unproven)
    plan, _ = cpsat_run(incumbent, time_limit=5, workers=2, floor=floor)
    assert (plan.lower_bound, plan.status) == (floor, "feasible")
    assert plan.value <= incumbent.value and not plan.violations()


def test_a_solution_with_a_slack_makespan_variable_replays(monkeypatch) -> None:
    """A non-optimal CP-SAT solution may report an objective above its tasks' last end; the replay
    then ends earlier than the objective, which is fine (only a later end is a modelling bug)."""
    incumbent = best_incumbent(PROBLEM)
    real = cpsat_solve.solve_model

    def slack(cm, **kwargs) -> CpsatResult:
        result = real(cm, **kwargs)
        return replace(result, status="FEASIBLE", objective=result.objective + 1, bound=Fraction(0))

    monkeypatch.setattr(cpsat_solve, "solve_model", slack)
    plan, _ = cpsat_run(incumbent, time_limit=5, workers=2)
    assert plan.value <= incumbent.value and plan.status == "feasible" and not plan.violations()
