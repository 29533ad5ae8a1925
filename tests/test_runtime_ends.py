"""``waits.with_ends`` and ``read_ends``: one MAX all-reduce gives each value's maximum and minimum,
as the runtime's agreement checks (first call, shape book, replicas) use it."""

from __future__ import annotations

from hypothesis import given
from hypothesis import strategies as st

from schedc.runtime.waits import read_ends, with_ends

VALUE = st.integers(-(2**61), 2**61)
RANKS = st.integers(1, 4).flatmap(lambda width: st.lists(
    st.lists(st.tuples(VALUE, VALUE), min_size=width, max_size=width), min_size=1, max_size=5))


@given(RANKS)
def test_the_flags_maxima_give_every_pairs_maximum_and_minimum(ranks):
    reduced = [max(column) for column in zip(*(with_ends(pairs) for pairs in ranks), strict=True)]
    assert read_ends(reduced) == [(max(pairs[k][0] for pairs in ranks), min(pairs[k][1] for pairs in ranks))
                                  for k in range(len(ranks[0]))]


def test_a_rank_that_adds_nothing_to_the_minimum_leaves_it_to_the_others():
    """A rank given no input adds 0 to the maximum and a huge value to the minimum (``NOT_GIVEN``)."""
    given_none, given = with_ends([(0, 2**62)]), with_ends([(7, 7)])
    assert read_ends([max(a, b) for a, b in zip(given_none, given, strict=True)]) == [(7, 7)]
