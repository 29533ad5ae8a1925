"""Signals while outputs are written (``output_paths``): SIGTERM unwinds through the clean-ups, and
clean-ups that must finish run with SIGINT and SIGTERM held.

SIGTERM (``timeout``, Slurm, systemd) killed the process between a temporary's creation and its
rename, leaving hidden temporaries of megabytes beside the targets, job after job; a second Ctrl-C
during a put-back left another owner's file cut short, without a word. Only where SIGTERM has its
default action (the CLI): a handler of the caller's stays in charge, as it was.
"""

from __future__ import annotations

import contextlib
import signal
import threading
from collections.abc import Iterator

HELD = {signal.SIGINT, signal.SIGTERM}


class Terminated(BaseException):
    """SIGTERM met while outputs are written: unwinds through the clean-ups of the temporaries."""


@contextlib.contextmanager
def held_signals() -> Iterator[None]:
    """SIGINT and SIGTERM held (pending, not lost) while a clean-up runs; delivered after it."""
    if threading.current_thread() is not threading.main_thread() or not hasattr(signal, "pthread_sigmask"):
        yield  # Python runs handlers in the main thread only (Windows has no signal masks)
        return
    before = signal.pthread_sigmask(signal.SIG_BLOCK, HELD)
    try:
        yield
    finally:
        signal.pthread_sigmask(signal.SIG_SETMASK, before)


@contextlib.contextmanager
def sigterm_unwinds() -> Iterator[None]:
    """While the body runs a SIGTERM raises ``Terminated``, which unwinds through its clean-ups; then
    the signal is delivered with its default action (the process ends, status 143). The handler is
    swapped with SIGTERM held, and only raises while armed, so no SIGTERM escapes or is lost."""
    if (threading.current_thread() is not threading.main_thread()
            or signal.getsignal(signal.SIGTERM) is not signal.SIG_DFL):
        yield
        return
    armed, caught = [False], []

    def unwind(signum: int, frame: object) -> None:
        caught.append(signum)
        if armed[0]:
            armed[0] = False
            raise Terminated

    with held_signals():
        signal.signal(signal.SIGTERM, unwind)
    try:  # armed and disarmed first thing inside it (no call between: Python runs handlers at calls)
        armed[0] = True
        if caught:  # one that came between the swap and the arming
            raise Terminated
        yield
    except Terminated:
        pass
    finally:
        armed[0] = False
        with held_signals():
            signal.signal(signal.SIGTERM, signal.SIG_DFL)
    if caught:
        signal.raise_signal(signal.SIGTERM)  # the default action: the process ends here
        raise Terminated  # unreachable unless the signal is blocked by the caller: still no silent success
