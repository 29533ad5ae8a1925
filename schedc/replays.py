"""Replays of live plans, so that a plan restamped with a bound, a status or its time
(``dataclasses.replace``: the same orders object) is not replayed again: a second at 67,000 tasks,
and a solve restamps its incumbent and its answer after replaying every baseline. Plans are held
weakly: an entry goes with its plan, so nothing is kept past it and the table stays small."""

from __future__ import annotations

import weakref
from typing import TYPE_CHECKING

from schedc.problem import Problem
from schedc.simulate import Orders, Timeline

if TYPE_CHECKING:
    from schedc.plan import Plan

_live: weakref.WeakValueDictionary[int, Plan] = weakref.WeakValueDictionary()
"""Live plans by the id of their orders (which a live plan keeps alive, so no other object has it)."""


def kept_replay(problem: Problem, orders: Orders) -> Timeline | None:
    """The timeline of a live plan of these very orders (checked orders are immutable) and an
    equal problem."""
    plan = _live.get(id(orders))
    if plan is None or plan.orders is not orders or plan.problem != problem:
        return None
    return plan.timeline


def keep_replay(plan: Plan) -> None:
    _live[id(plan.orders)] = plan
