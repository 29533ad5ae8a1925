"""Analytic lower bounds on the makespan and on the largest per-rank span, valid for every schedule
within the caps (terms 1 and 2 hold for every schedule; terms 3, 4 and 5 use the caps).

All terms are computed per (kind, stage), not per task: every dependency joins two tasks of the same
microbatch with a lag that depends only on their stages, so the longest paths of one microbatch are
the same for all microbatches. They are read from the DAG of the one-microbatch problem, which
``schedc.dag`` builds from the one set of dependency rules.

Notation: time 0 is the schedule's first start S (makespan T = last end - S); ``head(a)`` is the
longest path from any source's start to a's start, ``tail(a)`` the longest path of lags and
durations after a's end. By induction over the DAG every task a starts at >= S + head(a), and the
last end is >= end(a) + tail(a).

Terms of ``lower_bound`` (each a valid bound, so their maximum is):

1. Critical path: max over tasks of head + duration + tail.
2. One rank, preemptive (Jackson / Carlier): for any set J of rank r's tasks, they run one at a time,
   none starts before min head(J), and after the last of them ends its tail (>= min tail(J)) still
   elapses: T >= min head(J) + sum duration(J) + min tail(J). We try every J = {head >= h0, tail >= q0}
   (the sets that matter: adding a task that does not lower either minimum only adds work).
3. Activation cap, throughput: a stage activation of (s, i) is allocated at F(s, i)'s start and fully
   alive until I(s, i) (B when unsplit) ends, at least the round trip RT(s) = longest path from F(s)'s
   start to I(s)'s end; the W share (w_mem) lives on until W ends, at least tw(s) longer. Rank r's memory
   level (in units of its full activation, each stage 1/v) integrates over time to at least
   m * sum_s (1/v) * (RT(s) + w_mem * tw(s)), and it is <= cap_r at all times and 0 outside
   [first F start on r, last release on r], a window of at most T - head(F on r) - min tail(releasers).
   Counting instead the fully alive activations n(t), an integer with n(t)/v <= level <= cap_r, gives
   n(t) <= floor(cap_r * v) over [first F start, last I end]: T >= head + m * sum RT(s) / floor(v cap_r)
   + min tail(I on r), stronger when v * cap_r is not an integer. Neither sits at the cap for the
   whole window: it fills one forward at a time and empties one release at a time, and those ramps
   lengthen both windows (``memory_ramps``; p=8 m=32 v=4 cap 3: 108 -> 112.125).
4. Cap, sequence: the last-stage forward starts a cap allows, by recursion over microbatches
   (``cap_sequence``); stronger than 3 where releases must precede a later F (tight caps).
5. Cap, warm-up and cool-down: no task of rank r but a forward starts before S0 = the least head of
   r's other tasks, so nothing on r is freed before S0 (frees come at the ends of I, W or B) and the
   forwards started before S0 all fit under the cap together: at most K = floor(cap_r v) of them
   (each allocates 1/v). Before S0 rank r works at most E = min(S0 - head of its first F, its K
   longest forwards). At the other end, every F of r starts by T - Q0, Q0 = least duration + tail
   of r's forwards; what runs after that is at most one forward already started and the releases of
   activations open at T - Q0, which fit under the cap: at most A = the most work that
   n_I activations awaiting I (1/v each, I + W to run; B unsplit) and n_W awaiting only W (w/v each)
   carry with n_I / v + n_W w / v <= cap_r. If work(r) > E + A, the two ends cannot cover [0, T]
   (all of r's work would fit in them), so T - Q0 >= S0 and, one task at a time in between,
   T >= S0 + work(r) - E - A + Q0. Always T >= S0 + work(r) - E + min tail over r's tasks.
   Looped v = 2, p = 16, cap 8, all costs 0.5: rank 0 frees nothing before I(16, 0) starts at 23.5,
   16 forwards fill its cap (E = 8), its last F is followed by 24 of tail (Q0 = 24.5) and 16 open
   activations carry A = 16.5: 23.5 + 96 - 8 - 16.5 + 24.5 = 119.5, where terms 1-4 give 107.
6. Span: T >= max span (every rank's span lies within [S, S + T]), so ``span_lower_bound`` too; but
   it never exceeds terms 2-5, whose global heads and tails are at least the rank-relative ones
   (head(a) >= head(F(s_1)) + h_r(a) >= h_r(a), tail(a) >= t_r(a)), so ``lower_bound`` skips it.

``span_lower_bound``: rank r's span runs from its first start t0 to its last end L. Every task of r
belongs to a microbatch that entered r with F(s_1) (r's first stage) at or after t0, so it starts at
>= t0 + h_r(a), h_r the longest path from F(s_1)'s start; and L >= end(a) + t_r(a), t_r the longest
path from a's end to the end of a later task on rank r. Terms 2, 3 and 5 then hold for L - t0 with h_r
and t_r in place of head and tail (h_r(F(s_1)) = 0); term 4 too, from the rank's first start.
"""

