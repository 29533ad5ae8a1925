# sed -i '148s/a longer search, solve.s --time-limit,/a longer --time-limit/' schedc/cli_summary.py
# sed -i '151s/{percent(\(.*\))}/{float(\1):.1%}/' schedc/cli_solve.py
"""``schedc solve``: options, progress on stderr, summary, outputs, errors, Ctrl-C."""

from __future__ import annotations

import contextlib
import json
import os
import signal
from dataclasses import replace
from fractions import Fraction

import pytest

from schedc.baselines import baseline_plan
from schedc.cli import main
from schedc.cli_solve import summary_lines
from schedc.cli_summary import figures, per_rank
from schedc.plan import Plan
from schedc.plan_json import load_plan
from schedc.problem import Problem
from schedc.torch_csv import load_csv_plan
from tests.cli_helpers import signalled_search


def test_solve_writes_a_valid_optimal_plan_and_summarises_it(tmp_path, capsys, repeatable):
    out, csv, trace = tmp_path / "plan.json", tmp_path / "plan.csv", tmp_path / "trace.json"
    code = main(["solve", "--p", "3", "--m", "6", "--mem", "2", "--time-limit", "20", "--workers", "1",
                 "-o", str(out), "--csv", str(csv), "--trace", str(trace)])
    assert code == 0
    captured = capsys.readouterr()
    plan = load_plan(str(out))
    assert plan.fits() and plan.status == "optimal" and plan.source == "cp-sat"
    for fact in ("makespan", "bubble", "peak activation per rank", "lower bound", "gap"):
        assert fact in captured.out
    # What the cap costs: 1F1B would need a cap of 3 here, and zb-h1 is the fastest baseline.
    cost = "the fastest, zb-h1 (makespan 20), peaks at 3 on rank 0, over its cap of 2"
    assert f"no baseline fits the cap: {cost}" in captured.out
    assert "best" in captured.err and "bound" in captured.err  # progress lines
    assert load_csv_plan(str(csv), plan.problem).orders == plan.orders
    events = json.loads(trace.read_text())
    events = events["traceEvents"] if isinstance(events, dict) else events
    assert sum(e.get("ph") == "X" for e in events) == plan.problem.num_tasks


def test_quiet_prints_no_progress_and_span_objective_is_accepted(capsys):
    assert main(["solve", "--p", "2", "--m", "3", "--quiet", "--objective", "span"]) == 0
    captured = capsys.readouterr()
    assert captured.err == "" and "largest rank span" in captured.out
    assert "best fitting baseline:" in captured.out and "largest span" in captured.out


def test_infeasible_cap_is_one_line_error_and_writes_nothing(tmp_path, capsys):
    out = tmp_path / "plan.json"
    code = main(["solve", "--p", "4", "--m", "8", "--v", "2", "--mem", "0.75", "-o", str(out)])
    captured = capsys.readouterr()
    assert code == 1 and not out.exists()
    assert captured.err.strip().count("\n") == 0 and "smallest feasible cap 1" in captured.err


def test_every_search_option_reaches_the_solver(monkeypatch, capsys):
    import schedc.solvers

    seen = {}
    real = schedc.solvers.solve

    def spy(problem, **options):
        seen.update(options)
        return real(problem, **options)

    monkeypatch.setattr(schedc.solvers, "solve", spy)
    argv = ["solve", "--p", "3", "--m", "4", "--mem", "2", "--time-limit", "7.5", "--workers", "1",
            "--seed", "11", "--objective", "span", "--backend", "list", "--quiet"]
    assert main(argv) == 0
    assert {k: seen[k] for k in ("time_limit", "workers", "seed", "objective", "backend")} == {
        "time_limit": 7.5, "workers": 1, "seed": 11, "objective": "span", "backend": "list"}
    captured = capsys.readouterr()  # --quiet: a progress callback that keeps the first plan's time, silent
    assert seen["progress"].lost and captured.out.startswith("list:") and "best" not in captured.err


