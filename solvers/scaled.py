"""The problem in integers, per (stage, kind): what fast heuristics loop over.

Times are scaled by the lcm of every duration's and the latency's denominator, memory by v times
w_mem's denominator, so the hot loops compare ints and never build a Fraction. Tasks are numbered
``id = sk * m + mb`` with ``sk = stage * len(kinds) + kind index``. Dependencies are read from
``schedc.dag`` on the one-microbatch problem: every edge joins two tasks of the same microbatch
(checked here), so one table per (stage, kind) serves all microbatches.
"""

from __future__ import annotations

import math
from dataclasses import dataclass, replace
from fractions import Fraction
from functools import lru_cache

from schedc.actions import Action
from schedc.dag import dependencies, lag
from schedc.problem import Problem


@dataclass(frozen=True)
class Scaled:
    """The problem's tables in integer ticks and memory units (module doc): what the list engine
    and its priorities loop over."""

    problem: Problem
    time_scale: int
    """One time unit of the problem is this many ticks."""
    kinds: tuple[str, ...]
    dur: tuple[int, ...]
    """Ticks per (stage, kind), indexed by sk."""
    rank: tuple[int, ...]
    """Rank per sk."""
    preds: tuple[tuple[tuple[int, int], ...], ...]
    """(sk, lag ticks) per sk: the tasks of the same microbatch it waits for."""
    succs: tuple[tuple[tuple[int, int], ...], ...]
    delta: tuple[int, ...]
    """Memory change per sk in units (F: + at start; others: - at end)."""
    unit: int
    """Memory units of one stage activation; a rank's full activation is v * unit."""
    caps: tuple[int | None, ...]
    """Per rank, floor(cap in units): levels are integers, so level <= cap <=> level <= floor."""
    entry: tuple[int, ...]
    """Per rank: sk of the F on its first stage (where a microbatch enters the rank)."""

    @property
    def m(self) -> int:
        return self.problem.m

    @property
    def num_sk(self) -> int:
        return len(self.dur)

    def action(self, task: int) -> Action:
        sk, mb = divmod(task, self.problem.m)
        stage, k = divmod(sk, len(self.kinds))
        return Action(self.kinds[k], stage, mb)

    def sk_of(self, kind: str, stage: int) -> int:
        return stage * len(self.kinds) + self.kinds.index(kind)

    def ticks(self, value: int) -> Fraction:
        return Fraction(value, self.time_scale)


@lru_cache(maxsize=32)
def scaled(problem: Problem) -> Scaled:
    """The tables of ``problem``, cached: the list portfolio asks for them once per variant."""
    kinds = problem.kinds
    keys = [(s, k) for s in range(problem.num_stages) for k in kinds]
    durations = [problem.duration(k, s) for s, k in keys]
    scale = problem.time_scale
    sk = {key: i for i, key in enumerate(keys)}
    one = replace(problem, m=1, mem=())
    preds: list[list[tuple[int, int]]] = [[] for _ in keys]
    succs: list[list[tuple[int, int]]] = [[] for _ in keys]
    for s, k in keys:
        task = Action(k, s, 0)
        for dep in dependencies(one, task):
            assert dep.mb == task.mb, "a dependency joins two microbatches"
            ticks = int(lag(one, dep, task) * scale)
            preds[sk[s, k]].append((sk[dep.stage, dep.kind], ticks))
            succs[sk[dep.stage, dep.kind]].append((sk[s, k], ticks))
    mem_den = problem.w_mem.denominator
    unit = mem_den
    delta = [int(problem.mem_delta(k) * problem.v * mem_den) for _, k in keys]
    caps = tuple(None if c is None else math.floor(c * problem.v * mem_den) for c in problem.mem)
    return Scaled(
        problem=problem,
        time_scale=scale,
        kinds=kinds,
        dur=tuple(int(d * scale) for d in durations),
        rank=tuple(problem.stage_rank[s] for s, _ in keys),
        preds=tuple(tuple(x) for x in preds),
        succs=tuple(tuple(x) for x in succs),
        delta=tuple(delta),
        unit=unit,
        caps=caps,
        entry=tuple(sk[problem.rank_stages[r][0], "F"] for r in range(problem.p)),
    )
