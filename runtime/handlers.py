"""The compute handlers, one per action kind: {kind: handler}.

A handler runs one action of the plan and nothing else: it takes its inputs from the mailbox or
the saved state of the same (stage, microbatch), computes, and leaves its outputs in the mailbox.
It makes no schedule decision; the plan and the lowering decide what runs when. State is released
when the plan's memory accounting releases it: F keeps the stage's graph; I drops the output side
and keeps only what W needs; W and B drop everything of that microbatch.
"""

from __future__ import annotations

from collections.abc import Callable, Iterator, Sequence
from contextlib import contextmanager
from dataclasses import dataclass, field

import torch
from torch import nn

from schedc.actions import Action

from .comm import Mailbox
from .errors import PlanMismatchError
from .lowering import TensorKey
from .saved_box import RELEASED
from .shapes import as_tensors, differentiable, in_place_error, modifies_input
from .split_backward import WeightWork, backward_full, backward_input, backward_weight


@dataclass
class Saved:
    """What one (stage, microbatch) keeps between its F and its backward."""

    inputs: tuple[torch.Tensor, ...]
    """The stage's inputs that need a gradient (its floating-point ones)."""
    outputs: tuple[torch.Tensor, ...]
    """Every output (the last stage: the scaled loss)."""
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
    loss_scale: float | torch.Tensor
    """1/m, times a float16 scaler's scale (``loss_scaling.py``)."""
    saved: dict[tuple[int, int], Saved] = field(default_factory=dict)
    losses: dict[int, torch.Tensor] = field(default_factory=dict)
    """Each microbatch's loss (unscaled, detached), on the last stage's rank."""
    copy_inputs: list[bool] = field(default_factory=lambda: [False])
    """Whether stage 0 gets copies of its microbatches: the runner's, kept across steps (``forward``)."""

    def is_last(self, stage: int) -> bool:
        return stage == self.num_stages - 1


def stage_input(t: torch.Tensor, first: bool) -> torch.Tensor:
    """A leaf that needs a gradient when some stage upstream will take it: a floating-point input of
    any stage but the model's first (whose input gradient would go nowhere, so its I does no work and
    its W runs the whole weight backward: ``split_backward``)."""
    if t.is_inference():  # made under inference_mode, handed on within the rank (a message is a copy)
        t = t.clone()  # outside inference mode: an ordinary tensor, which may require grad
    return t.detach().requires_grad_(not first and differentiable(t.dtype))


def _model_inputs(ctx: StepContext, mb: int) -> tuple[torch.Tensor, ...]:
    """Stage 0's microbatch: views of the caller's batch, which share its version counter, or copies
    once a forward is seen to modify its input in place (``forward``)."""
    raw = as_tensors(ctx.inputs[mb], "the input of stage 0")
    return tuple(t.clone() for t in raw) if ctx.copy_inputs[0] else raw


def forward(ctx: StepContext, a: Action) -> None:
    """F: the stage on one microbatch; the last stage also computes the (scaled) loss."""
    raw = _model_inputs(ctx, a.mb) if a.stage == 0 else as_tensors(
        ctx.mailbox.take(TensorKey("act", a.stage - 1, a.mb), a), f"the input of stage {a.stage}")
    inputs = tuple(stage_input(t, a.stage == 0) for t in raw)
    versions = [t._version for t in inputs] if a.stage == 0 else None
    out = run_stage(ctx.stages[a.stage], inputs, a.stage, ctx.mailbox.rank)
    if versions is not None and versions != [t._version for t in inputs]:
        # An op at the model's start worked in place (ReLU(inplace=True)): on a view of the batch it
        # would fail the backward of every earlier microbatch still to run, so later ones are copies.
        ctx.copy_inputs[0] = True
    if ctx.is_last(a.stage):
        loss = checked_loss(ctx.loss_fn(out, ctx.targets[a.mb]), ctx.mailbox.rank)
        if not loss.requires_grad:
            raise PlanMismatchError(f"rank {ctx.mailbox.rank}: loss_fn returned a loss that does not require "
                                    "grad (detached, or not computed from the model's output): the backward "
                                    "has nothing to follow")
        ctx.losses[a.mb] = loss.detach().clone()  # a clone: mse_loss's 0-d result shares its whole
        # elementwise buffer on CPU, which the step would otherwise hold per microbatch until it ends
        outputs: tuple[torch.Tensor, ...] = (loss * ctx.loss_scale,)
    else:
        outputs = as_tensors(out, f"the output of stage {a.stage}")
        ctx.mailbox.put(TensorKey("act", a.stage, a.mb), tuple(o.detach() for o in outputs))
    ctx.saved[(a.stage, a.mb)] = Saved(tuple(x for x in inputs if x.requires_grad), outputs)


def checked_loss(loss: object, rank: int) -> torch.Tensor:
    """The loss of one microbatch, which must be one number; errors name the rank, as the runner's
    others do."""
    if not isinstance(loss, torch.Tensor) or loss.numel() != 1:
        shape = tuple(loss.shape) if isinstance(loss, torch.Tensor) else type(loss).__name__
        aside = (" (for Megatron's (loss, metrics) form: return the loss alone and keep the metrics from "
                 "inside loss_fn, which runs once per microbatch)" if isinstance(loss, tuple | dict) else "")
        raise PlanMismatchError(f"rank {rank}: loss_fn must return one number per microbatch (a scalar "
                                f"tensor, e.g. a mean loss), got {shape}{aside}")
    if loss.is_complex():  # autograd's backward starts only from a real number
        raise PlanMismatchError(f"rank {rank}: loss_fn must return a real number per microbatch, got a "
                                f"{loss.dtype} one (take its real part or its absolute value)")
    if loss.is_meta:  # a term kept aside by a shape probe (``shape_probe.output_metas``)
        raise PlanMismatchError(f"rank {rank}: the loss holds a tensor of the shape probe "
                                f"(meta device): {_CROSSING}")
    return loss


