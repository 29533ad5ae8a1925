"""A replay of a plan written from the model's definitions alone, without schedc's DAG or simulator,
so that the soundness fuzz does not check schedc's numbers with schedc's own code.

The model (docs/model.md): stage s runs on rank s mod p (looped) or, with two stages per rank in a
V, stages r and 2p-1-r on rank r. A stage's F costs tf / v (or its own cost), its I tb / v, its W
tw / v; an unsplit B costs tb + tw. F(s, j) needs F(s-1, j); the backward (I or B) of the last stage
needs its own F; that of stage s needs the backward of s+1 and F(s, j); W(s, j) needs I(s, j). A
dependency between stages on different ranks waits ``comm`` more. Each rank runs its order one task
at a time, each task as early as its rank and its inputs allow. Memory, in units of one microbatch's
activations through all a rank's layers: F adds 1/v at its start; I frees (1 - w_mem)/v, W w_mem/v
and B 1/v at their ends, so on one rank the peak is the largest prefix sum of its order.
"""

from __future__ import annotations

from fractions import Fraction


def replay(problem, orders) -> tuple[Fraction, tuple[Fraction, ...], tuple[Fraction, ...]]:
    """Makespan, per-rank spans (first start to last end) and per-rank peaks of ``orders``; a
    ValueError where the orders deadlock. Split problems' orders must not fuse I and W into a B."""
    stages = problem.p * problem.v
    rank_of = [_rank(problem, s) for s in range(stages)]
    end: dict[tuple[str, int, int], Fraction] = {}
    starts: list[list[Fraction]] = [[] for _ in orders]
    at = [0] * len(orders)
    free = [Fraction(0)] * len(orders)
    while any(at[r] < len(order) for r, order in enumerate(orders)):
        moved = False
        for r, order in enumerate(orders):
            while at[r] < len(order):
                kind, s, j = order[at[r]].kind, order[at[r]].stage, order[at[r]].mb
                ready = _ready(problem, rank_of, end, kind, s, j)
                if ready is None:
                    break
                start = max(free[r], ready)
                end[kind, s, j] = free[r] = start + _cost(problem, kind, s)
                starts[r].append(start)
                at[r] += 1
                moved = True
        if not moved:
            raise ValueError("the orders deadlock")
    ends = [free[r] for r in range(len(orders))]
    spans = tuple(ends[r] - starts[r][0] if starts[r] else Fraction(0) for r in range(len(orders)))
    return max(ends), spans, tuple(_peak(problem, order) for order in orders)


def _rank(problem, stage: int) -> int:
    if problem.placement == "vshape":
        return stage if stage < problem.p else 2 * problem.p - 1 - stage
    return stage % problem.p


def _cost(problem, kind: str, stage: int) -> Fraction:
    if problem.stage_costs is not None:
        c = problem.stage_costs[stage]
        tf, tb, tw = c.tf, c.tb, c.tw
    else:
        tf, tb, tw = problem.tf / problem.v, problem.tb / problem.v, problem.tw / problem.v
    return {"F": tf, "I": tb, "W": tw, "B": tb + tw}[kind]


def _ready(problem, rank_of: list[int], end: dict, kind: str, s: int, j: int) -> Fraction | None:
    """When the task's inputs are there (None: one is not done yet)."""
    last = problem.p * problem.v - 1
    back = "I" if problem.split else "B"
    if kind == "F":
        needs = [("F", s - 1, j)] if s > 0 else []
    elif kind == "W":
        needs = [("I", s, j)]
    else:
        needs = [("F", s, j)] + ([(back, s + 1, j)] if s < last else [])
    times = []
    for need in needs:
        if need not in end:
            return None
        times.append(end[need] + (problem.comm if rank_of[need[1]] != rank_of[s] else 0))
    return max(times, default=Fraction(0))


def _peak(problem, order) -> Fraction:
    unit = Fraction(1, problem.v)
    change = {"F": unit, "I": -(1 - problem.w_mem) * unit, "W": -problem.w_mem * unit, "B": -unit}
    held = peak = Fraction(0)
    for action in order:
        held += change[action.kind]
        peak = max(peak, held)
    return peak
