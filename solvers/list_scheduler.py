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
inputs have arrived and that is safe, the scheduler (which never idles a rank that has a safe ready
task) starts it: no deadlock, and every returned order is valid and within the caps.

Each rule can also run under virtual caps (``windows``), tighter than the real ones: limiting the
microbatches in flight per rank, as 1F1B does, often shortens the step even with no cap at all.
Everything runs in integer ticks (``scaled.py``) with heaps; no Fraction in the hot loop.
"""

from __future__ import annotations

import time
from dataclasses import dataclass
from fractions import Fraction
from heapq import heappop, heappush

from schedc.solvers.feasibility import check_caps
from schedc.solvers.priorities import RULES, priority_keys
from schedc.solvers.scaled import Scaled, scaled

from schedc.errors import ProblemError, ScheduleError
from schedc.problem import Problem
from schedc.simulate import Orders

__all__ = ["RULES", "ListResult", "best_list_schedule", "list_schedule", "run_rule"]

OBJECTIVES = ("makespan", "span")


@dataclass(frozen=True)
class ListResult:
    """One list schedule: orders as task ids per rank, and its exact ASAP replay in ticks."""

    rule: str
    window: str
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
                       time_budget: float | None = None) -> Orders:
    """Runs every rule under every window and keeps the shortest replay (makespan or max span).
    With a time budget (seconds) it stops starting new runs once the budget is spent (at least one
    run always completes)."""
    return best_list_result(problem, objective, time_budget=time_budget).orders


def best_list_result(problem: Problem, objective: str = "makespan", *,
                     time_budget: float | None = None) -> ListResult:
    if objective not in OBJECTIVES:
        raise ProblemError(f"objective must be one of {', '.join(OBJECTIVES)}, got {objective!r}")
    check_caps(problem)
    deadline = None if time_budget is None else time.monotonic() + time_budget
    best: ListResult | None = None
    for window in windows(problem):
        for rule in RULES:
            if best is not None and deadline is not None and time.monotonic() > deadline:
                return best
            result = run_rule(problem, rule, window)
            if best is None or result.value(objective) < best.value(objective):
                best = result
    assert best is not None
    return best


def windows(problem: Problem) -> list[str]:
    """Names of the virtual-cap families tried, most promising first (see ``_window_caps``)."""
    names = ["none", "1f1b", "1f1b+1", "2x1f1b"]
    return names


def _window_caps(sc: Scaled, window: str) -> list[int | None]:
    """Per-rank caps in memory units: the real cap, tightened by a virtual one (never below a full
    activation, so the deadlock argument still holds). '1f1b': rank r keeps at most p - r
    microbatches in flight (1F1B's warm-up depth); '1f1b+1': one more; '2x1f1b': twice as many."""
    p, full = sc.problem.p, sc.problem.v * sc.unit
    caps: list[int | None] = list(sc.caps)
    if window == "none":
        return caps
    extra = {"1f1b": (1, 0), "1f1b+1": (1, 1), "2x1f1b": (2, 0)}[window]
    for r in range(p):
        virtual = max(1, extra[0] * (p - r) + extra[1]) * full
        caps[r] = virtual if caps[r] is None else min(caps[r], virtual)
    return caps


def run_rule(problem: Problem, rule: str = "zb", window: str = "none") -> ListResult:
    """One list schedule under ``rule`` and virtual-cap ``window``, replayed exactly."""
    check_caps(problem)
    sc = scaled(problem)
    base, mult = priority_keys(sc, rule)
    log, order_ids = _Engine(sc, base, mult, _window_caps(sc, window)).run()
    makespan, span = _replay(sc, log, order_ids)
    return ListResult(rule, window, order_ids, makespan, span, sc)


def _replay(sc: Scaled, log: list[int], order_ids: tuple[tuple[int, ...], ...]) -> tuple[int, int]:
    """ASAP replay of the orders in integer ticks, as ``simulate`` does it (the engine may have held
    an F back for memory, which the replay of the same order does not). ``log`` lists the tasks in
    dispatch order: a topological order of the DAG plus the rank chains."""
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


class _Engine:
    """The event loop. Hot paths use local names and ints only."""

    def __init__(self, sc: Scaled, base: list[int], mult: list[int], caps: list[int | None]) -> None:
        self.sc, self.base, self.mult, self.caps = sc, base, mult, caps
        p = sc.problem.p
        self.level = [0] * p
        self.held: list[dict[int, int]] = [{} for _ in range(p)]
        self.need: list[dict[int, int]] = [{} for _ in range(p)]
        self.live: list[list[int]] = [[] for _ in range(p)]

    def safe(self, r: int, mb: int, entry: bool) -> bool:
        """Banker's test for one more stage activation of ``mb`` on capped rank r (module doc)."""
        cap, unit, level = self.caps[r], self.sc.unit, self.level[r]
        if level + self.sc.problem.v * unit <= cap:
            return True  # every need is <= (v - 1) units: all tests hold with room to spare
        held, need = self.held[r], self.need[r]
        prefix = 0
        for k in self.live[r]:
            if k >= mb:
                break
            h = held.get(k)
            if h is None:
                continue
            if need[k] + level - prefix + unit > cap:
                return False
            prefix += h
        return level + unit <= cap if entry else True

    def allocate(self, r: int, mb: int, entry: bool) -> None:
        unit = self.sc.unit
        self.level[r] += unit
        if entry:
            self.live[r].append(mb)
            self.held[r][mb] = unit
            self.need[r][mb] = (self.sc.problem.v - 1) * unit
        else:
            self.held[r][mb] += unit
            self.need[r][mb] -= unit

    def release(self, r: int, mb: int, delta: int) -> None:
        self.level[r] += delta
        held, need = self.held[r], self.need[r]
        held[mb] += delta
        if held[mb] == 0 and need[mb] == 0:
            del held[mb], need[mb]
            live = self.live[r]
            if len(live) > 2 * len(held) + 8:
                self.live[r] = [k for k in live if k in held]

    def run(self) -> tuple[list[int], tuple[tuple[int, ...], ...]]:
        sc = self.sc
        p, m = sc.problem.p, sc.m
        n = sc.num_sk * m
        two_n = 2 * n
        dur, succs, rank_of, delta, entry_sk = sc.dur, sc.succs, sc.rank, sc.delta, sc.entry
        base, mult = self.base, self.mult
        capped = [c is not None for c in self.caps]
        remaining = [len(sc.preds[sk]) for sk in range(sc.num_sk) for _ in range(m)]
        ready_at = [0] * n
        heaps: list[list[int]] = [[] for _ in range(p)]
        next_entry = [0] * p
        waiting: list[set[int]] = [set() for _ in range(p)]
        busy = [False] * p
        orders: list[list[int]] = [[] for _ in range(p)]
        log: list[int] = []
        events: list[int] = []
        dirty: list[int] = []
        is_dirty = [False] * p

        def make_ready(task: int) -> None:
            sk, mb = divmod(task, m)
            r = rank_of[sk]
            if sk == entry_sk[r] and mb != next_entry[r]:
                waiting[r].add(mb)
                return
            heappush(heaps[r], (base[sk] + mb * mult[sk]) * n + task)
            if not is_dirty[r]:
                is_dirty[r] = True
                dirty.append(r)

        for task in range(n):
            if remaining[task] == 0:
                make_ready(task)
        now = 0
        while True:
            for r in dirty:
                is_dirty[r] = False
                if busy[r]:
                    continue
                heap = heaps[r]
                blocked = []
                task = -1
                while heap:
                    key = heappop(heap)
                    cand = key % n
                    sk = cand // m
                    if delta[sk] > 0 and capped[r]:
                        mb = cand - sk * m
                        entry = sk == entry_sk[r]
                        if not self.safe(r, mb, entry):
                            blocked.append(key)
                            continue
                        self.allocate(r, mb, entry)
                    task = cand
                    break
                for key in blocked:
                    heappush(heap, key)
                if task < 0:
                    continue
                sk = task // m
                busy[r] = True
                orders[r].append(task)
                log.append(task)
                heappush(events, (now + dur[sk]) * two_n + 2 * task)
                if sk == entry_sk[r]:
                    nxt = next_entry[r] = task - sk * m + 1
                    if nxt in waiting[r]:
                        waiting[r].discard(nxt)
                        heappush(heap, (base[sk] + nxt * mult[sk]) * n + sk * m + nxt)
            dirty.clear()
            if not events:
                break
            now = events[0] // two_n
            while events and events[0] // two_n == now:
                code = heappop(events) % two_n
                task, arrival = code >> 1, code & 1
                if arrival:
                    make_ready(task)
                    continue
                sk, mb = divmod(task, m)
                r = rank_of[sk]
                busy[r] = False
                if not is_dirty[r]:
                    is_dirty[r] = True
                    dirty.append(r)
                if delta[sk] < 0 and capped[r]:
                    self.release(r, mb, delta[sk])
                for ssk, lag in succs[sk]:
                    succ = ssk * m + mb
                    if now + lag > ready_at[succ]:
                        ready_at[succ] = now + lag
                    remaining[succ] -= 1
                    if remaining[succ] == 0:
                        if ready_at[succ] <= now:
                            make_ready(succ)
                        else:
                            heappush(events, ready_at[succ] * two_n + 2 * succ + 1)
        if len(log) != n:  # impossible by the module doc's argument; never return a partial plan
            raise ScheduleError(f"list scheduler stalled after {len(log)} of {n} tasks")
        return log, tuple(tuple(o) for o in orders)
