"""The exact simulator: the single source of truth for every number schedc prints.

It replays per-rank orders as soon as possible: a rank starts its next action when the rank is
free and every input of the action has arrived (producer's end plus communication lag). The replay
runs on integers (times scaled by the lcm of every duration's and comm's denominator, memory by the
lcm of the memory deltas' denominators) and converts back to Fractions once, so it is exact and
fast. Orders must be complete and placed (see ``validate``); a cyclic wait between ranks is
reported as a deadlock naming rank, position and action.
"""

from __future__ import annotations

import math
from collections.abc import Iterable
from dataclasses import dataclass
from fractions import Fraction
from functools import cached_property, lru_cache
from itertools import accumulate, pairwise
from numbers import Integral

from schedc.actions import KINDS, Action, as_orders, entry_actions
from schedc.dag import Fused, Orders, TaskIndex, cached_index, fused_backwards, not_a_task
from schedc.errors import ArgumentError, SchedcError, ScheduleError, counted, shown
from schedc.exact import MAX_DERIVED, exact, fmt_exact, lcm_denominator
from schedc.problem import Problem


@dataclass(frozen=True)
class Slot:
    """One action placed in time on its rank."""

    action: Action
    start: Fraction
    end: Fraction


def _checked_slots(slots: object) -> tuple[tuple[Slot, ...], ...]:
    """Slots built by hand, checked as a plan's orders and times are: the simulator's own timelines
    skip this (``Timeline._scaled``)."""
    rows = _rows(slots, "slots", "a list of Slots per rank")
    if not rows:
        raise ArgumentError("slots must hold at least one rank, got none")
    ranks = (tuple(_checked_slot(s, r, k) for k, s in enumerate(_rows(rank, f"slots[{r}]", "a list")))
             for r, rank in enumerate(rows))
    return tuple(_in_order(rank, r) for r, rank in enumerate(ranks))


def _in_order(rank: tuple[Slot, ...], r: int) -> tuple[Slot, ...]:
    """A rank runs one action at a time, in its order: the figures read a rank's first and last slot,
    so slots out of order or overlapping gave a negative makespan or bubble without a word."""
    for k in range(1, len(rank)):
        if rank[k].start < rank[k - 1].end:
            raise ArgumentError(f"slots[{r}][{k}] starts at {fmt_exact(rank[k].start)}, before slots[{r}]"
                                f"[{k - 1}] ends at {fmt_exact(rank[k - 1].end)}: a rank's slots run one at "
                                "a time, in order")
    return rank


def _rows(value: object, what: str, expected: str) -> tuple:
    if not isinstance(value, Iterable) or isinstance(value, str | bytes):
        raise ArgumentError(f"{what} must be {expected}, got {shown(value, 60)}")
    return tuple(value)


def _checked_slot(slot: object, rank: int, position: int) -> Slot:
    where = f"slots[{rank}][{position}]"
    if not isinstance(slot, Slot):
        raise ArgumentError(f"{where} must be a Slot, got {shown(slot, 60)}")
    if not isinstance(slot.action, Action):
        raise ArgumentError(f"{where}.action must be an Action, got {shown(slot.action, 60)}")
    try:
        (action,) = entry_actions(slot.action)
    except SchedcError:
        raise ArgumentError(f"{where}.action needs a kind in {'/'.join(KINDS)} and integer indices from 0 "
                            f"to 999999999, got {shown(slot.action, 60)}") from None
    try:  # times derived from user numbers: as large and as finely divided as a plan file's
        start = exact(slot.start, f"{where}.start", MAX_DERIVED, finest=None)
        end = exact(slot.end, f"{where}.end", MAX_DERIVED, finest=None)
    except SchedcError as err:
        raise ArgumentError(str(err)) from None
    if end < start:
        raise ArgumentError(f"{where} ends before it starts ({fmt_exact(end)} < {fmt_exact(start)})")
    return Slot(action, start, end)


