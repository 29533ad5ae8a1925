# sed -i '48s/if not fitting:/if fitting is None:/' schedc/claims.py
# sed -i '68s/problem.num_tasks > LIST_CHECK_MAX_TASKS/problem.num_tasks > 0/' schedc/claims.py
# sed -i '49s/if p.fits()]/]/' schedc/claims.py
# sed -i '225s/math.isfinite(seconds) and /True and /' schedc/plan_json.py
"""Plan-file claims where no textbook schedule fits the cap, and a solve_seconds no float holds."""

from __future__ import annotations

import json
from dataclasses import replace
from fractions import Fraction
from pathlib import Path

import pytest

from schedc import load_plan
from schedc.baselines import baseline_plan
from schedc.claims import LIST_CHECK_MAX_TASKS
from schedc.errors import PlanFormatError, ScheduleError
from schedc.plan import Plan
from schedc.plan_json import plan_from_dict, plan_to_dict
from schedc.problem import Problem
from schedc.solvers.bounds import lower_bound
from schedc.solvers.incumbent import fitting_baselines, list_plan, sequential_orders


def test_a_bound_above_the_list_schedule_under_a_tight_cap_is_false() -> None:
    """Under a cap of 3/2 activations no textbook schedule of p=2 m=4 fits, so the claim is checked
    against the list scheduler and the sequential schedule. The sequential plan (20) claiming a bound
    of 20 is false: the list schedule fits the cap and takes 17. The fallback was skipped when no
    baseline fitted (no check at all), or gave the sequential schedule alone (20, not below 20)."""
    problem = Problem(p=2, m=4, mem=(Fraction(3, 2),))
    assert fitting_baselines(problem) == []
    listed = list_plan(problem, "makespan", task_budget=problem.num_tasks)
    sequential = Plan(problem=problem, orders=sequential_orders(problem), source="sequential")
    assert listed.fits() and sequential.fits()
    assert lower_bound(problem) <= listed.value < sequential.value  # 20 passes the analytic check
    data = plan_to_dict(replace(sequential, lower_bound=sequential.value))
    with pytest.raises(ScheduleError, match=f"lower_bound {sequential.value} exceeds the list:.* schedule's "
                                            f"{listed.value} on the same problem"):
        plan_from_dict(data)


def test_a_bound_under_a_cap_no_schedule_meets_is_not_refuted_by_a_schedule_over_it() -> None:
    """A cap of 1/2 is below one forward's activation (1 at v = 1): no schedule fits it, so a bound
    claims nothing there and a plan over the cap keeps it. Past LIST_CHECK_MAX_TASKS the only
    candidate is the sequential schedule, itself over the cap: counted anyway, it "refuted" the
    bound, where the same claim on a small problem is kept."""
    for m in (4, 420):
        problem = Problem(p=2, m=m, mem=(Fraction(1, 2),))
        sequential = Plan(problem=problem, orders=sequential_orders(problem), source="sequential")
        plan = baseline_plan("1f1b", problem)
        assert not sequential.fits() and not plan.fits()
        bound = max(lower_bound(problem), sequential.value) + 1
        assert plan_from_dict(plan_to_dict(replace(plan, lower_bound=bound))).lower_bound == bound
    assert problem.num_tasks > LIST_CHECK_MAX_TASKS


def test_solve_seconds_past_a_float_are_refused_as_written(tmp_path: Path) -> None:
    """1e400 is no float; the reader keeps it as written so the error names the file's value. Taken
    as float('inf'), the error said "got inf", a value the file never held."""
    data = plan_to_dict(baseline_plan("1f1b", Problem(p=2, m=4)))
    text = json.dumps(data).replace('"solve_seconds": null', '"solve_seconds": 1e400')
    (tmp_path / "p.json").write_text(text)
    with pytest.raises(PlanFormatError, match=r"solve_seconds must be a finite number >= 0, got 1e400$"):
        load_plan(str(tmp_path / "p.json"))


def test_claims_check_the_list_plan_up_to_the_size_where_cp_sat_proves_bounds() -> None:
    """``claims.LIST_CHECK_MAX_TASKS`` repeats ``backends.CPSAT_MAX_TASKS`` (the core does not import
    the solvers to read it): the two must move together."""
    from schedc.solvers.backends import CPSAT_MAX_TASKS

    assert LIST_CHECK_MAX_TASKS == CPSAT_MAX_TASKS
