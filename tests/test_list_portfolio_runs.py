# sed -i '118s/num_tasks >= task_budget/num_tasks > task_budget/' solvers/list_scheduler.py
# sed -i '118s/k \* problem.num_tasks/(k + 1) * problem.num_tasks/' solvers/list_scheduler.py
# sed -i '105s/any(c is not None/all(c is not None/' solvers/list_portfolio.py
# sed -i '109s/problem.v == 1 or/problem.v == 1 and/' solvers/list_portfolio.py
# sed -i '111s/if problem.v == 2:/if False:/' solvers/list_portfolio.py
# sed -i '117s/problem.v >= 3/problem.v > 3/' solvers/list_portfolio.py
# sed -i '117s/chosen = \[.*\] if capped/chosen = [] if capped/' solvers/list_portfolio.py
"""Which runs the list portfolio makes: the task budget's count, the variants a partly capped
problem gets and the collapse of admission policies where they cannot differ (the in-flight counts
are tested in test_list_scheduler.py). A slip here still returns a valid plan (a worse one, or a
slower search), which no validity test notices."""

from __future__ import annotations

from fractions import Fraction

import pytest

import schedc.solvers.list_scheduler as list_scheduler
from schedc.plan import Plan
from schedc.problem import Problem
from schedc.solvers.list_portfolio import DEEP_RUNS, VSHAPE_RUNS, Variant, variants
from schedc.solvers.list_scheduler import best_list_result


@pytest.mark.parametrize(("runs_of_tasks", "extra", "expected"),
                         [(0, 0, 1), (1, 0, 1), (1, 1, 2), (2, 0, 2), (2, 1, 3)])
def test_a_task_budget_stops_once_the_runs_so_far_scheduled_that_many_tasks(
        monkeypatch: pytest.MonkeyPatch, runs_of_tasks: int, extra: int, expected: int) -> None:
    """Each run schedules every task once: a budget of k runs' tasks runs exactly k (at least one),
    and one task more takes one more run."""
    problem = Problem(p=4, m=8, v=2, mem=(Fraction(3, 2),), tb=2)
    assert len(variants(problem)) > 3
    calls: list[object] = []
    run = list_scheduler.run_variant

    def counting(problem: Problem, variant: Variant) -> list_scheduler.ListResult:
        calls.append(variant)
        return run(problem, variant)

    monkeypatch.setattr(list_scheduler, "run_variant", counting)
    best_list_result(problem, task_budget=runs_of_tasks * problem.num_tasks + extra)
    assert len(calls) == expected


def test_a_partly_capped_problem_gets_the_capped_variants() -> None:
    """One capped rank makes the problem capped: admission policies still differ there, and a V
    shape with a cap on some rank gets its entry-admission runs."""
    looped = Problem(p=2, m=4, v=2, mem=(1, None))
    assert {v.admission for v in variants(looped)} != {"banker"}
    vshape = Problem(p=4, m=8, v=2, placement="vshape", mem=(2, None, None, None))
    assert set(VSHAPE_RUNS) <= set(variants(vshape))


@pytest.mark.parametrize("problem", [Problem(p=4, m=8, v=1, mem=1), Problem(p=4, m=8, v=2)],
                         ids=["v1-capped", "uncapped"])
def test_admission_policies_collapse_where_they_cannot_differ(problem: Problem) -> None:
    """With v = 1 (nothing more to allocate after the entry) or no cap at all and no virtual cap,
    every admission policy gives the same plan: the variants list them once, as 'banker', so no
    run of the portfolio (or of a task budget) is spent twice on one plan."""
    for v in variants(problem, thorough=True):
        if problem.v == 1 or v.window == "none":
            assert v.admission == "banker" and v.entry is None, v


def test_three_stages_per_rank_under_a_cap_get_the_deep_runs() -> None:
    """The lookahead runs only differ from forecast's with three stages per rank or more, and matter
    only under a cap: they are added there alone (on two stages they would repeat forecast's plans)."""
    assert set(DEEP_RUNS) <= set(variants(Problem(p=4, m=8, v=3, mem=2)))
    for problem in (Problem(p=4, m=8, v=2, mem=2), Problem(p=4, m=8, v=3)):
        assert not set(DEEP_RUNS) & set(variants(problem))


def test_they_run_first_where_a_budget_may_cut_the_portfolio() -> None:
    """Last, behind about 80 runs, a default solve's list budget cut them off from 12,288 tasks
    (p=16 m=64 v=4 mem=8: 239.5 against their 211.75): a budget of three runs' tasks gets them."""
    problem = Problem(p=8, m=16, v=4, mem=4)
    assert variants(problem)[:len(DEEP_RUNS)] == list(DEEP_RUNS)
    result = best_list_result(problem, task_budget=len(DEEP_RUNS) * problem.num_tasks)
    assert result.makespan == Fraction(223, 4)


def test_their_portfolio_reaches_the_v4_optimum() -> None:
    """p=8 m=16 v=4 mem=4: the analytic bound, 55.75, is the optimum (CP-SAT proved it in 215 s);
    without the lookahead runs the best of every variant was 64.5, and the portfolio's 65.75."""
    from schedc.solvers.bounds import lower_bound
    from schedc.validate import validate

    problem = Problem(p=8, m=16, v=4, mem=4)
    result = best_list_result(problem)
    plan = Plan(problem=problem, orders=result.orders, source="list")
    assert plan.makespan == lower_bound(problem) == Fraction(223, 4) and validate(plan) == [] and plan.fits()


def test_with_two_stages_per_rank_lookahead_is_forecast() -> None:
    """Its horizon, the newcomer's last F on the rank, is forecast's next one there: every variant is
    listed once, as forecast's, so no thorough run repeats a plan."""
    problem = Problem(p=4, m=8, v=2, mem=2)
    listed = variants(problem, thorough=True)
    assert all("lookahead" not in (v.admission, v.entry) for v in listed)
    assert any(v.admission == "forecast" for v in listed)
    assert any(v.admission == "lookahead" for v in variants(Problem(p=4, m=8, v=3, mem=2), thorough=True))