def _checked_peaks(peak_mem: object, ranks: int) -> tuple[Fraction, ...]:
    peaks = tuple(_rows(peak_mem, "peak_mem", "one number per rank"))
    if len(peaks) != ranks:
        raise ArgumentError(f"peak_mem gives {counted(len(peaks), 'rank')}, the slots {ranks}")
    try:
        peaks = tuple(exact(v, f"peak_mem[{r}]", MAX_DERIVED, finest=None) for r, v in enumerate(peaks))
    except SchedcError as err:
        raise ArgumentError(str(err)) from None
    if min(peaks, default=0) < 0:  # every rank starts empty, so its peak is at least 0
        raise ArgumentError(f"peak_mem must be >= 0, got {fmt_exact(min(peaks))}")
    return peaks


class Timeline:
    """Result of a replay. ``makespan`` runs from the first start to the last end over all ranks.

    Immutable. Times are kept as integers over one ``scale``: ``actions[r][k]`` runs from
    ``starts[r][k] / scale`` to ``ends[r][k] / scale``. The figures (makespan, spans, busy) come from
    those integers, and ``slots`` (Fractions) are built only when read, which keeps a solver's inner
    loop free of Fraction arithmetic.
    """

    def __init__(self, slots: tuple[tuple[Slot, ...], ...], peak_mem: tuple[Fraction, ...]) -> None:
        slots = _checked_slots(slots)
        peak_mem = _checked_peaks(peak_mem, len(slots))
        scale = lcm_denominator([t for rank in slots for s in rank for t in (s.start, s.end)])
        self._set(
            actions=tuple(tuple(s.action for s in rank) for rank in slots),
            starts=tuple(tuple(int(s.start * scale) for s in rank) for rank in slots),
            ends=tuple(tuple(int(s.end * scale) for s in rank) for rank in slots),
            scale=scale,
            peak_mem=tuple(peak_mem),
        )
        self.__dict__["slots"] = slots

    @classmethod
    def _scaled(cls, actions: tuple[tuple[Action, ...], ...], starts: tuple[tuple[int, ...], ...],
                ends: tuple[tuple[int, ...], ...], scale: int, peak_mem: tuple[Fraction, ...]) -> Timeline:
        """A timeline from scaled integer times (the simulator's form)."""
        timeline = cls.__new__(cls)
        timeline._set(actions=actions, starts=starts, ends=ends, scale=scale, peak_mem=peak_mem)
        return timeline

    def _set(self, **fields: object) -> None:
        self.__dict__.update(fields)

    def __setattr__(self, name: str, value: object) -> None:
        raise AttributeError(f"Timeline is immutable (cannot set {name})")

    def __delattr__(self, name: str) -> None:  # ``del tl.scale`` left a timeline without its scale
        raise AttributeError(f"Timeline is immutable (cannot delete {name})")

    def __eq__(self, other: object) -> bool:
        if not isinstance(other, Timeline):
            return NotImplemented
        return (self.slots, self.peak_mem) == (other.slots, other.peak_mem)

    def __hash__(self) -> int:
        return hash((self.actions, self.makespan, self.peak_mem))

    def __repr__(self) -> str:
        return f"Timeline(makespan={self.makespan}, ranks={len(self.actions)}, peak_mem={self.peak_mem})"

    @cached_property
    def slots(self) -> tuple[tuple[Slot, ...], ...]:
        """Per rank, per position: the action with its start and end (exact Fractions)."""
        times: dict[int, Fraction] = {}

        def time(units: int) -> Fraction:
            value = times.get(units)
            if value is None:
                value = times[units] = Fraction(units, self.scale)
            return value

        return tuple(
            tuple(Slot(a, time(s), time(e)) for a, s, e in zip(acts, starts, ends, strict=True))
            for acts, starts, ends in zip(self.actions, self.starts, self.ends, strict=True)
        )

    @cached_property
    def start(self) -> Fraction:
        return Fraction(min((r[0] for r in self.starts if r), default=0), self.scale)

    @cached_property
    def end(self) -> Fraction:
        return Fraction(max((r[-1] for r in self.ends if r), default=0), self.scale)

    @property
    def makespan(self) -> Fraction:
        """Step time when the optimizer step synchronises all ranks."""
        return self.end - self.start

    @cached_property
    def spans(self) -> tuple[Fraction, ...]:
        """Per rank: first start to last end (the Zero Bubble paper's per-rank step time)."""
        return tuple(
            Fraction(e[-1] - s[0], self.scale) if s else Fraction(0)
            for s, e in zip(self.starts, self.ends, strict=True)
        )

    @property
    def max_span(self) -> Fraction:
        return max(self.spans)

    @cached_property
    def busy(self) -> tuple[Fraction, ...]:
        """Per rank: total time spent computing."""
        pairs = zip(self.starts, self.ends, strict=True)
        return tuple(Fraction(sum(e) - sum(s), self.scale) for s, e in pairs)

    @property
    def bubble(self) -> Fraction:
        """1 - total busy / (p * makespan): the idle share of the synchronised step."""
        if self.makespan == 0:
            return Fraction(0)
        return 1 - sum(self.busy) / (len(self.actions) * self.makespan)

    def memory_curve(self, problem: Problem, rank: int) -> list[tuple[Fraction, Fraction]]:
        """(time, level) after each change of the rank's activation memory, from (0, 0). Another
        ``w_mem`` than the timeline's own problem is a what-if; another placement is refused."""
        if not isinstance(problem, Problem) or problem.p != len(self.actions):
            raise ArgumentError(f"memory_curve needs the Problem of the timeline's "
                                f"{counted(len(self.actions), 'rank')}")
        if isinstance(rank, bool) or not isinstance(rank, Integral) or not 0 <= rank < problem.p:
            raise ArgumentError(f"rank must be 0..{problem.p - 1}, got {shown(rank)}")
        rank = int(rank)  # numpy's integers index as ints
        stray = next((s.action for s in self.slots[rank] if s.action.stage >= problem.num_stages
                      or problem.stage_rank[s.action.stage] != rank), None)
        if stray is not None:
            raise ArgumentError(f"memory_curve needs the timeline's own placement: {stray} on rank {rank} is "
                                f"not on that rank in {problem.describe()}")
        level, curve = Fraction(0), [(Fraction(0), Fraction(0))]
        for slot in self.slots[rank]:
            level += problem.mem_delta(slot.action.kind)
            curve.append((slot.start if slot.action.kind == "F" else slot.end, level))
        return curve


