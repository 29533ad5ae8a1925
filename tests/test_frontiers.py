# sed -i '80s/math.ceil(i + 1 - ratio)/math.ceil(i + 2 - ratio)/' solvers/symmetry.py
"""With one stage per rank the release frontiers state the cap alone; where a rank has too many
options to state them, the model keeps the cumulative (``symmetry.frontiers_exact``)."""

from __future__ import annotations

from dataclasses import replace
from fractions import Fraction

import pytest
from hypothesis import assume, given, settings
from hypothesis import strategies as st

from schedc.actions import Action
from schedc.plan import Plan
from schedc.problem import Problem
from schedc.solvers.cpsat_model import build_model
from schedc.solvers.cpsat_solve import cpsat_run, solve_model
from schedc.solvers.incumbent import best_incumbent
from schedc.solvers.list_scheduler import run_rule
from schedc.solvers.symmetry import canonical_starts, cap_precedences, frontier_options, frontiers_exact
from tests.exhaustive import optimum


def test_the_cap_holds_where_one_stage_per_rank_has_too_many_frontier_options():
    """v = 1 states the cap by release frontiers alone; with w_mem = 1/2 a cap of 17 has more options
    than MAX_OPTIONS, none were stated, and the model took a schedule that peaks at 17.5."""
    problem = Problem(p=2, m=30, comm=12, tf=1, tb=1, tw=3, mem=17)
    assert not frontiers_exact(problem, 0) and frontiers_exact(Problem(p=2, m=30, mem=4), 0)
    over = Plan(problem=problem, orders=run_rule(replace(problem, mem=(Fraction(35, 2),)), "lst-mb", "none",
                                                  "banker").orders, source="cap 17.5")
    assert max(over.timeline.peak_mem) == Fraction(35, 2)
    starts = canonical_starts(over.timeline)
    cm = build_model(problem, horizon=over.makespan)
    for a, var in cm.starts.items():
        cm.model.add(var == int(starts[a] * cm.scale))
    assert solve_model(cm, time_limit=5, workers=1).status == "INFEASIBLE"


@pytest.mark.parametrize("w_mem", [Fraction(1, 3), Fraction(2, 3), Fraction(1, 4), Fraction(3, 5)])
@pytest.mark.parametrize("cap", [Fraction(4, 3), Fraction(5, 2), Fraction(9, 4), Fraction(11, 5),
                                 Fraction(8, 3)])
def test_every_frontier_option_keeps_one_stage_within_its_cap(w_mem: Fraction, cap: Fraction) -> None:
    """With an option's releases ended (and those ordered before them: microbatch order, W(s, x)
    after I(s, x)) the stage holds (i + 1) - k(1 - w) - l w at the start of F(s, i), k I-ends and l
    W-ends: at most the cap. The other tests' w_mem of 0, 1/2 and 1 and caps on the half grid make
    every share divide what is left, so an option counting one release too few (a ceiling where the
    floor belongs) went unnoticed."""
    problem = Problem(p=1, m=8, mem=cap, w_mem=w_mem)
    assert frontiers_exact(problem, 0)
    for i in range(problem.m):
        for option in frontier_options(problem, 0, i) or []:
            ended = {kind: max((a.mb + 1 for a in option if a.kind == kind), default=0) for kind in "IW"}
            k, l = max(ended["I"], ended["W"]), ended["W"]
            assert (i + 1) - k * (1 - w_mem) - l * w_mem <= cap, (i, option)
            assert all(isinstance(a, Action) and a.stage == 0 for a in option)


@pytest.mark.parametrize("problem", [
    Problem(p=2, m=4, tf=2, tb=3, tw=1, comm=1, mem=Fraction(5, 2), w_mem=Fraction(1, 3)),
    Problem(p=2, m=4, tf=2, tb=1, tw=2, comm=1, mem=Fraction(9, 4), w_mem=Fraction(1, 3)),
], ids=lambda problem: problem.describe())
def test_odd_memory_shares_give_the_exhaustive_optimum_within_the_cap(problem: Problem) -> None:
    """End to end, the same bug: the model took a schedule peaking at 8/3 over the cap 5/2."""
    incumbent = best_incumbent(problem)
    plan, _ = cpsat_run(incumbent, time_limit=10, workers=1)
    assert plan.fits() and plan.status == "optimal"
    assert plan.value == optimum(problem, upper=incumbent.value)


@pytest.mark.parametrize("w_mem", [Fraction(1, 10**300), 1 - Fraction(1, 10**300)])
def test_a_tiny_share_lists_its_options_without_counting_to_its_inverse(w_mem):
    """The deficit of the tiny share's kind may reach about 1/share: the enumeration counted up to it
    (p=3 m=4 cap 2, w_mem 1e-7: 100 s; 1e-300: no end). A deficit that leaves no option for the
    kinds after it leaves none for a larger one, so the count stops there, or past the options' limit."""
    problem = Problem(p=2, m=4, v=2, w_mem=w_mem, mem=2)
    options = [frontier_options(problem, s, 3) for s in range(problem.num_stages)]
    assert frontiers_exact(problem, 0) == (w_mem > Fraction(1, 2))  # the W share's deficits are too many
    assert all(found is None or all(option for option in found) for found in options)


@settings(max_examples=300, deadline=None)
@given(st.integers(1, 12), st.booleans(), st.fractions(0, 1, max_denominator=6),
       st.fractions(1, 6, max_denominator=6))
def test_one_stage_frontiers_imply_every_cap_precedence(m: int, split: bool, w_mem: Fraction,
                                                        cap: Fraction) -> None:
    """With one stage per rank and the frontiers stated, each cap precedence (release before F(s, i))
    follows from every frontier option of F(s, i) and microbatch order: each option holds a release
    of the same stage no older than it, of its kind or a W after its I. So the rank relaxation, which
    states the frontiers without the cap precedences, keeps the cap as exactly as the full model does."""
    implying = {"I": "IW", "W": "W", "B": "B"}
    problem = Problem(p=1, m=m, split=split, w_mem=w_mem, mem=cap)
    assume(frontiers_exact(problem, 0))
    for release, alloc in cap_precedences(problem):
        options = frontier_options(problem, alloc.stage, alloc.mb)
        assert options, (release, alloc)
        for option in options:
            assert any(a.kind in implying[release.kind] and a.stage == release.stage and a.mb >= release.mb
                       for a in option), (release, alloc, option)
