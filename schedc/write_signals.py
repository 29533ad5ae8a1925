"""Signals while outputs are written (``output_paths``): SIGTERM unwinds through the clean-ups, and
clean-ups that must finish run with SIGINT and SIGTERM held.

SIGTERM (``timeout``, Slurm, systemd) killed the process between a temporary's creation and its
rename, leaving hidden temporaries of megabytes beside the targets, job after job; a second Ctrl-C
during a put-back left another owner's file cut short, without a word. Both work by swapping Python
handlers, which run in the main thread whatever thread the kernel gives a signal to (a signal mask
holds a signal for one thread only, and a process with other threads, torch's pools among them, got
it all the same). A handler swapped in acts as the one it replaced once its block has ended, so one
left in place by an interrupt during the swap back (a Ctrl-C at that instant) does no harm. SIGTERM
is taken over only where it has its default action (the CLI): a handler of the caller's stays in
charge. ``schedc solve`` has its own (``search_stops``), which waits for the files on a first
SIGTERM after its search, except at a device or FIFO, which may never take its output
(``sigterm_deferred``).
"""

from __future__ import annotations

import contextlib
import signal
import threading
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from typing import Any

HELD = (signal.SIGINT, signal.SIGTERM)


class Terminated(BaseException):
    """SIGTERM met while outputs are written: unwinds through the clean-ups of the temporaries."""


def _main_thread() -> bool:
    return threading.current_thread() is threading.main_thread()


def _swapped(signum: int, while_active: Callable[[int], None], active: list[bool]) -> Any:
    """Installs a handler that calls ``while_active`` while ``active[0]``, and otherwise puts the
    replaced handler back and delivers the signal to it; returns the replaced handler."""
    previous: list[Any] = []

    def handler(got: int, frame: object) -> None:
        if active[0]:
            while_active(got)
            return
        signal.signal(got, previous[0])
        signal.raise_signal(got)

    previous.append(signal.signal(signum, handler))
    return previous[0]


@contextlib.contextmanager
def held_signals() -> Iterator[None]:
    """SIGINT and SIGTERM recorded, not acted on, while a clean-up runs; delivered after it. A
    signal that comes before the swap acts as it would have (a window of a few bytecodes)."""
    if not _main_thread():
        yield  # handlers run in the main thread: nothing interrupts this one
        return
    recorded: list[int] = []
    active = [True]
    replaced: dict[int, Any] = {}
    try:
        for signum in HELD:
            replaced[signum] = _swapped(signum, recorded.append, active)
        yield
    finally:
        active[0] = False
        for signum, handler in replaced.items():
            signal.signal(signum, handler)
        for signum in recorded:
            signal.raise_signal(signum)


@contextlib.contextmanager
def sigterm_unwinds() -> Iterator[None]:
    """While the body runs a SIGTERM raises ``Terminated``, which unwinds through its clean-ups; then
    the signal is delivered with its default action (the process ends, status 143)."""
    if not _main_thread() or signal.getsignal(signal.SIGTERM) is not signal.SIG_DFL:
        yield
        return
    active, caught = [True], []

    def unwind(signum: int) -> None:
        caught.append(signum)
        if armed[0]:
            armed[0] = False
            raise Terminated

    armed = [False]
    try:
        _swapped(signal.SIGTERM, unwind, active)  # a SIGTERM before this ends the process: no temporary yet
        armed[0] = True
        if caught:
            raise Terminated
        yield
    except Terminated:
        pass
    finally:
        armed[0] = active[0] = False
        signal.signal(signal.SIGTERM, signal.SIG_DFL)
    if caught:
        signal.raise_signal(signal.SIGTERM)  # the default action: the process ends here
        raise Terminated  # where the caller blocks SIGTERM: still no silent success


@dataclass
class _Deferral:
    """An open ``sigterm_deferred`` block: whether a SIGTERM was noted, and whether a stream write
    is under way."""

    noted: bool = False
    streaming: bool = False


_DEFERRED: list[_Deferral] = []
"""The open ``sigterm_deferred`` blocks, innermost last."""


@contextlib.contextmanager
def sigterm_deferred() -> Iterator[Callable[[], None]]:
    """For a handler that notes a SIGTERM and acts on it once the outputs are written (``schedc
    solve``): yields what it calls on one. A write to a device or FIFO can block for ever (a FIFO
    without reader), so one under way ends at such a SIGTERM, and one that starts after it does not
    start (``stream_write``): ``Terminated``, as the default action would have ended the process."""
    state = _Deferral()
    _DEFERRED.append(state)

    def noted() -> None:
        state.noted = True
        if state.streaming:
            raise Terminated

    try:
        yield noted
    finally:
        _DEFERRED.remove(state)


@contextlib.contextmanager
def stream_write() -> Iterator[None]:
    """A write to a device or FIFO, which a SIGTERM noted by ``sigterm_deferred`` ends."""
    state = _DEFERRED[-1] if _DEFERRED and _main_thread() else None
    if state is None:
        yield
        return
    if state.noted:
        raise Terminated
    state.streaming = True
    try:
        yield
    finally:
        state.streaming = False
