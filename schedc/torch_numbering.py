"""Microbatch numbers as torch's runners read them.

``_PipelineScheduleRuntime`` and ``PipelineScheduleMulti`` append the last stage's losses to a list in
the order its forwards run, and a backward then takes ``losses[mb]``: unless the last stage runs its
forwards as microbatch 0, 1, 2, ..., each backward gets another microbatch's loss (p=2 m=2, the last
stage running 1F1 before 1F0: zero and missing gradients, exit 0) or fails ("Loss for microbatch 1 is
not available"). Microbatches are interchangeable (every cost and edge is the same for each), so a plan
renumbered to that order is the same schedule: same makespan, peaks and gradients, the data chunks
merely taken in another order. schedc's own baselines and solver plans already run that order; a
hand-written plan, or one the span objective would want out of order, is renumbered on export.
"""

from __future__ import annotations

from schedc.actions import Action
from schedc.problem import Problem
from schedc.simulate import Orders


def loss_order(problem: Problem, orders: Orders) -> list[int]:
    """The microbatches in the order the last stage (the one computing the loss) runs its forwards."""
    last = problem.num_stages - 1
    return [a.mb for order in orders for a in order if a.stage == last and a.kind == "F"]


def in_loss_order(problem: Problem, orders: Orders) -> bool:
    order = loss_order(problem, orders)
    return order == sorted(order)


def torch_numbered(problem: Problem, orders: Orders) -> Orders:
    """The orders with microbatch k renamed to the position of its forward on the last stage; the
    orders themselves where that is already their numbering."""
    if in_loss_order(problem, orders):
        return orders
    rename = {mb: k for k, mb in enumerate(loss_order(problem, orders))}
    return tuple(tuple(Action(a.kind, a.stage, rename[a.mb]) for a in order) for order in orders)


def _listed(problem: Problem, orders: Orders, shown: int = 8) -> str:
    order = loss_order(problem, orders)
    return ", ".join(map(str, order[:shown])) + (", ..." if len(order) > shown else "")


def renumbering_note(problem: Problem, orders: Orders) -> str | None:
    """What an export renumbered, for the CLI to say (None where nothing was)."""
    if in_loss_order(problem, orders):
        return None
    return (f"torch's runners read the last stage's losses in the order its forwards run, here "
            f"microbatches {_listed(problem, orders)}: the CSV numbers them 0, 1, 2, ... in that order "
            "(the same schedule, its data chunks taken in another order)")


def torch_misread_note(problem: Problem, orders: Orders, path: str) -> str | None:
    """For a CSV meant for torch whose last stage runs its forwards out of order (None otherwise)."""
    if in_loss_order(problem, orders):
        return None
    return (f"note: torch's runners read the last stage's losses in the order its forwards run, here "
            f"microbatches {_listed(problem, orders)}, and take microbatch k's as the k-th: they would "
            f"train {path} with other microbatches' losses or fail; `schedc show {path} --csv OUT.csv` "
            "writes it numbered in that order")
