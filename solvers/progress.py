"""What a search reports while it runs: one ``Progress`` per improvement, to a plain callable."""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from fractions import Fraction


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


class Interrupted(Exception):
    """Ctrl-C during a search: carries the best plan found so far (None if none yet)."""

    def __init__(self, plan=None) -> None:
        super().__init__("interrupted")
        self.plan = plan
