"""``schedc baseline`` and ``schedc compare``: the textbook schedules, one with its figures or
timeline, or every applicable one side by side."""

from __future__ import annotations

import argparse

from rich import box
from rich.console import Console
from rich.table import Table

from schedc.baselines import BASELINES, applicable, baseline_plan
from schedc.cli_outputs import add_output_options, check_outputs_for, write_and_report
from schedc.cli_problem import add_problem_options, problem_from_args
from schedc.cli_show import add_width, header, print_timeline
from schedc.cli_summary import fastest, make_console, peaks, print_plan_summary, print_table
from schedc.errors import SchedcError
from schedc.exact import fmt, percent
from schedc.plan import Plan
from schedc.solvers.bounds import lower_bound


def register(subparsers: argparse._SubParsersAction) -> None:
    p = subparsers.add_parser("baseline", help="build a textbook schedule (gpipe, 1f1b, ...)")
    p.add_argument("name", metavar="NAME", help=f"schedule name ({', '.join(BASELINES)})")
    add_problem_options(p)
    add_output_options(p)
    p.add_argument("--show", action="store_true", help="print the timeline too")
    add_width(p)
    p.set_defaults(func=_run_baseline)

    p = subparsers.add_parser("compare", help="every applicable baseline side by side")
    add_problem_options(p)
    p.set_defaults(func=_run_compare)


def _run_baseline(args: argparse.Namespace) -> int:
    if args.width is not None and not args.show:
        raise SchedcError("--width sets the timeline's columns: give --show too")
    problem = problem_from_args(args)
    check_outputs_for(problem, args)  # before the plan is built, which takes seconds at 1e6 tasks
    plan = baseline_plan(args.name, problem)

    def report(console: Console) -> None:
        if args.show:
            console.print(header(plan), markup=False)
            print_timeline(plan, args.width, console)
        else:
            print_plan_summary(plan, console)

    write_and_report(plan, args, report, built=True)
    return 0


def _run_compare(args: argparse.Namespace) -> int:
    console = make_console()
    problem = problem_from_args(args)
    console.print(problem.describe(), markup=False)
    plans = [baseline_plan(name, problem) for name in applicable(problem)]
    if plans:
        print_table(console, _compare_table(plans))
    for name in BASELINES:
        reason = BASELINES[name].why_not(problem)
        if reason:
            console.print(f"not applicable: {name}: {reason}", markup=False)
    capped = any(c is not None for c in problem.mem)
    within = " within the cap" if capped else ""
    console.print(f"lower bound on the makespan{within}: {fmt(lower_bound(problem))}")
    fitting = [p for p in plans if p.fits()]
    if fitting:
        best = fastest(fitting, lambda p: p.makespan)
        console.print(f"best that fits: {best.source} (makespan {fmt(best.makespan)})", markup=False)
    else:
        console.print("no baseline fits the cap" if plans else "no baseline applies to this problem")
    return 0


COMPARE_COLUMNS = ("schedule", "makespan", "bubble", "largest span", "peak per rank", "fits cap")


def _compare_table(plans: list[Plan]) -> Table:
    """Names and figures are never cut: on a narrow terminal rich shortened the schedule names
    ('interle…' twice, at p = 16 v = 2 on 132 columns) and headers; the peaks wrap instead, between
    ranks (a peaks column that could not wrap squeezed the names out at 40 ranks)."""
    rows = []
    for plan in plans:
        t = plan.timeline
        rows.append((plan.source, fmt(t.makespan), percent(t.bubble), fmt(t.max_span),
                     peaks(plan), "yes" if plan.fits() else "NO"))
    table = Table(box=box.SIMPLE_HEAD, pad_edge=False)
    for k, column in enumerate(COMPARE_COLUMNS):
        cells = [column, *(row[k] for row in rows)]
        wraps = column == "peak per rank"
        widest = max(len(word) for cell in cells for word in cell.split()) if wraps else max(map(len, cells))
        table.add_column(column, justify="left" if k == 0 or wraps else "right", no_wrap=not wraps,
                         min_width=widest)
    for row in rows:
        table.add_row(*row)
    return table
