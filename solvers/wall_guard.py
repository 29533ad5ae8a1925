"""The wall-clock guard of one-worker solves.

With one worker every budget is CP-SAT's deterministic time, so the same seed repeats the same plan
on a loaded machine; only a wall-clock cap keeps such a solve near its limit when the machine is so
loaded that deterministic time runs slow. Each search is capped at ``WALL_GUARD`` times its own
limit plus a second, and within a ``solve`` call the searches together are capped so
(``call_deadline``, from the end of the list phase): capping each phase alone let a 5 s solve run
16.5 s under load. The cap only ever cuts searches short and stops a sequence of them (LNS
windows, probes); it never sizes a budget, so below it the same seed gives the same plan. Where it
does cut, ``watched`` counts it, so that the caller can say the plan may not repeat.
"""

from __future__ import annotations

import math
import time
from collections.abc import Iterator
from contextlib import contextmanager
from contextvars import ContextVar
from dataclasses import dataclass

WALL_GUARD = 3
"""The wall-clock cap in multiples of the (deterministic) limit, plus a second. A search this cap
cuts short is no longer repeatable (the tests of repeatability lift it)."""
MIN_SECONDS = 0.01
"""The least wall time a search is given once the call's cap is near: CP-SAT still returns the
plan it was handed as a hint, and the caller's clock ends the sequence."""

CUT_SHARE = 0.98
"""A one-worker search that ran this share of its wall-clock cap, short of its deterministic
limit and undecided, was ended by the cap (CP-SAT checks its limits between steps, and the cap
is at least ``MIN_SECONDS``)."""

_deadline: ContextVar[float | None] = ContextVar("schedc_wall_deadline", default=None)


@dataclass
class Cuts:
    """How often the guard, not deterministic time, ended a search or a sequence of them: each time
    the plan came to depend on the machine's speed and load, so the same seed may not repeat it."""

    count: int = 0


_cuts: ContextVar[Cuts | None] = ContextVar("schedc_wall_cuts", default=None)


@contextmanager
def watched() -> Iterator[Cuts]:
    """Counts the guard's cuts within it (the CLI then says the plan may not repeat)."""
    cuts = Cuts()
    token = _cuts.set(cuts)
    try:
        yield cuts
    finally:
        _cuts.reset(token)


def note_cut() -> None:
    cuts = _cuts.get()
    if cuts is not None:
        cuts.count += 1


def check_search(workers: int, deterministic_limit: float, wall_cap: float, deterministic_time: float,
                 wall_time: float, decided: bool) -> None:
    """Counts a one-worker search the wall-clock cap ended: undecided (no proof of optimum or
    infeasibility), short of its deterministic limit, at its wall cap."""
    if workers == 1 and not decided and deterministic_time < deterministic_limit \
            and wall_time >= CUT_SHARE * wall_cap:
        note_cut()


def guard(limit: float) -> float:
    """The wall-clock cap of one search of ``limit`` deterministic seconds."""
    return max(MIN_SECONDS, min(WALL_GUARD * limit + 1, deadline_left()))


def deadline_left() -> float:
    """Wall seconds left to the enclosing ``call_deadline`` (infinite outside one)."""
    deadline = _deadline.get()
    return math.inf if deadline is None else deadline - time.perf_counter()


@contextmanager
def call_deadline(limit: float, t0: float) -> Iterator[None]:
    """Within it no one-worker search runs past ``t0`` plus the cap of a ``limit``-second search.
    A context variable, so that a forked probe inherits it and other threads' solves do not."""
    token = _deadline.set(t0 + WALL_GUARD * limit + 1)
    try:
        yield
    finally:
        _deadline.reset(token)
