"""Plans <-> torch.distributed.pipelining's compute-only CSV.

The format is what ``_PipelineScheduleRuntime._load_csv(path, format="compute_only")`` reads: row r
lists rank r's actions in order, one token per cell (``0F3``, ``5I2``, ``5W2``, ``1B0``: stage,
kind, microbatch). torch infers each stage's rank from the row it appears in, lowers the orders
with send/recv and runs them, so a schedc plan exported here runs unchanged under torch, its
microbatches numbered in the order the last stage runs their forwards (``torch_numbering``). Exports
keep idle steps as empty cells (``lockstep_rows``), so that ``PipelineScheduleMulti._load_csv``,
which runs the columns in lockstep, runs them too (where no two adjacent stages share a rank;
torch's lockstep runner fails on the others, V shapes among them, with gloo's "Pair is not
connected", as without the cells). The compact layout leaves the cells out, for large plans run by
``_PipelineScheduleRuntime``.

torch reads an empty cell as ``None`` (an idle step); the order alone defines a schedule, so the
reader skips empty cells as torch's runtime does. It also reads torch's ``compute_comms`` dumps: their
communication and FSDP actions (``SEND_F``, ``RECV_B``, ``UNSHARD``, ``REDUCE_GRAD``, ...) are left out
of the orders, since schedc derives every transfer itself, but a file torch's runtime would fail on
or mis-pair is refused (no microbatch, a stage or microbatch the problem lacks, another rank's
stage; and the tokens run as torch runs them, ``torch_comms``), and an
``OVERLAP_F_B`` cell gives its forward and backward in order. A row with no compute action is an
error (every rank holds a stage). A file mixing B with I/W (torch's DualPipeV) is a split schedule
whose B's run some backwards whole (``schedc.dag``). The rows also give the problem's structure
(``csv_structure``), as torch infers it.
Nothing here imports torch.
"""

from __future__ import annotations

import csv
import io
from collections.abc import Iterable
from dataclasses import dataclass, replace

from schedc.actions import Action, parse_cell, transfer_of
from schedc.errors import ArgumentError, PlanFormatError, ProblemError, SchedcError, shown
from schedc.input_files import read_text
from schedc.output_paths import check_suffix, write_file
from schedc.plan import Plan
from schedc.problem import Problem
from schedc.simulate import Orders
from schedc.torch_comms import Step, comms_error, steps_of
from schedc.torch_numbering import torch_numbered
from schedc.validate import structural_errors


def orders_to_rows(orders: Orders) -> list[list[str]]:
    """One row of torch tokens per rank, without idle cells: the compact layout, which torch's
    ``_PipelineScheduleRuntime`` reads as each rank's own sequence."""
    return [[str(a) for a in order] for order in orders]


@dataclass(frozen=True)
class CsvRows:
    """A CSV as read, before the problem is known: each rank's compute actions, which rows are blank,
    and its transfer tokens, kept for the checks that need the problem."""

    orders: Orders
    blank: tuple[int, ...]
    transfers: tuple[Transfer, ...]
    steps: tuple[tuple[Step, ...], ...] = ()
    """Each row's compute actions and tokens in order (``torch_comms``)."""
    gaps: tuple[tuple[int, int], ...] = ()
    """(row, column) of the empty cells of rows that hold something."""
    cells: tuple[tuple[str, ...], ...] = ()
    """The rows as read, for the notes on torch's runners (a FIFO cannot be read twice)."""


Transfer = tuple[int, int, str, int, int | None]
"""(row, column, token, stage, microbatch) of a torch transfer or FSDP token, from 0."""


def rows_to_orders(rows: Iterable[list[str]], problem: Problem | None = None, where: str = "csv") -> Orders:
    """Parses rows of tokens (torch's compute-only or compute_comms format: its communication
    actions are skipped, an OVERLAP_F_B cell gives its parts in order). Errors are one line naming
    the rank and position as the validator counts them (actions only), with the CSV's row and column.
    A blank row (a stray blank line: torch would read it as a rank with nothing to do) is named as
    such, with a problem or, once some row holds actions, without one."""
    read = parse_rows(rows, where)
    if problem is not None:
        check_csv(read, problem, where)
    else:
        refuse_blank(read, where)
    return read.orders


