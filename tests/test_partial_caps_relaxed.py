"""The rank relaxation bounds a makespan under a cap on any rank, not only when every rank has one:
a problem capped on its first rank alone (as --mem 2,none,none,none gives) must get the relaxation
ahead of the search (and its bound), as the same problem capped everywhere does."""

from __future__ import annotations

import importlib

from schedc.problem import Problem
from schedc.solvers import solve

solve_module = importlib.import_module("schedc.solvers.portfolio")


def test_a_cap_on_one_rank_alone_gets_the_rank_relaxation(monkeypatch):
    import schedc.solvers.probe as probe
    import schedc.solvers.relaxation as relaxation

    calls: list[str] = []
    for name in ("cp-sat", "lns"):  # the searches return the incumbent: the gap stays open
        monkeypatch.setitem(solve_module.BACKENDS, name, lambda incumbent, budget: incumbent)

    def relaxed_bound(*args, which=slice(None), **kwargs):  # proves nothing
        calls.append(f"relaxation {which.start}:{which.stop}")
        return 0

    monkeypatch.setattr(relaxation, "relaxation_bound", relaxed_bound)
    monkeypatch.setattr(probe, "probe_bound", lambda plan, *a, **k: calls.append("probe") or plan)
    problem = Problem(p=4, m=6, v=2, placement="vshape", tf=1, tb=2, tw=1, mem=(2, None, None, None))
    plan = solve(problem, time_limit=20, workers=2)
    assert plan.status != "optimal" and calls == ["relaxation 0:1"]
