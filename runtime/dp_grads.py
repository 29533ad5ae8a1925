"""Data-parallel gradient averaging in buckets, overlapped with the pipeline
(``PipelineRunner(dp_group=...)``): Megatron's PP x DP layout, where the ranks holding the same
stages in each pipeline average their gradients before the optimizer step.

Collectives on one group must be called in the same order, with the same sizes, on every member, so
the buckets are fixed by what every replica knows alike (``dp_buckets.py``): the plan's order and
the stages' trainable parameters. Each step first compares the layout across the replicas (one
small all-reduce), so replicas that froze different parameters fail with one line instead of
averaging mismatched tensors. Buckets then launch strictly in order, each once all its parameters
are final (``grads_ready.py``): after a stage's last backward or, as DDP and Megatron do, from a
gradient hook inside it (the only overlap with one stage per rank, whose last backward ends the
rank's step). A hook launches only at the accumulation count an earlier step saw in that backward
(a reentrant checkpoint around a shared weight accumulates twice), and a later accumulation than
that is an error, not a silently partial average. A replica on which a parameter got no gradient
(a data-dependent branch) counts it as zero and launches later, never in another order; one no
replica used keeps no gradient, as in DDP: a final all-reduce (MAX) of the used flags tells.
Leaves outside the stage modules (a loss function's own parameter) are averaged last, by name where
they have one and else by shape and dtype (``_ordered_extras``), once that all-reduce shows every
replica reached the same ones. The replicas start from the first one's weights (``dp_weights.py``).
Gradients are divided by the group's size before the sum, as DDP's default hook does, so low
precision does not overflow. Every wait is bounded by the runner's timeout.
"""

from __future__ import annotations

import itertools
from collections.abc import Callable, Iterable, Mapping, Sequence

import torch
import torch.distributed as dist
from torch import nn

from .dp_buckets import layout_digest, plan_buckets, sparse_modules, text_digest
from .dp_weights import sync_replica_weights
from .errors import PlanMismatchError
from .waits import read_ends, same_everywhere, start, wait, with_ends

Final = Callable[[torch.Tensor], bool]
"""Whether an accumulation into a parameter that just ran is in its last backward of the step."""


class _Flight:
    """One bucket's all-reduce in flight: its flat buffer (or the lone gradient itself)."""

    def __init__(self, bucket: list[torch.Tensor], group: dist.ProcessGroup, size: int, what: str) -> None:
        self.bucket, self.what = bucket, what
        self.used = [p.grad is not None for p in bucket]
        for param in bucket:  # an unused one counts as zero; None again if no replica used it
            if param.grad is None:
                param.grad = torch.zeros_like(param)
        lone = len(bucket) == 1 and bucket[0].grad.is_contiguous()
        self.flat = bucket[0].grad if lone else torch.cat(
            [p.grad.reshape(-1).to(bucket[0].dtype) for p in bucket])
        self.flat.div_(size)
        self.work = start(lambda: dist.all_reduce(self.flat, group=group, async_op=True), what)

    def finish(self, timeout: float | None) -> None:
        """Waits, and writes the mean back into each gradient."""
        wait(self.work, timeout, self.what)
        if len(self.bucket) == 1 and self.flat is self.bucket[0].grad:
            return
        offset = 0
        for param in self.bucket:
            n = param.numel()
            param.grad.copy_(self.flat[offset:offset + n].view_as(param.grad))
            offset += n


