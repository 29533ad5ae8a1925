"""solvers.span_bound: a span bound for every microbatch order, against exhaustive search over all."""

from __future__ import annotations

from fractions import Fraction

import pytest
from hypothesis import HealthCheck, given, settings

from schedc.actions import Action
from schedc.plan import Plan
from schedc.problem import Problem
from schedc.solvers.cpsat_model import build_model
from schedc.solvers.cpsat_solve import solve_model
from schedc.solvers.incumbent import best_incumbent, sequential_orders
from schedc.solvers.span_bound import span_floor, span_horizon_any_order, span_relaxation_bound
from schedc.validate import validate
from tests.exhaustive import optimum, span_searchable
from tests.strategies import exhaustive_problems, problems, problems_with_orders


@settings(max_examples=30, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(exhaustive_problems().filter(span_searchable))
def test_the_span_relaxation_never_exceeds_the_best_span_of_any_order(problem):
    incumbent = best_incumbent(problem, "span")
    bound = span_relaxation_bound(problem, incumbent.value, time_limit=5, workers=1)
    best = optimum(problem, "span", upper=incumbent.value)
    assert best is not None and bound <= best <= incumbent.value


@settings(max_examples=25, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(problems(max_p=4, max_m=4, max_v=2))
def test_the_relaxations_plan_fits_its_caps_and_is_never_longer_than_what_it_replaces(problem):
    """``span_floor`` puts the replay of the relaxation's solution in place of the search's plan: the
    replay keeps each rank's memory events in the model's order, so it fits the caps (500 random
    problems, tight caps among them, replayed at most at the model's span: 499 equal, 1 shorter)."""
    incumbent = best_incumbent(problem, "span")
    plan, bound = span_floor(incumbent, Fraction(0), seconds=1, workers=1, seed=0, progress=None, t0=0.0)
    assert validate(plan) == [] and plan.value <= incumbent.value and bound <= plan.value
    assert (plan is incumbent) == (plan.source == incumbent.source)


def test_the_relaxation_reaches_a_span_that_only_another_order_has():
    """The case that index order loses (test_solve): the relaxation proves 20, the true optimum."""
    problem = Problem(p=2, m=2, stage_costs=[(5, 2, 0), (3, 1, 6)])
    assert span_relaxation_bound(problem, 21, time_limit=5, workers=1) == 20 == optimum(problem, "span")
    assert optimum(problem, "span", index_order=True) == 21


@settings(max_examples=60, deadline=None)
@given(problems_with_orders(max_p=5, max_m=5))
def test_the_horizon_holds_the_replay_of_any_order(case):
    """The k-th rank to start waits only for ranks already started: (p - 1)(S + comm) + S."""
    problem, orders = case
    timeline = Plan(problem=problem, orders=orders, source="test").timeline
    assert timeline.makespan <= span_horizon_any_order(problem, timeline.max_span)
    assert span_horizon_any_order(Problem(p=4, m=3, comm=1), Fraction(10)) == 3 * (10 + 1) + 10


def test_free_start_is_for_spans_without_symmetry_breaking():
    with pytest.raises(ValueError, match="free_start"):
        build_model(Problem(p=2, m=2), horizon=10, free_start=True, symmetry=False, implied=False)
    with pytest.raises(ValueError, match="free_start"):
        build_model(Problem(p=2, m=2), objective="span", horizon=10, free_start=True)


def test_the_relaxation_starts_a_rank_when_its_first_input_arrives_as_a_replay_does():
    """A rank waiting before its first task of its own accord shortened its span in the relaxation,
    though no replay waits there: p=2 m=1 with F on rank 1 started one unit late is no solution."""
    from schedc.actions import Action
    from schedc.solvers.cpsat_solve import solve_model

    problem = Problem(p=2, m=1, comm=1)
    for delay, status in ((0, "OPTIMAL"), (1, "INFEASIBLE")):
        cm = build_model(problem, objective="span", horizon=20, symmetry=False, implied=False,
                         free_start=True)
        cm.model.add(cm.starts[Action("F", 0, 0)] == 0)
        cm.model.add(cm.starts[Action("F", 1, 0)] == (1 + 1 + delay) * cm.scale)  # tf 1, comm 1
        assert solve_model(cm, time_limit=5, workers=1).status == status


def test_no_time_for_the_span_relaxation_keeps_the_given_floor():
    """With no time left for the span relaxation, ``span_floor`` claims nothing beyond the floor it was
    given: a bound above the true optimum would mark a poor plan 'optimal'."""
    problem = Problem(p=2, m=2, stage_costs=[(5, 2, 0), (3, 1, 6)])
    poor = Plan(problem=problem, orders=sequential_orders(problem), source="sequential", objective="span")
    best = optimum(problem, "span")  # over every microbatch order: 20
    assert poor.value > best
    for floor in (Fraction(0), Fraction(15)):
        plan, bound = span_floor(poor, floor, seconds=0.05, workers=1, seed=0, progress=None, t0=0.0)
        assert bound == floor <= best and plan is poor


def test_the_pinned_first_start_is_the_ranks_earliest_task_not_any_forward():
    """The span relaxation pins a rank's FIRST task to its input's arrival, not any forward of the rank:
    with m = 2, rank 1 idling before F(1, 0) while F(1, 1) starts right at its own arrival is no replay
    (a replay starts F(1, 0) when its input arrives), and letting it through weakens the span bound."""
    problem = Problem(p=2, m=2, comm=1)  # tf = tb = tw = 1
    for delay, status in ((0, "OPTIMAL"), (1, "INFEASIBLE")):
        cm = build_model(problem, objective="span", horizon=40, symmetry=False, implied=False,
                         free_start=True)
        s = cm.scale
        cm.model.add(cm.starts[Action("F", 0, 0)] == 0)
        cm.model.add(cm.starts[Action("F", 0, 1)] == 5 * s)  # rank 0 sends microbatch 1 late
        # F(1, 0)'s input arrives at 1 + 1 = 2; F(1, 1)'s at 5 + 1 + 1 = 7, where it starts
        cm.model.add(cm.starts[Action("F", 1, 0)] == (2 + delay) * s)
        cm.model.add(cm.starts[Action("F", 1, 1)] == 7 * s)
        assert solve_model(cm, time_limit=5, workers=1).status == status, delay


def test_a_ctrl_c_in_the_span_relaxation_keeps_the_bound_proven_by_then(monkeypatch):
    """CP-SAT stops on a Ctrl-C as at its limit, with its bound: it was dropped for a bare
    KeyboardInterrupt, and solve kept the floor from before the phase (found by a reviewer)."""
    from dataclasses import replace

    from schedc.solvers import span_bound
    from schedc.solvers.progress import Interrupted

    real = span_bound.solve_model
    monkeypatch.setattr(span_bound, "solve_model", lambda *a, **k: replace(real(*a, **k), interrupted=True))
    problem = Problem(p=2, m=2, stage_costs=[(5, 2, 0), (3, 1, 6)])
    try:
        span_relaxation_bound(problem, 21, time_limit=5, workers=1)
    except Interrupted as stop:
        assert stop.plan is None and stop.floor == 20
    except KeyboardInterrupt:
        raise AssertionError("a bare KeyboardInterrupt escaped, without the bound") from None
    else:
        raise AssertionError("no interrupt came out")


def test_a_ctrl_c_while_the_relaxations_solution_replays_keeps_its_bound(monkeypatch):
    """After the search, a Ctrl-C in the replay of the relaxation's solution escaped bare, and solve
    dropped the bound that relaxation had proven (the reviewer of the change that replays it)."""
    from schedc.solvers import span_bound
    from schedc.solvers.progress import Interrupted

    def interrupted(*_args):
        raise KeyboardInterrupt

    monkeypatch.setattr(span_bound, "_shorter", interrupted)
    problem = Problem(p=2, m=2, stage_costs=[(5, 2, 0), (3, 1, 6)])
    poor = Plan(problem=problem, orders=sequential_orders(problem), source="sequential", objective="span")
    try:
        span_floor(poor, Fraction(0), seconds=5, workers=1, seed=0, progress=None, t0=0.0)
    except Interrupted as stop:
        assert stop.plan is None and stop.floor == 20
    except KeyboardInterrupt:  # caught, so that a failure here does not end the whole session
        raise AssertionError("a bare KeyboardInterrupt escaped, without the bound") from None
    else:
        raise AssertionError("the Ctrl-C was lost")
