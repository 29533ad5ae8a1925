"""``schedc validate``: a plan JSON or a torch CSV checked against its problem, every error listed
(up to ``SHOWN_ERRORS``), and the notes a CSV meant for torch's runners needs."""

from __future__ import annotations

import argparse

from rich.console import Console

from schedc.actions import Action
from schedc.claims import ClaimCheck, analytic_bound, prove_claim
from schedc.cli_once import Once
from schedc.cli_outputs import print_written
from schedc.cli_plan_input import (
    add_plan_argument,
    csv_conflict_note,
    csv_input,
    inferred_m_note,
    is_csv,
    overlap_note,
    placement_note,
    reject_problem_options,
)
from schedc.cli_solve import positive_seconds
from schedc.cli_summary import figures, make_console
from schedc.errors import PlanFormatError, ProblemError, SchedcError, ScheduleError, printable
from schedc.exact import fmt
from schedc.input_files import parse_json, read_text
from schedc.output_paths import check_writable, file_key, write_files
from schedc.plan import Plan
from schedc.plan_json import bare_tokens, every_error, load_plan, plan_text
from schedc.problem import Problem
from schedc.problem_io import FileNumber, problem_from_dict
from schedc.simulate import Orders
from schedc.torch_lockstep import lockstep_note
from schedc.torch_numbering import torch_misread_note
from schedc.validate import count_text, error_count, structural_errors, validate, with_prefix


def _json_orders(path: str) -> tuple[Problem, Orders, list[str], Plan | None]:
    """Problem, orders and errors of a plan JSON, and the plan with its claims when it has no error.
    When the file is well formed but its orders are not a schedule, the tokens are read again so
    that every error is listed, not only the first."""
    try:
        plan = load_plan(path)
        return plan.problem, plan.orders, [], plan
    except ScheduleError as err:  # load_plan got past the format checks: the fields below exist
        found = err.errors
    data = parse_json(read_text(path, "plan", PlanFormatError), parse_float=FileNumber)  # as load_plan
    problem = problem_from_dict(data["problem"], in_plan=True)
    orders = tuple(tuple(Action.parse(t) for t in rank) for rank in bare_tokens(data))
    errors = with_prefix(f"{path}: ", validate(problem, orders))
    if structural_errors(problem, orders):  # what load_plan found is the first of these
        return problem, orders, errors, None
    # beside the cap errors (or a deadlock, which load_plan found too), what is wrong in the recorded
    # times or the claims: a status 'optimal' over the cap was left unsaid beside them
    found = dict.fromkeys([*found, *every_error(data, path)])  # once each, in order
    return problem, orders, errors + [e for e in found if e not in errors], None


def register(subparsers: argparse._SubParsersAction) -> None:
    p = subparsers.add_parser("validate", help="check a plan (JSON, or torch CSV); exit 1 if invalid")
    add_plan_argument(p)
    p.add_argument("--check-bound", metavar="S",
                   help="also decide whether the plan file's lower bound holds: a CP-SAT search, for "
                        "at most S seconds, for a schedule one tick shorter, the finest step of the "
                        "problem's times (exit 1 if one exists)")
    p.add_argument("--shorter", metavar="PLAN.json", action=Once,
                   help="with --check-bound: where the bound is false, write the shorter schedule found "
                        "as a plan JSON")
    p.set_defaults(func=run_validate)


SHOWN_ERRORS = 20
"""``validate`` lists this many errors, then counts the rest (a plan cut short misses thousands)."""


