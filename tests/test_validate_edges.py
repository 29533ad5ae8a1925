# sed -i '91s/elif seen\[t\] == 2:/if seen[t] == 2:/' schedc/validate.py
# sed -i '98s/len(missing) > LISTED_MISSING/len(missing) >= LISTED_MISSING/' schedc/validate.py
# sed -i '127s/return errors\[:1\]/return errors/' schedc/validate.py
# sed -i '162s/(mine.start, .*truth.end)/mine.start != truth.start/' schedc/validate.py
"""Validator edges: one error per bad entry (a misplaced copy of a listed action is not also a
duplicate), no empty summary at exactly LISTED_MISSING missing actions, timing_errors reporting only
the first structural error, and replay_errors comparing ends as well as starts."""

from __future__ import annotations

import importlib
from fractions import Fraction as F

import pytest

from schedc.actions import Action
from schedc.problem import Problem
from schedc.simulate import Slot, simulate
from schedc.validate import error_count, replay_errors, structural_errors, timing_errors, validate
from tests.test_simulate import orders

validate_module = importlib.import_module("schedc.validate")
PROBLEM = Problem(p=2, m=2)


def test_a_misplaced_second_copy_is_one_error() -> None:
    """0F0 runs on rank 0 and again on rank 1: the copy is one bad entry, reported as misplaced (the
    first thing wrong with it), not as misplaced and duplicated, which counted two errors."""
    extra = orders("0F0 0F1 0I0 0W0 0I1 0W1", "1F0 1I0 1W0 1F1 1I1 1W1 0F0")
    assert validate(PROBLEM, extra) == [
        "rank 1 position 6 action 0F0: stage 0 belongs to rank 0 under looped placement"]


def test_exactly_listed_missing_actions_get_no_summary_line(monkeypatch: pytest.MonkeyPatch) -> None:
    """Ten missing actions with LISTED_MISSING 10 are all listed, with no "... and 0 more" line."""
    monkeypatch.setattr(validate_module, "LISTED_MISSING", 10)
    errors = structural_errors(PROBLEM, orders("0F0", "1F0"))
    assert PROBLEM.num_tasks - 2 == 10
    assert len(errors) == error_count(errors) == 10
    assert all(e.endswith(": missing") for e in errors)


def test_timing_errors_of_orders_that_are_no_schedule_give_the_first_structural_error() -> None:
    """Times of orders that miss actions mean nothing: timing_errors says so once, with the first
    structural error (validate lists them all), rather than every structural error."""
    slots = ((Slot(Action("F", 0, 0), 0, 1), Slot(Action("I", 0, 0), 3, 4)),
             (Slot(Action("F", 1, 0), 1, 2), Slot(Action("I", 1, 0), 2, 3)))
    problem = Problem(p=2, m=1)
    assert len(structural_errors(problem, tuple(tuple(s.action for s in r) for r in slots))) == 2
    assert timing_errors(problem, slots) == ["rank 0 action 0W0: missing"]


def test_replay_errors_compare_the_end_too() -> None:
    """A recorded slot that starts where the replay's does but ends elsewhere differs from the replay."""
    timeline = simulate(Problem(p=2, m=1), orders("0F0 0I0 0W0", "1F0 1I0 1W0"))
    slots = [list(rank) for rank in timeline.slots]
    w = slots[0][2]
    assert (w.start, w.end) == (4, 5)
    slots[0][2] = Slot(w.action, w.start, F(11, 2))
    assert replay_errors(timeline, tuple(map(tuple, slots))) == [
        "rank 0 position 2 action 0W0: recorded at 4-5.5, the replay runs it at 4-5"]
