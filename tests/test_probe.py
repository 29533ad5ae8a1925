"""Horizon probes (solvers/probe.py): sound bounds, valid plans, and their place in ``solve``."""

from __future__ import annotations

import importlib
import time
from fractions import Fraction

import pytest
from hypothesis import given

from schedc.plan import Plan
from schedc.problem import Problem
from schedc.solvers import forked_race, solve
from schedc.solvers.bounds import lower_bound
from schedc.solvers.incumbent import best_incumbent, sequential_orders
from schedc.solvers.probe import Answer, probe, probe_bound
from tests.strategies import problems
from tests.test_cpsat import FEW, TINY, brute_force, optimum

probe_module = importlib.import_module("schedc.solvers.probe")
solve_module = importlib.import_module("schedc.solvers.portfolio")
backends = importlib.import_module("schedc.solvers.backends")

PROVEN_BY_PROBES = [
    Problem(p=3, m=6, v=2, placement="looped", mem=(2,), tf=1, tb=2, tw=1),
    Problem(p=2, m=4, v=2, placement="vshape", tf=1, tb=2, tw=1, mem=(1,)),
    Problem(p=4, m=8, v=2, placement="vshape", split=False, mem=(Fraction(3, 2),)),
]
"""Measured: from the one-microbatch-at-a-time plan, probes reach the optimum in under a second."""


def _sequential(problem: Problem) -> Plan:
    return Plan(problem=problem, orders=sequential_orders(problem), source="sequential")


@pytest.mark.parametrize("problem", PROVEN_BY_PROBES, ids=lambda p: p.describe())
def test_probes_find_and_prove_the_optimum_from_a_poor_plan(problem):
    start = _sequential(problem)
    plan = probe_bound(start, lower_bound(problem), time_limit=60, workers=2)
    assert plan.status == "optimal" and plan.value == plan.lower_bound == optimum(problem)
    assert plan.value < start.value and plan.fits() and not plan.violations()


def test_a_probe_refutes_below_the_optimum_and_finds_a_plan_at_it():
    """Against the model without the symmetry extras: they must not cut off schedules at a tight
    horizon either."""
    problem = PROVEN_BY_PROBES[1]
    best = optimum(problem, symmetry=False)
    start = _sequential(problem)
    unit = Fraction(1, problem.time_scale)
    outcome, found, _ = probe(start, best - unit, time_limit=30, workers=2, seed=0)
    assert (outcome, found) == ("refuted", None)
    outcome, found, _ = probe(start, best, time_limit=30, workers=2, seed=0,
                              deadline=time.perf_counter() + 60)  # in a child process
    assert outcome == "found" and found.value == best and found.fits()


def test_a_probe_ends_at_its_deadline(monkeypatch):
    """The child processes are killed at the deadline, whatever CP-SAT's own limit: the answer is
    the deadline's own, without a child's deterministic time, which a child ending at its 600 s
    limit would report. The children (forked: they inherit the patch) block rather than search, so
    no machine or OR-Tools release fast enough to settle the horizon within the second changes it."""
    assert forked_race.can_fork()  # else probe would call the blocking stand-in in this process
    monkeypatch.setattr(probe_module, "decide", lambda *args: time.sleep(600))
    problem = Problem(p=4, m=8, v=2, placement="vshape", tf=1, tb=2, tw=1, mem=(2,))
    outcome, found, answer = probe(_sequential(problem), Fraction(44), time_limit=600, workers=2, seed=0,
                                   deadline=time.perf_counter() + 1)
    assert (outcome, found, answer) == ("unknown", None, Answer("UNKNOWN", None))


@FEW
@given(problems(max_p=3, max_m=5, max_v=2))
def test_probe_bounds_never_exceed_the_optimum(problem):
    incumbent = best_incumbent(problem)
    plan = probe_bound(incumbent, lower_bound(problem), time_limit=2, workers=2)
    assert plan.lower_bound <= optimum(problem) <= plan.value <= incumbent.value
    assert plan.fits() and not plan.violations()
    assert (plan.status == "optimal") == (plan.lower_bound == plan.value)


