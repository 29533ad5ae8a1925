"""``sync_replica_weights`` makes every data-parallel replica start from the first replica's state.

Buffers (BatchNorm's running statistics) must be broadcast with the parameters, as DDP does: a
replica that kept its own would normalise differently in eval and its forward would differ from
the others' although the weights match. And replicas whose buffers have other names but the same
shapes must be refused: the broadcast would pass silently and pour one buffer into another.
"""

from __future__ import annotations

import torch
import torch.distributed as dist
from torch import nn

from schedc.runtime import PlanMismatchError
from schedc.runtime.dp_weights import sync_replica_weights
from schedc.runtime.launch import run_local


def _module(rank: int, name: str = "stat") -> nn.Module:
    torch.manual_seed(rank)
    module = nn.Linear(3, 2)
    module.register_buffer(name, torch.randn(4))
    return module


def _synced(rank: int, _world: int) -> dict[str, list]:
    module = _module(rank)
    sync_replica_weights({0: module}, dist.group.WORLD, rank, torch.device("cpu"), 60)
    return {name: t.tolist() for name, t in (*module.named_parameters(), *module.named_buffers())}


def test_replicas_take_the_first_replicas_parameters_and_buffers():
    first = _module(0)
    want = {name: t.tolist() for name, t in (*first.named_parameters(), *first.named_buffers())}
    assert _module(1).stat.tolist() != want["stat"]  # the replicas start apart
    assert run_local(_synced, 2) == [want, want]


def _renamed(rank: int, _world: int) -> str:
    try:
        sync_replica_weights({0: _module(rank, "stat" if rank == 0 else "other")}, dist.group.WORLD, rank,
                             torch.device("cpu"), 60)
    except PlanMismatchError as err:
        return str(err)
    return "synced"


def test_replicas_whose_buffers_differ_in_name_are_refused():
    for rank, message in enumerate(run_local(_renamed, 2)):
        assert message.startswith(f"rank {rank}: the data-parallel replicas hold different parameters or "
                                  "buffers"), message
