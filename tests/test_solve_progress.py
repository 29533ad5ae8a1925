"""What ``solve`` reports while it runs: progress lines, and a callback that raises (its own error
on the caller's thread; a KeyboardInterrupt stops the solve as Ctrl-C does, keeping what the line
reported)."""

from __future__ import annotations

from dataclasses import replace
from fractions import Fraction
from types import SimpleNamespace

import pytest

from schedc.baselines import baseline_plan
from schedc.problem import Problem
from schedc.solvers import Progress, solve
from schedc.solvers.bounds import lower_bound


def test_the_relaxation_reports_a_line_only_when_it_moves_the_bound(monkeypatch):
    import schedc.solvers.bound_phases as bound_phases
    import schedc.solvers.relaxation as relaxation

    plan = replace(baseline_plan("1f1b", Problem(p=2, m=4, mem=(2,))), lower_bound=Fraction(11))
    events: list[Progress] = []
    for found in (Fraction(11), Fraction(12)):  # CP-SAT's bound already 11 > the analytic floor 10
        monkeypatch.setattr(relaxation, "relaxation_bound", lambda *a, found=found, **k: found)
        monkeypatch.setattr(relaxation, "block_bound", lambda *a, found=found, **k: found)
        assert bound_phases.relaxation_floor(plan, Fraction(10), 1.0, 1, events.append, 0.0) == found
        assert bound_phases.block_floor(plan, Fraction(10), 1.0, 1, events.append, 0.0)[0] == found
    assert [(e.bound, e.source) for e in events] == [(12, "relaxation"), (12, "block relaxation")]


def test_a_progress_callback_raising_during_the_search_raises_its_own_error_on_the_callers_thread():
    """CP-SAT calls back on its own thread: the error was lost there and the caller got OR-Tools'
    "solve() has not been called"; a KeyboardInterrupt from it stops the search as Ctrl-C does."""
    seen: list[Progress] = []

    def raising(error):
        def report(event: Progress) -> None:
            seen.append(event)
            if event.source == "cp-sat":
                raise error
        return report

    problem = Problem(p=8, m=32, mem=(4,))  # the list plan needs CP-SAT's proof: a cp-sat line comes
    with pytest.raises(ValueError, match="mine"):
        solve(problem, time_limit=5, workers=1, progress=raising(ValueError("mine")))
    with pytest.raises(SystemExit):
        solve(problem, time_limit=5, workers=1, progress=raising(SystemExit(3)))
    plan = solve(problem, time_limit=5, workers=1, progress=raising(KeyboardInterrupt()))
    assert plan.fits() and plan.status == "feasible" and plan.makespan == seen[-1].best  # the stopped line's
    assert lower_bound(problem) <= plan.lower_bound < plan.makespan


def test_a_keyboard_interrupt_from_a_bound_line_keeps_that_bound(monkeypatch):
    """A Ctrl-C while the relaxation's or the span bound's line prints stops the solve, as anywhere
    else (the probes that would follow the relaxation do not run), but the bound on that line is
    kept: it was dropped, and the plan ended with the bound from before. (The span bound is the
    last phase of a span solve.)"""
    import importlib

    import schedc.solvers.relaxation as relaxation
    import schedc.solvers.span_bound as span_bound

    solve_module = importlib.import_module("schedc.solvers.portfolio")

    def stop_at(source: str):
        def report(event: Progress) -> None:
            if event.source == source:
                raise KeyboardInterrupt
        return report

    problem = Problem(p=4, m=8, v=2, placement="vshape", mem=(Fraction(3, 2),), tb=2)
    floor = lower_bound(problem)  # 58; the list plan is above it (64.5 when measured)
    monkeypatch.setitem(solve_module.BACKENDS, "cp-sat", lambda incumbent, budget: incumbent)
    monkeypatch.setattr(relaxation, "relaxation_bound", lambda *a, **k: floor + Fraction(1, 2))
    monkeypatch.setattr(solve_module, "block_applies", lambda *a: False)  # it takes the probes' share
    probes: list = []
    monkeypatch.setattr(solve_module, "_probe", lambda plan, budget: probes.append(budget) or plan)
    plan = solve(problem, time_limit=12, workers=1, backend="cp-sat")  # 12 s: probes get their share
    assert len(probes) == 1 and plan.lower_bound == floor + Fraction(1, 2)
    plan = solve(problem, time_limit=12, workers=1, backend="cp-sat", progress=stop_at("relaxation"))
    assert len(probes) == 1 and plan.makespan > floor + 1 and plan.lower_bound == floor + Fraction(1, 2)
    spans = Problem(p=3, m=5, v=2, placement="vshape", mem=(2,))
    span_floor = solve_module.analytic_bound(spans, "span")
    no_plan = SimpleNamespace(starts=None, interrupted=False)  # the relaxation's bound alone
    monkeypatch.setattr(span_bound, "_relaxation", lambda *a, **k: (span_floor + Fraction(1, 2), no_plan))
    monkeypatch.setattr(span_bound, "first_rank_floor", lambda plan, floor, secs, *a: (plan, floor, secs))
    plan = solve(spans, time_limit=4, workers=1, objective="span", backend="lns",
                 progress=stop_at("span bound"))
    assert plan.value > span_floor + 1 and plan.lower_bound == span_floor + Fraction(1, 2)
