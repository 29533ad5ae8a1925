# sed -i '211s/keyed = type(value) is int or/keyed = isinstance(value, int) or/' schedc/plan_json.py
"""The plan file's fast path for plain times ("6175/2", 31) reads what ``exact`` reads, and leaves
to it what it refuses (a zero denominator, a number over MAX_DERIVED)."""

from __future__ import annotations

import pytest
from hypothesis import given
from hypothesis import strategies as st

from schedc.baselines import baseline_plan
from schedc.errors import PlanFormatError, SchedcError
from schedc.exact import MAX_DERIVED, exact
from schedc.plan_json import _number, plan_from_dict, plan_to_dict
from schedc.problem import Problem

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


@pytest.mark.parametrize("twin", [True, 1.0, "1.0"])
def test_a_times_twin_is_read_as_itself_not_as_the_time_read_before(twin) -> None:
    """Times are read once per distinct value; a bool equals its int and 1.0 hashes as 1, so
    neither may take the Fraction read for an earlier 1 (true is refused, 1.0 is 1)."""
    data = plan_to_dict(baseline_plan("1f1b", Problem(p=2, m=2)))
    first, second = data["ranks"][0][0], data["ranks"][0][1]
    assert first[2] == 1 and second[1] == 1  # the first forward ends at 1, where the second starts
    second[1] = twin
    if twin is True:
        with pytest.raises(PlanFormatError, match="rank 0 position 1 action 0F1 start must be a number"):
            plan_from_dict(data)
    else:
        assert plan_from_dict(data).timeline.slots[0][1].start == 1
