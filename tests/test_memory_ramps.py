# sed -i '79s/if step == 0.0:/if False:/' solvers/memory_ramps.py
# sed -i '56s/self.size \* (k + 1)/self.size * (k + 2)/' solvers/memory_ramps.py
# sed -i '66s/(level - self.first)/(level + self.first)/' solvers/memory_ramps.py
# sed -i '89s/if self.covered(n_high \* unit) == area:/if False:/' solvers/memory_ramps.py
# sed -i '183s/problem.stage_activation, forward/Fraction(1), forward/' solvers/bounds.py
# sed -i '161s/_ramped(problem, r)/memory_window(problem, r)/' solvers/bounds.py
# sed -i '189s/Fraction(1), 1 \/ back/Fraction(0), 1 \/ back/' solvers/bounds.py
"""Term 3 of the analytic bound with the ramps at its window's ends (solvers/memory_ramps.py): the
coverage integral worked out by hand, the bound it gives on a deep interleaved pipeline, and the
ramped term against exhaustive optima where the ramps lift it."""

from __future__ import annotations

from fractions import Fraction

import pytest

from schedc.problem import Problem
from schedc.solvers import bounds
from schedc.solvers.list_scheduler import best_list_result
from schedc.solvers.memory_ramps import Ramps
from tests.exhaustive import optimum

# the count form of test_bound_terms_tight's p=2 m=4 v=2 problem: 2 slots, forwards of 2, I's of 1/2
COUNT = Ramps(cap=Fraction(2), size=Fraction(1), step=Fraction(2), first=Fraction(1), rate=Fraction(2))


def test_the_coverage_loses_a_step_of_one_forward_and_a_half_step_of_releases() -> None:
    """Up: one slot filled during the first forward ([0, 2) holds at most 1, then 2): 2 lost. Down:
    1 + 2y below 2 for the last 1/2: the integral of 1 - 2y over [0, 1/2], 1/4 lost. So 2L - 9/4
    once L >= 5/2; over one unit alone, min(1, 1 + 2(1 - x)) = 1 throughout."""
    assert COUNT.covered(Fraction(10)) == 2 * 10 - Fraction(9, 4)
    assert COUNT.covered(Fraction(1)) == 1
    assert COUNT.covered(Fraction(3)) == 6 - Fraction(9, 4)


def test_the_least_window_is_exact_where_a_step_covers_the_area() -> None:
    """2L - 9/4 = 60 at L = 31.125, a multiple of the search's step (1/4 / 16): returned exactly.
    Without ramps (no step, no rate) it is term 3's area / cap."""
    assert COUNT.least_window(Fraction(60), Fraction(1, 4)) == Fraction(249, 8)
    flat = Ramps(cap=Fraction(3), size=Fraction(1), step=None, first=Fraction(1), rate=None)
    assert flat.least_window(Fraction(10), Fraction(1, 4)) == Fraction(10, 3)


def test_a_deep_interleaved_rank_cannot_hold_its_cap_from_first_forward_to_last_release() -> None:
    """p=8 m=32 v=4 cap 3, equal costs: rank 0's level (1/4 a stage) fills by one forward of 1/4 at
    a time, so it reaches 3 after 12 of them, losing (1/4)(3 - 1/4 - ... - 11/4) = 33/8; it empties
    at most 1/8 (I's or W's free) plus 1/2 per unit, losing the integral of 23/8 - y/2 over
    [0, 23/4] = 529/64. Together 793/64 of area, / 3 = 4.13 more than term 3's 108 (the bound before),
    which the search's step of 1/64 gives as 4.125. The list plan (127.75) stays above."""
    problem = Problem(p=8, m=32, v=4, mem=Fraction(3))
    paths = bounds.stage_paths(problem)
    level_time, _ = bounds.memory_window(problem, 0)
    release_tail = min(paths.tail[k, s] for s in problem.rank_stages[0] for k in ("I", "W"))
    plain = level_time + release_tail  # rank 0's first forward has head 0
    assert plain == 108
    lost = Fraction(33, 8) + Fraction(529, 64)
    assert lost == Fraction(793, 64)
    assert bounds.memory_bound(problem, 0, paths.head, paths.tail) == plain + Fraction(264, 64)
    assert Fraction(264, 64) <= lost / 3 < Fraction(265, 64)
    assert bounds.lower_bound(problem) == 108 + Fraction(33, 8) <= best_list_result(problem).makespan


TIGHTEST = [  # where the ramps lifted term 3 closest to the optimum among 377 small problems tried
    dict(p=2, m=2, tf=Fraction(1, 2), tb=4, tw=1, mem=1),
    dict(p=2, m=2, tf=2, tb=Fraction(3, 2), tw=1, mem=1),
    dict(p=1, m=3, tf=1, tb=2, tw=Fraction(1, 2), mem=1),
    dict(p=1, m=4, tf=2, tb=4, tw=1, mem=1),
    dict(p=1, m=6, tf=3, tb=2, tw=1, mem=1),
]


@pytest.mark.parametrize("spec", TIGHTEST)
def test_the_ramped_term_rises_and_stays_at_most_the_exhaustive_optimum(spec: dict) -> None:
    """A ramp too generous (a cut larger than the module doc's) would rise above the optimum, a
    false optimality claim; each of these is lifted by the ramps (plain term 3 below the ramped)."""
    problem = Problem(**spec)
    paths = bounds.stage_paths(problem)
    ramped = max(bounds.memory_bound(problem, r, paths.head, paths.tail) for r in range(problem.p))
    plain = max(min(paths.head["F", s] for s in problem.rank_stages[r]) + bounds.memory_window(problem, r)[0]
                + min(paths.tail[k, s] for s in problem.rank_stages[r] for k in ("I", "W"))
                for r in range(problem.p))
    assert plain < ramped <= optimum(problem, upper=best_list_result(problem).makespan)


@pytest.mark.parametrize("spec", [
    dict(p=2, m=8, tf=10**40, tb=Fraction(1, 7), tw=Fraction(1, 3), mem=1),  # 1e43 steps: hung
    dict(p=1, m=4, tf=1, tb=1 + Fraction(1, 10**400), tw=1, mem=1),  # a step below 1e-308: overflowed
])
def test_windows_floats_cannot_count_keep_term_3_without_ramps(spec: dict, monkeypatch) -> None:
    """A reviewer's corners: where the float search cannot count the window's steps, the ramps step
    aside (term 3's own area / cap) instead of stepping back one exact step at a time for ever, or
    raising OverflowError from a step that is 0.0 as a float."""
    problem = Problem(**spec)
    ramped = bounds.lower_bound(problem)
    monkeypatch.setattr(bounds, "_ramped", bounds.memory_window)
    assert ramped == bounds.lower_bound(problem)
