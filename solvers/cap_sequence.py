"""A lower bound from the sequence of forward starts that a cap allows (one stage per rank).

Take a rank r with one stage s (v = 1) and cap c. Relabel microbatches so that on every (stage, kind)
they run in index order (lossless: see ``tests/exhaustive.py``; the makespan and memory do not
change). Write f_j for the start of F(s, j), e_j for the end of its I (B when unsplit), g_j for the
end of its W; all three are increasing in j, and by the longest paths of one microbatch
e_j >= f_j + RT and g_j >= e_j + tw (RT: F(s)'s start to I(s)'s end).

When F(s, j) starts, the tasks of rank r that ended by f_j precede it in r's order, the others follow
it. So the microbatches i < j whose I ended form a prefix of a of them, those whose W ended a prefix of
b <= a, and the level just before F(s, j) is j - (1 - w) a - w b (w = w_mem; unsplit: j - a). The F
fits only if that level + 1 <= c. Then, if a >= 1, f_j >= e_{a-1} >= f_{a-1} + RT, and if b >= 1,
f_j >= g_{b-1} >= f_{b-1} + RT + tw. Whatever (a, b) the schedule has, f_j is at least the smallest
over all (a, b) that fit of those maxima, computed from lower bounds of earlier f's (monotone in
them), so the recursion gives lower bounds L_j <= f_j. Also f_j >= f_{j-1} + tf(s) (one rank) and
f_j >= j tf(s') + head(F(s)) - head(F(s')) for every s' <= s (the j earlier F's of stage s' run
first on its rank, then the forward chain follows).

The makespan is then >= L_{m-1} + RT + max(tail(I(s)), tw). For the span of rank r, time starts at its
first start <= f_0: the same recursion from f_0 = 0 without the heads, and the tails within r.

For a given b the smallest a is fixed, the first maximand is nonincreasing in b and the second
nondecreasing, so the minimum sits where they cross: a binary search (O(m log m) per rank).
"""

from __future__ import annotations

import math
from fractions import Fraction

from schedc.exact import lcm_denominator
from schedc.problem import Problem
from schedc.solvers.paths import stage_paths


def sequence_bound(problem: Problem, r: int, heads: dict, tails: dict, relative: bool) -> Fraction:
    """The bound above for rank r (0 when it has no cap or more than one stage). ``heads`` and
    ``tails`` are global (makespan) or rank-relative (span, with ``relative``)."""
    cap = problem.mem[r]
    if cap is None or problem.v != 1 or cap < 1:
        return Fraction(0)
    (s,) = problem.rank_stages[r]
    paths = stage_paths(problem)
    back = "I" if problem.split else "B"
    tw = problem.duration("W", s) if problem.split else Fraction(0)
    tf = [problem.duration("F", q) for q in range(s + 1)]
    rt = paths.round_trip[s]
    scale = lcm_denominator([rt, tw, *tf, *(paths.head["F", q] for q in range(s + 1))])
    w = problem.w_mem if problem.split else Fraction(1)  # unsplit: B frees everything (as "a")
    den = w.denominator
    free_w = (w * den).numerator if problem.split else 0
    free_i = den - free_w if problem.split else den
    room = math.floor(cap * den)  # level (in 1/den units) + den <= cap * den
    starts = _starts(problem.m, int(rt * scale), int(tw * scale), int(tf[s] * scale), free_i, free_w, den,
                     room, _floors(problem, s, tf, paths, scale, relative))
    end_tail = max(tails[back, s], tw) if problem.split else tails[back, s]
    return Fraction(starts[-1], scale) + rt + end_tail


def _floors(problem, s, tf, paths, scale, relative):
    """Per j: the floor of f_j from the heads (0 relative to the rank's first start)."""
    tf_int = [int(t * scale) for t in tf]
    if relative:
        return lambda j: j * tf_int[s]
    head = [int(paths.head["F", q] * scale) for q in range(s + 1)]
    return lambda j: max(j * tf_int[q] + head[s] - head[q] for q in range(s + 1))


def _starts(m, rt, tw, tf, free_i, free_w, den, room, floor) -> list[int]:
    f: list[int] = []
    for j in range(m):
        best = floor(j) if not f else max(floor(j), f[-1] + tf)
        need = (j + 1) * den - room  # memory that earlier microbatches must have freed
        if need > 0:
            best = max(best, _cheapest(f, j, need, rt, tw, free_i, free_w))
        f.append(best)
    return f


def _cheapest(f, j, need, rt, tw, free_i, free_w) -> int:
    """min over b of max(f[a(b)-1] + rt, f[b-1] + rt + tw), a(b) the fewest I-ends that free ``need``."""
    inf = float("inf")

    def a_of(b: int) -> int | None:
        rest = need - free_w * b
        a = b if rest <= free_i * b else (math.ceil(rest / free_i) if free_i else None)
        return a if a is not None and a <= j else None

    def parts(b: int) -> tuple[float, float]:
        a = a_of(b)
        if a is None:
            return inf, -inf
        first = f[a - 1] + rt if a else -inf
        second = f[b - 1] + rt + tw if b else -inf
        return first, second

    lo, hi = 0, j  # find the first b where the second part reaches the first
    while lo < hi:
        mid = (lo + hi) // 2
        first, second = parts(mid)
        if second >= first:
            hi = mid
        else:
            lo = mid + 1
    candidates = [max(parts(b)) for b in (lo - 1, lo) if 0 <= b <= j]
    return int(min(candidates))
