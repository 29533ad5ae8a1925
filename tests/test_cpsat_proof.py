"""CP-SAT's early-stop triggers and the searches that take the rest of its time (solvers/backends.py):
the unhinted proof search after a stall, window LNS after a switch."""

from __future__ import annotations

import importlib
from dataclasses import replace
from fractions import Fraction

import pytest

from schedc.problem import Problem
from schedc.solvers.backends import Budget, CpsatSolver
from schedc.solvers.cpsat_model import build_model
from schedc.solvers.cpsat_params import proof_params
from schedc.solvers.cpsat_solve import EarlyStop, cpsat_run, solve_model
from schedc.solvers.incumbent import best_incumbent
from schedc.solvers.portfolio import analytic_bound

backends_module = importlib.import_module("schedc.solvers.backends")  # CpsatSolver's triggers
lns_module = importlib.import_module("schedc.solvers.lns")
HARD = Problem(p=4, m=8, v=2, placement="vshape", tf=1, tb=2, tw=1, mem=(2,))
"""Two stages per rank, unequal costs, tight cap: CP-SAT does not prove it in a fraction of a second."""
SMALL = Problem(p=2, m=4, v=2, placement="vshape", tf=1, tb=2, tw=1, mem=(1,))
"""Proven optimal by either search within seconds."""


@pytest.fixture(autouse=True)
def triggers_on_small_models(monkeypatch):
    """The triggers apply above backends.WHOLE_SEARCH_MAX_TASKS; these tests run them on small
    models, which are quick to search (the threshold's own tests lift this)."""
    monkeypatch.setattr(backends_module, "WHOLE_SEARCH_MAX_TASKS", 0)


def test_stall_stops_an_open_search_early():
    incumbent = best_incumbent(HARD)
    cm = build_model(HARD, horizon=incumbent.makespan)
    result = solve_model(cm, time_limit=30, workers=2, early=EarlyStop(stall=0.0))
    assert result.stopped == "stalled" and not result.optimal


def test_a_stall_counted_in_cpu_time_stops_an_open_search_too():
    incumbent = best_incumbent(HARD)
    cm = build_model(HARD, horizon=incumbent.makespan)
    result = solve_model(cm, time_limit=30, workers=2, early=EarlyStop(stall=0.0, stall_cpu=True))
    assert result.stopped == "stalled" and not result.optimal


def test_the_cpu_stall_clock_is_process_time_per_thread_that_can_run(monkeypatch):
    """Two workers on two usable cores: CPU seconds / 2; eight workers still / 2 (at most two
    threads run at once, so on an idle machine the clock keeps pace with the wall)."""
    cpsat_solve = importlib.import_module("schedc.solvers.cpsat_solve")
    monkeypatch.setattr(cpsat_solve.time, "process_time", lambda: 12.0)
    monkeypatch.setattr(cpsat_solve, "usable_cores", lambda: 2)
    cpu = EarlyStop(stall=1.0, stall_cpu=True)
    assert cpsat_solve._stall_clock(cpu, 2)() == cpsat_solve._stall_clock(cpu, 8)() == 6.0
    assert cpsat_solve._stall_clock(cpu, 1)() == 12.0
    assert cpsat_solve._stall_clock(EarlyStop(stall=1.0), 2) is cpsat_solve.time.perf_counter
    assert cpsat_solve._stall_clock(None, 2) is cpsat_solve.time.perf_counter


def test_the_stall_counts_cpu_time_only_for_models_without_presolve():
    """One stage per rank: no presolve, every worker searches at once, CPU time per worker is a clock
    that a loaded machine slows down with the search. With presolve (one thread) it is not."""
    budget = Budget(10.0, 2, 0, None, Fraction(0))
    headline = Problem(p=8, m=32, mem=(4,))
    assert backends_module._early_stop(budget, headline, "makespan").stall_cpu
    assert not backends_module._early_stop(budget, HARD, "makespan").stall_cpu
    assert backends_module._early_stop(replace(budget, workers=1), headline, "makespan") is None


