# sed -i '306s/name == "cp-sat" and //' solvers/portfolio.py
# sed -i '306s/ and problem.v > 1//' solvers/portfolio.py
# sed -i '323s/if not (ahead and block_applies(problem, share)):/if True:/' solvers/portfolio.py
# sed -i '57s/ and seconds >= BLOCK_MIN_SECONDS//' solvers/bound_phases.py
# sed -i '322s/share = relax if repeatable/share = relax + probes if repeatable/' solvers/portfolio.py
# sed -i '332s/which=slice(BLOCK_RANKS, None)/which=slice(1, None)/' solvers/portfolio.py
# sed -i '57s/ and per_rank <= RELAXATION_MAX_TASKS//' solvers/bound_phases.py
"""The solve call's phases: which bound phases run around the search, in what order and with
what share of the time (the searches and the bounds stubbed where the hand-off is what is tested)."""

from __future__ import annotations

from dataclasses import replace
from fractions import Fraction

import pytest

from schedc.problem import Problem
from schedc.solvers import solve
from schedc.validate import validate


def test_one_worker_skips_the_bound_phases_above_their_size(monkeypatch):
    """With one worker, budgets are deterministic time, which the bound phases' model building
    escapes: above ONE_WORKER_BOUNDS_MAX_TASKS they are skipped, the same way on every run."""
    import importlib

    solve_module = importlib.import_module("schedc.solvers.portfolio")  # the module behind solve()

    problem = Problem(p=4, m=8, v=2, placement="vshape", mem=(Fraction(3, 2),), tb=2)
    _, calls = _stub_phases(monkeypatch)
    monkeypatch.setattr(solve_module, "ONE_WORKER_BOUNDS_MAX_TASKS", problem.num_tasks - 1)
    skipped = solve(problem, time_limit=12, workers=1, backend="lns")
    assert calls == [] and validate(problem, skipped.orders) == []
    monkeypatch.setattr(solve_module, "ONE_WORKER_BOUNDS_MAX_TASKS", problem.num_tasks)
    kept = solve(problem, time_limit=12, workers=1, backend="lns")
    assert kept.status != "optimal" and calls == ["relaxation None:None", "probe"]


def test_a_one_worker_lns_solve_relaxes_a_rank_within_a_short_limit(repeatable):
    """The relaxation's 0.4 s floor on a rank's share is for building a model within wall time;
    one worker counts deterministic time, and a 4 s solve skipped the relaxation that proves 36
    (the optimum, which the full CP-SAT model proves apart from LNS and the relaxation)."""
    from tests.test_cpsat import optimum

    problem = Problem(p=3, m=6, w_mem=1, mem=(2,), comm=1)
    plan = solve(problem, time_limit=4, workers=1, backend="lns")
    best = optimum(problem)
    assert (plan.status, plan.makespan, plan.lower_bound) == ("optimal", best, best)


def _stub_phases(monkeypatch):
    """The searches stubbed to return the incumbent (the list plan's gap stays open on any machine)
    and the bound phases to record their calls: the budgets the backends got and the phases run
    (a relaxation named by the ranks it takes, in strength order)."""
    import importlib

    import schedc.solvers.probe as probe
    import schedc.solvers.relaxation as relaxation

    solve_module = importlib.import_module("schedc.solvers.portfolio")
    budgets: list[float] = []
    calls: list[str] = []
    for name in ("cp-sat", "lns"):
        monkeypatch.setitem(solve_module.BACKENDS, name,
                            lambda incumbent, budget: budgets.append(budget.time_limit) or incumbent)

    def relaxed_bound(*args, which=slice(None), **kwargs):  # proves nothing
        calls.append(f"relaxation {which.start}:{which.stop}")
        return 0

    def block_bound(*args, time_limit, **kwargs):  # proves nothing either
        calls.append(f"block {time_limit:.1f}")
        return 0

    monkeypatch.setattr(relaxation, "relaxation_bound", relaxed_bound)
    monkeypatch.setattr(relaxation, "block_bound", block_bound)
    monkeypatch.setattr(probe, "probe_bound", lambda plan, *a, **k: calls.append("probe") or plan)
    return budgets, calls


SMALL = Problem(p=4, m=6, v=2, placement="vshape", tf=1, tb=2, tw=1, mem=(2,))  # list 36.5, best 34.5


def test_a_small_model_relaxes_its_strongest_rank_first_then_searches_to_the_end(monkeypatch):
    """At most backends.WHOLE_SEARCH_MAX_TASKS tasks with several workers, the strongest rank's
    relaxation runs first and CP-SAT's search gets all the rest (what the relaxation left over
    included); no probe runs, even on a plan left with a gap."""
    budgets, calls = _stub_phases(monkeypatch)
    plan = solve(SMALL, time_limit=20, workers=2)
    assert plan.status != "optimal" and calls == ["relaxation 0:1"] and budgets[0] > 18