@lru_cache(maxsize=16)
def _mem_units(problem: Problem) -> tuple[int, dict[str, int]]:
    """The memory scale (lcm of the deltas' denominators) and each kind's delta in those units."""
    deltas = {k: problem.mem_delta(k) for k in ("F", "I", "W", "B")}
    scale = math.lcm(*(d.denominator for d in deltas.values()))
    return scale, {k: int(d * scale) for k, d in deltas.items()}


def peak_memory(problem: Problem, order: tuple[Action, ...]) -> Fraction:
    """Peak residency of one rank. Tasks on a rank never overlap, so the order alone decides it:
    an F allocates at its start, after every earlier task of the rank has ended and freed."""
    scale, units = _mem_units(problem)
    peak = max(accumulate(units[a[0]] for a in order), default=0)
    return Fraction(max(peak, 0), scale)


SPARSE_TASKS = 100_000
"""Above this many tasks, orders that cannot cover half of them are refused before the task index is
built (``sparse``), and ``validate.sparse_error`` reports them in one line."""


def covered(problem: Problem, orders: Orders) -> int:
    """Most tasks the orders can stand for: one per action, two for a B in a split problem (a whole
    backward); duplicates and actions that are not tasks stand for fewer."""
    return sum(2 if a.kind == "B" and problem.split else 1 for order in orders for a in order)


def sparse(problem: Problem, orders: Orders) -> bool:
    """Orders far too short for a large problem: a typo such as ``0F3000000`` in a CSV makes m three
    million, and indexing every task to list the missing ones would take a minute and gigabytes."""
    return problem.num_tasks > SPARSE_TASKS and 2 * covered(problem, orders) < problem.num_tasks


