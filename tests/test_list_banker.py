"""Every list-scheduling variant stays within the cap where microbatches in flight hold partial
activations (I freed its share, W not yet): the banker's test must count what each one holds."""

from __future__ import annotations

from dataclasses import replace
from fractions import Fraction

import pytest

from schedc.errors import ScheduleError
from schedc.plan import Plan
from schedc.problem import Problem
from schedc.solvers.incumbent import best_incumbent
from schedc.solvers.list_portfolio import variant_named, variants
from schedc.solvers.list_scheduler import run_variant

PROBLEM = Problem(p=4, m=9, v=3, tf=3, tb=3, tw=0, comm=1, mem=Fraction(11, 6), w_mem=Fraction(1, 2))


def test_the_bankers_test_counts_partly_freed_activations():
    variant = variant_named("ref:looped-bfs/none/banker")
    plan = Plan(problem=PROBLEM, orders=run_variant(PROBLEM, variant).orders, source="list")
    assert plan.fits(), max(plan.timeline.peak_mem)


def test_every_variant_fits_the_cap_with_partly_freed_activations():
    for variant in variants(PROBLEM, thorough=True):
        plan = Plan(problem=PROBLEM, orders=run_variant(PROBLEM, variant).orders, source=str(variant))
        assert plan.fits(), (str(variant), max(plan.timeline.peak_mem))


def test_a_list_schedule_over_its_cap_is_an_internal_error_not_an_incumbent(monkeypatch):
    """Neither the list portfolio nor the incumbent's choice replays for the cap: a run over it (the
    banker's bug above) would have been offered as the incumbent, and printed as a plan."""
    import schedc.solvers.list_scheduler as list_scheduler

    problem = Problem(p=2, m=4, mem=2)
    over = run_variant(replace(problem, mem=()), variant_named("ref:gpipe/none/banker"))  # holds 4 on rank 0
    monkeypatch.setattr(list_scheduler, "best_list_result", lambda *args, **kw: over)
    with pytest.raises(ScheduleError, match=r"internal error: the list schedule \S+ exceeds an activation"):
        best_incumbent(problem)
