# sed -i '86s/seconds < LP_SECONDS_PER_TASK/seconds < 0 * LP_SECONDS_PER_TASK/' solvers/cpsat_params.py
# sed -i '86s/and workers > 1 and/and/' solvers/cpsat_params.py
# sed -i '87s/and not default_params/and default_params/' solvers/cpsat_params.py
# sed -i '98s/"subsolvers", LP_FREE_WORKERS)/"subsolvers", [])/' solvers/cpsat_params.py
# sed -i '96s/list(dict.fromkeys(\(.*\)))  #/list(\1)  #/' solvers/cpsat_params.py
# sed -i '99s/ if name not in extra//' solvers/cpsat_params.py
# sed -i '179s/params, seconds=time_limit)/params)/' solvers/cpsat_solve.py
"""Which SatParameters each search gets (``cpsat_params``): the probing worker for one-stage-per-rank
makespan models with several workers, a caller's own choice of workers kept, no all-different
expansion in presolve, and no LP in a search too short for its first solve."""

from __future__ import annotations

from fractions import Fraction

import pytest
from ortools.sat import sat_parameters_pb2
from ortools.sat.python import cp_model

from schedc.problem import Problem
from schedc.solvers import cpsat_solve
from schedc.solvers.cpsat_model import build_model
from schedc.solvers.cpsat_params import (
    LP_FREE_WORKERS,
    LP_SECONDS_PER_TASK,
    WORKER_KEYS,
    proof_params,
    search_params,
    set_param,
)
from schedc.solvers.cpsat_solve import solve_model

HEADLINE = Problem(p=8, m=32, mem=(4,))
TWO_STAGES = Problem(p=4, m=8, v=2, placement="vshape", mem=(2,))
NO_PRESOLVE = {"cp_model_presolve": False, "linearization_level": 0}


def test_two_workers_run_the_default_and_the_probing_search_on_one_stage_per_rank():
    assert search_params(HEADLINE, "makespan", 2, None) == {
        **NO_PRESOLVE, "extra_subsolvers": ["probing"], "num_full_subsolvers": 2}


def test_more_workers_add_the_probing_search_to_cpsats_own():
    assert search_params(HEADLINE, "makespan", 4, None) == {**NO_PRESOLVE, "extra_subsolvers": ["probing"]}


def test_one_worker_spans_and_several_stages_per_rank_keep_cpsats_workers():
    assert search_params(HEADLINE, "makespan", 1, None) == NO_PRESOLVE
    assert search_params(HEADLINE, "span", 2, None) == NO_PRESOLVE
    assert search_params(TWO_STAGES, "makespan", 2, None) == {"linearization_level": 2,
                                                              "max_alldiff_domain_size": 1}


def test_a_caller_that_chooses_the_workers_keeps_its_choice():
    assert search_params(HEADLINE, "makespan", 2, proof_params(2)) == {**NO_PRESOLVE, **proof_params(2)}
    assert search_params(HEADLINE, "makespan", 1, proof_params(1)) == {**NO_PRESOLVE, **proof_params(1)}
    mine = {"cp_model_presolve": True}
    assert search_params(HEADLINE, "makespan", 2, mine)["cp_model_presolve"] is True


@pytest.mark.parametrize("mine", [{"subsolvers": ["default_lp", "no_lp"]}, {"num_full_subsolvers": 1},
                                  {"use_objective_lb_search": True}])
def test_each_worker_key_a_caller_sets_keeps_the_probing_worker_out(mine: dict) -> None:
    """A caller naming its workers by any of these keys gets exactly its choice: a key missing from
    WORKER_KEYS let the probing worker and num_full_subsolvers=2 in beside it."""
    assert set(mine) <= WORKER_KEYS
    assert search_params(HEADLINE, "makespan", 2, mine) == {**NO_PRESOLVE, **mine}


def _recorded_params(monkeypatch) -> dict:
    """What ``solve_model`` hands to CP-SAT, filled in as it sets each parameter."""
    seen, original = {}, cpsat_solve.set_param

    def recorded(prm, key, value):
        seen[key] = value
        original(prm, key, value)

    monkeypatch.setattr(cpsat_solve, "set_param", recorded)
    return seen


def test_solve_model_sets_them_and_still_proves(monkeypatch):
    """The parameters reach CP-SAT, and the two full-problem searches prove a small optimum."""
    seen = _recorded_params(monkeypatch)
    problem = Problem(p=2, m=4, mem=(1,))
    result = solve_model(build_model(problem, horizon=Fraction(40)), time_limit=10, workers=2)
    assert seen == search_params(problem, "makespan", 2, None)
    assert result.optimal and result.objective == result.bound


def _presolve_log(problem: Problem, params: dict) -> str:
    """CP-SAT's log of presolving the problem's model (30 ticks of horizon) with ``params``."""
    solver, lines = cp_model.CpSolver(), []
    for key, value in {**params, "stop_after_presolve": True, "log_search_progress": True,
                       "log_to_stdout": False, "num_workers": 1}.items():
        set_param(solver.parameters, key, value)
    solver.log_callback = lines.append
    solver.solve(build_model(problem, horizon=Fraction(30)).model)
    return "\n".join(lines)


