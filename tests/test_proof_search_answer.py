"""The proof search after a stall (backends._prove) answers with the better of its plan and the stalled
one: dropping a better plan it found left the worse plan, reported 'feasible' with a gap, beside a bound
that the better plan reaches. A Ctrl-C during that search keeps its better plan the same way."""

from __future__ import annotations

import importlib
from dataclasses import replace

import pytest

from schedc.baselines import baseline_plan
from schedc.problem import Problem
from schedc.solvers.backends import Budget
from schedc.solvers.incumbent import best_incumbent
from schedc.solvers.portfolio import analytic_bound
from schedc.solvers.progress import Interrupted

backends = importlib.import_module("schedc.solvers.backends")
cpsat_solve = importlib.import_module("schedc.solvers.cpsat_solve")


def test_the_proof_search_answers_with_the_better_plan_it_found(monkeypatch):
    problem = Problem(p=2, m=4, tf=1, tb=2, tw=1)
    stalled, found = baseline_plan("gpipe", problem), best_incumbent(problem)
    assert found.value < stalled.value and not found.violations()
    proved = replace(found, lower_bound=found.value, status="optimal", source="cp-sat")
    monkeypatch.setattr(cpsat_solve, "cpsat_run", lambda plan, **kw: (proved, None))
    answer = backends._prove(stalled, Budget(5.0, 2, 0, None, analytic_bound(problem, "makespan")))
    assert (answer.value, answer.lower_bound, answer.status) == (found.value, found.value, "optimal")
    assert answer.orders == found.orders


def test_a_ctrl_c_during_the_proof_search_keeps_the_better_plan_it_had_found(monkeypatch):
    problem = Problem(p=2, m=4, tf=1, tb=2, tw=1)
    stalled, found = baseline_plan("gpipe", problem), best_incumbent(problem)
    floor = analytic_bound(problem, "makespan")
    assert found.value < stalled.value

    def interrupted(plan, **kw):
        raise Interrupted(replace(found, lower_bound=floor, status="feasible", source="cp-sat"))

    monkeypatch.setattr(cpsat_solve, "cpsat_run", interrupted)
    with pytest.raises(Interrupted) as stop:
        backends._prove(stalled, Budget(5.0, 2, 0, None, floor))
    assert stop.value.plan.value == found.value and stop.value.plan.orders == found.orders
    assert stop.value.floor == floor
