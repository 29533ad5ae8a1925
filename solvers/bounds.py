"""Analytic lower bounds on the makespan, valid for every schedule of the problem.

They ignore the activation cap (any capped schedule is also an uncapped one), so they bound
every plan; the solver adds its own proven bound on top.
"""

from __future__ import annotations

from fractions import Fraction

from schedc.actions import Action
from schedc.dag import build_dag
from schedc.problem import Problem


def heads_and_tails(problem: Problem) -> tuple[dict[Action, Fraction], dict[Action, Fraction]]:
    """Per task: the earliest start with unlimited ranks (head) and the longest chain of work and
    latency that must follow its end (tail). Both are longest paths in the task DAG."""
    graph = build_dag(problem)
    order = list(_topological(graph))
    head: dict[Action, Fraction] = {}
    for a in order:
        head[a] = max(
            (head[d] + graph.nodes[d]["duration"] + graph.edges[d, a]["lag"] for d in graph.predecessors(a)),
            default=Fraction(0),
        )
    tail: dict[Action, Fraction] = {}
    for a in reversed(order):
        tail[a] = max(
            (graph.edges[a, u]["lag"] + graph.nodes[u]["duration"] + tail[u] for u in graph.successors(a)),
            default=Fraction(0),
        )
    return head, tail


def _topological(graph):
    import networkx as nx

    return nx.topological_sort(graph)


def rank_bound(problem: Problem, head=None, tail=None) -> Fraction:
    """Per rank: nothing can start before the earliest head of its tasks, the rank runs its tasks one
    at a time, and after its last task the shortest tail among its tasks must still elapse."""
    if head is None or tail is None:
        head, tail = heads_and_tails(problem)
    best = Fraction(0)
    for r in range(problem.p):
        mine = [a for a in head if problem.stage_rank[a.stage] == r]
        work = sum((problem.duration(a.kind, a.stage) for a in mine), Fraction(0))
        best = max(best, min(head[a] for a in mine) + work + min(tail[a] for a in mine))
    return best


def critical_path(problem: Problem, head=None, tail=None) -> Fraction:
    """One microbatch alone through every stage and back."""
    if head is None or tail is None:
        head, tail = heads_and_tails(problem)
    return max(head[a] + problem.duration(a.kind, a.stage) + tail[a] for a in head)


def lower_bound(problem: Problem) -> Fraction:
    head, tail = heads_and_tails(problem)
    return max(rank_bound(problem, head, tail), critical_path(problem, head, tail))
