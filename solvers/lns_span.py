"""The span objective of an LNS window (``lns.py``): the largest per-rank span of the replay.

A rank's span is the end of its last task minus the start of its first. With the window's prefix
fixed and the suffix replayed as soon as possible in its order (``lns.py``'s argument), both ends
are exact functions of the free tasks' times:

- end of rank r = max(C_r, max over free a of end(a) + q_r(a)), where q_r(a) is the longest chain
  of suffix work and latency from a's end to the end of rank r's last task (-inf if none), q_r(a) >=
  0 on a's own rank, and C_r the end of rank r as far as it does not wait for the window;
- start of rank r: fixed when the rank has a prefix task; otherwise its first task is free or in
  the suffix, and we take the rank's earliest possible start (its head, ``paths.stage_paths``),
  which no replay can beat. The model's span of such a rank is then never below the replay's,
  and equal when the replay starts the rank at its head, as every ASAP plan whose first task on
  the rank is F of its lowest stage does when the stages before it also start at their heads.

So the window minimises max_r (end_r - start_r) = max(K, max over free a of end(a) + w(a)) with
w(a) = max_r (q_r(a) - start_r) and K = max_r (C_r - start_r): the makespan sub-model's shape with
other tails and constant. The claim is an upper bound of the replay's span (the replay starts every
task no later), which ``lns`` checks by replaying before it accepts a window.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

import numpy as np

from schedc.actions import Action
from schedc.solvers.lns_suffix import fixed_ready, suffix_order
from schedc.solvers.paths import stage_paths

if TYPE_CHECKING:
    from schedc.solvers.lns import _Replay

NONE = -(1 << 60)
"""No chain: far below any time, and safe to add a time to in int64."""


def rank_starts(rp: _Replay, before: dict[int, list[Action]]) -> list[int]:
    """Per rank, the start the sub-model counts from (see the module docstring)."""
    problem, heads = rp.problem, stage_paths(rp.problem).head
    return [rp.start[before[r][0]] if before[r]
            else min(int(heads["F", s] * rp.scale) for s in problem.rank_stages[r])
            for r in range(problem.p)]


def span_tails(rp: _Replay, free: set[Action], before: dict[int, list[Action]], prefix: set[Action],
               suffix: set[Action]) -> tuple[dict[Action, int], int]:
    """w(a) for the free tasks and K (see the module docstring)."""
    problem, p = rp.problem, rp.problem.p
    rank = {a: problem.stage_rank[a.stage] for a in rp.start}
    order = suffix_order(rp, suffix)
    tail: dict[Action, np.ndarray] = {}

    def chain(nxt: list[tuple[Action, int]]) -> np.ndarray:
        vec = np.full(p, NONE, dtype=np.int64)
        for u, g in nxt:
            np.maximum(vec, tail[u] + (g + rp.dur[u]), out=vec)
        return vec

    for a in order.latest_first:
        vec = chain(order.successors(rp, a))
        vec[rank[a]] = max(vec[rank[a]], 0)
        tail[a] = vec
    starts = np.array(rank_starts(rp, before), dtype=np.int64)
    w: dict[Action, int] = {}
    for a in free:
        vec = chain(order.entries(rp, a, suffix))
        vec[rank[a]] = max(vec[rank[a]], 0)
        w[a] = int(np.max(np.where(vec > NONE, vec - starts, NONE)))
    ends = np.full(p, NONE, dtype=np.int64)
    for r, tasks in before.items():
        if tasks:
            ends[r] = max(ends[r], max(rp.end[a] for a in tasks))
    free_ranks = {rank[a] for a in free}
    for u in suffix:
        ready = fixed_ready(rp, order, u, prefix, before, free_ranks)
        if ready is not None:
            np.maximum(ends, tail[u] + (ready + rp.dur[u]), out=ends)
    constant = int(np.max(np.where(ends > NONE, ends - starts, NONE)))
    return w, max(constant, 0)
