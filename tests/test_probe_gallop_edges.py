# sed -i '157s/math.ceil/math.floor/' solvers/probe.py
# sed -i '129s/max(floor, plan.lower_bound or floor)/floor/' solvers/probe.py
"""Horizon probes' gallop (solvers/probe.py) with CP-SAT stood in for: where it starts, how it
rounds the starting bound (its halving back after an undecided probe: test_probe)."""

from __future__ import annotations

import importlib
from dataclasses import replace
from fractions import Fraction

from schedc.plan import Plan
from schedc.problem import Problem
from schedc.solvers.bounds import lower_bound
from schedc.solvers.incumbent import sequential_orders
from schedc.solvers.probe import Answer, probe_bound

probe_module = importlib.import_module("schedc.solvers.probe")

PROBLEM = Problem(p=2, m=4, v=2, placement="vshape", tf=1, tb=2, tw=1, mem=(1,))


def _start() -> Plan:
    return Plan(problem=PROBLEM, orders=sequential_orders(PROBLEM), source="sequential")


def _never_decided(plan, horizon, **kwargs):
    return "unknown", None, Answer("UNKNOWN", None)


def test_a_floor_between_time_units_is_rounded_up(monkeypatch) -> None:
    """Every schedule's makespan is a multiple of the time unit, so a floor strictly between two
    multiples proves the next one up: with no probe decided, the answer's bound is that multiple,
    never the one below the floor it was given."""
    unit = Fraction(1, PROBLEM.time_scale)
    floor = lower_bound(PROBLEM) + unit / 3
    monkeypatch.setattr(probe_module, "probe", _never_decided)
    plan = probe_bound(_start(), floor, time_limit=1, workers=2)
    assert plan.lower_bound == lower_bound(PROBLEM) + unit and plan.lower_bound >= floor


def test_probes_start_from_the_plans_own_bound_when_above_the_floor(monkeypatch) -> None:
    """A plan that a search already proved a bound for keeps it: probes that decide nothing must
    not hand it back with the (lower) floor of the call."""
    unit = Fraction(1, PROBLEM.time_scale)
    floor = lower_bound(PROBLEM)
    start = _start()
    proven = floor + 3 * unit
    assert proven < start.value
    monkeypatch.setattr(probe_module, "probe", _never_decided)
    plan = probe_bound(replace(start, lower_bound=proven), floor, time_limit=1, workers=2)
    assert plan.lower_bound == proven and plan.status == "feasible"