def test_presolve_keeps_the_no_overlaps_of_one_tick_tasks_unexpanded():
    """Every task of TWO_STAGES lasts one tick: presolve turns each rank's no-overlap into an
    all-different, which CP-SAT's default expands into a Boolean per task and tick (on the headline
    with --v 2, 160,000 of them: a 20 s solve stopped in presolve with no answer)."""
    ours = search_params(TWO_STAGES, "makespan", 2, None)
    assert "no_overlap: converted to all diff" in _presolve_log(TWO_STAGES, ours)
    assert "all_diff: expanded" not in _presolve_log(TWO_STAGES, ours)
    default = {k: v for k, v in ours.items() if k != "max_alldiff_domain_size"}
    assert "all_diff: expanded" in _presolve_log(TWO_STAGES, default)


def test_an_enum_field_takes_its_name_and_a_string_field_its_string():
    """A string field (``log_prefix``) raised an AttributeError: every string was looked up as an
    enum name on the field's Python type, which is ``str`` there (and ``int`` for an enum field of
    protobuf's own message, where the documented ``search_branching="FIXED_SEARCH"`` failed too)."""
    for prm in (cp_model.CpSolver().parameters, sat_parameters_pb2.SatParameters()):
        set_param(prm, "search_branching", "FIXED_SEARCH")
        set_param(prm, "log_prefix", "schedc ")
        assert prm.search_branching == prm.FIXED_SEARCH
        assert prm.log_prefix == "schedc "


def test_a_solve_takes_an_enum_parameter_by_name():
    """``solve_model(params=...)`` with an enum name reaches CP-SAT and still proves the optimum."""
    result = solve_model(build_model(Problem(p=2, m=4), horizon=Fraction(40)), time_limit=10, workers=1,
                         params={"search_branching": "FIXED_SEARCH"})
    assert result.optimal and result.objective == result.bound


LONG_M = Problem(p=8, m=64, mem=(4,))
"""1,536 tasks: CP-SAT's first LP solve took 3.2-4.9 s here, where the limit does not reach it."""


def test_a_search_too_short_for_its_lp_runs_the_lp_free_twins():
    short = LP_SECONDS_PER_TASK * LONG_M.num_tasks * 0.9
    assert search_params(LONG_M, "makespan", 2, None, seconds=short) == {
        **NO_PRESOLVE, "extra_subsolvers": ["probing"], "num_full_subsolvers": 2,
        "subsolvers": ["no_lp", "fixed", "quick_restart_no_lp"]}
    assert search_params(LONG_M, "makespan", 2, proof_params(2), seconds=short) == {
        **NO_PRESOLVE, "extra_subsolvers": ["objective_lb_search_no_lp"], "subsolvers": list(LP_FREE_WORKERS)}
    mine = {"subsolvers": ["default_lp", "probing"]}
    assert search_params(LONG_M, "makespan", 4, mine, seconds=short) == {
        **NO_PRESOLVE, "subsolvers": ["no_lp", "probing"]}


def test_the_twins_name_no_worker_twice():
    """With more workers CP-SAT runs a name twice rather than another (the reviewer's 4-worker run:
    `no_lp, probing(2)` where the LP's list had `default_lp, fixed, probing`)."""
    short = LP_SECONDS_PER_TASK * LONG_M.num_tasks * 0.9
    mine = {"subsolvers": ["default_lp", "max_lp", "quick_restart"]}
    twins = search_params(LONG_M, "makespan", 4, mine, seconds=short)
    assert twins["subsolvers"] == ["no_lp", "quick_restart_no_lp"]
    assert search_params(LONG_M, "makespan", 4, None, seconds=short)["subsolvers"] == [
        "no_lp", "fixed", "quick_restart_no_lp"]  # probing is already the extra worker


def test_a_long_enough_search_one_worker_and_presolved_models_keep_their_workers():
    enough = LP_SECONDS_PER_TASK * LONG_M.num_tasks * 1.1
    assert search_params(LONG_M, "makespan", 2, None, seconds=enough) == \
        search_params(LONG_M, "makespan", 2, None)
    assert search_params(LONG_M, "makespan", 1, proof_params(1), seconds=0.1) == \
        {**NO_PRESOLVE, **proof_params(1)}
    two_stages = Problem(p=8, m=64, v=2, mem=(4,))  # presolved: its LP level is the model's own
    assert search_params(two_stages, "makespan", 2, None, seconds=0.1) == \
        search_params(two_stages, "makespan", 2, None)


def test_solve_model_hands_its_time_limit_to_that_choice(monkeypatch):
    seen = _recorded_params(monkeypatch)
    solve_model(build_model(LONG_M, horizon=Fraction(295)), time_limit=0.2, workers=2)
    assert seen["subsolvers"] == ["no_lp", "fixed", "quick_restart_no_lp"]
    assert seen["extra_subsolvers"] == ["probing"]
