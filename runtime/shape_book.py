"""The boundary shapes a call's messages are sized by: receives are posted before any data exists.

By default the first step (or eval) learns them once (``shapes.infer_boundaries``), and a later input
of another shape is refused. With ``variable_shapes=True`` (Megatron's ``--variable-seq-lengths``:
batches padded to their own longest sequence) each call first agrees on the shape of stage 0's
microbatch in one all-reduce over the pipeline, where every rank given an input shows a digest of
its shape (the middle ranks are given none and learn it there). A shape not seen before is learned
again on every rank by the first call's walk; one seen before comes from a cache. The cost: that
all-reduce on every call, and a walk per new shape (each stage run on the meta device, or under
autocast on zeros; one message per boundary; one all-reduce that settles the walk).
"""

from __future__ import annotations

import contextlib
from collections.abc import Callable, Mapping

import torch
import torch.distributed as dist
from torch import nn

from schedc.problem import Problem

from .dp_buckets import text_digest
from .errors import PlanMismatchError
from .first_call import CALLS, calls_differ
from .shapes import Metas, describe_metas, infer_boundaries
from .waits import read_ends, same_everywhere, with_ends

NOT_GIVEN = 2**62
"""A rank given no input adds this to the digests' minimum: above every given one's."""


class ShapeBook:
    """This rank's learned boundaries (``boundaries``: stage -> the metas of its output) and the
    stage-0 input they were learned for (``input_meta``, where this rank was given it)."""

    def __init__(self, problem: Problem, stages: Mapping[int, nn.Module], rank: int,
                 group: dist.ProcessGroup | None, timeout: float | None, device: torch.device,
                 variable: bool) -> None:
        self.problem, self.stages, self.rank, self.variable = problem, stages, rank, variable
        self.group, self.timeout, self.device = group, timeout, device
        self.boundaries: dict[int, Metas] | None = None
        self.input_meta: Metas | None = None
        self._digest: int | None = None
        self.samples = 0
        """With ``variable``: the rows of stage 0's microbatch in this call, known on every rank (data-
        parallel replicas compare it: sequence lengths may differ between them, shares may not)."""
        self.broken: str | None = None
        """Why the process group may be unusable after a failed learning (a failure notice no peer
        took, its send unfinished): the runner is then aborted."""
        self._seen: dict[int, tuple[dict[int, Metas], Metas | None]] = {}

    def learn(self, first: Metas | None, plan_check: Callable[[], None], call: str) -> None:
        """Sizes this call's messages. ``first``: the metas of stage 0's first microbatch, where this
        rank was given the input; ``plan_check``: the first call's check, which comes before all;
        ``call``: what the call runs (``first_call.CALLS``), which the ranks compare on every call."""
        if self.boundaries is None and self.problem.p > 1:
            plan_check()
        if self.variable:
            one_rank = (_digest(first), _rows(first))
            digest, self.samples = self._agree(first, call) if self.problem.p > 1 else one_rank
            if digest != self._digest:
                if digest not in self._seen:
                    self._seen[digest] = (self._learned(first), first)
                (self.boundaries, self.input_meta), self._digest = self._seen[digest], digest
            return
        if self.boundaries is None:
            self.boundaries = self._learned(first)
        if self.input_meta is None:  # a rank first given no input keeps the first one it is given
            self.input_meta = first
        elif first is not None and first != self.input_meta:
            self.broken = self._unheard("this rank's input changed") if self.problem.p > 1 else None
            raise PlanMismatchError(
                f"rank {self.rank}: microbatch input changed from {describe_metas(self.input_meta)} to "
                f"{describe_metas(first)}; the pipeline's buffers are sized on the first call (step or "
                "eval): keep the batch shape fixed (e.g. drop_last=True), build the runner with "
                "variable_shapes=True, or build a new runner")

    def tell_failed(self, first_call_failed: Callable[[], None], alike: bool) -> None:
        """This rank's own checks failed before the call's first collective, where its peers wait:
        it only says so there (a failure of the telling is not reported over the rank's own error).
        A later call's failure, unheard of without ``variable``, breaks the runner unless it is
        ``alike`` on every rank (a batch's checks, where every rank is given the batch: given on one
        rank alone, as a target or ``losses`` on the last stage's rank, it fails there alone, and
        the peers may be inside the call)."""
        if self.problem.p == 1:
            return
        if self.boundaries is None:
            first_call_failed()
        elif self.variable:
            with contextlib.suppress(Exception):
                self._exchange(None, failed=True, call=None)
        elif not alike:
            self.broken = self._unheard("this rank refused a later call")

    @staticmethod
    def _unheard(what: str) -> str:
        """Why a runner is aborted after a refusal its peers never hear of (later calls are compared
        only with ``variable``): they may be inside the call, and this rank's next call would pair
        with it, training one batch's inputs against another's targets without an error."""
        return (f"{what}, which its peers do not hear of without variable_shapes: they may be inside "
                "that call, and the next call here would pair with it")

    def _learned(self, first: Metas | None) -> dict[int, Metas]:
        """The boundaries for ``first``, learned on every rank or failed on every rank, settled in
        one all-reduce: a rank whose walk ended before a later stage failed (rank 0, once it sent its
        shape) would otherwise go into the step and wait for its timeout, keeping shapes the others
        dropped, while they began the next call."""
        noticed: set[int] = set()
        try:
            boundaries = self._infer(first, noticed)
        except Exception:
            with contextlib.suppress(Exception):  # the rank's own error is the one to raise
                self._settle(own=not noticed, failed=True)
            raise
        own, failed = self._settle(own=False, failed=False)
        if failed:
            who = f"rank {own - 1}" if own else "a rank"
            raise PlanMismatchError(f"rank {self.rank}: {who} failed while the shapes of this call's input "
                                    "were learned (its own error says why)")
        return boundaries

    def _settle(self, own: bool, failed: bool) -> tuple[int, int]:
        """Over the pipeline: 1 + a rank that failed on its own (not from a peer's notice) or 0, and
        whether any failed."""
        if self.problem.p == 1:
            return 0, 0
        what = f"rank {self.rank} waited for the other ranks to learn the shapes of this call's input"
        flags = [self.rank + 1 if own and failed else 0, int(failed)]
        (own_rank, any_failed), _ = same_everywhere(flags, [], self.group, self.device, self.timeout, what)
        return own_rank, any_failed

    def _infer(self, first: Metas | None, noticed: set[int]) -> dict[int, Metas]:
        untaken: list[int] = []
        try:
            return infer_boundaries(self.problem, self.stages, self.rank, first if 0 in self.stages else None,
                                    self.group, self.timeout, self.device, untaken, noticed)
        finally:
            if untaken:
                self.broken = (f"ranks {sorted(set(untaken))} did not take this rank's failure notice while "
                               "the shapes were learned, so the send may be unfinished")

    def _agree(self, first: Metas | None, call: str) -> tuple[int, int]:
        """The digest of stage 0's input shape and its microbatch's rows, the same on every rank, or
        one line on every rank."""
        highest, lowest, failed, rows, most, least = self._exchange(first, failed=False, call=call)
        if failed:
            raise PlanMismatchError(f"rank {self.rank}: rank {failed - 1} failed before this call's shape "
                                    "check (its own error says why)")
        if most != least:
            raise calls_differ(self.rank, call, most, least, "calls")
        if highest != lowest:
            here = describe_metas(first) if first is not None else "none given here"
            raise PlanMismatchError(f"rank {self.rank}: the ranks given an input got microbatches of other "
                                    f"shapes in this call ({here}): give every rank the same x")
        return highest, rows

    def _exchange(self, first: Metas | None, failed: bool, call: str | None) -> tuple[int, ...]:
        """(the highest digest, the lowest, 1 + the rank that failed or 0, the microbatch's rows, the
        highest call kind, the lowest) over the pipeline."""
        mine = _digest(first) if first is not None else None
        kind = 0 if call is None else CALLS.index(call) + 1
        digest = (0, NOT_GIVEN) if mine is None else (mine, mine)
        flags = [self.rank + 1 if failed else 0, _rows(first), *with_ends([digest, (kind, kind)])]
        what = f"rank {self.rank} waited for the other ranks' input shapes (variable_shapes)"
        (failure, rows, *rest), _ = same_everywhere(flags, [], self.group, self.device, self.timeout, what)
        (highest, lowest), (most, least) = read_ends(rest)
        return highest, lowest, failure, rows, most, least


def _rows(metas: Metas | None) -> int:
    """The leading size of stage 0's first input tensor: the samples of the microbatch (0: none given)."""
    return metas[0].shape[0] if metas and metas[0].shape else 0


def _digest(metas: Metas | None) -> int:
    """A digest of a shape (nonzero: 0 stands for a rank given no input)."""
    return text_digest(describe_metas(metas) if metas is not None else "") | 1
