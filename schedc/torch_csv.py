"""Plans <-> torch.distributed.pipelining's compute-only CSV.

The format is what ``_PipelineScheduleRuntime._load_csv(path, format="compute_only")`` reads: row r
lists rank r's actions in order, one token per cell (``0F3``, ``5I2``, ``5W2``, ``1B0``: stage,
kind, microbatch). torch infers each stage's rank from the row it appears in, lowers the orders
with send/recv and runs them, so a schedc plan exported here runs unchanged under torch.

torch reads an empty cell as ``None`` (an idle step); the order alone defines a schedule, so the
reader skips empty cells as torch does. A row with no action at all is an error: every rank holds
at least one stage. Nothing here imports torch.
"""

from __future__ import annotations

import csv
import io
from collections.abc import Iterable

from schedc.actions import Action
from schedc.errors import PlanFormatError, SchedcError
from schedc.input_files import read_text
from schedc.plan import Plan
from schedc.problem import Problem
from schedc.simulate import Orders


def orders_to_rows(orders: Orders) -> list[list[str]]:
    """One row of torch tokens per rank."""
    return [[str(a) for a in order] for order in orders]


def rows_to_orders(rows: Iterable[list[str]], problem: Problem, where: str = "csv") -> Orders:
    """Parses rows of tokens; one-line errors name the row (= rank) and column of the defect."""
    orders = []
    for r, row in enumerate(rows):
        order = []
        for c, cell in enumerate(row):
            if not cell.strip():
                continue  # torch reads an empty cell as an idle step
            try:
                order.append(Action.parse(cell))
            except PlanFormatError as err:
                raise PlanFormatError(f"{where}: row {r + 1} (rank {r}) column {c + 1}: {err}") from None
        if not order:
            raise PlanFormatError(f"{where}: row {r + 1} (rank {r}) has no actions")
        orders.append(tuple(order))
    if len(orders) != problem.p:
        raise PlanFormatError(f"{where}: {len(orders)} rows, but the problem has p = {problem.p} ranks")
    return tuple(orders)


def write_csv(plan: Plan, path: str) -> None:
    """Writes the plan's orders in torch's compute-only format."""
    try:
        with open(path, "w", newline="") as f:
            csv.writer(f).writerows(orders_to_rows(plan.orders))
    except OSError as err:
        raise SchedcError(f"cannot write {path}: {err.strerror}") from None


def read_csv_orders(path: str, problem: Problem) -> Orders:
    """Reads per-rank orders from a compute-only CSV (structure is checked by ``validate``, not here)."""
    text = read_text(path, "plan", PlanFormatError)
    try:
        rows = list(csv.reader(io.StringIO(text, newline="")))
    except csv.Error as err:
        raise PlanFormatError(f"{path} is not a readable CSV: {err}") from None
    return rows_to_orders(rows, problem, path)


def load_csv_plan(path: str, problem: Problem, source: str | None = None) -> Plan:
    """A Plan from a CSV; missing or duplicated tasks and deadlocks raise a one-line ScheduleError."""
    orders = read_csv_orders(path, problem)
    try:
        return Plan(problem=problem, orders=orders, source=source or f"csv:{path}")
    except SchedcError as err:
        raise type(err)(f"{path}: {err}") from None
