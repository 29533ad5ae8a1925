"""The one home of the dependency rules: problem -> task DAG.

Nodes are Actions with ``duration`` and ``mem`` (memory delta) attributes; edges carry ``lag``,
the communication latency that an edge between stages on different ranks adds. Every other part
(simulator, validator, solver, runtime) reads dependencies from here; the solver's per-stage
paths (``solvers.paths``) are derived from the one-microbatch DAG built here.

A split problem's orders may run some backwards whole: B(s,i) in place of I(s,i) and W(s,i), as
torch's FULL_BACKWARD, which its DualPipeV mixes with split ones. Such a B is one task of cost
tb + tw that frees the whole activation at its end and sends the input gradient only then, so the
task set follows the orders (``fused_backwards``). schedc's own plans never fuse: I and W back to
back do the same work, send the gradient earlier and free memory no later.

``task_index`` is the same DAG in the form hot loops want: tasks numbered 0..n-1, durations and
lags as integers on one common time scale (exact, and far faster than Fraction arithmetic).
"""

from __future__ import annotations

from collections.abc import Callable, Iterable, Iterator, Mapping
from dataclasses import dataclass
from fractions import Fraction
from functools import lru_cache
from numbers import Integral
from types import MappingProxyType
from typing import TYPE_CHECKING

from schedc.actions import Action
from schedc.errors import ArgumentError, counted, shown
from schedc.problem import Problem

if TYPE_CHECKING:
    import networkx as nx

Orders = tuple[tuple[Action, ...], ...]
Fused = frozenset[tuple[int, int]]
"""The (stage, microbatch) pairs whose backward a split problem's orders run whole, as one B."""
NONE_FUSED: Fused = frozenset()


def fused_backwards(problem: Problem, orders: Iterable[Iterable[Action]]) -> Fused:
    """The pairs ``orders`` run as one B. In an unsplit problem every backward is a B: none is fused."""
    if not problem.split:
        return NONE_FUSED
    return frozenset((a[1], a[2]) for order in orders for a in order if a[0] == "B")


def unfused_orders(problem: Problem, orders: Orders) -> Orders:
    """``orders`` with each whole backward of a split problem run as its I then its W, back to back:
    the same work, the gradient sent earlier and memory freed no later, so never slower and never
    over a cap the B's met (``tests/test_fused_backward.py``). The solvers state plans this way."""
    if not problem.split:
        return orders
    return tuple(tuple(x for a in order for x in ((a._replace(kind="I"), a._replace(kind="W"))
                                                   if a.kind == "B" else (a,))) for order in orders)


def backward(problem: Problem, stage: int, mb: int, fused: Fused = NONE_FUSED) -> Action:
    """The task that computes the gradient of the stage's input: I when split, else B."""
    return Action("I" if problem.split and (stage, mb) not in fused else "B", stage, mb)


def dependencies(problem: Problem, task: Action, fused: Fused = NONE_FUSED) -> Iterator[Action]:
    """Tasks that must finish before ``task`` may start.

    F(s,i) needs F(s-1,i): the stage input. The backward of the last stage needs its own F; the
    backward (I or B) of stage s needs that of s+1 (the output gradient) and F(s,i) (the saved
    activations). W(s,i) needs I(s,i), which computed the gradient W contracts with the input.
    """
    kind, s, i = task
    if kind == "F":
        if s > 0:
            yield Action("F", s - 1, i)
    elif kind in ("I", "B"):
        yield Action("F", s, i)
        if s < problem.num_stages - 1:
            yield backward(problem, s + 1, i, fused)
    elif kind == "W":
        yield Action("I", s, i)


def lag(problem: Problem, before: Action, after: Action) -> Fraction:
    """Communication latency between two dependent tasks: only when their stages sit on different ranks."""
    if problem.stage_rank[before.stage] == problem.stage_rank[after.stage]:
        return Fraction(0)
    return problem.comm


def scaled_lags(problem: Problem, scale: int) -> Callable[[Action, Action], int]:
    """``lag`` in integer time over ``scale``, computed once per pair of stages: replays of large
    plans ask it for every edge, and Fraction arithmetic there took seconds (200,000 tasks)."""
    cache: dict[tuple[int, int], int] = {}

    def ticks(before: Action, after: Action) -> int:
        key = (before.stage, after.stage)
        value = cache.get(key)
        if value is None:
            value = cache[key] = int(lag(problem, before, after) * scale)
        return value

    return ticks


def tasks(problem: Problem, fused: Fused = NONE_FUSED) -> Iterator[Action]:
    """All tasks of the problem, stage-major; a fused pair's B stands where its I would."""
    for s in range(problem.num_stages):
        for kind in problem.kinds:
            for i in range(problem.m):
                if not fused or kind not in ("I", "W") or (s, i) not in fused:
                    yield Action(kind, s, i)
                elif kind == "I":
                    yield Action("B", s, i)


