"""float16 loss scaling (``torch.amp.GradScaler``) for a pipelined step: ``step(x, y, scaler=scaler)``.

``step()`` runs every backward itself, so ``scaler.scale(loss).backward()`` cannot be written: given a
scaler, each microbatch's loss is multiplied by the scaler's scale beside the mean's 1/m, which
gives every gradient of the pipeline the scale torch's recipe gives it (1/m is folded into the scale
before the backward starts, so a float16 loss's seed stays finite where ``scale(loss / m)``'s
2**16 would not). Every rank's scaler is
started here, on the rank's device (torch starts a scaler in its first ``scale()``, which a rank
without the loss would never call, and its ``unscale_`` would then fail).

The ranks must then agree on skipping a step: a plain scaler checks only its own rank's gradients
for inf and NaN, so one rank could step while another skipped, and their scales drift apart. torch's
``ShardedGradScaler`` (FSDP's, a GradScaler) all-reduces what each rank found over its
``process_group`` in ``unscale_``; it is required where the pipeline has more than one rank, over a
group that holds every rank of the pipeline (the default, the world, does).
"""

from __future__ import annotations

import torch
import torch.distributed as dist
from torch.amp import GradScaler
from torch.distributed.fsdp.sharded_grad_scaler import ShardedGradScaler

from schedc.errors import ArgumentError

_USE = "torch.distributed.fsdp.sharded_grad_scaler.ShardedGradScaler"


def scaling(scaler: object) -> bool:
    """Whether ``scaler`` scales the loss (a GradScaler built enabled, on a device that has it)."""
    return isinstance(scaler, GradScaler) and scaler.is_enabled()


def check_scaler(scaler: object, p: int, group: dist.ProcessGroup | None, rank: int) -> None:
    """Refuses what would train wrong or hang: not a GradScaler, or one whose ranks could disagree."""
    if scaler is None:
        return
    if not isinstance(scaler, GradScaler):
        raise ArgumentError(f"rank {rank}: scaler must be a torch.amp.GradScaler (for p > 1 a {_USE}), got "
                            f"{type(scaler).__name__}")
    if p == 1 or not scaler.is_enabled():
        return
    if not isinstance(scaler, ShardedGradScaler):
        raise ArgumentError(f"rank {rank}: a {type(scaler).__name__} checks only this rank's gradients for "
                            f"inf, so the pipeline's ranks could disagree on skipping a step: use {_USE}"
                            "(device, process_group=...) over a group that holds every rank of the pipeline")
    missing = _outside(scaler.process_group, group)
    if missing:
        raise ArgumentError(f"rank {rank}: the scaler's process_group lacks the pipeline's global ranks "
                            f"{missing}, whose inf checks it would not see: build it over the pipeline's "
                            "group or the world")


def _outside(scaler_group: dist.ProcessGroup | None, group: dist.ProcessGroup | None) -> list[int]:
    """The pipeline's global ranks that the scaler's group lacks (None stands for the world; on a rank
    outside the scaler's group, torch gives no list of its ranks, and this rank is named)."""
    if scaler_group is dist.GroupMember.NON_GROUP_MEMBER:
        return [dist.get_rank()]
    world = range(dist.get_world_size())
    scaler_ranks = set(world if scaler_group is None else dist.get_process_group_ranks(scaler_group))
    ranks = world if group is None else dist.get_process_group_ranks(group)
    return sorted(set(ranks) - scaler_ranks)


def loss_scale(scaler: object, m: int, device: torch.device, rank: int) -> float | torch.Tensor:
    """What each microbatch's loss is multiplied by: 1/m for the mean, times the scaler's scale
    (a tensor on ``device``: no host sync). Starts the scaler on this rank, as ``scale()`` does,
    before the call's first collective: a scaler that refuses the device fails here, in one line."""
    if not scaling(scaler):
        return 1.0 / m
    try:
        return scaler.scale(torch.ones((), dtype=torch.float32, device=device)) / m
    except (AssertionError, RuntimeError, ValueError) as err:
        reason = (str(err).splitlines() or [type(err).__name__])[0]
        raise ArgumentError(f"rank {rank}: the scaler could not scale a loss on {device} "
                            f"({reason})") from None
