# sed -i '81s/if end < start:/if end <= start:/' schedc/simulate.py
# sed -i '94s/min(peaks, default=0) < 0/min(peaks, default=0) <= 0/' schedc/simulate.py
# sed -i '141s/(self.slots, .*peak_mem)$/self.slots == other.slots/' schedc/simulate.py
# sed -i '167s/for r in self.starts if r)/for r in self.starts)/' schedc/simulate.py
# sed -i '171s/for r in self.ends if r)/for r in self.ends)/' schedc/simulate.py
# sed -i '200s/return Fraction(0)/return Fraction(1)/' schedc/simulate.py
# sed -i '201s/len(self.actions) \* self.makespan/len(self.actions) * self.max_span/' schedc/simulate.py
# sed -i '212s/s.action.stage >= problem.num_stages/s.action.stage > problem.num_stages/' schedc/simulate.py
# sed -i '236s/default=0)/default=1)/' schedc/simulate.py
# sed -i '237s/max(peak, 0)/peak/' schedc/simulate.py
"""Timeline edges: slots of zero length and ranks with no slots, a peak of 0, equality over the peaks,
the bubble against the makespan (not the largest span), memory_curve's stage range, and peak_memory
of orders that free before they allocate."""

from __future__ import annotations

from fractions import Fraction as F

import pytest

from schedc.actions import Action
from schedc.errors import ArgumentError
from schedc.problem import Problem
from schedc.simulate import Slot, Timeline, peak_memory, simulate
from tests.test_simulate import orders

F00 = Action("F", 0, 0)


def test_a_timeline_with_zero_length_weight_gradients_rebuilds_from_its_slots() -> None:
    """tw=0 gives W slots that end where they start: a hand-built timeline must take them (a check
    of ``end <= start`` refused the simulator's own slots)."""
    t = simulate(Problem(p=2, m=1, tw=0), orders("0F0 0I0 0W0", "1F0 1I0 1W0"))
    assert any(s.start == s.end for rank in t.slots for s in rank)
    assert Timeline(t.slots, t.peak_mem) == t


def test_a_peak_of_zero_is_within_range() -> None:
    """peak_mem must be >= 0, so 0 itself is a peak (every rank starts empty)."""
    assert Timeline([[Slot(F00, 0, 1)]], [0]).peak_mem == (0,)


def test_timelines_with_other_peaks_differ() -> None:
    """Equality covers the peaks as the constructor keeps them: equal slots, other peaks are another
    timeline (one that ignored them made a replay under another w_mem equal to this one)."""
    slots = [[Slot(F00, 0, 1)]]
    assert Timeline(slots, [1]) != Timeline(slots, [2])
    assert Timeline(slots, [1]) == Timeline(slots, [1])


def test_a_rank_without_slots_counts_for_nothing() -> None:
    """A hand-built timeline may leave a rank empty (``spans`` gives it 0): the figures come from the
    other ranks instead of an IndexError."""
    t = Timeline([[Slot(F00, 1, 3)], []], [1, 0])
    assert (t.start, t.end, t.makespan) == (1, 3, 2)
    assert t.spans == (2, 0) and t.busy == (2, 0)
    assert t.bubble == F(1, 2)  # two ranks over 2 time units, busy 2 of the 4


def test_a_timeline_of_zero_length_has_no_bubble() -> None:
    """Nothing runs for any time: no idle share to report (0), not 100%."""
    t = Timeline([[Slot(Action("W", 0, 0), 0, 0)]], [0])
    assert t.makespan == 0 and t.bubble == 0


def test_the_bubble_is_over_the_synchronised_makespan_not_the_largest_span() -> None:
    """Rank 0 runs over [1, 2] and rank 1 over [2, 7/2]: the step spans [1, 7/2], 5/2 long, while the
    largest per-rank span is 3/2; idle is 2 * 5/2 - (1 + 3/2) = 5/2 of the 5 rank-units."""
    t = Timeline([[Slot(F00, 1, 2)], [Slot(Action("F", 1, 0), 2, "7/2")]], [1, 1])
    assert (t.makespan, t.max_span) == (F(5, 2), F(3, 2))
    idle = len(t.spans) * t.makespan - sum(t.busy)
    assert t.bubble == idle / (len(t.spans) * t.makespan) == F(1, 2)


def test_memory_curve_refuses_a_stage_one_past_the_problem() -> None:
    """A slot of stage num_stages is not in the problem: one ArgumentError, not an IndexError from
    indexing the placement with it."""
    t = Timeline([[Slot(Action("F", 1, 0), 0, 1)]], [1])
    with pytest.raises(ArgumentError, match="memory_curve needs the timeline's own placement: 1F0"):
        t.memory_curve(Problem(p=1, m=1), 0)


def test_peak_memory_never_reads_below_an_empty_rank() -> None:
    """A rank starts empty, so its peak is at least 0: an empty order peaks at 0 (not 1), and an order
    that frees before it allocates (an I first) peaks at 0, not at a negative level."""
    problem = Problem(p=1, m=2)
    assert peak_memory(problem, ()) == 0
    assert peak_memory(problem, orders("0I0 0W0")[0]) == 0
