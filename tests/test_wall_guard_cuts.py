"""The guard's cuts are counted (solvers/wall_guard.py ``watched``) and ``schedc solve`` says when one
made a one-worker plan depend on the machine: six mid-size models run CP-SAT at 0.13-0.26
deterministic seconds per wall second on an idle core, so the guard ends them and the same seed
gave another plan on a loaded machine, silently."""

from __future__ import annotations

import threading
import time
from fractions import Fraction
from types import SimpleNamespace

import pytest
from ortools.sat.python import cp_model

from schedc.baselines import baseline_plan
from schedc.cli import main
from schedc.problem import Problem
from schedc.solvers import wall_guard
from schedc.solvers.backends import Budget
from schedc.solvers.cpsat_model import build_model
from schedc.solvers.cpsat_solve import Clock
from schedc.solvers.interruptible import run_interruptible
from schedc.solvers.lns import lns_plan

NOTE = "wall-clock guard of one-worker searches (--workers 1, the default on one core) ended a search"


@pytest.mark.parametrize("workers, decided, dtime, wall, cut", [
    (1, False, 0.4, 2.1, True),  # undecided, short of its deterministic limit, at its wall cap
    (2, False, 0.4, 2.1, False),  # several workers count wall time: the limit itself, not a cut
    (1, True, 0.4, 2.1, False),  # a proof ended it: the same answer on any machine
    (1, False, 1.0, 2.1, False),  # its deterministic limit ended it
    (1, False, 0.4, 1.5, False),  # ended before either limit (the floor reached, a solution limit)
])
def test_a_search_counts_as_cut_only_when_its_wall_cap_ended_it(workers, decided, dtime, wall, cut):
    with wall_guard.watched() as cuts:
        wall_guard.check_search(workers, 1.0, 2.1, dtime, wall, decided)
    assert cuts.count == int(cut)


def test_cuts_count_only_inside_watched():
    wall_guard.note_cut()  # outside: nobody listens, nothing fails
    with wall_guard.watched() as outer:
        with wall_guard.watched() as inner:
            wall_guard.note_cut()
        wall_guard.note_cut()
    assert (inner.count, outer.count) == (1, 1)


def test_a_sequence_the_calls_deadline_stops_counts_as_cut():
    with wall_guard.watched() as cuts, wall_guard.call_deadline(1, time.perf_counter() - 100):
        spent = Clock(5, 1)
        spent.spend(5)
        assert spent.left() <= 0
        assert cuts.count == 0  # its deterministic time was spent: the seed's own end
        nearly = Clock(5, 1)
        nearly.spend(4.9)
        assert nearly.left(enough=0.2) == 0
        assert cuts.count == 0  # 0.1 left, below what the caller would still use: its own end too
        assert Clock(5, 1).left(enough=0.2) == 0
        assert cuts.count == 1  # 5 deterministic seconds left, stopped by the clock
    with wall_guard.watched() as cuts:
        assert Clock(5, 1).left() == 5
        assert Clock(5, 2).left() > 4
    assert cuts.count == 0


def test_the_guard_never_sizes_a_budget_before_it_passes():
    """Clock.left() gave the wall-clock guard's remainder where it was the smaller, so a budget
    followed the machine's speed without any search being cut: it gives the deterministic time
    until the guard has passed, and each search's own cap cuts it at the deadline."""
    with wall_guard.watched() as cuts:
        clock = Clock(100, 1)
        clock.spend(30)
        clock.t0 -= 250  # 51 s of its 301 s guard left, below the 70 deterministic seconds
        assert clock.left() == 70
        clock.t0 -= 60  # past the guard: the sequence stops, a cut
        assert (clock.left(), cuts.count) == (0, 1)
    assert cuts.count == 1


def test_lns_that_reaches_its_floor_counts_no_cut_after_the_deadline():
    """The floor, the seed's own end, is tested before the clock: after the call's deadline the
    clock counted a cut for a sequence the floor ended (found by a review)."""
    problem = Problem(p=4, m=8)
    incumbent = baseline_plan("1f1b", problem)
    budget = Budget(5, 1, 0, None, incumbent.makespan)
    with wall_guard.watched() as cuts, wall_guard.call_deadline(1, time.perf_counter() - 100):
        assert lns_plan(incumbent, budget).makespan == incumbent.makespan
    assert cuts.count == 0


def _search(max_time: float) -> tuple[cp_model.CpSolver, cp_model.CpModel]:
    """A one-worker search CP-SAT does not decide within a second, its deterministic limit far off."""
    problem = Problem(p=8, m=32, v=2, mem=4)
    model = build_model(problem, objective="makespan", horizon=Fraction(121)).model
    solver = cp_model.CpSolver()
    solver.parameters.num_workers = 1
    solver.parameters.max_deterministic_time = 1000
    solver.parameters.max_time_in_seconds = max_time
    return solver, model


def test_run_interruptible_counts_a_real_search_its_wall_cap_ended():
    solver, model = _search(0.2)
    with wall_guard.watched() as cuts:
        status, interrupted = run_interruptible(solver, model)
    assert (status, interrupted, cuts.count) == (cp_model.UNKNOWN, False, 1)


class _StoppedLate:
    """A one-worker search that reports a wall time past its cap, as one its caller stopped just
    at the cap may: only the caller's stop tells it from a cut."""

    def __init__(self) -> None:
        self.parameters = SimpleNamespace(catch_sigint_signal=True, num_workers=1,
                                          max_deterministic_time=1000.0, max_time_in_seconds=0.1)
        self.wall_time, self.deterministic_time = 0.5, 0.0
        self._stopped = threading.Event()

    def solve(self, model: object, callback: object = None) -> int:
        self._stopped.wait(5)
        return cp_model.UNKNOWN

    def stop_search(self) -> None:
        self._stopped.set()


def test_run_interruptible_does_not_count_a_search_its_caller_stopped():
    with wall_guard.watched() as cuts:
        status, interrupted = run_interruptible(_StoppedLate(), None, stop_when=lambda: True)
    assert (status, interrupted, cuts.count) == (cp_model.UNKNOWN, False, 0)
    with wall_guard.watched() as cuts:  # the same search ended by itself past its cap: a cut
        solver = _StoppedLate()
        solver.stop_search()
        run_interruptible(solver, None)
    assert cuts.count == 1


def _solve(capsys, *args: str) -> str:
    assert main(["solve", "--workers", "1", "--quiet", *args]) == 0
    return capsys.readouterr().err


def test_solve_says_when_the_guard_ended_a_one_worker_search(monkeypatch, capsys):
    """A guard of no multiple (one second for all searches) stands for a machine where CP-SAT runs
    slow, as it does on this model: the plan may not repeat, and the user is told so."""
    monkeypatch.setattr(wall_guard, "WALL_GUARD", 0)
    err = _solve(capsys, "--p", "8", "--m", "32", "--v", "2", "--mem", "4", "--time-limit", "2",
                 "--seed", "7")
    assert NOTE in err and "another run with --seed 7 may give another" in err


def test_solve_is_silent_where_a_proof_ends_the_search(capsys):
    """The headline: CP-SAT proves the list plan optimal within a second or two."""
    assert NOTE not in _solve(capsys, "--p", "8", "--m", "32", "--mem", "4", "--time-limit", "10")
