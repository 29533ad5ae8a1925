"""Longest paths of one microbatch, per (kind, stage): the numbers every bound and priority uses.

Every dependency joins two tasks of the same microbatch with a lag that depends only on their stages,
so the longest paths of one microbatch are the same for all microbatches. They are read from the DAG
of the one-microbatch problem, which ``schedc.dag`` builds from the one set of dependency rules.

Paths between two tasks need no pass of their own (a pass per stage and per rank made this quadratic
in the stages: 9 s and 0.5 GB at p = 1000). That DAG is the chain F(0) .. F(S-1), back(S-1) ..
back(0) (back: I or B), plus the edges F(s) -> back(s) and back(s) -> W(s). Every task lies on a
longest path from F(0) to each task it reaches: the only way into back(s') off the chain is the edge
F(s') -> back(s'), which the chain F(s') .. back(s'+1) -> back(s') never undercuts (durations and
lags are >= 0). So the longest path from a to b is b's head minus a's (``tests/test_bounds.py``
checks this against a pass from every task).
"""

from __future__ import annotations

from dataclasses import dataclass, replace
from fractions import Fraction
from functools import lru_cache

from schedc.actions import Action
from schedc.dag import TaskIndex, build_index
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

    def from_forward(self, stage: int) -> FromForward:
        """Longest path from the start of F(stage) to the start of each task reachable from it: every
        task but the forwards before it (the module doc)."""
        return FromForward(self.head, stage)


@dataclass(frozen=True)
class FromForward:
    """``StagePaths.from_forward(stage)``, an entry computed when read: callers read a few of them,
    and a dict of all p*v stages per call made p = 1000 slow again."""

    head: dict[Key, Fraction]
    stage: int

    def __getitem__(self, key: Key) -> Fraction:
        if key[0] == "F" and key[1] < self.stage:
            raise KeyError(key)  # upstream of F(stage): not reached from it
        return self.head[key] - self.head["F", self.stage]

    def reached(self) -> dict[Key, Fraction]:
        """Every entry (for tests and inspection)."""
        return {key: self[key] for key in self.head if key[0] != "F" or key[1] >= self.stage}


@lru_cache(maxsize=64)
def stage_paths(problem: Problem) -> StagePaths:
    """Heads, tails, per-rank relative heads and tails and round trips, from the one-microbatch DAG:
    one pass each way in integer ticks (one Fraction per result, not per addition), the rest from
    heads (the module doc)."""
    one = replace(problem, m=1, mem=())
    index = build_index(one)
    ids = topological_order(index)
    order = [index.actions[t] for t in ids]
    scale, dur = index.scale, dict(zip(index.actions, index.duration, strict=True))
    starts, after = [0] * len(ids), [0] * len(ids)
    for t in ids:  # a start: the latest end plus lag among the task's predecessors
        for u, lag in index.succs[t]:
            starts[u] = max(starts[u], starts[t] + index.duration[t] + lag)
    for t in reversed(ids):
        after[t] = max((lag + index.duration[u] + after[u] for u, lag in index.succs[t]), default=0)
    head = {index.actions[t]: starts[t] for t in ids}
    tail = {index.actions[t]: after[t] for t in ids}
    mine: list[list[Action]] = [[] for _ in range(problem.p)]
    for t in ids:
        mine[index.rank[t]].append(index.actions[t])

    def keyed(dist: dict[Action, int], tasks: list[Action] = order, origin: int = 0) -> dict[Key, Fraction]:
        return {(a.kind, a.stage): Fraction(dist[a] - origin, scale) for a in tasks}

    def last_end(a: Action, tasks: list[Action]) -> int:
        """From a's end to the latest end among ``tasks`` that a reaches (a itself included)."""
        return max(head[b] + dur[b] for b in tasks if reaches(a, b)) - head[a] - dur[a]

    rank_head = tuple(keyed(head, tasks, head[Action("F", problem.rank_stages[r][0], 0)])
                      for r, tasks in enumerate(mine))
    rank_tail = tuple({(a.kind, a.stage): Fraction(last_end(a, tasks), scale) for a in tasks}
                      for tasks in mine)
    back = "I" if problem.split else "B"
    round_trip = {s: Fraction(head[Action(back, s, 0)] - head[Action("F", s, 0)], scale)
                  + one.duration(back, s) for s in range(problem.num_stages)}
    return StagePaths(keyed(head), keyed(tail), rank_head, rank_tail, round_trip)


def topological_order(index: TaskIndex) -> list[int]:
    """Task ids in the order networkx's ``topological_sort`` gives the same DAG (generation by
    generation, each in the order its tasks became ready): the dicts of ``StagePaths`` keep the
    order they had when they were built from ``build_dag``, which callers may iterate."""
    waiting = [len(p) for p in index.preds]
    generation = [t for t, n in enumerate(waiting) if n == 0]
    order: list[int] = []
    while generation:
        order += generation
        ready = []
        for t in generation:
            for u, _ in index.succs[t]:
                waiting[u] -= 1
                if waiting[u] == 0:
                    ready.append(u)
        generation = ready
    return order


def reaches(a: Action, b: Action) -> bool:
    """Whether ``b`` is ``a`` or lies downstream of it in the one-microbatch DAG (the module doc)."""
    if a.kind == "F":
        return b.kind != "F" or b.stage >= a.stage
    if a.kind in ("I", "B"):
        return b.kind != "F" and b.stage <= a.stage
    return b == a  # W: nothing depends on it
