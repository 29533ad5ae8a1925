"""Profiling: measured stage costs, activation bytes and P2P latency -> a problem file the solver
reads.

``time_stages`` runs each stage on one microbatch as the runtime runs it (the same handlers'
autograd calls: F, then I through ``backward_input``, then W through ``backward_weight``) and keeps
the median of several repeats. ``measure_p2p`` (``message_costs.py``) ping-pongs a boundary (all
of stage 0's output tensors, in flight at once as the runner sends them) between two ranks (on the
default group, or two local gloo processes).
``measure_message_calls`` (there too) times what the runner's own rank spends per message outside compute: a
``Mailbox.send`` (isend plus reaping) on the producer's rank and a ``Mailbox.post_recv`` (irecv) on
the consumer's rank. The simulator has no such slots, so ``with_message_calls`` charges them to the
actions that cause them: a stage's F pays one receive if its input comes from another rank and one
send if its output goes to another rank; its B (split: I) likewise for the gradients. W pays none.
For an unsplit problem each stage's whole backward (B) is timed too, and ``as_fused`` scales its
I and W times to sum to it; where the backward cannot split (a reentrant or selective checkpoint)
the whole backward alone is kept, in tb (``_timed``).
``profile_problem`` turns all of it into a ``Problem`` with per-stage costs in integer ``unit``s
(exact, as schedc wants), with the bytes each stage holds after F and after I beside it
(``activation_bytes``; the CLI derives w_mem and caps from them), and ``problem_toml`` writes it
for ``schedc solve --problem FILE``.
"""

from __future__ import annotations

import math
import statistics
import time
from collections.abc import Callable, Iterable, Mapping, Sequence
from dataclasses import dataclass, replace
from fractions import Fraction
from numbers import Real

import torch
from torch import nn

from schedc.errors import ArgumentError, ProblemError, shown
from schedc.problem import Problem, StageCost

from .activation_bytes import StageBytes, stage_bytes
from .handlers import split_refusal, stage_input
from .message_costs import (
    MessageCalls,
    check_count,
    measure_message_calls,
    measure_p2p,
)
from .shapes import TensorMeta, as_tensors, differentiable, grad_metas, metas_of
from .split_backward import backward_full, backward_input, backward_weight


@dataclass(frozen=True)
class StageTimes:
    """Median seconds of one microbatch through one stage: forward, input gradient, weight gradient."""

    tf: float
    tb: float
    tw: float


class _Clock:
    """Marks in a pass and the seconds between them. On CUDA the marks are events on the device's
    current stream and nothing waits in between: a host sync before and after every action leaves
    the GPU idle while the CPU launches the next one, which overstated a GPU stage's costs by 15-29%
    against a plain training step (H200, benchmarks/cuda_check.py), where events came within 2%."""

    def __init__(self, device: torch.device) -> None:
        self.device = device
        self.cuda = device.type == "cuda"

    def mark(self) -> object:
        if not self.cuda:
            return time.perf_counter()
        event = torch.cuda.Event(enable_timing=True)
        event.record(torch.cuda.current_stream(self.device))
        return event

    def seconds(self, a: object, b: object) -> float:
        """Between two marks; on CUDA only after ``done``."""
        return a.elapsed_time(b) / 1e3 if self.cuda else b - a

    def done(self) -> None:
        if self.cuda:
            torch.cuda.synchronize(self.device)