def run_stage(stage: nn.Module, inputs: tuple[torch.Tensor, ...], index: int, rank: int) -> object:
    """The stage's forward. Its inputs are leaves that need a gradient (as in torch's pipelining),
    so an op that modifies one in place fails in autograd: say which stage and what to change."""
    try:
        return stage(*inputs)
    except RuntimeError as err:
        if not modifies_input(err):
            raise
        raise PlanMismatchError(f"rank {rank}: {in_place_error(index)}") from None


def _differentiable(ctx: StepContext, a: Action, saved: Saved) -> tuple[list, list]:
    """(outputs, their gradients) for the outputs that require grad. The gradient message of a
    boundary has one tensor per floating-point output (``shapes.grad_metas``)."""
    if ctx.is_last(a.stage):
        return list(saved.outputs), [None]
    grads = ctx.mailbox.take(TensorKey("grad", a.stage + 1, a.mb), a)
    floats = [o for o in saved.outputs if differentiable(o.dtype)]
    pairs = [(o, g) for o, g in zip(floats, grads, strict=True) if o.requires_grad]
    return [o for o, _ in pairs], [g for _, g in pairs]


def _emit_input_grad(ctx: StepContext, a: Action, dxs: tuple[torch.Tensor, ...]) -> None:
    if a.stage > 0:
        ctx.mailbox.put(TensorKey("grad", a.stage, a.mb), dxs)


_UNSPLIT = "or a plan without split (solve --no-split)"
_CROSSING = ("a loss or forward that uses the activations of another stage or microbatch outside the stage "
             "outputs (an auxiliary loss kept aside) cannot be pipelined; return such terms as stage outputs")
_REFUSALS = {
    "use_reentrant=True": (
        "uses checkpoint(use_reentrant=True), which cannot split its backward into I and W",
        f"use use_reentrant=False, {_UNSPLIT}"),
    "donated buffers": (
        "was compiled with donated buffers (torch.compile after an ordinary backward), which I cannot "
        "keep for W",
        f"set torch._functorch.config.donated_buffer = False, {_UNSPLIT}"),
    RELEASED: ("reached, in its backward, a tensor another stage's I already freed", _CROSSING),
    "meta tensor": ("reached, in its backward, a tensor of the shape probe (meta device)",
                    _CROSSING),
    "backward through the graph a second time": (
        "reached, in its backward, a graph another backward already freed", _CROSSING),
    "computed under selective activation checkpoint": (
        "uses selective activation checkpointing (checkpoint's context_fn), whose saved results allow one "
        "backward, where W runs a second over them",
        f"use checkpoint without context_fn, {_UNSPLIT}"),
}
"""A part of torch's message -> (what the stage did, the way out)."""


@contextmanager
def _backward_errors(stage: int, rank: int) -> Iterator[None]:
    """Names the stage and the way out where torch's message speaks of calls the user never made:
    I and W differentiate part of the graph (``autograd.grad``, ``backward(inputs=)``) and keep it
    from I to W, and the runner runs each graph's backward once, so reaching a freed one means the
    loss or a forward used another stage's or microbatch's activations."""
    try:
        yield
    except RuntimeError as err:
        known = split_refusal(err)
        if known is None:
            raise
        raise PlanMismatchError(f"rank {rank}: stage {stage} {known[0]}: {known[1]}") from None


def split_refusal(err: BaseException) -> tuple[str, str] | None:
    """(what the stage did, the way out) where ``err`` says its backward cannot split into I and W."""
    return next((said for part, said in _REFUSALS.items() if part in str(err)), None)


def input_grad(ctx: StepContext, a: Action) -> None:
    """I: gradients w.r.t. the stage inputs only; keeps what W needs and drops the output side."""
    saved = ctx.saved[(a.stage, a.mb)]
    outputs, grads = _differentiable(ctx, a, saved)
    with _backward_errors(a.stage, ctx.mailbox.rank):
        dxs, saved.weight_work = backward_input(outputs, grads, saved.inputs, ctx.params[a.stage])
    saved.inputs = saved.outputs = ()
    _emit_input_grad(ctx, a, dxs)


def weight_grad(ctx: StepContext, a: Action) -> None:
    """W: weight gradients accumulated into .grad; the microbatch's state of this stage is freed."""
    with _backward_errors(a.stage, ctx.mailbox.rank):
        backward_weight(ctx.saved.pop((a.stage, a.mb)).weight_work)


def full_backward(ctx: StepContext, a: Action) -> None:
    """B: input and weight gradients in one pass; the microbatch's state of this stage is freed."""
    saved = ctx.saved.pop((a.stage, a.mb))
    outputs, grads = _differentiable(ctx, a, saved)
    inputs = saved.inputs if a.stage > 0 else ()
    with _backward_errors(a.stage, ctx.mailbox.rank):
        dxs = backward_full(outputs, grads, inputs)
    _emit_input_grad(ctx, a, dxs)


HANDLERS: dict[str, Callable[[StepContext, Action], None]] = {
    "F": forward,
    "I": input_grad,
    "W": weight_grad,
    "B": full_backward,
}
