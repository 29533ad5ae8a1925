"""The one home of the dependency rules: problem -> task DAG.

Nodes are Actions with ``duration`` and ``mem`` (memory delta) attributes; edges carry ``lag``,
the communication latency that an edge between stages on different ranks adds. Every other part
(simulator, validator, solver, runtime) reads dependencies from here and nowhere else.
"""

from __future__ import annotations

from collections.abc import Iterator
from fractions import Fraction

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
