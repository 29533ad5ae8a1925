"""Exhaustive search for the optimum of tiny problems (tests only): the ground truth for bounds.

Every plan is per-rank orders replayed as soon as possible (``simulate``). Sorting a replay's tasks by
start time (ties: by rank) gives a sequence in which each task starts exactly at
max(its rank's free time, its inputs' arrival), computed from the tasks before it. So a depth-first
search that appends, in every possible way, a task whose inputs are placed and whose start is not
before the previous one's reaches every replay of every order, and the best one is the optimum.

Symmetry (lossless): within one (stage, kind), microbatches are placed in increasing index order.
Given any schedule, give the k-th earliest start of each (stage, kind) to microbatch k: every edge
joins tasks of one microbatch with a lag and durations that depend on stage and kind only, and the
k-th smallest of values that dominate others pointwise dominates their k-th smallest, so every
dependency still holds; each rank keeps the same busy intervals and memory steps, so makespan, spans
and peaks are unchanged.
"""

from __future__ import annotations

from fractions import Fraction

from schedc.problem import Problem
from schedc.solvers.paths import stage_paths
from schedc.solvers.scaled import scaled


def optimum(problem: Problem, objective: str = "makespan", upper: Fraction | None = None) -> Fraction | None:
    """The smallest makespan (or largest per-rank span) of any order that fits the caps; None if
    no order fits. ``upper``, a value some schedule reaches, only speeds the search up."""
    sc = scaled(problem)
    m, nsk, p = sc.m, sc.num_sk, problem.p
    paths = stage_paths(problem)
    nk = len(sc.kinds)
    tail = [int(paths.tail[sc.kinds[sk % nk], sk // nk] * sc.time_scale) for sk in range(nsk)]
    rest = [0] * p
    for sk in range(nsk):
        rest[sc.rank[sk]] += m * sc.dur[sk]
    state = _State(sc, tail, rest, objective)
    best = None if upper is None else int(upper * sc.time_scale) + 1
    found = state.search(best)
    return None if found is None else Fraction(found, sc.time_scale)


class _State:
    def __init__(self, sc, tail, rest, objective):
        self.sc, self.tail, self.rest, self.span = sc, tail, rest, objective == "span"
        p = sc.problem.p
        self.next = [0] * sc.num_sk
        self.end = [0] * (sc.num_sk * sc.m)
        self.free, self.first, self.level = [0] * p, [-1] * p, [0] * p
        self.best = None

    def value(self) -> int:
        if self.span:
            return max(f - s for f, s in zip(self.free, self.first, strict=True))
        return max(self.free)

    def bound(self, last: int) -> int:
        sc, lb = self.sc, 0
        for r, work in enumerate(self.rest):
            if work and self.span and self.first[r] < 0:
                lb = max(lb, work)  # not started: its span is at least its work
            elif work:
                lb = max(lb, max(self.free[r], last) + work - (self.first[r] if self.span else 0))
            elif self.span:
                lb = max(lb, self.free[r] - self.first[r])
        if not self.span:
            for sk in range(sc.num_sk):
                if self.next[sk] < sc.m:
                    lb = max(lb, last + sc.dur[sk] + self.tail[sk])
        return lb

    def search(self, best: int | None, last: int = 0, last_rank: int = 0, placed: int = 0) -> int | None:
        sc = self.sc
        if placed == sc.num_sk * sc.m:
            return self.value()
        if best is not None and self.bound(last) >= best:
            return best
        for sk in range(sc.num_sk):
            mb, r = self.next[sk], sc.rank[sk]
            if mb == sc.m or any(self.next[psk] <= mb for psk, _ in sc.preds[sk]):
                continue
            start = max([self.free[r], *(self.end[psk * sc.m + mb] + lag for psk, lag in sc.preds[sk])])
            if start < last or (start == last and r < last_rank):
                continue
            cap, delta = sc.caps[r], sc.delta[sk]
            if delta > 0 and cap is not None and self.level[r] + delta > cap:
                continue
            best = self._place(sk, mb, r, start, best, placed)
        return best

    def _place(self, sk, mb, r, start, best, placed):
        sc = self.sc
        saved = (self.free[r], self.first[r])
        self.next[sk] += 1
        self.end[sk * sc.m + mb] = self.free[r] = start + sc.dur[sk]
        if self.first[r] < 0:
            self.first[r] = start
        self.level[r] += sc.delta[sk]
        self.rest[r] -= sc.dur[sk]
        found = self.search(best, start, r, placed + 1)
        self.rest[r] += sc.dur[sk]
        self.level[r] -= sc.delta[sk]
        self.free[r], self.first[r] = saved
        self.next[sk] -= 1
        return found if best is None or (found is not None and found < best) else best
