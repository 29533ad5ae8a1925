# sed -i '85s/prefix += h/prefix = h/' solvers/admission.py
# sed -i '106s/gaps\[-1\] if policy/gaps[1] if policy/' solvers/admission.py
# sed -i '107s/self.due\[k\] <= now/self.due[k] < now/' solvers/admission.py
# sed -i '108s/pending + self.unit <= /pending <= /' solvers/admission.py
# sed -i '106s/else gaps\[1\])/else gaps[-1])/' solvers/admission.py
# sed -i '123s/(max(now, start + g), 1, unit)/(start + g, 1, unit)/' solvers/admission.py
# sed -i '124s/freed = \(.*\)$/freed = -(\1)/' solvers/admission.py
# sed -i '122s/if start + g <= horizon:/if True:/' solvers/admission.py
# sed -i '118s/ if g <= ahead\]/]/' solvers/admission.py
# sed -i '129s/if now <= start + offset <= horizon:/if now < start + offset <= horizon:/' solvers/admission.py
# sed -i '155s/self.gaps\[done\] - self.gaps\[done - 1\]/self.gaps[done]/' solvers/admission.py
"""``admission.RankMemory`` on hand-built states: the banker's test over several microbatches in
flight, and the 'due', 'forecast' and 'lookahead' policies at the edges of their time windows (module doc)."""

from __future__ import annotations

from schedc.solvers.admission import RankMemory


def _memory(policy: str, cap: int, v: int, gaps: tuple[int, ...],
            releases: tuple[tuple[int, int], ...] = ()) -> RankMemory:
    return RankMemory(cap=cap, unit=1, v=v, policy=policy, gaps=gaps, slots=1, releases=releases)


def test_the_bankers_test_subtracts_everything_older_microbatches_hold() -> None:
    """v=4, cap 8: microbatch 0 holds all 4 units, 1, 2 and 3 one each (needing 3 more). The next F
    of microbatch 3 leaves the state safe: need + what it and every later one holds is 0 + 8, 3 + 4,
    3 + 3 and 2 + 2 after it, all <= 8. For microbatch 2 the test must drop what 0 AND 1 hold
    (3 + 7 - 5 + 1 = 6); dropping only the last one's (3 + 7 - 1 + 1 = 10) refused it."""
    memory = _memory("banker", cap=8, v=4, gaps=(0, 1, 2, 3))
    for _ in range(4):
        memory.allocate(0, entry=not memory.held, now=0)
    for mb in (1, 2, 3):
        memory.allocate(mb, entry=True, now=mb)
    assert memory.level == 7 and memory.need == {0: 0, 1: 3, 2: 3, 3: 3}
    assert memory.safe(3, entry=False, now=4)


def _two_due(policy_cap: int, later_gap: int) -> RankMemory:
    """'due', v=3: microbatches 0 and 1 enter at 0 and run their second F at 2; the third F of each
    is due at entry + gaps[2] = 0 + 5 (``later_gap`` = 5)."""
    memory = _memory("due", cap=policy_cap, v=3, gaps=(0, 2, later_gap))
    for mb in (0, 1):
        memory.allocate(mb, entry=True, now=0)
        memory.allocate(mb, entry=False, now=2)
    return memory


def test_due_keeps_room_for_forwards_that_are_due_exactly_now() -> None:
    """At 5 both in-flight microbatches' last F's are due ('at least the head difference ago'): a
    newcomer needs level 4 + their 2 units + its own 1 = 7 <= cap. The banker's test alone admits it
    at cap 6 (its worst microbatch needs 1 + 4 + 1), so at cap 6 only 'due' refuses it; a strict
    '<' (not yet due at 5) or leaving out the newcomer's unit admitted it."""
    assert not _two_due(6, 5).safe(2, entry=True, now=5)
    assert _two_due(6, 5).safe(2, entry=True, now=4)  # not due yet: the banker's test alone
    assert _two_due(7, 5).safe(2, entry=True, now=5)


def test_due_moves_by_the_gap_between_consecutive_forwards() -> None:
    """After the second F (at 2, gaps 0, 2, 5) the third is due at 5, three ticks after the second:
    the due time moves by gaps[2] - gaps[1], not by gaps[2] (which put it at 7, and let a newcomer in
    at 5 as if nothing were due)."""
    memory = _two_due(6, 5)
    assert memory.due == {0: 5, 1: 5}
    assert not memory.safe(2, entry=True, now=5)


