"""Bounded transfers: starting or waiting on a P2P op fails with one line naming who waited for
what, never a hang and never a bare backend traceback."""

from __future__ import annotations

import datetime
from collections.abc import Callable

import torch.distributed as dist

from .errors import PeerError, PeerTimeoutError


def _reason(err: Exception) -> str:
    text = str(err).strip()
    return text.splitlines()[0] if text else type(err).__name__


def start(post: Callable[[], dist.Work], what: str) -> dist.Work:
    """Posts an isend/irecv; a backend that already knows the peer is gone raises PeerError."""
    try:
        return post()
    except RuntimeError as err:
        raise PeerError(f"{what}: the transfer could not start ({_reason(err)})") from None


def wait(work: dist.Work, timeout: float, what: str) -> None:
    """Waits for a transfer at most ``timeout`` seconds."""
    try:
        work.wait(timeout=datetime.timedelta(seconds=timeout))
    except RuntimeError as err:
        reason = _reason(err)
        if "timed out" in reason.lower() or "timeout" in reason.lower():
            raise PeerTimeoutError(f"{what}: nothing arrived within {timeout:g} s") from None
        raise PeerError(f"{what}: the transfer failed ({reason})") from None
