# sed -i '83s/math.floor(cap \* problem.v \* den)/math.ceil(cap * problem.v * den)/' solvers/cap_sequence.py
# sed -i '103s/if len(tasks) > 12:/if len(tasks) > 2:/' solvers/cap_sequence.py
# sed -i '116s/ + length\[i\]//' solvers/cap_sequence.py
# sed -i '79s/for q in range(last + 1)/for q in stages/' solvers/cap_sequence.py
# sed -i '156s/starts\[-1\] + tf if starts else 0/starts[-1] if starts else 0/' solvers/cap_sequence.py
"""``solvers.cap_sequence`` on hand-checked cases: the room a fractional cap leaves, and the release
profile of a rank with two stages, the floors the forward chain and the rank's own forwards set."""

from __future__ import annotations

from fractions import Fraction
from itertools import pairwise

from schedc.problem import Problem
from schedc.solvers.bounds import lower_bound
from schedc.solvers.cap_sequence import forward_floors, release_profile, sequence_bound
from schedc.solvers.list_scheduler import best_list_result


def test_a_fractional_cap_leaves_room_for_whole_shares_only() -> None:
    """p=2, w_mem=1 (W frees the whole activation), cap 3/2: a second activation never fits next to a
    first, so rank 0 runs one microbatch's round trip F0 F1 I1 I0 W0 (5 units) at a time: 4 x 5 = 20,
    which the list scheduler reaches. The room for the other microbatches is floor(3/2 - 1) = 0 whole
    shares; rounding it up to 1 let a second activation in and the bound fell to 17."""
    problem = Problem(p=2, m=4, w_mem=1, mem=Fraction(3, 2))
    assert sequence_bound(problem, 0, relative=False) == 20
    assert lower_bound(problem) == 20 == best_list_result(problem).makespan


def test_the_release_profile_runs_one_release_task_at_a_time() -> None:
    """p=1, v=2 (stages 0 and 1 on rank 0, costs 1, 1, 3 each), w_mem=1/2: units of 1/4 activation,
    each I and W frees 1. From F(1)'s start: F(1) ends at 1, I(1) at 2, I(0) at 3 (it needs I(1)); then
    one W (3 long) at 6, the other at 9. So (2, 3, 6, 9) frees (1, 2, 3, 4). With the task lengths left
    out every release seemed done at its earliest start; a cut-off of 2 tasks instead of 12 gave the
    'everything at once' profile ((0,), (4,)) to any rank with two split stages."""
    problem = Problem(p=1, m=4, v=2, tf=2, tb=2, tw=6)
    assert [problem.duration(k, s) for s in (0, 1) for k in "FIW"] == [1, 1, 3] * 2
    assert release_profile(problem, 0, 1) == ((2, 3, 6, 9), (1, 2, 3, 4))


def test_the_forward_chain_from_stages_on_other_ranks_floors_the_sequence() -> None:
    """p=2, stage costs (2, 2, 0) and (1, 1, 2), comm 2, cap 1 on rank 1 (w_mem=1/3): F(1, 0) cannot
    start before 2 + 2 = 4 (F(0, 0) on rank 0, then the link), and with one activation on rank 1 each
    microbatch's F1 I1 W1 (1 + 1 + 2) ends before the next F1: F(1, 3) >= 4 + 3 x 4 = 16; then F1,
    I1, the link and I0 take 1 + 1 + 2 + 2: 22, which the list scheduler reaches. Floors from the
    rank's own stages only lost the head of 4 (bound 20)."""
    problem = Problem(p=2, m=4, stage_costs=[(2, 2, 0), (1, 1, 2)], comm=2, mem=(3, 1),
                      w_mem=Fraction(1, 3))
    assert forward_floors(problem, 1) == (4, 8, 12, 16)
    assert lower_bound(problem) == 22 == best_list_result(problem).makespan


def test_the_last_forwards_of_a_rank_are_at_least_one_forward_apart() -> None:
    """One rank runs its F(s_v)'s one at a time, so L_j >= L_(j-1) + tf(s_v) (module doc). p=1, v=2,
    stage costs (1, 1, 1) and (2, 1, 1), cap 2: F(1, 0) at 1 (after F(0, 0)), F(1, 1) no earlier than
    1 + 2 = 3 (the cap, two activations of half a unit each, does not bind yet). Without that floor
    the second came out at 2."""
    problem = Problem(p=1, m=4, v=2, stage_costs=[(1, 1, 1), (2, 1, 1)], mem=2)
    floors = forward_floors(problem, 0)
    assert floors[:2] == (1, 3)
    assert all(later >= earlier + 2 for earlier, later in pairwise(floors))
