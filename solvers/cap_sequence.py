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

Release profile (a second test, same recursion). One rank runs microbatch i's release tasks one at a
time after F(s_v, i), none before its one-microbatch earliest start nor before its predecessors among
them; so by f_i + delta it has freed at most R(delta), the most any set of them that can end by then
frees (``release_profile``, a DP over subsets). As f_i >= L_i and R only grows, microbatch i holds at
least full - R(t - L_i) at t, and f_j is no earlier than the first t where those sum to <= c - 1.
This sees what the streams miss: a W and the next I of one microbatch cannot run at once.

For the span of rank r, time starts at r's first start t0: F(q, j) >= t0 + j tf(q) for q on r, the
heads and the tail become rank-relative (``StagePaths.rank_head``, ``rank_tail``).

With v = 1 and cap 1, for example, every W of microbatch i must end before F(j > i): the bound is
m times the round trip plus tw, exact for one rank.
"""

from __future__ import annotations

import math
from bisect import bisect_right
from fractions import Fraction

from schedc.actions import Action
from schedc.exact import lcm_denominator
from schedc.problem import Problem
from schedc.solvers.paths import FromForward, reaches, stage_paths


def sequence_bound(problem: Problem, r: int, relative: bool) -> Fraction:
    """The bound above for rank r in problem time units (0 without a cap): the makespan bound, or
    with ``relative`` the bound on rank r's span."""
    starts = forward_floors(problem, r, relative)
    if not starts:
        return Fraction(0)
    paths = stage_paths(problem)
    last = problem.rank_stages[r][-1]
    tail = paths.rank_tail[r]["F", last] if relative else paths.tail["F", last]
    return starts[-1] + problem.duration("F", last) + tail


def forward_floors(problem: Problem, r: int, relative: bool = False) -> tuple[Fraction, ...]:
    """L_0..L_{m-1} of the module doc: lower bounds on the start of F(s_v, j), the last forward of
    microbatch j on rank r, in every schedule whose microbatches run in index order (from time 0, or
    with ``relative`` from rank r's first start). Empty without a cap."""
    cap = problem.mem[r]
    if cap is None or cap < 1:
        return ()
    paths = stage_paths(problem)
    stages = problem.rank_stages[r]
    last = stages[-1]
    dist = paths.from_forward(last)
    streams = _streams(problem, stages, dist)
    if relative:
        heads = {q: paths.rank_head[r]["F", q] for q in stages}
    else:
        heads = {q: paths.head["F", q] for q in range(last + 1)}
    tf = {q: problem.duration("F", q) for q in heads}
    scale = lcm_denominator([*(d for _, d in streams), *heads.values(), *tf.values()])
    den = problem.w_mem.denominator
    room = math.floor(cap * problem.v * den) - problem.v * den  # what the others may hold, in 1/(v den)
    durations = [problem.duration(k, s) for s in stages for k in problem.kinds]
    scale = lcm_denominator([Fraction(1, scale), *durations])
    ints = [(weight, int(d * scale)) for weight, d in streams]
    floors = [(int(tf[q] * scale), int((heads[last] - heads[q]) * scale)) for q in heads]
    profile = release_profile(problem, r, scale)
    starts = _starts(problem.m, ints, room, floors, int(tf[last] * scale), profile, problem.v * den)
    return tuple(Fraction(t, scale) for t in starts)


def release_profile(problem: Problem, r: int, scale: int) -> tuple[tuple[int, ...], tuple[int, ...]]:
    """(deltas, amounts): by F(s_v)'s start + deltas[k] ticks one microbatch can have freed at most
    amounts[k] units on rank r (increasing; the last is everything). Rank r runs the microbatch's
    release tasks one at a time after F(s_v), none before its one-microbatch earliest start nor
    before its predecessors among them: the earliest end of every set of them, by DP over subsets."""
    stages = problem.rank_stages[r]
    dist = stage_paths(problem).from_forward(stages[-1])
    den = problem.w_mem.denominator
    units = problem.v * den
    tasks = [Action(k, s, 0) for s in stages for k in problem.kinds if k != "F"]
    if len(tasks) > 12:  # too many subsets: "everything may be freed at once" is a valid profile
        return (0,), (units,)
    index = {a: i for i, a in enumerate(tasks)}
    before = [sum(1 << index[d] for d in tasks if d != a and reaches(d, a)) for a in tasks]
    release = [int(dist[a.kind, a.stage] * scale) for a in tasks]
    length = [int(problem.duration(a.kind, a.stage) * scale) for a in tasks]
    freed = [-int(problem.mem_delta(a.kind) * units) for a in tasks]
    done = {0: int(problem.duration("F", stages[-1]) * scale)}
    for mask in range(1 << len(tasks)):  # every subset after all of its own subsets
        if mask not in done:
            continue
        for i in range(len(tasks)):
            if not mask >> i & 1 and before[i] & mask == before[i]:
                end = max(done[mask], release[i]) + length[i]
                grown = mask | 1 << i
                done[grown] = min(done.get(grown, end), end)
    points = sorted((end, sum(freed[i] for i in range(len(tasks)) if mask >> i & 1))
                    for mask, end in done.items())
    deltas, amounts, best = [], [], 0
    for end, amount in points:
        if amount > best:
            best = amount
            deltas.append(end)
            amounts.append(amount)
    return tuple(deltas), tuple(amounts)


def _streams(problem: Problem, stages: tuple[int, ...], dist: FromForward) -> list[tuple[int, Fraction]]:
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


def _starts(m: int, streams: list[tuple[int, int]], room: int, floors: list[tuple[int, int]], tf: int,
            profile: tuple[tuple[int, ...], tuple[int, ...]], full: int) -> list[int]:
    """L_0..L_{m-1}: each the first t that passes both tests (the streams' and the profile's). Neither
    first fitting t decreases with j (one more microbatch only adds to what is held), so t only
    moves forward; one pointer per stream walks its events L_i + D once."""
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
                later = _profile_fit(starts, t, room, profile, full)
                if later == t:
                    break
                t = later
                continue
            t = min(starts[passed[k]] + d for k, (_, d) in enumerate(streams) if passed[k] < j)
        starts.append(t)
    return starts


def _profile_fit(starts: list[int], t: int, room: int, profile: tuple[tuple[int, ...], tuple[int, ...]],
                 full: int) -> int:
    """The first t' >= t at which the microbatches before j hold at most ``room`` by the release
    profile: microbatch i holds at least full - amounts[k] at L_i + deltas[k] <= t' < the next delta."""
    deltas, amounts = profile
    longest = deltas[-1]
    while True:
        held, upcoming = 0, math.inf
        i = len(starts) - 1
        while i >= 0 and starts[i] + longest > t:
            k = bisect_right(deltas, t - starts[i])
            held += full - (amounts[k - 1] if k else 0)
            upcoming = min(upcoming, starts[i] + deltas[k])
            i -= 1
        if held <= room:
            return t
        t = upcoming
