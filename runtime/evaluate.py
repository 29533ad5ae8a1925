"""Forward-only steps (``PipelineRunner.eval``): validation and inference on the plan's ranks, as
torch's ``schedule.eval`` runs a schedule's forwards only.

Each rank runs its forwards in the plan's order without the backwards: a subsequence of an order
the plan already runs, so it cannot deadlock, and the lowering derives its messages (activations
only) as for a step. Under ``torch.no_grad`` nothing is kept for a backward, so no cap applies.
Switching modules to eval mode (dropout, batch norm) stays the caller's, as with torch.
"""

from __future__ import annotations

import torch

from schedc.actions import Action
from schedc.simulate import Orders

from .handlers import StepContext, checked_loss, run_stage
from .lowering import TensorKey
from .shapes import as_tensors


def forward_orders(orders: Orders) -> tuple[tuple[Action, ...], ...]:
    """Each rank's forwards, in the plan's order."""
    return tuple(tuple(a for a in order if a.kind == "F") for order in orders)


def forward_only(ctx: StepContext, a: Action, outputs: dict[int, object],
                 losses: dict[int, torch.Tensor]) -> None:
    """F without a graph: the last stage keeps its output (and the loss, given a target)."""
    raw = ctx.inputs[a.mb] if a.stage == 0 else ctx.mailbox.take(TensorKey("act", a.stage - 1, a.mb), a)
    out = run_stage(ctx.stages[a.stage], as_tensors(raw, f"the input of stage {a.stage}"), a.stage,
                    ctx.mailbox.rank)
    if not ctx.is_last(a.stage):
        ctx.mailbox.put(TensorKey("act", a.stage, a.mb), as_tensors(out, f"the output of stage {a.stage}"))
        return
    outputs[a.mb] = out
    if ctx.targets is not None and ctx.loss_fn is not None:
        loss = checked_loss(ctx.loss_fn(out, ctx.targets[a.mb]), ctx.mailbox.rank)
        losses[a.mb] = loss.detach().reshape(()).clone()  # a view would hold mse_loss's whole buffer


def merged(outputs: dict[int, object]) -> object:
    """The last stage's outputs for the whole batch, microbatches in order: tensors of at least one
    dimension concatenated, tuples, lists and dicts entry by entry, anything else (a 0-d auxiliary
    loss, None, tensors whose other dimensions differ by microbatch) as a list with one value per
    microbatch."""
    return _merge([outputs[mb] for mb in sorted(outputs)])


def _merge(parts: list) -> object:
    first = parts[0]
    if all(isinstance(p, torch.Tensor) and p.dim() > 0 and p.shape[1:] == first.shape[1:]
           and p.dtype == first.dtype and p.device == first.device for p in parts):
        return torch.cat(parts)
    if isinstance(first, tuple | list) and all(type(p) is type(first) and len(p) == len(first)
                                              for p in parts):
        entries = [_merge(list(entry)) for entry in zip(*parts, strict=True)]
        return type(first)(*entries) if hasattr(first, "_fields") else type(first)(entries)
    if isinstance(first, dict) and all(isinstance(p, dict) and p.keys() == first.keys() for p in parts):
        return {key: _merge([p[key] for p in parts]) for key in first}
    return parts


def fill_losses(losses: list | None, found: dict[int, torch.Tensor]) -> None:
    """The caller's ``losses`` as torch's ``_update_losses`` leaves them: emptied, then each
    microbatch's loss in microbatch order, where there are losses (the last stage's rank, and in
    ``eval`` given a target); elsewhere untouched. Appending instead grew a list reused across
    steps (a reviewer's loop averaged stale losses)."""
    if losses is not None and found:
        losses[:] = [found[mb] for mb in sorted(found)]
