# sed -i '172s/ + _claim_errors(plan)/ or _claim_errors(plan)/' schedc/validate.py
# sed -i '52s/if rank\[k\].start < rank\[k - 1\].end:/if False:/' schedc/simulate.py
# sed -i '56s/, compare=False//' schedc/plan.py
# sed -i '105s/if self.stage_costs is None:/if True:/' schedc/problem.py
"""What a review of the Python API found (2026-12-07): validate(plan) dropped a false bound beside a
cap error, a hand-built Timeline read figures from slots out of order, two repeated solves never
compared equal (their wall-clock seconds did), and Problem(stage_costs=...) refused tf, tb, tw that
its stage costs replace."""

from __future__ import annotations

from fractions import Fraction

import pytest

from schedc import Action, Plan, Problem, Slot, Timeline, validate
from schedc.baselines import baseline_plan
from schedc.errors import ArgumentError


def test_validate_lists_a_false_bound_beside_a_cap_error() -> None:
    problem = Problem(p=2, m=4, mem=1)
    base = baseline_plan("1f1b", problem)
    assert not base.fits()
    errors = validate(Plan(problem=problem, orders=base.orders, source="mine", lower_bound=1000))
    assert len(errors) == 2 and errors[0].endswith("activation memory 2 exceeds the cap 1")
    assert errors[1].startswith("lower_bound 1000 exceeds the ") and errors[1].endswith("the bound is false")
    assert validate(Plan(problem=problem, orders=base.orders, source="mine")) == errors[:1]


@pytest.mark.parametrize("slots", [
    [Slot(Action("F", 0, 1), 5, 6), Slot(Action("F", 0, 0), 0, 1)],  # out of order: makespan -4
    [Slot(Action("F", 0, 0), 0, 10), Slot(Action("F", 0, 1), 2, 3)],  # overlapping: bubble -8/3
])
def test_a_timeline_refuses_slots_out_of_order_or_overlapping(slots) -> None:
    with pytest.raises(ArgumentError, match=r"^slots\[0\]\[1\] starts at 0|^slots\[0\]\[1\] starts at 2"):
        Timeline([slots], [1])


def test_a_timeline_takes_slots_that_touch() -> None:
    slots = [Slot(Action("F", 0, 0), 0, 1), Slot(Action("F", 0, 1), 1, 1), Slot(Action("F", 0, 2), 1, 3)]
    t = Timeline([slots], [1])
    assert (t.makespan, t.bubble) == (3, 0)


def test_plans_differing_in_solve_seconds_alone_compare_equal() -> None:
    base = baseline_plan("1f1b", Problem(p=2, m=4))
    a = Plan(problem=base.problem, orders=base.orders, source="cp-sat", solve_seconds=0.04)
    b = Plan(problem=base.problem, orders=base.orders, source="cp-sat", solve_seconds=0.02)
    assert a == b and hash(a) == hash(b) and len({a, b}) == 1 and a.solve_seconds == 0.04
    assert a != Plan(problem=base.problem, orders=base.orders, source="list")


@pytest.mark.parametrize("given", [{"tf": 0}, {"tf": -1}, {"tf": None}, {"tb": "abc"}, {"tw": -2}])
def test_stage_costs_replace_whatever_rank_costs_were_given_beside_them(given) -> None:
    problem = Problem(p=2, m=2, stage_costs=[(1, 1, 1), (2, 2, 2)], **given)
    assert (problem.tf, problem.tb, problem.tw) == (Fraction(3, 2),) * 3
