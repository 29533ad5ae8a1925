# sed -i '238s/if most <= EXACT_OPEN_WORK/if most < 0/' solvers/bounds.py
# sed -i '105s/best = max(best, h + work + q0)/best = max(best, h + work)/' solvers/bounds.py
# sed -i '150s/(alive + problem.w_mem \* pending)/(alive + pending)/' solvers/bounds.py
# sed -i '230s/both = max(/both = min(/' solvers/bounds.py
# sed -i '235s/min(total - n_i,/min(total,/' solvers/bounds.py
# sed -i '234s/if w else Fraction(total)/if w else Fraction(0)/' solvers/bounds.py
"""Terms of solvers/bounds.py pinned to the exhaustive optimum: where a weakened term would still
pass every "bound <= plan" check, and where a wrong one would rise above the optimum (a false
optimality claim)."""

from __future__ import annotations

from fractions import Fraction

from schedc.problem import Problem
from schedc.solvers.bounds import lower_bound
from schedc.solvers.list_scheduler import best_list_result
from tests.exhaustive import optimum


def test_the_one_rank_term_adds_the_least_tail_of_the_set() -> None:
    """Term 2 with a tail: rank 1 (stage 1: F 2, I 2, W 0) runs its 3 F and 3 I one at a time from
    head 1, and after its last I at least I(0) + W(0) = 2 follows: 1 + 12 + 2 = 15, the exhaustive
    optimum. Dropping the min tail from Jackson's sum gave 1 + 12 + 0 = 13 (all of rank 1's work)."""
    problem = Problem(p=2, m=3, stage_costs=[(1, 1, 1), (2, 2, 0)])
    upper = best_list_result(problem).makespan
    assert lower_bound(problem) == optimum(problem, upper=upper) == 1 + 3 * (2 + 2) + (1 + 1)


def test_the_level_term_weighs_pending_weight_gradients_by_w_mem() -> None:
    """Term 3's level form counts a W-pending activation at w_mem of a full one: with w_mem = 0 the
    two W's of p = 1, m = 2 (tw = 3) hold no memory, so they may run after every I and the optimum
    is all of the rank's work, 2 * (1 + 1 + 3) = 10. Counting the W time at full weight gave 11, a
    bound above the exhaustive optimum (a false optimality claim)."""
    problem = Problem(p=1, m=2, tf=1, tb=1, tw=3, w_mem=0, mem=Fraction(5, 4))
    upper = best_list_result(problem).makespan
    assert optimum(problem, upper=upper) == 2 * (1 + 1 + 3)
    assert lower_bound(problem) <= optimum(problem, upper=upper)


def test_the_open_work_takes_the_costliest_backward_of_the_ranks_stages() -> None:
    """Term 5's A: an activation awaiting I may be of either of rank 0's stages (0 and 2 here), so
    it carries up to the largest I + W of them (stage 0: 3 + 1/2). Taking the cheapest (stage 2:
    1 + 1) understated the work that may follow the last forward and raised the bound to 18,
    above the exhaustive optimum 25/2 (a false optimality claim)."""
    problem = Problem(p=2, m=1, v=2, mem=3, w_mem=1,
                      stage_costs=[(1, 3, Fraction(1, 2)), (1, 1, Fraction(1, 2)), (1, 1, 1), (3, 1, 1)])
    best = optimum(problem, upper=best_list_result(problem).makespan)
    assert best == Fraction(25, 2)
    assert lower_bound(problem) <= best


def test_the_open_work_counts_each_activation_once() -> None:
    """Term 5's A: of the m * (stages) activations of rank 0, n_I await I and at most the other
    total - n_I can await only W. Letting all of them await W as well (min(total, room)) counted
    activations twice, overstated the work after the last forward and dropped the bound from the
    exhaustive optimum 22 to 43/2. Below EXACT_OPEN_WORK the split must be counted exactly too:
    the unfloored relaxation (meant only for huge counts) overstates A here as well."""
    problem = Problem(p=2, m=3, tf=Fraction(1, 2), tb=3, tw=2, w_mem=Fraction(1, 4), mem=2, comm=1)
    assert lower_bound(problem) == optimum(problem, upper=best_list_result(problem).makespan) == 22


def test_weight_gradients_that_hold_no_memory_can_all_be_pending() -> None:
    """Term 5's A with w_mem = 0: an activation awaiting only W holds nothing, so every activation
    not awaiting I may await W after the last forward starts. Allowing none of them (room 0 instead
    of unlimited) understated A and raised the bound to 17, above the exhaustive optimum 33/2 of
    p = 2, m = 2, tf = tb = 2, tw = 1/2, cap 5/4 (a false optimality claim)."""
    problem = Problem(p=2, m=2, tf=2, tb=2, tw=Fraction(1, 2), w_mem=0, mem=Fraction(5, 4))
    best = optimum(problem, upper=best_list_result(problem).makespan)
    assert best == Fraction(33, 2)
    assert lower_bound(problem) <= best
