"""A restamped plan (same orders object) reuses its replay; anything else replays."""

from __future__ import annotations

import dataclasses

import pytest

import schedc.plan as plan_module
from schedc import Plan, Problem
from schedc.baselines import baseline_plan
from schedc.replays import KEPT_TASKS


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
    with pytest.raises(Exception, match="missing"):
        Plan(problem=Problem(p=2, m=3), orders=plan.orders, source="short")
    assert dataclasses.replace(plan, source="again").timeline is plan.timeline


def test_kept_replays_stay_under_their_task_budget(monkeypatch):
    import schedc.replays as replays

    monkeypatch.setattr(replays, "KEPT_TASKS", 100)
    for m in range(2, 12):
        baseline_plan("gpipe", Problem(p=2, m=m))
    assert sum(p.num_tasks for p, _, _ in replays._kept.values()) <= max(100, Problem(p=2, m=11).num_tasks)
    assert KEPT_TASKS >= 1_000_000
