"""Which SatParameters each search gets (``cpsat_params``): the probing worker for one-stage-per-rank
makespan models with several workers, and a caller's own choice of workers kept."""

from __future__ import annotations

from fractions import Fraction

from schedc.problem import Problem
from schedc.solvers import cpsat_solve
from schedc.solvers.cpsat_model import build_model
from schedc.solvers.cpsat_params import proof_params, search_params
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
    assert search_params(TWO_STAGES, "makespan", 2, None) == {"linearization_level": 2}


def test_a_caller_that_chooses_the_workers_keeps_its_choice():
    assert search_params(HEADLINE, "makespan", 2, proof_params(2)) == {**NO_PRESOLVE, **proof_params(2)}
    assert search_params(HEADLINE, "makespan", 1, proof_params(1)) == {**NO_PRESOLVE, **proof_params(1)}
    mine = {"cp_model_presolve": True}
    assert search_params(HEADLINE, "makespan", 2, mine)["cp_model_presolve"] is True


def test_solve_model_sets_them_and_still_proves(monkeypatch):
    """The parameters reach CP-SAT, and the two full-problem searches prove a small optimum."""
    seen, original = {}, cpsat_solve.set_param

    def recorded(prm, key, value):
        seen[key] = value
        original(prm, key, value)

    monkeypatch.setattr(cpsat_solve, "set_param", recorded)
    problem = Problem(p=2, m=4, mem=(1,))
    result = solve_model(build_model(problem, horizon=Fraction(40)), time_limit=10, workers=2)
    assert seen == search_params(problem, "makespan", 2, None)
    assert result.optimal and result.objective == result.bound
