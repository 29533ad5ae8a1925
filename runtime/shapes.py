"""Boundary tensor shapes, learned once so that receives can be posted before data exists.

A receive needs a buffer of the right shape and dtype, which only the sending stage can know.
On the first step every rank walks its stages in layer order: it takes the input shape from the
previous stage (locally, or as a small message from that stage's rank), computes the output shape
on the meta device (no compute, no side effect on parameters, buffers or random state) and sends
it on. Gradients have the shape of the activations they belong to.
"""

from __future__ import annotations

import copy
import datetime
from collections.abc import Mapping
from dataclasses import dataclass
from itertools import chain

import torch
import torch.distributed as dist
from torch import nn

from schedc.problem import Problem

from .errors import PeerError, PeerTimeoutError, PlanMismatchError

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


def output_meta(module: nn.Module, meta: TensorMeta) -> TensorMeta:
    """Shape and dtype of ``module(x)`` for an input described by ``meta``."""
    fake = torch.empty(meta.shape, dtype=meta.dtype, device="meta")
    state = {name: t.to("meta") for name, t in chain(module.named_parameters(), module.named_buffers())}
    try:
        with torch.no_grad():
            out = torch.func.functional_call(module, state, (fake,))
    except (NotImplementedError, RuntimeError):
        out = _real_output(module, meta)
    if not isinstance(out, torch.Tensor):
        raise PlanMismatchError(f"a stage must return one tensor, got {type(out).__name__}")
    return TensorMeta.of(out)


def _real_output(module: nn.Module, meta: TensorMeta) -> torch.Tensor:
    """Fallback for ops without a meta kernel: a throwaway copy runs on zeros, random state kept."""
    device = next(chain(module.parameters(), module.buffers()), torch.empty(0)).device
    with torch.no_grad(), torch.random.fork_rng(devices=[device] if device.type == "cuda" else []):
        return copy.deepcopy(module)(torch.zeros(meta.shape, dtype=meta.dtype, device=device))


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
        metas[s] = output_meta(stages[s], in_meta)
        peer = problem.stage_rank[s + 1]
        if peer != rank:
            _exchange(metas[s], peer, s, rank, group, timeout, device)
    metas.pop(-1, None)
    return metas


def _exchange(meta: TensorMeta | None, peer: int, boundary: int, rank: int,
              group: dist.ProcessGroup | None, timeout: float, device: torch.device) -> TensorMeta:
    """Sends ``meta`` to ``peer``, or (meta None) receives it from ``peer``; bounded by ``timeout``."""
    if meta is not None:
        work = dist.isend(meta.encode().to(device), group=group, group_dst=peer, tag=SHAPE_TAG + boundary)
        what = f"rank {peer} to take the shape of stage {boundary}'s output"
    else:
        buffer = torch.empty(MAX_DIMS + 2, dtype=torch.int64, device=device)
        work = dist.irecv(buffer, group=group, group_src=peer, tag=SHAPE_TAG + boundary)
        what = f"the shape of stage {boundary}'s output from rank {peer}"
    wait(work, timeout, f"rank {rank} waited for {what}")
    return meta if meta is not None else TensorMeta.decode(buffer)


def wait(work: dist.Work, timeout: float, what: str) -> None:
    """Waits for a transfer; failure or timeout raise one line naming who waited for what."""
    try:
        work.wait(timeout=datetime.timedelta(seconds=timeout))
    except RuntimeError as err:
        reason = str(err).strip().splitlines()[0] if str(err).strip() else type(err).__name__
        if "timed out" in reason.lower() or "timeout" in reason.lower():
            raise PeerTimeoutError(f"{what}: nothing arrived within {timeout:g} s") from None
        raise PeerError(f"{what}: the transfer failed ({reason})") from None
