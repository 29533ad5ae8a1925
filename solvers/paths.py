"""Longest paths of one microbatch, per (kind, stage): the numbers every bound and priority uses.

Every dependency joins two tasks of the same microbatch with a lag that depends only on their stages,
so the longest paths of one microbatch are the same for all microbatches. They are read from the DAG
of the one-microbatch problem, which ``schedc.dag`` builds from the one set of dependency rules.
"""

from __future__ import annotations

from dataclasses import dataclass, replace
from fractions import Fraction
from functools import lru_cache

import networkx as nx

from schedc.actions import Action
from schedc.dag import build_dag
from schedc.exact import lcm_denominator
from schedc.problem import Problem

Key = tuple[str, int]
"""(kind, stage): the tasks of all microbatches of one kind on one stage."""


@dataclass(frozen=True)
class StagePaths:
    """Longest paths of the one-microbatch DAG, per (kind, stage)."""

    head: dict[Key, Fraction]
    tail: dict[Key, Fraction]
    rank_head: tuple[dict[Key, Fraction], ...]
    """Per rank r: longest path from the start of F on r's first stage to each of r's tasks' start."""
    rank_tail: tuple[dict[Key, Fraction], ...]
    """Per rank r: longest path from each of r's tasks' end to the end of a task of r reachable from it."""
    round_trip: dict[int, Fraction]
    """Per stage: longest path from F's start to the end of its I (B when unsplit)."""
    from_forward: dict[int, dict[Key, Fraction]]
    """Per stage s: longest path from the start of F(s) to the start of each task reachable from it."""


@lru_cache(maxsize=64)
def stage_paths(problem: Problem) -> StagePaths:
    """Heads, tails, per-rank relative heads and tails and round trips, from the one-microbatch DAG.
    The passes run in integer ticks (one Fraction per result, not per addition)."""
    one = replace(problem, m=1, mem=())
    graph = build_dag(one)
    order = list(nx.topological_sort(graph))
    scale = lcm_denominator([*(graph.nodes[a]["duration"] for a in order), problem.comm])
    dur = {a: int(graph.nodes[a]["duration"] * scale) for a in order}
    preds = {a: [(d, dur[d] + int(graph.edges[d, a]["lag"] * scale)) for d in graph.predecessors(a)]
             for a in order}
    succs = {a: [(u, int(graph.edges[a, u]["lag"] * scale) + dur[u]) for u in graph.successors(a)]
             for a in order}

    def forward(source: Action | None) -> dict[Action, int]:
        dist: dict[Action, int] = {}
        for a in order:
            cands = [dist[d] + w for d, w in preds[a] if d in dist]
            if a == source or (source is None and not preds[a]):
                cands.append(0)
            if cands:
                dist[a] = max(cands)
        return dist

    def backward(targets: set[Action] | None) -> dict[Action, int]:
        dist: dict[Action, int] = {}
        for a in reversed(order):
            cands = [w + dist[u] for u, w in succs[a] if u in dist]
            if targets is None or a in targets:
                cands.append(0)
            if cands:
                dist[a] = max(cands)
        return dist

    def keyed(dist: dict[Action, int], rank: int | None = None) -> dict[Key, Fraction]:
        return {(a.kind, a.stage): Fraction(t, scale) for a, t in dist.items()
                if rank is None or graph.nodes[a]["rank"] == rank}

    rank_head, rank_tail = [], []
    for r in range(problem.p):
        mine = {a for a in order if graph.nodes[a]["rank"] == r}
        rank_head.append(keyed(forward(Action("F", problem.rank_stages[r][0], 0)), r))
        rank_tail.append(keyed(backward(mine), r))
    back = "I" if problem.split else "B"
    from_forward = {s: keyed(forward(Action("F", s, 0))) for s in range(problem.num_stages)}
    round_trip = {s: from_forward[s][back, s] + one.duration(back, s) for s in range(problem.num_stages)}
    return StagePaths(keyed(forward(None)), keyed(backward(None)), tuple(rank_head), tuple(rank_tail),
                      round_trip, from_forward)
