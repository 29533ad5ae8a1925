"""``solve`` under time limits shorter than its phases' own reserves: the best plan found, never an
internal error (a whole search was once handed a negative limit, which CP-SAT refuses as an invalid
model: found by a bug hunt)."""

from __future__ import annotations

from fractions import Fraction

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from schedc.problem import Problem
from schedc.solvers import solve
from schedc.validate import validate
from tests.strategies import problems

SHORT = (0.001, 0.01, 0.05)


@pytest.mark.parametrize("time_limit", SHORT)
@pytest.mark.parametrize("backend", ["auto", "cp-sat"])
def test_a_limit_below_the_final_checks_reserve_still_answers_with_a_valid_plan(time_limit, backend):
    """The bug hunt's case: no cap, so no relaxation ahead, and the list plan not proven optimal."""
    problem = Problem(p=2, m=3, v=2, placement="vshape", split=False, tf=3, tb=Fraction(1, 2), comm=1)
    plan = solve(problem, time_limit=time_limit, workers=2, backend=backend)
    assert validate(plan) == []
    assert plan.lower_bound <= plan.makespan


@settings(max_examples=15, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(problems(max_p=3, max_m=4, max_v=2), st.sampled_from(SHORT), st.sampled_from([1, 2]),
       st.sampled_from(["makespan", "span"]))
def test_any_short_limit_gives_a_valid_plan(problem, time_limit, workers, objective):
    plan = solve(problem, time_limit=time_limit, workers=workers, objective=objective)
    assert validate(plan) == []
    assert plan.lower_bound <= plan.value
