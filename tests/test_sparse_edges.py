# sed -i '248s/a.kind == "B" and problem.split/a.kind == "B"/' schedc/simulate.py
# sed -i '254s/problem.num_tasks > SPARSE_TASKS/problem.num_tasks >= SPARSE_TASKS/' schedc/simulate.py
# sed -i '61s/num_tasks - covered(problem, orders)/num_tasks - sum(map(len, orders))/' schedc/validate.py
# sed -i '254s/orders) < problem/orders) <= problem/' schedc/simulate.py
"""The one-line report of orders far too short for a large problem (``sparse``): its two boundaries
(more than SPARSE_TASKS tasks; orders covering less than half of them) and what a B covers."""

from __future__ import annotations

import importlib

import pytest

from schedc.actions import Action
from schedc.problem import Problem
from schedc.validate import Summary, error_count, validate

simulate_module = importlib.import_module("schedc.simulate")
PROBLEM = Problem(p=2, m=20)  # 2 stages x 20 microbatches x F/I/W: 120 tasks


def _listed_one_by_one(errors: list[str], missing: int) -> bool:
    return len(errors) == missing and all(e.endswith(": missing") and not isinstance(e, Summary)
                                          for e in errors)


def test_exactly_sparse_tasks_tasks_list_their_missing_actions(monkeypatch: pytest.MonkeyPatch) -> None:
    """Only a problem of more than SPARSE_TASKS tasks gets the one-line report: at exactly that many
    the 118 missing actions are listed one by one, one task more and they are summarised."""
    orders = ((Action("F", 0, 0),), (Action("F", 1, 0),))
    monkeypatch.setattr(simulate_module, "SPARSE_TASKS", PROBLEM.num_tasks)
    assert _listed_one_by_one(validate(PROBLEM, orders), PROBLEM.num_tasks - 2)
    monkeypatch.setattr(simulate_module, "SPARSE_TASKS", PROBLEM.num_tasks - 1)
    errors = validate(PROBLEM, orders)
    assert len(errors) == 1 and errors[0].endswith("at least 118 are missing")


def test_orders_covering_exactly_half_the_tasks_are_not_sparse(monkeypatch: pytest.MonkeyPatch) -> None:
    """Sparse means covering less than half the tasks: 60 distinct actions of the 120 tasks list the
    60 missing ones, and 59 actions get the one line."""
    monkeypatch.setattr(simulate_module, "SPARSE_TASKS", 100)
    half = tuple(tuple([Action("F", r, mb) for mb in range(20)] + [Action("I", r, mb) for mb in range(10)])
                 for r in range(2))
    assert sum(map(len, half)) * 2 == PROBLEM.num_tasks
    assert _listed_one_by_one(validate(PROBLEM, half), 60)
    short = (half[0][:-1], half[1])
    errors = validate(PROBLEM, short)
    assert len(errors) == 1 and errors[0].endswith("at least 61 are missing")


def test_a_b_of_an_unsplit_problem_is_one_task(monkeypatch: pytest.MonkeyPatch) -> None:
    """Under split=False a B is the whole backward, one task of F/B (it stands for two only where the
    backward is split into I and W): four actions of the 80 tasks leave at least 76 missing."""
    monkeypatch.setattr(simulate_module, "SPARSE_TASKS", 50)
    problem = Problem(p=2, m=20, split=False)
    assert problem.num_tasks == 2 * 20 * 2
    orders = tuple((Action("F", r, 0), Action("B", r, 0)) for r in range(2))
    errors = validate(problem, orders)
    assert len(errors) == 1 and errors[0].endswith("at least 76 are missing")
    assert error_count(errors) == 76


def test_a_b_of_a_split_problem_covers_two_tasks(monkeypatch: pytest.MonkeyPatch) -> None:
    """Under split=True a B runs the I and the W of its microbatch: F and B on each rank cover 6 of
    the 120 tasks, so exactly 114 are missing and "at least 116" would claim more than are."""
    monkeypatch.setattr(simulate_module, "SPARSE_TASKS", 100)
    orders = tuple((Action("F", r, 0), Action("B", r, 0)) for r in range(2))
    errors = validate(PROBLEM, orders)
    assert len(errors) == 1 and errors[0].endswith("at least 114 are missing")
    assert error_count(errors) == PROBLEM.num_tasks - 2 * 3