def run_validate(args: argparse.Namespace) -> int:
    _check_bound_options(args)  # first, whatever the plan turns out to hold
    note, read, loaded, check = None, None, None, None
    if is_csv(args.plan):
        problem, read = csv_input(args)
        orders = read.orders
        errors = with_prefix(f"{args.plan}: ", validate(problem, orders))
        found = (inferred_m_note(args, orders), csv_conflict_note(args, orders, problem),
                 placement_note(args, orders, problem))
        note = "\n".join(n for n in found if n) or None
    else:
        reject_problem_options(args)
        problem, orders, errors, loaded = _json_orders(args.plan)
        if not errors:
            errors = with_prefix(f"{args.plan}: ", validate(problem, orders))
        if not errors and args.check_bound is not None:
            check = _checked_bound(loaded, args.check_bound)
    console = make_console()
    if check is not None and check.verdict == "false":
        verdict = [f"{args.plan}: {check.line}"]
        try:
            written = _write_shorter(check.shorter, args.shorter)
        except SchedcError:  # the search's verdict is printed all the same, then the write's error
            _print_invalid(console, verdict, None)
            raise
        _print_invalid(console, verdict, None)
        print_written(written, console)
        return 1
    if errors:
        _print_invalid(console, errors, note)
        if args.shorter is not None:  # the file's own errors (a bound a textbook schedule beats, say)
            console.print(f"{printable(args.shorter)} not written: the plan is invalid, so no search ran",
                          markup=False)
        return 1
    # a plan file's bound and status were checked as it loaded: shown too (a CSV holds orders only)
    _print_ok(console, loaded or Plan(problem=problem, orders=orders, source=args.plan), check)
    if args.shorter is not None:  # an older file there is not this run's
        console.print(f"{printable(args.shorter)} not written: the bound was not refuted", markup=False)
    if read is not None:
        for misread in (torch_misread_note(problem, orders, args.plan),
                        lockstep_note(problem, read.cells, args.plan), overlap_note(args.plan, read)):
            if misread:
                console.print(misread, markup=False)
    return 130 if check is not None and check.verdict == "interrupted" else 0


def _check_bound_options(args: argparse.Namespace) -> None:
    """``--check-bound S`` and ``--shorter``, refused before any plan is read or probe run."""
    if args.check_bound is not None:
        args.check_bound = positive_seconds(args.check_bound, "--check-bound")
        if is_csv(args.plan):
            raise ProblemError("--check-bound checks a plan file's lower bound; a CSV holds orders only")
    if args.shorter is None:
        return
    if args.check_bound is None:
        raise ProblemError("--shorter writes the schedule --check-bound finds below a false bound: "
                           "give --check-bound S too")
    check_writable(args.shorter, "--shorter")
    if is_csv(args.shorter) or args.shorter.lower().endswith(".toml"):
        raise ProblemError(f"--shorter {args.shorter}: it writes a plan JSON: name it .json")
    if file_key(args.shorter) == file_key(args.plan):
        raise ProblemError(f"the input plan and --shorter name the same file {args.shorter}")


def _checked_bound(plan: Plan, seconds: float) -> ClaimCheck:
    """``claims.prove_claim`` within ``--check-bound``'s seconds of wall time: at least two workers,
    since one would count them in CP-SAT's deterministic time (as ``solve --workers 1`` does).
    Ctrl-C is no verdict: the plan's own checks still print, then exit 130."""
    from schedc.solvers.cpsat_solve import default_workers

    try:
        return prove_claim(plan, seconds, max(2, default_workers()))
    except KeyboardInterrupt:
        return ClaimCheck("interrupted", "interrupted: --check-bound decided nothing about the lower bound")


def _write_shorter(shorter: Plan, path: str | None) -> list[str]:
    """The schedule that refutes a false bound, to ``--shorter`` (before the report, as ``solve``)."""
    if path is None:
        return []
    write_files([(path, plan_text(shorter))])
    return [path]


def _print_invalid(console: Console, errors: list[str], note: str | None) -> None:
    total, shown = error_count(errors), errors[:SHOWN_ERRORS]
    if note is not None:  # first: an m taken from one stray token explains the errors below
        console.print(note, markup=False)
    for error in shown:
        console.print(error, markup=False)
    if total > error_count(shown):
        console.print(f"... and {total - error_count(shown)} more", markup=False)
    console.print(f"INVALID: {count_text(errors, total)} error{'s' if total > 1 else ''}")


def _print_ok(console: Console, plan: Plan, check: ClaimCheck | None) -> None:
    console.print(f"OK: {plan.problem.describe()}", markup=False)
    for line in figures(plan):
        console.print(line, markup=False)
    if check is not None:  # --check-bound's verdict: proven, not decided in time, or interrupted
        console.print(check.line, markup=False)
    elif (claim := bound_claim_note(plan)) is not None:
        console.print(claim, markup=False)


def bound_claim_note(plan: Plan) -> str | None:
    """What a bound above the analytic one rests on: the file's word. No plan ``validate`` builds
    (the textbook schedules, a list-scheduler pass) beats it, or the plan would be INVALID, but only
    a search proves it, so an edited file's false bound or 'optimal' may pass with OK."""
    analytic = analytic_bound(plan)
    if plan.lower_bound is None or plan.lower_bound <= analytic:
        return None
    return (f"note: the lower bound above the analytic {fmt(analytic)} is the file's claim: no schedule "
            "validate builds beats it, but only a search proves it: --check-bound S runs one")
