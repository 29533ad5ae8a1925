"""Activation memory of one capped rank, for the list scheduler: the banker's test and the
admission policies. Integer units (``scaled.py``); a stage activation is ``unit``.

Safety (the deadlock-freedom argument is in ``list_scheduler``'s module doc): over the microbatches
that entered the rank and still hold or need memory there, in index order k_1 < k_2 < ..., the state
is safe when need(k_j) + sum_{i >= j} held(k_i) <= cap for every j. An allocation by k_j tightens
only the tests of k_i, i < j; a release loosens them all.

Admission policies add a test when a new microbatch enters the rank (its first stage's F); they never
forbid the entry of the only microbatch in flight, so they keep the argument intact. So does the
in-flight limit (``flight``, the list scheduler's 'kN' windows): at most N >= 1 microbatches entered
and not yet done on the rank; and so does the allocating limit (``allocating``, its 'aN' windows): at
most N >= 1 microbatches entered that still have an F to run on the rank.

* banker: no extra test.
* room: keep room for one more F of the microbatches in flight (v - 1 activations).
* due: keep room for the remaining F's of every microbatch in flight whose next F here is due, that
  is, whose entry was at least the one-microbatch head difference between the stages ago: it may
  arrive any moment, and a newcomer must not take its memory.
* overlap: keep room for the remaining F's of as many microbatches in flight as will overlap on the
  rank's later stages: their activation lives about a round trip RT(s), microbatches arrive about a
  cycle apart (the busiest rank's time per microbatch), so ceil(RT / cycle) of them (``slots``).
* forecast: project the rank's level over the time until the newcomer's own next F, from the
  one-microbatch offsets (each microbatch in flight allocates its remaining F's and frees its remaining
  activations at its entry time plus those offsets; a release already overdue is not counted on) and
  admit only if the projection stays within the cap at every allocation.
* reserve: keep room for every remaining F of every microbatch in flight (each holds its full unit
  from its entry on).
* lookahead: forecast's projection, over the time until the newcomer's last F on the rank rather
  than its next (the same with two stages per rank). With four, forecast let eight microbatches
  into stage 0 of p=8 m=16 v=4 mem=4 while the first went on alone through the deeper stages, whose
  F's found the cap full of early ones (70.5; 64.5 the best of every variant); lookahead lets in
  four, then one more as each deepest-stage activation frees: 55.75, the optimum.
"""

from __future__ import annotations

ADMISSIONS = ("banker", "room", "overlap", "due", "forecast", "reserve", "lookahead")


