"""Simulator: hand-computed timelines, figures, memory, deadlocks."""

from __future__ import annotations

import importlib
from fractions import Fraction as F

import numpy as np
import pytest

from schedc.actions import Action
from schedc.baselines import baseline_plan
from schedc.errors import ArgumentError, ScheduleError
from schedc.problem import Problem
from schedc.simulate import Slot, Timeline, peak_memory, simulate


def orders(*ranks: str) -> tuple[tuple[Action, ...], ...]:
    """Orders from torch-style tokens, one space-separated string per rank."""
    return tuple(tuple(Action.parse(t) for t in rank.split()) for rank in ranks)


def times(timeline: Timeline) -> list[list[tuple[str, F, F]]]:
    return [[(str(s.action), s.start, s.end) for s in rank] for rank in timeline.slots]


TWO_RANKS_ONE_MB = orders("0F0 0I0 0W0", "1F0 1I0 1W0")


def test_two_ranks_one_microbatch():
    t = simulate(Problem(p=2, m=1), TWO_RANKS_ONE_MB)
    assert times(t) == [
        [("0F0", 0, 1), ("0I0", 3, 4), ("0W0", 4, 5)],
        [("1F0", 1, 2), ("1I0", 2, 3), ("1W0", 3, 4)],
    ]
    assert t.makespan == 5
    assert t.spans == (5, 3)  # rank 1 starts late and ends early: its span is not the makespan
    assert t.max_span == 5
    assert t.busy == (3, 3)
    assert t.bubble == 1 - F(6, 2 * 5)


def test_comm_delays_only_cross_rank_inputs():
    t = simulate(Problem(p=2, m=1, comm=F(1, 2)), TWO_RANKS_ONE_MB)
    assert times(t) == [
        [("0F0", 0, 1), ("0I0", 4, 5), ("0W0", 5, 6)],
        [("1F0", F(3, 2), F(5, 2)), ("1I0", F(5, 2), F(7, 2)), ("1W0", F(7, 2), F(9, 2))],
    ]
    assert (t.makespan, t.spans) == (6, (6, 3))


def test_fractional_costs_on_one_rank_with_two_stages():
    problem = Problem(p=1, m=1, v=2, tf=3, tb=1, tw=F(1, 2), comm=1)  # comm never applies: one rank
    t = simulate(problem, orders("0F0 1F0 1I0 1W0 0I0 0W0"))
    assert times(t) == [[
        ("0F0", 0, F(3, 2)), ("1F0", F(3, 2), 3), ("1I0", 3, F(7, 2)),
        ("1W0", F(7, 2), F(15, 4)), ("0I0", F(15, 4), F(17, 4)), ("0W0", F(17, 4), F(9, 2)),
    ]]
    assert t.makespan == F(9, 2)
    assert all(type(x) is F for rank in t.slots for s in rank for x in (s.start, s.end))


def test_vshape_turn_has_no_lag_on_its_own_rank():
    problem = Problem(p=2, m=1, v=2, placement="vshape", tf=2, tb=2, tw=0, comm=1)
    t = simulate(problem, orders("0F0 3F0 3I0 3W0 0I0 0W0", "1F0 2F0 2I0 2W0 1I0 1W0"))
    assert times(t) == [
        [("0F0", 0, 1), ("3F0", 5, 6), ("3I0", 6, 7), ("3W0", 7, 7), ("0I0", 11, 12), ("0W0", 12, 12)],
        [("1F0", 2, 3), ("2F0", 3, 4), ("2I0", 8, 9), ("2W0", 9, 9), ("1I0", 9, 10), ("1W0", 10, 10)],
    ]
    assert t.makespan == 12
    assert t.peak_mem == (1, 1)


def test_decimal_costs_stay_exact():
    t = simulate(Problem(p=1, m=3, split=False, tf=0.1, tb=0.2, tw=0), orders("0F0 0B0 0F1 0B1 0F2 0B2"))
    assert t.makespan == F(9, 10)  # floats would give 0.9000000000000001


