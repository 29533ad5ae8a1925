"""The smallest feasible cap is one full activation per rank: checked by brute force on tiny problems."""

from __future__ import annotations

from fractions import Fraction
from functools import cache

import networkx as nx
import pytest

from schedc.actions import Action
from schedc.dag import build_dag
from schedc.errors import InfeasibleError
from schedc.problem import Problem
from schedc.simulate import simulate
from schedc.solvers.feasibility import check_caps, min_feasible_cap
from schedc.validate import validate
from tests.exhaustive import optimum

TINY = [
    Problem(p=p, m=m, v=v, placement=placement, split=split)
    for p in (1, 2)
    for m in (1, 2)
    for v, placement in ((1, "looped"), (2, "looped"), (2, "vshape"))
    for split in (True, False)
]


def min_peak(problem: Problem, rank: int) -> Fraction:
    """Smallest peak activation of rank r over every order of its tasks that respects the DAG
    (directly or through other ranks): a bottleneck path through the lattice of down-sets."""
    graph = build_dag(problem)
    closure = nx.transitive_closure_dag(graph)
    mine = [a for a in graph if problem.stage_rank[a.stage] == rank]
    before = {a: frozenset(d for d in closure.predecessors(a) if d in set(mine)) for a in mine}

    @cache
    def best(done: frozenset[Action], level: Fraction) -> Fraction:
        if len(done) == len(mine):
            return Fraction(0)
        options = []
        for a in mine:
            if a not in done and before[a] <= done:
                after = level + problem.mem_delta(a.kind)
                options.append(max(after, best(done | {a}, after)))
        return min(options)

    return best(frozenset(), Fraction(0))


@pytest.mark.parametrize("problem", TINY, ids=lambda pr: pr.describe())
def test_every_order_peaks_at_one_activation(problem: Problem) -> None:
    """Necessity and per-rank tightness: no order of any rank stays below 1, some order reaches 1."""
    for r in range(problem.p):
        assert min_peak(problem, r) == 1 == min_feasible_cap(problem)


@pytest.mark.parametrize("problem", [pr for pr in TINY if pr.m == 2], ids=lambda pr: pr.describe())
def test_exhaustive_search_finds_nothing_below_one(problem: Problem) -> None:
    below = Problem(**{**_fields(problem), "mem": (Fraction(99, 100),)})
    assert optimum(below) is None
    assert optimum(Problem(**{**_fields(problem), "mem": (Fraction(1),)})) is not None


def test_one_microbatch_at_a_time_fits_a_cap_of_one() -> None:
    """Sufficiency, the module's construction: all tasks of microbatch i before microbatch i + 1."""
    for problem in TINY:
        capped = Problem(**{**_fields(problem), "mem": (1,)})
        graph = build_dag(capped)
        order = sorted(nx.topological_sort(graph), key=lambda a: a.mb)  # stable: DAG order within one mb
        orders = tuple(tuple(a for a in order if capped.stage_rank[a.stage] == r) for r in range(capped.p))
        assert validate(capped, orders) == []
        assert max(simulate(capped, orders).peak_mem) == 1


def test_check_caps_names_rank_cap_and_smallest_feasible_cap() -> None:
    problem = Problem(p=3, m=4, v=2, mem=(2, Fraction(3, 4), None))
    with pytest.raises(InfeasibleError) as err:
        check_caps(problem)
    message = str(err.value)
    assert "\n" not in message
    assert "rank 1" in message and "0.75" in message and "smallest feasible cap 1" in message


@pytest.mark.parametrize("caps", [(), (1,), (1, None), (Fraction(5, 4), 8)])
def test_check_caps_accepts_caps_of_at_least_one(caps: tuple) -> None:
    problem = Problem(p=2, m=3, v=2, mem=caps)
    check_caps(problem)  # raises nothing


def _fields(problem: Problem) -> dict:
    return {name: getattr(problem, name) for name in
            ("p", "m", "v", "placement", "split", "tf", "tb", "tw", "stage_costs", "comm", "w_mem")}