def simulate(problem: Problem, orders: Orders | None = None) -> Timeline:
    """Replays complete, placed orders as soon as possible (a longest-path pass in Kahn order)."""
    if orders is None and hasattr(problem, "timeline") and hasattr(problem, "orders"):
        raise ArgumentError("simulate needs a Problem and orders; a Plan holds its replay: plan.timeline")
    if not isinstance(problem, Problem):
        raise ArgumentError(f"simulate needs a Problem, got {type(problem).__name__}")
    if orders is None:  # "orders must be one list of actions per rank, got NoneType" named no mistake
        raise ArgumentError("simulate needs the orders as well as the Problem")
    orders = as_orders(orders)
    if len(orders) != problem.p:  # before the task index, which a huge problem takes seconds to build
        raise ScheduleError(f"plan has {counted(len(orders), 'rank')}, the problem has p = {problem.p}")
    if sparse(problem, orders):
        given = sum(map(len, orders))
        actions = f"{given} action{'' if given == 1 else 's'}"
        raise ScheduleError(f"orders of {actions} for {problem.num_tasks} tasks")
    fused = fused_backwards(problem, orders)
    index = cached_index(problem, fused)
    ids = _number(problem, index, orders, fused)
    ends = _replay(index, ids)
    if min(ends, default=0) < 0:
        raise ScheduleError(_deadlock_message(index, ids, ends))
    duration = index.duration
    return Timeline._scaled(
        actions=tuple(tuple(index.actions[t] for t in row) for row in ids),
        starts=tuple(tuple(ends[t] - duration[t] for t in row) for row in ids),
        ends=tuple(tuple(ends[t] for t in row) for row in ids),
        scale=index.scale,
        peak_mem=tuple(peak_memory(problem, order) for order in orders),
    )


def _number(problem: Problem, index: TaskIndex, orders: Orders, fused: Fused) -> list[list[int]]:
    """Task ids per rank (``simulate`` has checked the rank count); anything but every task once on
    its own rank is a ScheduleError."""
    seen = bytearray(len(index.actions))
    ids = []
    for r, order in enumerate(orders):
        row = []
        for k, a in enumerate(order):
            t = index.ids.get(a)
            if t is None or index.rank[t] != r or seen[t]:
                why = not_a_task(problem, Action(*a), fused) if t is None else (
                    "duplicated" if seen[t] else f"stage {a[1]} belongs to rank {index.rank[t]}")
                raise ScheduleError(f"rank {r} position {k} action {Action(*a)}: {why}")
            seen[t] = 1
            row.append(t)
        ids.append(row)
    if not all(seen):
        a = index.actions[seen.index(0)]
        raise ScheduleError(f"rank {problem.stage_rank[a.stage]} action {a}: missing")
    return ids


def _replay(index: TaskIndex, ids: list[list[int]]) -> list[int]:
    """Scaled end time of every task; -1 for a task that never becomes ready (a deadlock)."""
    n = len(index.actions)
    following = [-1] * n
    waiting = [len(p) for p in index.preds]
    for row in ids:
        for before, after in pairwise(row):
            following[before] = after
            waiting[after] += 1
    ready = [0] * n
    ends = [-1] * n
    duration, succs = index.duration, index.succs
    stack = [t for t in range(n) if waiting[t] == 0]
    while stack:
        t = stack.pop()
        end = ends[t] = ready[t] + duration[t]
        nxt = following[t]
        if nxt >= 0:
            if end > ready[nxt]:
                ready[nxt] = end
            waiting[nxt] -= 1
            if not waiting[nxt]:
                stack.append(nxt)
        for u, delay in succs[t]:
            if end + delay > ready[u]:
                ready[u] = end + delay
            waiting[u] -= 1
            if not waiting[u]:
                stack.append(u)
    return ends


def _deadlock_message(index: TaskIndex, ids: list[list[int]], ends: list[int]) -> str:
    """Names the first blocked action (lowest rank) and the inputs it waits for, on one line."""
    blocked = {r: next(k for k, t in enumerate(row) if ends[t] < 0)
               for r, row in enumerate(ids) if any(ends[t] < 0 for t in row)}
    r, k = min(blocked.items())
    t = ids[r][k]
    position = {d: (rr, kk) for rr, row in enumerate(ids) for kk, d in enumerate(row)}
    missing = [position[d] for d in index.preds[t] if ends[d] < 0]
    where = ", ".join(f"{index.actions[ids[rr][kk]]} (rank {rr} position {kk})" for rr, kk in missing)
    stuck = ", ".join(f"rank {rr} at {index.actions[ids[rr][kk]]}" for rr, kk in sorted(blocked.items()))
    return f"deadlock: rank {r} position {k} action {index.actions[t]} waits for {where}; blocked: {stuck}"
