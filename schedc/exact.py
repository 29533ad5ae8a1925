"""Exact arithmetic helpers.

Costs and caps may be fractional; every comparison in schedc is made on Fractions so that float
rounding can never flip a cap check. Floats given by users are read through their decimal string,
so 0.1 means 1/10, not the nearest binary double.
"""

from __future__ import annotations

import math
import re
from decimal import Decimal
from fractions import Fraction
from numbers import Rational, Real

from schedc.errors import ProblemError, SchedcError, shown

Number = int | float | str | Fraction | Decimal

MAX_MAGNITUDE = 10**100
"""Largest |number| a user may give: far beyond any real cost or cap, yet every time derived from
such numbers stays a finite float for display and Chrome traces."""

MAX_DERIVED = 10**120
"""Largest |number| derived from user numbers that schedc reads back (a makespan or bound in a plan
file, a mean of per-stage costs): at most 10 million tasks of at most 1e100 each, and more."""

MAX_EXPONENT = 999
"""Largest exponent a number may be written with (``1e-999``), and most digits a Decimal may hold:
Fraction('1e999999999') and Fraction(Decimal('1e-999999999')) build 10**999999999, a hang."""

MAX_DENOMINATOR = 10**MAX_EXPONENT
"""Finest fraction a user may give, the same as ``1e-999`` written out: a Fraction with a 5,000-digit
denominator would pass every size check and make each scaled time thousands of digits long."""

_EXPONENT = re.compile(r"e[-+]?([0-9_]+)\s*$", re.IGNORECASE)


def exact(value: Number, what: str = "value", limit: int = MAX_MAGNITUDE,
          finest: int | None = MAX_DENOMINATOR) -> Fraction:
    """Converts a user number (int, float, Fraction, Decimal, numpy scalar, decimal or 'a/b' string)
    into a Fraction.

    It must be at most ``limit`` in size, so that a typo such as ``1e999999999`` is an error, not a
    hang or an overflow deep inside a display. Its denominator must be at most ``finest`` (None for
    numbers derived from user numbers, whose denominators are lcms of theirs)."""
    number = _plain(value) if isinstance(value, Fraction) else _convert(value, what)
    if abs(number) > limit:
        raise ProblemError(f"{what} is out of range (|x| <= 1e{len(str(limit)) - 1}), got {shown(value)}")
    if finest is not None and number.denominator > finest:
        raise ProblemError(f"{what} is too fine a fraction (denominator over 1e{len(str(finest)) - 1}), "
                           f"got {shown(value)}")
    return number


def _convert(value: Number, what: str) -> Fraction:
    if isinstance(value, bool):
        raise ProblemError(f"{what} must be a number, got {shown(value)}")
    if isinstance(value, Rational):
        return _plain(value)
    if isinstance(value, Decimal):  # before math.isfinite, which raises on Decimal('sNaN')
        return _from_decimal(value, what)
    if isinstance(value, float | Real):  # numpy floats too; floats through their decimal text
        if not math.isfinite(value):
            raise ProblemError(f"{what} must be finite, got {shown(value)}")
        return _decimal(value, what)
    if isinstance(value, str):
        plain_digits(value, what)
        _check_exponent(value, what, value)
        try:
            return Fraction(value.strip())
        except (ValueError, ZeroDivisionError):
            raise ProblemError(f"{what} must be a number, got {shown(value)}") from None
    raise ProblemError(f"{what} must be a number, got {shown(value)}")


def plain_digits(text: str, what: str) -> str:
    """``text`` unchanged if its digits are ASCII without underscores. Python's int() and Fraction()
    read ``4_0`` as 40 and full-width or Arabic-Indic digits as ASCII ones, so a typo or a pasted
    character would otherwise become a different number without a word."""
    if not text.isascii() or "_" in text:
        raise ProblemError(f"{what} must be written in ASCII digits without underscores, got {shown(text)}")
    return text


def _plain(value: Rational) -> Fraction:
    """A Fraction of Python ints: ``Fraction(numpy.uint8(100))`` keeps the fixed-width numerator,
    and 100 * 3 then wraps to 44 silently inside a scaled time."""
    num, den = value.numerator, value.denominator
    if type(value) is Fraction and type(num) is int and type(den) is int:
        return value
    return Fraction(int(num), int(den))


def _check_exponent(text: str, what: str, given: object) -> None:
    """Checked before Fraction parses ``text``: the exponent of ``1e999999999`` has over 3 digits."""
    exponent = _EXPONENT.search(text)
    if exponent and len(exponent.group(1).replace("_", "").lstrip("0")) > len(str(MAX_EXPONENT)):
        raise ProblemError(f"{what} has an exponent out of range, got {shown(given)}")


def _from_decimal(value: Decimal, what: str) -> Fraction:
    """A Decimal exactly, once its exponent (as ``str(value)`` writes it) and its digits are known to
    be small enough for the Fraction to be cheap, as a string's are."""
    if not value.is_finite():
        raise ProblemError(f"{what} must be finite, got {shown(value)}")
    if abs(value.adjusted()) > MAX_EXPONENT:
        raise ProblemError(f"{what} has an exponent out of range, got {shown(value)}")
    if len(value.as_tuple().digits) > MAX_EXPONENT:
        raise ProblemError(f"{what} has over {MAX_EXPONENT} digits, got {shown(value)}")
    return Fraction(value)


