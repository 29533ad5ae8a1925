# sed -i '225s/forward = max(/forward = min(/' solvers/bounds.py
# sed -i '102s/if q >= q0:/if q > q0:/' solvers/bounds.py
# sed -i '167s/start + count_time + alive_tail/start + count_time + release_tail/' solvers/bounds.py
# sed -i '200s/math.floor(cap/math.ceil(cap/' solvers/bounds.py
# sed -i '213s/take = min(count, problem.m)/take = count/' solvers/bounds.py
# sed -i '227s/math.floor(cap \* v)/math.ceil(cap * v)/' solvers/bounds.py
# sed -i '259s/relative=True/relative=False/' solvers/bounds.py
# sed -i '259s/r, h, t)/r, paths.head, paths.tail)/' solvers/bounds.py
# sed -i '125s/_cap_terms(problem, r)/_cap_terms(problem, 0)/' solvers/bounds.py
"""The analytic bound's terms at their exact values where they are tight (solvers/bounds.py): a term
that comes out weaker than its derivation still passes every "bound <= plan" check, so these pin
the bound to the exhaustive optimum, or to the module doc's formula worked out by hand; and the span
bound stays rank-relative (a makespan term there claims more than a rank's span)."""

from __future__ import annotations

from fractions import Fraction

from schedc.baselines import baseline_plan
from schedc.plan import Plan
from schedc.problem import Problem
from schedc.solvers.bounds import lower_bound, rank_terms, span_lower_bound
from schedc.solvers.list_scheduler import best_list_result
from tests.exhaustive import optimum


def test_one_rank_is_bounded_by_all_of_its_work() -> None:
    """Term 2 (Jackson) over the set of every task of the rank: with p = 1 all 3m tasks of cost 1 run
    one at a time, so 9 for m = 3, which GPipe reaches. Leaving out the tasks whose head equals the
    set's least head (the set's own first task) dropped the forwards: 6."""
    problem = Problem(p=1, m=3)
    assert lower_bound(problem) == 3 * (1 + 1 + 1) == baseline_plan("gpipe", problem).makespan


def test_the_count_term_ends_with_the_least_tail_of_the_fully_alive_activations() -> None:
    """Term 3's count form: floor(v cap) = floor(5/2) = 2 stage activations fully alive at once on
    rank 0 (stages 0 and 2, F 2, I 1/2, W 1/4). Round trips from F to the end of I: 8 + 2 = 10 (stage
    0) and 4 + 1 = 5 (stage 2), an area of 4 * (10 + 5) = 60 under 2 slots; the ramps
    (``memory_ramps``) add 2 for the first forward (one slot filled for its 2) and 1/4 for the last
    I's (1 + 2y under 2 for the last 1/2), so the window is at least (60 + 9/4) / 2; after the last I
    ends at least the least tail of rank 0's I's follows, W(0)'s 1/4. The least tail of all
    releasers (a W's 0) belongs to the level form only, and gave 30 (without the ramps)."""
    problem = Problem(p=2, m=4, v=2, tf=4, tb=1, tw=Fraction(1, 2), mem=Fraction(5, 4))
    assert lower_bound(problem) == (4 * (10 + 5) + Fraction(9, 4)) / 2 + Fraction(1, 4)
    assert lower_bound(problem) <= best_list_result(problem).makespan


def test_the_warmup_term_counts_the_whole_forwards_that_fit_under_the_cap() -> None:
    """Term 5, p = 2, m = 4, tb = 2, cap 5/2: rank 0 frees nothing before I(0, 0) can start at
    1 + 1 + 2 = 4, and floor(5/2) = 2 forwards fit under its cap, so it idles 2 of those 4: then
    4 + 16 - 2 = 18, the exhaustive optimum. Three forwards (the ceiling) gave 17."""
    problem = Problem(p=2, m=4, tb=2, mem=Fraction(5, 2))
    assert lower_bound(problem) == optimum(problem, upper=best_list_result(problem).makespan) == 18


def test_the_warmup_term_takes_at_most_m_forwards_of_a_stage() -> None:
    """Term 5 with per-stage costs: rank 0 (stages 0 and 2) fits floor(3/2 * 2) = 3 forwards, but
    stage 0 (forward 2) has only m = 2 of them, so the longest three are 2 + 2 + 1 = 5 < 6, the wait
    for I(2, 0): 6 + 14 - 5 = 15, the exhaustive optimum. Three forwards of stage 0 gave 14."""
    problem = Problem(p=2, m=2, v=2, stage_costs=[(2, 1, 1), (1, 1, 1), (1, 1, 1), (1, 1, 1)],
                      mem=Fraction(3, 2), w_mem=0)
    assert lower_bound(problem) == optimum(problem, upper=best_list_result(problem).makespan) == 15


def test_the_open_work_counts_only_whole_activations_under_the_cap() -> None:
    """Term 5's A: at most floor(v cap) = floor(5/2) = 2 activations await their I on rank 0; the
    ceiling (3) let more work run after the last forward and lowered the bound from the exhaustive
    optimum 15/2 to 29/4."""
    problem = Problem(p=2, m=2, v=2, tw=Fraction(1, 2), mem=Fraction(5, 4))
    best = optimum(problem, upper=best_list_result(problem).makespan)
    assert lower_bound(problem) == best == Fraction(15, 2)


def test_the_span_bound_measures_from_the_ranks_own_first_start() -> None:
    """m = 1, stage 1's W of 3: the one schedule (GPipe's, within cap 1) runs rank 0 over [0, 5]
    and rank 1 over [1, 6], both spans 5, makespan 6. The cap terms of the span bound use heads and
    tails relative to rank 1's first start; the global ones (its start at 1 counted in) claimed 6."""
    problem = Problem(p=2, m=1, stage_costs=[(1, 1, 1), (1, 1, 3)], mem=1)
    plan = baseline_plan("gpipe", problem)
    assert plan.fits() and plan.timeline.spans == (5, 5) and plan.makespan == 6
    assert span_lower_bound(problem) <= plan.timeline.max_span


def test_rank_terms_are_the_ranks_own() -> None:
    """``rank_terms(problem, r)``: an uncapped rank has no cap terms (0), whatever rank 0's cap; the
    relaxation orders ranks by these terms."""
    problem = Problem(p=2, m=4, mem=(1, None))
    assert rank_terms(problem, 1)[1:] == (0, 0, 0)
    assert min(rank_terms(problem, 0)[1:]) > 0


def test_the_open_work_after_the_last_forward_includes_the_longest_forward() -> None:
    """Term 5's A starts with the one forward already running when the last one has started: on a
    rank whose stages have forwards of 5/2 and 4, that may be the longest. Taking the shortest made A
    too small and the bound 53, above a plan within the cap that ends at 103/2."""
    half = Fraction(1, 2)
    problem = Problem(p=2, m=6, v=2, stage_costs=[(Fraction(5, 2), half, half), (half, half, half), (4, 1, 0),
                                                  (1, Fraction(3, 2), half)], mem=Fraction(9, 4))
    plan = Plan(problem=problem, orders=best_list_result(problem).orders, source="list")
    assert plan.fits() and plan.makespan == Fraction(103, 2)
    assert lower_bound(problem) <= plan.makespan
