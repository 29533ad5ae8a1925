# sed -i '87s/if presolve is None else/if presolve is not False else/' solvers/probe.py
"""The horizon probe's race (solvers/probe.py _race) runs CP-SAT with presolve and without: with
one stage per rank the model's default is no presolve, so an arm left to the default ran the same
search as the other, on half the workers each."""

from __future__ import annotations

import importlib
import time
from fractions import Fraction

import pytest

from schedc.problem import Problem
from schedc.solvers.cpsat_params import search_params
from schedc.solvers.cpsat_solve import CpsatResult

probe_module = importlib.import_module("schedc.solvers.probe")


@pytest.mark.parametrize("problem", [Problem(p=2, m=4, mem=(2,)), Problem(p=2, m=4, v=2, mem=(2,))],
                         ids=lambda problem: f"v={problem.v}")
def test_the_race_arms_search_with_and_without_presolve(problem: Problem, monkeypatch) -> None:
    """Each arm's effective CP-SAT parameters (the model's defaults under the arm's own): one
    presolves and the other does not, whatever the model's default."""
    presolving = []

    def record(cm, *, time_limit, workers, seed, params):
        presolving.append(search_params(problem, "makespan", workers, params).get("cp_model_presolve", True))
        return CpsatResult("UNKNOWN", None, None, Fraction(0), 0.0)

    def in_process(target, calls, deadline, decisive, undecided, name):
        answers = [target(*args) for args in calls]
        return answers[0]

    monkeypatch.setattr(probe_module, "solve_model", record)
    monkeypatch.setattr(probe_module, "race", in_process)
    probe_module._race(problem, Fraction(100), 5.0, 2, 0, time.perf_counter() + 60)
    assert sorted(presolving) == [False, True]