from __future__ import annotations

import math
from fractions import Fraction
from functools import lru_cache

from schedc.actions import Action
from schedc.problem import Problem
from schedc.solvers.cap_sequence import sequence_bound
from schedc.solvers.memory_ramps import Ramps
from schedc.solvers.paths import Key, StagePaths, stage_paths

__all__ = ["Key", "StagePaths", "heads_and_tails", "lower_bound", "span_lower_bound", "stage_paths"]


def heads_and_tails(problem: Problem) -> tuple[dict[Action, Fraction], dict[Action, Fraction]]:
    """Per task: the earliest start with unlimited ranks (head) and the longest chain of work and
    latency that must follow its end (tail). Both are longest paths in the task DAG."""
    paths = stage_paths(problem)
    head = {Action(k, s, i): t for (k, s), t in paths.head.items() for i in range(problem.m)}
    tail = {Action(k, s, i): t for (k, s), t in paths.tail.items() for i in range(problem.m)}
    return head, tail


def critical_path(problem: Problem) -> Fraction:
    """One microbatch alone through every stage and back (term 1)."""
    paths = stage_paths(problem)
    return max(t + problem.duration(k, s) + paths.tail[k, s] for (k, s), t in paths.head.items())


def _rank_keys(problem: Problem, r: int) -> list[Key]:
    return [(k, s) for s in problem.rank_stages[r] for k in problem.kinds]


def jackson(groups: list[tuple[Fraction, Fraction, Fraction]]) -> Fraction:
    """Term 2 over groups (head, total duration, tail): max over J of min head + work + min tail.
    For each least tail q0, a sweep down the heads adds each group's work once: over every pair of
    head and tail, summing anew, it took 49 s for p=1 m=3 v=100 (300 groups on the rank)."""
    best = Fraction(0)
    by_head = sorted(groups, key=lambda group: group[0], reverse=True)
    for q0 in {q for _, _, q in groups}:
        work, some = Fraction(0), False
        for k, (h, w, q) in enumerate(by_head):
            if q >= q0:
                work, some = work + w, True
            if some and (k + 1 == len(by_head) or by_head[k + 1][0] != h):  # every group of head >= h in
                best = max(best, h + work + q0)
    return best


def rank_bound(problem: Problem) -> Fraction:
    """Term 2 on every rank, with global heads and tails."""
    paths = stage_paths(problem)
    return max(
        jackson([(paths.head[key], problem.m * problem.duration(*key), paths.tail[key])
                 for key in _rank_keys(problem, r)])
        for r in range(problem.p)
    )


def rank_terms(problem: Problem, r: int) -> tuple[Fraction, Fraction, Fraction, Fraction]:
    """Terms 2, 3, 4 and 5 on rank r alone, with global heads and tails: how much rank r bounds the
    makespan by itself (``relaxation`` relaxes the strongest ranks first)."""
    paths = stage_paths(problem)
    groups = [(paths.head[key], problem.m * problem.duration(*key), paths.tail[key])
              for key in _rank_keys(problem, r)]
    return (jackson(groups), *_cap_terms(problem, r))


