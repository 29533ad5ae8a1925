# sed -i '33s/tuple(t.shape)/t.numel()/' runtime/dp_weights.py
# sed -i '33s/str(t.dtype)/t.element_size()/' runtime/dp_weights.py
"""``sync_replica_weights`` compares the replicas' names, shapes and dtypes before it broadcasts the first
replica's weights (runtime/dp_weights.py): a weight of the same size in another shape, or of the same
element size in another dtype, would be broadcast byte for byte into the wrong layout without a word."""

from __future__ import annotations

import torch
import torch.distributed as dist
from torch import nn

from schedc.runtime import PlanMismatchError
from schedc.runtime.dp_weights import sync_replica_weights
from schedc.runtime.launch import run_local


class One(nn.Module):
    """A module with one parameter ``w`` of the given shape and dtype."""

    def __init__(self, shape: tuple[int, ...], dtype: torch.dtype) -> None:
        super().__init__()
        self.w = nn.Parameter(torch.ones(shape, dtype=dtype))


DIFFER = "the data-parallel replicas hold different parameters or buffers"


def _synced(rank: int, _world: int, shapes: list[tuple[int, ...]], dtypes: list[torch.dtype]) -> str:
    try:
        sync_replica_weights({0: One(shapes[rank], dtypes[rank])}, dist.group.WORLD, rank,
                             torch.device("cpu"), 60)
    except PlanMismatchError as err:
        return str(err)
    return "synced"


def test_replicas_whose_weight_has_the_same_size_in_another_shape_are_refused() -> None:
    """(2, 3) and (3, 2) hold six numbers each: only the shapes tell them apart."""
    results = run_local(_synced, 2, [(2, 3), (3, 2)], [torch.float32] * 2)
    for rank, message in enumerate(results):
        assert message.startswith(f"rank {rank}: {DIFFER}"), message


def test_replicas_whose_weight_has_another_dtype_of_the_same_size_are_refused() -> None:
    """float16 and bfloat16 both take two bytes an element: only the dtypes tell them apart."""
    results = run_local(_synced, 2, [(4,), (4,)], [torch.float16, torch.bfloat16])
    for rank, message in enumerate(results):
        assert message.startswith(f"rank {rank}: {DIFFER}"), message


def test_replicas_of_one_layout_are_synced() -> None:
    """The same layout on both passes the check (the two tests above fail for the layout alone)."""
    assert run_local(_synced, 2, [(2, 3), (2, 3)], [torch.float16] * 2) == ["synced", "synced"]
