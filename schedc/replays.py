"""The last few replays, so that a plan restamped with a bound, a status or its time
(``dataclasses.replace``: the same orders object) is not replayed again: a second at 67,000 tasks,
and a solve restamps its incumbent and its answer after replaying every baseline."""

from __future__ import annotations

import threading
from collections import OrderedDict

from schedc.problem import Problem
from schedc.simulate import Orders, Timeline

KEPT_TASKS = 2_000_000
"""Replays are kept while their tasks add up to at most this (the newest always): a timeline holds
a few hundred bytes a task, and one kept after its plan is dropped holds that memory on."""

_kept: OrderedDict[int, tuple[Problem, Orders, Timeline]] = OrderedDict()
_lock = threading.Lock()


def kept_replay(problem: Problem, orders: Orders) -> Timeline | None:
    """The timeline of these very orders (checked orders are immutable) for an equal problem."""
    with _lock:
        kept = _kept.get(id(orders))
        if kept is None or kept[1] is not orders or kept[0] != problem:
            return None
        _kept.move_to_end(id(orders))
        return kept[2]


def keep_replay(problem: Problem, orders: Orders, timeline: Timeline) -> None:
    with _lock:
        _kept[id(orders)] = (problem, orders, timeline)
        while len(_kept) > 1 and sum(p.num_tasks for p, _, _ in _kept.values()) > KEPT_TASKS:
            _kept.popitem(last=False)
