"""How a ``schedc solve`` run is stopped: Ctrl-C, or SIGTERM from ``timeout``, Slurm or systemd.

Either ends the search with the best plan so far, which is then written and reported, as at a time
limit (SIGTERM ended the process and lost a search of hours). Both work through the search's own
Ctrl-C path: the handler raises KeyboardInterrupt in the main thread, and every phase of ``solve``
returns its best plan on it. A handler is taken over only where it is the default one (Python's own
for SIGINT, the default action for SIGTERM): a background job's ignored SIGINT stays ignored.
"""

from __future__ import annotations

import contextlib
import signal
import threading
from collections.abc import Iterator

NAMES = {signal.SIGINT: "Ctrl-C", signal.SIGTERM: "SIGTERM"}


def _ours(signum: int) -> bool:
    """The handler is the default one, on the main thread (where handlers can be set)."""
    default = signal.default_int_handler if signum == signal.SIGINT else signal.SIG_DFL
    return threading.current_thread() is threading.main_thread() and signal.getsignal(signum) is default


@contextlib.contextmanager
def _handled(signums: tuple[int, ...], handler: object) -> Iterator[None]:
    """``handler`` for those of ``signums`` whose handler is the default one; put back after."""
    previous = {s: signal.signal(s, handler) for s in signums if _ours(s)}
    try:
        yield
    finally:
        for signum, old in previous.items():
            signal.signal(signum, old)


@contextlib.contextmanager
def search_stops(seen: list[int]) -> Iterator[None]:
    """Ctrl-C or SIGTERM stops the search as Python's own Ctrl-C handler does (solve returns its
    best plan), and is noted in ``seen``: the report then says the run was cut short, where it read
    like one that ran its course (unless the plan is proven optimal: it cut nothing short), and a
    SIGTERM still ends the process with its status once the plan is written."""

    def note(signum: int, _frame: object) -> None:
        seen.append(signum)
        raise KeyboardInterrupt

    with _handled((signal.SIGINT, signal.SIGTERM), note):
        yield


@contextlib.contextmanager
def one_interrupt_ignored() -> Iterator[None]:
    """Once a plan is found, a Ctrl-C asks for what follows anyway: the plan written and reported.
    One that comes late, while a large plan is rendered, is ignored (it made the files go unwritten,
    silently); a second one interrupts, as ever (a write that blocks, to a FIFO without reader).
    SIGTERM is the writer's own (``write_signals.sigterm_unwinds``)."""
    seen: list[int] = []

    def once(signum: int, _frame: object) -> None:
        if seen:
            raise KeyboardInterrupt
        seen.append(signum)

    with _handled((signal.SIGINT,), once):
        yield


def stopped_by(seen: list[int]) -> str | None:
    """What stopped the search, for the report: the first signal noted."""
    return NAMES[seen[0]] if seen else None
