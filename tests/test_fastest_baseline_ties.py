# sed -i '80s/, sum(p.timeline.peak_mem)))/))/' schedc/cli_summary.py
# sed -i '80s/(value(p), max(p.timeline.peak_mem), sum(p.timeline.peak_mem))/value(p)/' schedc/cli_summary.py
"""On a tie in time the best baseline named is the one that holds least: at tw = 0 gpipe, 1f1b
and zb-h1 all take 22 for p=4 m=8, and ``compare`` and ``solve`` named gpipe (8 activations on
every rank), the first registered, where 1f1b holds 4 3 2 1 (found by the baselines' hunt)."""

from __future__ import annotations

from schedc.baselines import applicable, baseline_plan
from schedc.cli_solve import summary_lines
from schedc.problem import Problem
from tests.cli_helpers import run


def _held(name: str, problem: Problem) -> tuple:
    plan = baseline_plan(name, problem)
    return plan.makespan, max(plan.timeline.peak_mem), sum(plan.timeline.peak_mem)


def test_compare_names_the_leanest_of_the_fastest(capsys) -> None:
    problem = Problem(p=4, m=8, tw=0)
    held = {name: _held(name, problem) for name in applicable(problem)}
    assert held["gpipe"][0] == held["1f1b"][0] == min(h[0] for h in held.values())  # the tie
    assert min(held, key=held.__getitem__) == "1f1b"
    code, out, _ = run(capsys, "compare", "--p", "4", "--m", "8", "--tw", "0")
    assert code == 0 and out.splitlines()[-1] == "best that fits: 1f1b (makespan 22)"
    unsplit = Problem(p=4, m=4, split=False)  # a tie on the highest peak too: the sum decides
    assert _held("gpipe", unsplit) == (21, 4, 16) and _held("1f1b", unsplit) == (21, 4, 10)
    code, out, _ = run(capsys, "compare", "--p", "4", "--m", "4", "--no-split")
    assert code == 0 and out.splitlines()[-1] == "best that fits: 1f1b (makespan 21)"
    code, out, _ = run(capsys, "compare", "--p", "1", "--m", "4")
    assert code == 0 and out.splitlines()[-1] == "best that fits: 1f1b (makespan 12)"


def test_solve_names_the_leanest_of_the_fastest_fitting_and_over_cap() -> None:
    plan = baseline_plan("zb-h1", Problem(p=4, m=8, tw=0))
    assert summary_lines(plan)[-1] == "best fitting baseline: 1f1b, makespan 22 (the solver's is as short)"
    over = baseline_plan("zb-h1", Problem(p=4, m=8, tw=0, mem=[3]))  # none fits; gpipe holds 8
    assert summary_lines(over)[-1].startswith("no baseline fits the cap: the fastest, 1f1b (makespan 22), "
                                              "peaks at 4 on rank 0")