def _one_pass(stages: list[nn.Module], example: torch.Tensor, loss_fn: Callable | None, target: object,
              device: torch.device, first: bool, fused: bool = False) -> list[tuple[float, float, float]]:
    """Seconds of F, I, W of every stage for one microbatch (as the handlers run them); ``first``:
    stages[0] is the model's first stage. ``fused``: the backward runs whole (an unsplit plan's B)
    and is timed as I, with W 0."""
    clock = _Clock(device)
    inputs, outputs, marks = [], [], {}
    value = example
    for k, stage in enumerate(stages):
        inp = tuple(stage_input(t, first and k == 0) for t in as_tensors(value, f"the input of stage {k}"))
        start = clock.mark()
        out = stage(*inp)
        if k == len(stages) - 1 and loss_fn is not None:
            out = loss_fn(out, target)
        marks[k] = [start, clock.mark()]
        if k == len(stages) - 1 and loss_fn is not None:
            _check_loss(out)
        inputs.append(tuple(t for t in inp if t.requires_grad))
        outputs.append(as_tensors(out, f"the output of stage {k}"))  # named as the runner names it
        value = out
    grads = [None] if loss_fn is not None else [torch.ones_like(o) for o in outputs[-1] if o.requires_grad]
    if not grads:  # the runner refuses such a model at its loss; timed, its backward would be overhead
        raise ProblemError("the model's output does not require grad (detached, or integers such as an "
                           "argmax): no backward follows it, so tb and tw cannot be measured")
    for k in reversed(range(len(stages))):
        params = [p for p in stages[k].parameters() if p.requires_grad]
        outs = [o for o in outputs[k] if o.requires_grad]
        start = clock.mark()
        if fused:
            dxs = backward_full(outs, grads, inputs[k])
            mid = clock.mark()
        else:
            dxs, work = backward_input(outs, grads, inputs[k], params)
            mid = clock.mark()
            backward_weight(work)
        marks[k] += [start, mid, clock.mark()]
        if k > 0:  # the previous stage's outputs that require grad, in order, get these
            floats = [o for o in outputs[k - 1] if differentiable(o.dtype)]
            grads = [g for o, g in zip(floats, dxs, strict=True) if o.requires_grad]
    clock.done()
    return [(clock.seconds(f0, f1), clock.seconds(b0, b1), clock.seconds(b1, b2))
            for f0, f1, b0, b1, b2 in (marks[k] for k in range(len(stages)))]


def _check_loss(loss: object) -> None:
    if not isinstance(loss, torch.Tensor) or loss.numel() != 1 or not loss.requires_grad:
        raise ProblemError(f"loss_fn must return a scalar tensor that requires grad (a mean loss of the "
                           f"output), got {shown(loss)}")


def time_stages(
    stages: Sequence[nn.Module], example: torch.Tensor, loss_fn: Callable | None = None,
    target: object = None, repeats: int = 10, warmup: int = 2, first: bool = True, fused: bool = False,
) -> list[StageTimes]:
    """Median F, I, W seconds of each stage on the microbatch ``example`` (stages in layer order).

    Parameter gradients are cleared afterwards. Without ``loss_fn`` the last stage is timed as a
    middle stage: its output gradient is all ones. ``first``: stages[0] is the model's first stage,
    whose I computes no input gradient (as in the runner); pass False when timing later stages alone.
    ``fused``: each stage's whole backward (B, as an unsplit plan runs it) is timed as ``tb``, ``tw`` 0.
    """
    check_count(repeats, "--repeats", 1)
    check_count(warmup, "warmup", 0)
    stages = _stage_list(stages)
    device = as_tensors(example, "the example")[0].device
    runs = [_one_pass(stages, example, loss_fn, target, device, first, fused)
            for _ in range(warmup + repeats)][warmup:]
    for stage in stages:
        stage.zero_grad(set_to_none=True)
    return [StageTimes(*(statistics.median(run[k][j] for run in runs) for j in range(3)))
            for k in range(len(stages))]


def as_fused(split: Sequence[StageTimes], fused: Sequence[StageTimes]) -> list[StageTimes]:
    """Split times scaled so that each stage's tb + tw is its measured whole backward (``fused``'s
    tb): an unsplit plan's B costs tb + tw, and one autograd pass may cost less than I and W apart.
    The I : W ratio stays as measured, for a plan that splits them later."""
    out = []
    for s, f in zip(split, fused, strict=True):
        scale = f.tb / (s.tb + s.tw) if s.tb + s.tw > 0 else 1.0
        out.append(StageTimes(s.tf, s.tb * scale, s.tw * scale))
    return out


