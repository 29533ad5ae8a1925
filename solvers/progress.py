"""What a search reports while it runs: one ``Progress`` per improvement, to a plain callable."""

from __future__ import annotations

import time
from collections.abc import Callable
from dataclasses import dataclass, replace
from fractions import Fraction
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from schedc.plan import Plan


@dataclass(frozen=True)
class Progress:
    """One improvement, in problem time units: best value so far, proven bound, seconds elapsed."""

    best: Fraction
    bound: Fraction
    elapsed: float
    source: str = "cp-sat"

    @property
    def gap(self) -> float:
        """(best - bound) / best, as Plan.gap computes it."""
        return 0.0 if self.best == 0 else max(0.0, float((self.best - self.bound) / self.best))


ProgressFn = Callable[[Progress], None]


def bounds_capped(progress: ProgressFn | None, objective: str, floor: Fraction) -> ProgressFn | None:
    """What a backend reports, with a span's bound cut to ``floor``: a backend's span bound holds
    only for plans in microbatch index order (``span_bound.py``)."""
    if progress is None or objective == "makespan":
        return progress
    return lambda event: progress(replace(event, bound=min(floor, event.best)))


class Reporter:
    """The progress callable a solve hands its searches: times count from the solve's start (each
    search counts from its own, which put a CP-SAT line at 0.01 s after the heuristic's at 0.08 s),
    and the last event is kept, so that ``final`` reports what moved after it: CP-SAT calls back on
    new plans, not on the proof that ends its search."""

    def __init__(self, sink: ProgressFn, t0: float) -> None:
        self.sink, self.t0 = sink, t0
        self.last: Progress | None = None

    def __call__(self, event: Progress) -> None:
        self.last = replace(event, elapsed=time.perf_counter() - self.t0)
        self.sink(self.last)

    def final(self, best: Fraction, bound: Fraction) -> None:
        if self.last is None or (self.last.best, self.last.bound) != (best, bound):
            self(Progress(best, bound, 0.0, "final"))


class Interrupted(KeyboardInterrupt):
    """Ctrl-C during a search: carries the best plan found so far (None if none yet) and a bound
    proven meanwhile that the plan may not carry (a span bound: ``solve`` ignores a plan's own span
    bound). A KeyboardInterrupt still, so that a caller's ``except Exception`` does not swallow the
    Ctrl-C (catch it before KeyboardInterrupt to take the plan)."""

    def __init__(self, plan: Plan | None = None, floor: Fraction | None = None) -> None:
        super().__init__("interrupted")
        self.plan, self.floor = plan, floor


def report_or_stop(progress: ProgressFn, event: Progress, plan: Plan | None, floor: Fraction) -> None:
    """Reports a bound line; a Ctrl-C (or a callback's KeyboardInterrupt) during the report stops
    the solve as anywhere else, keeping the plan and the bound the line reports, which a bare
    KeyboardInterrupt would drop."""
    try:
        progress(event)
    except KeyboardInterrupt:
        raise Interrupted(plan, floor) from None