def test_same_seed_one_worker_writes_the_same_plan_from_the_command_line(tmp_path, capsys, repeatable):
    """The README's promise for the CLI: stopped by its time limit (not a proof), twice alike."""
    texts = []
    for name in ("a.json", "b.json"):
        argv = ["solve", "--p", "6", "--m", "12", "--v", "2", "--mem", "2", "--tb", "2", "--time-limit", "1",
                "--workers", "1", "--seed", "7", "--backend", "cp-sat", "--quiet", "-o", str(tmp_path / name)]
        assert main(argv) == 0
        texts.append(json.loads((tmp_path / name).read_text()))
    assert "feasible" in capsys.readouterr().out
    for text in texts:
        text.pop("solve_seconds", None)
    assert texts[0] == texts[1]


@pytest.mark.parametrize("flag, value", [("--time-limit", "-1"), ("--workers", "0"), ("--seed", "x"),
                                         ("--seed", "4294967296"), ("--workers", "3000000000")])
def test_bad_search_options_are_errors(flag, value, capsys):
    assert main(["solve", "--p", "2", "--m", "2", flag, value]) == 1
    err = capsys.readouterr().err
    assert err.startswith(f"schedc: error: {flag} must be ") and err.count("\n") == 1 and value in err


def test_more_workers_than_cores_get_a_note(capsys, monkeypatch):
    """Many workers on few cores run past the time limit while CP-SAT starts them: say so."""
    monkeypatch.setattr("schedc.solvers.cores.usable_cores", lambda: 2)
    for workers, noted in (("4", False), ("5", True)):
        assert main(["solve", "--p", "2", "--m", "2", "--workers", workers, "--quiet"]) == 0
        err = capsys.readouterr().err
        assert ("schedc: note: 5 workers share 2 usable cores" in err) is noted and err.count("\n") == noted
    assert main(["solve", "--p", "2", "--m", "2", "--workers", "5", "--seed", "x"]) == 1
    assert capsys.readouterr().err.count("\n") == 1  # a bad option is its one line, no note before it
    monkeypatch.setattr("sys.stderr", None)  # print(file=None) would write the note to stdout
    assert main(["solve", "--p", "2", "--m", "2", "--workers", "5", "--quiet"]) == 0
    assert "note" not in capsys.readouterr().out


def test_bad_output_fails_before_the_search(tmp_path, capsys, monkeypatch):
    def search(*_, **__):
        raise AssertionError("the search ran")
    monkeypatch.setattr("schedc.solvers.solve", search)
    assert main(["solve", "--p", "2", "--m", "2", "-o", str(tmp_path)]) == 1
    assert "cannot write" in capsys.readouterr().err


def test_ctrl_c_returns_the_best_plan_found_so_far(tmp_path, default_sigint):
    """SIGINT during a long search: CP-SAT stops as at a time limit and the plan is still written."""
    out = tmp_path / "plan.json"
    code, stdout = signalled_search(signal.SIGINT, str(out), preexec_fn=default_sigint)
    assert code == 0, stdout
    assert load_plan(str(out)).fits() and "feasible" in stdout and "stopped by Ctrl-C" in stdout


def test_the_report_says_when_ctrl_c_cut_the_search_short(monkeypatch, capsys, default_sigint):
    """The report of a run stopped by Ctrl-C read like one that ran its course (from a README
    walkthrough review); a run that was not stopped does not say so, nor one whose plan is proven
    optimal (the Ctrl-C cut nothing short), and the handler is put back."""
    import schedc.solvers as solvers

    real = solvers.solve

    def stopped(backend):
        def solve(problem, **options):
            with contextlib.suppress(KeyboardInterrupt):  # as the search does: its best plan comes back
                os.kill(os.getpid(), signal.SIGINT)
            return real(problem, **{**options, "backend": backend})
        return solve

    flags = ["solve", "--p", "3", "--m", "6", "--mem", "2", "--quiet"]
    assert main(flags) == 0 and "stopped by Ctrl-C" not in capsys.readouterr().out
    monkeypatch.setattr(solvers, "solve", stopped("list"))  # its plan proves nothing
    assert main(flags) == 0 and "stopped by Ctrl-C (the best plan found by then)" in capsys.readouterr().out
    monkeypatch.setattr(solvers, "solve", stopped("cp-sat"))
    out = capsys.readouterr().out if main(flags) == 0 else ""
    assert "cp-sat (optimal)" in out and "stopped by Ctrl-C" not in out
    assert signal.getsignal(signal.SIGINT) is signal.default_int_handler