def _cap_terms(problem: Problem, r: int) -> tuple[Fraction, Fraction, Fraction]:
    """Terms 3, 4 and 5 on rank r, with global heads and tails."""
    paths = stage_paths(problem)
    return (memory_bound(problem, r, paths.head, paths.tail), sequence_bound(problem, r, relative=False),
            warmup_bound(problem, r, paths.head, paths.tail))


def _releasers(problem: Problem) -> tuple[str, ...]:
    """Kinds whose end frees activation memory (a zero delta frees nothing)."""
    return tuple(k for k in problem.kinds if k != "F" and problem.mem_delta(k) != 0)


def memory_window(problem: Problem, r: int) -> tuple[Fraction, Fraction] | None:
    """Term 3 for rank r: (time the level must spend, time the fully alive count must spend) at the
    cap; None when the rank has no cap."""
    cap = problem.mem[r]
    if cap is None:
        return None
    paths, v, m = stage_paths(problem), problem.v, problem.m
    stages = problem.rank_stages[r]
    alive = m * sum((paths.round_trip[s] for s in stages), Fraction(0))
    pending = m * sum((problem.duration("W", s) for s in stages), Fraction(0)) if problem.split else 0
    level_time = (alive + problem.w_mem * pending) / (v * cap)
    slots = math.floor(v * cap)
    count_time = alive / slots if slots >= 1 else Fraction(0)
    return level_time, count_time


def memory_bound(problem: Problem, r: int, head: dict[Key, Fraction], tail: dict[Key, Fraction]) -> Fraction:
    """Term 3 on rank r with the given heads and tails (global or rank-relative), its windows
    lengthened by the ramps at their ends (``memory_ramps``)."""
    if problem.mem[r] is None:  # no cap: no window (``memory_window``)
        return Fraction(0)
    level_time, count_time = _ramped(problem, r)
    stages = problem.rank_stages[r]
    start = min(head["F", s] for s in stages)
    back = "I" if problem.split else "B"
    release_tail = min(tail[k, s] for s in stages for k in _releasers(problem))
    alive_tail = min(tail[back, s] for s in stages)
    return max(start + level_time + release_tail, start + count_time + alive_tail)


@lru_cache(maxsize=256)
def _ramped(problem: Problem, r: int) -> tuple[Fraction, Fraction]:
    """Term 3's two windows on capped rank r, lengthened by the ramps (``memory_ramps``): the level
    fills by one forward's 1/v at a time and empties by one release at a time; the count of fully
    alive activations fills by one forward and empties by one I (or B) at a time. Cached: term 3
    runs with global and with rank-relative heads, on every rank, and for every baseline's plan."""
    level_time, count_time = memory_window(problem, r)
    stages, cap, tick = problem.rank_stages[r], problem.mem[r], Fraction(1, problem.time_scale)
    releasers = _releasers(problem)
    forward = min(problem.duration("F", s) for s in stages) or None
    frees = [-problem.mem_delta(k) / problem.duration(k, s) if problem.duration(k, s) else None
             for s in stages for k in releasers]
    rate = None if None in frees else max(frees)
    level = Ramps(cap, problem.stage_activation, forward, max(-problem.mem_delta(k) for k in releasers), rate)
    level_time = level.least_window(level_time * cap, tick)
    slots = math.floor(problem.v * cap)
    if slots < 1:
        return level_time, count_time
    back = min(problem.duration("I" if problem.split else "B", s) for s in stages)
    count = Ramps(Fraction(slots), Fraction(1), forward, Fraction(1), 1 / back if back else None)
    return level_time, count.least_window(count_time * slots, tick)


