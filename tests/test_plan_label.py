# sed -i '305s/ if source is None else source/ if not source else source/' schedc/torch_csv.py
# sed -i '129s/ or "plan"//' schedc/plan.py
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


def test_a_csv_read_with_an_empty_source_keeps_it(tmp_path) -> None:
    """``source=""`` was replaced by ``csv:PATH`` (``source or ...``); None still names the file."""
    from schedc.torch_csv import load_csv_plan, write_csv

    plan = baseline_plan("1f1b", Problem(p=2, m=2))
    path = str(tmp_path / "p.csv")
    write_csv(plan, path)
    assert load_csv_plan(path, plan.problem, source="").source == ""
    assert load_csv_plan(path, plan.problem).source == f"csv:{path}"