def test_small_makespan_models_run_one_search_without_triggers(monkeypatch):
    """At most WHOLE_SEARCH_MAX_TASKS tasks, several workers, makespan: no trigger (the whole budget
    is CP-SAT's); a span objective, one task more or one worker keep the rules above."""
    monkeypatch.setattr(backends_module, "WHOLE_SEARCH_MAX_TASKS", HARD.num_tasks)
    budget = Budget(10.0, 2, 0, None, Fraction(0))
    assert backends_module._early_stop(budget, HARD, "makespan") is None
    assert backends_module._early_stop(budget, HARD, "span") is not None
    monkeypatch.setattr(backends_module, "WHOLE_SEARCH_MAX_TASKS", HARD.num_tasks - 1)
    assert backends_module._early_stop(budget, HARD, "makespan") is not None
    whole = backends_module.whole_search
    assert not whole(HARD, "makespan", 2)
    monkeypatch.setattr(backends_module, "WHOLE_SEARCH_MAX_TASKS", HARD.num_tasks)
    assert whole(HARD, "makespan", 2) and not whole(HARD, "makespan", 1) and not whole(HARD, "span", 2)


def test_switch_stops_a_search_with_a_wide_gap_and_not_a_close_one():
    """The switch fires once its time has passed and the gap is above its threshold; a threshold the
    gap never exceeds lets the search run to its limit."""
    incumbent = best_incumbent(HARD)
    wide = solve_model(build_model(HARD, horizon=incumbent.makespan), time_limit=30, workers=2,
                       early=EarlyStop(switch=0.0, switch_gap=0.0))
    assert wide.stopped == "switched" and not wide.optimal
    close = solve_model(build_model(HARD, horizon=incumbent.makespan), time_limit=2, workers=2,
                        early=EarlyStop(switch=0.0, switch_gap=10.0))
    assert close.stopped is None


def test_switched_search_goes_to_lns_and_keeps_cpsat_bound(monkeypatch):
    """After a switch at once, LNS improves the CP-SAT plan (at once: the unhinted search runs only
    after a stall): valid, within the cap, no worse than the incumbent, with the bound CP-SAT had
    proven (LNS proves nothing) and a consistent status."""
    monkeypatch.setattr(backends_module, "STALL_SHARE", None)
    monkeypatch.setattr(backends_module, "SWITCH_SHARE", 0.0)
    monkeypatch.setattr(backends_module, "SWITCH_GAP", 0.0)
    calls, original = [], lns_module.lns_plan

    def recorded(plan, budget):
        calls.append((plan, budget))
        return original(plan, budget)

    monkeypatch.setattr(lns_module, "lns_plan", recorded)
    incumbent = best_incumbent(HARD)
    floor = analytic_bound(HARD, "makespan")
    plan = CpsatSolver()(incumbent, Budget(4.0, 2, 0, None, floor))
    assert len(calls) == 1
    switched_from, rest = calls[0]
    assert rest.floor == max(floor, switched_from.lower_bound) and rest.time_limit < 4.0
    assert not plan.violations() and plan.fits()
    assert rest.floor == plan.lower_bound <= plan.value <= switched_from.value <= incumbent.value
    assert (plan.status == "optimal") == (plan.lower_bound == plan.value)


def test_stalled_search_is_proved_and_keeps_a_valid_bound(monkeypatch):
    """With a stall at once, the rest goes to the proof search: the plan stays valid, within the cap,
    no worse than the incumbent, and its bound is at least the floor and at most its value."""
    monkeypatch.setattr(backends_module, "STALL_SHARE", 0.0)
    monkeypatch.setattr(backends_module, "STALL_PROOF_MAX_GAP", None)
    incumbent = best_incumbent(HARD)
    floor = analytic_bound(HARD, "makespan")
    events = []
    budget = Budget(3.0, 2, 0, events.append, floor)
    plan = CpsatSolver()(incumbent, budget)
    assert not plan.violations() and plan.fits()
    assert floor <= plan.lower_bound <= plan.value <= incumbent.value
    assert (plan.status == "optimal") == (plan.lower_bound == plan.value)
    assert all(e.best <= incumbent.value and e.bound <= e.best for e in events)


def test_a_stall_with_a_wide_gap_goes_to_lns(monkeypatch):
    """The proof search gets a stall only when the gap is small enough to close; a wider one goes
    to the unhinted search until that stalls (``EXPLORE``), then to LNS, or to LNS at once."""
    monkeypatch.setattr(backends_module, "STALL_SHARE", 0.0)
    incumbent = best_incumbent(HARD)
    floor = analytic_bound(HARD, "makespan")
    calls: list[str] = []
    monkeypatch.setattr(backends_module, "_improve", lambda plan, budget: calls.append("lns") or plan)
    monkeypatch.setattr(backends_module, "_prove", lambda plan, budget, early=None:
                        calls.append("proof" if early is None else "explore") or plan)
    for explore, max_gap in ((True, 0.0), (True, 1.0), (False, 0.0)):  # every stall's gap is in (0, 1)
        monkeypatch.setattr(backends_module, "EXPLORE", explore)
        monkeypatch.setattr(backends_module, "STALL_PROOF_MAX_GAP", max_gap)
        CpsatSolver()(incumbent, Budget(2.0, 2, 0, None, floor))
    assert calls == ["explore", "lns", "proof", "lns"]