def parse_rows(rows: Iterable[list[str]], where: str = "csv") -> CsvRows:
    """The rows parsed (``rows_to_orders``); what needs the problem is ``check_csv``'s."""
    rows = list(rows)
    orders, transfers, steps = [], [], []
    for r, row in enumerate(rows):
        order, moves, row_steps = _row_actions(row, r, where)
        orders.append(order)
        transfers += moves
        steps.append(row_steps)
    blank = tuple(r for r, row in enumerate(rows) if not any(cell.strip() for cell in row))
    gaps = tuple((r, c) for r, row in enumerate(rows) if r not in blank
                 for c, cell in enumerate(row) if not cell.strip())
    return CsvRows(tuple(orders), blank, tuple(transfers), tuple(steps), gaps, tuple(map(tuple, rows)))


def refuse_blank(read: CsvRows, where: str = "csv") -> None:
    """Without a problem the rows give p, so a blank row among rows that hold actions (a stray blank
    line) is named here, before it reads as a rank with nothing to do."""
    if read.blank and any(read.orders):
        raise PlanFormatError(f"{where}: {_blank_says(read.blank)}: each row lists one rank's actions "
                              f"(remove {'it' if len(read.blank) == 1 else 'them'})")


def check_csv(read: CsvRows, problem: Problem, where: str = "csv") -> None:
    """One row per rank, each with a compute action (every rank holds a stage); the count first, so
    trailing blank lines read as too many rows (named as blank in the error); then, where the
    compute order is a schedule of the problem, the transfer tokens against it (``_transfer_error``,
    ``torch_comms``)."""
    orders, blank = read.orders, read.blank
    if len(orders) != problem.p:
        hint = f" ({_blank_says(blank)})" if blank else ""
        raise PlanFormatError(f"{where}: {_count(len(orders), 'row')}, but the problem has p = {problem.p} "
                              f"{'rank' if problem.p == 1 else 'ranks'}{hint}")
    for r, order in enumerate(orders):
        if r in blank:
            raise PlanFormatError(f"{where}: row {r + 1} (rank {r}) is blank: each row lists one rank's "
                                  "actions")
        if not order:
            raise PlanFormatError(f"{where}: row {r + 1} (rank {r}) has no compute actions")
    if not read.transfers or structural_errors(problem, orders):
        return  # the compute order's errors are validate's, with their cause (a flag, a placement)
    if read.gaps:
        r, c = read.gaps[0]
        raise PlanFormatError(f"{where}: row {r + 1} (rank {r}), column {c + 1}: an empty cell in a file "
                              "with torch's transfer tokens, which its compute_comms reader refuses "
                              "(\"Expected action to be not None\")")
    for transfer in read.transfers:
        error = _transfer_error(transfer, problem)
        if error:
            r, c, token = transfer[:3]
            raise PlanFormatError(f"{where}: row {r + 1} (rank {r}), column {c + 1}: transfer token "
                                  f"{shown(token, 40)} {error}")
    wrong = comms_error(read.steps, problem)
    if wrong:
        r, c, message = wrong
        raise PlanFormatError(f"{where}: row {r + 1} (rank {r}), column {c + 1}: {message}")


def _transfer_error(transfer: Transfer, problem: Problem) -> str | None:
    """What torch's runtime would fail on: a stage or microbatch the problem lacks, or a stage of
    another rank (torch names each transfer by the stage of the rank that runs it: SEND_F by the
    sender's stage, RECV_F by the receiver's)."""
    r, _, _, stage, mb = transfer
    if stage >= problem.num_stages:
        return f"names stage {stage}, but the problem has {_count(problem.num_stages, 'stage')}"
    if problem.stage_rank[stage] != r:
        return (f"names stage {stage}, which is on rank {problem.stage_rank[stage]}: a row's transfers name "
                "its own stages")
    if mb is not None and mb >= problem.m:
        return f"names microbatch {mb}, but the problem has m = {problem.m}"
    return None


