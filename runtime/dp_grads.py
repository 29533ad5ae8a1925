"""Data-parallel gradient averaging in buckets, overlapped with the pipeline
(``PipelineRunner(dp_group=...)``): Megatron's PP x DP layout, where the ranks holding the same
stages in each pipeline average their gradients before the optimizer step.

Collectives on one group must be called in the same order, with the same sizes, on every member, so
the buckets are fixed by what every replica knows alike: the plan's order (stages sorted by their
last backward on this rank, the order their gradients become final) and the stages' trainable
parameters (within a stage in reverse registration order, as DDP does; weights tied across ranks,
final only at the step's end, last). Buckets are launched strictly in that order, each once all its
parameters are final: from a gradient hook inside a stage's last backward, or after it
(``grads_ready.py``). So a replica on which a parameter got no gradient (a data-dependent branch)
only launches later, never in another order. Such a parameter counts as zero there; one no replica
used keeps no gradient, as in DDP: a final all-reduce (MAX) of the replicas' used flags tells.
Leaves outside the stage modules (a loss function's own parameter) are averaged last, in the order
the graph reaches them; the same all-reduce checks that every replica reached as many of them.
"""

from __future__ import annotations

import math
from collections.abc import Callable, Iterable, Mapping, Sequence

import torch
import torch.distributed as dist

from schedc.actions import Action
from schedc.errors import ArgumentError

from .errors import PlanMismatchError

DEFAULT_BUCKET_BYTES = 25 * 2**20
"""DDP's default bucket (``bucket_cap_mb=25``): large enough that a collective's fixed cost is
amortised, small enough that the first buckets start while later stages still compute."""
Final = Callable[[torch.Tensor], bool]
"""Whether the accumulation into a parameter that just ran was its last of the step."""
FIRST_BUCKET_BYTES = 2**20
"""DDP's first bucket (``dist._DEFAULT_FIRST_BUCKET_BYTES``): the first gradients final start
communicating without waiting for 25 MiB of others."""


def check_dp_arguments(group: object, bucket_bytes: object) -> None:
    """The runner's ``dp_group`` and ``bucket_bytes`` arguments, before anything is built."""
    if type(group) is int and group == dist.GroupMember.NON_GROUP_MEMBER:  # new_group's answer outside it
        raise ArgumentError("dp_group does not hold this process: give each rank the group of the ranks "
                            "that hold the same stages as it in the other pipelines")
    if group is not None and not isinstance(group, dist.ProcessGroup):
        raise ArgumentError(f"dp_group must be a torch.distributed process group (dist.new_group(...)) or "
                            f"None, got {type(group).__name__}")
    if type(bucket_bytes) is not int or bucket_bytes < 1:
        raise ArgumentError(f"bucket_bytes must be a positive integer, got {bucket_bytes!r}")


def ready_order(order: Sequence[Action], params: Mapping[int, list[torch.Tensor]],
                late: set[int]) -> list[list[torch.Tensor]]:
    """This rank's trainable parameters in groups that become final together, in the order they do:
    a stage's at its last backward (a parameter two stages share goes with the later one), in
    reverse registration order (roughly the order that backward accumulates them), and the late
    ones (tied across ranks) at the step's end."""
    last = {a.stage: i for i, a in enumerate(order) if a.kind in ("W", "B")}
    owner: dict[int, tuple[int, torch.Tensor]] = {}
    stages = sorted(params, key=lambda s: last.get(s, math.inf))
    for k, stage in enumerate(stages):
        for param in reversed(params[stage]):
            owner.pop(id(param), None)
            owner[id(param)] = (len(stages) if id(param) in late else k, param)
    groups: list[list[torch.Tensor]] = [[] for _ in range(len(stages) + 1)]
    for k, param in owner.values():
        groups[k].append(param)
    return [group for group in groups if group]


def plan_buckets(groups: Sequence[Sequence[torch.Tensor]], bucket_bytes: int,
                 first_bytes: int = FIRST_BUCKET_BYTES) -> list[list[torch.Tensor]]:
    """Consecutive parameters of one group, dtype and device, at most ``bucket_bytes`` a bucket (a
    larger parameter alone in its own); the first bucket at most ``first_bytes``, as in DDP, so that
    communication starts early. A bucket never spans groups: it would wait for the later one."""
    buckets: list[list[torch.Tensor]] = []
    for group in groups:
        size = math.inf  # a new group starts a new bucket
        for param in group:
            nbytes = param.numel() * param.element_size()
            limit = min(bucket_bytes, first_bytes) if len(buckets) == 1 else bucket_bytes
            if size + nbytes > limit or (param.dtype, param.device) != (buckets[-1][0].dtype,
                                                                        buckets[-1][0].device):
                buckets.append([param])
                size = nbytes
            else:
                buckets[-1].append(param)
                size += nbytes
    return buckets


