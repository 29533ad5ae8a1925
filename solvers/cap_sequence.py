"""A lower bound from the sequence of last-stage forward starts that a cap allows.

Take rank r with stages s_1 < ... < s_v and cap c (in units of a full activation; each stage 1/v).
Relabel microbatches so that on every (stage, kind) they run in index order (lossless, see
``tests/exhaustive.py``: makespan, spans and memory do not change). Let f_j be the start of
F(s_v, j), the last forward of microbatch j on r.

Releases. Each activation of r is freed by "release streams": per stage s_k the end of I(s_k) frees
(1 - w)/v and the end of W(s_k) frees w/v (w = w_mem; unsplit: B frees 1/v). The ends of one stream
are increasing in the microbatch index, and microbatch i's is at least f_i + D, D the longest path
from F(s_v)'s start to that task's end (every release of i on r follows F(s_v, i): the backward of
s_k < s_v waits for that of s_v).

The cap at f_j. Just before F(s_v, j) allocates, microbatch j holds (v - 1)/v (its earlier stages,
none freed: their backward waits for F(s_v, j)), so all other microbatches together hold <= c - 1.
A microbatch i < j has allocated all v activations, so it holds at least the weights of the streams
whose (s_k, kind) task has not ended by f_j. Those that ended by f_j form a prefix of each stream, at
most #{i < j : f_i + D <= f_j} long. So, with lower bounds L_i <= f_i for i < j, the held amount
deficit(t) = sum over streams of weight * (j - #{i < j : L_i + D <= t}) is <= what is held at
t = f_j, and f_j can be no earlier than the first t with deficit(t) <= c - 1 (deficit only falls
with t). With the floors f_j >= f_{j-1} + tf(s_v) (one rank) and f_j >= j tf(q) + head(F(s_v)) -
head(F(q)) for q <= s_v (the j earlier F's of stage q run first on its rank, then the forward chain),
this gives lower bounds L_j <= f_j by induction, and the makespan is >= L_{m-1} + tf(s_v) +
tail(F(s_v)).

For the span of rank r, time starts at r's first start t0: F(q, j) >= t0 + j tf(q) for q on r, the
heads and the tail become rank-relative (``StagePaths.rank_head``, ``rank_tail``).

With v = 1 and cap 1, for example, every W of microbatch i must end before F(j > i): the bound is
m times the round trip plus tw, exact for one rank.
"""

from __future__ import annotations

import math
from fractions import Fraction

from schedc.exact import lcm_denominator
from schedc.problem import Problem
from schedc.solvers.paths import stage_paths


def sequence_bound(problem: Problem, r: int, relative: bool) -> Fraction:
    """The bound above for rank r in problem time units (0 without a cap): the makespan bound, or
    with ``relative`` the bound on rank r's span."""
    cap = problem.mem[r]
    if cap is None or cap < 1:
        return Fraction(0)
    paths = stage_paths(problem)
    stages = problem.rank_stages[r]
    last = stages[-1]
    dist = paths.from_forward[last]
    streams = _streams(problem, stages, dist)
    if relative:
        heads = {q: paths.rank_head[r]["F", q] for q in stages}
        tail = paths.rank_tail[r]["F", last]
    else:
        heads = {q: paths.head["F", q] for q in range(last + 1)}
        tail = paths.tail["F", last]
    tf = {q: problem.duration("F", q) for q in heads}
    scale = lcm_denominator([*(d for _, d in streams), *heads.values(), *tf.values()])
    den = problem.w_mem.denominator
    room = math.floor(cap * problem.v * den) - problem.v * den  # what the others may hold, in 1/(v den)
    ints = [(weight, int(d * scale)) for weight, d in streams]
    floors = [(int(tf[q] * scale), int((heads[last] - heads[q]) * scale)) for q in heads]
    starts = _starts(problem.m, ints, room, floors, int(tf[last] * scale))
    return Fraction(starts[-1], scale) + tf[last] + tail


def _streams(problem: Problem, stages: tuple[int, ...], dist) -> list[tuple[int, object]]:
    """(weight in 1/(v den) units, D) per release stream of the rank's stages."""
    den = problem.w_mem.denominator
    w = (problem.w_mem * den).numerator
    out = []
    for s in stages:
        if not problem.split:
            out.append((den, dist["B", s] + problem.duration("B", s)))
            continue
        out.append((den - w, dist["I", s] + problem.duration("I", s)))
        out.append((w, dist["W", s] + problem.duration("W", s)))
    return [(weight, d) for weight, d in out if weight]


def _starts(m: int, streams: list[tuple[int, int]], room: int, floors: list[tuple[int, int]],
            tf: int) -> list[int]:
    """L_0..L_{m-1}. The first fitting t never decreases with j (one more microbatch only adds to the
    deficit), so one pointer per stream walks its events L_i + D once: O(m * streams)."""
    lines: dict[int, int] = {}
    for step, offset in floors:
        lines[step] = max(offset, lines.get(step, offset))
    starts: list[int] = []
    passed = [0] * len(streams)  # per stream: how many of its events are <= t
    t = 0
    for j in range(m):
        t = max(t, *(j * step + offset for step, offset in lines.items()), starts[-1] + tf if starts else 0)
        while True:
            for k, (_, d) in enumerate(streams):
                while passed[k] < j and starts[passed[k]] + d <= t:
                    passed[k] += 1
            if sum(weight * (j - passed[k]) for k, (weight, _) in enumerate(streams)) <= room:
                break
            t = min(starts[passed[k]] + d for k, (_, d) in enumerate(streams) if passed[k] < j)
        starts.append(t)
    return starts
