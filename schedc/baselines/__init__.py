"""Textbook schedules, each a pure function problem -> per-rank orders.

They are schedc's baselines (what people pick by hand today) and the solver's fallbacks and
warm starts. ``BASELINES`` maps a name to (generator, applicability check).
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass

from schedc.errors import ArgumentError, ProblemError, shown
from schedc.plan import Plan
from schedc.problem import Problem
from schedc.simulate import Orders


@dataclass(frozen=True)
class Baseline:
    """A hand-made schedule: its order generator, and when it applies. Kept as data so the CLI, the
    solver's incumbent and the list scheduler's reference rules all read one registry."""

    name: str
    build: Callable[[Problem], Orders]
    why_not: Callable[[Problem], str | None]
    """None when the schedule applies to the problem, else the reason it does not."""


BASELINES: dict[str, Baseline] = {}


def register(name: str, why_not: Callable[[Problem], str | None]
             ) -> Callable[[Callable[[Problem], Orders]], Callable[[Problem], Orders]]:
    """Decorator: adds the generator under ``name`` to ``BASELINES``, so a schedule module only has
    to be imported to be listed everywhere."""
    def wrap(build: Callable[[Problem], Orders]) -> Callable[[Problem], Orders]:
        BASELINES[name] = Baseline(name, build, why_not)
        return build

    return wrap


def baseline_plan(name: str, problem: Problem) -> Plan:
    """Runs one baseline; an unknown name or a problem it does not fit is a ProblemError."""
    if not isinstance(name, str) or name not in BASELINES:
        raise ProblemError(f"unknown schedule {shown(name)}; choose from {', '.join(BASELINES)}")
    _check_problem(problem)
    reason = BASELINES[name].why_not(problem)
    if reason:
        raise ProblemError(f"{name} does not apply: {reason}")
    from dataclasses import replace

    from schedc.solvers.bounds import lower_bound

    plan = Plan(problem=problem, orders=BASELINES[name].build(problem), source=name)
    # A cap-aware bound holds only for plans within the cap; a baseline over it gets the uncapped one.
    bounded = problem if plan.fits() else replace(problem, mem=())
    return replace(plan, lower_bound=lower_bound(bounded))


def applicable(problem: Problem) -> list[str]:
    """Names of the baselines that apply to ``problem``, in registry order (how they are listed)."""
    _check_problem(problem)
    return [name for name, b in BASELINES.items() if b.why_not(problem) is None]


def _check_problem(problem: object) -> None:
    if not isinstance(problem, Problem):
        raise ArgumentError(f"a baseline needs a Problem, got {type(problem).__name__}")


# Importing the schedules registers them, in the order `applicable` and `compare` list them.
from schedc.baselines import classic, interleaved, zero_bubble, zbv, dualpipev  # noqa: E402,F401,I001
