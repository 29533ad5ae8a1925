# sed -i '66s/<= WHOLE_SEARCH_MAX_TASKS/< WHOLE_SEARCH_MAX_TASKS/' solvers/backends.py
# sed -i '98s/lower_bound=budget.floor/lower_bound=incumbent.lower_bound/' solvers/backends.py
# sed -i '194s/max(floor, stop.floor)/stop.floor/' solvers/portfolio.py
"""Phase rules of the solver (backends.whole_search, the list backend's bound) and the floor that a
Ctrl-C inside a bound phase leaves (portfolio._search)."""

from __future__ import annotations

import importlib
from fractions import Fraction

from schedc.problem import Problem
from schedc.solvers import solve
from schedc.solvers.backends import BACKENDS, WHOLE_SEARCH_MAX_TASKS, Budget, whole_search
from schedc.solvers.incumbent import best_incumbent
from schedc.solvers.portfolio import analytic_bound
from schedc.solvers.progress import Interrupted

relaxation = importlib.import_module("schedc.solvers.relaxation")


def test_the_whole_search_takes_models_up_to_its_task_limit() -> None:
    """WHOLE_SEARCH_MAX_TASKS is 'at most this many tasks': a model of exactly that many gets the
    whole search, one a step larger does not."""
    at = Problem(p=2, m=WHOLE_SEARCH_MAX_TASKS // 4, v=1, split=False)
    above = Problem(p=2, m=WHOLE_SEARCH_MAX_TASKS // 4 + 1, v=1, split=False)
    assert at.num_tasks == WHOLE_SEARCH_MAX_TASKS < above.num_tasks
    assert whole_search(at, "makespan", 2) and not whole_search(above, "makespan", 2)


def test_the_list_backend_answers_with_the_floor_as_its_bound() -> None:
    """The Solver protocol: the answer's lower_bound is what the backend proved or the floor; the
    list backend proves nothing, so it is the floor (the list plan itself carries no bound)."""
    problem = Problem(p=2, m=3, v=2, tf=1, tb=2, tw=1)
    incumbent = best_incumbent(problem)
    floor = analytic_bound(problem, "makespan")
    assert incumbent.lower_bound is None
    answer = BACKENDS["list"](incumbent, Budget(1.0, 1, 0, None, floor))
    assert answer.lower_bound == floor and answer.value == incumbent.value


def test_a_ctrl_c_in_the_relaxation_keeps_the_analytic_floor(monkeypatch) -> None:
    """The rank relaxation, cut short by Ctrl-C, hands back the best bound it had, which may be below
    the analytic floor; the answer keeps the better of the two, never the weaker one."""
    problem = Problem(p=2, m=4, v=2, placement="vshape", tf=1, tb=2, tw=1, mem=(1,))  # list 23, floor 43/2
    floor = analytic_bound(problem, "makespan")
    assert floor == Fraction(43, 2) and best_incumbent(problem).value > floor

    def cut_short(*args, **kwargs):
        raise Interrupted(None, Fraction(1))

    monkeypatch.setattr(relaxation, "relaxation_bound", cut_short)
    plan = solve(problem, time_limit=2, workers=2, backend="cp-sat")
    assert plan.lower_bound == floor and plan.value >= floor and not plan.violations()
