"""The mailbox: every boundary value of one step, local or in flight.

A boundary value is a tuple of tensors (a stage's outputs, or the gradients of its floating-point
ones). Producers ``put`` values, consumers ``take`` them; a value for another rank leaves through
``send`` (one isend per tensor), one from another rank arrives through ``post_recv`` (one irecv per
tensor, posted ahead by the lowering). A received value is handed out only after its transfers
completed; a sent value is kept referenced until its transfers completed, so no buffer is reused
or freed early. Every wait is bounded (by the runner's timeout; on CUDA a receive by the process
group's timeout) and fails with the rank, the peer and the action it waited for.

On CUDA, transfers are issued on a communication stream: a send first waits (event) for the
compute stream that produced its tensor; a receive is waited on from the compute stream that
reads it, without blocking the CPU. There each message travels over its directed link's own
process group (``links.py``), as NCCL needs. This path has been checked against a model of NCCL's
matching rules (``tests/test_runtime_links.py``) and its link groups run on gloo. On a GPU only
one rank has run (``benchmarks/cuda_check.py``: NCCL refuses two ranks on one GPU), so the
streams here have not yet carried a transfer between ranks.
"""

from __future__ import annotations

import contextlib
import time
from dataclasses import dataclass

import torch
import torch.distributed as dist

from schedc.actions import Action

from .links import Links
from .lowering import Delivery, PostRecv, Send, TensorKey, tag
from .shapes import MAX_TENSORS, Metas
from .waits import start, wait

Value = tuple[torch.Tensor, ...]


@dataclass
class _InFlight:
    works: list[dist.Work]
    tensors: Value
    peer: int
    action: Action


CALL_TAGS = 4
"""Message tags tell the calls apart: eval against step, and a call's parity."""


def call_tag(call: str, calls_before: int) -> int:
    """The part of a message's tag that names its call: ranks whose later calls differ (``eval``
    on one, ``step`` on another; only the first call is compared) would otherwise pair an eval's
    activations with a step's and stay a call apart with wrong gradients. With the tag they wait
    and fail at the timeout. Gloo matches tags; NCCL ignores them (its order per link decides)."""
    return (calls_before % 2) * 2 + (call == "eval")


