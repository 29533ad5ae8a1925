"""``schedc show``: a plan's timeline as text, fitted to the terminal; with output options it also
converts the plan (JSON and CSV) and draws it."""

from __future__ import annotations

import argparse
import shutil

from rich.console import Console

from schedc.cli_outputs import add_output_options, write_and_report
from schedc.cli_plan_input import add_plan_argument, is_csv, plan_from_args
from schedc.cli_summary import figures
from schedc.exact import plain_digits
from schedc.plan import Plan
from schedc.show import render_timeline


def register(subparsers: argparse._SubParsersAction) -> None:
    p = subparsers.add_parser("show", help="a plan's timeline as text, one line per rank")
    add_plan_argument(p)
    add_output_options(p)
    add_width(p)
    p.set_defaults(func=_run_show)


def header(plan: Plan, from_csv: bool = False) -> str:
    """Source, status and problem; a CSV holds orders only, so its plan has no status to show (it
    read "heuristic", also for the orders of a proven optimum)."""
    status = "orders only" if from_csv else plan.status
    return f"{plan.label} ({status}): {plan.problem.describe()}"


def print_timeline(plan: Plan, width: int | None, console: Console) -> None:
    width = width or min(shutil.get_terminal_size().columns, MAX_COLUMNS)  # COLUMNS sets it too
    for line in render_timeline(plan, width):
        console.print(line, markup=False)
    for line in figures(plan):
        console.print(line, markup=False)


def _run_show(args: argparse.Namespace) -> int:
    plan, overlap = plan_from_args(args)

    def report(console: Console) -> None:
        console.print(header(plan, is_csv(args.plan)), markup=False)
        if overlap:
            console.print(overlap, markup=False)
        print_timeline(plan, args.width, console)

    write_and_report(plan, args, report)
    return 0


MAX_COLUMNS = 100_000
"""--width's limit: rendering time grows with the columns (2 million took 44 s)."""


def _columns(text: str) -> int:
    """--width: a positive count (0 or less would silently fall back to another width)."""
    try:
        value = int(plain_digits(text, "--width"))
    except ValueError:
        raise argparse.ArgumentTypeError(f"must be an integer, got {text!r}") from None
    if value < 1:
        raise argparse.ArgumentTypeError(f"must be at least 1, got {value}")
    if value > MAX_COLUMNS:
        raise argparse.ArgumentTypeError(f"must be at most {MAX_COLUMNS:,}, got {value:,}")
    return value


def add_width(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("--width", type=_columns, metavar="COLS",
                        help="columns for the timeline (default: the terminal's width; a narrower one "
                             "still gets the rank names and 8 columns)")