def _decimal(value: float | Real, what: str) -> Fraction:
    """0.1 means 1/10: a float (numpy's float64 subclasses it) through its shortest repr, another
    real (numpy's float32 or longdouble) through its own shortest text, exponent checked first."""
    if isinstance(value, float):
        return Fraction(float.__repr__(value))
    text = str(value)
    _check_exponent(text, what, value)
    try:
        return Fraction(text)
    except ValueError:
        return Fraction(float.__repr__(float(value)))


def to_json(value: Fraction) -> int | str:
    """Serialises a Fraction exactly: an int when integral, else the string 'a/b'."""
    if max(value.numerator.bit_length(), value.denominator.bit_length()) > SAFE_BITS:
        _check_writable(value)
    return value.numerator if value.denominator == 1 else f"{value.numerator}/{value.denominator}"


SAFE_BITS = 14_000
"""Integers of at most this many bits have fewer than Python's 4300 digits (about 14,284 bits)."""


def _check_writable(value: Fraction) -> None:
    """A one-line error past Python's 4300 digits, which its readers (json's among them) take at
    most: a plan's times are sums of its costs, so costs of large, unlike denominators give
    denominators of their product."""
    try:
        str(value.numerator), str(value.denominator)
    except ValueError:  # str() of an int over the limit
        digits = int(max(abs(value.numerator), value.denominator).bit_length() * math.log10(2)) + 1
        raise SchedcError(f"a number of about {digits} digits cannot be written exactly (JSON readers take "
                          "at most 4300): give costs of smaller or common denominators") from None


def lcm_denominator(values: list[Fraction]) -> int:
    """The smallest integer that turns every value into an integer (the solver's time scale)."""
    return math.lcm(1, *(v.denominator for v in values))


FIXED_LIMIT = 10**12
"""A fraction this large is shown with a float's 15 significant digits: in fixed decimals its float
would print digits it never held (3e90 + 1/3 as 91 digits, most of them invented)."""


def percent(x: Fraction) -> str:
    """One decimal, but never 0.0% for a gap or bubble above 0 (a feasible plan within 1e-5 of its
    bound read as proven), nor 100.0% for one below 1. The summary, `compare` and pictures print it."""
    text = f"{float(x) * 100:.1f}%"
    if x > 0 and text == "0.0%":
        return "<0.1%"
    return ">99.9%" if x < 1 and text == "100.0%" else text


def fmt(value: Fraction, digits: int = 3) -> str:
    """Human-readable number: exact when integral, else rounded for display only (to ``digits``
    significant digits where fixed decimals would show a nonzero value as 0, and marked '~' where
    they would show a whole number)."""
    if value.denominator == 1:
        return str(value.numerator)
    if value and abs(value) < Fraction(1, 10**300):  # its float underflows to 0 (from about 1e-323)
        return _approximately(value)
    if abs(value) >= FIXED_LIMIT:  # fixed decimals of such a float would print digits it never held
        if abs(value) < Fraction(10) ** 300:
            text = f"{float(value):.15g}"
            return text if "." in text or "e" in text else "~" + text
        return ("-" if value < 0 else "") + fmt_magnitude(abs(value))
    text = f"{float(value):.{digits}f}".rstrip("0").rstrip(".")
    if text in ("0", "-0"):
        return f"{float(value):.{digits}g}"
    return text if "." in text else "~" + text  # 19 + 1e-12 must not read as the whole number 19


def fmt_exact(value: Fraction) -> str:
    """Exact text for user inputs and error messages: '3', '2.5', '3.4999999' (never rounded to
    look like a neighbour), or '7/3' when no decimal of up to 12 places is exact."""
    for digits in (6, 12):
        text = fmt(value, digits)
        if not text.startswith(("about", "-about", "~")) and Fraction(text) == value:
            return text
    if value.numerator.bit_length() + value.denominator.bit_length() > 128:  # over ~40 digits
        return _approximately(value)
    return f"{value.numerator}/{value.denominator}"


def _approximately(value: Fraction) -> str:
    """A fraction of hundreds of digits (a cost of 1e-400 makes every time one) as 'about 6.1'."""
    size = abs(value)
    if size >= Fraction(1, 10**6):
        return "about " + fmt(value, 15).lstrip("~")
    exponent = decade_exponent(1 / size)
    shift = exponent if size * 10**exponent >= 1 else exponent + 1  # 1 <= size * 10**shift < 10
    return f"about {'-' if value < 0 else ''}{float(size * 10**shift):.6g}e-{shift}"


def fmt_magnitude(value: Fraction | int) -> str:
    """Rough size of a positive number for messages, also beyond a float's range (1e308) and beyond
    the 4300 digits str() writes of an int."""
    value = Fraction(value)
    if value < Fraction(10) ** 300:
        return f"{float(value):.3g}"
    return f"about 1e{decade_exponent(value)}"


def decade_exponent(value: Fraction) -> int:
    """floor(log10(value)) of a value >= 1: log10 of the ints guesses it, exact powers settle it."""
    guess = math.floor(math.log10(value.numerator) - math.log10(value.denominator))
    while value >= Fraction(10) ** (guess + 1):
        guess += 1
    while value < Fraction(10) ** guess:
        guess -= 1
    return guess


def fmt_count(value: int) -> str:
    """A count in full while it is readable, else its magnitude (p = 10**400 has 400 digits)."""
    return str(value) if value < 10**15 else fmt_magnitude(value)
