"""The analytic bound is the same number in any time unit: costs of unlike denominators (1/2, 2/3, 1/5,
1/7) must give exactly 1/210 of the bound of the same problem in integer units. cap_sequence turns times
into integer ticks by the lcm of their denominators (exact.lcm_denominator); a scale that is not a common
multiple (the largest denominator, say) truncates every tick count and loses part of the proven bound."""

from __future__ import annotations

from fractions import Fraction as F

import pytest

from schedc.problem import Problem
from schedc.solvers import bounds


@pytest.mark.parametrize("shape", [dict(p=4, m=8, v=2, placement="vshape", mem=(2,)),
                                   dict(p=4, m=8, mem=(2,))])
def test_a_capped_bound_scales_exactly_with_the_time_unit(shape):
    fine = Problem(tf=F(1, 2), tb=F(2, 3), tw=F(1, 5), comm=F(1, 7), **shape)
    whole = Problem(tf=105, tb=140, tw=42, comm=30, **shape)  # the same costs times 210
    assert bounds.lower_bound(fine) * 210 == bounds.lower_bound(whole)
