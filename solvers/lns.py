"""Large-neighbourhood search: CP-SAT re-orders one time window of the incumbent at a time.

A window [t0, t1) of the incumbent's replay frees the tasks that start inside it, on every rank;
each rank's order stays: prefix (started before t0), the free block, suffix (started after). The
sub-model is exact for that neighbourhood:

- prefix tasks keep their times (nothing of theirs depends on a later task), so a free task starts
  after its prefix inputs have arrived and after its rank's last prefix task;
- the suffix keeps its per-rank order and is replayed as soon as possible afterwards, so the new
  makespan is max(C, max over free tasks a of end(a) + q(a)), where q(a) is the longest chain of
  suffix work and latency that must follow a (its suffix successors and its rank's first suffix
  task) and C the makespan of everything that does not wait for the window; the sub-model
  minimises exactly that;
- memory: the cap holds over the block with the activations alive at t0 (released inside: a
  lifetime from 0; released later: a constant) and those the block allocates (released later: alive
  to the horizon). The suffix then starts from the same level and runs in the same order, so its
  peaks are unchanged.

The span objective (largest per-rank span) has the same shape with per-rank tails and rank
starts (``lns_span``). So every accepted window gives a valid plan no worse than before (the
incumbent's own times are the hint). Windows sweep back from the end to past the middle, then
land at random offsets, while time is left; a plan small enough for one window is searched whole,
again with another seed while that finds nothing (the same seed would repeat the same search).
This backend proves nothing: its lower bound is the floor it was given (the analytic bound, or
CP-SAT's or the relaxation's when it runs after them).
"""

from __future__ import annotations

import itertools
import math
import random
import time
from collections import defaultdict
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from fractions import Fraction
from typing import TYPE_CHECKING

from ortools.sat.python import cp_model

from schedc.actions import Action
from schedc.dag import cached_index, fused_backwards, scaled_lags
from schedc.plan import Plan
from schedc.solvers.arguments import INT32
from schedc.solvers.cpsat_model import min_lifetime
from schedc.solvers.cpsat_params import set_limits
from schedc.solvers.cpsat_solve import Clock, extract_orders
from schedc.solvers.interruptible import run_interruptible
from schedc.solvers.lns_span import span_tails
from schedc.solvers.lns_suffix import fixed_ready, suffix_order
from schedc.solvers.progress import Interrupted, Progress

if TYPE_CHECKING:
    from schedc.solvers.backends import Budget

WINDOW_TASKS = 600
"""Free tasks per window: CP-SAT proves or improves such a neighbourhood in about a second."""
MIN_WINDOW_SECONDS = 0.2
"""Below this much time left no further window is tried."""
WINDOW_CHARGE = (0.2, 2e-6)
"""Deterministic seconds charged per window (a constant, and per task of the problem) for the work
around CP-SAT's search (cutting the window, building and loading its model), which CP-SAT's
deterministic time does not count: with one worker, where budgets are deterministic time, windows
that CP-SAT settles at once (most of them) cost nothing, and LNS ran into the wall-clock guard
(three times its limit). Measured: about 0.25 s of wall time per such window, with 6,144 tasks
(p=16 m=64 vshape cap 12) and with 24,576 (p=32 m=128 v=2 cap 8)."""


@dataclass(frozen=True)
class Window:
    """A time slice of the incumbent whose tasks one LNS step re-sequences (module doc)."""

    t0: int
    t1: int
    """Scaled times: the tasks whose replay start lies in [t0, t1) are free."""


class _Replay:
    """The incumbent in integer time: per-rank orders, starts, ends, durations, lags."""

    def __init__(self, plan: Plan) -> None:
        problem = plan.problem
        self.problem, self.scale = problem, problem.time_scale
        self.orders = plan.orders
        self.start: dict[Action, int] = {}
        self.end: dict[Action, int] = {}
        timeline = plan.timeline  # its integer times, not its slots: Fractions cost seconds at scale
        for actions, starts, ends in zip(timeline.actions, timeline.starts, timeline.ends, strict=True):
            for a, s, e in zip(actions, starts, ends, strict=True):
                self.start[a] = s * self.scale // timeline.scale
                self.end[a] = e * self.scale // timeline.scale
        self.dur = {a: self.end[a] - self.start[a] for a in self.start}
        # the simulator's DAG, built once per problem: walking dependencies() again cost seconds
        index = cached_index(problem, fused_backwards(problem, plan.orders))
        acts, ticks = index.actions, scaled_lags(problem, self.scale)
        self.preds = {a: [(acts[d], ticks(acts[d], a)) for d in index.preds[index.ids[a]]]
                      for a in self.start}
        self.succs: dict[Action, list[tuple[Action, int]]] = defaultdict(list)
        for a, ps in self.preds.items():
            for d, g in ps:
                self.succs[d].append((a, g))
        self.makespan = max(self.end.values())
        self.objective = plan.objective
        self.value = int(plan.value * self.scale)


