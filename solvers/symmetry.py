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
kind), microbatch i start no later than i+1: fixing that order loses no optimum of the makespan. A
plan's span, though, is that of its orders' as-soon-as-possible replay, which the relabelled orders
can start earlier on a rank: the order can lose a span (``solvers.span_bound``).
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

Release frontiers (the same argument over a rank's stages). Let rank r hold stages s_0 < s_1 < ...
(layer order). When F(s_j, i) starts, every s_j' with j' <= j has started F(s_j', i) (the forward
chain), so it has allocated >= i+1 activations; its releases trail those of later stages (the
backward chain: I(s_j', x) needs I(s_j'+1, x)), so with k_j' I-ends and l_j' W-ends of s_j':
l_j' <= k_j' <= k_j'+1 <= ... <= k_j <= i. Writing deficits dk = i - k, dl = i - l, the level is
at least a * sum_j' (1 + (1-w) dk_j' + w dl_j'), which must stay <= c:
    sum_j' ((1-w) dk_j' + w dl_j') <= c/a - (j+1) =: D,   dl_j' >= dk_j' >= dk_j'+1 >= 0.
The actual deficits satisfy this iff they are dominated by a Pareto-maximal feasible vector (an
"option"), i.e. iff for some option every I(s_j', i - dk - 1) and W(s_j', i - dl - 1) has ended. So
F(s_j, i) starts no earlier than the earliest, over the options, of their last release. The options
do not depend on i (beyond clipping at 0). With one stage per rank this is exact: the level only
rises at F starts, and nothing but the stage's own releases counts.
"""

from __future__ import annotations

import math
from collections.abc import Iterator
from fractions import Fraction
from functools import lru_cache

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


def canonical_starts(timeline: Timeline) -> dict[Action, Fraction]:
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



MAX_OPTIONS = 16
"""Frontiers with more Pareto options (loose caps) are left out: they cost more than they prune."""
MAX_DEFICITS = 4000
"""Deficit vectors enumerated before the Pareto filter at most: a cap on the enumeration's work for
loose caps, whose vectors grow combinatorially; past it no frontier is stated and the rank keeps its
cumulative (``frontiers_exact``), as past MAX_OPTIONS."""


def frontier_options(problem: Problem, stage: int, i: int) -> list[tuple[Action, ...]] | None:
    """The options of the module docstring for F(stage, i): each a tuple of release tasks that must
    all have ended. None: no constraint (no cap, loose cap, or an option that needs nothing)."""
    r = problem.stage_rank[stage]
    j = problem.rank_stages[r].index(stage)
    deficits = _deficit_options(problem, r, j)
    if deficits is None:
        return None
    stages = problem.rank_stages[r][: j + 1]
    options: list[tuple[Action, ...]] = []
    for option in deficits:
        needs = tuple(Action(kind, stages[jj], i - d - 1) for (kind, jj), d in option if i - d - 1 >= 0)
        if not needs:
            return None
        options.append(needs)
    return _pareto_needs(options)


def frontiers_exact(problem: Problem, rank: int) -> bool:
    """Whether the release frontiers state the rank's cap in full (with one stage per rank, and the
    cap precedences): not where its options are too many to list (``MAX_OPTIONS``), so that none
    are stated (p=2 m=30 comm=12 tw=3 w_mem=1/2 cap 17: the model without a cumulative then took a
    schedule that peaks at 17.5)."""
    return problem.mem[rank] is None or _deficit_options(problem, rank, 0) is not None


def _pareto_needs(options: list[tuple[Action, ...]]) -> list[tuple[Action, ...]]:
    """Drops options that need at least as much as another one (same stage and kind, higher mb)."""
    def counts(option: tuple[Action, ...]) -> dict[tuple[str, int], int]:
        return {(a.kind, a.stage): a.mb for a in option}

    out = []
    for k, option in enumerate(options):
        mine = counts(option)
        dominated = any(
            all(mine.get(key, -1) >= mb for key, mb in counts(other).items())
            and (counts(other) != mine or n < k)
            for n, other in enumerate(options) if n != k
        )
        if not dominated:
            out.append(option)
    return out


def _components(problem: Problem) -> list[tuple[str, Fraction]]:
    """Release kinds and the share of a stage activation each frees. With w in {0, 1} one kind frees
    it all and the other nothing: only the first is kept (dropping constraints only weakens)."""
    w = problem.w_mem
    if not problem.split:
        return [("B", Fraction(1))]
    if w == 0:
        return [("I", Fraction(1))]
    if w == 1:
        return [("W", Fraction(1))]
    return [("I", 1 - w), ("W", w)]


@lru_cache(maxsize=256)
def _deficit_options(problem: Problem, rank: int, j: int
                     ) -> tuple[tuple[tuple[tuple[str, int], int], ...], ...] | None:
    """Pareto-maximal deficit vectors, as tuples of ((kind, j'), deficit); None if too many or no cap."""
    cap = problem.mem[rank]
    if cap is None:
        return None
    budget = cap / problem.stage_activation - (j + 1)
    comps = _components(problem)
    keys = [(kind, jj) for jj in reversed(range(j + 1)) for kind, _ in comps]
    weight = dict(comps)
    found: list[tuple[int, ...]] = []

    def extend(values: list[int], left: Fraction) -> None:
        if len(found) > MAX_DEFICITS:
            return
        if len(values) == len(keys):
            found.append(tuple(values))
            return
        kind, jj = keys[len(values)]
        lo = _lower(keys, values, kind, jj)
        hi = int(left // weight[kind]) if weight[kind] > 0 else lo
        for d in range(lo, hi + 1):
            before = len(found)
            extend([*values, d], left - weight[kind] * d)
            if len(found) == before:  # none completes with d, so none with a larger d (less left, higher
                break  # lower bounds after it), or there are too many: a tiny w_mem made hi about 1/w

    if budget < 0:
        return None
    extend([], budget)
    if len(found) > MAX_DEFICITS:
        return None
    maximal = _maximal(found)
    if maximal is None:
        return None
    return tuple(tuple(zip(keys, v, strict=True)) for v in maximal)


def _maximal(vectors: list[tuple[int, ...]]) -> list[tuple[int, ...]] | None:
    """The Pareto-maximal vectors in their given order, or None if there are more than MAX_OPTIONS.
    By decreasing sum, each vector is checked against the maximal ones so far only: a dominating
    vector has a larger sum, and it is maximal or dominated by a maximal one (of a larger sum still).
    Against all pairs this took 11 s for the 32 frontiers of p16-m32-v2-split-c1_2-mem16-eq."""
    maximal: list[int] = []
    for k in sorted(range(len(vectors)), key=lambda k: -sum(vectors[k])):
        v = vectors[k]
        if not any(all(x >= y for x, y in zip(vectors[o], v, strict=True)) for o in maximal):
            maximal.append(k)
            if len(maximal) > MAX_OPTIONS:
                return None
    return [vectors[k] for k in sorted(maximal)]


def _lower(keys: list[tuple[str, int]], values: list[int], kind: str, jj: int) -> int:
    """dl >= dk of the same stage; dk of a stage >= dk of the next stage on the rank."""
    lo = 0
    for (k2, j2), d in zip(keys, values, strict=False):
        if kind == "W" and k2 == "I" and j2 == jj:
            lo = max(lo, d)
        if kind in ("I", "B") and k2 == kind and j2 == jj + 1:
            lo = max(lo, d)
    return lo
