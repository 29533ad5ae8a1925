"""The plan: per-rank ordered actions plus where they came from. Plain data.

A plan's times are never stored as truth: the simulator derives them from the orders, so a plan
can only print numbers the simulator agrees with. Constructing a Plan checks that the orders are a
schedule of the problem (every task once, on its rank, no deadlock); the activation cap is checked
by ``violations()`` because a baseline over the cap is still a plan worth comparing.
"""

from __future__ import annotations

import math
from dataclasses import dataclass, field
from decimal import Decimal
from fractions import Fraction
from numbers import Real

from schedc.actions import as_orders
from schedc.errors import ArgumentError, PlanFormatError, ProblemError, ScheduleError, printable, shown
from schedc.exact import MAX_DERIVED, exact, fmt_exact
from schedc.problem import Problem
from schedc.replays import keep_replay, kept_replay
from schedc.simulate import Orders, Timeline, simulate
from schedc.validate import first_and_count, memory_errors, structural_errors

OBJECTIVES = ("makespan", "span")
STATUSES = ("optimal", "feasible", "heuristic")


def _is_seconds(value: object) -> bool:
    """A finite real number >= 0 that a float holds (a 400-digit int overflows every display of
    it, 1e-400 would read back as 0); numpy's scalars and Decimals count, and are kept as a float."""
    if isinstance(value, bool) or not isinstance(value, Real | Decimal):
        return False
    try:
        held = float(value)
        return math.isfinite(held) and value >= 0 and (held > 0 or value == 0)  # not 1e-400 as 0.0
    except (OverflowError, ValueError):  # ValueError: Decimal('sNaN')
        return False


@dataclass(frozen=True, kw_only=True)
class Plan:
    """A schedule as data: per-rank ordered actions for a problem, with what made it and what it
    claims (status, bound), apart from any engine that runs it. Its figures are always the
    simulator's replay of the orders, and a bound or status its own orders disprove is refused."""

    problem: Problem
    orders: Orders
    source: str
    """What made the plan: a baseline's name ('1f1b') or a solver ('cp-sat')."""
    status: str = "heuristic"
    """'optimal' (proven), 'feasible' (solver, gap open) or 'heuristic' (no proof attempted)."""
    lower_bound: Fraction | None = None
    """Proven lower bound on the objective, when known."""
    objective: str = "makespan"
    solve_seconds: float | None = field(default=None, compare=False)
    """Wall-clock seconds of the solve: not compared, so two runs that repeat a plan compare equal."""

    def __post_init__(self) -> None:
        if not isinstance(self.problem, Problem):
            raise ArgumentError(f"a plan needs a Problem, got {type(self.problem).__name__}")
        object.__setattr__(self, "orders", as_orders(self.orders))
        if self.lower_bound is not None:
            try:
                bound = exact(self.lower_bound, "lower_bound", MAX_DERIVED, finest=None)
            except ProblemError as err:  # a plan's field: the plan's error type, as its other fields
                raise PlanFormatError(str(err)) from None
            object.__setattr__(self, "lower_bound", bound)
            if self.lower_bound < 0:  # a value is >= 0: a negative bound would print a gap above 100%
                raise PlanFormatError(f"lower_bound must be >= 0, got {fmt_exact(self.lower_bound)}")
        if not isinstance(self.objective, str) or self.objective not in OBJECTIVES:  # not an array's `in`
            raise PlanFormatError(f"objective must be one of {', '.join(OBJECTIVES)}, "
                                  f"got {shown(self.objective)}")
        if not isinstance(self.status, str) or self.status not in STATUSES:
            raise PlanFormatError(f"status must be one of {', '.join(STATUSES)}, got {shown(self.status)}")
        if not isinstance(self.source, str):  # any text: a CSV's file name may hold a tab
            raise PlanFormatError(f"source must be a string, got {shown(self.source)}")
        for name in ("objective", "status", "source"):  # numpy's str_ (a str subclass) as plain str
            object.__setattr__(self, name, str(getattr(self, name)))
        seconds = self.solve_seconds
        if seconds is not None and not _is_seconds(seconds):
            raise PlanFormatError(f"solve_seconds must be a finite number >= 0, got {shown(seconds)}")
        if seconds is not None and type(seconds) is not float:
            object.__setattr__(self, "solve_seconds", float(seconds))  # as the JSON file will hold it
        self.__dict__["timeline"] = self._replay()
        self._check_claims()
        keep_replay(self)

    def _replay(self) -> Timeline:
        """The simulator's timeline; a ScheduleError names the first structural error or the deadlock.
        Orders are immutable once checked (``as_orders``), so the same object replays the same."""
        kept = kept_replay(self.problem, self.orders)
        if kept is not None:
            return kept
        try:
            return simulate(self.problem, self.orders)
        except ScheduleError:
            errors = structural_errors(self.problem, self.orders)
            if not errors:
                raise
        raise ScheduleError(first_and_count(errors))

    def _check_claims(self) -> None:
        """The bound and status must be possible for the plan's own orders: a bound above the value
        of a plan within the cap, or 'optimal' without a matching bound, would print (and save) a gap
        schedc never proved. Over the cap a cap-aware bound may exceed the value: it holds for
        fitting plans only."""
        what = f"{'makespan' if self.objective == 'makespan' else 'largest span'} {fmt_exact(self.value)}"
        bound = self.lower_bound
        if bound is not None and bound > self.value and self.fits():
            raise ScheduleError(f"lower_bound {fmt_exact(bound)} exceeds the plan's {what}")
        if self.status == "optimal" and bound != self.value:
            shown = None if bound is None else fmt_exact(bound)
            raise ScheduleError(f"status optimal needs lower_bound equal to the plan's {what}, got {shown}")
        if self.status != "heuristic" and not self.fits():  # solver plans always fit
            raise ScheduleError(f"status {self.status} claims a solver's plan within the cap, but "
                                f"{self.violations()[0]}")

    @property
    def timeline(self) -> Timeline:
        """The simulator's replay of the orders, made once as the plan is built (``__post_init__``),
        so every figure a plan shows is the replay's and a plan that cannot replay never exists."""
        return self.__dict__["timeline"]

    @property
    def label(self) -> str:
        """The source as reports and pictures print it: escaped to one line, and "plan" where a
        file's source is empty (a header read " (optimal): ...")."""
        return printable(self.source) or "plan"

    @property
    def makespan(self) -> Fraction:
        """First start to last end over all ranks: the step time when the optimizer step
        synchronises the ranks."""
        return self.timeline.makespan

    @property
    def value(self) -> Fraction:
        """The objective's value: makespan, or the largest per-rank span."""
        return self.timeline.makespan if self.objective == "makespan" else self.timeline.max_span

    @property
    def gap(self) -> Fraction | None:
        """Relative distance to the lower bound: (value - bound) / value."""
        if self.lower_bound is None or self.value == 0:
            return None
        return max(Fraction(0), (self.value - self.lower_bound) / self.value)

    def fits(self) -> bool:
        """Whether every rank stays within its activation cap (``violations`` says where not)."""
        return not self.violations()

    def violations(self) -> list[str]:
        """Cap violations, one line each (structural errors cannot exist: see __post_init__)."""
        return memory_errors(self.problem, self.timeline)

    def save(self, path: str) -> None:
        """``plan_json.save_plan``, here too for convenience (plan_json imports this module)."""
        from schedc.plan_json import save_plan

        save_plan(self, path)
