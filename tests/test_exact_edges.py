"""fmt shows 'about ...' only for values whose float underflows (below 1e-300): 1e-31 and 3e-200 are
ordinary floats, and an 'about' before them would read as a rounded, untrustworthy number."""

from __future__ import annotations

from fractions import Fraction as F

from schedc.exact import fmt, fmt_exact


def test_a_value_a_float_still_holds_is_printed_plainly():
    assert [fmt(F(1, 10**31)), fmt(F(3, 10**200)), fmt(-F(3, 10**200))] == ["1e-31", "3e-200", "-3e-200"]
    assert [fmt_exact(F(1, 10**31)), fmt_exact(F(3, 10**200))] == ["1e-31", "3e-200"]
