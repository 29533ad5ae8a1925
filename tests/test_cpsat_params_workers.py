"""Which limits and proof parameters depend on the worker count (solvers/cpsat_params.py).

One worker gets deterministic time (same seed, same plan); two or more get the caller's
wall-clock seconds and the proof search's extra subsolvers, which one worker does not run.
"""

from __future__ import annotations

from ortools.sat.python import cp_model

from schedc.solvers import wall_guard
from schedc.solvers.cpsat_params import proof_params, set_limits


def test_only_one_worker_is_limited_by_deterministic_time():
    one, two = cp_model.CpSolver(), cp_model.CpSolver()
    set_limits(one, 5, 1)
    set_limits(two, 5, 2)
    assert one.parameters.max_deterministic_time == 5
    assert one.parameters.max_time_in_seconds == wall_guard.WALL_GUARD * 5 + 1
    assert two.parameters.num_workers == 2 and two.parameters.max_time_in_seconds == 5
    assert two.parameters.max_deterministic_time == cp_model.CpSolver().parameters.max_deterministic_time


def test_one_worker_runs_the_lower_bound_search_itself():
    assert proof_params(1) == {"use_objective_lb_search": True}
    assert proof_params(2) == proof_params(8) == {"extra_subsolvers": ["objective_lb_search"]}