def _interrupt_on_call(monkeypatch, target: str, call: int) -> None:
    """``target`` (module.function) raises KeyboardInterrupt, as Ctrl-C would, on its ``call``-th call."""
    import importlib

    module_name, name = target.rsplit(".", 1)
    module = importlib.import_module(module_name)
    original, calls = getattr(module, name), []

    def interrupted(*args, **kwargs):
        calls.append(1)
        if len(calls) == call:
            raise KeyboardInterrupt
        return original(*args, **kwargs)

    monkeypatch.setattr(module, name, interrupted)


def test_ctrl_c_among_the_list_runs_returns_the_best_run_so_far(monkeypatch):
    """The list phase may take a quarter of the limit; a Ctrl-C there said no plan was found."""
    from schedc.problem import Problem
    from schedc.solvers import solve
    from schedc.solvers.bounds import lower_bound

    problem = Problem(p=4, m=8, v=2, mem=2)
    _interrupt_on_call(monkeypatch, "schedc.solvers.list_scheduler.run_variant", 2)
    plan = solve(problem, time_limit=30, workers=2)
    assert plan.status == "heuristic" and plan.source.startswith("list:") and plan.fits()
    assert plan.lower_bound == lower_bound(problem)  # the floor is still computed


def test_ctrl_c_among_the_list_runs_still_weighs_the_baselines(monkeypatch):
    """The first list run (71/2) came back alone, longer than zb-v (65/2), which fits the cap, and
    the summary called it "as short" as zb-v."""
    from schedc.solvers import solve
    from schedc.solvers.incumbent import fitting_baselines

    problem = Problem(p=4, m=8, v=2, placement="vshape", mem=4, comm=Fraction(1, 2))
    best = min(fitting_baselines(problem), key=lambda plan: plan.value)
    _interrupt_on_call(monkeypatch, "schedc.solvers.list_scheduler.run_variant", 2)
    plan = solve(problem, time_limit=30, workers=2)
    assert (plan.source, plan.value) == (best.source, Fraction(65, 2)) and plan.fits()
    assert summary_lines(plan)[-1] == "best fitting baseline: zb-v, makespan 32.5 (the solver's is as short)"


def test_the_summary_says_so_when_a_baseline_is_shorter_than_the_plan():
    from schedc.solvers.incumbent import list_plan

    problem = Problem(p=4, m=8, v=2, placement="vshape", mem=4, comm=Fraction(1, 2))
    plan = list_plan(problem, "makespan", task_budget=1)
    assert plan.value == Fraction(71, 2)  # the portfolio's first run alone; zb-v takes 65/2: 3/35.5 less
    assert summary_lines(plan)[-1].endswith("zb-v, makespan 32.5 (shorter than the solver's by 8.5%)")


def test_ctrl_c_during_the_analytic_bound_or_the_final_checks_still_returns_a_plan(monkeypatch):
    from schedc.problem import Problem
    from schedc.solvers import solve

    problem = Problem(p=4, m=8, v=2, mem=2)
    with monkeypatch.context() as patch:
        _interrupt_on_call(patch, "schedc.solvers.portfolio.analytic_bound", 1)
        plan = solve(problem, time_limit=30, workers=2)
    assert plan.lower_bound == 0 and plan.status == "heuristic" and plan.fits()
    _interrupt_on_call(monkeypatch, "schedc.solvers.portfolio._finish", 1)
    assert solve(problem, time_limit=30, workers=2).status == "optimal"


def test_one_ctrl_c_while_the_plan_is_written_is_ignored(monkeypatch, tmp_path, capsys, default_sigint):
    """SIGINT landing after solve() returned lost the files and the report, silently (exit 130)."""
    import schedc.cli_outputs as cli_outputs

    original = cli_outputs.write_outputs

    def interrupted_write(plan, args, *rest):
        os.kill(os.getpid(), signal.SIGINT)
        return original(plan, args, *rest)

    monkeypatch.setattr(cli_outputs, "write_outputs", interrupted_write)
    out = tmp_path / "plan.json"
    assert main(["solve", "--p", "2", "--m", "4", "--quiet", "-o", str(out)]) == 0
    assert load_plan(str(out)).fits() and "wrote" in capsys.readouterr().out
    assert signal.getsignal(signal.SIGINT) is signal.default_int_handler  # put back