def _blank_says(blank: tuple[int, ...]) -> str:
    rows = ", ".join(str(r + 1) for r in blank[:3]) + (", ..." if len(blank) > 3 else "")
    return f"row {rows} is blank" if len(blank) == 1 else f"rows {rows} are blank"


def _row_actions(row: list[str], r: int,
                 where: str) -> tuple[tuple[Action, ...], list[Transfer], tuple[Step, ...]]:
    order: list[Action] = []
    transfers: list[Transfer] = []
    steps: list[Step] = []
    for c, cell in enumerate(row):
        try:
            actions = parse_cell(cell)  # one pattern match per cell that holds a compute action
            moved = None if actions else transfer_of(cell)
            order.extend(actions)
            steps += steps_of(actions, c)
            if moved is not None:
                transfers.append((r, c, cell.strip(), moved[0], moved[2]))
                steps.append(Step(c, moved[1], moved[0], moved[2]))
        except PlanFormatError as err:
            raise PlanFormatError(f"{where}: rank {r} position {len(order)} (row {r + 1}, column {c + 1}): "
                                  f"{err}") from None
    return tuple(order), transfers, tuple(steps)


def _count(n: int, noun: str) -> str:
    return f"{n} {noun}{'' if n == 1 else 's'}"


def csv_structure(orders: Orders, where: str = "csv") -> dict[str, object]:
    """The problem fields a CSV's orders determine, as torch infers them: ranks (rows), microbatches,
    stages per rank, placement (each stage's row) and whether the backward is split: unsplit when
    every backward is a B, split when any is I and W (B's among them run whole)."""
    if not any(orders):
        raise PlanFormatError(f"{where}: no compute actions (F, I, W or B) in any row")
    stages = max(a.stage for order in orders for a in order) + 1
    p = len(orders)
    kinds = {a.kind for order in orders for a in order}
    fields = {"p": p, "m": max(a.mb for order in orders for a in order) + 1, "v": max(1, -(-stages // p)),
              "split": bool(kinds & {"I", "W"}) or "B" not in kinds}
    placed = {a.stage: r for r, order in enumerate(orders) for a in order}
    vshape = Problem(p=p, m=1, v=2, placement="vshape").stage_rank if stages == 2 * p > 2 else None
    fields["placement"] = "vshape" if vshape and all(vshape[s] == r for s, r in placed.items()) else "looped"
    return fields


def check_stage_count(orders: Orders, problem: Problem, where: str = "csv") -> None:
    """Rows that name a stage count p does not divide: schedc needs v stages on every rank, and
    rounding v up would report a stage that the file never had as missing."""
    stages = max(a.stage for order in orders for a in order) + 1
    if stages % problem.p:
        raise PlanFormatError(f"{where}: its rows name {_count(stages, 'stage')} (0 to {stages - 1}), which "
                              f"do not divide evenly among its {_count(problem.p, 'row')}: schedc needs the "
                              "same number of stages on every rank (give --v to check it against more)")


def largest_microbatch(orders: Orders) -> tuple[int, Action]:
    """(rank, action) of the largest microbatch index, from which a CSV's m is inferred."""
    return max(((r, a) for r, order in enumerate(orders) for a in order), key=lambda ra: (ra[1].mb, -ra[0]))


def lockstep_rows(plan: Plan) -> list[list[str]]:
    """One row of torch tokens per rank, each action in the column of the time step it would start
    in if every action took one step (a B running I and W whole in a split plan, two; the empty
    cells between them are idle steps, as torch's own
    schedules write them). ``PipelineScheduleMulti`` runs the rows in lockstep, a column at a time,
    matching each send with the receive in the same column: without the empty cells it paired the
    wrong actions and trained wrong gradients, silently. An action's inputs then always come from
    earlier columns; ``_PipelineScheduleRuntime`` and schedc's reader skip the empty cells."""
    p = plan.problem
    steps = replace(p, tf=p.v, tb=p.v, tw=p.v if p.split else 0, stage_costs=None, comm=0, mem=())
    rows = []
    for slots in Plan(problem=steps, orders=plan.orders, source="lockstep").timeline.slots:
        cells = {int(slot.start): str(slot.action) for slot in slots}  # whole steps: each stage costs 1
        rows.append([cells.get(t, "") for t in range(max(cells, default=-1) + 1)])
    return rows


LAYOUTS = ("lockstep", "compact")
"""lockstep: ``lockstep_rows``, for both of torch's runners. compact: the orders alone
(``orders_to_rows``), for ``_PipelineScheduleRuntime`` only; its size does not grow with the idle
steps (p = m = 200 under a cap of 1: 0.8 MB against 16.7 MB)."""


def csv_text(plan: Plan, layout: str = "lockstep") -> str:
    """The plan's orders in torch's compute-only format, rendered before any file is touched, its
    microbatches numbered as torch's runners read them (``torch_numbering``)."""
    if not isinstance(layout, str) or layout not in LAYOUTS:
        raise ProblemError(f"the CSV layout is {' or '.join(LAYOUTS)}, got {shown(layout)}")
    orders = torch_numbered(plan.problem, plan.orders)
    if orders is not plan.orders:
        plan = Plan(problem=plan.problem, orders=orders, source=plan.source)
    out = io.StringIO()
    csv.writer(out).writerows(lockstep_rows(plan) if layout == "lockstep" else orders_to_rows(plan.orders))
    return out.getvalue()


def write_csv(plan: Plan, path: str, layout: str = "lockstep") -> None:
    """Writes the plan's orders in torch's compute-only format, all-or-nothing (never truncated)."""
    if not isinstance(plan, Plan):
        raise ArgumentError(f"write_csv needs a Plan, got {type(plan).__name__}")
    check_suffix(path, "write_csv", "what it writes", csv=True)
    text = csv_text(plan, layout)
    try:
        write_file(path, text)
    except OSError as err:
        raise SchedcError(f"cannot write {path}: {err.strerror}") from None


def read_csv_orders(path: str, problem: Problem | None = None) -> Orders:
    """Reads per-rank orders from a CSV (without a problem, ``check_csv`` is the caller's, through
    ``read_csv``; the rest of the structure is checked by ``validate``, not here)."""
    if problem is not None and not isinstance(problem, Problem):
        raise ArgumentError(f"reading a CSV plan needs a Problem (or None), got {type(problem).__name__}")
    return rows_to_orders(read_rows(path), problem, path)


def read_csv(path: str) -> CsvRows:
    """A CSV read before its problem is known (the CLI infers the problem from the rows), to be
    checked against it by ``check_csv``."""
    read = parse_rows(read_rows(path), path)
    refuse_blank(read, path)
    return read


def read_rows(path: str) -> list[list[str]]:
    text = read_text(path, "plan", PlanFormatError, keep_bom=True)
    if text.startswith("\ufeff"):
        raise PlanFormatError(f"{path} starts with a byte-order mark (U+FEFF), which torch's CSV reader "
                              "takes as part of the first action: save it as UTF-8 without one")
    try:
        return list(csv.reader(io.StringIO(text, newline="")))
    except csv.Error as err:
        raise PlanFormatError(f"{path} is not a readable CSV: {err}") from None


def load_csv_plan(path: str, problem: Problem, source: str | None = None,
                  orders: Orders | None = None) -> Plan:
    """A Plan from a CSV (``orders``: already read from it); missing or duplicated tasks and deadlocks
    raise a one-line ScheduleError."""
    if not isinstance(problem, Problem):  # a CSV does not say p, m, v, costs or caps
        raise ArgumentError(f"load_csv_plan needs a Problem, got {type(problem).__name__}")
    if source is not None and not isinstance(source, str):
        raise ArgumentError(f"source must be a str or None, got {type(source).__name__}")
    orders = read_csv_orders(path, problem) if orders is None else orders
    try:
        return Plan(problem=problem, orders=orders, source=f"csv:{path}" if source is None else source)
    except SchedcError as err:
        raise type(err)(f"{path}: {err}") from None
