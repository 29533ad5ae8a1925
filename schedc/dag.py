"""The one home of the dependency rules: problem -> task DAG.

Nodes are Actions with ``duration`` and ``mem`` (memory delta) attributes; edges carry ``lag``,
the communication latency that an edge between stages on different ranks adds. Every other part
(simulator, validator, solver, runtime) reads dependencies from here and nowhere else.

``task_index`` is the same DAG in the form hot loops want: tasks numbered 0..n-1, durations and
lags as integers on one common time scale (exact, and far faster than Fraction arithmetic).
"""

from __future__ import annotations

import math
from collections.abc import Iterator
from dataclasses import dataclass
from fractions import Fraction
from functools import lru_cache

import networkx as nx

from schedc.actions import Action
from schedc.problem import Problem


def dependencies(problem: Problem, task: Action) -> Iterator[Action]:
    """Tasks that must finish before ``task`` may start.

    F(s,i) needs F(s-1,i): the stage input. The backward of the last stage needs its own F; the
    backward (I or B) of stage s needs that of s+1 (the output gradient) and F(s,i) (the saved
    activations). W(s,i) needs I(s,i), which computed the gradient W contracts with the input.
    """
    kind, s, i = task
    back = "I" if problem.split else "B"
    if kind == "F":
        if s > 0:
            yield Action("F", s - 1, i)
    elif kind in ("I", "B"):
        yield Action("F", s, i)
        if s < problem.num_stages - 1:
            yield Action(back, s + 1, i)
    elif kind == "W":
        yield Action("I", s, i)


def lag(problem: Problem, before: Action, after: Action) -> Fraction:
    """Communication latency between two dependent tasks: only when their stages sit on different ranks."""
    if problem.stage_rank[before.stage] == problem.stage_rank[after.stage]:
        return Fraction(0)
    return problem.comm


def tasks(problem: Problem) -> Iterator[Action]:
    """All tasks of the problem, stage-major."""
    for s in range(problem.num_stages):
        for kind in problem.kinds:
            for i in range(problem.m):
                yield Action(kind, s, i)


def build_dag(problem: Problem) -> nx.DiGraph:
    """The task DAG: nodes with duration and memory delta, edges with communication lag."""
    graph = nx.DiGraph()
    for task in tasks(problem):
        graph.add_node(
            task,
            duration=problem.duration(task.kind, task.stage),
            mem=problem.mem_delta(task.kind),
            rank=problem.stage_rank[task.stage],
        )
    for task in list(graph.nodes):
        for dep in dependencies(problem, task):
            graph.add_edge(dep, task, lag=lag(problem, dep, task))
    return graph


@dataclass(frozen=True, eq=False)
class TaskIndex:
    """The task DAG numbered for hot loops. Times are integers in units of ``1 / scale``."""

    actions: tuple[Action, ...]
    """Task id -> action (the order of ``tasks``)."""
    ids: dict[Action, int]
    rank: tuple[int, ...]
    duration: tuple[int, ...]
    """Scaled duration of each task."""
    preds: tuple[tuple[int, ...], ...]
    succs: tuple[tuple[tuple[int, int], ...], ...]
    """Per task: (successor id, scaled lag of the edge)."""
    scale: int
    """The lcm of the denominators of every duration and of comm: all scaled times are integers."""

    def time(self, units: int) -> Fraction:
        """A scaled integer time back in the problem's units."""
        return Fraction(units, self.scale)


@lru_cache(maxsize=8)
def task_index(problem: Problem) -> TaskIndex:
    """Builds (once per problem) the numbered DAG from ``tasks``, ``dependencies`` and ``lag``."""
    actions = tuple(tasks(problem))
    ids = {a: t for t, a in enumerate(actions)}
    kinds_stages = [(k, s) for k in problem.kinds for s in range(problem.num_stages)]
    durations = {ks: problem.duration(*ks) for ks in kinds_stages}
    scale = math.lcm(problem.comm.denominator, *(d.denominator for d in durations.values()))
    units = {ks: int(d * scale) for ks, d in durations.items()}
    preds = tuple(tuple(ids[d] for d in dependencies(problem, a)) for a in actions)
    lags: dict[tuple[int, int], int] = {}
    succs: list[list[tuple[int, int]]] = [[] for _ in actions]
    for t, before in enumerate(preds):
        after = actions[t]
        for d in before:
            edge = (actions[d].stage, after.stage)
            if edge not in lags:
                lags[edge] = int(lag(problem, actions[d], after) * scale)
            succs[d].append((t, lags[edge]))
    return TaskIndex(
        actions=actions,
        ids=ids,
        rank=tuple(problem.stage_rank[a.stage] for a in actions),
        duration=tuple(units[a.kind, a.stage] for a in actions),
        preds=preds,
        succs=tuple(tuple(s) for s in succs),
        scale=scale,
    )
