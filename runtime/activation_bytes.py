"""Bytes of activation one microbatch holds on each stage: schedc's memory unit, in bytes.

schedc counts activation memory in units of one microbatch's activations through all of a rank's
layers (each of its v stages 1/v). ``stage_activation_bytes`` measures, per stage, what its forward
leaves allocated for the backward: the tensors autograd saves and the stage's outputs (the runner
keeps them until the backward), each storage once, parameters excluded. ``caps_for_budget`` turns a
per-rank byte budget into schedc caps.

The model is approximate where stages differ: schedc gives every stage of a rank the same share
(1/v), so a rank's unit is its stages' bytes together, and a budget is exact only for v = 1 or
equal stages. Memory that autograd frees in the backward before I ends (W's share, ``w_mem``) is
not measured: ``w_mem`` stays the problem's.
"""

from __future__ import annotations

import math
from collections.abc import Callable, Sequence
from fractions import Fraction

import torch
from torch import nn

from schedc.errors import ProblemError
from schedc.problem import Problem

from .handlers import stage_input
from .shapes import as_tensors


def stage_activation_bytes(stages: Sequence[nn.Module], example: object, loss_fn: Callable | None = None,
                           target: object = None, first: bool = True) -> list[int]:
    """Per stage (layer order), the bytes one microbatch's forward leaves for its backward."""
    value, out = example, []
    for k, stage in enumerate(stages):
        inputs = tuple(stage_input(t, first and k == 0) for t in as_tensors(value, "an input"))
        last = k == len(stages) - 1 and loss_fn is not None
        held, value = _held_bytes(stage, inputs, (lambda o: loss_fn(o, target)) if last else None)
        out.append(held)
    return out


def _held_bytes(stage: nn.Module, inputs: tuple[torch.Tensor, ...],
                loss: Callable | None) -> tuple[int, object]:
    """(bytes the forward saves for the backward plus its outputs', the result)."""
    held: dict[int, int] = {}  # storage address -> bytes
    weights = {p.untyped_storage().data_ptr() for p in stage.parameters()}

    def keep(t: torch.Tensor) -> torch.Tensor:
        storage = t.untyped_storage()
        if storage.data_ptr() not in weights:
            held[storage.data_ptr()] = storage.nbytes()
        return t

    with torch.autograd.graph.saved_tensors_hooks(keep, lambda t: t):
        result = stage(*inputs)
        result = loss(result) if loss is not None else result
    for t in as_tensors(result, "an output"):
        keep(t)
    return sum(held.values()), result


def rank_bytes(problem: Problem, stage_bytes: Sequence[int]) -> tuple[int, ...]:
    """Per rank, its stages' bytes together: one unit of the rank's cap."""
    return tuple(sum(stage_bytes[s] for s in problem.rank_stages[r]) for r in range(problem.p))


def caps_for_budget(problem: Problem, stage_bytes: Sequence[int], budget: int) -> tuple[Fraction | None, ...]:
    """The caps that keep each rank's activations within ``budget`` bytes. A memory level is always a
    multiple of 1/(v * the denominator of w_mem) (F adds 1/v, I and W free their shares of it), so
    rounding each cap down to that grid loses no schedule. A rank without activations gets no cap."""
    grid = problem.v * problem.w_mem.denominator
    caps: list[Fraction | None] = []
    for r, unit in enumerate(rank_bytes(problem, stage_bytes)):
        if unit == 0:
            caps.append(None)
            continue
        cap = Fraction(math.floor(Fraction(budget, unit) * grid), grid)
        if cap < 1:
            held = float(Fraction(budget, unit))
            raise ProblemError(f"an activation budget of {budget:,} bytes holds {held:.3g} of rank {r}'s "
                               f"microbatch activations ({unit:,} bytes each); a schedule needs at least 1")
        caps.append(cap)
    return tuple(caps)