def not_a_task(problem: Problem, a: Action, fused: Fused = NONE_FUSED) -> str:
    """Why ``a`` is no task of the problem (under ``fused``), for an error line."""
    known = a.stage < problem.num_stages and a.mb < problem.m
    if a.kind in ("I", "W") and (a.stage, a.mb) in fused and known:
        return f"the orders also run this backward whole as {Action('B', a.stage, a.mb)} (one B, or I and W)"
    kinds = "/".join(problem.kinds) + (", or B for I and W together" if problem.split else "")
    unsplit = "; I and W need a split problem" if a.kind in ("I", "W") and not problem.split else ""
    return (f"not a task of {counted(problem.num_stages, 'stage')} x "
            f"{counted(problem.m, 'microbatch', 'microbatches')} ({kinds}{unsplit})")


def build_dag(problem: Problem, fused: Fused = NONE_FUSED) -> nx.DiGraph:
    """The task DAG: nodes with duration and memory delta, edges with communication lag. networkx is
    imported here, not with the module: it took 0.15 s of a 1.8 s headline solve, which needs only
    ``task_index`` (``solvers.paths``)."""
    import networkx as nx

    fused = _checked(problem, fused, "build_dag")
    graph = nx.DiGraph()
    for task in tasks(problem, fused):
        graph.add_node(
            task,
            duration=problem.duration(task.kind, task.stage),
            mem=problem.mem_delta(task.kind),
            rank=problem.stage_rank[task.stage],
        )
    for task in list(graph.nodes):
        for dep in dependencies(problem, task, fused):
            graph.add_edge(dep, task, lag=lag(problem, dep, task))
    return graph


@dataclass(frozen=True, eq=False)
class TaskIndex:
    """The task DAG numbered for hot loops. Times are integers in units of ``1 / scale``."""

    actions: tuple[Action, ...]
    """Task id -> action (the order of ``tasks``)."""
    ids: Mapping[Action, int]
    """Action -> task id, read-only: the index is cached and shared, and a caller that swapped two ids
    made every later replay of the problem wrong (a reviewer's 1F1B ended at 9, not 8)."""
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


def task_index(problem: Problem, fused: Fused = NONE_FUSED) -> TaskIndex:
    """The numbered DAG from ``tasks``, ``dependencies`` and ``lag``, built once per problem and
    fused set (one cache key however ``fused`` is passed)."""
    return cached_index(problem, _checked(problem, fused, "task_index"))


def _checked(problem: object, fused: object, what: str) -> Fused:
    """The public entry points' arguments as one-line errors (``build_dag(None)`` was an
    AttributeError, ``fused=3`` a TypeError): a Problem, and (stage, microbatch) integer pairs,
    numpy's integers read as ints."""
    if not isinstance(problem, Problem):
        raise ArgumentError(f"{what} needs a Problem, got {type(problem).__name__}")
    if isinstance(fused, (str, bytes)) or not isinstance(fused, Iterable):
        raise ArgumentError(f"{what}: fused must be a set of (stage, microbatch) pairs, got "
                            f"{type(fused).__name__}")
    pairs = []
    for x in fused:
        if not (isinstance(x, tuple | list) and len(x) == 2 and
                all(isinstance(i, Integral) and not isinstance(i, bool) for i in x)):
            raise ArgumentError(f"{what}: fused must be a set of (stage, microbatch) pairs, holding "
                                f"{shown(x)}")
        pairs.append((int(x[0]), int(x[1])))
    return frozenset(pairs)


@lru_cache(maxsize=8)
def cached_index(problem: Problem, fused: Fused) -> TaskIndex:
    """``task_index`` for callers whose arguments are a Problem and a frozenset of int pairs already
    (the simulator's, on every replay, from ``fused_backwards``): checking them cost a replay of a
    plan with 4,096 fused B's 21% (a reviewer's)."""
    return build_index(problem, fused)


def build_index(problem: Problem, fused: Fused = NONE_FUSED) -> TaskIndex:
    """``task_index`` without its cache: for small throwaway problems (the one-microbatch DAG of
    ``solvers.paths``), which would evict a large problem's index from it."""
    actions = tuple(tasks(problem, fused))
    ids = {a: t for t, a in enumerate(actions)}
    kinds = problem.kinds + (("B",) if fused else ())
    kinds_stages = [(k, s) for k in kinds for s in range(problem.num_stages)]
    durations = {ks: problem.duration(*ks) for ks in kinds_stages}
    scale = problem.time_scale  # a fused B (I + W) is integral in it too
    units = {ks: int(d * scale) for ks, d in durations.items()}
    preds = tuple(tuple(ids[d] for d in dependencies(problem, a, fused)) for a in actions)
    ticks = scaled_lags(problem, scale)
    succs: list[list[tuple[int, int]]] = [[] for _ in actions]
    for t, before in enumerate(preds):
        after = actions[t]
        for d in before:
            succs[d].append((t, ticks(actions[d], after)))
    return TaskIndex(
        actions=actions,
        ids=MappingProxyType(ids),
        rank=tuple(problem.stage_rank[a.stage] for a in actions),
        duration=tuple(units[a.kind, a.stage] for a in actions),
        preds=preds,
        succs=tuple(tuple(s) for s in succs),
        scale=scale,
    )