class DataParallelGrads:
    """One step's averaging: ``start`` with the groups in ready order, ``ready`` as gradients become
    final, ``finish`` at the step's end (after ties across ranks are summed), ``close`` always."""

    def __init__(self, group: dist.ProcessGroup, bucket_bytes: int, rank: int, device: torch.device,
                 timeout: float | None, modules: Mapping[object, object]) -> None:
        if sparse := sparse_modules(modules):
            raise PlanMismatchError(f"rank {rank}: dp_group averages dense gradients only, but "
                                    f"{', '.join(sparse)} makes sparse ones: build it with sparse=False, "
                                    "or average every gradient yourself through grads_ready=")
        self.group, self.bucket_bytes, self.rank, self.device = group, bucket_bytes, rank, device
        self.size = dist.get_world_size(group)
        self.timeout = None if device.type == "cuda" else timeout
        """As the mailbox's: on CUDA a timed wait would block the CPU (NCCL's watchdog bounds it)."""
        sync_replica_weights(modules, group, rank, device, self.timeout)
        self._key: tuple = ()
        self._names: dict[int, str] = {}
        """Each parameter of the stages and of a loss module: its owner and name."""
        self._digest = layout_digest([], {})
        """The replicas compare it each step (``dp_buckets.layout_digest``); made when ``_key`` changes."""
        self._bucket_of: dict[int, int] = {}
        """Each planned parameter's bucket."""
        self.buckets: list[list[torch.Tensor]] = []
        """The current buckets, in launch order (a test and a benchmark read them)."""
        self._hooks: list = []
        self.launched: list[str] = []
        """When each bucket of the last step was launched (tests and the benchmark read it)."""
        self._expected: dict[int, int] = {}
        """Per parameter, the most accumulations its last backward made in a step so far."""

    def start(self, groups: Sequence[Sequence[torch.Tensor]], is_final: Final,
              stages: Mapping[int, nn.Module], loss_fn: object, shapes: object = None,
              variable: bool = False) -> None:
        """Plans the buckets (again if the parameters changed), checks the replicas hold the same
        layout and microbatch ``shapes`` (the runner's count of steps, its loss scale: gradients of two
        scales averaged train wrong without a word; and the boundaries it learned or
        with ``variable_shapes`` the microbatch's rows: replicas given
        batches of other sizes would average means of unequal shares; ``variable``: whether it was
        built with them, compared first), and hooks the parameters.
        The names of the stages' and the loss module's parameters tell layouts and leaves apart."""
        key = tuple((id(p), p.shape, p.dtype) for group in groups for p in group)
        if key != self._key:  # a parameter unfrozen, added or cast since the last step
            self._key, self.buckets = key, plan_buckets(groups, self.bucket_bytes)
            self._bucket_of = {id(p): k for k, bucket in enumerate(self.buckets) for p in bucket}
            modules = {**stages, "loss": loss_fn} if isinstance(loss_fn, nn.Module) else stages
            self._names = {id(p): f"{owner}.{name}" for owner, module in modules.items()
                           for name, p in module.named_parameters()}
            self._digest = layout_digest(self.buckets, self._names)
        self._final: set[int] = set()
        self._extras: dict[int, torch.Tensor] = {}
        self._flights: list[_Flight] = []
        self._next = 0
        self._seen: dict[int, int] = {}
        self.launched = []
        shapes_key = text_digest(repr(shapes))
        flags = with_ends([(shapes_key, shapes_key), (int(variable), int(variable))])
        shape_keys, options = read_ends(self._agree(
            "layout", [self._digest], "trainable parameters (which are frozen, their shapes or dtypes) or "
            "bucket_bytes", flags))
        if options[0] != options[1]:  # else their shape keys differ in kind, and the line below misleads
            raise PlanMismatchError(f"rank {self.rank}: the data-parallel replicas' runners differ in "
                                    f"variable_shapes ({variable} here): build every replica's runner with "
                                    "the same variable_shapes")
        if shape_keys[0] != shape_keys[1]:
            raise PlanMismatchError(f"rank {self.rank}: the data-parallel replicas were given microbatches "
                                    "of other shapes (with variable_shapes, of other sizes), are at other "
                                    "steps (a replica's step failed before this averaging), or scale their "
                                    "losses differently (a scaler on some replicas only, or scalers whose "
                                    "scales parted): each replica takes an equal share of the batch, and "
                                    "all step alike")
        hook = self._hook(is_final)
        self._hooks = [p.register_post_accumulate_grad_hook(hook) for b in self.buckets for p in b]

    def _hook(self, is_final: Final) -> Callable[[torch.Tensor], None]:
        def accumulated(param: torch.Tensor) -> None:
            if not is_final(param):
                return
            key = id(param)
            self._seen[key] = seen = self._seen.get(key, 0) + 1
            expected = self._expected.get(key)
            if expected is not None and seen > expected and self._bucket_of[key] < self._next:
                raise PlanMismatchError(
                    f"rank {self.rank}: a parameter of shape {tuple(param.shape)} got {seen} gradient "
                    f"accumulations in its stage's last backward, {expected} in the steps before, and its "
                    "bucket was already averaged: data-parallel averaging needs as many every step")
            if seen == expected:
                self.ready([param], "during a backward")
        return accumulated

    def ready(self, leaves: Iterable[torch.Tensor], when: str = "after a backward") -> None:
        """Marks final leaves and launches every bucket, in order, whose parameters all are."""
        for leaf in leaves:
            if id(leaf) in self._bucket_of:
                self._final.add(id(leaf))
            else:
                self._extras.setdefault(id(leaf), leaf)
        while self._next < len(self.buckets) and all(id(p) in self._final for p in self.buckets[self._next]):
            self._launch(self.buckets[self._next], when)
            self._next += 1

    def finish(self) -> None:
        """Launches what is left, checks the replicas agree, waits, and averages."""
        self._unhook()
        for key, seen in self._seen.items():  # the most seen: fewer falls back to after the backward
            self._expected[key] = max(seen, self._expected.get(key, 0))
        while self._next < len(self.buckets):
            self._launch(self.buckets[self._next], "at the step's end")
            self._next += 1
        extras = self._ordered_extras()
        flags = [int(u) for flight in self._flights for u in flight.used]
        outside = "leaves outside their stage modules (a loss's own parameter, an unregistered one)"
        used = self._agree("used flags", [layout_digest([extras], self._names)], outside, flags)
        for bucket in plan_buckets([extras], self.bucket_bytes):
            self._launch(bucket, "at the step's end")
        for flight in self._flights:
            flight.finish(self.timeout)
        planned = [p for flight in self._flights[:len(self.buckets)] for p in flight.bucket]
        for param, anywhere in zip(planned, used, strict=True):
            if not anywhere:
                param.grad = None

    def _ordered_extras(self) -> list[torch.Tensor]:
        """The leaves outside the stage modules that got a gradient, in an order every replica
        shares: registered ones by name, unregistered ones by shape and dtype. The order the graph
        reached them follows the data, and replicas reaching two of one shape in other orders
        averaged each with the other, silently; two unregistered ones of one shape and dtype cannot
        be told apart, so they are refused."""
        leaves = [p for p in self._extras.values() if p.grad is not None]
        named = sorted((p for p in leaves if id(p) in self._names), key=lambda p: self._names[id(p)])
        unnamed = sorted((p for p in leaves if id(p) not in self._names),
                         key=lambda p: (tuple(p.shape), str(p.dtype)))
        for a, b in itertools.pairwise(unnamed):
            if (a.shape, a.dtype) == (b.shape, b.dtype):
                raise PlanMismatchError(
                    f"rank {self.rank}: two leaves outside the stage modules, both of shape {tuple(a.shape)} "
                    f"and {a.dtype}, got gradients, and dp_group cannot tell them apart across replicas: "
                    "make them parameters of a module passed as loss_fn (named), or average them "
                    "yourself through grads_ready=")
        return named + unnamed

    def close(self) -> None:
        """Removes the step's hooks (also after a failed step: a later backward must not launch) and
        drops its buckets' flat copies, and the leaves it met: kept until the next step, they held a
        copy of the gradients through the optimizer's step and the lone buckets' gradients past
        ``zero_grad`` (an all-reduce still in flight after a failure keeps its own reference)."""
        self._unhook()
        self._flights, self._extras = [], {}

    def _unhook(self) -> None:
        for handle in self._hooks:
            handle.remove()
        self._hooks = []

    def _launch(self, bucket: list[torch.Tensor], when: str) -> None:
        if any(p.grad is not None and p.grad.is_sparse for p in bucket):  # made outside an nn.Embedding
            shapes = [tuple(p.shape) for p in bucket if p.grad is not None and p.grad.is_sparse]
            raise PlanMismatchError(f"rank {self.rank}: parameters of shapes {shapes} got sparse gradients, "
                                    "but dp_group averages dense ones only: average every gradient "
                                    "yourself through grads_ready=")
        what = f"rank {self.rank} waited for the data-parallel all-reduce of bucket {len(self._flights)}"
        self.launched.append(when)
        self._flights.append(_Flight(bucket, self.group, self.size, what))

    def _agree(self, what: str, digests: list[int], differ: str, flags: Sequence[int] = ()) -> list[int]:
        """One all-reduce (MAX) of the flags and of each digest and its negation: every replica sees
        whether all hold the same digests, and each flag's maximum over the replicas."""
        text = f"rank {self.rank} waited for the data-parallel {what}"
        most, same = same_everywhere(list(flags), digests, self.group, self.device, self.timeout, text)
        if not same:
            raise PlanMismatchError(f"rank {self.rank}: the data-parallel replicas hold different {differ}; "
                                    "every replica must hold the same ones to average them")
        return most
