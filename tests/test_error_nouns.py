# sed -i '208s/counted(len(self.actions), .rank.)/len(self.actions)/' schedc/simulate.py
# sed -i '90s/counted(top.stage + 1, .stage.)/top.stage + 1/' schedc/cli_plan_input.py
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


def test_one_rank_and_one_stage_in_the_timeline_and_csv_lines_are_singular(capsys, tmp_path):
    from schedc.baselines import baseline_plan
    from schedc.errors import ArgumentError
    from tests.cli_helpers import run

    timeline = baseline_plan("1f1b", Problem(p=1, m=2)).timeline
    with pytest.raises(ArgumentError, match=r"^memory_curve needs the Problem of the timeline's 1 rank$"):
        timeline.memory_curve(Problem(p=2, m=2), 0)
    path = tmp_path / "one.csv"
    path.write_text("0F0,0B0\n")
    code, _, err = run(capsys, "validate", str(path), "--m", "10000000")
    assert code == 1 and err.endswith("(its rows give 1 stage from 0F0)\n")
