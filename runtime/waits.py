"""Bounded transfers: starting or waiting on a P2P op fails with one line naming who waited for
what, never a hang and never a bare backend traceback."""

from __future__ import annotations

import datetime
import re
import time
from collections.abc import Callable, Iterable, Sequence

import torch
import torch.distributed as dist

from .errors import PeerError, PeerTimeoutError

Ends = tuple[int, int]
"""A value's (maximum, minimum) over a group; from one rank, what it adds to each."""

_SOURCE_PREFIX = re.compile(r"^\[[^\]\s]*\.\w+:\d+\]\s*")
"""gloo's "[.../gloo/transport/tcp/pair.cc:534] " before its message: where in gloo, not what (a
file name with its extension, so a leading address such as "[::1]:29500" stays)."""


def _reason(err: Exception) -> str:
    """The backend's first line, without gloo's source location (the rest is a C++ stack)."""
    text = str(err).strip()
    return _SOURCE_PREFIX.sub("", text.splitlines()[0]) if text else type(err).__name__


def start(post: Callable[[], dist.Work], what: str) -> dist.Work:
    """Posts an isend/irecv; a backend that already knows the peer is gone, or that cannot carry
    the tensor (NCCL has no int16), raises PeerError."""
    try:
        return post()
    except (RuntimeError, TypeError) as err:
        raise PeerError(f"{what}: the transfer could not start ({_reason(err)})") from None


def wait(work: dist.Work, timeout: float | None, what: str) -> None:
    """Waits for a transfer at most ``timeout`` seconds (None: the backend's own wait, which on
    NCCL orders the current CUDA stream after the transfer without blocking the CPU)."""
    began = time.monotonic()
    try:
        if timeout is None:
            work.wait()
        else:
            work.wait(timeout=datetime.timedelta(seconds=timeout))
    except RuntimeError as err:
        reason = _reason(err)
        if "timed out" in reason.lower() or "timeout" in reason.lower():
            raise PeerTimeoutError(f"{what}: nothing arrived within "
                                   f"{_limit(timeout, time.monotonic() - began)}") from None
        raise PeerError(f"{what}: the transfer failed ({reason})") from None


def _limit(timeout: float | None, waited: float) -> str:
    """Which timeout ended a wait: a gloo collective also ends at the process group's own timeout,
    which may be the shorter (init_process_group(timeout=3 s) under a runner's 30 s read "30 s")."""
    if timeout is None:
        return "the process group's timeout"
    if waited < 0.9 * timeout:
        return f"{waited:.3g} s, the process group's own timeout (shorter than the runner's {timeout:g} s)"
    return f"{timeout:g} s"


def all_reduce(tensor: torch.Tensor, op: dist.ReduceOp, group: dist.ProcessGroup | None,
               timeout: float | None, what: str) -> None:
    """A collective in place, bounded as the mailbox's waits are: by ``timeout`` on CPU, by NCCL's
    watchdog on CUDA (a timed wait there would block the CPU)."""
    work = start(lambda: dist.all_reduce(tensor, op=op, group=group, async_op=True), what)
    wait(work, None if tensor.device.type == "cuda" else timeout, what)


def same_everywhere(flags: list[int], digests: list[int], group: dist.ProcessGroup | None,
                    device: torch.device, timeout: float | None, what: str) -> tuple[list[int], bool]:
    """One all-reduce (MAX) of ``flags`` and of each digest and its negation: (each flag's maximum
    over the group, whether every member holds the same digests)."""
    values = torch.tensor([*flags, *with_ends((d, d) for d in digests)], dtype=torch.int64, device=device)
    all_reduce(values, dist.ReduceOp.MAX, group, timeout, what)
    out = values.tolist()
    return out[:len(flags)], all(high == low for high, low in read_ends(out[len(flags):]))


def with_ends(ends: Iterable[Ends]) -> list[int]:
    """Flags for one MAX all-reduce that finds minima too: each (toward the maximum, toward the
    minimum) pair as the first and the negated second (``read_ends`` reads them back)."""
    return [n for high, low in ends for n in (high, -low)]


def read_ends(maxima: Sequence[int]) -> list[Ends]:
    """(maximum, minimum) of each pair that ``with_ends`` wrote, from the flags' maxima."""
    return [(maxima[i], -maxima[i + 1]) for i in range(0, len(maxima), 2)]
