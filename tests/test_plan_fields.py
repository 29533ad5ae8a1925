"""A plan's derived and recorded fields: the gap is (value - bound) / value and never below 0, and
``solve_seconds`` is a float whatever real number it was given, a bool being none."""

from __future__ import annotations

import json
from dataclasses import replace
from decimal import Decimal
from fractions import Fraction

import pytest

from schedc import load_plan
from schedc.baselines import baseline_plan
from schedc.errors import PlanFormatError, ScheduleError
from schedc.plan_json import plan_to_dict, save_plan
from schedc.problem import Problem


def test_the_gap_is_relative_to_the_value():
    plan = replace(baseline_plan("1f1b", Problem(p=2, m=4)), lower_bound=13)
    assert plan.makespan == 14 and plan.gap == Fraction(1, 14)


def test_a_plan_below_its_cap_aware_bound_has_gap_zero_not_negative():
    """A plan over its cap may lie below its cap-aware bound (kept on load): its gap printed -23%."""
    over = replace(baseline_plan("gpipe", Problem(p=4, m=8, mem=2)), lower_bound=37)  # makespan 30
    assert not over.fits() and over.lower_bound > over.makespan
    assert over.gap == 0


def test_solve_seconds_of_any_real_type_is_kept_as_a_float_and_round_trips(tmp_path):
    """A Decimal kept as given crashed save_plan in json.dumps (a traceback, not one line)."""
    plan = baseline_plan("1f1b", Problem(p=2, m=2))
    for given in (Decimal("1.5"), 2, Fraction(1, 4)):
        timed = replace(plan, solve_seconds=given)
        assert type(timed.solve_seconds) is float and timed.solve_seconds == float(given)
        path = tmp_path / "timed.json"
        save_plan(timed, str(path))
        assert load_plan(str(path)) == timed


def test_a_bool_is_no_number_of_seconds(tmp_path):
    plan = baseline_plan("1f1b", Problem(p=2, m=2))
    for flag in (True, False):
        with pytest.raises(PlanFormatError, match="solve_seconds must be a finite number >= 0"):
            replace(plan, solve_seconds=flag)
    data = plan_to_dict(plan)
    data["solve_seconds"] = True
    path = tmp_path / "p.json"
    path.write_text(json.dumps(data))
    with pytest.raises(PlanFormatError, match="solve_seconds must be a finite number >= 0, got True"):
        load_plan(str(path))


def test_a_span_plans_bound_is_refused_against_its_largest_span():
    """The error names what the bound is held to: a span plan's largest span, not its makespan."""
    plan = baseline_plan("zb-h2", Problem(p=3, m=6))
    assert (plan.makespan, plan.timeline.max_span) == (20, 18)
    with pytest.raises(ScheduleError, match=r"lower_bound 19 exceeds the plan's largest span 18$"):
        replace(plan, objective="span", lower_bound=19)

