"""The mailbox: every boundary tensor of one step, local or in flight.

Producers ``put`` tensors, consumers ``take`` them; a tensor for another rank leaves through
``send`` (isend), one from another rank arrives through ``post_recv`` (irecv, posted ahead by the
lowering). A received tensor is handed out only after its transfer completed; a sent tensor is
kept referenced until its transfer completed, so its buffer is never reused or freed early. Every
wait is bounded by the timeout and fails with the rank, the peer and the action it waited for.

On CUDA, transfers are issued on a communication stream: a send first waits (event) for the
compute stream that produced its tensor; a receive is waited on from the compute stream that
reads it. This path is written for NCCL and has not been run here (no GPU).
"""

from __future__ import annotations

import contextlib
import time
from dataclasses import dataclass

import torch
import torch.distributed as dist

from schedc.actions import Action

from .lowering import PostRecv, Send, TensorKey, tag
from .shapes import TensorMeta
from .waits import start, wait


@dataclass
class _InFlight:
    work: dist.Work
    tensor: torch.Tensor
    peer: int
    action: Action


class Mailbox:
    def __init__(self, group: dist.ProcessGroup | None, rank: int, num_stages: int, timeout: float,
                 device: torch.device) -> None:
        self.group, self.rank, self.num_stages, self.timeout = group, rank, num_stages, timeout
        self.device = device
        self.ready: dict[TensorKey, torch.Tensor] = {}
        self.receiving: dict[TensorKey, _InFlight] = {}
        self.sending: list[tuple[TensorKey, _InFlight]] = []
        self.stream = torch.cuda.Stream(device) if device.type == "cuda" else None
        self.waited = 0.0
        """Seconds spent blocked on receives so far (for measured timelines)."""

    def put(self, key: TensorKey, tensor: torch.Tensor) -> None:
        self.ready[key] = tensor

    def take(self, key: TensorKey, consumer: Action) -> torch.Tensor:
        """The tensor ``consumer`` needs; waits for its transfer if it is still in flight."""
        if key in self.ready:
            return self.ready.pop(key)
        flight = self.receiving.pop(key, None)
        if flight is None:
            raise RuntimeError(f"rank {self.rank}: {consumer} needs the {key.describe()}, which was "
                               "neither computed here nor received (lowering bug)")
        start = time.perf_counter()
        wait(flight.work, self.timeout, f"rank {self.rank} waited for the {key.describe()} "
                                        f"from rank {flight.peer} (needed by {consumer})")
        self.waited += time.perf_counter() - start
        if self.stream is not None:
            flight.tensor.record_stream(torch.cuda.current_stream(self.device))
        return flight.tensor

    def post_recv(self, op: PostRecv, meta: TensorMeta) -> None:
        what = (f"rank {self.rank} waited for the {op.key.describe()} from rank {op.peer} "
                f"(needed by {op.consumer})")
        with self._comm_stream():
            buffer = torch.empty(meta.shape, dtype=meta.dtype, device=self.device)
            work = start(lambda: dist.irecv(buffer, group=self.group, group_src=op.peer,
                                            tag=tag(op.key, self.num_stages)), what)
        self.receiving[op.key] = _InFlight(work, buffer, op.peer, op.consumer)

    def send(self, op: Send) -> None:
        tensor = self.ready.pop(op.key).contiguous()
        if self.stream is not None:
            self.stream.wait_stream(torch.cuda.current_stream(self.device))
            tensor.record_stream(self.stream)
        what = f"rank {self.rank} sent the {op.key.describe()} to rank {op.peer} (after {op.producer})"
        with self._comm_stream():
            work = start(lambda: dist.isend(tensor, group=self.group, group_dst=op.peer,
                                            tag=tag(op.key, self.num_stages)), what)
        self.sending.append((op.key, _InFlight(work, tensor, op.peer, op.producer)))
        self._reap()

    def finish(self) -> None:
        """Waits for every send; anything left over means the program and the plan disagree."""
        for key, flight in self.sending:
            self._wait_sent(key, flight)
        self.sending.clear()
        left = [k.describe() for k in (*self.ready, *self.receiving)]
        if left:
            raise RuntimeError(f"rank {self.rank}: step ended with unused tensors: {'; '.join(left)}")

    def _reap(self) -> None:
        """Drops completed sends (their buffers may go); a failed one raises here."""
        pending = []
        for key, flight in self.sending:
            if flight.work.is_completed():
                self._wait_sent(key, flight)  # returns at once, or raises the transfer's error
            else:
                pending.append((key, flight))
        self.sending = pending

    def _wait_sent(self, key: TensorKey, flight: _InFlight) -> None:
        wait(flight.work, self.timeout, f"rank {self.rank} waited for rank {flight.peer} to receive "
                                        f"the {key.describe()} (sent after {flight.action})")

    def _comm_stream(self) -> contextlib.AbstractContextManager:
        return torch.cuda.stream(self.stream) if self.stream is not None else contextlib.nullcontext()
