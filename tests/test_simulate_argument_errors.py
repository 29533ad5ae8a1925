# sed -i '89s/counted(len(peaks), .rank.)/len(peaks)/' schedc/simulate.py
# sed -i '59s/if count == 1 else/if False else/' schedc/errors.py
# sed -i '88s/len(peaks) != ranks/len(peaks) > ranks/' schedc/simulate.py
# sed -i '266s/len(orders) != problem.p/len(orders) < problem.p/' schedc/simulate.py
# sed -i '259s/orders is None and hasattr/orders is None or hasattr/' schedc/simulate.py
# sed -i '38s/e.stands_for, e.at_least/e.stands_for, False/' schedc/validate.py
"""Argument checks of Timeline and simulate (peaks for every rank, too many ranks, a non-problem), and
a sparse line that keeps its "at least" under a file prefix."""

from __future__ import annotations

from fractions import Fraction as F

import pytest

from schedc.actions import Action
from schedc.errors import ArgumentError, ScheduleError
from schedc.problem import Problem
from schedc.simulate import Slot, Timeline, simulate
from schedc.validate import count_text, error_count, sparse_error, with_prefix


def test_timeline_refuses_fewer_peaks_than_ranks():
    """One peak per rank, no fewer: a short peak_mem would leave a rank without a peak (it only
    refused peak lists longer than the slots)."""
    slots = ((Slot(Action.parse("0F0"), F(0), F(1)),), (Slot(Action.parse("1F0"), F(1), F(2)),))
    assert Timeline(slots, (F(1), F(1))).peak_mem == (1, 1)
    with pytest.raises(ArgumentError, match=r"^peak_mem gives 1 rank, the slots 2$"):
        Timeline(slots, (F(1),))
    with pytest.raises(ArgumentError, match=r"^peak_mem gives 3 ranks, the slots 2$"):
        Timeline(slots, (F(1), F(1), F(1)))


def test_too_many_ranks_for_a_large_problem_is_named_as_such():
    """Three ranks of orders for p = 2 is a rank-count error before anything else, also for a problem
    large enough that the sparse check would otherwise speak first (it only checked too few ranks)."""
    problem = Problem(p=2, m=100_000)
    with pytest.raises(ScheduleError, match=r"^plan has 3 ranks, the problem has p = 2$"):
        simulate(problem, ((), (), ()))
    with pytest.raises(ScheduleError, match=r"^plan has 1 rank, the problem has p = 2$"):
        simulate(problem, ((),))


def test_simulate_of_a_non_problem_without_orders_names_the_type():
    """Only a Plan (which has a timeline and orders) is told to read plan.timeline; any other object
    without orders is told that simulate needs a Problem (the Plan hint was given to everything)."""
    with pytest.raises(ArgumentError, match=r"^simulate needs a Problem, got int$"):
        simulate(5)  # type: ignore[arg-type]


def test_prefixed_sparse_line_keeps_its_lower_bound():
    """A file name in front of the sparse line must keep it a lower bound, or ``validate`` prints
    "INVALID: 600000 errors" for a plan whose tasks were never checked one by one."""
    sparse = sparse_error(Problem(p=2, m=100_000), ((), ()))
    prefixed = with_prefix("plan.csv: ", sparse)
    assert prefixed[0].startswith("plan.csv: plan has 0 actions for the 600000 tasks")
    assert error_count(prefixed) == 600_000
    assert prefixed[0].at_least
    assert count_text(prefixed, error_count(prefixed)) == "at least 600000"
