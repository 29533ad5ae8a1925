"""Exhaustive search for the optimum of tiny problems (tests only): the ground truth for bounds.

Every plan is per-rank orders replayed as soon as possible (``simulate``). Sorting a replay's tasks by
start time (ties: by rank) gives a sequence in which each task starts exactly at
max(its rank's free time, its inputs' arrival), computed from the tasks before it. So a depth-first
search that appends, in every possible way, a task whose inputs are placed and whose start is not
before the previous one's reaches every replay of every order, and the best one is the optimum.

Symmetry (lossless for the makespan): within one (stage, kind), microbatches are placed in
increasing index order. Given any schedule, give the k-th earliest start of each (stage, kind) to
microbatch k: every edge joins tasks of one microbatch with a lag and durations that depend on stage
and kind only, and the k-th smallest of values that dominate others pointwise dominates their k-th
smallest, so every dependency still holds; each rank keeps the same busy intervals and memory steps.
The replay of the relabelled orders then only moves tasks earlier: never a later makespan, but a
rank may start earlier and its span grow (``solvers.span_bound``), so the span search tries every
microbatch order.

Independence: the search reads only the problem model and the DAG rules (``schedc.problem``,
``schedc.dag``), never ``schedc.solvers``, so a bug in the solver's integer tables or longest paths
cannot leak into the ground truth the solver is checked against. ``table`` checks, rather than
assumes, that the dependencies are the same for every microbatch (what the symmetry above needs).
"""

from __future__ import annotations

import math
from collections.abc import Iterator
from dataclasses import dataclass
from fractions import Fraction
from graphlib import TopologicalSorter

from schedc.dag import dependencies, lag, tasks
from schedc.problem import Problem

Edge = tuple[int, int]
"""(index of a (stage, kind), lag in ticks)."""


@dataclass(frozen=True)
class Table:
    """The problem per (stage, kind) in integers, so the search never builds a Fraction.

    Index ``sk`` numbers the pairs (stage, kind) stage-major, kinds in ``problem.kinds`` order."""

    keys: tuple[tuple[int, str], ...]
    """(stage, kind) per sk."""
    p: int
    m: int
    scale: int
    """Ticks per time unit: the lcm of the denominators of every duration and lag."""
    dur: tuple[int, ...]
    rank: tuple[int, ...]
    preds: tuple[tuple[Edge, ...], ...]
    """Per sk: the tasks of the same microbatch it waits for."""
    delta: tuple[int, ...]
    """Memory change per sk in units of 1 / (lcm of the deltas' denominators): + at F's start, - at ends."""
    caps: tuple[int | None, ...]
    """Per rank, floor(cap in those units): levels are integers, so level <= cap <=> level <= floor."""
    tail: tuple[int, ...]
    """Per sk: longest path (lags plus durations, not its own) from its end to the end of any task of
    its microbatch; every such task ends at least this long after it."""

    @property
    def num_sk(self) -> int:
        return len(self.keys)


def table(problem: Problem) -> Table:
    """The per-(stage, kind) integer tables, from ``schedc.dag``'s rules on the whole problem."""
    keys = tuple((s, k) for s in range(problem.num_stages) for k in problem.kinds)
    index = {key: sk for sk, key in enumerate(keys)}
    durations = [problem.duration(k, s) for s, k in keys]
    rows: dict[int, tuple[tuple[int, Fraction], ...]] = {}
    for a in tasks(problem):
        deps = tuple(dependencies(problem, a))
        assert all(d.mb == a.mb for d in deps), f"{a} depends on another microbatch"
        row = tuple((index[d.stage, d.kind], lag(problem, d, a)) for d in deps)
        known = rows.setdefault(index[a.stage, a.kind], row)
        assert known == row, f"{a}'s dependencies depend on its microbatch"
    assert len(rows) == len(keys), "a (stage, kind) without tasks"
    lags = [t for row in rows.values() for _, t in row]
    scale = math.lcm(*(x.denominator for x in (*durations, *lags)))
    dur = tuple(int(d * scale) for d in durations)
    preds = tuple(tuple((psk, int(t * scale)) for psk, t in rows[sk]) for sk in range(len(keys)))
    unit = math.lcm(*(problem.mem_delta(k).denominator for k in problem.kinds))
    caps = tuple(None if c is None else math.floor(c * unit) for c in problem.mem)
    assert len(caps) == problem.p, "one cap (or None) per rank"
    return Table(
        keys=keys,
        p=problem.p,
        m=problem.m,
        scale=scale,
        dur=dur,
        rank=tuple(problem.stage_rank[s] for s, _ in keys),
        preds=preds,
        delta=tuple(int(problem.mem_delta(k) * unit) for _, k in keys),
        caps=caps,
        tail=_tails(dur, preds),
    )


