"""Shared hypothesis strategies: random small problems (p 1-6, m 1-12, v 1-3, costs, per-rank or
shared caps, comm), and smaller ones for comparisons with exhaustive search."""

from __future__ import annotations

from fractions import Fraction

from hypothesis import strategies as st

from schedc.actions import Action
from schedc.dag import task_index
from schedc.problem import Problem, StageCost

costs = st.fractions(min_value=Fraction(1, 4), max_value=Fraction(4), max_denominator=4)
w_costs = st.just(Fraction(0)) | costs
"""tw may be 0 (a free weight gradient: zero-length W tasks, which the extractors treat apart)."""


@st.composite
def problems(
    draw,
    max_p: int = 6,
    max_m: int = 12,
    max_v: int = 3,
    caps: bool = True,
    stage_costs: bool = True,
) -> Problem:
    """A random valid Problem. Caps, when drawn, are at least 1 (the smallest feasible cap: a rank
    must hold the activations of all its stages for one microbatch at once)."""
    placement = draw(st.sampled_from(["looped", "vshape"]))
    v = 2 if placement == "vshape" else draw(st.integers(1, max_v))
    p = draw(st.integers(1, max_p))
    split = draw(st.booleans())
    per_stage = None
    if stage_costs and draw(st.booleans()):
        per_stage = tuple(
            StageCost(draw(costs), draw(costs), draw(w_costs)) for _ in range(p * v)
        )
    mem: tuple = ()
    if caps and draw(st.booleans()):
        cap = st.fractions(min_value=1, max_value=2 * p, max_denominator=2 * v)  # steps of 1/(2v)
        shared = draw(st.booleans())  # one cap for every rank, or one per rank with some uncapped
        mem = (draw(cap),) if shared else tuple(draw(st.none() | cap) for _ in range(p))
    return Problem(
        p=p,
        m=draw(st.integers(1, max_m)),
        v=v,
        placement=placement,
        split=split,
        tf=draw(costs),
        tb=draw(costs),
        tw=draw(w_costs),
        stage_costs=per_stage,
        comm=draw(st.sampled_from([Fraction(0), Fraction(1, 2), Fraction(1)])),
        mem=mem,
        w_mem=draw(st.sampled_from([Fraction(0), Fraction(1, 2), Fraction(1)])),
    )


@st.composite
def tight_problems(draw, max_m: int = 3, max_v: int = 2) -> Problem:
    """Two ranks (drawn, not filtered: one rank hides every cross-rank edge and latency) under caps
    that bind: 1 (the smallest feasible) or up to m, where one microbatch more would always fit.
    For properties that compare against exhaustive search, whose size it keeps small."""
    placement = draw(st.sampled_from(["looped", "vshape"])) if max_v >= 2 else "looped"
    v = 2 if placement == "vshape" else draw(st.integers(1, max_v))
    m = draw(st.integers(2, max_m))
    cap = st.just(Fraction(1)) | st.fractions(min_value=1, max_value=m, max_denominator=2 * v)
    per_rank = draw(st.booleans())
    per_stage = draw(st.booleans())
    uniform = {} if per_stage else {"tf": draw(costs), "tb": draw(costs), "tw": draw(w_costs)}
    return Problem(
        p=2, m=m, v=v, placement=placement, split=draw(st.booleans()), **uniform,
        stage_costs=tuple(StageCost(draw(costs), draw(costs), draw(w_costs)) for _ in range(2 * v))
        if per_stage else None,
        comm=draw(st.sampled_from([Fraction(0), Fraction(1, 2), Fraction(2)])),
        mem=(draw(cap), draw(st.none() | cap)) if per_rank else (draw(cap),),
        w_mem=draw(st.fractions(min_value=0, max_value=1, max_denominator=4)),
    )


@st.composite
def exhaustive_problems(draw, max_p: int = 4, max_m: int = 4) -> Problem:
    """Up to 4 ranks, m below p too, with no cap, one cap or per-rank caps (some ranks uncapped):
    what ``tight_problems`` leaves out (a middle rank with transfers on both sides, m < p, p = 1),
    for properties against exhaustive search; callers filter by ``num_tasks`` to keep it fast."""
    placement = draw(st.sampled_from(["looped", "vshape"]))
    v = 2 if placement == "vshape" else draw(st.integers(1, 3))  # 3: stage s on rank s mod p thrice
    p, m = draw(st.integers(1, max_p)), draw(st.integers(1, max_m))
    cap = st.fractions(min_value=1, max_value=m, max_denominator=2 * v)
    kind = draw(st.sampled_from(["none", "shared", "per-rank"]))
    mem: tuple = ()
    if kind == "shared":
        mem = (draw(cap),)
    elif kind == "per-rank":
        mem = tuple(draw(st.none() | cap) for _ in range(p))
    per_stage = draw(st.booleans())
    uniform = {} if per_stage else {"tf": draw(costs), "tb": draw(costs), "tw": draw(w_costs)}
    return Problem(
        p=p, m=m, v=v, placement=placement, split=draw(st.booleans()), **uniform,
        stage_costs=tuple(StageCost(draw(costs), draw(costs), draw(w_costs)) for _ in range(p * v))
        if per_stage else None,
        comm=draw(st.sampled_from([Fraction(0), Fraction(1, 2), Fraction(2)])),
        mem=mem,
        w_mem=draw(st.fractions(min_value=0, max_value=1, max_denominator=4)),
    )


@st.composite
def topological_orders(draw, problem: Problem) -> tuple[tuple[Action, ...], ...]:
    """Per-rank orders cut from a random topological order of the task DAG. Any such cut is a
    deadlock-free schedule: the global order is one way to run it."""
    index = task_index(problem)
    waiting = [len(p) for p in index.preds]
    ready = [t for t, n in enumerate(waiting) if n == 0]
    rnd = draw(st.randoms(use_true_random=False))
    orders: list[list[Action]] = [[] for _ in range(problem.p)]
    while ready:
        t = ready.pop(rnd.randrange(len(ready)))
        orders[index.rank[t]].append(index.actions[t])
        for u, _ in index.succs[t]:
            waiting[u] -= 1
            if waiting[u] == 0:
                ready.append(u)
    return tuple(tuple(o) for o in orders)


def problems_with_orders(**kwargs) -> st.SearchStrategy:
    """(problem, per-rank orders) pairs: ``problems(**kwargs)`` with any deadlock-free orders of it."""
    return problems(**kwargs).flatmap(lambda pr: st.tuples(st.just(pr), topological_orders(pr)))