def test_seed_example_gpipe_and_1f1b():
    problem = Problem(p=2, m=4, split=False, tb=1, tw=0)
    gpipe = simulate(problem, orders("0F0 0F1 0F2 0F3 0B3 0B2 0B1 0B0", "1F0 1F1 1F2 1F3 1B3 1B2 1B1 1B0"))
    one_f = simulate(problem, orders("0F0 0F1 0B0 0F2 0B1 0F3 0B2 0B3", "1F0 1B0 1F1 1B1 1F2 1B2 1F3 1B3"))
    for t in (gpipe, one_f):
        assert t.makespan == 10
        assert 1 - t.bubble == F(4, 5)
    assert (gpipe.peak_mem[0], one_f.peak_mem[0]) == (4, 2)


def test_memory_curve_follows_the_accounting():
    problem = Problem(p=1, m=3)  # w_mem 1/2: I frees half, W the other half
    t = simulate(problem, orders("0F0 0F1 0F2 0I2 0W2 0I1 0W1 0I0 0W0"))
    assert t.memory_curve(problem, 0) == [
        (0, 0), (0, 1), (1, 2), (2, 3), (4, F(5, 2)), (5, 2), (6, F(3, 2)), (7, 1), (8, F(1, 2)), (9, 0),
    ]
    assert t.peak_mem == (3,)


def test_weight_gradient_holds_memory_until_its_end():
    problem = Problem(p=1, m=2, w_mem=1)  # I frees nothing: W still needs all of it
    order = orders("0F0 0I0 0F1 0W0 0I1 0W1")[0]
    assert peak_memory(problem, order) == 2
    assert peak_memory(Problem(p=1, m=2, w_mem=0), order) == 1


def test_peak_memory_with_fractional_deltas():
    problem = Problem(p=1, m=2, v=3, w_mem=F(1, 3))
    # three thirds, I frees (1 - 1/3) / 3 = 2/9, W frees 1/9, each F adds 1/3
    assert peak_memory(problem, orders("0F0 1F0 2F0 2I0 0F1")[0]) == 1 - F(2, 9) + F(1, 3)
    assert peak_memory(problem, orders("0F0 1F0 2F0 2I0 2W0 0F1 1F1")[0]) == F(4, 3)
    assert peak_memory(problem, orders("0F0 1F0 2F0 2I0 2W0")[0]) == 1


def test_deadlock_on_one_rank_names_rank_position_action():
    with pytest.raises(ScheduleError) as err:
        simulate(Problem(p=2, m=1), orders("0I0 0F0 0W0", "1F0 1I0 1W0"))
    message = str(err.value)
    assert "\n" not in message
    assert message.startswith("deadlock: rank 0 position 0 action 0I0 waits for 0F0 (rank 0 position 1)")
    assert "blocked: rank 0 at 0I0, rank 1 at 1F0" in message


def test_deadlock_across_ranks():
    problem = Problem(p=2, m=2, split=False)
    with pytest.raises(ScheduleError, match="deadlock: rank 0 position 1 action 0B0 waits for 1B0"):
        simulate(problem, orders("0F0 0B0 0F1 0B1", "1F1 1F0 1B0 1B1"))


@pytest.mark.parametrize(
    "ranks, message",
    [
        (("0F0 0I0", "1F0 1I0 1W0"), "rank 0 action 0W0: missing"),
        (("0F0 0I0 0W0 0W0", "1F0 1I0 1W0"), "rank 0 position 3 action 0W0: duplicated"),
        (("0F0 0I0 0W0 1W0", "1F0 1I0"), "rank 0 position 3 action 1W0: stage 1 belongs to rank 1"),
        (("0F0 0I0 0W0 0B0", "1F0 1I0 1W0"), "rank 0 position 1 action 0I0: the orders also run this "
                                                 r"backward whole as 0B0 \(one B, or I and W\)"),
        (("0F0 0I0 0W0",), "plan has 1 rank, the problem has p = 2"),
    ],
)
def test_incomplete_orders_are_schedule_errors(ranks, message):
    with pytest.raises(ScheduleError, match=message):
        simulate(Problem(p=2, m=1), orders(*ranks))


def test_timeline_from_slots_equals_the_simulators():
    t = simulate(Problem(p=2, m=1, comm=F(1, 3)), TWO_RANKS_ONE_MB)
    rebuilt = Timeline(t.slots, t.peak_mem)
    assert rebuilt == t
    assert (rebuilt.makespan, rebuilt.spans, rebuilt.busy) == (t.makespan, t.spans, t.busy)
    assert rebuilt.slots[1][0] == Slot(Action("F", 1, 0), F(4, 3), F(7, 3))


