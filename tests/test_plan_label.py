# sed -i '127s/ or "plan"//' schedc/plan.py
"""A plan's label, the source as reports and pictures print it: a file's empty source printed a
header starting " (optimal): ..." (found by a user's review)."""

from __future__ import annotations

from dataclasses import replace

from schedc.baselines import baseline_plan
from schedc.cli_show import header
from schedc.picture import figure
from schedc.problem import Problem


def test_an_empty_source_reads_plan_and_an_odd_one_stays_on_one_line() -> None:
    plan = baseline_plan("1f1b", Problem(p=2, m=2))
    assert plan.label == "1f1b"
    assert replace(plan, source="").label == "plan"
    assert replace(plan, source="a\nb").label == "a\\nb"
    assert header(replace(plan, source="")) == "plan (heuristic): " + plan.problem.describe()
    assert figure(replace(plan, source="")).get_suptitle().startswith("plan: p=2 m=2")