def with_message_calls(problem: Problem, stage_seconds: Sequence[StageTimes], calls: MessageCalls,
                       grad_calls: MessageCalls | None = None) -> list[StageTimes]:
    """Stage times plus the message calls each action makes (see the module docstring): F receives
    the activation from stage-1 and sends its output to stage+1; B/I receives the gradient from
    stage+1 and sends the input gradient to stage-1; only the messages that cross ranks count.
    ``grad_calls``: the gradient messages' costs (they carry only a boundary's floating-point
    tensors), ``calls`` where None."""
    grad_calls = calls if grad_calls is None else grad_calls
    rank = problem.stage_rank
    out = []
    for s, t in enumerate(stage_seconds):
        prev = s > 0 and rank[s - 1] != rank[s]
        succ = s < problem.num_stages - 1 and rank[s + 1] != rank[s]
        f = t.tf + prev * calls.recv + succ * calls.send
        b = t.tb + succ * grad_calls.recv + prev * grad_calls.send
        out.append(StageTimes(f, b, t.tw))
    return out


@dataclass(frozen=True)
class Profile:
    problem: Problem
    stage_times: tuple[StageTimes, ...]
    comm_seconds: float
    message_calls: MessageCalls | None
    """Measured per-message call costs, already included in the problem's stage costs (None:
    not measured, e.g. one rank or ``comm`` given)."""
    grad_message_calls: MessageCalls | None
    """The same for the gradient messages (a boundary's floating-point tensors only)."""
    unit: float
    """Seconds per cost unit of the problem (1e-6: costs are in microseconds)."""
    activation_bytes: tuple[StageBytes, ...] = ()
    """Per stage, the bytes one microbatch holds after F and after I (``activation_bytes``): what a
    cap's unit and w_mem are in bytes."""


def _stage_list(stages: object) -> list[nn.Module]:
    """Every stage's module in layer order: a list, an nn.ModuleList or an nn.Sequential of them."""
    found = [] if isinstance(stages, Mapping | str) or not isinstance(stages, Iterable) else list(stages)
    if not found or not all(isinstance(m, nn.Module) for m in found):
        raise ArgumentError(f"stages must be a list of every stage's nn.Module in layer order, "
                            f"got {shown(stages)}")
    return found


def _check_profile_args(stages: object, problem: object, comm: object, unit: object) -> None:
    if not isinstance(problem, Problem):
        raise ArgumentError(f"profile_problem needs a Problem, got {type(problem).__name__}")
    if len(stages) != problem.num_stages:
        raise ProblemError(f"{len(stages)} stages given for a problem of p*v = {problem.num_stages}")
    for name, value, least in (("comm", comm, 0.0), ("unit", unit, None)):
        if value is None and name == "comm":
            continue
        ok = isinstance(value, Real) and not isinstance(value, bool) and math.isfinite(value)
        if not ok or (value < least if least is not None else value <= 0):
            need = ">= 0" if least is not None else "> 0"
            raise ProblemError(f"{name} must be a finite number of seconds {need}, got {shown(value)}")


def _check_samples(example: object) -> None:
    """An example of no samples times only overhead and holds no bytes (a byte budget then gives no
    cap): refused, as the CLI's --microbatch 0 is."""
    first = example[0] if isinstance(example, tuple | list) and example else example
    if isinstance(first, torch.Tensor) and first.dim() > 0 and first.shape[0] == 0:
        raise ProblemError(f"the example microbatch has no samples (shape {tuple(first.shape)}): its "
                           "timings would be overhead only, and its activation bytes 0")


def _check_unit(times: Sequence[StageTimes], unit: float) -> None:
    """A unit coarser than every stage's forward would price them all at the one-unit floor: the
    profile would say nothing about their costs. (One tiny stage, say a Flatten, is fine.)"""
    longest = max(t.tf for t in times)
    if 0 < longest < unit:
        raise ProblemError(f"unit = {unit:g} s is coarser than every stage's forward (the longest takes "
                           f"{longest:.3g} s), so all would cost the one-unit floor; give a smaller unit "
                           "(1e-6: microseconds)")


def _units(seconds: float, unit: float, least: int) -> int:
    return max(least, round(seconds / unit))