class Mailbox:
    """One rank's boundary values for one step (module doc): every stage-boundary transfer goes
    through it, so each is kept alive until complete and every wait is bounded and named (tied
    weights' gradients travel apart, ``tied.py``). ``call`` is ``call_tag``'s."""

    def __init__(self, group: dist.ProcessGroup | None, rank: int, num_stages: int, timeout: float,
                 device: torch.device, links: Links | None = None, delivery: Delivery | None = None,
                 call: int = 0) -> None:
        self.group, self.rank, self.num_stages, self.timeout = group, rank, num_stages, timeout
        self.device, self.links, self.delivery, self.call = device, links, delivery, call
        self._proven: dict[int, int] = {}
        """Per peer, how many of ``delivery.taken[peer]`` a message from it has proven delivered."""
        self.ready: dict[TensorKey, Value] = {}
        self.receiving: dict[TensorKey, _InFlight] = {}
        self.sending: list[tuple[TensorKey, _InFlight]] = []
        self.stream = torch.cuda.Stream(device) if device.type == "cuda" else None
        self.waited = 0.0
        """Seconds spent blocked on receives so far (for measured timelines)."""

    def put(self, key: TensorKey, value: Value) -> None:
        self.ready[key] = value

    def take(self, key: TensorKey, consumer: Action) -> Value:
        """The value ``consumer`` needs; waits for its transfers if they are still in flight."""
        if key in self.ready:
            return self.ready.pop(key)
        flight = self.receiving.pop(key, None)
        if flight is None:
            raise RuntimeError(f"rank {self.rank}: {consumer} needs the {key.describe()}, which was "
                               "neither computed here nor received (lowering bug)")
        start = time.perf_counter()
        # On CUDA the wait orders the compute stream after the transfer and returns: a timed wait
        # would block the CPU until the GPU is done (and abort the communicator on expiry); NCCL's
        # own watchdog bounds it there (the group's timeout).
        limit = None if self.stream is not None else self.timeout
        for work in flight.works:
            wait(work, limit, f"rank {self.rank} waited for the {key.describe()} "
                              f"from rank {flight.peer} (needed by {consumer})")
        self.waited += time.perf_counter() - start
        if self.stream is None and flight.works:  # an empty message (integers only) was never sent
            self._release_delivered(key, flight.peer)
        if self.stream is not None:
            for tensor in flight.tensors:
                tensor.record_stream(torch.cuda.current_stream(self.device))
        return flight.tensors

    def post_recv(self, op: PostRecv, metas: Metas) -> None:
        what = (f"rank {self.rank} waited for the {op.key.describe()} from rank {op.peer} "
                f"(needed by {op.consumer})")
        buffers, works = [], []
        group, src = self._route(op.peer, self.rank)
        with self._comm_stream():
            for k, meta in enumerate(metas):
                buffer = torch.empty(meta.shape, dtype=meta.dtype, device=self.device)
                works.append(start(lambda b=buffer, k=k: dist.irecv(
                    b, group=group, group_src=src, tag=self._tag(op.key, k)), what))
                buffers.append(buffer)
        self.receiving[op.key] = _InFlight(works, tuple(buffers), op.peer, op.consumer)

    def send(self, op: Send) -> None:
        tensors = tuple(t.contiguous() for t in self.ready.pop(op.key))
        if self.stream is not None:
            self.stream.wait_stream(torch.cuda.current_stream(self.device))
            for tensor in tensors:
                tensor.record_stream(self.stream)
        what = f"rank {self.rank} sent the {op.key.describe()} to rank {op.peer} (after {op.producer})"
        group, dst = self._route(self.rank, op.peer)
        with self._comm_stream():
            works = [start(lambda t=t, k=k: dist.isend(t, group=group, group_dst=dst,
                                                       tag=self._tag(op.key, k)), what)
                     for k, t in enumerate(tensors)]
        self.sending.append((op.key, _InFlight(works, tensors, op.peer, op.producer)))
        self._reap()

    def _route(self, src: int, dst: int) -> tuple[dist.ProcessGroup | None, int]:
        """(group, the other end's rank in it): the link's own group, or the runner's group."""
        if self.links is not None:
            return self.links.route(src, dst)
        return self.group, dst if src == self.rank else src

    def _tag(self, key: TensorKey, index: int) -> int:
        return (tag(key, self.num_stages) * MAX_TENSORS + index) * CALL_TAGS + self.call

    def finish(self) -> None:
        """Waits for every send; anything left over means the program and the plan disagree."""
        for key, flight in self.sending:
            self._wait_sent(key, flight)
        self.sending.clear()
        left = [k.describe() for k in (*self.ready, *self.receiving)]
        if left:
            raise RuntimeError(f"rank {self.rank}: step ended with unused tensors: {'; '.join(left)}")

    def _reap(self) -> None:
        """Drops completed sends (their buffers may go); a failed one raises here. On gloo a send
        reports completion only once waited on, so none is dropped here (waiting could block on a
        peer that waits for this rank): ``_release_delivered`` drops sends that a message from the peer
        proves delivered, ``finish`` the rest."""
        pending = []
        for key, flight in self.sending:
            if all(w.is_completed() for w in flight.works):
                self._wait_sent(key, flight)  # returns at once, or raises the transfer's error
            else:
                pending.append((key, flight))
        self.sending = pending

    def _release_delivered(self, key: TensorKey, peer: int) -> None:
        """Drops the sends this message proves delivered, so their waits return at once. gloo
        reports a send complete only once waited on: ``_reap`` alone kept every send of the step
        until ``finish``. With the plan's ``Delivery``: every tensor the peer took before sending
        this one. Without (a bare mailbox): the stage that made it took its inputs first, its input
        activation and, for a gradient, the gradient of its output."""
        if self.delivery is not None:
            done = self._proven.get(peer, 0)
            upto = max(done, self.delivery.proves.get(key, 0))
            causes = set(self.delivery.taken.get(peer, ())[done:upto])
            self._proven[peer] = upto
        else:
            causes = {TensorKey("act", key.stage - 1, key.mb)}
            if key.kind == "grad":
                causes.add(TensorKey("grad", key.stage + 1, key.mb))
        if not causes:
            return
        delivered = [(sent, flight) for sent, flight in self.sending if sent in causes]
        for sent, flight in delivered:
            self._wait_sent(sent, flight)
        self.sending = [(sent, flight) for sent, flight in self.sending if sent not in causes]

    def _wait_sent(self, key: TensorKey, flight: _InFlight) -> None:
        for work in flight.works:
            wait(work, self.timeout, f"rank {self.rank} waited for rank {flight.peer} to receive "
                                     f"the {key.describe()} (sent after {flight.action})")

    def _comm_stream(self) -> contextlib.AbstractContextManager:
        return torch.cuda.stream(self.stream) if self.stream is not None else contextlib.nullcontext()