def test_the_unhinted_search_hands_its_plan_and_bound_and_the_time_it_left_to_lns(monkeypatch):
    """``_explore``: the unhinted search until its stall (here at once), then LNS from its plan,
    with its bound and what it left of the time."""
    monkeypatch.setattr(backends_module, "STALL_SHARE", 0.0)
    handed: list = []
    monkeypatch.setattr(backends_module, "_improve",
                        lambda plan, budget: handed.append((plan, budget)) or plan)
    incumbent = best_incumbent(HARD)
    floor = analytic_bound(HARD, "makespan")
    plan = backends_module._explore(incumbent, Budget(20.0, 2, 0, None, floor))
    (explored, rest), = handed
    assert plan is explored and explored.value <= incumbent.value and explored.status != "optimal"
    assert not explored.violations() and explored.fits()
    assert rest.floor == max(floor, explored.lower_bound)
    assert 10.0 < rest.time_limit < 20.0  # the stall ended the unhinted search, not its limit


def test_the_unhinted_search_stall_is_the_hinted_search_share_of_the_time_left(monkeypatch):
    seen: list = []

    def optimal(plan, budget, early=None):
        seen.append((budget, early))
        return replace(plan, lower_bound=plan.value, status="optimal")

    monkeypatch.setattr(backends_module, "_prove", optimal)
    monkeypatch.setattr(backends_module, "_improve", lambda plan, budget: pytest.fail("LNS after an optimum"))
    incumbent = best_incumbent(HARD)
    budget = Budget(5.0, 2, 0, None, analytic_bound(HARD, "makespan"))
    assert backends_module._explore(incumbent, budget).status == "optimal"
    (given, early), = seen
    assert given is budget and early.stall == backends_module.STALL_SHARE * 5.0 and early.switch is None
    assert not early.stall_cpu  # HARD's model presolves: the stall counts wall seconds
    assert early.plans_only  # the lower-bound search's creeping bound is not progress


def test_a_plans_only_stall_is_not_reset_by_a_better_bound():
    """``EarlyStop.plans_only``: a bound move keeps the gap current but does not count as progress
    (the first report, of any kind, starts the stall's clock)."""
    cpsat_solve = importlib.import_module("schedc.solvers.cpsat_solve")
    clock = [0.0]
    for plans_only, stalled in ((True, True), (False, False)):
        clock[0] = 0.0
        recorder = cpsat_solve._Recorder(None, None, Fraction(0), 0.0, lambda: clock[0],
                                         plans_only=plans_only)
        clock[0] = 1.0
        recorder.on_bound(41.0)
        clock[0] = 5.0
        recorder.on_bound(42.0)
        clock[0] = 6.0
        assert recorder.bound == 42.0 and recorder.stalled(3.0) is stalled


def test_a_search_that_has_reported_nothing_yet_has_not_stalled():
    """The stall counts from CP-SAT's first report: a 1,536-task V shape's hinted search, still in
    presolve, was stopped as stalled before it had taken its hint, and then its proof search too,
    losing the bound the first solution brings (253 against 251.5; found by a reviewer)."""
    cpsat_solve = importlib.import_module("schedc.solvers.cpsat_solve")
    clock = [0.0]
    recorder = cpsat_solve._Recorder(None, None, Fraction(0), 0.0, lambda: clock[0], plans_only=True)
    clock[0] = 100.0
    assert not recorder.stalled(3.0)
    recorder.on_bound(7.0)
    clock[0] = 102.0
    assert not recorder.stalled(3.0)
    clock[0] = 104.0
    assert recorder.stalled(3.0)


