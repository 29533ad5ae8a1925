"""Display of exact numbers: rounded for reading, never shown as 0 when not 0."""

from __future__ import annotations

from fractions import Fraction as F

from schedc.exact import fmt, fmt_exact


def test_fmt_rounds_to_decimals_and_keeps_tiny_values_visible():
    assert [fmt(F(7)), fmt(F(5, 2)), fmt(F(1, 3)), fmt(F(2, 3), 1)] == ["7", "2.5", "0.333", "0.7"]
    assert fmt(F(1, 125000)) == "8e-06" and fmt(-F(1, 3000)) == "-0.000333"


def test_fmt_shows_huge_fractions_by_magnitude_not_by_a_floats_invented_digits():
    """3e90 + 1/3 as a float's fixed decimals would print 91 digits, most of them not the value's."""
    assert fmt(F(3 * 10**90) + F(1, 3)) == "3e+90" and fmt(-F(3 * 10**90) - F(1, 3)) == "-3e+90"
    assert fmt(F(3 * 10**90)) == "3" + "0" * 90  # integers stay exact
    assert fmt(F(2**53 - 1) + F(1, 2)) == "9.00719925474099e+15" and fmt(F(10**12 - 1, 2)) == "499999999999.5"


def test_fmt_exact_is_exact_text():
    assert [fmt_exact(F(5, 2)), fmt_exact(F(1, 3)), fmt_exact(F(1, 10**13))] == ["2.5", "1/3", "1e-13"]
    assert F(fmt_exact(F(1, 10**13))) == F(1, 10**13)


def test_fmt_never_shows_a_value_below_a_floats_range_as_0():
    """1e-400 underflows a float: fmt printed makespans of such costs as 0."""
    assert fmt(F(3, 10**400)) == "about 3e-400" and fmt(-F(3, 10**400)) == "about -3e-400"
    assert fmt_exact(F(7, 10**400)) == "about 7e-400"


def test_fmt_marks_a_value_that_rounds_to_a_whole_number():
    """--tf 1e-12 printed "makespan 19" for 19 + 8e-12: exact-looking text for an inexact value."""
    assert [fmt(F(19) + F(8, 10**12)), fmt(F(2999, 1000), 2), fmt(F(19))] == ["~19", "~3", "19"]
    assert fmt_exact(F(19) + F(1, 10**12)) == "19.000000000001"  # exact text never carries the mark
    assert fmt(F(19) + F(1, 10**303)) == "~19" and fmt(-F(3) - F(1, 10**9)) == "~-3"
    assert fmt(F(10**14) + F(3, 10)) == "~100000000000000" and fmt(F(10**14)) == "100000000000000"
