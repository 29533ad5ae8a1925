# sed -i '66s/.replace("\], \[", "\],\\n   \[")//' schedc/plan_json.py
"""The plan file's text: the dict ``plan_to_dict`` builds, one entry a line."""

from __future__ import annotations

import json

from hypothesis import given, settings

from schedc.plan import Plan
from schedc.plan_json import load_plan, plan_text, plan_to_dict

from .strategies import problems_with_orders


@settings(max_examples=60)
@given(case=problems_with_orders())
def test_the_text_is_the_plans_dict_with_each_entry_on_its_own_line(case, tmp_path_factory) -> None:
    problem, orders = case
    plan = Plan(problem=problem, orders=orders, source="s")
    text = plan_text(plan)
    data = plan_to_dict(plan)
    assert json.loads(text) == data
    lines = [line.rstrip(",") for line in text.splitlines() if line.startswith("   [")]
    assert [json.loads(line) for line in lines] == [entry for rank in data["ranks"] for entry in rank]
    path = tmp_path_factory.mktemp("plan") / "plan.json"
    path.write_text(text)
    assert load_plan(str(path)) == plan