def test_forecast_looks_ahead_only_to_the_newcomers_next_forward() -> None:
    """v=3, cap 5, microbatch 0 holds 3 units (entered at 0, releasing at 10). A newcomer at 3 holds
    one more (4) and its next F at 3 + 1 brings the level to 5: admitted. Its third F (at 5, level 6)
    lies past the forecast's horizon, the newcomer's next F; looking to its last F refused it."""
    memory = _memory("forecast", cap=5, v=3, gaps=(0, 1, 2), releases=((10, 3),))
    for _ in range(3):
        memory.allocate(0, entry=not memory.held, now=0)
    assert memory.safe(1, entry=True, now=3)


def test_forecast_leaves_out_the_forwards_of_microbatches_in_flight_past_its_horizon() -> None:
    """v=3, gaps 0, 1, 10, cap 4: microbatch 0 (entered at 0, one F done) is due for F's at 1 and 10.
    A newcomer at 2 looks to 3: microbatch 0's overdue F (at 2) and its own next F (at 3) reach 4, the
    cap; microbatch 0's F at 10 lies past the horizon and must not refuse it."""
    memory = _memory("forecast", cap=4, v=3, gaps=(0, 1, 10))
    memory.allocate(0, entry=True, now=0)
    assert memory.safe(1, entry=True, now=2)


def test_lookahead_looks_to_the_newcomers_last_forward() -> None:
    """The state above: its third F at 5 takes the level to 6 > 5 before microbatch 0 frees anything
    (at 10), so 'lookahead' refuses the newcomer; with that release by 5 it admits it."""
    for release, admitted in ((10, False), (5, True)):
        memory = _memory("lookahead", cap=5, v=3, gaps=(0, 1, 2), releases=((release, 3),))
        for _ in range(3):
            memory.allocate(0, entry=not memory.held, now=0)
        assert memory.safe(1, entry=True, now=3) is admitted


def test_forecast_places_an_overdue_forward_after_the_releases_due_now() -> None:
    """v=2, gaps 0, 1, cap 4, releases 2 units 5 ticks after entry. Microbatch 0 (entered at 0, both F's
    done) frees 2 at 5; microbatch 1 (entered at 1, one F) is overdue for its second F (due at 2).
    A newcomer at 5: level 3 + 1 = 4, the release at 5 takes it to 2, the overdue F (at 5, after the
    release, as the engine runs completions first) to 3, then the release of microbatch 1 at 6 and the
    newcomer's F at 6: never over 4. Counting the overdue F at 2, before everything, read 5."""
    memory = _memory("forecast", cap=4, v=2, gaps=(0, 1), releases=((5, 2),))
    memory.allocate(0, entry=True, now=0)
    memory.allocate(0, entry=False, now=1)
    memory.allocate(1, entry=True, now=1)
    assert memory.level == 3
    assert memory.safe(2, entry=True, now=5)


def test_forecast_counts_only_what_is_not_yet_freed() -> None:
    """v=2, gaps 0, 2, cap 2, releases of 1 unit at 3 and at 6 after entry. Microbatch 0 (both F's
    done) has freed its first unit already, so at 3 only the one at 6 is still to come, past the
    newcomer's next F at 5: level 1 + 1 + 1 = 3 > 2, refused. With what was freed counted negative
    the forecast took the first release again (2 units at 3) and admitted it."""
    memory = _memory("forecast", cap=2, v=2, gaps=(0, 2), releases=((3, 1), (6, 1)))
    memory.allocate(0, entry=True, now=0)
    memory.allocate(0, entry=False, now=2)
    memory.release(0, -1)
    assert memory.level == 1
    assert not memory.safe(1, entry=True, now=3)


def test_forecast_counts_on_a_release_due_exactly_now() -> None:
    """v=2, gaps 0, 2, cap 3: microbatch 0 (both F's done, level 2) is due to free both units at 3, now.
    Not overdue, so the forecast counts on it: level 2 + 1, then 1 at the release, 2 at the newcomer's
    next F. A strict 'now <' dropped the release and saw 4 > 3 at that F."""
    memory = _memory("forecast", cap=3, v=2, gaps=(0, 2), releases=((3, 2),))
    memory.allocate(0, entry=True, now=0)
    memory.allocate(0, entry=False, now=2)
    assert memory.safe(1, entry=True, now=3)