def profile_problem(
    stages: Sequence[nn.Module], example: torch.Tensor, problem: Problem, *,
    loss_fn: Callable | None = None, target: object = None, comm: float | None = None,
    unit: float = 1e-6, repeats: int = 10,
) -> Profile:
    """``problem`` (its p, m, v, placement, split, caps) with measured per-stage costs and latency.

    ``stages`` are all p*v stages in layer order; ``comm`` in seconds skips the P2P measurement.
    Outside a process group the measurement starts two local processes (``launch.run_local``), so a
    script that calls this without ``comm`` needs the usual ``if __name__ == "__main__":`` guard.
    When the latency is measured, the runner's per-message call costs are measured too
    (``measure_message_calls``) and added to the F and B/I costs of the stages whose messages cross
    ranks (``with_message_calls``): the stage costs are then those of the actions as the runner
    runs them, communication calls included. Measuring runs forwards and backwards: the stages'
    parameter gradients are cleared afterwards (other trainable leaves a loss uses keep theirs),
    running statistics move and random numbers are drawn.

    The problem keeps the given ``w_mem`` and caps: ``schedc profile`` then sets the measured share
    (``activation_bytes.measured_w_mem`` of the profile's ``activation_bytes``) and, for a byte
    budget, the caps (``caps_for_budget`` over ``unit_bytes``), which a caller of this function does
    itself (uneven stages need neither: ``schedc profile --bounds`` cuts them).
    """
    stages = _stage_list(stages)
    _check_profile_args(stages, problem, comm, unit)
    _check_samples(example)
    times = _timed(stages, example, loss_fn, target, repeats, problem.split)
    _check_unit(times, unit)
    if comm is None:
        metas = _boundary_tensors(stages[0], example) if len(stages) > 1 and problem.p > 1 else None
        comm = measure_p2p(metas, repeats) if metas else 0.0
        calls = measure_message_calls(metas, repeats) if metas else None
        grad_calls = _grad_calls(metas, calls, repeats) if metas else None
    else:
        calls = grad_calls = None
    if calls is not None:
        times = with_message_calls(problem, times, calls, grad_calls)
    costs = tuple(StageCost(_units(t.tf, unit, 1), _units(t.tb, unit, 1), _units(t.tw, unit, 0))
                  for t in times)
    measured = replace(problem, stage_costs=costs, comm=Fraction(_units(comm, unit, 0)))
    ranks = problem.stage_rank
    crossings = [ranks[k] != ranks[k + 1] for k in range(problem.num_stages - 1)]
    held = tuple(stage_bytes(stages, example, loss_fn, target, split=problem.split, crossings=crossings))
    return Profile(measured, tuple(times), comm, calls, grad_calls, unit, held)


def _timed(stages: list[nn.Module], example: torch.Tensor, loss_fn: Callable | None, target: object,
           repeats: int, split: bool) -> list[StageTimes]:
    """The stages' times; unsplit, the whole backward's too, with I and W scaled to it (``as_fused``),
    or alone (in tb) where the backward cannot split (a reentrant or selective checkpoint), which an
    unsplit plan trains all the same (refused before: "the model fails on the example")."""
    if split:
        return time_stages(stages, example, loss_fn, target, repeats)
    fused = time_stages(stages, example, loss_fn, target, repeats, fused=True)
    try:
        return as_fused(time_stages(stages, example, loss_fn, target, repeats), fused)
    except RuntimeError as err:
        if split_refusal(err) is None:
            raise
        for stage in stages:
            stage.zero_grad(set_to_none=True)
        return fused


def _grad_calls(metas: tuple[TensorMeta, ...], calls: MessageCalls, repeats: int) -> MessageCalls:
    """The gradient messages' costs: the forward's where every tensor is a float, none where no
    tensor is (such a boundary sends no gradient tensor)."""
    grads = grad_metas(metas)
    if grads == metas:
        return calls
    return measure_message_calls(grads, repeats) if grads else MessageCalls(0.0, 0.0)


def _boundary_tensors(stage: nn.Module, example: object) -> tuple[TensorMeta, ...]:
    """The tensors of stage 0's output, the boundary the latency is measured on."""
    with torch.no_grad():
        return tuple(metas_of(stage(*as_tensors(example, "the example")), "the output of stage 0"))

