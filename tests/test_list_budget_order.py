# sed -i '134s/key=lambda v: not _anchor(v)/key=lambda v: 0/' solvers/list_scheduler.py
"""A budget that cuts the list portfolio short runs zb first: its order was tuned on small
problems, and from about 100,000 tasks only its first one or two runs fit, lst-mb first, 21%
slower than zb on p=64 m=1024 under a cap of 32 (found by the scale hunt)."""

from __future__ import annotations

from schedc.problem import Problem
from schedc.solvers.list_scheduler import best_list_result, run_variant, variants


def test_a_cut_portfolio_runs_zb_first() -> None:
    problem = Problem(p=32, m=256, mem=[16])
    order = variants(problem)
    first = run_variant(problem, order[0])
    assert order[0].rule == "lst-mb"  # the small-problem order
    one_run = best_list_result(problem, task_budget=problem.num_tasks)
    assert str(one_run.variant) == "zb/none/banker" and one_run.makespan == 1099 < first.makespan == 1296
    timed = best_list_result(problem, time_budget=1e-9)  # the clock's budget: one run too
    assert str(timed.variant) == "zb/none/banker"


def test_a_whole_portfolio_keeps_its_order() -> None:
    """Within budget every run completes and the first of equal plans wins, as before."""
    problem = Problem(p=4, m=8, mem=[3])
    assert best_list_result(problem, task_budget=10**9).variant == best_list_result(problem).variant