def _tails(dur: tuple[int, ...], preds: tuple[tuple[Edge, ...], ...]) -> tuple[int, ...]:
    """Longest path from each task's end to the end of any task after it, successors first."""
    succs: list[list[Edge]] = [[] for _ in dur]
    for sk, row in enumerate(preds):
        for psk, ticks in row:
            succs[psk].append((sk, ticks))
    tail = [0] * len(dur)
    order = TopologicalSorter({sk: [psk for psk, _ in row] for sk, row in enumerate(preds)}).static_order()
    for sk in reversed(list(order)):
        tail[sk] = max((ticks + dur[u] + tail[u] for u, ticks in succs[sk]), default=0)
    return tuple(tail)


def span_searchable(problem: Problem) -> bool:
    """Whether the span search over every microbatch order ends in seconds: it grows with m! per
    (stage, kind). Measured: p=2 m=3 vshape unsplit uncapped (24 tasks) ran past 20 s, p=2 m=4
    unsplit (16 tasks) 10 s; at most 18 tasks and m = 3, 0.3 s."""
    return problem.m <= 3 and problem.num_tasks <= 18


def optimum(problem: Problem, objective: str = "makespan", upper: Fraction | None = None,
            index_order: bool | None = None) -> Fraction | None:
    """The smallest makespan (or largest per-rank span) of any order that fits the caps; None if
    no order fits. ``upper``, a value some schedule reaches, only speeds the search up.
    ``index_order``: only orders that run each (stage, kind)'s microbatches in index order (by
    default for the makespan, where it loses nothing; for spans it can, see above)."""
    tb = table(problem)
    rest = [0] * tb.p
    for sk in range(tb.num_sk):
        rest[tb.rank[sk]] += tb.m * tb.dur[sk]
    state = _State(tb, rest, objective, objective == "makespan" if index_order is None else index_order)
    best = None if upper is None else int(upper * tb.scale) + 1
    found = state.search(best)
    return None if found is None else Fraction(found, tb.scale)


class _State:
    """The partial sequence: per (stage, kind) the placed microbatches (a bit mask), per task its
    end, per rank its free time, first start, memory level and the work it has left."""

    def __init__(self, tb: Table, rest: list[int], objective: str, index_order: bool) -> None:
        self.tb, self.rest, self.span, self.index_order = tb, rest, objective == "span", index_order
        self.placed = [0] * tb.num_sk
        self.end = [0] * (tb.num_sk * tb.m)
        self.free, self.first, self.level = [0] * tb.p, [-1] * tb.p, [0] * tb.p

    def value(self) -> int:
        if self.span:
            return max(f - s for f, s in zip(self.free, self.first, strict=True))
        return max(self.free)

    def bound(self, last: int) -> int:
        """A lower bound on the value of every completion: no task left starts before ``last``."""
        tb, lb = self.tb, 0
        for r, work in enumerate(self.rest):
            if work and self.span and self.first[r] < 0:
                lb = max(lb, work)  # not started: its span is at least its work
            elif work:
                lb = max(lb, max(self.free[r], last) + work - (self.first[r] if self.span else 0))
            elif self.span:
                lb = max(lb, self.free[r] - self.first[r])
        if not self.span:
            for sk in range(tb.num_sk):
                if self.placed[sk] != (1 << tb.m) - 1:
                    lb = max(lb, last + tb.dur[sk] + tb.tail[sk])
        return lb

    def candidates(self, sk: int) -> Iterator[int]:
        """The microbatches of ``sk`` that may come next: the lowest not placed (in index order), or
        every one not placed."""
        for mb in range(self.tb.m):
            if not self.placed[sk] >> mb & 1:
                yield mb
                if self.index_order:
                    return

    def search(self, best: int | None, last: int = 0, last_rank: int = 0, placed: int = 0) -> int | None:
        tb = self.tb
        if placed == tb.num_sk * tb.m:
            return self.value()
        if best is not None and self.bound(last) >= best:
            return best
        for sk in range(tb.num_sk):
            r = tb.rank[sk]
            for mb in self.candidates(sk):
                if any(not self.placed[psk] >> mb & 1 for psk, _ in tb.preds[sk]):
                    continue
                start = max([self.free[r], *(self.end[psk * tb.m + mb] + lag for psk, lag in tb.preds[sk])])
                if start < last or (start == last and r < last_rank):
                    continue
                cap, delta = tb.caps[r], tb.delta[sk]
                if delta > 0 and cap is not None and self.level[r] + delta > cap:
                    continue
                best = self._place(sk, mb, r, start, best, placed)
        return best

    def _place(self, sk: int, mb: int, r: int, start: int, best: int | None, placed: int) -> int | None:
        tb = self.tb
        saved = (self.free[r], self.first[r])
        self.placed[sk] |= 1 << mb
        self.end[sk * tb.m + mb] = self.free[r] = start + tb.dur[sk]
        if self.first[r] < 0:
            self.first[r] = start
        self.level[r] += tb.delta[sk]
        self.rest[r] -= tb.dur[sk]
        found = self.search(best, start, r, placed + 1)
        self.rest[r] += tb.dur[sk]
        self.level[r] -= tb.delta[sk]
        self.free[r], self.first[r] = saved
        self.placed[sk] &= ~(1 << mb)
        return found if best is None or (found is not None and found < best) else best
