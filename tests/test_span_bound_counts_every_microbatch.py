# sed -i '239s/carried(Fraction(n), True)/carried(Fraction(n), False)/' solvers/bounds.py
# sed -i '257s/problem.m \* problem.duration(\*key)/problem.duration(*key)/' solvers/bounds.py
"""The span bound's terms (solvers/bounds.py span_lower_bound): the one-rank term weighs each
(kind, stage) group by its m tasks, and term 5 counts whole weight-only activations."""

from __future__ import annotations

from fractions import Fraction

from schedc.problem import Problem
from schedc.solvers.bounds import span_lower_bound
from schedc.solvers.list_scheduler import best_list_result
from tests.exhaustive import optimum


def test_a_ranks_span_holds_all_of_its_work() -> None:
    """p = 2, m = 3, unit costs, no cap: each rank runs its 3 kinds for 3 microbatches one at a
    time, so its span is at least 9 (what GPipe-like plans reach on the last rank). Counting each
    group once (one microbatch's duration) gave 3 + the rank-relative tails, well below 9."""
    assert span_lower_bound(Problem(p=2, m=3)) >= 3 * 3


def test_the_span_warmup_term_counts_whole_weight_only_activations() -> None:
    """Term 5 on a rank's span: below EXACT_OPEN_WORK the activations awaiting only W are whole
    (w_mem = 1: each holds a full 1/v, so floor(5/2 - n_I) of them fit). Counting fractional ones
    (the relaxation's unfloored room) overstated the open work and gave 55/4; the exhaustive best
    span over every microbatch order is 14, which the bound reaches."""
    problem = Problem(p=2, m=4, tf=2, tb=Fraction(1, 2), tw=Fraction(1, 2), w_mem=1, mem=Fraction(5, 2))
    upper = best_list_result(problem).makespan
    assert span_lower_bound(problem) == optimum(problem, "span", upper=upper) == 14
