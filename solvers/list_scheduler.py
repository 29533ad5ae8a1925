"""A memory-aware list scheduler: the fast answer, and the solver's warm start and fallback.

Event-driven like a greedy simulator: whenever a rank is free it starts, among its ready tasks (all
inputs arrived), the one of smallest priority key (``priorities.py``) that is *safe* to start.
I, W and B only free memory and are always safe. An F allocates one stage activation, and is safe
when the state stays deadlock-free by a banker's test:

* Microbatches enter each rank (the F of its first stage) in increasing index order.
* Per rank r, over the microbatches that entered r and still hold or need memory there, sorted by
  index k_1 < k_2 < ..., with held(k) the memory k holds on r and need(k) what its remaining F's on r
  will allocate: the state is *safe* when, for every j, need(k_j) + sum_{i >= j} held(k_i) <= cap_r.
  An F is started only if the state stays safe (and the level then stays <= cap_r: j = 1).

Why the lowest unfinished microbatch k always progresses when every cap >= 1 (a full activation):
every microbatch below k is finished, so on each rank k is either not yet entered, and then it is
next in the entry order, nothing above it entered (entry order), and its entry needs 1 <= cap; or it
is the lowest entered one there, and its F's keep the test for j = 1, need(k) + level <= cap, true.
Releases only lower levels, and an allocation by k_j tightens only the tests of lower microbatches,
which the check covers, so the test holds at every step. Hence when nothing runs, k has a task whose
inputs have arrived and that is safe, and the scheduler starts it: it idles a rank that has a safe
ready task only while a task of higher priority is surely on its way (its last input running or in
flight: the 'wait' variants), which cannot be when nothing runs. So no deadlock, and every returned
order is valid and within the caps.

A variant (``Variant``) picks a priority rule, a window and an admission policy. Windows limit the
microbatches in flight per rank, as 1F1B does, which often shortens the step even with no cap at
all: the '1f1b' family by virtual caps, tighter than the real ones but never below 1, 'kN' by
count (at most N >= 1 entered and not done) and 'aN' by the count still allocating (at most N >= 1
entered with an F still to run on the rank). Admission policies (``admission.py``) and the count
add tests to entries only and never refuse an entry into a rank where nothing is in flight, so the
argument above stands for every variant.
The event loop is ``list_engine.Engine``: integer ticks (``scaled.py``) and heaps, no Fraction.
"""

from __future__ import annotations

import time
from dataclasses import dataclass
from fractions import Fraction

from schedc.errors import ProblemError, shown
from schedc.plan import OBJECTIVES
from schedc.problem import Problem
from schedc.simulate import Orders
from schedc.solvers.admission import ADMISSIONS
from schedc.solvers.feasibility import check_caps
from schedc.solvers.list_engine import Engine
from schedc.solvers.list_portfolio import WINDOWS, Variant, allocating_limit, flight_limit, variants
from schedc.solvers.priorities import RULES, task_keys
from schedc.solvers.progress import Interrupted
from schedc.solvers.scaled import Scaled, scaled

__all__ = ["RULES", "ListResult", "best_list_schedule", "list_schedule", "run_rule", "run_variant"]



@dataclass(frozen=True)
class ListResult:
    """One list schedule: orders as task ids per rank, and its exact ASAP replay in ticks."""

    variant: Variant
    order_ids: tuple[tuple[int, ...], ...]
    makespan_ticks: int
    span_ticks: int
    """Largest per-rank span of the replay."""
    sc: Scaled

    @property
    def orders(self) -> Orders:
        action = self.sc.action
        return tuple(tuple(action(t) for t in order) for order in self.order_ids)

    @property
    def makespan(self) -> Fraction:
        return self.sc.ticks(self.makespan_ticks)

    @property
    def max_span(self) -> Fraction:
        return self.sc.ticks(self.span_ticks)

    def value(self, objective: str) -> int:
        return self.makespan_ticks if objective == "makespan" else self.span_ticks


