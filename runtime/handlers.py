"""The compute handlers, one per action kind: {kind: handler}.

A handler runs one action of the plan and nothing else: it takes its inputs from the mailbox or
the saved state of the same (stage, microbatch), computes, and leaves its outputs in the mailbox.
It makes no schedule decision; the plan and the lowering decide what runs when. State is released
when the plan's memory accounting releases it: F keeps the stage's graph; I drops the output side
and keeps only what W needs; W and B drop everything of that microbatch.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass, field

import torch
from torch import nn

from schedc.actions import Action

from .comm import Mailbox
from .lowering import TensorKey
from .split_backward import WeightWork, backward_full, backward_input, backward_weight


@dataclass
class Saved:
    """What one (stage, microbatch) keeps between its F and its backward."""

    inp: torch.Tensor | None
    out: torch.Tensor | None
    weight_work: WeightWork | None = None


@dataclass
class StepContext:
    """Everything the handlers of one step share."""

    stages: dict[int, nn.Module]
    params: dict[int, list[torch.Tensor]]
    num_stages: int
    mailbox: Mailbox
    inputs: Sequence[torch.Tensor] | None
    targets: Sequence[object] | None
    loss_fn: Callable | None
    loss_scale: float
    saved: dict[tuple[int, int], Saved] = field(default_factory=dict)
    losses: list[torch.Tensor] = field(default_factory=list)

    def is_last(self, stage: int) -> bool:
        return stage == self.num_stages - 1


def forward(ctx: StepContext, a: Action) -> None:
    """F: the stage on one microbatch; the last stage also computes the (scaled) loss."""
    raw = ctx.inputs[a.mb] if a.stage == 0 else ctx.mailbox.take(TensorKey("act", a.stage - 1, a.mb), a)
    inp = raw.detach().requires_grad_(raw.is_floating_point())
    out = ctx.stages[a.stage](inp)
    if ctx.is_last(a.stage):
        loss = ctx.loss_fn(out, ctx.targets[a.mb])
        ctx.losses.append(loss.detach())
        out = loss * ctx.loss_scale
    else:
        ctx.mailbox.put(TensorKey("act", a.stage, a.mb), out.detach())
    ctx.saved[(a.stage, a.mb)] = Saved(inp, out)


def _grad_output(ctx: StepContext, a: Action) -> torch.Tensor | None:
    return None if ctx.is_last(a.stage) else ctx.mailbox.take(TensorKey("grad", a.stage + 1, a.mb), a)


def _emit_input_grad(ctx: StepContext, a: Action, dx: torch.Tensor | None) -> None:
    if a.stage > 0:
        ctx.mailbox.put(TensorKey("grad", a.stage, a.mb), dx)


def input_grad(ctx: StepContext, a: Action) -> None:
    """I: gradient w.r.t. the stage input only; keeps what W needs and drops the output side."""
    saved = ctx.saved[(a.stage, a.mb)]
    dx, saved.weight_work = backward_input(saved.out, _grad_output(ctx, a), saved.inp, ctx.params[a.stage])
    saved.inp = saved.out = None
    _emit_input_grad(ctx, a, dx)


def weight_grad(ctx: StepContext, a: Action) -> None:
    """W: weight gradients accumulated into .grad; the microbatch's state of this stage is freed."""
    backward_weight(ctx.saved.pop((a.stage, a.mb)).weight_work)


def full_backward(ctx: StepContext, a: Action) -> None:
    """B: input and weight gradients in one pass; the microbatch's state of this stage is freed."""
    saved = ctx.saved.pop((a.stage, a.mb))
    inp = saved.inp if a.stage > 0 else None
    _emit_input_grad(ctx, a, backward_full(saved.out, _grad_output(ctx, a), inp, ctx.params[a.stage]))


HANDLERS: dict[str, Callable[[StepContext, Action], None]] = {
    "F": forward,
    "I": input_grad,
    "W": weight_grad,
    "B": full_backward,
}
