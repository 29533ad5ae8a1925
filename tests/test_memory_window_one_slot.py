# sed -i '152s/if slots >= 1/if slots > 1/' solvers/bounds.py
"""Term 3's count form with exactly one slot (1 <= v * cap < 2): one stage activation fully alive at a
time, so the round trips of all microbatches follow one another (solvers/bounds.py memory_window)."""

from __future__ import annotations

from fractions import Fraction

from schedc.problem import Problem
from schedc.solvers.bounds import memory_window
from schedc.solvers.priorities import cycle_ticks
from schedc.solvers.scaled import scaled


def test_one_slot_serialises_the_round_trips() -> None:
    """p = 2, m = 4, unit costs, cap 3/2: floor(3/2) = 1 activation fully alive at once on rank 0,
    each alive from F(0)'s start to I(0)'s end, F0 + F1 + I1 + I0 = 4: at least 4 * 4 = 16 of time.
    Treating a single slot like none (slots > 1) dropped the count form to 0."""
    problem = Problem(p=2, m=4, mem=Fraction(3, 2))
    window = memory_window(problem, 0)
    assert window is not None
    assert window[1] == 4 * (1 + 1 + 1 + 1)


def test_one_slot_stretches_the_list_schedulers_cycle() -> None:
    """The same problem: the cycle the priorities use is the cap's time per microbatch, a round trip
    of 4, above rank 0's work per microbatch (3); losing the count form gave the level form's
    (4 + 1/2 * 1) / (3/2) = 3."""
    problem = Problem(p=2, m=4, mem=Fraction(3, 2))
    sc = scaled(problem)
    assert cycle_ticks(sc) == 4 * sc.time_scale
