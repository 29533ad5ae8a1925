"""A cap of m or more never binds (a rank holds at most one unit per microbatch); the full model
states none for it, and the rank relaxation and the LNS windows now skip it too: a cap of 1e19 (a
byte budget over a tiny unit, now that ``profile`` no longer clips caps to m) overflowed their
cumulatives' int64 with a pybind traceback."""

from __future__ import annotations

from fractions import Fraction

from schedc.problem import Problem
from schedc.solvers import solve
from schedc.solvers.relaxation import rank_bound

HUGE = Fraction(10**19)


def test_the_lns_backend_takes_a_cap_too_large_for_int64_beside_a_binding_one() -> None:
    problem = Problem(p=2, m=6, v=2, placement="vshape", mem=(Fraction(3, 2), HUGE), tb=Fraction(23, 10))
    plan = solve(problem, time_limit=2, workers=1, backend="lns")
    assert plan.fits() and plan.lower_bound <= plan.makespan


def test_the_rank_relaxation_takes_it_and_bounds_as_without_the_cap() -> None:
    capped = Problem(p=2, m=4, v=2, mem=(HUGE, 1))
    uncapped = Problem(p=2, m=4, v=2, mem=(None, 1))
    assert rank_bound(capped, 0, time_limit=5) == rank_bound(uncapped, 0, time_limit=5)
