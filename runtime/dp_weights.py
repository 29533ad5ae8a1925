"""The replicas' weights when a data-parallel runner is built (``PipelineRunner(dp_group=...)``).

Averaging gradients keeps replicas equal only if they start equal: as DDP does when it is built,
every replica's stage and loss-module parameters and buffers are broadcast from the group's first
member. Before that, one all-reduce checks that the replicas hold the same names, shapes and dtypes
(a broadcast of mismatched sizes aborts gloo), and lazy parameters are refused, as DDP refuses
them: each replica would initialise its own at its first forward.
"""

from __future__ import annotations

from collections.abc import Mapping

import torch
import torch.distributed as dist
from torch import nn
from torch.nn.parameter import is_lazy

from .dp_buckets import text_digest
from .errors import PlanMismatchError
from .waits import same_everywhere, start, wait


def sync_replica_weights(modules: Mapping[object, object], group: dist.ProcessGroup, rank: int,
                         device: torch.device, timeout: float | None) -> None:
    """Checks the layout across the replicas, then broadcasts the first replica's weights."""
    named = _named_tensors(modules)
    lazy = [name for name, t in named if is_lazy(t)]
    if lazy:
        raise PlanMismatchError(f"rank {rank}: dp_group needs every parameter initialised when the runner "
                                f"is built, but {lazy[0]} is lazy (made at its module's first forward, on "
                                "each replica apart): run one forward of the stages first, as DDP requires")
    digest = text_digest(repr([(name, tuple(t.shape), str(t.dtype)) for name, t in named]))
    what = f"rank {rank} waited for the data-parallel replicas' weight layout (when the runner is built)"
    _, same = same_everywhere([], [digest], group, device, timeout, what)
    if not same:
        raise PlanMismatchError(f"rank {rank}: the data-parallel replicas hold different parameters or "
                                "buffers (names, shapes or dtypes); every replica must build the same stages")
    what = f"rank {rank} waited for the data-parallel broadcast of the first replica's weights"
    buffers = [t.detach() if t.is_contiguous() else t.detach().contiguous() for _, t in named]
    works = [start(lambda b=b: dist.broadcast(b, group=group, group_src=0, async_op=True), what)
             for b in buffers]
    for work in works:
        wait(work, timeout, what)
    with torch.no_grad():  # a non-contiguous one (a transposed weight) went through a contiguous copy:
        # NCCL refuses non-contiguous tensors (gloo copes, measured; not run on NCCL: no GPU)
        for (_, tensor), buffer in zip(named, buffers, strict=True):
            if buffer.data_ptr() != tensor.data_ptr():
                tensor.copy_(buffer)


def _named_tensors(modules: Mapping[object, object]) -> list[tuple[str, torch.Tensor]]:
    """Every parameter and buffer of the stage and loss modules, each once (a Parameter two stages
    share is broadcast once), named as the errors name them."""
    seen: set[int] = set()
    out = []
    for owner, module in modules.items():
        if not isinstance(module, nn.Module):
            continue
        label = "the loss module's" if owner == "loss" else f"stage {owner}'s"
        for name, tensor in (*module.named_parameters(), *module.named_buffers()):
            if id(tensor) not in seen:
                seen.add(id(tensor))
                out.append((f"{label} {name}", tensor))
    return out
