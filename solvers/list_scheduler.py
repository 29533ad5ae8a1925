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

import math
import time
from dataclasses import dataclass, replace
from fractions import Fraction

from schedc.baselines import applicable
from schedc.errors import ProblemError, shown
from schedc.plan import OBJECTIVES
from schedc.problem import Problem
from schedc.simulate import Orders
from schedc.solvers.admission import ADMISSIONS
from schedc.solvers.feasibility import check_caps
from schedc.solvers.list_engine import Engine
from schedc.solvers.priorities import REFERENCE, RULES, task_keys
from schedc.solvers.progress import Interrupted
from schedc.solvers.scaled import Scaled, scaled

__all__ = ["RULES", "ListResult", "Variant", "best_list_schedule", "list_schedule", "run_rule", "run_variant"]



WINDOWS = ("none", "1f1b", "1f1b+1", "2x1f1b")


@dataclass(frozen=True)
class Variant:
    """One way to run the list scheduler: a priority rule, a virtual-cap window, an admission policy."""

    rule: str = "zb"
    window: str = "none"
    admission: str = "banker"
    wait: bool = False
    """Idle for a task of higher priority that surely arrives before the chosen one would end."""
    entry: str | None = None
    """Admission policy of the rank that holds stage 0, where it differs from ``admission``
    (``VSHAPE_RUNS``); written 'entry:admission' in the variant's name."""

    def __str__(self) -> str:
        admission = self.admission if self.entry is None else f"{self.entry}:{self.admission}"
        return f"{self.rule}/{self.window}/{admission}{'/wait' if self.wait else ''}"


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
    (``PORTFOLIO`` and the reference runs, about 20, and under a cap with v > 1 the in-flight runs,
    ``FLIGHT_RUNS``: up to about 110 on the grid; the V-shape runs, and with v >= 3 ``DEEP_RUNS``),
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
reason on small capped problems (``plan_json``'s one-run check of a claimed bound found 7 of 9
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


def _variant(name: str) -> Variant:
    rule, window, admission, *wait = name.split("/")
    entry, _, rest = admission.rpartition(":")
    return Variant(rule, window, rest, wait=bool(wait), entry=entry or None)


PORTFOLIO = tuple(_variant(name) for name in (
    "lst-mb/none/due", "ff/none/forecast", "lst-mb/none/forecast/wait", "zb/none/forecast",
    "ff/none/overlap", "lst/2x1f1b/due/wait", "zb-bfs/none/banker", "head/none/forecast", "ff/none/banker",
    "ff/none/overlap/wait", "lst-mb/none/forecast", "ff/1f1b/banker", "lst-mb/none/room",
    "zb/none/forecast/wait", "ff/none/due", "lst-mb/none/banker", "lst/none/forecast/wait",
))
"""Variants in the order that covered the quick quality grid best (``benchmarks/list_scheduler_quality.py``,
equal, unequal and unbalanced costs: 1296 instances): each adds the most to the ones before. With the
reference variants below they came within 0.01% (mean) and 2.2% (worst) of the best of all."""

REFERENCE_RUNS = ("none/forecast", "none/forecast/wait", "none/banker", "none/due/wait")
"""Window/admission[/wait] of the runs of each applicable baseline as a reference rule."""

FLIGHT_RUNS = ("ff/k{}/banker", "head/k{}/banker/wait", "zb/k{}/banker")
"""Runs of each in-flight window 'kN' (N from ``flight_counts``), for v > 1 under a cap. Measured on
the solver grid (benchmarks/solver_quality.py, 180 instances): no admission policy keeps a rank
with two stages from letting a third microbatch in while two are in flight, which starves their
second-stage F's. p16-m32-v2-unsplit-c1_2-mem3_2-uneq went from 1955 (the portfolio before) to 1582
with N = 2 (bound 1570.5; CP-SAT proves 1582 optimal from there), and these three runs shortened
14 other capped v = 2 list plans by 0.02-5.3% (best N from 2 to 27; five more rule/admission pairs
would add 4 instances). No instance with v = 1 or without a cap gained."""


VSHAPE_RUNS = tuple(_variant(name) for name in (
    "head/none/forecast:banker/wait", "lst/none/forecast:due/wait", "head/none/room:forecast/wait",
    "lst/none/banker:forecast", "lst/none/room:forecast/wait", "lst/none/room:forecast",
    "lst/none/due:overlap/wait", "zb/none/due:banker", "lst-mb/none/forecast:overlap",
))
"""Runs for V shapes under a cap, with an admission policy of their own on rank 0, which holds the
first and the last stage, so that its entries set the pipeline's pace and its last stage competes
with them for memory. The pairs that did best on the capped V-shape instances of the solver grid and
the cap sweep (2026-12-04, list plans alone, 30 ordered pairs of policies, four rules, waiting or
not): the sweep's p=8 m=16 vshape, tb=2, comm 1/2 at caps 2 to 6 went from 227.5, 168.5, 133.5,
116, 104.5 to 220, 159, 129, 112, 103.5 (the optimum at cap 4 is 121), p8-m32-v2V-unsplit-c1_2-mem4-
uneq from 302 to 293.5. On looped placements the best mixed pairs gained little (at most 2 on the
sweep's p=8 looped instances, where they lost more elsewhere), so the runs are for V shapes only."""


DEEP_RUNS = tuple(_variant(f"{rule}/none/lookahead") for rule in ("zb", "lst-mb", "ff"))
"""Runs for three stages per rank or more under a cap, with the admission that projects the level to
a newcomer's last F on the rank (``admission.py``; the same as forecast with v <= 2). On 64 capped
instances with v = 3 and 4 (p = 4 and 8, m = 2p and 4p, caps from the smallest feasible, equal
costs or tb = 2 with comm 1/2) these three took the list plans 4.1% shorter on average (every
lookahead run together: 4.2%), up to 15% (p=8 m=16 v=4 mem=4: 65.75 to 55.75, the optimum; with
tb = 2, comm 1/2 204.25 to 183), where no run of the portfolio before let in fewer early microbatches
than the deeper stages could take (``benchmarks/SOLVER_NOTES.md``). They run first: last, behind
about 80 runs, a default solve's list budget cut them off from 12,288 tasks (p=16 m=64 v=4 mem=8:
239.5 against their 211.75, the reviewer's)."""


ALLOCATING_RUNS = ("zb/a{n}/banker", "head/a{n}/due", "ff/a{n}/forecast", "zb/a{less}/banker")
"""Runs for three stages per rank or more under a cap, n = floor(smallest cap), less = n - 1 (at
least 1): at most n microbatches still allocating on a rank, each of which may come to hold a full
activation, so that early entries cannot crowd out the deeper stages' F's of those ahead (as a
CP-SAT plan of p=4 m=16 v=4 mem=2 does: two in, then one more as each pair's deepest F's are done).
Picked on 80 capped instances (p 4 and 8, v 3 and 4, m 2p and 4p, caps 1 to p/2 or 4, equal costs
or tb = 2 with comm 1/2; ``benchmarks/SOLVER_NOTES.md``), checked on ``benchmarks/deep_stages.py``'s
32, not used to pick them: 24 list plans shorter, by 3.9% on average and up to 14.9%."""


def allocating_runs(problem: Problem) -> list[Variant]:
    """``ALLOCATING_RUNS`` for the problem (none without a cap)."""
    caps = [c for c in problem.binding_caps if c is not None]
    if not caps:
        return []
    n = max(1, math.floor(min(caps)))
    return [_variant(run.format(n=n, less=max(1, n - 1))) for run in ALLOCATING_RUNS]


def variants(problem: Problem, thorough: bool = False) -> list[Variant]:
    """Distinct variants for the problem: the portfolio and the baselines that apply as reference
    rules, then (``thorough``) every other combination. Admission policies differ only under a cap
    (real or virtual) and with v > 1 (a microbatch needs nothing more after its entry when v = 1), so
    elsewhere they collapse to 'banker'; with v = 2 'lookahead' is 'forecast'."""
    capped = any(c is not None for c in problem.binding_caps)

    def plain(v: Variant) -> Variant:
        counted = flight_limit(v.window) is not None or allocating_limit(v.window) is not None
        if problem.v == 1 or (not capped and (v.window == "none" or counted)):
            return Variant(v.rule, v.window, "banker", wait=v.wait)
        if problem.v == 2:
            same = {"lookahead": "forecast"}
            return replace(v, admission=same.get(v.admission, v.admission), entry=same.get(v.entry, v.entry))
        return v

    references = [REFERENCE + name for name in applicable(problem)]
    chosen = [*DEEP_RUNS, *allocating_runs(problem)] if capped and problem.v >= 3 else []  # first: a
    # solve's budget may cut the rest
    chosen += [*PORTFOLIO, *(_variant(f"{rule}/{run}") for rule in references for run in REFERENCE_RUNS)]
    chosen += [_variant(run.format(n)) for n in flight_counts(problem) for run in FLIGHT_RUNS]
    if capped and problem.placement == "vshape":
        chosen += VSHAPE_RUNS
    if thorough:
        chosen += [Variant(rule, window, admission)
                   for window in WINDOWS for admission in ADMISSIONS for rule in (*RULES, *references)]
    out: list[Variant] = []
    for v in chosen:
        if plain(v) not in out:
            out.append(plain(v))
    return out


def flight_limit(window: str) -> int | None:
    """N of a 'kN' window (at most N microbatches in flight on every rank), else None."""
    return _count(window, "k")


def allocating_limit(window: str) -> int | None:
    """N of an 'aN' window (at most N microbatches with an F still to run, on every rank), else None."""
    return _count(window, "a")


def _count(window: str, letter: str) -> int | None:
    if window.startswith(letter) and window[1:].isdigit() and int(window[1:]) >= 1:
        return int(window[1:])
    return None


FLIGHT_TASK_RUNS = 600_000
"""Tasks scheduled by all the in-flight runs together, at most (about 3 s): the best N is sharp
(p16-m32-v2-split-c1_2-mem16-eq: N = 21 only), so every N is run where this allows, and evenly
spaced ones (2 and the largest among them) on larger problems, where one worker runs every variant
whatever the time limit."""


def flight_counts(problem: Problem) -> list[int]:
    """The N of the 'kN' windows the portfolio runs: from 2 to what the largest cap holds, below m
    (none for v = 1 or without a cap: see FLIGHT_RUNS), thinned to FLIGHT_TASK_RUNS."""
    caps = [c for c in problem.binding_caps if c is not None]
    if problem.v == 1 or not caps:
        return []
    counts = list(range(2, min(problem.m - 1, math.floor(max(caps) / problem.stage_activation)) + 1))
    room = max(1, FLIGHT_TASK_RUNS // (len(FLIGHT_RUNS) * problem.num_tasks))
    if len(counts) <= room:
        return counts
    if room == 1:
        return counts[:1]
    return sorted({counts[round(i * (len(counts) - 1) / (room - 1))] for i in range(room)})


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
