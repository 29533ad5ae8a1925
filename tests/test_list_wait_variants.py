"""The list scheduler's 'wait' variants idle a rank for a task of smaller key that is surely on its way
(list_engine.Engine.worth_waiting): on these tight two-stage caps that beats starting the task at hand.
A slip in recording which tasks are on their way (the last input running) leaves the wait variants
identical to the others, and the portfolio with half its variants duplicated, without any test noticing."""

from __future__ import annotations

import pytest

from schedc.problem import Problem
from schedc.solvers.list_portfolio import variant_named
from schedc.solvers.list_scheduler import run_variant


@pytest.mark.parametrize(("mem", "comm"), [((2,), 0), ((3,), 1)])
def test_waiting_for_a_task_on_its_way_beats_starting_the_one_at_hand(mem, comm):
    problem = Problem(p=4, m=4, v=2, placement="vshape", tf=1, tb=2, tw=1, comm=comm, mem=mem)
    eager = run_variant(problem, variant_named("lst-mb/none/forecast"))
    waiting = run_variant(problem, variant_named("lst-mb/none/forecast/wait"))
    assert waiting.makespan_ticks < eager.makespan_ticks