def test_ctrl_c_while_the_list_plan_is_built_or_reported_still_returns_it(monkeypatch):
    """The replay of a 400k-task list plan takes seconds, as can a progress print to a slow
    terminal: a Ctrl-C in either said no plan was found."""
    from schedc.problem import Problem
    from schedc.solvers import solve
    from schedc.solvers.progress import Interrupted

    assert issubclass(Interrupted, KeyboardInterrupt)  # an `except Exception` does not swallow Ctrl-C
    problem = Problem(p=4, m=8, v=2, mem=2)
    with monkeypatch.context() as patch:
        _interrupt_on_call(patch, "schedc.solvers.incumbent._as_plan", 1)
        assert solve(problem, time_limit=30, workers=2).fits()

    def interrupted_report(event):
        raise KeyboardInterrupt

    plan = solve(problem, time_limit=30, workers=2, progress=interrupted_report)
    assert plan.status == "heuristic" and plan.fits()  # stopped before the search, as a Ctrl-C does


def test_an_ignored_sigint_stays_ignored_while_the_plan_is_written(monkeypatch, tmp_path):
    """A background job of a non-interactive shell ignores SIGINT: the write must not take it back."""
    import schedc.cli_outputs as cli_outputs

    original, seen = cli_outputs.write_outputs, []

    def recording_write(plan, args, *rest):
        seen.append(signal.getsignal(signal.SIGINT))
        return original(plan, args, *rest)

    monkeypatch.setattr(cli_outputs, "write_outputs", recording_write)
    previous = signal.signal(signal.SIGINT, signal.SIG_IGN)
    try:
        assert main(["solve", "--p", "2", "--m", "4", "--quiet", "-o", str(tmp_path / "p.json")]) == 0
    finally:
        signal.signal(signal.SIGINT, previous)
    assert seen == [signal.SIG_IGN]


def test_a_span_plan_with_a_gap_says_why_the_search_could_stop():
    """A span search ends early when index order is exhausted: the summary says why a gap stays."""
    problem = Problem(p=2, m=3)
    orders = baseline_plan("1f1b", problem).orders
    span = Plan(problem=problem, orders=orders, source="cp-sat", status="feasible", objective="span",
                lower_bound=Fraction(1))
    assert any("index order" in line for line in figures(span))
    assert figures(span)[-1].endswith("a longer search, solve's --time-limit, may close the gap)")  # validate
    # prints it too, and has no --time-limit of its own (a user walkthrough's find)
    proven = replace(span, status="optimal", lower_bound=span.value)
    for plan in (proven, replace(span, objective="makespan")):
        assert not any("index order" in line for line in figures(plan))


def test_per_rank_values_beyond_16_ranks_are_counted_in_runs():
    assert per_rank(["4"] * 16) == " ".join(["4"] * 16)  # up to 16 ranks: every value
    assert per_rank(["2"] * 39 + ["1.5"]) == "2 ×39, 1.5"  # p = 40 printed 40 numbers
    assert per_rank(["2", "1", "1"] + ["none"] * 15) == "2, 1 ×2, none ×15"
    distinct = [str(r) for r in range(20)]  # counting would only add commas
    assert per_rank(distinct) == " ".join(distinct)


def test_the_report_reuses_the_baselines_the_search_started_from(capsys, monkeypatch):
    """The summary's "best fitting baseline" built and replayed every baseline a second time (2.4 s
    of a 2 s solve on 67,000 tasks)."""
    import schedc.solvers.incumbent as incumbent

    getattr(incumbent.baseline_plans, "cache_clear", lambda: None)()  # a problem solved before is kept
    calls, applicable = [], incumbent.applicable
    monkeypatch.setattr(incumbent, "applicable", lambda problem: calls.append(problem) or applicable(problem))
    assert main(["solve", "--p", "2", "--m", "4", "--time-limit", "1", "--quiet"]) == 0
    assert "best fitting baseline: " in capsys.readouterr().out and len(calls) == 1


