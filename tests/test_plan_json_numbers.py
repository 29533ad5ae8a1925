"""The plan file's fast path for plain times ("6175/2", 31) reads what ``exact`` reads, and leaves
to it what it refuses (a zero denominator, a number over MAX_DERIVED)."""

from __future__ import annotations

import pytest
from hypothesis import given
from hypothesis import strategies as st

from schedc.errors import PlanFormatError, SchedcError
from schedc.exact import MAX_DERIVED, exact
from schedc.plan_json import _number

digits = st.integers(min_value=0, max_value=10**130)


def _both(value):
    try:
        theirs = exact(value, "t", MAX_DERIVED, finest=None)
    except SchedcError as err:
        theirs = str(err)
    try:
        ours = _number(value, "t")
    except PlanFormatError as err:
        ours = str(err)
    return ours, theirs


@given(st.one_of(digits, st.builds(lambda a, b: f"{a}/{b}", digits, digits), digits.map(str),
                 st.builds(lambda a, b: f"{a:0{b}d}", digits, st.integers(1, 140))))
def test_plain_times_read_as_exact_reads_them(value) -> None:
    ours, theirs = _both(value)
    assert ours == theirs


@pytest.mark.parametrize("value", ["1/0", "1/000", f"{10**121}", 10**121, "-3/2", " 3", "0x10", True])
def test_what_the_fast_path_leaves_gets_exacts_answer(value) -> None:
    ours, theirs = _both(value)
    assert ours == theirs
