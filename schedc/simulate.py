"""The exact simulator: the single source of truth for every number schedc prints.

It replays per-rank orders as soon as possible: a rank starts its next action when the rank is
free and every input of the action has arrived (producer's end plus communication lag). Times are
Fractions, so the replay is exact. Orders must be complete and placed (see ``validate``); a cyclic
wait between ranks is reported as a deadlock naming rank, position and action.
"""

from __future__ import annotations

from collections import deque
from dataclasses import dataclass
from fractions import Fraction

from schedc.actions import Action
from schedc.dag import dependencies, lag
from schedc.errors import ScheduleError
from schedc.problem import Problem

Orders = tuple[tuple[Action, ...], ...]


@dataclass(frozen=True)
class Slot:
    """One action placed in time on its rank."""

    action: Action
    start: Fraction
    end: Fraction


@dataclass(frozen=True)
class Timeline:
    """Result of a replay. ``makespan`` runs from the first start to the last end over all ranks."""

    slots: tuple[tuple[Slot, ...], ...]
    peak_mem: tuple[Fraction, ...]
    """Largest activation residency per rank, in units of a rank's full activation."""

    @property
    def start(self) -> Fraction:
        return min((r[0].start for r in self.slots if r), default=Fraction(0))

    @property
    def end(self) -> Fraction:
        return max((r[-1].end for r in self.slots if r), default=Fraction(0))

    @property
    def makespan(self) -> Fraction:
        """Step time when the optimizer step synchronises all ranks."""
        return self.end - self.start

    @property
    def spans(self) -> tuple[Fraction, ...]:
        """Per rank: first start to last end (the Zero Bubble paper's per-rank step time)."""
        return tuple(r[-1].end - r[0].start if r else Fraction(0) for r in self.slots)

    @property
    def max_span(self) -> Fraction:
        return max(self.spans)

    @property
    def busy(self) -> tuple[Fraction, ...]:
        return tuple(sum((s.end - s.start for s in r), Fraction(0)) for r in self.slots)

    @property
    def bubble(self) -> Fraction:
        """1 - total busy / (p * makespan): the idle share of the synchronised step."""
        if self.makespan == 0:
            return Fraction(0)
        return 1 - sum(self.busy) / (len(self.slots) * self.makespan)

    def memory_curve(self, problem: Problem, rank: int) -> list[tuple[Fraction, Fraction]]:
        """(time, level) after each change of the rank's activation memory."""
        level, curve = Fraction(0), [(Fraction(0), Fraction(0))]
        for slot in self.slots[rank]:
            level += problem.mem_delta(slot.action.kind)
            curve.append((slot.start if slot.action.kind == "F" else slot.end, level))
        return curve


def peak_memory(problem: Problem, order: tuple[Action, ...]) -> Fraction:
    """Peak residency of one rank. Tasks on a rank never overlap, so the order alone decides it:
    an F allocates at its start, after every earlier task of the rank has ended and freed."""
    level = peak = Fraction(0)
    for action in order:
        level += problem.mem_delta(action.kind)
        peak = max(peak, level)
    return peak


def simulate(problem: Problem, orders: Orders) -> Timeline:
    """Replays complete, placed orders as soon as possible (a longest-path pass in Kahn order)."""
    position = {a: (r, k) for r, order in enumerate(orders) for k, a in enumerate(order)}
    waiting: dict[Action, int] = {}
    users: dict[Action, list[Action]] = {a: [] for a in position}
    for a, (_, k) in position.items():
        deps = list(dependencies(problem, a))
        for d in deps:
            users[d].append(a)
        waiting[a] = len(deps) + (1 if k > 0 else 0)
    ready_at = {a: Fraction(0) for a in position}
    ends: dict[Action, Fraction] = {}
    queue = deque(a for a, n in waiting.items() if n == 0)
    while queue:
        a = queue.popleft()
        r, k = position[a]
        ends[a] = ready_at[a] + problem.duration(a.kind, a.stage)
        followers = [(u, ends[a] + lag(problem, a, u)) for u in users[a]]
        if k + 1 < len(orders[r]):
            followers.append((orders[r][k + 1], ends[a]))
        for u, t in followers:
            ready_at[u] = max(ready_at[u], t)
            waiting[u] -= 1
            if waiting[u] == 0:
                queue.append(u)
    if len(ends) < len(position):
        raise ScheduleError(_deadlock_message(problem, orders, ends))
    slots = tuple(
        tuple(Slot(a, ends[a] - problem.duration(a.kind, a.stage), ends[a]) for a in order)
        for order in orders
    )
    return Timeline(slots, tuple(peak_memory(problem, order) for order in orders))


def _deadlock_message(problem: Problem, orders: Orders, done: dict[Action, Fraction]) -> str:
    """Names the first blocked action and the input it waits for."""
    heads = [(r, k, a) for r, o in enumerate(orders) for k, a in enumerate(o) if a not in done]
    blocked: dict[int, tuple[int, Action]] = {}
    for r, k, a in heads:
        blocked.setdefault(r, (k, a))
    r, (k, a) = min(blocked.items())
    missing = [d for d in dependencies(problem, a) if d not in done]
    where = ", ".join(f"{d} (rank {problem.stage_rank[d.stage]})" for d in missing)
    stuck = ", ".join(f"rank {rr} at {aa}" for rr, (_, aa) in sorted(blocked.items()))
    return f"deadlock: rank {r} position {k} action {a} waits for {where}; blocked: {stuck}"