F00 = Action("F", 0, 0)


@pytest.mark.parametrize("slots, peaks, message", [
    ([[Slot("x", 1, 2)]], [0], "slots[0][0].action must be an Action, got 'x'"),
    ([[Slot(Action("F", 0.0, 0), 0, 1)]], [0], "slots[0][0].action needs a kind in F/I/W/B and integer"),
    ([], [], "slots must hold at least one rank, got none"),
    ([[Slot(F00, 0, 10**121)]], [0], "slots[0][0].end is out of range (|x| <= 1e120)"),
    ([[Slot(F00, 2, 1)]], [0], "slots[0][0] ends before it starts (1 < 2)"),
    ([[Slot(F00, 0, "a")]], [0], "slots[0][0].end must be a number, got 'a'"),
    ([[(0, 1)]], [0], "slots[0][0] must be a Slot, got (0, 1)"),
    (5, [0], "slots must be a list of Slots per rank, got 5"),
    ([F00], [0], "slots[0][0] must be a Slot, got 'F'"),
    (["ab"], [0], "slots[0] must be a list, got 'ab'"),
    ([[Slot(F00, 0, 1)]], [0, 1], "peak_mem gives 2 ranks, the slots 1"),
    ([[Slot(F00, 0, 1)]], None, "peak_mem must be one number per rank, got None"),
    ([[Slot(F00, 0, 1)]], ["x"], "peak_mem[0] must be a number, got 'x'"),
    ([[Slot(F00, 0, 1)]], [-1], "peak_mem must be >= 0, got -1"),
])
def test_a_timeline_built_by_hand_is_checked(slots, peaks, message):
    with pytest.raises(ArgumentError) as err:
        Timeline(slots, peaks)
    assert str(err.value).startswith(message)


def test_a_timeline_built_by_hand_reads_numbers_exactly():
    t = Timeline([[Slot(F00, 0, 0.1), Slot(Action("F", 0, 1), "1/10", 1)]], [2])
    assert (t.makespan, t.slots[0][0].end, t.peak_mem) == (1, F(1, 10), (2,))
    again = Timeline((iter(rank) for rank in t.slots), np.array([2]))  # any iterables, numpy numbers
    assert again == t
    late = Timeline([[Slot(F00, 1, 2)], [Slot(Action("F", 1, 0), 2, "7/2")]], [1, 1])  # starts at 1
    assert (late.makespan, late.spans) == (F(5, 2), (1, F(3, 2)))


@pytest.mark.parametrize("problem, schedule", [
    (Problem(p=2, m=2, tf=10**100, tb=10**100), "1f1b"),
    (Problem(p=2, m=2, tw=F(1, 10**999), tb=F(1, 7**1000) + 1), "1f1b"),
    (Problem(p=2, m=2, v=2, w_mem="1e-999", tw="1e-999"), "interleaved-zb"),
])
def test_the_simulators_timelines_of_extreme_problems_rebuild_from_their_slots(problem, schedule):
    """Times and peaks are derived numbers: beyond 1e100, and finer than any number a user gives."""
    t = baseline_plan(schedule, problem).timeline
    assert Timeline(t.slots, t.peak_mem) == t


def test_timeline_is_immutable():
    t = simulate(Problem(p=2, m=1), TWO_RANKS_ONE_MB)
    with pytest.raises(AttributeError):
        t.peak_mem = (0, 0)


def test_a_wrong_rank_count_fails_before_the_task_index_of_a_huge_problem(monkeypatch):
    """A 91-byte plan of p=1000, m=3333 and no ranks took 54 s and 5.2 GB to say so: the task index
    of its 10 million tasks was built first."""
    def no_index(*_args):
        raise AssertionError("the task index was built")

    monkeypatch.setattr(importlib.import_module("schedc.simulate"), "cached_index", no_index)
    with pytest.raises(ScheduleError, match="plan has 0 ranks, the problem has p = 1000"):
        simulate(Problem(p=1000, m=3333), ())
