"""A restamped plan (same orders object) reuses its replay; anything else replays."""

from __future__ import annotations

import dataclasses

import pytest

import schedc.plan as plan_module
from schedc import Plan, Problem
from schedc.baselines import baseline_plan
from schedc.errors import ScheduleError


@pytest.fixture
def replays(monkeypatch):
    calls = []

    def counted(problem, orders):
        calls.append(problem)
        return simulate(problem, orders)

    simulate = plan_module.simulate
    monkeypatch.setattr(plan_module, "simulate", counted)
    return calls


def test_a_restamped_plan_takes_its_replay(replays):
    plan = baseline_plan("1f1b", Problem(p=3, m=5))
    replays.clear()
    again = dataclasses.replace(plan, status="heuristic", solve_seconds=1.5, source="mine")
    assert replays == [] and again.timeline is plan.timeline


def test_the_same_orders_under_another_problem_replay(replays):
    plan = baseline_plan("1f1b", Problem(p=3, m=5))
    replays.clear()
    slower = dataclasses.replace(plan, problem=Problem(p=3, m=5, tf=2))
    assert replays == [slower.problem] and slower.makespan > plan.makespan


def test_equal_orders_of_another_object_replay(replays):
    plan = baseline_plan("1f1b", Problem(p=3, m=5))
    replays.clear()
    copy = Plan(problem=plan.problem, orders=[list(row) for row in plan.orders], source="copy")
    assert len(replays) == 1 and copy.timeline == plan.timeline


def test_a_failed_replay_is_not_kept(replays):
    plan = baseline_plan("1f1b", Problem(p=2, m=2))
    with pytest.raises(ScheduleError, match="missing"):
        Plan(problem=Problem(p=2, m=3), orders=plan.orders, source="short")
    assert dataclasses.replace(plan, source="again").timeline is plan.timeline


def test_an_entry_goes_with_its_plan_and_many_plans_stay_cheap(replays):
    """Entries were kept up to 2M tasks whatever their plans' fate, and each new one summed the
    others' sizes: 8,000 small plans took 34 s (1.2 s without the table)."""
    import gc

    import schedc.replays as kept

    problem = Problem(p=2, m=2)
    orders = baseline_plan("1f1b", problem).orders
    gc.collect()
    before = len(kept._live)  # plans other tests keep alive (a cache's baselines)
    replays.clear()
    for k in range(3000):
        Plan(problem=problem, orders=[list(row) for row in orders], source=str(k))
    gc.collect()
    assert len(kept._live) <= before + 1 and len(replays) == 3000
