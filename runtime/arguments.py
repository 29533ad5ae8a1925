"""The runner's own arguments, checked before anything is built: a wrong one is one line."""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from numbers import Real

import torch
import torch.distributed as dist
from torch import nn

from schedc.callables import check_callable
from schedc.errors import ArgumentError, shown
from schedc.plan import Plan
from schedc.problem import Problem, is_flag

from .errors import GradDisabledError, PlanMismatchError
from .shared_weights import untied_errors
from .stages import fit_errors
from .tied import Tie, tie_errors

MAX_TIMEOUT_S = 1e7
"""About 4 months: a longer wait is a typo, and a timedelta of float('inf') does not exist."""


def check_arguments(plan: object, timeout: object, recv_ahead: object, ties: object,
                    loss_fn: object = None) -> None:
    """The runner's own arguments, before anything is built: one line each."""
    if loss_fn is not None:  # else a bare TypeError mid-step, peers waiting
        check_callable(loss_fn, "loss_fn", "loss_fn(output, target) or None", 2)
    if not isinstance(plan, Plan):
        raise ArgumentError(f"PipelineRunner needs a Plan (e.g. solve(problem) or baseline_plan(name, "
                            f"problem)), got {type(plan).__name__}")
    if timeout is not None and (isinstance(timeout, bool) or not isinstance(timeout, Real)
                                or not 0 < timeout <= MAX_TIMEOUT_S):  # no float(): 10**400 overflows it
        raise ArgumentError(f"timeout must be a number of seconds in (0, {MAX_TIMEOUT_S:g}] (None: the "
                            f"process group's own), got {shown(timeout)}")
    if recv_ahead is not None and (type(recv_ahead) is not int or recv_ahead < 0):
        raise ArgumentError(f"recv_ahead must be None or an integer >= 0, got {shown(recv_ahead)}")
    if isinstance(ties, str | bytes) or not isinstance(ties, Sequence) or \
            not all(isinstance(t, Sequence) and not isinstance(t, str) for t in ties):
        raise ArgumentError("ties must be a list of ties, each a list of (stage, parameter name) pairs, "
                            f"e.g. [[(0, 'embed.weight'), (7, 'head.weight')]], got {ties!r:.80}")


def check_fit(problem: Problem, stages: Mapping[int, nn.Module], ties: Sequence[Tie], rank: int,
              world: int) -> None:
    """The stages, ties and world against the plan: every mismatch in one error, before any message."""
    errors = fit_errors(problem, stages, rank, world)
    errors += tie_errors(problem, ties, stages) or untied_errors(getattr(stages, "shared", ()), ties)
    if errors:
        raise PlanMismatchError(f"rank {rank}: " + "; ".join(errors))


def check_flags(**flags: object) -> None:
    """Switches such as ``record`` must be bools: ``record="no"`` would switch recording on."""
    for name, value in flags.items():
        if not is_flag(value):
            raise ArgumentError(f"{name} must be True or False, got {shown(value)}")


def group_of(group: dist.ProcessGroup | None, p: int) -> tuple[dist.ProcessGroup | None, int, int]:
    """(group, rank in it, size). A one-rank plan may run without any process group."""
    if isinstance(group, int) and group == dist.GroupMember.NON_GROUP_MEMBER:
        raise ArgumentError("group: this rank is not in the group it passed (new_group returns "
                            "GroupMember.NON_GROUP_MEMBER, -100, to the ranks outside it): build the runner "
                            "only on the group's ranks")
    if group is not None and not isinstance(group, dist.ProcessGroup):
        raise ArgumentError(f"group must be a torch.distributed ProcessGroup or None (the default group), "
                            f"got {type(group).__name__} {shown(group)}")
    if group is None and not dist.is_initialized():
        if p == 1:
            return None, 0, 1
        raise PlanMismatchError(f"the plan has p = {p} ranks but torch.distributed is not initialised "
                                "(launch with torchrun and call init_process_group)")
    return group, dist.get_rank(group), dist.get_world_size(group)


def device_of(stages: Mapping[int, nn.Module], device: torch.device | None, rank: int) -> torch.device:
    """The one device of the stages' parameters (or ``device``): boundary buffers are made there."""
    found = {p.device for m in stages.values() for p in m.parameters()}
    if device is not None:
        try:
            found.add(torch.device(device))
        except (RuntimeError, TypeError) as err:  # an int is an accelerator index: none on a CPU machine
            raise ArgumentError(f"device must name a torch device this machine has, such as 'cpu' or "
                                f"'cuda:0', got {shown(device)} ({str(err).splitlines()[0][:120]})") from None
    if len(found) > 1:
        raise PlanMismatchError(f"rank {rank}: its stages' parameters (and device=) span several devices "
                                f"{sorted(map(str, found))}; put them on one")
    return found.pop() if found else torch.device("cpu")


def check_call(losses: object, call: str, rank: int, last: bool = False, loss_fn: object = None) -> None:
    """A call's arguments that no peer sees: ``losses`` (for an eval on the last stage's rank,
    ``last``, the loss_fn it needs), and the grad mode of a step."""
    if losses is not None and not isinstance(losses, list):
        raise ArgumentError(f"rank {rank}: losses must be a list to fill with each microbatch's loss, "
                            f"or None; got {type(losses).__name__}")
    if call == "eval" and last:
        check_eval_losses(losses, loss_fn, rank)
    if call != "eval" and not torch.is_grad_enabled():
        raise GradDisabledError(f"rank {rank}: step() trains (forward and backward): call it "
                                "outside torch.no_grad() and torch.inference_mode() (eval() runs "
                                "forwards only)")


def check_eval_losses(losses: list | None, loss_fn: object, rank: int) -> None:
    """``losses`` asked of an eval on the rank holding the last stage of a runner without a loss_fn:
    nothing could ever be appended, and a validation loop would average an empty list (NaN) without
    a word (torch's eval appends nothing there). Without a target it appends nothing, as torch does:
    a batch without labels may come between labelled ones."""
    if losses is not None and loss_fn is None:
        raise ArgumentError(f"rank {rank}: eval(losses=...) needs a loss_fn on the rank holding the last "
                            "stage, and this runner has none: build the evaluating runner with one")
