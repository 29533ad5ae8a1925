"""The bucket plan of data-parallel averaging (``dp_grads.py``): which parameters share a bucket and
in what order the buckets go, from what every replica knows alike, and a fingerprint of it that
the replicas compare before any bucket goes out.
"""

from __future__ import annotations

import hashlib
import math
from collections.abc import Mapping, Sequence

import torch
import torch.distributed as dist
from torch import nn

from schedc.actions import Action
from schedc.callables import check_callable
from schedc.errors import ArgumentError

from .errors import PlanMismatchError

DEFAULT_BUCKET_BYTES = 25 * 2**20
"""DDP's default bucket (``bucket_cap_mb=25``): large enough that a collective's fixed cost is
amortised, small enough that the first buckets start while later stages still compute."""
FIRST_BUCKET_BYTES = 2**20
"""DDP's first bucket (``dist._DEFAULT_FIRST_BUCKET_BYTES``): the first gradients final start
communicating without waiting for 25 MiB of others."""


def check_dp_arguments(group: object, bucket_bytes: object, grads_ready: object) -> None:
    """The runner's ``dp_group``, ``bucket_bytes`` and ``grads_ready`` arguments, before anything is built."""
    if group is not None and grads_ready is not None:  # it would read gradients being averaged
        raise ArgumentError("give grads_ready or dp_group, not both: dp_group averages the gradients "
                            "grads_ready would be handed, in place, while it runs")
    if type(group) is int and group == dist.GroupMember.NON_GROUP_MEMBER:  # new_group's answer outside it
        raise ArgumentError("dp_group does not hold this process: give each rank the group of the ranks "
                            "that hold the same stages as it in the other pipelines")
    if group is not None and not isinstance(group, dist.ProcessGroup):
        raise ArgumentError(f"dp_group must be a torch.distributed process group (dist.new_group(...)) or "
                            f"None, got {type(group).__name__}")
    if type(bucket_bytes) is not int or bucket_bytes < 1:
        raise ArgumentError(f"bucket_bytes must be a positive integer, got {bucket_bytes!r}")
    if grads_ready is not None:
        check_callable(grads_ready, "grads_ready", "grads_ready(params), a function of the ready "
                       "parameters", 1)


def check_dp_group(dp_group: dist.ProcessGroup | None, group: dist.ProcessGroup | None, rank: int) -> None:
    """``dp_group`` holds the same stages' ranks in the other pipelines: none of this pipeline's
    other ranks (given the pipeline's own group, the replicas' weight check said "replicas hold
    different parameters", which sent one looking at the model)."""
    if dp_group is None or not dist.is_initialized():
        return
    ours = set(dist.get_process_group_ranks(group or dist.group.WORLD)) - {dist.get_rank()}
    shared = sorted(ours & set(dist.get_process_group_ranks(dp_group)))
    if shared:
        raise PlanMismatchError(f"rank {rank}: dp_group holds global ranks {shared} of this rank's own "
                                "pipeline; give it the ranks holding the same stages in the other pipelines")


def sparse_modules(modules: Mapping[object, object]) -> list[str]:
    """Modules that make sparse gradients (embeddings built with ``sparse=True``): buckets flatten
    dense gradients (DDP all-gathers sparse ones apart, which the runner does not)."""
    return [_module_name(owner, name) for owner, module in modules.items()
            if isinstance(module, nn.Module) for name, sub in module.named_modules()
            if isinstance(sub, nn.Embedding | nn.EmbeddingBag) and sub.sparse]


def _module_name(owner: object, name: str) -> str:
    """A module as the error names it: ``stage 0's 0.emb``, ``the loss module's table``."""
    label = "the loss module" if owner == "loss" else f"stage {owner}"
    return f"{label}'s {name}" if name else label


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


def layout_digest(buckets: Sequence[Sequence[torch.Tensor]], names: Mapping[int, str]) -> int:
    """62 bits naming the buckets' parameters (``names``: stage and name within it), shapes and
    dtypes, the same in every process that holds the same layout: replicas that froze different
    parameters, even of one shape, or hold other shapes differ here."""
    return text_digest(repr([[(names.get(id(p), "?"), tuple(p.shape), str(p.dtype)) for p in bucket]
                             for bucket in buckets]))


def text_digest(text: str) -> int:
    """62 bits of ``text``, the same in every process (Python's ``hash`` of a str is not), small
    enough that a digest and its negation fit the int64 all-reduce of ``waits.same_everywhere``."""
    return int.from_bytes(hashlib.sha256(text.encode()).digest()[:8], "big") >> 2