class _Flight:
    """One bucket's all-reduce in flight: its flat buffer (or the lone gradient itself)."""

    def __init__(self, bucket: list[torch.Tensor], group: dist.ProcessGroup) -> None:
        self.bucket = bucket
        self.used = [p.grad is not None for p in bucket]
        for param in bucket:  # an unused one counts as zero; None again if no replica used it
            if param.grad is None:
                param.grad = torch.zeros_like(param)
        lone = len(bucket) == 1 and bucket[0].grad.is_contiguous()
        self.flat = bucket[0].grad if lone else torch.cat(
            [p.grad.reshape(-1).to(bucket[0].dtype) for p in bucket])
        self.work = dist.all_reduce(self.flat, group=group, async_op=True)

    def finish(self, size: int) -> None:
        """Waits, and writes the mean back into each gradient."""
        self.work.wait()
        self.flat.div_(size)
        if len(self.bucket) == 1 and self.flat is self.bucket[0].grad:
            return
        offset = 0
        for param in self.bucket:
            n = param.numel()
            param.grad.copy_(self.flat[offset:offset + n].view_as(param.grad))
            offset += n


class DataParallelGrads:
    """One step's averaging: ``start`` with the groups in ready order, ``ready`` as gradients become
    final, ``finish`` at the step's end (after ties across ranks are summed), ``close`` always.

    Besides the runner's calls at the end of each stage's last backward, a post-accumulate-grad
    hook on every parameter asks ``is_final`` whether the accumulation that just ran was its last
    of the step: so, as DDP and Megatron do, the first buckets start while that backward still runs
    (the only overlap there is with one stage per rank, whose last backward ends the rank's step).
    """

    def __init__(self, group: dist.ProcessGroup, bucket_bytes: int, rank: int, device: torch.device) -> None:
        self.group, self.bucket_bytes, self.rank, self.device = group, bucket_bytes, rank, device
        self.size = dist.get_world_size(group)
        self._key: tuple[int, ...] = ()
        self._planned: set[int] = set()
        self.buckets: list[list[torch.Tensor]] = []
        """The current buckets, in launch order (a test and a benchmark read them)."""
        self._hooks: list = []
        self.launched: list[str] = []
        """When each bucket of the last step was launched (tests and the benchmark read it)."""

    def start(self, groups: Sequence[Sequence[torch.Tensor]], is_final: Final) -> None:
        key = tuple(id(p) for group in groups for p in group)
        if key != self._key:  # a parameter unfrozen or added since the last step
            self._key, self.buckets = key, plan_buckets(groups, self.bucket_bytes)
            self._planned = set(key)
        self._final: set[int] = set()
        self._extras: dict[int, torch.Tensor] = {}
        self._flights: list[_Flight] = []
        self._next = 0
        self.launched = []
        hook = self._hook(is_final)
        self._hooks = [p.register_post_accumulate_grad_hook(hook) for b in self.buckets for p in b]

    def _hook(self, is_final: Final) -> Callable[[torch.Tensor], None]:
        def accumulated(param: torch.Tensor) -> None:
            if is_final(param):
                self.ready([param], "during a backward")
        return accumulated

    def ready(self, leaves: Iterable[torch.Tensor], when: str = "after a backward") -> None:
        """Marks final leaves and launches every bucket, in order, whose parameters all are."""
        for leaf in leaves:
            if id(leaf) in self._planned:
                self._final.add(id(leaf))
            else:
                self._extras.setdefault(id(leaf), leaf)
        while self._next < len(self.buckets) and all(id(p) in self._final for p in self.buckets[self._next]):
            self._launch_next(when)

    def finish(self) -> None:
        """Launches what is left, checks the replicas agree, waits, and averages."""
        self.close()
        while self._next < len(self.buckets):
            self._launch_next("at the step's end")
        used = self._globally_used()
        extras = [p for p in self._extras.values() if p.grad is not None]
        self._flights += [_Flight(b, self.group) for b in plan_buckets([extras], self.bucket_bytes)]
        for flight in self._flights:
            flight.finish(self.size)
        planned = [p for flight in self._flights[:len(self.buckets)] for p in flight.bucket]
        for param, anywhere in zip(planned, used, strict=True):
            if not anywhere:
                param.grad = None

    def close(self) -> None:
        """Removes the step's hooks (also after a failed step: a later backward must not launch)."""
        for handle in self._hooks:
            handle.remove()
        self._hooks = []

    def _launch_next(self, when: str) -> None:
        self.launched.append(when)
        self._flights.append(_Flight(self.buckets[self._next], self.group))
        self._next += 1

    def _globally_used(self) -> list[bool]:
        """Whether any replica gave each planned parameter a gradient; checks, in the same all-reduce,
        that every replica has as many leaves outside its stages."""
        local = [u for flight in self._flights for u in flight.used]
        extras = sum(p.grad is not None for p in self._extras.values())
        flags = torch.tensor([*map(int, local), extras, -extras], dtype=torch.int64, device=self.device)
        dist.all_reduce(flags, op=dist.ReduceOp.MAX, group=self.group)
        most, least = int(flags[-2]), -int(flags[-1])
        if most != least:
            raise PlanMismatchError(
                f"rank {self.rank}: data-parallel replicas reached between {least} and {most} trainable "
                "leaves outside their stage modules (a loss's own parameter, one a forward uses without "
                "registering it); every replica must reach the same ones to average them")
        return [bool(f) for f in flags[:-2].tolist()]
