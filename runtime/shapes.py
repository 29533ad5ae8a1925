"""Boundary tensor shapes, learned once so that receives can be posted before data exists.

A receive needs a buffer of the right shape and dtype, which only the sending stage can know.
On the first step every rank walks its stages in layer order: it takes the input shape from the
previous stage (locally, or as a small message from that stage's rank), computes the output shape
(``output_meta``) and sends it on. Gradients have the shape of the activations they belong to.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass

import torch
import torch.distributed as dist
from torch import nn

from schedc.problem import Problem

from .errors import PlanMismatchError
from .waits import start, wait

DTYPES = (
    torch.float32, torch.float16, torch.bfloat16, torch.float64,
    torch.int64, torch.int32, torch.int16, torch.int8, torch.uint8, torch.bool,
)
MAX_DIMS = 8
SHAPE_TAG = 1 << 30


@dataclass(frozen=True)
class TensorMeta:
    shape: tuple[int, ...]
    dtype: torch.dtype

    @staticmethod
    def of(t: torch.Tensor) -> TensorMeta:
        return TensorMeta(tuple(t.shape), t.dtype)

    def encode(self) -> torch.Tensor:
        if len(self.shape) > MAX_DIMS or self.dtype not in DTYPES:
            raise PlanMismatchError(f"boundary tensors need <= {MAX_DIMS} dims and a dtype in {DTYPES}; "
                                    f"got {self.shape} {self.dtype}")
        data = [DTYPES.index(self.dtype), len(self.shape), *self.shape]
        return torch.tensor(data + [0] * (MAX_DIMS + 2 - len(data)), dtype=torch.int64)

    @staticmethod
    def decode(data: torch.Tensor) -> TensorMeta:
        values = data.tolist()
        return TensorMeta(tuple(values[2:2 + values[1]]), DTYPES[values[0]])


def output_meta(module: nn.Module, meta: TensorMeta, device: torch.device) -> TensorMeta:
    """Shape and dtype of ``module(x)`` for an input described by ``meta``.

    One forward on zeros, in eval mode, without autograd and with the random state restored, so
    that it leaves no trace (no batch-norm statistics, no dropout draw). The meta device would
    avoid the compute but costs seconds of imports on first use, more than a small forward."""
    modes = [(mod, mod.training) for mod in module.modules()]
    module.eval()
    try:
        with torch.no_grad(), torch.random.fork_rng(devices=[device] if device.type == "cuda" else []):
            out = module(torch.zeros(meta.shape, dtype=meta.dtype, device=device))
    finally:
        for mod, training in modes:
            mod.training = training
    if not isinstance(out, torch.Tensor):
        raise PlanMismatchError(f"a stage must return one tensor, got {type(out).__name__}")
    return TensorMeta.of(out)


def infer_boundaries(
    problem: Problem, stages: Mapping[int, nn.Module], rank: int, first_input: TensorMeta | None,
    group: dist.ProcessGroup | None, timeout: float, device: torch.device,
) -> dict[int, TensorMeta]:
    """Meta of the output of each stage b next to this rank's stages (boundary b -> b+1)."""
    metas: dict[int, TensorMeta] = {}
    last = problem.num_stages - 1
    for s in problem.rank_stages[rank]:
        if s == 0:
            if first_input is None:
                raise PlanMismatchError(f"rank {rank} holds stage 0 but step() got no input")
            in_meta = first_input
        elif s - 1 in metas:
            in_meta = metas[s - 1]
        else:
            in_meta = _exchange(None, problem.stage_rank[s - 1], s - 1, rank, group, timeout, device)
        metas[s - 1] = in_meta
        if s == last:
            continue
        metas[s] = output_meta(stages[s], in_meta, device)
        peer = problem.stage_rank[s + 1]
        if peer != rank:
            _exchange(metas[s], peer, s, rank, group, timeout, device)
    metas.pop(-1, None)
    return metas


def _exchange(meta: TensorMeta | None, peer: int, boundary: int, rank: int,
              group: dist.ProcessGroup | None, timeout: float, device: torch.device) -> TensorMeta:
    """Sends ``meta`` to ``peer``, or (meta None) receives it from ``peer``; bounded by ``timeout``."""
    if meta is not None:
        data = meta.encode().to(device)
        what = f"rank {rank} waited for rank {peer} to take the shape of stage {boundary}'s output"
        work = start(lambda: dist.isend(data, group=group, group_dst=peer, tag=SHAPE_TAG + boundary), what)
    else:
        buffer = torch.empty(MAX_DIMS + 2, dtype=torch.int64, device=device)
        what = f"rank {rank} waited for the shape of stage {boundary}'s output from rank {peer}"
        work = start(lambda: dist.irecv(buffer, group=group, group_src=peer, tag=SHAPE_TAG + boundary), what)
    wait(work, timeout, what)
    return meta if meta is not None else TensorMeta.decode(buffer)