def test_one_stage_per_rank_relaxes_no_rank_ahead_of_the_search(monkeypatch):
    """With v = 1 CP-SAT's own model bounds as well as the strongest rank's relaxation, which there
    only cost time (``portfolio._relax_first``): the search gets the time, and where phases follow
    it, every rank is relaxed after it, the strongest included."""
    import importlib

    import schedc.solvers.backends as backends

    budgets, calls = _stub_phases(monkeypatch)
    problem = Problem(p=4, m=8, tb=2, mem=(2,))
    solve_module = importlib.import_module("schedc.solvers.portfolio")
    monkeypatch.setattr(solve_module, "analytic_bound", lambda *a: Fraction(0))  # a gap to search
    solve(problem, time_limit=20, workers=2)
    assert calls == [] and budgets[0] > 18
    monkeypatch.setattr(backends, "WHOLE_SEARCH_MAX_TASKS", problem.num_tasks - 1)
    solve(problem, time_limit=20, workers=2)
    assert calls == ["relaxation None:None", "probe"]


def test_a_cap_on_one_rank_alone_gets_the_rank_relaxation(monkeypatch):
    """The rank relaxation bounds a makespan under a cap on any rank, not only when every rank has
    one: a problem capped on its first rank alone (as --mem 2,none,none,none gives) gets it ahead of
    the search, as the same problem capped everywhere does."""
    _, calls = _stub_phases(monkeypatch)
    plan = solve(replace(SMALL, mem=(2, None, None, None)), time_limit=20, workers=2)
    assert plan.status != "optimal" and calls == ["relaxation 0:1"]


def test_a_larger_model_relaxes_its_strongest_rank_first_then_the_block_then_the_others(monkeypatch):
    """After the search the block of the three strongest ranks takes what the search left, the
    probes' share included, then the ranks outside it what the block left; the probes run last."""
    import schedc.solvers.backends as backends

    budgets, calls = _stub_phases(monkeypatch)
    monkeypatch.setattr(backends, "WHOLE_SEARCH_MAX_TASKS", SMALL.num_tasks - 1)
    solve(SMALL, time_limit=20, workers=2)
    # 20 s less the list phase: 10% for each bound phase after the search, and the 20% the
    # relaxation ahead of it took but, stubbed, did not use, back to the search (else at most 12)
    assert calls[:1] + calls[2:] == ["relaxation 0:1", "relaxation 3:None", "probe"] and 13 < budgets[0] <= 16
    # with several workers the budgets are wall time: the block gets all that is left after the
    # search, here nearly all of the 20 s (the stubbed search spent none), the probes' share included
    assert calls[1].startswith("block ") and float(calls[1].split()[1]) > 18


@pytest.mark.parametrize("limit", ["RELAXATION_MAX_TASKS", "BLOCK_MIN_SECONDS"])
def test_no_block_for_ranks_too_long_to_relax_whole_or_in_a_short_share(monkeypatch, limit):
    """Over a suffix a block need not be as strong as its ranks alone (relaxation's module doc), and
    one cut short proves less than they do: there the ranks are relaxed one at a time, as before."""
    import schedc.solvers.backends as backends
    import schedc.solvers.bound_phases as bound_phases

    _, calls = _stub_phases(monkeypatch)
    monkeypatch.setattr(backends, "WHOLE_SEARCH_MAX_TASKS", SMALL.num_tasks - 1)
    value = SMALL.m * SMALL.v * 3 - 1 if limit == "RELAXATION_MAX_TASKS" else 20.0
    monkeypatch.setattr(bound_phases, limit, value)
    solve(SMALL, time_limit=20, workers=2)
    assert calls == ["relaxation 0:1", "relaxation 1:None", "probe"]


def test_one_rank_relaxed_ahead_of_the_search_leaves_no_share_after_it(monkeypatch):
    import importlib

    import schedc.solvers.backends as backends

    budgets, calls = _stub_phases(monkeypatch)
    problem = Problem(p=1, m=40, v=2, mem=(2,))
    monkeypatch.setattr(backends, "WHOLE_SEARCH_MAX_TASKS", problem.num_tasks - 1)
    solve_module = importlib.import_module("schedc.solvers.portfolio")
    monkeypatch.setattr(solve_module, "analytic_bound", lambda *a: Fraction(0))  # a gap to search
    solve(problem, time_limit=20, workers=2)
    assert calls == ["relaxation 0:1", "probe"] and 15 < budgets[0] <= 18


def test_lns_keeps_the_relaxation_after_the_search(monkeypatch):
    """The lns backend relaxes no rank first: its windows build no model of the whole problem to
    put a floor into."""
    budgets, calls = _stub_phases(monkeypatch)
    solve(SMALL, time_limit=20, workers=2, backend="lns")
    assert calls == ["relaxation None:None", "probe"] and budgets[0] < 17


