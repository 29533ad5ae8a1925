"""A makespan bound for long runs of microbatches: their entries into stage 0, chained.

Take a plan in microbatch index order (``symmetry``: relabelling loses no makespan). Every task of
microbatch j follows F(0, j), and F(0, j) >= F(0, a) for j >= a, so the tasks of microbatches a..m-1
form a plan of the same problem with m - a microbatches (a subset keeps every dependency and holds no
more under every cap), which starts at F(0, a): the makespan T >= F(0, a) + L(m - a), where L(r) is
any lower bound on r microbatches' makespan. The first a + 1 microbatches form a plan of a + 1, so
F(0, a) >= S_a, the least start of microbatch a's forward on stage 0 over such plans; microbatches
a..a + b, shifted, form a plan of b + 1, so S_{a+b} >= S_a + S_b. S_c and L(r) are CP-SAT's proven
bounds on small models of c + 1 and r microbatches; the remainder of a chain takes the cap's own floor
on F(0, j) (``cap_sequence.forward_floors``, which depends on the microbatches before j only).

Each link loses what S_c lacks of c steady periods (the pipeline's fill), so links grow from 2p
microbatches by half while their models prove (each tail as long as its link). Only with one stage
per rank: with two, S_c climbs far below the plans' rate until c is as large as the whole hard
instance (SOLVER_NOTES). p=8 m=128 mem=4, plan 583: S_24 = 104 and L(24) = 115 (about 1 s each)
give 4 x 104 + 34 + 115 = 565, where the solver had 547-553.
"""

from __future__ import annotations

from dataclasses import dataclass, field, replace
from fractions import Fraction

from schedc.actions import Action
from schedc.problem import Problem
from schedc.solvers.bounds import lower_bound
from schedc.solvers.cap_sequence import forward_floors
from schedc.solvers.cpsat_model import CpsatModel, add_hint, build_model, serial_length
from schedc.solvers.cpsat_params import proof_params
from schedc.solvers.cpsat_solve import Clock, CpsatResult, solve_model
from schedc.solvers.progress import Interrupted

CHAIN_MAX_MODEL_TASKS = 1600
"""Largest link or tail model solved: p=16's first link (33 microbatches, 1,584 tasks) proves in
0.5-2 s; p=32's (65 microbatches, 6,240 tasks) has no room in a solve's share."""
CHAIN_MIN_MICROBATCHES_PER_RANK = 8
"""Below 8p microbatches (the grid's largest m is 4p) a chain has at most two links of 2p and loses
a fill at each; CP-SAT's own bound on the whole model is then the better one: p=8 m=64 mem=4, a
chain of 287 in 2.5 s against the search's 292 (plan 295)."""
TAIL_LIST_RUNS = 8
"""The tail's list plan gets about this many list runs' worth of tasks (a task budget: the same
plan whatever the clock, as one worker needs)."""
ENTRY_SHARE = 0.5
"""Of the time left at each link, the entry model's share (the tail gets the rest): 0.5, 0.6 and 0.67
gave bounds within one another's spread, given 2.4 s on four long runs.
(measurements: benchmarks/SOLVER_NOTES.md, *Moved from docstrings*, ``chain_bound.ENTRY_SHARE``)"""


@dataclass
class Chain:
    """What the models proved: S_c per link length c, L(r) per tail length r."""

    entries: dict[int, Fraction] = field(default_factory=dict)
    tails: dict[int, Fraction] = field(default_factory=dict)


def chain_applies(problem: Problem) -> bool:
    """One stage per rank, a cap that binds somewhere, a long run of microbatches
    (``CHAIN_MIN_MICROBATCHES_PER_RANK``) and models small enough (``CHAIN_MAX_MODEL_TASKS``)."""
    first = 2 * problem.p
    per_mb = problem.num_tasks // problem.m
    return (problem.v == 1 and any(c is not None for c in problem.binding_caps)
            and problem.m >= CHAIN_MIN_MICROBATCHES_PER_RANK * problem.p
            and (first + 1) * per_mb <= CHAIN_MAX_MODEL_TASKS)


