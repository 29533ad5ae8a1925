"""The check every rank passes at its runner's first call, before the first shape message: one
all-reduce that compares the plans and tells every rank what only one knows (which rank has no
loss_fn, which failed its own checks, whether the ranks' calls and batch sizes agree), so that a
mismatch fails every rank at once with one line instead of leaving its peers waiting until their
timeout, or training on microbatches of other sizes (a loss such as MSE broadcasts silently)."""

from __future__ import annotations

import contextlib

import torch
import torch.distributed as dist

from schedc.plan import Plan

from .errors import PlanMismatchError
from .shapes import check_same_plan, plan_key
from .waits import read_ends, with_ends

CALLS = ("step", "eval", "scaled step")
"""What a runner's call runs, coded in the check (index + 1): a step with a float16 scaler on one
rank and without on another would unscale gradients that were never scaled, or step on scaled ones."""
SHOWN = {"step": "step()", "eval": "eval()", "scaled step": "step(scaler=...) with an enabled scaler"}
NO_BATCH = 2**62
"""A rank given no input or target (a middle stage's): above every size, so the smallest stays a given one."""
UNCUT = (-1, 2**62)
"""A rank whose stages do not come from ``split_stages``: below every cut digest toward the maximum,
above every one toward the minimum, so the ranks that know theirs are still compared."""
Sizes = tuple[int | None, int | None]
"""The input's and the target's numbers of samples on a rank (None: not given)."""


def first_call_check(plan: Plan, call: str, batch: Sizes, lossless: int | None, variable: bool,
                     cut: int | None, rank: int, group: dist.ProcessGroup | None, device: torch.device,
                     timeout: float | None) -> tuple[int | None, tuple[bool, bool]]:
    """The plans' digests, the last stage's loss_fn (``lossless``: this rank, if it holds the last
    stage without one), whether the runner was built with ``variable_shapes`` (a rank with it would
    start every later call with an all-reduce its peers never join), the number of layers and the
    bounds the stages were cut with (``cut``, among the ranks whose stages come from ``split_stages``),
    the kind of call and the sizes of the input and target the rank was given.
    Returns the rank holding the last stage without a loss_fn, if one does (every rank then refuses
    ``step`` alike), and whether every rank was given the input, and the target: then a later input
    (target) that one rank given it refuses, every rank refuses alike (docs/training.md asks for the same
    batch on every rank given one), and none of them is left inside the call."""
    lossless_rank, failure, *rest = _exchange(plan, call, batch, lossless, variable, cut, False, rank, group,
                                              device, timeout)
    calls, variables, given_x, given_target, known, cuts, *sizes = read_ends(rest)
    if failure:
        raise PlanMismatchError(f"rank {rank}: rank {failure - 1} failed before its first step or eval "
                                "(its own error says why)")
    if variables[0] != variables[1]:
        raise PlanMismatchError(f"rank {rank}: the ranks' runners differ in variable_shapes ({variable} "
                                "here): build every rank's runner with the same variable_shapes")
    if calls[0] != calls[1]:  # one rank's eval would wait for gradients the other's step never sends
        raise calls_differ(rank, call, *calls, "first calls")
    if known[0] and cuts[0] != cuts[1]:  # among the ranks that know their cut (UNCUT loses both ends)
        raise PlanMismatchError(f"rank {rank}: the ranks cut the layers into stages differently "
                                "(split_stages given other bounds or another number of layers): give every "
                                "rank the same layers and bounds")
    for what, mine, (largest, smallest) in zip(("input", "target"), batch, sizes, strict=True):
        if largest and largest != smallest:
            here = f"{mine} here" if mine is not None else "none given here"
            raise PlanMismatchError(f"rank {rank}: the ranks' first calls got {what} batches of {smallest} "
                                    f"and {largest} samples ({here}): give every rank the same x and target")
    return (lossless_rank - 1 if lossless_rank else None), (given_x[1] == 1, given_target[1] == 1)


def calls_differ(rank: int, call: str, most: int, least: int, which: str) -> PlanMismatchError:
    """The error for ranks whose calls differ, from the highest and the lowest call kind."""
    other = CALLS[(most if most != CALLS.index(call) + 1 else least) - 1]
    return PlanMismatchError(f"rank {rank}: the ranks' {which} differ (this rank's is {SHOWN[call]}, another "
                             f"rank's {SHOWN[other]}): every rank must call step() or eval() alike, with a "
                             "scaler on every rank or on none")


def tell_failed(plan: Plan, call: str, batch: Sizes, lossless: int | None, variable: bool, cut: int | None,
                rank: int, group: dist.ProcessGroup | None, device: torch.device,
                timeout: float | None) -> None:
    """This rank's own checks failed before its first call's check: it only says so, where the
    others would wait for it until their timeout (a failure of the check itself is not reported
    over the rank's own error)."""
    with contextlib.suppress(Exception):
        _exchange(plan, call, batch, lossless, variable, cut, True, rank, group, device, timeout)


def _exchange(plan: Plan, call: str, batch: Sizes, lossless: int | None, variable: bool, cut: int | None,
              failed: bool, rank: int, group: dist.ProcessGroup | None, device: torch.device,
              timeout: float | None) -> list[int]:
    kind = CALLS.index(call) + 1  # its maximum and minimum over the ranks must agree, as the batch's
    sizes = [(0, NO_BATCH) if size is None else (size, size) for size in batch]
    given = [(int(size is not None),) * 2 for size in batch]
    flags = [0 if lossless is None else lossless + 1, rank + 1 if failed else 0,
             *with_ends([(kind, kind), (int(variable), int(variable)), *given, (int(cut is not None),) * 2,
                         UNCUT if cut is None else (cut, cut), *sizes])]
    return check_same_plan(plan_key(plan), flags, rank, group, device, timeout)
