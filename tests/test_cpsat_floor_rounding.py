# sed -i '103s/-((-floor/((floor/' solvers/cpsat_model.py
"""``cpsat_model.add_floor`` states objective >= floor on the model's integer tick scale: a floor
between two ticks must round up, or the model admits an objective just below the floor it was given
(and a plan at the rounded-up floor is not known optimal at once)."""

from __future__ import annotations

from fractions import Fraction

from schedc.problem import Problem
from schedc.solvers.cpsat_model import add_floor, build_model
from schedc.solvers.cpsat_solve import solve_model


def test_a_floor_between_two_ticks_rounds_up() -> None:
    """p=1, m=1, costs 1 (one tick each): the makespan is 3. With a floor of 7/2 the least objective
    the model allows is 4, the first tick at or above it; rounding the floor down allowed 3 < 7/2."""
    problem = Problem(p=1, m=1)
    cm = build_model(problem, horizon=Fraction(10))
    assert cm.scale == 1
    add_floor(cm, Fraction(7, 2))
    result = solve_model(cm, time_limit=5, workers=1)
    assert result.optimal and result.objective == 4 >= Fraction(7, 2)
