"""The list scheduler's event loop (``list_scheduler`` holds the variants and the deadlock argument).

Whenever a rank is free it starts, among its ready tasks, the one of smallest priority key that the
rank's memory policy (``admission.RankMemory``) finds safe; completions free ranks and memory and
make successors ready, at once or when their inputs arrive. Everything is integer ticks and heaps.
"""

from __future__ import annotations

import math
from heapq import heappop, heappush

from schedc.errors import ScheduleError
from schedc.solvers.admission import RankMemory
from schedc.solvers.paths import StagePaths, stage_paths
from schedc.solvers.priorities import cycle_ticks
from schedc.solvers.scaled import Scaled


def _release_offsets(sc: Scaled, paths: StagePaths, r: int) -> tuple[tuple[int, int], ...]:
    """(ticks from the entry F's start to the task's end, units freed) per release task of rank r."""
    out = []
    for s in sc.problem.rank_stages[r]:
        for kind in sc.kinds:
            freed = -sc.delta[sc.sk_of(kind, s)]
            if freed > 0:
                end = paths.rank_head[r][kind, s] + sc.problem.duration(kind, s)
                out.append((int(end * sc.time_scale), freed))
    return tuple(sorted(out))


class Engine:
    """The event loop. Hot paths use local names and ints only."""

    def __init__(self, sc: Scaled, keys: list[int], caps: list[int | None],
                 admissions: tuple[str, ...], wait: bool = False, flight: int | None = None,
                 allocating: int | None = None) -> None:
        """``flight``: the most microbatches in flight per rank, ``allocating``: the most of them with
        an F still to run there (with either, an uncapped rank gets a cap that never binds, so that its
        ``RankMemory`` counts them)."""
        self.sc, self.keys, self.wait = sc, keys, wait
        paths, cycle = stage_paths(sc.problem), max(1, cycle_ticks(sc))
        self.memory: list[RankMemory | None] = []
        unbound = sc.m * sc.problem.v * sc.unit
        for r, cap in enumerate(caps):
            cap = unbound if cap is None and (flight is not None or allocating is not None) else cap
            stages = sc.problem.rank_stages[r]
            gaps = tuple(int(paths.rank_head[r]["F", s] * sc.time_scale) for s in stages)
            later = max((paths.round_trip[s] * sc.time_scale for s in stages[1:]), default=0)
            slots = math.ceil(later / cycle)
            releases = _release_offsets(sc, paths, r)
            memory = None if cap is None else RankMemory(cap, sc.unit, sc.problem.v, admissions[r], gaps,
                                                        slots, releases, flight, allocating)
            self.memory.append(memory)

    def worth_waiting(self, pending: dict[int, tuple[int, int]], task: int, now: int, entry_mb: int) -> bool:
        """Whether a task of smaller key arrives before ``task`` would end (its last input is running
        or in flight, so it surely arrives): then the rank idles for it instead. Entries out of turn
        and F's that would not fit now are not waited for."""
        sc, m = self.sc, self.sc.m
        key, end = self.keys[task], now + sc.dur[task // m]
        for other, (other_key, ready) in pending.items():
            if other_key >= key or ready >= end:
                continue
            sk, mb = divmod(other, m)
            r = sc.rank[sk]
            if sc.delta[sk] > 0:
                entry = sk == sc.entry[r]
                if (entry and mb != entry_mb) or (self.memory[r] is not None
                                                  and not self.memory[r].safe(mb, entry, now)):
                    continue
            return True
        return False

    def run(self) -> tuple[list[int], tuple[tuple[int, ...], ...]]:
        """The dispatch log (a topological order) and the per-rank orders, as task ids: dispatch on
        every free rank whose ready set changed, then advance to the next event, until none is left."""
        self._reset()
        for task in range(self.n):
            if self.remaining[task] == 0:
                self._make_ready(task)
        now, events, dirty, is_dirty, busy = 0, self.events, self.dirty, self.is_dirty, self.busy
        pick, begin = self._pick, self._begin
        while True:
            for r in dirty:  # dispatching never marks a rank dirty, so the list is stable here
                is_dirty[r] = False
                if not busy[r] and (task := pick(r, now)) >= 0:
                    begin(r, task, now)
            dirty.clear()
            if not events:
                break
            now = events[0] // self.two_n
            self._advance(now)
        if len(self.log) != self.n:  # impossible by the module doc's argument; never return a partial plan
            raise ScheduleError(f"list scheduler stalled after {len(self.log)} of {self.n} tasks")
        return self.log, tuple(tuple(o) for o in self.orders)

    def _reset(self) -> None:
        """The event loop's state, in ints and lists (the hot paths read it through local names)."""
        sc = self.sc
        p, m = sc.problem.p, sc.m
        self.m, self.rank_of, self.entry_sk, self.delta, self.dur, self.succs = \
            m, sc.rank, sc.entry, sc.delta, sc.dur, sc.succs
        self.n = sc.num_sk * m
        self.two_n = 2 * self.n
        """Events are end * two_n + 2 * task + arrival: one integer heap, by time first. Within one time
        the order does not matter: ``_advance`` handles every event at ``now`` before any dispatch."""
        self.remaining = [len(sc.preds[sk]) for sk in range(sc.num_sk) for _ in range(m)]
        self.ready_at = [0] * self.n
        self.heaps: list[list[int]] = [[] for _ in range(p)]
        self.next_entry = [0] * p
        self.waiting: list[set[int]] = [set() for _ in range(p)]
        """Per rank: entry microbatches whose inputs arrived out of turn (entries go in index order)."""
        self.busy = [False] * p
        self.orders: list[list[int]] = [[] for _ in range(p)]
        self.log: list[int] = []
        self.events: list[int] = []
        self.dirty: list[int] = []
        self.is_dirty = [False] * p
        self.pending: list[dict[int, tuple[int, int]]] = [{} for _ in range(p)]
        """Per rank (wait variants): tasks whose last input is running or in flight -> (key, ready time)."""

    def _make_ready(self, task: int) -> None:
        sk, mb = divmod(task, self.m)
        r = self.rank_of[sk]
        if self.wait:
            self.pending[r].pop(task, None)
        if sk == self.entry_sk[r] and mb != self.next_entry[r]:
            self.waiting[r].add(mb)
            return
        heappush(self.heaps[r], self.keys[task] * self.n + task)
        if not self.is_dirty[r]:
            self.is_dirty[r] = True
            self.dirty.append(r)

    def _pick(self, r: int, now: int) -> int:
        """Rank r's ready task of smallest key that is safe to start (-1: none, or a better one is
        surely on its way and worth waiting for); every other popped task goes back on the heap."""
        heap, n, m = self.heaps[r], self.n, self.m
        delta, memory, entry = self.delta, self.memory[r], self.entry_sk[r]
        blocked = []
        task = -1
        while heap:
            key = heappop(heap)
            cand = key % n
            sk = cand // m
            blocked.append(key)
            if delta[sk] > 0 and memory is not None and not memory.safe(cand - sk * m, sk == entry, now):
                continue
            task = cand
            break
        if task >= 0 and self.wait and self.worth_waiting(self.pending[r], task, now, self.next_entry[r]):
            task = -1
        if task >= 0:
            blocked.pop()
        for key in blocked:
            heappush(heap, key)
        return task

    def _begin(self, r: int, task: int, now: int) -> None:
        """Starts ``task`` on rank r: memory, order, its completion event, and the next entry in turn."""
        m = self.m
        sk, mb = divmod(task, m)
        entry = sk == self.entry_sk[r]
        if self.delta[sk] > 0 and self.memory[r] is not None:
            self.memory[r].allocate(mb, entry, now)
        self.busy[r] = True
        self.orders[r].append(task)
        self.log.append(task)
        end = now + self.dur[sk]
        heappush(self.events, end * self.two_n + 2 * task)
        if self.wait:
            for ssk, lag in self.succs[sk]:
                succ = ssk * m + mb
                if self.remaining[succ] == 1:
                    ready = max(self.ready_at[succ], end + lag)
                    self.pending[self.rank_of[ssk]][succ] = (self.keys[succ], ready)
        if entry:
            nxt = self.next_entry[r] = mb + 1
            if nxt in self.waiting[r]:
                self.waiting[r].discard(nxt)
                heappush(self.heaps[r], self.keys[sk * m + nxt] * self.n + sk * m + nxt)

    def _advance(self, now: int) -> None:
        """Handles every event at ``now``: arrivals make tasks ready, completions free their rank."""
        events, two_n, make_ready, finish = self.events, self.two_n, self._make_ready, self._finish
        while events and events[0] // two_n == now:
            code = heappop(events) % two_n
            task, arrival = code >> 1, code & 1
            if arrival:
                make_ready(task)
            else:
                finish(task, now)

    def _finish(self, task: int, now: int) -> None:
        """A completion: frees the rank (and the memory an I, W or B releases), and counts down the
        successors, which become ready now or at their inputs' arrival."""
        m = self.m
        sk, mb = divmod(task, m)
        r = self.rank_of[sk]
        self.busy[r] = False
        if not self.is_dirty[r]:
            self.is_dirty[r] = True
            self.dirty.append(r)
        if self.delta[sk] < 0 and self.memory[r] is not None:
            self.memory[r].release(mb, self.delta[sk])
        remaining, ready_at = self.remaining, self.ready_at
        for ssk, lag in self.succs[sk]:
            succ = ssk * m + mb
            if now + lag > ready_at[succ]:
                ready_at[succ] = now + lag
            remaining[succ] -= 1
            if remaining[succ] == 0:
                if ready_at[succ] <= now:
                    self._make_ready(succ)
                else:
                    heappush(self.events, ready_at[succ] * self.two_n + 2 * succ + 1)
