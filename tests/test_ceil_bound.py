"""CP-SAT's float bound turned into the integer bound schedc reports (cpsat_solve.ceil_bound)."""

from __future__ import annotations

import pytest

from schedc.solvers.cpsat_solve import ceil_bound


@pytest.mark.parametrize(("bound", "proven"), [
    (3.0, 3), (0.0, 0), (3.2, 4), (3.5, 4), (2.5000001, 3),  # a fractional bound: its ceiling is proven
    (2.9999999, 3), (3.0000001, 3), (17.999999999, 18),  # an integer up to float noise: that integer
])
def test_a_float_bound_becomes_its_ceiling_and_float_noise_its_integer(bound, proven):
    """Objectives are integral, so a bound of 3.2 proves 4: flooring it (or rounding) throws proof away,
    and ceiling 3.0000001 (noise on 3) would claim 4, a bound above a plan of 3 that then reads as an
    internal error or, worse, a wrong gap. 2.9999999 read as 2 loses the proof of an optimal 3."""
    assert ceil_bound(bound) == proven