class RankMemory:
    """One capped rank's memory state in the list engine, asked before every F whether it may
    start now: the banker's test keeps the state safe (module doc), and the policy may hold a new
    microbatch back to keep room for those in flight."""

    __slots__ = ("allocating", "cap", "due", "entered", "flight", "full", "gaps", "held", "level", "live",
                 "need", "needed", "policy", "releases", "slots", "unit")

    def __init__(self, cap: int, unit: int, v: int, policy: str, gaps: tuple[int, ...], slots: int,
                 releases: tuple[tuple[int, int], ...] = (), flight: int | None = None,
                 allocating: int | None = None) -> None:
        """``gaps[j]``: ticks from the entry F's start to the start of the F of the rank's stage j;
        ``slots``: microbatches in flight whose later F's the 'overlap' policy keeps room for;
        ``releases``: (ticks from the entry F's start to the end, units freed) of each release task
        of one microbatch on the rank, in time order (for 'forecast'); ``flight``: the most microbatches
        in flight (entered, and holding or still needing memory here); ``allocating``: the most of them
        still needing memory here (an F of theirs still to run on the rank)."""
        self.cap, self.unit, self.full, self.policy, self.gaps = cap, unit, v * unit, policy, gaps
        self.slots, self.releases, self.flight, self.allocating = slots, releases, flight, allocating
        self.level = 0
        self.held: dict[int, int] = {}
        self.need: dict[int, int] = {}
        self.needed = 0  # sum(need.values()), kept as it changes
        self.due: dict[int, int] = {}
        self.entered: dict[int, int] = {}
        self.live: list[int] = []

    def safe(self, mb: int, entry: bool, now: int) -> bool:
        """Whether an F of ``mb`` (the rank's entry F when ``entry``) may allocate now."""
        cap, unit, level = self.cap, self.unit, self.level
        if entry and not self._admits(now):
            return False
        if level + self.full <= cap:
            return True  # every need is <= (v - 1) units: all tests hold with room to spare
        held, need = self.held, self.need
        prefix = 0
        for k in self.live:
            if k >= mb:
                break
            h = held.get(k)
            if h is None:
                continue
            if need[k] + level - prefix + unit > cap:
                return False
            prefix += h
        return level + unit <= cap if entry else True

    def _admits(self, now: int) -> bool:
        """The policy's test for one more entry (one activation now, full - unit later)."""
        policy, later = self.policy, self.full - self.unit
        if self.flight is not None and len(self.held) >= self.flight:
            return False
        if self.allocating is not None and sum(1 for n in self.need.values() if n) >= self.allocating:
            return False
        if policy == "banker":
            return True
        if policy == "room":
            return self.level + self.unit + later <= self.cap
        if policy == "overlap":
            room = min(self.needed + later, self.slots * later)
            return self.level + self.unit + room <= self.cap
        if policy == "reserve":
            return self.level + self.needed + self.full <= self.cap
        if policy == "forecast" or policy == "lookahead":
            gaps = self.gaps  # gaps[0] is the entry's own 0
            return self._forecast_fits(now, gaps[-1] if policy == "lookahead" or len(gaps) < 2 else gaps[1])
        pending = sum(n for k, n in self.need.items() if n and self.due[k] <= now)
        return self.level + pending + self.unit <= self.cap

    def _forecast_fits(self, now: int, ahead: int) -> bool:
        """Whether the projected level stays within the cap at every allocation until ``ahead``
        ticks from now (the newcomer's next F, or its last on the rank). Only events up to that
        horizon are listed: near a million tasks this test took half of a list run."""
        gaps, unit, full = self.gaps, self.unit, self.full
        if self.level + full + self.needed <= self.cap:
            return True  # every allocation to come, with no release, fits: so does the projection
        horizon = now + ahead
        events = [(now + g, 1, unit) for g in gaps[1:] if g <= ahead]  # +: after releases
        for k, start in self.entered.items():
            need = self.need[k]
            for g in gaps[(full - need) // unit:]:
                if start + g <= horizon:
                    events.append((max(now, start + g), 1, unit))
            freed = (full - need) - self.held[k]
            for offset, amount in self.releases:
                if freed >= amount:
                    freed -= amount
                    continue
                if now <= start + offset <= horizon:
                    events.append((start + offset, 0, -(amount - freed)))
                freed = 0
        level = self.level + unit
        for _, is_alloc, delta in sorted(events):
            level += delta
            if is_alloc and level > self.cap:
                return False
        return True

    def allocate(self, mb: int, entry: bool, now: int) -> None:
        unit = self.unit
        self.level += unit
        if entry:
            self.live.append(mb)
            self.held[mb] = unit
            self.need[mb] = self.full - unit
            self.needed += self.full - unit
            self.due[mb] = now + (self.gaps[1] if len(self.gaps) > 1 else 0)
            self.entered[mb] = now
            return
        self.held[mb] += unit
        self.need[mb] -= unit
        self.needed -= unit
        done = (self.full - self.need[mb]) // unit
        if done < len(self.gaps):
            self.due[mb] += self.gaps[done] - self.gaps[done - 1]

    def release(self, mb: int, delta: int) -> None:
        self.level += delta
        held = self.held
        held[mb] += delta
        if held[mb] == 0 and self.need[mb] == 0:
            del held[mb], self.need[mb], self.due[mb], self.entered[mb]
            if len(self.live) > 2 * len(held) + 8:
                self.live = [k for k in self.live if k in held]