def lns_plan(incumbent: Plan, budget: Budget) -> Plan:
    """Improves ``incumbent`` (makespan or span objective) window by window until the limit or the
    floor."""
    t0 = time.perf_counter()
    plan, rng = incumbent, random.Random(budget.seed)
    floor, clock = budget.floor, Clock(budget.time_limit, budget.workers)
    replay, fruitless = _Replay(plan), 0  # whole-plan windows that found nothing: each next one reseeds
    try:
        for window in _windows(lambda: plan, rng):  # noqa: B023 (the latest plan, on purpose)
            if plan.value <= floor:  # first: the seed's own end, which the clock must not count as a cut
                break
            left = clock.left(enough=MIN_WINDOW_SECONDS)
            if left < MIN_WINDOW_SECONDS:
                break
            whole = _covers_all(plan, window)
            result = solve_window(plan, window, time_limit=min(left, _sub_limit(plan)),
                                  seed=_reseeded(budget.seed, fruitless), workers=budget.workers, clock=clock,
                                  replay=replay)
            clock.spend(WINDOW_CHARGE[0] + WINDOW_CHARGE[1] * plan.problem.num_tasks)
            better = result.plan
            if better is None and result.optimal and whole:
                break  # other windows' neighbourhoods lie inside this proven one (span: see lns_span)
            if better is not None and better.value < plan.value:
                plan = better  # first: a Ctrl-C while its replay is built keeps it
                replay = _Replay(better)
                if budget.progress is not None:
                    budget.progress(Progress(plan.value, min(floor, plan.value),
                                             time.perf_counter() - t0, "lns"))
            elif whole:
                fruitless += 1
    except Interrupted as stop:
        better = stop.plan if stop.plan is not None and stop.plan.value < plan.value else plan
        raise Interrupted(_answer(better, incumbent, floor)) from None
    except KeyboardInterrupt:  # between windows, or from a progress report: the plan stands
        raise Interrupted(_answer(plan, incumbent, floor)) from None
    return _answer(plan, incumbent, floor)


def _reseeded(seed: int, k: int) -> int:
    """The k-th seed after ``seed``, within CP-SAT's 32-bit range (``solve`` takes any in it)."""
    return (seed + k + INT32) % (2 * INT32) - INT32


def _covers_all(plan: Plan, window: Window) -> bool:
    return window.t0 <= 0 and window.t1 > plan.makespan * plan.problem.time_scale


def _answer(plan: Plan, incumbent: Plan, floor: Fraction) -> Plan:
    source = "lns" if plan is not incumbent else plan.source
    return Plan(problem=plan.problem, orders=plan.orders, source=source, status="feasible", lower_bound=floor,
                objective=plan.objective)


def _sub_limit(plan: Plan) -> float:
    return 2.0 if plan.problem.num_tasks > 4 * WINDOW_TASKS else 4.0