def warmup_bound(problem: Problem, r: int, head: dict[Key, Fraction], tail: dict[Key, Fraction]) -> Fraction:
    """Term 5 on rank r with the given heads and tails (global or rank-relative)."""
    cap, stages = problem.mem[r], problem.rank_stages[r]
    if cap is None:
        return Fraction(0)
    keys = _rank_keys(problem, r)
    release = min(head[k, s] for k, s in keys if k != "F")
    fitting = _longest_forwards(problem, stages, math.floor(cap / problem.stage_activation))
    early = min(release - min(head["F", s] for s in stages), fitting)
    work = problem.m * sum((problem.duration(*key) for key in keys), Fraction(0))
    last_forward = min(problem.duration("F", s) + tail["F", s] for s in stages)
    bound = release + work - early + min(tail[key] for key in keys)
    rest = work - early - _open_work(problem, r)
    return max(bound, release + rest + last_forward) if rest > 0 else bound


def _longest_forwards(problem: Problem, stages: tuple[int, ...], count: int) -> Fraction:
    """Total duration of the ``count`` longest forwards of these stages (m of each)."""
    total = Fraction(0)
    for duration in sorted((problem.duration("F", s) for s in stages), reverse=True):
        take = min(count, problem.m)
        total, count = total + take * duration, count - take
    return total


EXACT_OPEN_WORK = 10_000
"""Up to this many open activations ``_open_work`` tries every split; above, a concave relaxation."""


def _open_work(problem: Problem, r: int) -> Fraction:
    """A of term 5: the most work that can run on rank r after its last forward has started."""
    stages, cap, v, w = problem.rank_stages[r], problem.mem[r], problem.v, problem.w_mem
    forward = max(problem.duration("F", s) for s in stages)
    total = problem.m * len(stages)
    most = min(total, math.floor(cap * v))  # activations awaiting I (or B), 1/v each
    if not problem.split:
        return forward + most * max(problem.duration("B", s) for s in stages)
    both = max(problem.duration("I", s) + problem.duration("W", s) for s in stages)
    weight = max(problem.duration("W", s) for s in stages)

    def carried(n_i: Fraction, exact: bool) -> Fraction:
        room = (cap * v - n_i) / w if w else Fraction(total)  # W-only activations hold w/v each
        n_w = min(total - n_i, math.floor(room) if exact else room)
        return n_i * both + n_w * weight

    if most <= EXACT_OPEN_WORK:
        return forward + max(carried(Fraction(n), True) for n in range(most + 1))
    # without the floor, carried is concave in n_i: its largest value is at an end or at the kink
    kinks = [(cap * v - w * total) / (1 - w)] if 0 < w < 1 else []
    points = [Fraction(0), Fraction(most), *(min(max(k, Fraction(0)), Fraction(most)) for k in kinks)]
    return forward + max(carried(n, False) for n in points)


def cap_bound(problem: Problem) -> Fraction:
    """Terms 3, 4 and 5 on every rank."""
    return max(max(_cap_terms(problem, r)) for r in range(problem.p))


def span_lower_bound(problem: Problem) -> Fraction:
    """A lower bound on the largest per-rank span (see the module doc)."""
    paths = stage_paths(problem)
    best = Fraction(0)
    for r in range(problem.p):
        h, t = paths.rank_head[r], paths.rank_tail[r]
        groups = [(h[key], problem.m * problem.duration(*key), t[key]) for key in _rank_keys(problem, r)]
        best = max(best, jackson(groups), memory_bound(problem, r, h, t),
                   sequence_bound(problem, r, relative=True), warmup_bound(problem, r, h, t))
    return best


def lower_bound(problem: Problem) -> Fraction:
    """The largest of terms 1-5: a lower bound on the makespan of every schedule within the caps
    (see the module doc)."""
    return max(critical_path(problem), rank_bound(problem), cap_bound(problem))


def objective_bound(problem: Problem, objective: str) -> Fraction:
    """The analytic bound on ``objective`` ("makespan" or "span"): valid for every schedule within
    the caps, so a plan's claimed bound up to it needs no search to back it."""
    return lower_bound(problem) if objective == "makespan" else span_lower_bound(problem)