def chain_bound(problem: Problem, *, time_limit: float, workers: int, seed: int = 0) -> Fraction:
    """The best chain over the links and tails proven within ``time_limit`` (0 where none applies).
    Ctrl-C raises ``Interrupted`` with the bound chained so far."""
    if not chain_applies(problem):
        return Fraction(0)
    chain, clock = Chain(), Clock(time_limit, workers)
    per_mb, c = problem.num_tasks // problem.m, 2 * problem.p
    while 2 * c <= problem.m and (c + 1) * per_mb <= CHAIN_MAX_MODEL_TASKS and clock.left() > 0.05:
        entry = _solve(_entry_model(problem, c), clock.left() * ENTRY_SHARE, workers, seed, clock)
        chain.entries[c] = entry.bound
        if entry.interrupted:
            raise Interrupted(None, best_chain(problem, chain) or None)
        try:  # the tail's list plan is of the shorter problem: a Ctrl-C there keeps the chain only
            model = _tail_model(problem, c)
        except (Interrupted, KeyboardInterrupt):
            raise Interrupted(None, best_chain(problem, chain) or None) from None
        tail = _solve(model, max(0.05, clock.left()), workers, seed, clock)
        chain.tails[c] = max(tail.bound, lower_bound(replace(problem, m=c)))
        if tail.interrupted:
            raise Interrupted(None, best_chain(problem, chain) or None)
        if not (entry.optimal and tail.optimal):
            break  # a longer link is harder still
        c += max(problem.p, c // 2)
    return best_chain(problem, chain)


def best_chain(problem: Problem, chain: Chain) -> Fraction:
    """max over tails r of E(m - r) + L(r), E(a) the best split of a into proven links and a floor."""
    floors = forward_floors(problem, 0) or (Fraction(0),) * problem.m
    entry = list(floors)  # entry[a] <= F(0, a) in every plan in index order
    for a in range(problem.m):
        for c, s_c in chain.entries.items():
            if c <= a:
                entry[a] = max(entry[a], entry[a - c] + s_c)
    return max((entry[problem.m - r] + l_r for r, l_r in chain.tails.items() if r < problem.m),
               default=Fraction(0))


def _entry_model(problem: Problem, c: int) -> CpsatModel:
    """The model of c + 1 microbatches minimising F(0, c)'s start. Its horizon is the serial length,
    within which some plan with the least such start ends (the one ASAP replay of its orders)."""
    sub = replace(problem, m=c + 1)
    cm = build_model(sub, horizon=serial_length(sub))
    cm.model.minimize(cm.starts[Action("F", 0, c)])  # replaces build_model's makespan objective
    return cm


def _tail_model(problem: Problem, r: int) -> CpsatModel:
    """The makespan model of r microbatches, with a list plan of them as its horizon (some optimum
    ends by any plan's end) and hint: p=16 L(32) proved in 0.8 s against 3.3 s with the serial length
    as horizon. (The same hint slowed the entry model down.)
    (measurements: benchmarks/SOLVER_NOTES.md, *Moved from docstrings*, ``chain_bound._tail_model``)"""
    from schedc.solvers.incumbent import best_incumbent
    from schedc.solvers.symmetry import canonical_starts

    sub = replace(problem, m=r)
    plan = best_incumbent(sub, "makespan", task_budget=TAIL_LIST_RUNS * sub.num_tasks)
    cm = build_model(sub, horizon=plan.makespan)
    add_hint(cm, canonical_starts(plan.timeline), plan.makespan)
    return cm


def _solve(cm: CpsatModel, seconds: float, workers: int, seed: int, clock: Clock) -> CpsatResult:
    result = solve_model(cm, time_limit=max(0.05, seconds), workers=workers, seed=seed,
                         params=proof_params(workers))
    clock.spend(result.deterministic_time)
    return result
