# sed -i '48s/paths.rank_head\[r\]\["F", s\]/paths.head["F", s]/' solvers/list_engine.py
# sed -i '49s/stages\[1:\]/stages/' solvers/list_engine.py
# sed -i '50s/math.ceil(later \/ cycle)/later \/\/ cycle/' solvers/list_engine.py
# sed -i '49s/paths.round_trip\[s\] \* sc.time_scale/paths.round_trip[s]/' solvers/list_engine.py
# sed -i '194s/problem.stage_rank\[0\]/problem.stage_rank[-1]/' solvers/list_scheduler.py
"""What the list engine hands each rank's admission policy (``admission.RankMemory``): ``gaps``, the
ticks from the entry F's start to each later F of the rank ('due' and 'forecast' time the later
allocations with them), and ``slots``, ceil(RT / cycle) over the rank's later stages ('overlap'
keeps room for that many microbatches), and which rank gets a variant's entry admission. Checked
against hand-computed paths: a slip in any still gives valid plans, only with memory kept back at
the wrong times or on the wrong rank."""

from __future__ import annotations

from fractions import Fraction

from schedc.problem import Problem
from schedc.solvers.list_engine import Engine
from schedc.solvers.list_portfolio import Variant
from schedc.solvers.list_scheduler import run_variant
from schedc.solvers.priorities import cycle_ticks, task_keys
from schedc.solvers.scaled import scaled

# Looped, p = 2, v = 3: rank r holds stages r, r + 2, r + 4; every hop between stages crosses ranks.
PROBLEM = Problem(p=2, m=4, v=3, tf=1, tb=1, tw=1, comm=Fraction(1, 2), mem=3)
S = PROBLEM.num_stages


def _round_trip(s: int) -> Fraction:
    """F(s)'s start to I(s)'s end: F's down to the last stage, I's back up, comm on every hop."""
    down_and_up = sum(PROBLEM.duration("F", j) + PROBLEM.duration("I", j) for j in range(s, S))
    return down_and_up + 2 * (S - 1 - s) * PROBLEM.comm


def _engine() -> Engine:
    sc = scaled(PROBLEM)
    return Engine(sc, task_keys(sc, "zb"), list(sc.caps), ("overlap",) * PROBLEM.p)


def test_gaps_count_from_the_ranks_own_entry() -> None:
    """Rank r's later F's start 2 and 4 hops of F + comm after its entry F, on every rank (not
    after the pipeline's first F, which would shift rank 1's by one hop)."""
    hop = (PROBLEM.duration("F", 0) + PROBLEM.comm) * PROBLEM.time_scale
    for r, memory in enumerate(_engine().memory):
        assert memory is not None
        assert memory.gaps == (0, 2 * hop, 4 * hop), r


def test_slots_are_the_later_stages_round_trip_in_cycles_rounded_up() -> None:
    """One cycle is the busiest rank's work per microbatch, 3 stages of F + I + W at 1/3 each = 3
    (the cap of 3 activations does not stretch it); rank 0's later stages' longest round trip is
    RT(2) = 17/3, so 2 slots, rank 1's is RT(3) = 4, so 2 as well (its entry stage's RT(1) = 22/3
    does not count: it would make 3)."""
    sc = scaled(PROBLEM)
    assert cycle_ticks(sc) == 3 * sc.time_scale
    assert (_round_trip(2), _round_trip(3), _round_trip(1)) == (Fraction(17, 3), 4, Fraction(22, 3))
    slots = [m.slots for m in _engine().memory if m is not None]
    assert slots == [2, 2]


def test_the_entry_admission_goes_to_the_rank_that_holds_stage_zero() -> None:
    """Looped: stage 0 is on rank 0 and the last stage on rank p - 1 (on a V shape both are on
    rank 0, so only a looped problem tells them apart). A variant's entry admission is rank 0's."""
    problem = Problem(p=4, m=8, v=2, mem=Fraction(3, 2), comm=Fraction(1, 2), tb=2)
    sc = scaled(problem)
    keys = task_keys(sc, "lst")
    on_first = Engine(sc, keys, list(sc.caps), ("reserve", "banker", "banker", "banker")).run()[1]
    on_last = Engine(sc, keys, list(sc.caps), ("banker", "banker", "banker", "reserve")).run()[1]
    assert on_first != on_last
    assert run_variant(problem, Variant("lst", "none", "banker", entry="reserve")).order_ids == on_first
