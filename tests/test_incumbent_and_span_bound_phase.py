# sed -i '135s/bound > floor/bound >= floor/' solvers/span_bound.py
# sed -i '101s/min(candidates/max(candidates/' solvers/incumbent.py
# sed -i '59s/objective=objective)/objective="makespan")/' solvers/incumbent.py
# sed -i '75s/objective=objective)/objective="makespan")/' solvers/incumbent.py
# sed -i '94s/time_budget, task_budget)/task_budget, time_budget)/' solvers/incumbent.py
"""The span bound phase reports a progress line only where it raised the bound; the incumbent is
the best of its candidates (the list schedule and every fitting baseline), each valued by the
objective asked for and built within the budget given."""

from __future__ import annotations

from fractions import Fraction

import pytest

from schedc.plan import Plan
from schedc.problem import Problem
from schedc.solvers.incumbent import (
    baseline_plans,
    best_incumbent,
    fitting_baselines,
    list_plan,
    sequential_orders,
)
from schedc.solvers.progress import Progress
from schedc.solvers.span_bound import first_rank_floor, span_floor
from schedc.validate import validate

INDEX_LOSES = Problem(p=2, m=2, stage_costs=[(5, 2, 0), (3, 1, 6)])  # span optimum 20 (solvers.span_bound)
SPAN_20 = (("0F0", "0F1", "0I1", "0W1", "0I0", "0W0"), ("1F1", "1I1", "1F0", "1I0", "1W0", "1W1"))
"""Its optimum: rank 1 starts with microbatch 1 (``test_solve``)."""


def test_the_span_bound_phase_reports_only_what_it_moved() -> None:
    """The relaxation proves 20 on this problem (test_span_bound), and its solution replays at 20:
    from a poor plan that is one line, with the relaxation's plan; from a plan of 20 and a floor of
    20 nothing moved, and a line would claim progress there was none of."""
    poor = Plan(problem=INDEX_LOSES, orders=sequential_orders(INDEX_LOSES), source="sequential",
                objective="span")
    best = Plan(problem=INDEX_LOSES, orders=SPAN_20, source="hand", objective="span")
    assert poor.value > 20 == best.value
    for start, floor, lines in ((poor, Fraction(0), 1), (poor, Fraction(16), 1), (best, Fraction(20), 0)):
        events: list[Progress] = []
        plan, bound = span_floor(start, floor, seconds=5, workers=1, seed=0, progress=events.append, t0=0.0)
        assert bound == 20 == plan.value and validate(plan) == []
        assert plan is best if start is best else plan.source == "span relaxation"
        assert len(events) == lines
        assert all(e.bound == e.best == 20 and e.source == plan.source for e in events)


def test_rank_0s_end_reports_its_bound_and_its_shorter_plan() -> None:
    """Ahead of the search, rank 0's end proves 16 here (its last task ends there in the best plan,
    whose span, 20, is rank 1's) and its model's plan replays at 21, below the sequential plan's: one
    line with both, and the floor raised to 16, not to the plan's value."""
    poor = Plan(problem=INDEX_LOSES, orders=sequential_orders(INDEX_LOSES), source="sequential",
                objective="span")
    for floor in (Fraction(0), Fraction(15)):
        events: list[Progress] = []
        plan, bound, _ = first_rank_floor(poor, floor, 5, 1, 0, events.append, 0.0)
        assert bound == 16 and plan.value == 21 < poor.value and validate(plan) == []
        assert [(e.source, e.bound, e.best) for e in events] == [("rank 0 end", 16, 21)]


def test_a_relaxation_that_moves_nothing_reports_nothing(monkeypatch: pytest.MonkeyPatch) -> None:
    """Its bound at the floor given and no shorter plan of its own: no line (a floor at the plan's
    value ends the phase before the relaxation, so this takes a plan above the floor)."""
    from schedc.solvers import span_bound

    monkeypatch.setattr(span_bound, "_shorter", lambda plan, starts, source="": plan)  # neither model's plan
    poor = Plan(problem=INDEX_LOSES, orders=sequential_orders(INDEX_LOSES), source="sequential",
                objective="span")
    events: list[Progress] = []
    plan, bound = span_floor(poor, Fraction(20), seconds=5, workers=1, seed=0, progress=events.append, t0=0.0)
    assert plan is poor and bound == 20 < poor.value and events == []


@pytest.mark.parametrize("objective", ["makespan", "span"])
def test_the_incumbent_is_no_worse_than_any_candidate(objective: str) -> None:
    """best_incumbent picks the smallest value among the list schedule and the baselines within the
    caps: it must be no worse than each of them, and within the caps itself (here 1f1b gives 30, the
    list schedule and zb-h1 27)."""
    problem = Problem(p=4, m=8, mem=(4,))
    best = best_incumbent(problem, objective)
    candidates = [list_plan(problem, objective), *fitting_baselines(problem, objective)]
    assert len(candidates) > 1
    assert best.fits() and best.value == min(c.value for c in candidates)
    assert any(c.value > best.value for c in candidates)  # there is a worse one to avoid


def test_incumbent_candidates_carry_the_objective_asked_for() -> None:
    """p=3, stage 2's W costs 5, comm 1: the last rank starts at 4, so a plan's largest span is below
    its makespan. The list plan and every baseline built for the span objective must be valued by
    their span, or best_incumbent compares one plan's makespan with another's span."""
    problem = Problem(p=3, m=3, stage_costs=[(1, 1, 1), (1, 1, 1), (1, 1, 5)], comm=1)
    plans = [list_plan(problem, "span"), *baseline_plans(problem, "span")]
    assert len(plans) > 1 and any(plan.timeline.max_span < plan.makespan for plan in plans)
    for plan in plans:
        assert plan.objective == "span" and plan.value == plan.timeline.max_span


def test_a_generous_time_budget_runs_every_list_variant() -> None:
    """best_incumbent passes its time budget (seconds) and task budget (tasks) on to the list runs:
    a minute for a run of well under a second lets every variant run, so the incumbent is the same as
    without a budget (123/2 here, where the first variant alone gives 129/2). Read as a budget of 60
    tasks, it stopped after the first variant."""
    problem = Problem(p=4, m=8, v=2, mem=(Fraction(3, 2),), tb=2)
    unbounded = best_incumbent(problem)
    assert best_incumbent(problem, time_budget=60).value == unbounded.value
    assert best_incumbent(problem, task_budget=0).value >= unbounded.value
