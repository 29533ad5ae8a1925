"""The bound phases ``portfolio`` runs around its search, each in a share of the call's time: the
strongest rank's relaxation ahead of it, and after it the chained entries, the block of the
strongest ranks and the other ranks' relaxations. Each returns the floor it proved (never lower
than the one it was given) and reports a progress line only where that moved."""

from __future__ import annotations

import time
from fractions import Fraction
from typing import TYPE_CHECKING

from schedc.plan import Plan
from schedc.problem import Problem
from schedc.solvers.progress import Progress, ProgressFn, report_or_stop

if TYPE_CHECKING:  # CP-SAT loads only when a search runs
    from schedc.solvers.cpsat_solve import Clock

MIN_PHASE_SECONDS = 0.1
"""A bound phase left this many seconds or fewer is skipped, not started: a model's build and
CP-SAT's presolve alone run longer (a 0.5 s span phase ran 0.1-0.5 s past its share,
``span_bound.FIRST_RANK_MIN_SECONDS``); the span phases keep to it too."""
RELAXATION_MAX_TASKS = 400
"""Largest rank relaxation (tasks of one rank) worth solving; a rank with more is relaxed over its
last microbatches (``relaxation``'s suffix)."""


def relax_ahead(plan: Plan, floor: Fraction, seconds: float, workers: int, progress: ProgressFn | None,
                t0: float) -> tuple[Fraction, float]:
    """The strongest rank's relaxation ahead of the search: its floor, and what it left of
    ``seconds`` for the search, in the search's unit. With one worker that is the deterministic time
    it did not spend, and nothing from the wall clock (which the call's guard alone watches), so the
    same seed repeats the plan; with several, the wall time left, negative after an overrun, which
    the search then gives back."""
    from schedc.solvers.cpsat_solve import Clock

    clock = Clock(seconds, workers)
    floor = relaxation_floor(plan, floor, seconds, workers, progress, t0, which=slice(0, 1), clock=clock)
    return floor, _unspent(clock, seconds, workers)


BLOCK_MIN_SECONDS = 8.0
"""Least time the block's relaxation is given; with less the ranks are relaxed one at a time
instead: three ranks' proofs took 8.9 and 12.5 s where they moved a bound
(``relaxation.BLOCK_RANKS``), and a block cut short proves less than its ranks alone. The phases
after the search keep a fifth of the time, so the block runs from limits of about 45 s on."""


def block_applies(problem: Problem, seconds: float) -> bool:
    """Whether the block of the strongest ranks (``relaxation.block_bound``) is relaxed after the
    search, given ``seconds``: several ranks, each small enough to be relaxed over all its
    microbatches (over a suffix a block need not be as strong as its ranks: ``relaxation``'s module
    doc), and at least ``BLOCK_MIN_SECONDS``."""
    from schedc.solvers.relaxation import BLOCK_RANKS

    per_rank = problem.m * problem.v * len(problem.kinds)
    return problem.p >= BLOCK_RANKS and per_rank <= RELAXATION_MAX_TASKS and seconds >= BLOCK_MIN_SECONDS


def block_floor(plan: Plan, floor: Fraction, seconds: float, workers: int, progress: ProgressFn | None,
                t0: float) -> tuple[Fraction, float]:
    """The block's relaxation after the search: its floor, and what it left of ``seconds`` (as
    ``relax_ahead``) for the other ranks' relaxations and the probes."""
    from schedc.solvers.cpsat_solve import Clock
    from schedc.solvers.relaxation import block_bound

    if seconds <= MIN_PHASE_SECONDS:
        return floor, seconds
    clock = Clock(seconds, workers)
    before = max(floor, plan.lower_bound or floor)
    bound = max(before, block_bound(plan.problem, time_limit=seconds, workers=workers, clock=clock,
                                    incumbent=plan))
    _report(progress, plan, before, bound, t0, "block relaxation")
    return bound, _unspent(clock, seconds, workers)


def chain_floor(plan: Plan, floor: Fraction, seconds: float, workers: int, seed: int,
                progress: ProgressFn | None, t0: float) -> Fraction:
    """The chained-entries bound (``chain_bound``), reported where it moved the floor."""
    from schedc.solvers.chain_bound import chain_bound

    if seconds <= MIN_PHASE_SECONDS:
        return floor
    before = max(floor, plan.lower_bound or floor)
    bound = max(before, chain_bound(plan.problem, time_limit=seconds, workers=workers, seed=seed))
    _report(progress, plan, before, bound, t0, "chain")
    return bound


def relaxation_floor(
    plan: Plan, floor: Fraction, seconds: float, workers: int, progress: ProgressFn | None, t0: float,
    which: slice = slice(None), clock: Clock | None = None,
) -> Fraction:
    """The rank relaxation's bound (solvers.relaxation) over ``which`` of the ranks in their strength
    order, its time counted on ``clock`` where one is given."""
    from schedc.solvers.relaxation import relaxation_bound

    if seconds <= MIN_PHASE_SECONDS:
        return floor
    before = max(floor, plan.lower_bound or floor)
    bound = max(before, relaxation_bound(plan.problem, time_limit=seconds, workers=workers,
                                         max_tasks=RELAXATION_MAX_TASKS, which=which, clock=clock,
                                         incumbent=plan))
    _report(progress, plan, before, bound, t0, "relaxation")
    return bound


def _unspent(clock: Clock, seconds: float, workers: int) -> float:
    """What a phase left of ``seconds``: with one worker the deterministic time it did not spend,
    with several the wall time left."""
    return max(0.0, seconds - clock.used) if workers == 1 else clock.left()


def _report(progress: ProgressFn | None, plan: Plan, before: Fraction, bound: Fraction, t0: float,
            source: str) -> None:
    """A progress line only when the bound moved."""
    if progress is not None and bound > before:
        report_or_stop(progress, Progress(plan.value, min(bound, plan.value), time.perf_counter() - t0,
                                          source), plan, bound)
