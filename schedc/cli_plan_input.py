"""Plan inputs of ``show`` and ``validate``: a plan JSON, which carries its problem, or a torch CSV,
whose rows give the structure (p, m, v, placement, split) and the problem options the costs and caps,
overriding the rows; and the notes that say where a CSV's counts came from when they disagree."""

from __future__ import annotations

import argparse
from pathlib import Path

from schedc.actions import is_overlap
from schedc.cli_problem import add_problem_options, has_problem, problem_from_args, problem_overrides
from schedc.errors import ProblemError, SchedcError, ScheduleError, counted
from schedc.plan import Plan
from schedc.plan_json import load_plan
from schedc.problem import Problem
from schedc.simulate import Orders
from schedc.torch_csv import CsvRows, largest_microbatch


def add_plan_argument(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("plan", metavar="PLAN",
                        help="plan file: schedc JSON, or torch CSV (its rows give p, m, v, placement and "
                             "split; problem options give costs and caps, and override)")
    add_problem_options(parser, role="plan")


def is_csv(path: str) -> bool:
    return Path(path).suffix.lower() == ".csv"


def plan_from_args(args: argparse.Namespace) -> tuple[Plan, str | None]:
    """Loads ``args.plan``: JSON as saved by schedc, or a torch CSV read against the problem options,
    with the note on its OVERLAP_F_B cells (``overlap_note``), if any."""
    if is_csv(args.plan):
        from schedc.torch_csv import load_csv_plan

        problem, read = csv_input(args)
        orders = read.orders
        try:
            return load_csv_plan(args.plan, problem, orders=orders), overlap_note(args.plan, read)
        except ScheduleError as err:  # torch's Schedule1F1B dump: where m came from, as validate says
            note = inferred_m_note(args, orders) or placement_note(args, orders, problem)
            if note is None:
                raise
            raise ScheduleError(f"{err}; {note}", err.errors) from None
    reject_problem_options(args)
    return load_plan(args.plan), None


def reject_problem_options(args: argparse.Namespace) -> None:
    """A JSON plan carries its problem: options that would silently not apply are an error."""
    if has_problem(args):
        raise SchedcError(f"{args.plan}: problem options apply to CSV plans only, named *.csv "
                          "(a JSON plan carries its problem)")


def csv_input(args: argparse.Namespace) -> tuple[Problem, CsvRows]:
    """A CSV plan's problem and rows, the file read once: its rows give p, m, v, placement and
    split (as torch infers them); flags and ``--problem FILE`` give the costs and caps, and override
    what the rows give."""
    from schedc.torch_csv import check_csv, check_stage_count, csv_structure, read_csv

    read = read_csv(args.plan)
    orders = read.orders
    structure = csv_structure(orders, args.plan)
    try:
        problem = problem_from_args(args, structure)
    except ProblemError as err:
        inferred_v_shape = structure["placement"] == "vshape" and args.placement is None and not args.problem
        if inferred_v_shape and args.v is not None and "vshape" in str(err):
            raise ProblemError(f"{err} ({args.plan}'s rows place its stages in a V; add --placement looped "
                               "to read them as looped)") from None
        if "too large" in str(err) and not args.problem:  # a typo such as 0F3000000 in the file
            raise ProblemError(f"{args.plan}: {err} ({_counts_from_rows(args, orders)})") from None
        raise
    check_csv(read, problem, args.plan)
    if args.v is None and not args.problem:  # v came from the rows
        check_stage_count(orders, problem, args.plan)
    return problem, read


def _counts_from_rows(args: argparse.Namespace, orders: Orders) -> str:
    """Where the counts the flags left to the rows came from: the largest microbatch and stage."""
    parts = []
    if args.m is None:
        rank, action = largest_microbatch(orders)
        parts.append(f"m = {action.mb + 1} from {action} on rank {rank}")
    if args.v is None:
        top = max((a for order in orders for a in order), key=lambda a: a.stage)
        parts.append(f"{counted(top.stage + 1, 'stage')} from {top}")
    return "its rows give " + " and ".join(parts) if parts else "as the flags give it"


def inferred_m_note(args: argparse.Namespace, orders: Orders) -> str | None:
    """For a CSV whose m came from its rows: where from. One action with too large an index (torch's
    own Schedule1F1B writes 2F5 for m = 5 on its last rank) makes every correct rank miss tasks."""
    if args.m is not None or args.problem:
        return None
    rank, action = largest_microbatch(orders)
    if all(any(a.mb == action.mb for a in order) for order in orders):
        return None  # every rank runs that microbatch: m is not the suspect
    return (f"{args.plan}: m = {action.mb + 1} was taken from its largest microbatch index, in {action} on "
            f"rank {rank}; give --m to check it against another")


def placement_note(args: argparse.Namespace, orders: Orders, problem: Problem) -> str | None:
    """For a CSV whose placement came from its rows, when the rows put every stage on one rank but
    as neither placement schedc models does (contiguous stages, say, which torch accepts): each
    action was an error of its own, without the cause."""
    if args.placement is not None or args.problem or problem.p == 1:
        return None
    ranks: dict[int, set[int]] = {}
    for r, order in enumerate(orders):
        for a in order:
            ranks.setdefault(a.stage, set()).add(r)
    if any(len(held) > 1 for held in ranks.values()) or any(s >= problem.num_stages for s in ranks):
        return None
    if all(problem.stage_rank[s] in held for s, held in ranks.items()):
        return None
    stage = next(s for s, held in sorted(ranks.items()) if problem.stage_rank[s] not in held)
    where = f"{args.plan}: its rows put stage {stage} on rank {min(ranks[stage])}"
    if problem.v == 2:
        return (f"{where}, which neither looped placement (stage s on rank s mod p) nor vshape does: schedc "
                "models those two only")
    return (f"{where}, where looped placement (stage s on rank s mod p) has rank {stage % problem.p}: schedc "
            "models looped placements (and vshape, at v = 2) only")


def overlap_note(path: str, read: CsvRows) -> str | None:
    """For a CSV with OVERLAP_F_B cells (torch's DualPipeV): schedc times a cell's parts one after
    the other, as torch's runtime runs them without a registered overlap function, and keeps no
    grouping, so a CSV it writes gives them separate cells (a custom function is then not called)."""
    count = sum(is_overlap(cell) for row in read.cells for cell in row)
    if not count:
        return None
    cells = "cell runs its parts" if count == 1 else "cells run their parts"
    return (f"{path}: its {count} OVERLAP_F_B {cells} one after the other, in the order listed, as torch "
            "runs them without a registered OVERLAP_F_B function; a CSV schedc writes gives each part a "
            "cell of its own")


def csv_conflict_note(args: argparse.Namespace, orders: Orders, problem: Problem) -> str | None:
    """Where the flags or the problem file override what a CSV's rows give so that its tasks read as
    not the problem's: validate listed dozens of such errors without the one cause. Only what the
    rows decide counts: a larger m or v only makes tasks missing (a file cut short); the split needs
    a backward in the rows, the placement every stage (a V without its last stage reads as looped)
    and p > 1 (where the two are one)."""
    from schedc.torch_csv import csv_structure

    rows = csv_structure(orders, args.plan)
    stages = max(a.stage for order in orders for a in order) + 1
    decided = {"m": rows["m"] > problem.m, "v": rows["v"] > problem.v,
               "split": any(a.kind != "F" for order in orders for a in order),
               "placement": problem.p > 1 and stages == problem.num_stages}
    values = {"m": problem.m, "v": problem.v, "placement": problem.placement, "split": problem.split}
    differ = [name for name, value in values.items() if decided[name] and rows[name] != value]
    if not differ:
        return None
    flags = problem_overrides(args)

    def show(value: object) -> str:
        """A bool as the problem file writes it; anything else as it is (``{True: ...}.get(1)``
        matched the integer 1 too, so m = 1 read "m = true")."""
        return ("true" if value else "false") if isinstance(value, bool) else str(value)

    def theirs(name: str) -> str:
        text = f"{name} = {show(rows[name])}"
        if name == "m":
            rank, action = largest_microbatch(orders)
            text += f" (from {action} on rank {rank})"
        return text

    def ours(name: str) -> str:
        origin = "a flag" if name in flags or not args.problem else f"the problem file {args.problem}"
        return f"{name} = {show(values[name])} from {origin}"

    return (f"{args.plan}: its rows give {', '.join(map(theirs, differ))}, where the problem has "
            f"{', '.join(map(ours, differ))}; the errors below follow the problem")
