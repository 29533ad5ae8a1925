"""torch CSV details: the lockstep layout is a function of the orders alone, a transfer naming the
stage past the last is a one-line error, and ``load_csv_plan`` keeps the source it is given."""

from __future__ import annotations

from dataclasses import replace

import pytest

from schedc.baselines import baseline_plan
from schedc.errors import ArgumentError, PlanFormatError
from schedc.plan import Plan
from schedc.problem import Problem
from schedc.torch_csv import csv_text, load_csv_plan, lockstep_rows, read_csv_orders, write_csv


@pytest.mark.parametrize("name, problem", [
    ("1f1b", Problem(p=4, m=8, comm=1)),
    ("zb-v", Problem(p=3, m=6, v=2, placement="vshape", comm="1/2")),
])
def test_lockstep_columns_do_not_depend_on_the_latency(name: str, problem: Problem):
    """Columns are the step an action would start in if every action took one step: with the
    latency left in, each hop pushed them right, and the same orders exported as a longer file with
    idle columns torch's lockstep runner steps through."""
    plan = baseline_plan(name, problem)
    untimed = Plan(problem=replace(problem, comm=0), orders=plan.orders, source=name)
    assert lockstep_rows(plan) == lockstep_rows(untimed)
    assert csv_text(plan) == csv_text(untimed)


def test_lockstep_rows_of_1f1b_wait_for_the_gradient_in_unit_steps():
    rows = lockstep_rows(baseline_plan("1f1b", Problem(p=4, m=8, split=False, comm=1)))
    assert rows[0][:8] == ["0F0", "0F1", "0F2", "0F3", "", "", "", "0B0"]  # F0 reaches rank 3 at step 3


def test_a_whole_backward_in_a_split_plan_sits_in_the_column_it_starts_in():
    """torch's DualPipeV files hold whole B's in split plans: two unit steps, keyed by their start."""
    plan = Plan(problem=Problem(p=2, m=1), orders=(("0F0", "0B0"), ("1F0", "1B0")), source="hand")
    # 0F0 step 0; 1F0 step 1; 1B0 steps 2-3; 0B0 (needs 1B0's gradient) steps 4-5
    assert lockstep_rows(plan) == [["0F0", "", "", "", "0B0"], ["", "1F0", "1B0"]]


def test_a_transfer_naming_the_stage_after_the_last_is_one_line(tmp_path):
    """stage == num_stages reached ``stage_rank[stage]``: an IndexError traceback."""
    path = tmp_path / "p.csv"
    path.write_text("0F0,2SEND_F0,0B0\n1F0,1B0\n")
    with pytest.raises(PlanFormatError, match="transfer token '2SEND_F0' names stage 2, but the problem "
                                              "has 2 stages"):
        read_csv_orders(str(path), Problem(p=2, m=1, split=False))


def test_load_csv_plan_keeps_the_given_source(tmp_path):
    """A caller's label for the plan (written to its JSON and trace) was replaced by the file name."""
    plan = baseline_plan("1f1b", Problem(p=2, m=4))
    path = tmp_path / "p.csv"
    write_csv(plan, str(path))
    assert load_csv_plan(str(path), plan.problem, source="from torch").source == "from torch"
    assert load_csv_plan(str(path), plan.problem).source == f"csv:{path}"


def test_read_csv_orders_names_the_problem_it_needs(tmp_path):
    path = tmp_path / "p.csv"
    path.write_text("0F0,0B0\n1F0,1B0\n")
    with pytest.raises(ArgumentError, match=r"reading a CSV plan needs a Problem \(or None\), got dict"):
        read_csv_orders(str(path), {"p": 2, "m": 1})

