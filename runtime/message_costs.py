"""Point-to-point costs for profiling: the one-way latency of a boundary (``measure_p2p``) and what
a rank spends posting the runner's sends and receives (``measure_message_calls``), on two ranks of
an initialised process group or two local gloo processes. ``profile`` turns them into a problem's
``comm`` and adds the call costs to the stage costs."""

from __future__ import annotations

import statistics
import time
from collections.abc import Sequence
from dataclasses import dataclass

import torch
import torch.distributed as dist

from schedc.actions import Action
from schedc.errors import ArgumentError, ProblemError, shown
from schedc.problem import Problem

from .comm import Mailbox
from .launch import run_local
from .links import Links
from .lowering import PostRecv, Send, TensorKey
from .shapes import TensorMeta


def _sync(device: torch.device) -> None:
    if device.type == "cuda":
        torch.cuda.synchronize(device)


def check_count(value: object, what: str, least: int) -> None:
    if type(value) is not int or value < least:
        raise ProblemError(f"{what} must be an integer >= {least}, got {shown(value)}")


def group_device(group: dist.ProcessGroup | None = None) -> torch.device:
    """Where the group's messages live: the current CUDA device for a group without a CPU backend
    (NCCL alone), else the CPU."""
    if dist.is_initialized() and "cpu:" not in dist.get_backend_config(group):
        return torch.device("cuda", torch.cuda.current_device())
    return torch.device("cpu")


Boundary = TensorMeta | Sequence[TensorMeta]
"""A boundary's tensors as the callers give them: one meta, or several (``shapes.Metas`` is the tuple)."""


def _as_metas(metas: Boundary) -> tuple[TensorMeta, ...]:
    """One boundary's tensors: a single meta is a boundary of one tensor."""
    out = (metas,) if isinstance(metas, TensorMeta) else tuple(metas) if isinstance(metas, Sequence) else ()
    if not out or not all(isinstance(m, TensorMeta) for m in out):
        raise ArgumentError(f"a boundary must be a TensorMeta or a non-empty list of them, "
                            f"got {shown(metas, 60)}")
    return out


def _exchange(buffers: list[torch.Tensor], peer: int, sending: bool, group: dist.ProcessGroup | None) -> None:
    """All of a boundary's tensors at once, one message each (as ``Mailbox`` sends them), in order."""
    call = dist.isend if sending else dist.irecv
    peer_arg = {"group_dst": peer} if sending else {"group_src": peer}
    for work in [call(b, group=group, tag=k, **peer_arg) for k, b in enumerate(buffers)]:
        work.wait()


def _pingpong(rank: int, _world: int, metas: Boundary, repeats: int,
              group: dist.ProcessGroup | None = None) -> float:
    """Median round trip of a boundary's tensors between ranks 0 and 1, in seconds (5 trips per
    repeat: a trip is short and noisy). On CUDA each trip ends with a device synchronisation:
    NCCL's send and recv return once queued."""
    device = group_device(group)
    buffers = [torch.zeros(m.shape, dtype=m.dtype, device=device) for m in _as_metas(metas)]
    trips = []
    for _ in range(5 * repeats + 2):
        start = time.perf_counter()
        if rank < 2:
            _exchange(buffers, 1 - rank, rank == 0, group)
            _exchange(buffers, 1 - rank, rank == 1, group)
        _sync(device)
        trips.append(time.perf_counter() - start)
    return statistics.median(trips[2:])


def measure_p2p(metas: Boundary, repeats: int = 20) -> float:
    """One-way latency (half the median round trip) of a boundary, in seconds: ``metas`` are its
    tensors (or one tensor's meta), all in flight at once.

    Inside an initialised process group of two or more ranks, ranks 0 and 1 measure it (call on
    every rank); otherwise two local gloo processes are started for it.
    """
    metas = _as_metas(metas)
    check_count(repeats, "repeats", 1)
    if dist.is_initialized() and dist.get_world_size() >= 2:
        trip = torch.tensor([_pingpong(dist.get_rank(), 0, metas, repeats)], device=group_device())
        dist.broadcast(trip, src=0)
        return float(trip) / 2
    return run_local(_pingpong, 2, metas, repeats, timeout=120)[0] / 2


@dataclass(frozen=True)
class MessageCalls:
    """Median seconds a rank spends outside compute per message (all of a boundary's tensors, one
    isend or irecv each): posting a send, posting a receive."""

    send: float
    recv: float


def _calls(rank: int, _world: int, metas: Boundary, repeats: int,
           group: dist.ProcessGroup | None = None) -> tuple[list[float], list[float]]:
    """Ranks 0 and 1 exchange a boundary's tensors through the runner's ``Mailbox``, both at
    once (as the pipeline's ranks do); each times its own ``post_recv`` and ``send`` calls (the
    receive is posted first, as the runner posts receives ahead). Other ranks only join the
    barriers: their peer (rank 0) and actions are never used, only kept parseable. On CUDA the
    messages go over link groups, as the runner sends them there."""
    peer, metas = (1 - rank if rank < 2 else 0), _as_metas(metas)
    consumer, producer = Action.parse(f"{rank}F0"), Action.parse(f"{peer}F0")
    device = group_device(group)
    links = None
    if device.type == "cuda":
        links = Links(Problem(p=dist.get_world_size(group), m=1), group, rank, 120.0, device)
    box = Mailbox(group, rank, 2, 120.0, device, links)
    sends, recvs = [], []
    for k in range(repeats + 2):
        if rank < 2:
            mine, theirs = TensorKey("act", rank, k), TensorKey("act", peer, k)
            start = time.perf_counter()
            box.post_recv(PostRecv(theirs, peer, consumer), metas)
            recvs.append(time.perf_counter() - start)
            box.put(mine, tuple(torch.randn(m.shape).to(device=device, dtype=m.dtype) for m in metas))
        dist.barrier(group=group)
        if rank < 2:
            start = time.perf_counter()
            box.send(Send(mine, peer, producer))
            sends.append(time.perf_counter() - start)
            box.take(theirs, consumer)
            box.finish()
        dist.barrier(group=group)
    if links is not None:
        links.close(settled=True)  # torch keeps a group until it is destroyed
    return sends[2:], recvs[2:]


def measure_message_calls(metas: Boundary, repeats: int = 20) -> MessageCalls:
    """Median seconds of the runner's per-message calls on the real process group (``Mailbox.send``
    on the producer, ``Mailbox.post_recv`` on the consumer), from both ranks 0 and 1; a message is
    all of a boundary's tensors (``metas``, or one tensor's meta).

    Inside an initialised process group of two or more ranks it runs there (call on every rank);
    otherwise two local gloo processes are started for it.
    """
    check_count(repeats, "repeats", 1)
    if dist.is_initialized() and dist.get_world_size() >= 2:
        mine = _calls(dist.get_rank(), 0, _as_metas(metas), repeats)
        parts: list = [None] * dist.get_world_size()
        dist.all_gather_object(parts, mine)
    else:
        parts = run_local(_calls, 2, _as_metas(metas), repeats, timeout=120)
    sends = [t for part in parts[:2] for t in part[0]]
    recvs = [t for part in parts[:2] for t in part[1]]
    return MessageCalls(statistics.median(sends), statistics.median(recvs))
