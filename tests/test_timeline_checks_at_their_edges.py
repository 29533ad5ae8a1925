# sed -i '199s/self.makespan == 0/self.makespan <= 1/' schedc/simulate.py
# sed -i '270s/if given == 1 else/if given <= 1 else/' schedc/simulate.py
# sed -i '141s/slot.end - slot.start != problem/slot.end - slot.start > problem/' schedc/validate.py
# sed -i '145s/slot.start < previous.start/slot.start <= previous.start/' schedc/validate.py
# sed -i '49s/any(getattr(e, "at_least", False)/all(getattr(e, "at_least", False)/' schedc/validate.py
"""The simulator's and validator's checks at their edges: the bubble of a step shorter than one time
unit, counts in messages, recorded times shorter than their cost, equal starts on a rank, and
"at least" counts."""

from __future__ import annotations

from fractions import Fraction as F

import pytest

from schedc.actions import Action
from schedc.errors import ScheduleError
from schedc.problem import Problem
from schedc.simulate import Slot, simulate
from schedc.validate import count_text, sparse_error, timing_errors
from tests.test_simulate import orders


def _slots(rows: list[list[tuple[str, object, object]]]) -> tuple[tuple[Slot, ...], ...]:
    return tuple(tuple(Slot(Action.parse(a), F(s), F(e)) for a, s, e in row) for row in rows)


ONE_MICROBATCH = orders("0F0 0I0 0W0", "1F0 1I0 1W0")


def test_bubble_of_a_step_shorter_than_one_time_unit():
    """The bubble is a ratio, so dividing every cost by 8 keeps it: by hand, 0F0 0-1, 1F0 1-2, 1I0 2-3,
    0I0 3-4, 1W0 3-4, 0W0 4-5 gives makespan 5 and busy 3 per rank, 1 - 6/10 = 2/5. A bubble that
    treated any makespan up to 1 as empty reported 0 for the scaled step."""
    unit = simulate(Problem(p=2, m=1), ONE_MICROBATCH)
    assert (unit.makespan, unit.busy, unit.bubble) == (5, (3, 3), F(2, 5))
    eighth = F(1, 8)
    small = simulate(Problem(p=2, m=1, tf=eighth, tb=eighth, tw=eighth), ONE_MICROBATCH)
    assert small.makespan == F(5, 8)
    assert small.bubble == F(2, 5)


def test_empty_orders_of_a_large_problem_count_zero_actions_in_the_plural():
    """No actions is "0 actions", not "0 action" (only exactly one action is singular)."""
    problem = Problem(p=2, m=100_000)  # 600,000 tasks: far above the sparse threshold
    with pytest.raises(ScheduleError, match=r"^orders of 0 actions for 600000 tasks$"):
        simulate(problem, ((), ()))
    with pytest.raises(ScheduleError, match=r"^orders of 1 action for 600000 tasks$"):
        simulate(problem, (orders("0F0")[0], ()))


def test_recorded_slot_shorter_than_its_cost_is_an_error():
    """A slot must last exactly its cost: one recorded too short is as wrong as one too long (the check
    only refused slots longer than their cost). 0F0 is recorded 0-1/2 while tf = 1; the rest fits it."""
    problem = Problem(p=2, m=1)
    short = _slots([[("0F0", 0, "1/2"), ("0I0", 3, 4), ("0W0", 4, 5)],
                    [("1F0", 1, 2), ("1I0", 2, 3), ("1W0", 3, 4)]])
    assert timing_errors(problem, short) == ["rank 0 position 0 action 0F0: lasts 0.5, its cost is 1"]


def test_equal_starts_on_a_rank_are_an_overlap_not_a_misordering():
    """Two actions of a rank recorded at the same start overlap; neither starts before the other, so
    the message must not claim the second starts before the first ("starts at 4, before 0I0 (at 4)")."""
    problem = Problem(p=2, m=1)
    same = _slots([[("0F0", 0, 1), ("0I0", 3, 4), ("0W0", 3, 4)],
                   [("1F0", 1, 2), ("1I0", 2, 3), ("1W0", 3, 4)]])
    assert timing_errors(problem, same) == [
        "rank 0 position 2 action 0W0: starts at 3, overlapping 0I0 which ends at 4"]


def test_count_text_says_at_least_when_any_line_is_a_lower_bound():
    """One line whose count is only a lower bound makes the whole count a lower bound, whatever the
    other lines are (it said "at least" only when every line was one)."""
    sparse = sparse_error(Problem(p=2, m=100_000), ((), ()))
    assert len(sparse) == 1 and sparse[0].at_least
    assert count_text(sparse, 600_000) == "at least 600000"
    assert count_text(["rank 0 position 0 action 0F0: duplicated", *sparse], 600_001) == "at least 600001"
    assert count_text(["rank 0 position 0 action 0F0: duplicated"], 1) == "1"