def test_one_worker_relaxes_first_and_hands_on_the_deterministic_time_left(monkeypatch):
    """With one worker the relaxation ahead counts deterministic time, and what it leaves goes to
    the search in that unit, whatever the wall clock says (here: that three times its share has
    passed, which would cut a wall-clock count short), so the same seed gives the same budget."""
    import importlib

    import schedc.solvers.relaxation as relaxation

    budgets, calls = _stub_phases(monkeypatch)

    def spends_one_second(*args, which=slice(None), clock=None, **kwargs):
        calls.append(f"relaxation {which.start}:{which.stop}")
        if clock is not None:
            clock.spend(1.0)
            clock.t0 -= 3 * clock.limit  # a slow machine: the clock's wall-clock guard term binds
        return 0

    monkeypatch.setattr(relaxation, "relaxation_bound", spends_one_second)
    solve(SMALL, time_limit=100, workers=1)  # 100 s: the block's 10% is over its 8 s least
    left = 100 - importlib.import_module("schedc.solvers.portfolio")._list_charge(SMALL, 25)
    # after the search the block takes the relaxations' 10%, the ranks outside it what it left, and
    # the probes keep theirs (one worker's budgets are fixed shares)
    assert calls == ["relaxation 0:1", f"block {0.1 * left:.1f}", "relaxation 3:None", "probe"]
    # of the 20% ahead of the search, all but the one second spent goes to it
    assert budgets == [pytest.approx(0.8 * left - 1)]


def test_several_workers_take_an_overrun_of_the_relaxation_ahead_from_the_search(monkeypatch):
    """With several workers the budgets are wall time: a relaxation ahead that ran 2 s past its
    share leaves the search 2 s less, so the call still ends within its limit."""
    import schedc.solvers.backends as backends
    import schedc.solvers.relaxation as relaxation

    budgets, calls = _stub_phases(monkeypatch)
    monkeypatch.setattr(backends, "WHOLE_SEARCH_MAX_TASKS", SMALL.num_tasks - 1)

    def overruns(*args, which=slice(None), clock=None, **kwargs):
        calls.append(f"relaxation {which.start}:{which.stop}")
        if clock is not None:
            clock.t0 -= clock.limit + 2
        return 0

    monkeypatch.setattr(relaxation, "relaxation_bound", overruns)
    solve(SMALL, time_limit=20, workers=2)
    # the search's share of the 20 s less the list phase, less the 2 s overrun (10 s without it)
    import importlib

    phases = importlib.import_module("schedc.solvers.portfolio")  # the module behind solve()
    share = 1 - phases.RELAX_FIRST_SHARE - phases.RELAXATION_SHARE - phases.PROBE_SHARE
    assert calls[0] == "relaxation 0:1" and share * 20 - 4 < budgets[0] < share * 20 - 1.9


def test_a_relaxation_first_that_meets_the_incumbent_skips_the_search(monkeypatch):

    budgets, calls = _stub_phases(monkeypatch)
    import schedc.solvers.bound_phases as bound_phases

    monkeypatch.setattr(bound_phases, "relaxation_floor",
                        lambda plan, floor, *a, **k: calls.append("relaxed") or plan.value)
    plan = solve(SMALL, time_limit=20, workers=2)
    assert plan.status == "optimal" and plan.lower_bound == plan.makespan
    assert calls == ["relaxed"] and budgets == []


def test_ctrl_c_in_the_relaxation_keeps_the_bound_it_proved(monkeypatch):
    import schedc.solvers.relaxation as relaxation
    from schedc.solvers.progress import Interrupted

    proved = iter([Fraction(30)])

    def relaxed_rank_bound(*args, **kwargs):  # the half-suffix proves 30, then Ctrl-C
        for bound in proved:
            return bound
        raise KeyboardInterrupt

    monkeypatch.setattr(relaxation, "relaxed_rank_bound", relaxed_rank_bound)
    with pytest.raises(Interrupted) as stop:
        relaxation.relaxation_bound(SMALL, time_limit=10, workers=2)
    assert stop.value.plan is None and stop.value.floor == 30


def test_no_search_starts_where_the_list_phase_left_less_than_its_set_up(monkeypatch):
    """With several workers (wall time) a search that could only index the incumbent past the limit
    is skipped, bound phases too, and the list plan is the answer; one worker (deterministic time)
    always searches, so that the same seed gives the same plan."""
    import importlib

    budgets, calls = _stub_phases(monkeypatch)
    solve_module = importlib.import_module("schedc.solvers.portfolio")
    monkeypatch.setattr(solve_module, "SEARCH_SETUP_SECONDS_PER_TASK", 20 / SMALL.num_tasks)
    plan = solve(SMALL, time_limit=20, workers=2)
    assert budgets == [] and calls == [] and plan.source.startswith("list")
    assert validate(SMALL, plan.orders) == [] and plan.lower_bound is not None
    solve(SMALL, time_limit=20, workers=1)
    assert len(budgets) == 1