@pytest.mark.parametrize("problem", TINY, ids=lambda p: p.describe())
def test_probe_bounds_never_exceed_the_brute_force_optimum(problem):
    plan = probe_bound(_sequential(problem), lower_bound(problem), time_limit=5, workers=2)
    assert plan.lower_bound <= brute_force(problem) <= plan.value


def test_one_worker_probes_repeat_exactly(repeatable):
    problem = Problem(p=4, m=8, v=2, placement="vshape", tf=1, tb=2, tw=1, mem=(2,))
    start, floor = _sequential(problem), lower_bound(problem)
    # 1 unit of deterministic time already raises the floor (83/2 against 41), on any machine
    runs = [probe_bound(start, floor, time_limit=1, workers=1) for _ in range(2)]
    assert runs[0].orders == runs[1].orders and runs[0].lower_bound == runs[1].lower_bound
    assert runs[0].lower_bound > floor or runs[0].value < start.value


def test_solve_probes_a_plan_left_with_a_gap(monkeypatch):
    """After the searches and the relaxation, probes get their share of the time (and what the
    relaxation left), starting from the best bound so far, and their plan and bound are the answer.
    The search and the relaxation are stubbed to leave the gap, so that the hand-off is tested even
    where CP-SAT would prove the optimum first."""
    problem = Problem(p=4, m=6, v=2, placement="vshape", tf=1, tb=2, tw=1, mem=(2,))  # list 36.5, best 34.5
    calls, original = [], probe_module.probe_bound

    def recorded(plan, floor, **kw):
        out = original(plan, floor, **kw)
        calls.append((plan, floor, kw["time_limit"], out))
        return out

    monkeypatch.setattr(probe_module, "probe_bound", recorded)
    monkeypatch.setattr(solve_module, "PROBE_SHARE", 0.4)
    monkeypatch.setattr(backends, "WHOLE_SEARCH_MAX_TASKS", 0)  # a small model keeps no probe share
    # the search and the relaxation leave the list plan's gap open on any machine
    monkeypatch.setitem(solve_module.BACKENDS, "cp-sat", lambda incumbent, budget: incumbent)
    monkeypatch.setattr(solve_module, "relaxation_floor", lambda plan, floor, *rest, **kw: floor)
    monkeypatch.setattr(solve_module, "block_floor", lambda plan, floor, seconds, *rest: (floor, seconds))
    plan = solve(problem, time_limit=4, workers=2)
    assert len(calls) == 1, "a plan with a gap and 1.6 s kept for the probes, yet no probes"
    (searched, floor, seconds, probed), = calls
    assert floor >= lower_bound(problem) and 0 < seconds <= 4
    assert plan.value == probed.value <= searched.value and plan.lower_bound >= probed.lower_bound
    assert plan.lower_bound <= optimum(problem)


def _probe_in_a_daemon(queue) -> None:
    """A multiprocessing.Pool worker is daemonic, and a daemonic process may not have children."""
    problem = Problem(p=4, m=8, v=2, placement="vshape", tf=1, tb=2, tw=1, mem=(2,))
    outcome, _, _ = probe(_sequential(problem), Fraction(89, 2), time_limit=1, workers=2, seed=0,
                          deadline=time.perf_counter() + 1)
    queue.put((forked_race.can_fork(), outcome))


def test_a_daemonic_process_probes_in_process_instead_of_forking():
    import multiprocessing

    ctx = multiprocessing.get_context("fork")
    queue = ctx.Queue()
    child = ctx.Process(target=_probe_in_a_daemon, args=(queue,), daemon=True)
    child.start()
    can_fork, outcome = queue.get(timeout=120)
    child.join()
    assert can_fork is False and outcome in ("found", "refuted", "unknown") and child.exitcode == 0


def test_a_ctrl_c_while_probe_children_start_or_stop_is_held_until_they_are_recorded(default_sigint):
    """One inside start(), after the fork and before the child is recorded, left it running unkilled."""
    import os
    import signal

    reached = False
    with pytest.raises(KeyboardInterrupt), forked_race.sigint_held():
        os.kill(os.getpid(), signal.SIGINT)
        time.sleep(0.05)  # delivered at once, it would have raised here
        reached = True
    assert reached


