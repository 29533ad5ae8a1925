"""With one stage per rank the release frontiers state the cap alone; where a rank has too many
options to state them, the model keeps the cumulative (``symmetry.frontiers_exact``)."""

from __future__ import annotations

from dataclasses import replace
from fractions import Fraction

from schedc.plan import Plan
from schedc.problem import Problem
from schedc.solvers.cpsat_model import build_model
from schedc.solvers.cpsat_solve import solve_model
from schedc.solvers.list_scheduler import run_rule
from schedc.solvers.symmetry import canonical_starts, frontiers_exact


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
