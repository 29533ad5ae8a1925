"""Searches raced in forked processes: the first decisive answer wins, and every child is killed
at the deadline (CP-SAT checks its own limit only between steps; one load ran 9 s past a 5 s limit).

The signal handling is the delicate part: Ctrl-C belongs to the parent, which kills the children;
a SIGTERM to the process group ends a child as it would any process.
"""

from __future__ import annotations

import contextlib
import multiprocessing
import multiprocessing.connection
import signal
import threading
import time
from collections.abc import Callable, Iterator, Sequence
from typing import Any, TypeVar

from schedc.errors import ScheduleError

T = TypeVar("T")


def can_fork() -> bool:
    """A daemonic process (a multiprocessing.Pool worker) may not have children: it searches in-process."""
    return "fork" in multiprocessing.get_all_start_methods() and not multiprocessing.current_process().daemon


def race(target: Callable[..., T], calls: Sequence[tuple[Any, ...]], deadline: float,
         decisive: Callable[[T], bool], undecided: T, name: str) -> T:
    """``target(*args)`` for every ``args`` of ``calls``, each in a forked process: the first
    answer that is ``decisive``, else ``undecided`` once every child has answered or the deadline
    (``time.perf_counter``) has passed. Every child is killed and joined before this returns.
    ``name``: what a child searches for, in the error when one dies without answering."""
    ctx = multiprocessing.get_context("fork")
    children, receivers = [], []
    try:
        for args in calls:
            receiver, sender = ctx.Pipe(duplex=False)
            receivers.append(receiver)
            with sigint_held():
                children.append(_started(ctx, sender, target, args))
                sender.close()
        return _first_decisive(receivers, deadline, decisive, undecided, name)
    finally:
        try:
            with sigint_held():
                for child in children:
                    child.kill()
                for child in children:
                    child.join()
        finally:  # a Ctrl-C held until here still closes the pipes
            for receiver in receivers:
                receiver.close()


@contextlib.contextmanager
def sigint_held() -> Iterator[None]:
    """Ctrl-C held back, and raised on leaving: one inside ``start()``, after the fork but before
    the child is recorded, left it running unkilled (and one inside an at-fork handler was dropped),
    and one inside the kills' ``join()`` left the other children unjoined. A handler that only
    records it, not a blocked signal: a process's SIGINT goes to any thread that does not block it,
    and Python then raises it in the main thread all the same. Off the main thread a KeyboardInterrupt
    never arrives, and no handler can be set."""
    if threading.current_thread() is not threading.main_thread() or signal.getsignal(signal.SIGINT) is None:
        yield  # None: a handler installed outside Python, which signal.signal could not restore
        return
    caught: list[int] = []
    previous = signal.signal(signal.SIGINT, lambda signum, _: caught.append(signum))
    try:
        yield
    finally:
        signal.signal(signal.SIGINT, previous)
        if caught:
            signal.raise_signal(signal.SIGINT)  # to the caller's own handler


def _first_decisive(receivers: list[multiprocessing.connection.Connection], deadline: float,
                    decisive: Callable[[T], bool], undecided: T, name: str) -> T:
    """The first answer that is ``decisive``; ``undecided`` when none is by the deadline."""
    waiting = list(receivers)
    while waiting:
        ready = multiprocessing.connection.wait(waiting, max(0.0, deadline - time.perf_counter()))
        if not ready:
            break
        for receiver in ready:
            waiting.remove(receiver)
            try:
                answer = receiver.recv()
            except EOFError:
                raise ScheduleError(f"internal error: a {name}'s process ended without an answer") from None
            if decisive(answer):
                return answer
    return undecided


def _started(ctx: multiprocessing.context.BaseContext, sender: multiprocessing.connection.Connection,
             target: Callable[..., Any], args: tuple[Any, ...]) -> multiprocessing.Process:
    """A child forked with SIGTERM blocked until ``_child`` has set its own actions: a SIGTERM to
    the process group between the fork and those lines ran the handler inherited from the CLI in
    the child, printing a traceback header. The parent's mask is back when ``start`` returns (a
    SIGTERM that came meanwhile reaches it then)."""
    mask = signal.pthread_sigmask(signal.SIG_BLOCK, {signal.SIGTERM})
    try:
        child = ctx.Process(target=_child, args=(sender, mask, target, *args), daemon=True)
        child.start()
    finally:
        signal.pthread_sigmask(signal.SIG_SETMASK, mask)
    return child


def _child(sender: multiprocessing.connection.Connection, mask: set[signal.Signals],
           target: Callable[..., Any], *args: Any) -> None:
    """Ctrl-C is the parent's to handle: it kills the children, and a child interrupted while
    building its model would print a traceback. SIGTERM gets its default action back: the handler
    inherited from the CLI raised in the child on a SIGTERM to the process group (a job manager's),
    printing a traceback; ignored, it let the children outlive a library caller that SIGTERM ends.
    Then the parent's mask (``_started``): a SIGTERM held since the fork ends the child here."""
    signal.signal(signal.SIGINT, signal.SIG_IGN)
    signal.signal(signal.SIGTERM, signal.SIG_DFL)
    signal.pthread_sigmask(signal.SIG_SETMASK, mask)
    sender.send(target(*args))
    sender.close()
