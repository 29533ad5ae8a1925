"""The ground truth checks itself: tests/exhaustive.py's tables and tails against the DAG read
another way, and its optimum against schedules whose optimality is argued by hand."""

from __future__ import annotations

import math
from dataclasses import replace
from fractions import Fraction

import networkx as nx
import pytest

from schedc.actions import Action
from schedc.dag import build_dag
from schedc.problem import Problem, StageCost
from schedc.simulate import simulate
from tests.exhaustive import optimum, table

HALF = Fraction(1, 2)
UNEVEN = (StageCost(1, 2, 1), StageCost(2, 1, HALF), StageCost(1, 1, 2), StageCost(HALF, 3, 1))

SHAPES = [
    Problem(p=2, m=3, v=2, placement="vshape", split=True, stage_costs=UNEVEN, comm=HALF),
    Problem(p=2, m=2, v=2, placement="vshape", split=False, stage_costs=UNEVEN, comm=2),
    Problem(p=2, m=1, v=2, placement="looped", split=False, stage_costs=UNEVEN, comm=1),
    Problem(p=2, m=2, v=2, placement="looped", split=True, stage_costs=UNEVEN, comm=0, mem=1),
    Problem(p=3, m=2, split=True, tf=Fraction(1, 3), tb=2, tw=0, comm=1),
    Problem(p=1, m=2, v=3, split=False, tf=1, tb=Fraction(3, 4), tw=HALF, comm=1),
]


def _tails_by_enumeration(problem: Problem) -> dict[tuple[int, str], Fraction]:
    """Per (stage, kind): the heaviest of all paths leaving its task in the one-microbatch DAG, each
    edge weighing its lag plus the duration of the task it enters (0 for a task with no successor)."""
    graph = build_dag(replace(problem, m=1))

    def weight(path: list[Action]) -> Fraction:
        steps = nx.utils.pairwise(path)
        return sum((graph.edges[a, b]["lag"] + graph.nodes[b]["duration"] for a, b in steps), Fraction(0))

    return {(a.stage, a.kind): max((weight(path) for t in nx.descendants(graph, a)
                                    for path in nx.all_simple_paths(graph, a, t)), default=Fraction(0))
            for a in graph}


@pytest.mark.parametrize("problem", SHAPES, ids=lambda pr: pr.describe())
def test_tails_are_the_longest_paths_of_one_microbatch(problem: Problem) -> None:
    tb = table(problem)
    assert {key: Fraction(t, tb.scale) for key, t in zip(tb.keys, tb.tail, strict=True)} == \
        _tails_by_enumeration(problem)
    assert max(tb.tail) > 0


@pytest.mark.parametrize("problem", SHAPES, ids=lambda pr: pr.describe())
def test_tables_hold_every_edge_duration_rank_and_memory_step_of_the_dag(problem: Problem) -> None:
    """Each task of every microbatch, read back from the per-(stage, kind) tables, is the DAG's."""
    tb = table(problem)
    index = {key: sk for sk, key in enumerate(tb.keys)}
    graph = build_dag(problem)
    assert graph.number_of_nodes() == tb.num_sk * tb.m
    unit = Fraction(tb.delta[index[0, "F"]]) / graph.nodes[Action("F", 0, 0)]["mem"]  # ticks of memory
    for a, data in graph.nodes(data=True):
        sk = index[a.stage, a.kind]
        assert (Fraction(tb.dur[sk], tb.scale), tb.rank[sk], tb.delta[sk] / unit) == \
            (data["duration"], data["rank"], data["mem"])
        edges = sorted((index[d.stage, d.kind], graph.edges[d, a]["lag"]) for d in graph.predecessors(a))
        assert sorted((psk, Fraction(t, tb.scale)) for psk, t in tb.preds[sk]) == edges
    assert tb.caps == tuple(None if c is None else math.floor(c * unit) for c in problem.mem)


def _orders(*ranks: str) -> tuple[tuple[Action, ...], ...]:
    """Per rank, tasks written kind, stage, microbatch: "F00 I00"."""
    return tuple(tuple(Action(t[0], int(t[1]), int(t[2])) for t in rank.split()) for rank in ranks)


ONE_RANK_WORK = 3 * (1 + HALF + Fraction(1, 3) + 2 + 1)
CASES = [
    # One rank never waits on a lag: both values are its whole work, m * sum of durations, in any order.
    pytest.param(
        Problem(p=1, m=3, v=2, stage_costs=(StageCost(1, HALF, Fraction(1, 3)), StageCost(2, 1, 0)), comm=1),
        _orders("F00 F10 I10 W10 I00 W00 F01 F11 I11 W11 I01 W01 F02 F12 I12 W12 I02 W02"),
        ONE_RANK_WORK, ONE_RANK_WORK, id="one rank: all its work"),
    # F0 F1 I1 I0 W0 is a chain of five unit tasks, the first and last on rank 0.
    pytest.param(Problem(p=2, m=1), _orders("F00 I00 W00", "F10 I10 W10"), 5, 5, id="one microbatch"),
    # The same chain with a latency of 1 on each of its two cross-rank edges.
    pytest.param(Problem(p=2, m=1, comm=1), _orders("F00 I00 W00", "F10 I10 W10"), 7, 7, id="comm 1"),
    # Unit F and B: rank 1 starts at 1 at the earliest and has 4 units of work, then its last B
    # needs one more B on rank 0: 6, and rank 0 spans all of it.
    pytest.param(Problem(p=2, m=2, split=False, tw=0), _orders("F00 F01 B00 B01", "F10 B10 F11 B11"),
                 6, 6, id="unsplit"),
    # Cap 1: rank 0 holds each microbatch's activation from its F to its B, 4 units, one at a time.
    pytest.param(Problem(p=2, m=2, split=False, tw=0, mem=1), _orders("F00 B00 F01 B01", "F10 B10 F11 B11"),
                 8, 8, id="unsplit cap 1"),
]


@pytest.mark.parametrize(("problem", "orders", "makespan", "span"), CASES)
def test_optimum_of_hand_checked_schedules(
    problem: Problem, orders: tuple[tuple[Action, ...], ...], makespan: Fraction, span: Fraction
) -> None:
    """The argued optimum is reached by the given orders, and the search finds exactly it, with or
    without an upper limit (the limit only prunes)."""
    timeline = simulate(problem, orders)
    assert (timeline.makespan, timeline.max_span) == (makespan, span)
    assert all(c is None or peak <= c for peak, c in zip(timeline.peak_mem, problem.mem, strict=True))
    for objective, value in (("makespan", makespan), ("span", span)):
        assert optimum(problem, objective) == value
        assert optimum(problem, objective, upper=Fraction(value)) == value
        assert optimum(problem, objective, upper=value + 1) == value


def test_no_order_fits_below_one_activation() -> None:
    assert optimum(Problem(p=2, m=2, mem=HALF)) is None
    assert optimum(Problem(p=2, m=2, mem=(None, HALF)), "span") is None
