"""A cap of m or more never binds (a rank holds at most one unit per microbatch): ``Problem.binding_caps``
drops it, and every solver part searches such a rank as uncapped: a cap of 1e19 (a byte budget over
a tiny unit, now that ``profile`` no longer clips caps to m) overflowed the rank relaxation's and the
LNS windows' cumulatives' int64 with a pybind traceback."""

from __future__ import annotations

from fractions import Fraction

import pytest

from schedc.errors import ProblemError
from schedc.problem import Problem
from schedc.solvers import solve
from schedc.solvers.relaxation import relaxed_rank_bound

HUGE = Fraction(10**19)


def test_the_lns_backend_takes_a_cap_too_large_for_int64_beside_a_binding_one() -> None:
    problem = Problem(p=2, m=6, v=2, placement="vshape", mem=(Fraction(3, 2), HUGE), tb=Fraction(23, 10))
    plan = solve(problem, time_limit=2, workers=1, backend="lns")
    assert plan.fits() and plan.lower_bound <= plan.makespan


def test_the_rank_relaxation_takes_it_and_bounds_as_without_the_cap() -> None:
    capped = Problem(p=2, m=4, v=2, mem=(HUGE, 1))
    uncapped = Problem(p=2, m=4, v=2, mem=(None, 1))
    assert relaxed_rank_bound(capped, 0, time_limit=5) == relaxed_rank_bound(uncapped, 0, time_limit=5)


def test_binding_caps_drop_caps_of_m_or_more_and_keep_the_rest() -> None:
    problem = Problem(p=3, m=4, mem=(4, Fraction(39, 10), None))
    assert problem.binding_caps == (None, Fraction(39, 10), None)
    assert problem.mem == (4, Fraction(39, 10), None)  # what schedc prints stays the user's


def test_a_cap_that_never_binds_gets_the_uncapped_search() -> None:
    """The list scheduler's capped variants, the rank relaxation's bound phases and its rank order
    were chosen for a cap that binds; one of m or more took them all (search time only)."""
    from schedc.solvers.list_portfolio import flight_counts, variants
    from schedc.solvers.portfolio import _relaxable
    from schedc.solvers.relaxation import rank_strength_order

    never = Problem(p=4, m=8, v=2, placement="vshape", mem=8)
    free = Problem(p=4, m=8, v=2, placement="vshape")
    assert variants(never) == variants(free) and flight_counts(never) == flight_counts(free) == []
    assert not _relaxable(never, "makespan")
    mixed = Problem(p=3, m=8, v=2, mem=(8, 7, 8))  # rank 2 has the largest terms
    assert rank_strength_order(mixed)[0] == 1


def test_a_cap_that_never_binds_needs_no_integral_memory_units() -> None:
    """CP-SAT states no cumulative for it, yet a w_mem too fine for its integers was refused (a
    profile's byte budget over a tiny unit gives such caps)."""
    from schedc.solvers.cpsat_model import check_integer_model

    check_integer_model(Problem(p=2, m=4, w_mem=Fraction(4137, 10000) + Fraction(1, 10**15), mem=HUGE))
    with pytest.raises(ProblemError, match="w_mem too finely divided"):
        check_integer_model(Problem(p=2, m=4, w_mem=Fraction(4137, 10000) + Fraction(1, 10**15), mem=2))