def list_schedule(problem: Problem, rule: str = "zb") -> Orders:
    """Per-rank orders from one priority rule, valid and within the caps (InfeasibleError below 1)."""
    return run_rule(problem, rule).orders


def best_list_schedule(problem: Problem, objective: str = "makespan", *,
                       time_budget: float | None = None, thorough: bool = False) -> Orders:
    """The shortest replay (makespan, or largest per-rank span) over the portfolio of variants
    (``list_portfolio``: ``PORTFOLIO`` and the reference runs, about 20, and under a cap with v > 1
    the in-flight runs, ``FLIGHT_RUNS``: up to about 110 on the grid; the V-shape runs, and with
    v >= 3 ``DEEP_RUNS``),
    or with ``thorough`` over every variant (about 250-300 more with v > 1 and a cap: p=8 m=16 mem=4
    at v = 2 and 4, 50 and 74 runs, 296 and 361 thorough). The set of runs never depends on the
    clock, so the answer is deterministic; a time budget (seconds) only stops starting new runs once
    spent (at least one run always completes)."""
    return best_list_result(problem, objective, time_budget=time_budget, thorough=thorough).orders


def best_list_result(problem: Problem, objective: str = "makespan", *, time_budget: float | None = None,
                     thorough: bool = False, task_budget: int | None = None) -> ListResult:
    """``best_list_schedule``'s run. ``task_budget`` stops starting new runs, as the time budget
    does, once the runs so far have scheduled that many tasks: a budget that does not depend on the
    clock, for one-worker solves."""
    if not isinstance(objective, str) or objective not in OBJECTIVES:
        raise ProblemError(f"objective must be one of {', '.join(OBJECTIVES)}, got {shown(objective)}")
    check_caps(problem)
    deadline = None if time_budget is None else time.monotonic() + time_budget
    best: ListResult | None = None
    order = variants(problem, thorough)
    if _cut_short(problem, len(order), time_budget, task_budget):
        order = sorted(order, key=lambda v: not _anchor(v))
    try:
        for k, variant in enumerate(order):
            spent = task_budget is not None and k * problem.num_tasks >= task_budget
            if best is not None and (spent or (deadline is not None and time.monotonic() > deadline)):
                break
            result = run_variant(problem, variant)
            if best is None or result.value(objective) < best.value(objective):
                best = result
    except KeyboardInterrupt:  # Ctrl-C: the best run so far, for solve() to return
        if best is None:
            raise
        raise Interrupted(best) from None
    assert best is not None
    return best


SECONDS_PER_TASK = 4e-6
"""About what one run takes per task (p=32 m=128 v=2 cap 8: 45 runs of 24,576 tasks in 4.3 s)."""


ANCHOR_MIN_TASKS = 20_000
"""Below this many tasks a budget's cut keeps the portfolio's own order: lst-mb leads it for good
reason on small capped problems (``claims``' one-run check of a claimed bound found 7 of 9
small instances shorter with it than with zb), and a cut there is rare."""


def _cut_short(problem: Problem, runs: int, time_budget: float | None, task_budget: int | None) -> bool:
    """Whether the budget surely stops the portfolio of a large problem before its end (decided
    before any run, so the order never depends on the clock)."""
    if problem.num_tasks < ANCHOR_MIN_TASKS:
        return False
    work = runs * problem.num_tasks
    return (task_budget is not None and work > task_budget) or \
        (time_budget is not None and work * SECONDS_PER_TASK > time_budget)


def _anchor(variant: Variant) -> bool:
    """zb without a window or waiting: first where the budget cuts the portfolio short. The
    portfolio's order was tuned on small problems, where every run completes; from about 100,000
    tasks only one or two runs fit a quarter of a 5-10 s limit, and its first, lst-mb, was 6-18%
    slower than zb on 9 of 10 instances of 24,576-49,152 tasks (zb best or within 1.2% on all 10;
    p=64 m=1024 cap 32: 5,152 against 4,251, found by the scale hunt)."""
    return variant.rule == "zb" and variant.window == "none" and not variant.wait and variant.entry is None


