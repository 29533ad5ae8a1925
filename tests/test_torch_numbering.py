"""Microbatches renumbered for torch's runners, which read the last stage's losses by the order of
its forwards (torch itself running a renumbered CSV: ``test_torch_runs_our_csv``)."""

from __future__ import annotations

from hypothesis import given, settings

from schedc.baselines import applicable, baseline_plan
from schedc.plan import Plan
from schedc.problem import Problem
from schedc.torch_csv import csv_text, read_csv_orders
from schedc.torch_numbering import in_loss_order, loss_order, torch_numbered
from tests.cli_helpers import run
from tests.strategies import problems_with_orders

HAND = "0F0,0F1,0I0,0W0,0I1,0W1\n1F1,1F0,1I0,1W0,1I1,1W1\n"
"""p=2 m=2, valid, the last stage running microbatch 1's forward first."""


@settings(max_examples=60, deadline=None)
@given(problems_with_orders(max_p=3, max_m=4))
def test_renumbering_puts_the_losses_in_order_and_keeps_the_schedule(case):
    """Same tasks per rank up to one renaming, same makespan and peaks: microbatches are
    interchangeable, so the renumbered orders are the same schedule."""
    problem, orders = case
    numbered = torch_numbered(problem, orders)
    assert loss_order(problem, numbered) == list(range(problem.m))
    if in_loss_order(problem, orders):
        assert numbered is orders
    before = Plan(problem=problem, orders=orders, source="random")
    after = Plan(problem=problem, orders=numbered, source="random")
    assert (after.makespan, after.timeline.peak_mem) == (before.makespan, before.timeline.peak_mem)
    pairs = [(old, new) for o, n in zip(orders, numbered, strict=True) for old, new in zip(o, n, strict=True)]
    rename = {old.mb: new.mb for old, new in pairs}
    assert sorted(rename.values()) == list(range(problem.m))  # one new name each
    assert all(new == old._replace(mb=rename[old.mb]) for old, new in pairs)  # the same one everywhere


def test_every_baseline_is_already_in_loss_order():
    """So their CSVs are the plans' own tokens, as before."""
    for problem in (Problem(p=4, m=8), Problem(p=2, m=4, v=2, placement="vshape"), Problem(p=3, m=5, v=2)):
        for name in applicable(problem):
            plan = baseline_plan(name, problem)
            assert torch_numbered(problem, plan.orders) is plan.orders, name


def test_the_csv_of_a_plan_out_of_loss_order_is_renumbered(tmp_path):
    problem = Problem(p=2, m=2)
    (tmp_path / "hand.csv").write_text(HAND)
    plan = Plan(problem=problem, orders=read_csv_orders(str(tmp_path / "hand.csv"), problem), source="hand")
    assert loss_order(problem, plan.orders) == [1, 0]
    assert csv_text(plan, "compact") == "0F1,0F0,0I1,0W1,0I0,0W0\r\n1F0,1F1,1I1,1W1,1I0,1W0\r\n"


def test_show_says_it_renumbered_and_validate_says_torch_would_misread(capsys, tmp_path):
    hand, out = tmp_path / "hand.csv", tmp_path / "out.csv"
    hand.write_text(HAND)
    code, stdout, err = run(capsys, "validate", str(hand))
    assert code == 0 and stdout.startswith("OK")
    assert stdout.splitlines()[-1].startswith("note: torch's PipelineScheduleMulti runs the columns in")
    assert stdout.splitlines()[-2] == (
        f"note: torch's runners read the last stage's losses in the order its forwards run, here "
        f"microbatches 1, 0, and take microbatch k's as the k-th: they would train {hand} with other "
        f"microbatches' losses or fail; `schedc show {hand} --csv OUT.csv` writes it numbered in that order")
    code, _, err = run(capsys, "show", str(hand), "--csv", str(out))
    assert code == 0 and err == (
        f"schedc: note: {out}: torch's runners read the last stage's losses in the order its forwards run, "
        "here microbatches 1, 0: the CSV numbers them 0, 1, 2, ... in that order (the same schedule, its "
        "data chunks taken in another order)\n")
    code, stdout, err = run(capsys, "validate", str(out))
    assert (code, err) == (0, "") and "note" not in stdout and "makespan 9" in stdout
    code, _, err = run(capsys, "show", str(out), "--csv", str(tmp_path / "again.csv"))
    assert (code, err) == (0, "") and (tmp_path / "again.csv").read_text() == out.read_text()