def test_solve_model_hands_plans_only_to_its_recorder(monkeypatch):
    cpsat_solve = importlib.import_module("schedc.solvers.cpsat_solve")
    seen: list[bool] = []

    class Recorder(cpsat_solve._Recorder):
        def __init__(self, *args, **kwargs) -> None:
            super().__init__(*args, **kwargs)
            seen.append(self.plans_only)

    monkeypatch.setattr(cpsat_solve, "_Recorder", Recorder)
    incumbent = best_incumbent(SMALL)
    for early in (EarlyStop(stall=1e9, plans_only=True), EarlyStop(stall=1e9), None):
        solve_model(build_model(SMALL, horizon=incumbent.makespan), time_limit=2, workers=2, early=early)
    assert seen == [True, False, False]


def test_the_hinted_search_runs_the_lower_bound_search_on_models_that_presolve(monkeypatch):
    """``HINTED_LB_SEARCH``: several stages per rank (HARD) get the objective lower-bound search as
    the hinted search's full-problem worker and a plans-only stall; one stage per rank, a span
    objective or ``HINTED_LB_SEARCH = False`` keep CP-SAT's default worker and the stall on any
    progress."""
    cpsat_solve = importlib.import_module("schedc.solvers.cpsat_solve")
    seen: list = []
    monkeypatch.setattr(cpsat_solve, "cpsat_run", lambda plan, **kw: seen.append(kw) or (plan, None))
    headline = Problem(p=8, m=32, mem=(4,))
    budget = Budget(10.0, 2, 0, None, Fraction(0))
    for problem in (HARD, headline):
        CpsatSolver()(best_incumbent(problem), budget)
    monkeypatch.setattr(backends_module, "HINTED_LB_SEARCH", False)
    CpsatSolver()(best_incumbent(HARD), budget)
    assert [(kw["params"], kw["early"].plans_only) for kw in seen] == [
        (proof_params(2), True), (None, False), (None, False)]
    monkeypatch.setattr(backends_module, "HINTED_LB_SEARCH", True)
    assert not backends_module._early_stop(budget, HARD, "span").plans_only


def test_unhinted_proof_search_agrees_with_the_hinted_optimum():
    """The proof search only gets the incumbent's makespan as horizon; on a small instance both
    searches prove the same optimum, and the proof search's plan (or the incumbent) replays to it."""
    incumbent = best_incumbent(SMALL)
    hinted, _ = cpsat_run(incumbent, time_limit=20, workers=1)
    for workers in (1, 2):
        proved, _ = cpsat_run(incumbent, time_limit=20, workers=workers, hint=False,
                              params=proof_params(workers))
        assert hinted.status == proved.status == "optimal"
        assert proved.value == proved.lower_bound == hinted.value
        assert not proved.violations() and proved.fits()


def test_one_worker_never_stalls(monkeypatch, repeatable):
    """One worker keeps same seed, same plan: no wall-clock trigger hands the search to LNS or to the
    proof search, even with a stall share of 0 (which fires at once with two workers, above)."""
    monkeypatch.setattr(backends_module, "STALL_SHARE", 0.0)
    monkeypatch.setattr(backends_module, "SWITCH_SHARE", 0.0)
    calls: list[str] = []
    monkeypatch.setattr(backends_module, "_improve", lambda plan, budget: calls.append("lns") or plan)
    monkeypatch.setattr(backends_module, "_prove", lambda *args, **kw: calls.append("proof") or args[0])
    incumbent = best_incumbent(HARD)
    budget = Budget(1.0, 1, 0, None, analytic_bound(HARD, "makespan"))
    assert CpsatSolver()(incumbent, budget).orders == CpsatSolver()(incumbent, budget).orders
    assert calls == []


def test_a_keyboard_interrupt_from_the_proof_line_keeps_the_proven_bound():
    """The proof search's closing line: a callback's KeyboardInterrupt there (a Ctrl-C while it
    prints) dropped the bound just proven; now it stops with the plan carrying it."""
    import pytest

    from schedc.solvers.progress import Interrupted

    def report(event) -> None:
        if event.source == "cp-sat proof" and event.bound > floor:
            raise KeyboardInterrupt

    incumbent = best_incumbent(SMALL)
    floor = analytic_bound(SMALL, "makespan")
    proved = backends_module._prove(incumbent, Budget(10.0, 2, 0, None, floor))
    assert proved.lower_bound > floor  # measured: the proof raises the floor here
    with pytest.raises(Interrupted) as stop:
        backends_module._prove(incumbent, Budget(10.0, 2, 0, report, floor))
    assert stop.value.plan.lower_bound == stop.value.floor == proved.lower_bound


