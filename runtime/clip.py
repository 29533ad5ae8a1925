"""Gradient clipping by the norm of the whole pipelined model: Megatron's ``clip_grad_norm`` over
the model-parallel group, which ``torch.nn.utils.clip_grad_norm_`` on one rank's parameters is not
(each rank would clip by its own stages' norm, and the ranks' updates would no longer be those of
the unpipelined model).

Each rank adds up its part (``torch.nn.utils.get_total_norm`` raised to the norm's power, or its
maximum for the infinity norm) over the parameters it holds, each counted once: a Parameter two
stages share once, a weight tied across ranks (``ties=``) only where the tie's first copy lives,
since every copy holds the same summed gradient after the step. One all-reduce over the
pipeline's group gives every rank the total norm, and ``torch.nn.utils.clip_grads_with_norm_``
scales every gradient it holds, copies included. After data-parallel averaging (``dp_group=``)
the replicas hold equal gradients, so the pipeline's group suffices.
"""

from __future__ import annotations

import contextlib
import math
from numbers import Real

import torch
import torch.distributed as dist
from torch import nn
from torch.nn.utils import clip_grads_with_norm_, get_total_norm

from schedc.errors import ArgumentError, shown

from .errors import StepAbortedError
from .rank_label import names_global_rank
from .runner import PipelineRunner
from .waits import all_reduce

_WHAT = "rank {} waited for the gradient norm's all-reduce"


@names_global_rank
def clip_grad_norm_(runner: PipelineRunner, max_norm: float, norm_type: float | str = 2.0,
                    error_if_nonfinite: bool = False, foreach: bool | None = None) -> torch.Tensor:
    """Clips this rank's gradients by the total norm over every rank of ``runner``'s pipeline, and
    returns that norm (as ``torch.nn.utils.clip_grad_norm_`` does for one process). Call it on every
    rank, after ``step()``: it is collective. A loss function that is a module counts its own
    parameters on the last stage's rank."""
    if not isinstance(runner, PipelineRunner):
        raise ArgumentError(f"clip_grad_norm_ needs the PipelineRunner, got {type(runner).__name__}")
    max_norm, norm_type = _number("max_norm", max_norm, True), _number("norm_type", norm_type, False)
    if runner.aborted is not None:
        raise StepAbortedError(f"rank {runner.rank}: an earlier step failed here ({runner.aborted}); build a "
                               "new runner (and process group) on every rank")
    params = _held(runner)
    counted = [p.grad for p in _counted(runner, params) if p.grad is not None]
    local = get_total_norm(counted, norm_type, foreach=foreach)
    dtype, total = local.dtype, local.to(runner.device, torch.float64)
    if runner.plan.problem.p > 1:
        total = _across_ranks(total, norm_type, runner)
    if error_if_nonfinite and not torch.isfinite(total):
        raise RuntimeError(f"rank {runner.rank}: the total norm of order {norm_type:g} of the pipeline's "
                           "gradients is non-finite, so it cannot be clipped (error_if_nonfinite=True)")
    clip_grads_with_norm_(params, max_norm, total, foreach=foreach)
    return total.to(dtype)


def _number(name: str, value: object, zero: bool) -> float:
    """``value`` as a float, taken as torch's ``clip_grad_norm_`` takes it: a real number, a 0-d
    real tensor, or a string ``float`` reads (``norm_type='inf'``, which torch documents). ``zero``:
    0 is allowed (max_norm 0 zeroes every gradient, as in torch)."""
    if isinstance(value, torch.Tensor) and value.numel() == 1 and not value.is_complex():
        value = value.item()
    elif isinstance(value, str):
        with contextlib.suppress(ValueError):
            value = float(value)
    wanted = f"a number {'>=' if zero else '>'} 0"
    if isinstance(value, bool) or not isinstance(value, Real) or not (value > 0 or (zero and value == 0)):
        raise ArgumentError(f"{name} must be {wanted}, got {shown(value)}")
    if _overflows(value):
        raise ArgumentError(f"{name} must be {wanted} that a float holds, got {shown(value)}")
    return float(value)


def _overflows(value: Real) -> bool:
    """Past what a float holds (an int of 400 digits): torch's clip would raise OverflowError."""
    try:
        float(value)
    except OverflowError:
        return True
    return False


def _held(runner: PipelineRunner) -> list[torch.Tensor]:
    """Every trainable parameter this rank holds, each object once."""
    modules = list(runner.stages.values())
    if isinstance(runner.loss_fn, nn.Module) and runner.holds_last:
        modules.append(runner.loss_fn)
    found = {id(p): p for m in modules for p in m.parameters() if p.requires_grad}
    return list(found.values())


def _counted(runner: PipelineRunner, params: list[torch.Tensor]) -> list[torch.Tensor]:
    """The parameters whose gradients count in the norm: tied copies only at the tie's first copy."""
    first = {id(p) for p in runner.tied.first_copies()}
    skip = {id(p) for p in runner.tied.local_params()} - first
    return [p for p in params if id(p) not in skip]


def _across_ranks(local: torch.Tensor, norm_type: float, runner: PipelineRunner) -> torch.Tensor:
    """The norm over every rank from each rank's norm of its part: the sum of the parts raised to
    the norm's power, or for the infinity norm their maximum, where a NaN on any rank makes the
    total NaN (gloo's MAX would drop it). Bounded by the runner's timeout."""
    if math.isinf(norm_type):
        nan = torch.isnan(local)
        values = torch.stack([torch.where(nan, torch.zeros_like(local), local), nan.to(local.dtype)])
        all_reduce(values, dist.ReduceOp.MAX, runner.group, runner.timeout, _WHAT.format(runner.rank))
        return torch.where(values[1] > 0, torch.full_like(values[0], math.nan), values[0])
    power = local ** norm_type
    all_reduce(power, dist.ReduceOp.SUM, runner.group, runner.timeout, _WHAT.format(runner.rank))
    return power ** (1.0 / norm_type)
