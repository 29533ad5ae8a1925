"""Term 3 of ``bounds`` with ramps: the memory a rank holds cannot sit at its cap for the whole of
its window, since it fills one forward at a time at the window's start and empties one release at a
time at its end.

Term 3 says that rank r's level (or its count of fully alive activations) integrates over the
window W = [first F start on r, last release end on r] to at least an area A (every activation's
least lifetime), and is at most the cap c, so |W| >= A / c. Within W, at x after its start and y
before its end, the level is also at most

- up(x) = a (floor(x / d) + 1): only forwards allocate, a each (1/v of the level; 1 of the count),
  and r runs them one at a time, d = its shortest forward, so at most floor(x / d) + 1 have started;
- down(y) = f + rho y: all that is held at a time is freed after it, by releases (I, W, B; for the
  count, the I or B that ends an activation's full life) ending in the y left of W; r runs them one
  at a time, so all of them but the first lie within those y, and they free at most rho per unit of
  their time (rho the largest free per duration) plus f (the largest one free) for the first.

So |W| is at least the least L with covered(L) = integral over [0, L] of min(c, up(x), down(L - x))
>= A, which exceeds A / c by about c d / (2 a) + c / (2 rho) once A / c is longer than the ramps.
Measured on p=8 m=32 v=4 mem=3 (equal costs): term 3 108 -> 112.1 (the analytic bound before: 108,
the list plan 127.75); p=8 m=16 v=3 mem=3: 57.8 -> 61.8 (analytic 60 -> 61.8). Where the cap holds
more than the window needs (loose caps), the ramps cut nothing that term 3 counted and the two agree.
"""

from __future__ import annotations

from dataclasses import dataclass
from fractions import Fraction

Num = Fraction | float

RESOLUTION = 16
"""Steps per time tick of the search for the least window: the bound given is the step that covers
the area exactly, else the largest that covers less, at most a step below the exact least window."""

STEPS_BACK = 4
"""Steps the exact check walks back from the float search's answer before settling for area / cap."""


@dataclass(frozen=True)
class Ramps:
    """The level's limits (module doc): cap c, up(x) = size (floor(x / step) + 1), down(y) = first +
    rate y; a step or rate of None leaves that ramp out (a zero-length forward or release)."""

    cap: Num
    size: Num
    step: Num | None
    first: Num
    rate: Num | None

    def covered(self, length: Num) -> Num:
        """Integral over [0, length] of min(cap, up(x), down(length - x)), exactly: up is constant
        on each step, down linear, so each step splits where down falls below it."""
        total, x0 = length * 0, length * 0  # zeros of the type in use
        k = 0
        while x0 < length:
            level = self.cap if self.step is None else min(self.cap, self.size * (k + 1))
            x1 = length if self.step is None or level == self.cap else min(length, (k + 1) * self.step)
            total += self._piece(length, x0, x1, level)
            x0, k = x1, k + 1
        return total

    def _piece(self, length: Num, x0: Num, x1: Num, level: Num) -> Num:
        """Integral over [x0, x1] of min(level, first + rate (length - x))."""
        if self.rate is None:
            return level * (x1 - x0)
        cross = min(x1, max(x0, length - (level - self.first) / self.rate))  # down >= level before it
        low = (x1 - cross) * self.first + self.rate * ((length - cross) ** 2 - (length - x1) ** 2) / 2
        return level * (cross - x0) + low

    def least_window(self, area: Fraction, tick: Fraction) -> Fraction:
        """A lower bound on the least L with covered(L) >= area: the multiple of tick / RESOLUTION
        that covers it exactly, else the largest that covers less, and never below area / cap (term 3
        without ramps). The search runs in floats (exact Fractions took 0.4 s on p=32 m=256 v=2); its
        answer is checked exactly and stepped down where rounding put it a step or two too high; where
        that is not enough (costs of 1e40: a reviewer's hang, walking back one exact step at a time)
        or a step is 0 as a float (ticks below 1e-308: an OverflowError), term 3's own area / cap."""
        unit, low = tick / RESOLUTION, area / self.cap
        step = float(unit)
        if step == 0.0:
            return low
        fast, goal = self.in_floats(), float(area)
        n_low = int(low / unit)
        n_high = max(n_low + 1, 2 * n_low)
        while fast.covered(n_high * step) < goal:
            n_low, n_high = n_high, 2 * n_high
        while n_high - n_low > 1:  # covered is nondecreasing in L: integrand and interval both grow
            mid = (n_low + n_high) // 2
            n_low, n_high = (mid, n_high) if fast.covered(mid * step) < goal else (n_low, mid)
        if self.covered(n_high * unit) == area:  # covered rises strictly: then L is this step itself
            return n_high * unit
        for n in range(n_low, max(n_low - STEPS_BACK, 0), -1):
            if n * unit <= low:
                break
            if self.covered(n * unit) < area:
                return n * unit
        return low

    def in_floats(self) -> Ramps:
        """The same limits in floats, for the search (``least_window`` checks its answer exactly)."""
        def f(x: Fraction | None) -> float | None:
            return None if x is None else float(x)

        return Ramps(float(self.cap), float(self.size), f(self.step), float(self.first), f(self.rate))