def _window_caps(sc: Scaled, window: str) -> list[int | None]:
    """Per-rank caps in memory units: the real cap, tightened by a virtual one (never below a full
    activation, so the deadlock argument still holds). '1f1b': rank r keeps at most p - r
    microbatches in flight (1F1B's warm-up depth); '1f1b+1': one more; '2x1f1b': twice as many.
    'kN' and 'aN' windows limit counts instead (``flight_limit``, ``allocating_limit``) and keep the
    real caps."""
    p, full = sc.problem.p, sc.problem.v * sc.unit
    caps: list[int | None] = list(sc.caps)
    if window == "none" or flight_limit(window) is not None or allocating_limit(window) is not None:
        return caps
    if window not in WINDOWS:
        raise ProblemError(f"unknown window {window!r}; choose from {', '.join(WINDOWS)}, kN, aN (N >= 1)")
    extra = {"1f1b": (1, 0), "1f1b+1": (1, 1), "2x1f1b": (2, 0)}[window]
    for r in range(p):
        virtual = max(1, extra[0] * (p - r) + extra[1]) * full
        caps[r] = virtual if caps[r] is None else min(caps[r], virtual)
    return caps


def run_rule(problem: Problem, rule: str = "zb", window: str = "none",
             admission: str = "banker") -> ListResult:
    """One list schedule under ``rule``, virtual-cap ``window`` and ``admission``, replayed exactly."""
    return run_variant(problem, Variant(rule, window, admission))


def run_variant(problem: Problem, variant: Variant) -> ListResult:
    """One list schedule under ``variant``, replayed exactly: the unit the portfolio runs many of."""
    check_caps(problem)
    for admission in (variant.admission, variant.entry or variant.admission):
        if admission not in ADMISSIONS:
            raise ProblemError(f"unknown admission {admission!r}; choose from {', '.join(ADMISSIONS)}")
    sc = scaled(problem)
    keys = task_keys(sc, variant.rule)
    first = problem.stage_rank[0]
    admissions = tuple(variant.entry if variant.entry and r == first else variant.admission
                       for r in range(problem.p))
    engine = Engine(sc, keys, _window_caps(sc, variant.window), admissions, variant.wait,
                    flight_limit(variant.window), allocating_limit(variant.window))
    log, order_ids = engine.run()
    makespan, span = _replay(sc, log)
    return ListResult(variant, order_ids, makespan, span, sc)


def _replay(sc: Scaled, log: list[int]) -> tuple[int, int]:
    """ASAP replay of the engine's orders in integer ticks, as ``simulate`` does it (the engine may
    have held an F back for memory, which the replay of the same order does not). ``log`` lists the
    tasks in dispatch order: a topological order of the DAG plus the rank chains. Kept apart from
    ``simulate`` because it runs once per variant of the list portfolio: one pass over integer ids
    took 7 ms at p = 32, m = 256, where ``simulate`` (Actions, a task index) took 130 ms; the plan
    that is returned is replayed by ``simulate`` as every plan is."""
    m, dur, preds, rank = sc.m, sc.dur, sc.preds, sc.rank
    end = [0] * (sc.num_sk * m)
    free = [0] * sc.problem.p
    first = [-1] * sc.problem.p
    for task in log:
        sk, mb = divmod(task, m)
        r = rank[sk]
        start = free[r]
        for psk, lag in preds[sk]:
            ready = end[psk * m + mb] + lag
            if ready > start:
                start = ready
        end[task] = free[r] = start + dur[sk]
        if first[r] < 0:
            first[r] = start
    span = max(free[r] - first[r] for r in range(sc.problem.p))
    return max(free), span
