"""How a ``schedc solve`` run is stopped: Ctrl-C, or SIGTERM from ``timeout``, Slurm or systemd.

Either ends the search with the best plan so far, which is then written and reported, as at a time
limit (SIGTERM ended the process and lost a search of hours). Both work through the search's own
Ctrl-C path: the handler raises KeyboardInterrupt in the main thread, and every phase of ``solve``
returns its best plan on it. One handler covers the whole run, from the search to the last file
written, because a signal after the search asks for what follows anyway: the plan written and
reported. A handler is taken over only where it is the default one (Python's own for SIGINT, the
default action for SIGTERM): a background job's ignored SIGINT stays ignored, and a caller's own
SIGTERM handler stays in charge.
"""

from __future__ import annotations

import contextlib
import signal
import threading
from collections.abc import Callable, Iterator

from schedc.write_signals import Terminated, sigterm_deferred

NAMES = {signal.SIGINT: "Ctrl-C", signal.SIGTERM: "SIGTERM"}


class Stops:
    """The signals a run got: ``during`` the search (each stops it) and ``after`` it."""

    def __init__(self) -> None:
        self.searching = True
        self.during: list[int] = []
        self.after: list[int] = []
        self.late_sigterm: Callable[[], None] = lambda: None
        """Tells the writes of a SIGTERM after the search (``write_signals.sigterm_deferred``)."""

    def handler(self, signum: int, _frame: object) -> None:
        """In the search: the first signal stops it; a SIGTERM after that waits for the best plan
        (the search is winding down, and a replay of the list phase's plan takes seconds at scale),
        while a second Ctrl-C interrupts, as ever. After it: the first of either is noted (the files
        are written, then a SIGTERM's status given); a second one interrupts, as ever (a write that
        blocks, to a FIFO without reader)."""
        if self.searching:
            first = not self.during
            self.during.append(signum)
            if first or signum == signal.SIGINT:
                raise KeyboardInterrupt
            return
        if self.after:
            raise KeyboardInterrupt if signum == signal.SIGINT else Terminated
        self.after.append(signum)
        if signum == signal.SIGTERM:
            self.late_sigterm()  # ends a write to a device or FIFO, which may never finish

    def stopped_by(self) -> str | None:
        """What stopped the search, for the report: the first signal in it."""
        return NAMES[self.during[0]] if self.during else None

    @property
    def terminated(self) -> bool:
        return signal.SIGTERM in self.during + self.after


def _ours(signum: int) -> bool:
    """The handler is the default one, on the main thread (where handlers can be set)."""
    default = signal.default_int_handler if signum == signal.SIGINT else signal.SIG_DFL
    return threading.current_thread() is threading.main_thread() and signal.getsignal(signum) is default


@contextlib.contextmanager
def handled(stops: Stops) -> Iterator[None]:
    """``stops.handler`` for SIGINT and SIGTERM where theirs is the default one; put back after."""
    previous = {}
    with sigterm_deferred() as stops.late_sigterm:
        try:
            for signum in NAMES:
                if _ours(signum):
                    previous[signum] = signal.signal(signum, stops.handler)
            yield
        finally:
            for signum, old in previous.items():
                signal.signal(signum, old)
