# sed -i '207s/total - error_count(errors\[:1\])/total - 1/' schedc/validate.py
# sed -i '209s/if rest > 0 else/if rest >= 0 else/' schedc/validate.py
# sed -i '69s/self.lower_bound < 0/self.lower_bound <= 0/' schedc/plan.py
"""A refused Plan's one line counts the errors after the first exactly (none for a lone error or for
the one line of orders far too short, which stands for every missing task), and a lower bound of 0
is a bound."""

from __future__ import annotations

import importlib
from dataclasses import replace

import pytest

from schedc.baselines import baseline_plan
from schedc.errors import ScheduleError
from schedc.plan import Plan
from schedc.problem import Problem
from tests.test_simulate import orders

simulate_module = importlib.import_module("schedc.simulate")


def test_a_plan_with_one_error_says_no_more_follow() -> None:
    """One duplicated action, nothing else wrong: the message is that error alone (no "+0 more")."""
    with pytest.raises(ScheduleError) as err:
        Plan(problem=Problem(p=2, m=1), orders=orders("0F0 0I0 0W0", "1F0 1I0 1W0 1W0"), source="t")
    assert str(err.value) == "rank 1 position 3 action 1W0: duplicated"


def test_a_sparse_plan_counts_its_one_summary_line_once(monkeypatch: pytest.MonkeyPatch) -> None:
    """The one line of a sparse plan stands for all 118 missing tasks: no errors follow it, so the
    message has no "(+... more errors)" (which counted the summary's own tasks again, less one)."""
    monkeypatch.setattr(simulate_module, "SPARSE_TASKS", 100)
    with pytest.raises(ScheduleError) as err:
        Plan(problem=Problem(p=2, m=20), orders=orders("0F0", "1F0"), source="t")
    message = str(err.value)
    assert message.endswith("at least 118 are missing") and "more errors" not in message


def test_a_lower_bound_of_zero_is_kept() -> None:
    """0 is a (trivial) lower bound, within ">= 0": kept, with a gap of 100%."""
    plan = replace(baseline_plan("1f1b", Problem(p=2, m=4)), lower_bound=0)
    assert plan.lower_bound == 0 and plan.gap == 1