def test_a_keyboard_interrupt_from_a_probe_line_keeps_the_bound_it_reported():
    """The callback's KeyboardInterrupt (a Ctrl-C during the print) came out bare, and ``solve``
    then dropped the bound the line had just reported."""
    problem = PROVEN_BY_PROBES[0]
    seen: list = []

    def report(event) -> None:
        seen.append(event)
        raise KeyboardInterrupt

    with pytest.raises(probe_module.Interrupted) as stop:
        probe_bound(_sequential(problem), lower_bound(problem), time_limit=60, workers=2, progress=report)
    assert len(seen) == 1 and stop.value.plan.lower_bound == seen[0].bound == stop.value.floor
    assert stop.value.plan.makespan == seen[0].best and stop.value.floor > lower_bound(problem)


# sed -i '167s/\/\/ 2)/\/\/ 2 + 1)/' solvers/probe.py
@pytest.mark.parametrize("units", [3, 4, 5, 6])
def test_the_galloping_proves_exactly_the_first_horizon_not_refuted(monkeypatch, units):
    """CP-SAT stood in for: every horizon below O is refuted, none at or above it decided. A refuted
    H proves H + one time unit, whatever step reached H; the gallop then halves its way back to
    O (taking H + step as proven overshot O once two refutations had doubled the step). At 4 and 6
    units the step is 4 units when the gallop turns back: halving must reach 1 unit (a halving that
    rounded up stuck at 2 and stopped one unit short of O)."""
    problem = Problem(p=2, m=4, v=2, placement="vshape", tf=1, tb=2, tw=1, mem=(1,))
    start = Plan(problem=problem, orders=sequential_orders(problem), source="sequential")
    floor = lower_bound(problem)
    first_open = floor + units * Fraction(1, problem.time_scale)
    assert first_open < start.makespan

    def stand_in(plan, horizon, **kwargs):
        if horizon < first_open:
            return "refuted", None, Answer("INFEASIBLE", None)
        return "unknown", None, Answer("UNKNOWN", None)

    monkeypatch.setattr(probe_module, "probe", stand_in)
    assert probe_bound(start, floor, time_limit=5, workers=2).lower_bound == first_open


def test_probe_children_leave_ctrl_c_to_the_parent_and_end_on_sigterm(monkeypatch):
    """A SIGTERM to the process group (Slurm, systemd) reached the children through the CLI's
    handler, inherited at the fork, which raised KeyboardInterrupt there: multiprocessing printed
    "Process ForkProcess-1:" and a traceback under the CLI's answer (found by a reviewer). Its
    default action ends a child silently, and with the parent (ignored, the children outlived a
    library caller that the SIGTERM ended: the reviewer of that change). SIGTERM stays blocked from
    the fork until the child has set its actions (a window the sixtieth session's reviewer named)."""
    import signal

    from schedc.solvers.probe import Answer, _race

    child, entry = forked_race._child, []

    def held_at_entry(*args) -> None:  # the child, before its own actions: a SIGTERM waits till then
        entry.append(signal.SIGTERM in signal.pthread_sigmask(signal.SIG_BLOCK, []))
        child(*args)

    def dispositions(*_args) -> Answer:  # runs in the child: decisive either way, so it answers at once
        actions = signal.getsignal(signal.SIGINT), signal.getsignal(signal.SIGTERM)
        unblocked = signal.SIGTERM not in signal.pthread_sigmask(signal.SIG_BLOCK, [])
        left = actions == (signal.SIG_IGN, signal.SIG_DFL) and entry == [True] and unblocked
        return Answer("INFEASIBLE" if left else "MODEL_INVALID", None)

    monkeypatch.setattr(forked_race, "_child", held_at_entry)
    monkeypatch.setattr(probe_module, "decide", dispositions)
    previous = signal.signal(signal.SIGTERM, lambda *_: None)  # a handler of the parent's, as the CLI's
    try:
        answer = _race(PROVEN_BY_PROBES[0], Fraction(1), 1.0, 2, 0, time.perf_counter() + 60)
    finally:
        signal.signal(signal.SIGTERM, previous)
    assert answer.status == "INFEASIBLE"
    assert signal.SIGTERM not in signal.pthread_sigmask(signal.SIG_BLOCK, [])  # the parent's mask is back