def _windows(current: Callable[[], Plan], rng: random.Random) -> Iterator[Window]:
    """Endless windows of about WINDOW_TASKS tasks each: backwards from the end to past the middle
    (where pipelines drain and the makespan is decided), then at random offsets. Each window reads
    the current plan's length, since accepted windows shorten it."""
    problem = current().problem
    scale = problem.time_scale

    def span() -> int:
        return max(1, math.ceil(current().makespan * scale))

    width = max(1, span() * WINDOW_TASKS // max(1, problem.num_tasks))
    while width >= span():
        yield Window(0, span() + 1)
    k = 0
    while k <= span() // width:
        end = span()
        yield Window(max(0, end - (k + 1) * width), end - k * width + 1)
        if k * width > end // 2:
            break
        k += 1
    while True:
        shift = rng.randrange(0, span())
        yield Window(shift, shift + width)


@dataclass(frozen=True)
class WindowResult:
    """What one window's sub-model found, with its own claim: the replay of the spliced plan is
    never later than it (module doc), which the tests check."""

    plan: Plan | None
    """The better plan, or None."""
    claimed: Fraction | None
    """The sub-model's objective for its best solution (None if it found none)."""
    optimal: bool


def solve_window(plan: Plan, window: Window, *, time_limit: float, seed: int = 0,
                 workers: int = 1, clock: Clock | None = None, replay: _Replay | None = None) -> WindowResult:
    """The best re-ordering of the window's tasks (``plan`` None if CP-SAT found nothing better in
    time), with what the sub-model claimed, for checks against the replay. ``replay``: ``plan``'s,
    if the caller keeps it (it is most of a window's Python time on large problems)."""
    rp = replay or _Replay(plan)
    free = {a for a, s in rp.start.items() if window.t0 <= s < window.t1}
    if not free:
        return WindowResult(None, None, False)
    sub = _SubModel(rp, free, window.t0)
    solver = cp_model.CpSolver()
    set_limits(solver, time_limit, workers)
    solver.parameters.random_seed = seed
    status, interrupted = run_interruptible(solver, sub.model)
    if clock is not None:
        clock.charge(solver)
    found = status in (cp_model.OPTIMAL, cp_model.FEASIBLE)
    better = _splice(plan, rp, sub, solver, window) if found else None
    if interrupted:
        raise Interrupted(better)
    claimed = Fraction(int(solver.objective_value), rp.scale) if found else None
    return WindowResult(better, claimed, status == cp_model.OPTIMAL)


def _splice(plan: Plan, rp: _Replay, sub: _SubModel, solver: cp_model.CpSolver,
            window: Window) -> Plan | None:
    """The plan with the window's block re-ordered as CP-SAT placed it, if that is shorter."""
    free = sub.free
    if solver.objective_value >= rp.value:
        return None
    starts = {a: Fraction(solver.value(v), rp.scale) for a, v in sub.starts.items()}
    block = extract_orders(plan.problem, starts)
    orders = tuple(
        tuple([a for a in order if a not in free and rp.start[a] < window.t0] + list(block[r])
              + [a for a in order if a not in free and rp.start[a] >= window.t0])
        for r, order in enumerate(plan.orders)
    )
    better = Plan(problem=plan.problem, orders=orders, source="lns", objective=plan.objective)
    return better if better.fits() and better.value < plan.value else None


class _SubModel:
    """The window's CP-SAT model (see the module docstring)."""

    def __init__(self, rp: _Replay, free: set[Action], t0: int) -> None:
        self.rp, self.free, self.model = rp, free, cp_model.CpModel()
        problem = rp.problem
        self.before = {r: [a for a in order if rp.start[a] < t0] for r, order in enumerate(rp.orders)}
        prefix = {a for tasks in self.before.values() for a in tasks}
        self.prefix, self.suffix = prefix, set(rp.start) - prefix - free
        if rp.objective == "makespan":
            tails, constant = self._tails()
        else:
            tails, constant = span_tails(rp, free, self.before, prefix, self.suffix)
        # an objective value above the incumbent's is never wanted: latest starts follow (the
        # incumbent's own start stays allowed, for the span's conservative rank starts)
        latest = {a: max(rp.start[a], rp.value - tails[a] - rp.dur[a]) for a in free}
        horizon = max([rp.makespan] + [latest[a] + rp.dur[a] for a in free])
        self.starts: dict[Action, cp_model.IntVar] = {}
        for a in self._ordered(free):  # the model's variable order, so not Python's string hashing
            r = problem.stage_rank[a.stage]
            lo = max([rp.end[self.before[r][-1]]] if self.before[r] else [0])
            lo = max([lo] + [rp.end[d] + g for d, g in rp.preds[a] if d in prefix])
            self.starts[a] = self.model.new_int_var(lo, max(lo, latest[a]), str(a))
            self.model.add_hint(self.starts[a], rp.start[a])
        hinted = max([constant] + [rp.start[a] + rp.dur[a] + tails[a] for a in free])
        objective = self.model.new_int_var(constant, max(hinted, horizon), rp.objective)
        for a, var in self.starts.items():
            for d, g in rp.preds[a]:
                if d in free:  # a DAG edge inside the window (prefix inputs set the start's floor)
                    self.model.add(var >= self.starts[d] + rp.dur[d] + g)
            self.model.add(objective >= var + rp.dur[a] + tails[a])  # the suffix it delays (_tails)
        self._no_overlap_and_order()
        self._memory(horizon)
        self.model.add_hint(objective, hinted)
        self.model.minimize(objective)

    def _ordered(self, tasks: set[Action]) -> list[Action]:
        """``tasks`` in the incumbent's time order: a set's order follows the per-process hash of the
        actions' kind strings, and CP-SAT's search follows the order of the model."""
        return sorted(tasks, key=lambda a: (self.rp.start[a], a))

    def _tails(self) -> tuple[dict[Action, int], int]:
        """q(a) for free tasks, and C: the longest chains through the suffix in its fixed order."""
        rp, order = self.rp, suffix_order(self.rp, self.suffix)
        tail: dict[Action, int] = {}
        for a in order.latest_first:
            tail[a] = max((g + rp.dur[u] + tail[u] for u, g in order.successors(rp, a)), default=0)
        q = {a: max((g + rp.dur[u] + tail[u] for u, g in order.entries(rp, a, self.suffix)), default=0)
             for a in self.free}
        constant = max((rp.end[a] for a in self.prefix), default=0)
        free_ranks = {rp.problem.stage_rank[f.stage] for f in self.free}
        for u in self.suffix:
            ready = fixed_ready(rp, order, u, self.prefix, self.before, free_ranks)
            if ready is not None:
                constant = max(constant, ready + rp.dur[u] + tail[u])
        return q, constant

    def _no_overlap_and_order(self) -> None:
        """One task at a time per rank; free microbatches of one (stage, kind) keep their order (a
        restriction of the neighbourhood: the incumbent is already in that order)."""
        rp, model = self.rp, self.model
        per_rank: dict[int, list] = defaultdict(list)
        groups: dict[tuple[int, str], list[Action]] = defaultdict(list)
        for a, var in self.starts.items():
            interval = model.new_fixed_size_interval_var(var, rp.dur[a], "")
            per_rank[rp.problem.stage_rank[a.stage]].append(interval)
            groups[a.stage, a.kind].append(a)
        for intervals in per_rank.values():
            model.add_no_overlap(intervals)
        for members in groups.values():
            members.sort(key=lambda a: a.mb)
            for x, y in itertools.pairwise(members):
                model.add(self.starts[y] >= self.starts[x] + rp.dur[x])

    def _memory(self, horizon: int) -> None:
        """The cap over the block: lifetimes of the activations the block touches, and a constant for
        those alive through it (see the module docstring)."""
        rp, problem, model = self.rp, self.rp.problem, self.model
        mscale = problem.memory_scale
        lifetimes: dict[int, list] = defaultdict(list)
        demands: dict[int, list[int]] = defaultdict(list)
        constant: dict[int, int] = defaultdict(int)
        for release in self._ordered(self.free | self.suffix):
            if release.kind == "F":
                continue
            alloc = Action("F", release.stage, release.mb)
            r, demand = problem.stage_rank[release.stage], int(-problem.mem_delta(release.kind) * mscale)
            if demand == 0 or alloc in self.suffix:
                continue
            start = 0 if alloc in self.prefix else self.starts[alloc]
            if release in self.free:
                end = self.starts[release] + rp.dur[release]
            elif alloc in self.prefix:
                constant[r] += demand
                continue
            else:
                end = horizon
            # the round trip's least length (``min_lifetime``), a cut for propagation, is stated where
            # both ends are the window's free tasks, whose interval is the lifetime itself; an interval
            # with an end the window fixes (start 0 for an F in the prefix, the horizon for a release
            # past the window) stands in for the lifetime and is left to that end
            both_free = alloc in self.free and release in self.free
            shortest = int(min_lifetime(problem, release.stage, release.kind) * rp.scale) if both_free else 0
            size = model.new_int_var(shortest, horizon, "")
            hinted_start = 0 if alloc in self.prefix else rp.start[alloc]
            model.add_hint(size, (rp.end[release] if release in self.free else horizon) - hinted_start)
            lifetimes[r].append(model.new_interval_var(start, size, end, ""))
            demands[r].append(demand)
        for r in range(problem.p):
            cap = problem.binding_caps[r]
            if cap is not None and lifetimes[r]:
                model.add_cumulative(lifetimes[r], demands[r], math.floor(cap * mscale) - constant[r])