SEED_NOTE = ("schedc: note: --seed does not apply to --backend list (its heuristics run no CP-SAT and "
             "draw nothing at random)\n")
WORKERS_NOTE = ("schedc: note: --workers runs nothing in parallel with --backend list (its heuristics run "
                "no CP-SAT): 1 counts their budget in work, so the plan repeats, and more in wall time, "
                "so it follows the machine's speed\n")


@pytest.mark.parametrize(("flags", "notes"), [
    (["--workers", "4", "--seed", "5"], SEED_NOTE + WORKERS_NOTE),
    (["--seed", "5"], SEED_NOTE),
    (["--workers", "1"], WORKERS_NOTE),
    ([], ""),
])
def test_search_options_the_list_backend_ignores_are_noted(capsys, flags, notes):
    """They were taken silently; then --workers was said not to apply, where 1 makes the list
    heuristics' budget a count of work and so changes the plan (p=8 m=32 v=2 cap 4, 1 s: 120.5 with
    one worker, 121 with two)."""
    assert main(["solve", "--p", "2", "--m", "3", "--backend", "list", "--quiet", *flags]) == 0
    assert capsys.readouterr().err == notes


def test_the_list_backend_with_one_worker_budgets_work_not_wall_time(monkeypatch):
    """What the --workers note says: one worker gives the list portfolio a task budget, more a time
    budget."""
    import schedc.solvers.portfolio as portfolio

    seen = []
    real = portfolio.best_incumbent
    monkeypatch.setattr(portfolio, "best_incumbent",
                        lambda *args, **kw: seen.append(sorted(kw)) or real(*args, **kw))
    for workers in (1, 2):
        portfolio.solve(Problem(p=2, m=3), time_limit=1, workers=workers, backend="list")
    assert seen == [["task_budget"], ["time_budget"]]


def test_the_summary_compares_with_the_fastest_fitting_baseline_and_names_where_none_fits():
    """Uncapped, the fastest baselines (zb-h1 and zb-h2, 27) are the ones named; under caps (4, 3, 2,
    1) only 1f1b (30) fits, and a plan of 27 is 1 - 27/30 shorter; under (4, 5/2, 2, 1) none fits
    and the fastest goes over on rank 1 (3.5 against 2.5), not on rank 0, which sits at its cap."""
    from schedc.cli_solve import summary_lines
    from schedc.solvers.incumbent import baseline_plans

    uncapped = Problem(p=4, m=8)
    fastest = min(b.value for b in baseline_plans(uncapped))
    line = summary_lines(baseline_plan("zb-h1", uncapped))[-1]
    assert line.startswith("best fitting baseline: zb-h")
    assert line.endswith(f"makespan {fastest} (the solver's is as short)")
    capped = Problem(p=4, m=8, mem=(4, 3, 2, 1))
    plan = replace(baseline_plan("zb-h1", capped), source="a plan of 27")
    best = min(b.value for b in baseline_plans(capped) if b.fits())
    assert summary_lines(plan)[-1] == (f"best fitting baseline: 1f1b, makespan {best} (the solver's is "
                                       f"{float(1 - plan.value / best) * 100:.1f}% shorter)")
    at_cap = Problem(p=4, m=8, mem=(4, Fraction(5, 2), 2, 1))
    peaks = baseline_plan("zb-h1", at_cap).timeline.peak_mem
    assert peaks[0] == 4 and peaks[1] > Fraction(5, 2)
    line = summary_lines(baseline_plan("zb-h1", at_cap))[-1]
    assert line.endswith("peaks at 3.5 on rank 1, over its cap of 2.5")
    tiny = Problem(p=4, m=8, tf=Fraction(1, 10**12))  # every baseline ~19, 3e-12 apart: not "0.0%"
    assert summary_lines(baseline_plan("zb-h1", tiny))[-1] == (
        "best fitting baseline: zb-h2, makespan ~19 (shorter than the solver's by <0.1%)")
