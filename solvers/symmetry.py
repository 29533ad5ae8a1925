"""Lossless symmetry breaking and cap-implied precedences for the CP-SAT model.

Microbatch order. Every edge of the task DAG joins two tasks of ONE microbatch, and its delay
(duration of the first task plus communication lag) depends only on the stages and kinds, never
on the microbatch; so do durations and memory deltas. Take any schedule and, for each (stage,
kind), hand out its start times in increasing order to microbatches 0, 1, ..., m-1. Precedences
survive: if x_i >= y_i + c for every i (successor x, predecessor y), then the k-th smallest x is
at least the k-th smallest y plus c (pointwise domination under a bijection implies domination of
the sorted sequences). Each rank runs the same multiset of intervals, so no two overlap and every
span, the makespan and the work are unchanged. Memory deltas depend on (stage, kind) only, so the
multiset of allocation times (F starts) and release times (I/W/B ends) per stage is unchanged and
the activation level at every instant is the same. Hence some optimum has, for every (stage,
kind), microbatch i start no later than i+1: fixing that order loses no optimum (makespan or span).
``canonical_starts`` performs this relabelling; the tests check it on random schedules.

Cap-implied precedences (valid under that order). Let a = 1/v be one stage's activation, w the
share W keeps after I, c the rank's cap. When F(s, i) starts, stage s alone holds (i+1)a minus its
releases; other stages hold >= 0. With k I-ends and l W-ends of stage s so far (l <= k <= i: I(s, i)
follows F(s, i)), the level is (i+1)a - k(1-w)a - l w a <= c, which needs
  k >= i + 1 - c/a           (else even releasing every I and W in full is not enough), and
  l >= i + (1 - c/a) / w     (even after every earlier I has released its share).
Microbatches release in order, so "k I-ends" means I(s, k-1) has ended: end(I(s, k-1)) <= start(F(s,
i)). Unsplit backward releases the whole activation: end(B(s, i - c/a)) <= start(F(s, i)). These are
consequences of the cap under the fixed order, so adding them removes no feasible schedule.
"""

from __future__ import annotations

import math
from collections.abc import Iterator
from fractions import Fraction

from schedc.actions import Action
from schedc.problem import Problem
from schedc.simulate import Timeline


def order_pairs(problem: Problem) -> Iterator[tuple[Action, Action]]:
    """(earlier, later): for every (stage, kind), microbatch i runs before microbatch i + 1."""
    for s in range(problem.num_stages):
        for kind in problem.kinds:
            for i in range(problem.m - 1):
                yield Action(kind, s, i), Action(kind, s, i + 1)


def cap_precedences(problem: Problem) -> Iterator[tuple[Action, Action]]:
    """(release, F): the release task must end before the F starts, or the rank exceeds its cap."""
    a, w = problem.stage_activation, problem.w_mem
    for s in range(problem.num_stages):
        cap = problem.mem[problem.stage_rank[s]]
        if cap is None:
            continue
        ratio = cap / a
        for i in range(problem.m):
            for kind, needed in _needed_releases(problem, i, ratio, w):
                if 0 < needed <= i:
                    yield Action(kind, s, needed - 1), Action("F", s, i)


def _needed_releases(problem: Problem, i: int, ratio: Fraction, w: Fraction) -> list[tuple[str, int]]:
    """How many releases of each kind stage s must have finished before F(s, i) may start."""
    if not problem.split:
        return [("B", math.ceil(i + 1 - ratio))]
    needed = [("I", math.ceil(i + 1 - ratio))]
    if w > 0:
        needed.append(("W", math.ceil(i + (1 - ratio) / w)))
    return needed


def canonical_starts(problem: Problem, timeline: Timeline) -> dict[Action, Fraction]:
    """The relabelling of the module docstring: per (stage, kind), the sorted start times handed to
    microbatches 0..m-1. The result satisfies ``order_pairs`` and is as good as ``timeline``."""
    by_group: dict[tuple[int, str], list[Fraction]] = {}
    for rank in timeline.slots:
        for slot in rank:
            by_group.setdefault((slot.action.stage, slot.action.kind), []).append(slot.start)
    return {
        Action(kind, s, i): t
        for (s, kind), times in by_group.items()
        for i, t in enumerate(sorted(times))
    }


def release_options(problem: Problem, stage: int, i: int) -> list[tuple[int, int]]:
    """The Pareto-minimal (k, l) with k I-ends and l W-ends of ``stage`` that leave room for F(stage,
    i) (module docstring: k(1-w) + l w >= i + 1 - c/a, l <= k <= i). F(stage, i) starts after the
    releases of at least one option, so after the earliest of the options' last releases."""
    cap = problem.mem[problem.stage_rank[stage]]
    if cap is None or not problem.split:
        return []
    need, w = i + 1 - cap / problem.stage_activation, problem.w_mem
    if need <= 0 or w in (0, 1):
        return []
    options: list[tuple[int, int]] = []
    for l in range(i + 1):
        k = max(l, math.ceil((need - l * w) / (1 - w)))
        if k > i or (options and k >= options[-1][0]):
            continue
        options.append((k, l))
        if k == l:
            break
    return options
