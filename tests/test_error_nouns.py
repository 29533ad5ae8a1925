# sed -i '59s/plural or noun/noun/' schedc/errors.py
# sed -i '122s/counted(problem.num_stages, .stage.)} x/problem.num_stages} stages x/' schedc/dag.py
# sed -i '155s/{counted(self.p, .rank.)}/{self.p} ranks/' schedc/problem.py
# sed -i '208s/"error" if rest == 1/"errors" if rest == 1/' schedc/validate.py
"""Counts in error lines take their noun's number (``errors.counted``): a user's walkthrough read
"not a task of 1 stages x 1 microbatches", "mem gives 2 caps for 1 ranks" and "(+1 more errors)"."""

from __future__ import annotations

import pytest

from schedc.actions import Action
from schedc.errors import ProblemError, ScheduleError, counted
from schedc.plan import Plan
from schedc.problem import Problem
from schedc.validate import validate


def orders(*ranks: str) -> tuple[tuple[Action, ...], ...]:
    return tuple(tuple(Action.parse(t) for t in rank.split()) for rank in ranks)


def test_a_noun_is_singular_for_one_and_takes_its_own_plural():
    assert [counted(1, "microbatch", "microbatches"), counted(2, "microbatch", "microbatches")] == [
        "1 microbatch", "2 microbatches"]
    assert [counted(1, "rank"), counted(0, "rank"), counted(3, "rank")] == ["1 rank", "0 ranks", "3 ranks"]


def test_a_task_outside_one_stage_and_one_microbatch_is_named_in_the_singular():
    errors = validate(Problem(p=1, m=1), orders("0F0 1F0 0B0"))
    assert any("1F0: not a task of 1 stage x 1 microbatch (" in e for e in errors), errors
    errors = validate(Problem(p=2, m=3), orders("0F0 0F5", "1F0"))
    assert any("0F5: not a task of 2 stages x 3 microbatches (" in e for e in errors), errors


def test_caps_for_one_rank_and_one_more_error_are_singular():
    with pytest.raises(ProblemError, match=r"^mem gives 2 caps for 1 rank; give one or 1$"):
        Problem(p=1, m=2, mem=(1, 2))
    with pytest.raises(ScheduleError, match=r" \(\+1 more error\)$"):
        Plan(problem=Problem(p=2, m=2), orders=orders("0F0 0F1 0I0 0W0", "1F0 1I0 1W0 1F1 1I1 1W1"),
             source="t")