def test_a_ctrl_c_during_the_unhinted_search_keeps_the_bound_it_had_proven(monkeypatch):
    """Interrupted with no better plan: the hinted plan stands, and the bound the unhinted search
    had proven comes back as the floor (it was dropped, and ``_explore`` runs that search long)."""
    from schedc.solvers.progress import Interrupted

    cpsat_solve = importlib.import_module("schedc.solvers.cpsat_solve")
    incumbent = best_incumbent(SMALL)
    floor = analytic_bound(SMALL, "makespan")
    proven = replace(incumbent, lower_bound=floor + 1)  # no better plan, a better bound

    def interrupted(*args, **kwargs):
        raise Interrupted(proven)

    monkeypatch.setattr(cpsat_solve, "cpsat_run", interrupted)
    with pytest.raises(Interrupted) as stop:
        backends_module._prove(incumbent, Budget(10.0, 2, 0, None, floor))
    assert stop.value.plan is incumbent and stop.value.floor == floor + 1


@pytest.mark.parametrize(("bound", "status"), [(0, "optimal"), (-1, "feasible")])
def test_a_search_that_ends_without_a_solution_keeps_the_incumbent_and_its_proof(monkeypatch, bound, status):
    """CP-SAT stopped before any solution (no time to load even the hint): the incumbent is the plan,
    optimal where the floor or CP-SAT's bound reaches its value (even by equality), else feasible."""
    from schedc.solvers import cpsat_solve
    from schedc.solvers.cpsat_solve import CpsatResult

    incumbent = best_incumbent(SMALL)
    floor = incumbent.value + bound

    def no_solution(cm, **kwargs):
        return CpsatResult("UNKNOWN", None, None, Fraction(0), 0.0)

    monkeypatch.setattr(cpsat_solve, "solve_model", no_solution)
    plan, _ = cpsat_run(incumbent, time_limit=1, workers=1, floor=floor)
    assert (plan.status, plan.lower_bound, plan.orders) == (status, floor, incumbent.orders)


@pytest.mark.parametrize("after", ["_prove", "_explore", "_improve"])
def test_a_ctrl_c_in_the_hand_off_after_a_stopped_search_keeps_its_plan(monkeypatch, after):
    """A Ctrl-C while the next search builds its model (seconds at scale) came out bare, and solve
    answered with the incumbent it started from, losing the stopped search's better plan and bound
    (found by a reviewer: 146 returned where the search had found 145)."""
    incumbent = best_incumbent(HARD)
    better = replace(incumbent, lower_bound=incumbent.value - 1, status="feasible", source="cp-sat")
    stopped = "stalled" if after in ("_prove", "_explore") else "switched"
    monkeypatch.setattr(backends_module, "EXPLORE", after == "_explore")
    monkeypatch.setattr(backends_module, "STALL_PROOF_MAX_GAP", 0.0 if after == "_explore" else None)
    cpsat_solve = importlib.import_module("schedc.solvers.cpsat_solve")
    monkeypatch.setattr(cpsat_solve, "cpsat_run", lambda plan, **kw: (better, stopped))

    def ctrl_c(*_args, **_kwargs):
        raise KeyboardInterrupt

    monkeypatch.setattr(backends_module, after, ctrl_c)
    assert _stopped_with(lambda: CpsatSolver()(incumbent, Budget(10.0, 2, 0, None, Fraction(0)))) is better


def test_a_ctrl_c_between_exploring_and_lns_keeps_the_explored_plan(monkeypatch):
    incumbent = best_incumbent(HARD)
    explored = replace(incumbent, lower_bound=incumbent.value - 1, status="feasible", source="cp-sat proof")
    monkeypatch.setattr(backends_module, "_prove", lambda plan, budget, early=None: explored)

    def ctrl_c(*_args, **_kwargs):
        raise KeyboardInterrupt

    monkeypatch.setattr(backends_module, "_improve", ctrl_c)
    budget = Budget(10.0, 2, 0, None, Fraction(0))
    assert _stopped_with(lambda: backends_module._explore(incumbent, budget)) is explored


def _stopped_with(call):
    """The plan an ``Interrupted`` carried out of ``call``; a bare KeyboardInterrupt fails the test
    (it would stop pytest itself)."""
    try:
        call()
    except backends_module.Interrupted as stop:
        return stop.plan
    except KeyboardInterrupt:
        raise AssertionError("a bare KeyboardInterrupt escaped, without the plan") from None
    raise AssertionError("no interrupt came out")
