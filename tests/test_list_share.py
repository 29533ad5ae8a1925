"""The list phase (the incumbent) gets a quarter of solve's time limit: in seconds with several workers,
as a task budget (LIST_SECONDS_PER_TASK) with one. Given the whole limit, a large problem's list phase
alone could spend it all (or, with one worker, four times the list charge the search is planned around)
and the call would run past its limit."""

from __future__ import annotations

import importlib

import pytest

from schedc.problem import Problem
from schedc.solvers import solve
from schedc.solvers.incumbent import best_incumbent

solve_module = importlib.import_module("schedc.solvers.portfolio")


@pytest.mark.parametrize("workers", [2, 1])
def test_the_list_phase_gets_a_quarter_of_the_time_limit(monkeypatch, workers):
    quarter = 8 / 4
    budget = ({"time_budget": quarter} if workers > 1
              else {"task_budget": int(quarter / solve_module.LIST_SECONDS_PER_TASK)})
    seen: list[dict] = []

    def recorded(problem, objective="makespan", **kwargs):
        seen.append(kwargs)
        return best_incumbent(problem, objective, **kwargs)

    monkeypatch.setattr(solve_module, "best_incumbent", recorded)
    monkeypatch.setitem(solve_module.BACKENDS, "list", lambda incumbent, budget: incumbent)
    solve(Problem(p=2, m=4, tf=1, tb=2, tw=1), time_limit=8, workers=workers, backend="list")
    assert seen == [budget]
