# sed -i '244s/max(budget.floor, proved.lower_bound)/proved.lower_bound/' solvers/backends.py
# sed -i '276s/<= CPSAT_MAX_TASKS/< CPSAT_MAX_TASKS/' solvers/backends.py
"""The proof search's answer (backends._prove) keeps the floor it was given, and the default backend
(backends.pick_backend) takes the full model up to its task limit."""

from __future__ import annotations

import importlib
from dataclasses import replace
from fractions import Fraction

from schedc.baselines import baseline_plan
from schedc.problem import Problem
from schedc.solvers.backends import CPSAT_MAX_TASKS, Budget, pick_backend
from schedc.solvers.portfolio import analytic_bound

backends = importlib.import_module("schedc.solvers.backends")
cpsat_solve = importlib.import_module("schedc.solvers.cpsat_solve")

PROBLEM = Problem(p=2, m=4, tf=1, tb=2, tw=1)


def test_the_proof_search_keeps_the_floor_above_its_own_bound(monkeypatch) -> None:
    """A proof search cut short may prove less than the floor it was given: the answer's bound is
    the floor, never CP-SAT's weaker bound."""
    plan = baseline_plan("gpipe", PROBLEM)  # 19; the optimum is the analytic bound, 17
    floor = analytic_bound(PROBLEM, "makespan")
    assert 0 < floor < plan.value
    proved = replace(plan, lower_bound=Fraction(0), status="feasible", source="cp-sat")
    monkeypatch.setattr(cpsat_solve, "cpsat_run", lambda p, **kw: (proved, None))
    answer = backends._prove(plan, Budget(5.0, 2, 0, None, floor))
    assert (answer.lower_bound, answer.status) == (floor, "feasible")


def test_the_full_model_is_picked_up_to_its_task_limit() -> None:
    """CPSAT_MAX_TASKS is the largest model the cp-sat backend takes: at it, cp-sat; one step above, lns."""
    at = Problem(p=2, m=CPSAT_MAX_TASKS // 4, v=1, split=False)
    above = Problem(p=2, m=CPSAT_MAX_TASKS // 4 + 1, v=1, split=False)
    assert at.num_tasks == CPSAT_MAX_TASKS < above.num_tasks
    assert (pick_backend(at), pick_backend(above)) == ("cp-sat", "lns")
