"""solvers.span_bound: a span bound for every microbatch order, against exhaustive search over all."""

from __future__ import annotations

from fractions import Fraction

import pytest
from hypothesis import HealthCheck, given, settings

from schedc.plan import Plan
from schedc.problem import Problem
from schedc.solvers.cpsat_model import build_model
from schedc.solvers.incumbent import best_incumbent
from schedc.solvers.span_bound import span_horizon_any_order, span_relaxation_bound
from tests.exhaustive import optimum, span_searchable
from tests.strategies import exhaustive_problems, problems_with_orders


@settings(max_examples=30, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(exhaustive_problems().filter(span_searchable))
def test_the_span_relaxation_never_exceeds_the_best_span_of_any_order(problem):
    incumbent = best_incumbent(problem, "span")
    bound = span_relaxation_bound(problem, incumbent.value, time_limit=5, workers=1)
    best = optimum(problem, "span", upper=incumbent.value)
    assert best is not None and bound <= best <= incumbent.value


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
