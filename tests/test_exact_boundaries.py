# sed -i '48s/abs(number) > limit/abs(number) >= limit/' schedc/exact.py
# sed -i '98s/\.lstrip("0")//' schedc/exact.py
# sed -i '164s/x > 0 and/x >= 0 and/' schedc/exact.py
# sed -i '166s/x < 1 and/x <= 1 and/' schedc/exact.py
# sed -i '191s/(6, 12)/(6,)/' schedc/exact.py
# sed -i '175s/abs(value) < Fraction(1, 10\*\*300)/abs(value) <= Fraction(1, 10**300)/' schedc/exact.py
# sed -i '90s/ and type(den) is int//' schedc/exact.py
# sed -i '222s/value >= Fraction(10) \*\* (guess + 1)/value > Fraction(10) ** (guess + 1)/' schedc/exact.py
"""schedc.exact at its documented edges: the largest number allowed, exponents written with leading
zeros, 0% and 100%, decimals of up to 12 places, and Fractions whose denominator is a numpy integer."""

from __future__ import annotations

from fractions import Fraction

import numpy as np
import pytest

from schedc.errors import ProblemError
from schedc.exact import MAX_MAGNITUDE, decade_exponent, exact, fmt, fmt_exact, fmt_magnitude, percent


def test_the_largest_magnitude_itself_is_accepted() -> None:
    """The limit reads |x| <= 1e100: 1e100 and -1e100 are numbers a user may give, 1e100 + 1 is not.
    A strict comparison turned into >= would refuse the limit itself."""
    assert exact(MAX_MAGNITUDE) == 10**100 and exact(-MAX_MAGNITUDE) == -(10**100)
    assert exact("1e100") == 10**100
    with pytest.raises(ProblemError, match="out of range"):
        exact(MAX_MAGNITUDE + 1)


@pytest.mark.parametrize(("text", "value"), [("1e0005", 10**5), ("2.5e-0000003", Fraction(25, 10**4)),
                                             ("1E+0000999", 10**999)])
def test_leading_zeros_of_an_exponent_do_not_count_as_digits(text: str, value: Fraction) -> None:
    """'1e0005' is 1e5: the exponent check measures the exponent's value, so zeros before its digits
    must not make a small exponent look like one of over three digits."""
    assert exact(text, limit=10**1000) == value


def test_percent_of_zero_and_one_are_shown_as_they_are() -> None:
    """The '<0.1%' and '>99.9%' markers are for values strictly between: a gap of exactly 0 (a
    proven plan) is 0.0%, and exactly 1 is 100.0%."""
    assert percent(Fraction(0)) == "0.0%" and percent(Fraction(1)) == "100.0%"
    assert percent(Fraction(1, 10**6)) == "<0.1%" and percent(1 - Fraction(1, 10**6)) == ">99.9%"


def test_fmt_exact_uses_up_to_twelve_decimals_before_a_fraction() -> None:
    """1.0000001 needs 7 decimal places: fmt_exact tries 6 and then 12 places before falling back to
    'a/b', and the text it gives reads back as the same number."""
    value = Fraction(10_000_001, 10**7)
    assert fmt_exact(value) == "1.0000001" and Fraction(fmt_exact(value)) == value
    assert fmt_exact(Fraction(1, 3)) == "1/3"


def test_one_e_minus_300_is_an_ordinary_float_and_printed_plainly() -> None:
    """'about' is only for values whose float underflows, below 1e-300: 1e-300 itself is a float
    (1e-300 == float(Fraction(1, 10**300))) and prints as one."""
    assert float(Fraction(1, 10**300)) == 1e-300
    assert fmt(Fraction(1, 10**300)) == "1e-300" and fmt(-Fraction(1, 10**300)) == "-1e-300"


def test_a_fraction_with_a_numpy_denominator_becomes_one_of_python_ints() -> None:
    """Fraction(1, numpy.uint8(200)) keeps the uint8 denominator: adding 1/3 to it multiplies 200 by 3
    in 8 bits and gives 203/88. exact() must rebuild it from Python ints, whichever part is fixed-width."""
    given = Fraction(1, np.uint8(200))
    assert type(given.denominator) is not int  # the case this test is about
    value = exact(given)
    assert type(value.numerator) is int and type(value.denominator) is int
    with np.errstate(over="ignore"):
        assert value + Fraction(1, 3) == Fraction(203, 600)


def test_decade_exponent_of_an_exact_power_of_ten() -> None:
    """log10 of a 513-digit int is a float a hair below 512, so the guess starts one low: the loop
    that corrects it must step up when the value equals the next power of ten, or 10**512 reads as
    1e511 in every message that names its size."""
    assert all(decade_exponent(Fraction(10**k)) == k for k in range(1100))
    assert decade_exponent(Fraction(10**512) - 1) == 511
    assert fmt_magnitude(10**512) == "about 1e512" and fmt_magnitude(10**1024) == "about 1e1024"
