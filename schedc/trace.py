"""Plans -> Chrome trace JSON (opens in Perfetto, ui.perfetto.dev, or chrome://tracing).

One track (tid) per rank, named by a ``thread_name`` metadata event; one complete event (ph "X")
per action, named as ``show`` labels it (``F3``, ``I3``; ``F3a``, ``F3b`` for a rank's first and
second stage where it holds several) and carrying the stage, microbatch, torch
token and exact start/end in ``args``; one counter track per rank with its activation memory.

Scale: schedc times are cost units (whatever tf/tb/tw are measured in). The trace format counts
microseconds, so one cost unit is written as ``US_PER_UNIT`` = 1000 us by default: a plan with
unit costs reads in milliseconds. Costs measured by ``schedc profile`` are microseconds already:
``--trace-unit 1``. Exact times are kept as strings in each event's args.

Times are written on a grid of whole nanoseconds, each time point rounded once: Perfetto reads
``ts`` and ``dur`` as ``llround(us * 1000)`` nanoseconds, and a start and a duration rounded apart
made a task end a nanosecond after the next one on its rank started (115 of 200 random baseline
plans), which Perfetto nests wrongly. A plan the grid cannot hold is refused: one whose tasks would
last under a nanosecond (a task rounded at both ends can then come out as nothing), or that would
run past 2**50 ns (about 13 days), near where Perfetto's ``llround(us * 1000)`` of a float stops
giving back every whole nanosecond (from 2**52 some do not).
"""

from __future__ import annotations

import json
from collections.abc import Iterator
from decimal import ROUND_CEILING, ROUND_FLOOR, Context, Decimal
from fractions import Fraction
from numbers import Real
from typing import Any

from schedc.errors import ArgumentError, ProblemError, SchedcError, shown
from schedc.exact import MAX_MAGNITUDE, exact, fmt, fmt_exact, fmt_magnitude, to_json
from schedc.output_paths import check_suffix, write_file
from schedc.plan import Plan
from schedc.problem import Problem
from schedc.show import label

US_PER_UNIT = 1000
MIN_US_PER_UNIT = Fraction(1, 10**100)
"""Below it a trace's times could underflow to 0.0 (the largest unit is exact()'s 1e100)."""
MAX_NS = 2**50
"""The last nanosecond a trace may reach (see the module doc)."""
PID = 1
"""Not 0, which Perfetto treats as the kernel's (google/perfetto#394)."""
FIRST_TID = 2
"""Rank r's track is tid r + 2: Perfetto builds of 2025 merged tids 0 and 1 of a JSON trace (fixed
by google/perfetto#2278), and a tid equal to the pid is where its parser puts events without one."""


def _ns(t: Fraction, scale: Fraction) -> int:
    """``t`` cost units as the nearest whole nanosecond, without the Fraction product's gcd (a
    third of a large trace's time)."""
    num, den = 2000 * t.numerator * scale.numerator, t.denominator * scale.denominator
    return (num + den) // (2 * den)


def _us(ns: int) -> float:
    return ns / 1000


def check_trace_grid(problem: Problem, scale: Fraction, makespan: Fraction | None = None) -> None:
    """The nanosecond grid holds every task of ``problem`` and, given, a plan of that makespan (see
    the module doc); before any plan exists (``solve``'s search, a baseline's build) a unit that
    stretches ``_floor`` past the grid, which no plan fits."""
    durations = (problem.duration(k, s) for s in range(problem.num_stages) for k in problem.kinds)
    shortest = min((d for d in durations if d > 0), default=None)
    least = None if shortest is None else max(Fraction(1, 1000) / shortest, MIN_US_PER_UNIT)
    most = Fraction(MAX_NS, 1000) / makespan if makespan else None
    floor = None if makespan else _floor(problem)
    span = makespan or floor
    ceiling = Fraction(MAX_NS, 1000) / span if span else None
    where = f"{_size(scale)} microseconds per cost unit"
    if least is not None and scale < least:
        raise ProblemError(f"at {where} the trace would show its shortest task, {fmt(shortest)}, as "
                           f"nothing (under a nanosecond): {_units_needed(least, most, floor)}")
    if ceiling is not None and scale > ceiling:  # before any plan: past it at the floor
        raise ProblemError(f"at {where} the trace would run past 2**50 nanoseconds, where its float times "
                           f"lose whole nanoseconds: {_units_needed(least, most, floor)}")


def _floor(problem: Problem) -> Fraction:
    """A length no plan of ``problem`` is under: one microbatch's path and the busiest rank's work
    (``solvers.bounds`` terms 1 and 2; not the caps' terms, which a baseline may break). One
    microbatch's chain alone let p=4 m=8 take a unit its work (30, not 8) rules out, refused only
    after the search."""
    from schedc.solvers.bounds import critical_path, rank_bound

    return max(critical_path(problem), rank_bound(problem))


def _size(value: Fraction, rounding: str | None = None, digits: int = 3) -> str:
    """A unit as given where it is short (1000, 0.5), else its magnitude (1.13e+12), rounded
    ``rounding`` (decimal.ROUND_CEILING for a least unit, ROUND_FLOOR for a most) where it is
    advice: rounded to nearest, the "at most 8.07e+10" a tester then gave was refused."""
    text = fmt_exact(value)
    if len(text) <= 12:
        return text
    if rounding is None or value >= Fraction(10) ** 300:
        return fmt_magnitude(value)
    return f"{float(_rounded(value, rounding, digits)):.{digits}g}"


def _rounded(value: Fraction, rounding: str, digits: int) -> Decimal:
    context = Context(prec=digits, rounding=rounding)
    return context.divide(Decimal(value.numerator), Decimal(value.denominator))


def _units_needed(least: Fraction | None, most: Fraction | None, floor: Fraction | None) -> str:
    """The advice: the units that fit, ``most`` the largest the plan fits in the grid, or before
    any plan exists the largest a plan of length ``floor`` fits."""
    ceiling = most or (Fraction(MAX_NS, 1000) / floor if floor else None)
    if least is not None and ceiling is not None and least > ceiling:
        return "no unit holds both its shortest task and its length (costs too far apart for a trace)"
    if least is not None and least > MAX_MAGNITUDE:
        needs = _size(least, ROUND_CEILING)
        return f"no unit up to 1e100 holds it (it needs {needs}): costs too small for a trace"
    digits = _digits_apart(least, most or ceiling)
    low = "" if least is None else f"at least {_size(least, ROUND_CEILING, digits)}"
    high = f"at most {_size(most, ROUND_FLOOR, digits)}" if most is not None else "" if ceiling is None \
        else f"at most {_size(ceiling, ROUND_FLOOR, digits)} (no plan is shorter than {_size(floor)}; a " \
        "plan's own length allows less)"
    return f"give a unit (--trace-unit; write_trace's scale=) of {' and '.join(x for x in (low, high) if x)}"


def _digits_apart(least: Fraction | None, most: Fraction | None) -> int:
    """Significant digits that keep the advised range's ends in order once rounded inward (3, unless
    the range is narrower: a reviewer's "at least 1/7000 and at most 0.000142")."""
    if least is None or most is None:
        return 3
    for digits in range(3, 18):
        if _rounded(least, ROUND_CEILING, digits) <= _rounded(most, ROUND_FLOOR, digits):
            return digits
    return 17


def trace_scale(scale: object) -> Fraction:
    """The unit as a Fraction: a number or its text (``exact``); another type is an ArgumentError,
    as for every library argument of the wrong type (None was a ProblemError)."""
    if isinstance(scale, bool) or not isinstance(scale, Real | Decimal | str):
        raise ArgumentError(f"the trace's microseconds per cost unit must be a number, got {shown(scale)}")
    return exact(scale, "the trace's microseconds per cost unit")


def trace_events(plan: Plan, scale: Fraction | int = US_PER_UNIT) -> list[dict[str, Any]]:
    """The trace's events: metadata, one X event per action, memory counters."""
    return list(_events(plan, scale))


def _events(plan: Plan, scale: Fraction | int) -> Iterator[dict[str, Any]]:
    """``trace_events`` one at a time, checked before the first: ``trace_text`` keeps each event's
    text alone (a list of a million events' dicts took gigabytes)."""
    if not isinstance(plan, Plan):
        raise ArgumentError(f"a trace needs a Plan, got {type(plan).__name__}")
    scale = trace_scale(scale)
    if scale < MIN_US_PER_UNIT:  # a negative scale wrote negative durations, a tiny one zeros
        raise ProblemError(f"the trace's microseconds per cost unit must be at least 1e-100, got "
                           f"{fmt_exact(scale)}")
    check_trace_grid(plan.problem, scale, plan.makespan)
    return _rank_events(plan, scale)


def _rank_events(plan: Plan, scale: Fraction) -> Iterator[dict[str, Any]]:
    problem, timeline = plan.problem, plan.timeline
    yield {"name": "process_name", "ph": "M", "pid": PID, "args": {"name": f"schedc {plan.source}"}}
    for r, slots in enumerate(timeline.slots):
        meta = {"ph": "M", "pid": PID, "tid": FIRST_TID + r}
        yield {"name": "thread_name", **meta, "args": {"name": f"rank {r}"}}
        yield {"name": "thread_sort_index", **meta, "args": {"sort_index": r}}
        for slot in slots:
            a, start = slot.action, _ns(slot.start, scale)
            yield {
                "name": label(problem, a), "cat": a.kind, "ph": "X", "pid": PID, "tid": FIRST_TID + r,
                "ts": _us(start), "dur": _us(_ns(slot.end, scale) - start),
                "args": {"stage": a.stage, "mb": a.mb, "token": str(a),
                         "start": to_json(slot.start), "end": to_json(slot.end)},
            }
        for t, level in timeline.memory_curve(problem, r):
            # Perfetto names a counter track "<name> <arg>": "rank 0 activation"
            yield {"name": f"rank {r}", "ph": "C", "pid": PID, "ts": _us(_ns(t, scale)),
                   "args": {"activation": float(level)}}


def trace_dict(plan: Plan, scale: Fraction | int = US_PER_UNIT) -> dict[str, Any]:
    """The whole trace; ``scale`` is read once, as the events read it (a numpy float raised from
    ``Fraction`` here, and 0.1 was recorded as its binary fraction)."""
    events = trace_events(plan, scale)
    return {"traceEvents": events, **_trailer(plan, trace_scale(scale))}


def _trailer(plan: Plan, scale: Fraction) -> dict[str, Any]:
    # no "displayTimeUnit": "ms" is the default, and Perfetto before late 2021 read the key as the
    # unit of ts, drawing a small trace 1000 times too long
    return {"otherData": {"problem": plan.problem.describe(), "source": plan.source,
                          "makespan": to_json(plan.makespan), "us_per_cost_unit": to_json(scale)}}


def trace_text(plan: Plan, scale: Fraction | int = US_PER_UNIT) -> str:
    """The trace file's whole text, rendered before any file is touched: ``json.dumps(trace_dict())``
    written an event at a time, which holds each event's text rather than its dict."""
    events = _events(plan, scale)
    trailer = json.dumps(_trailer(plan, trace_scale(scale)))
    return '{"traceEvents": [' + ", ".join(map(json.dumps, events)) + "], " + trailer[1:] + "\n"


def write_trace(plan: Plan, path: str, scale: Fraction | int = US_PER_UNIT) -> None:
    """Writes the trace all-or-nothing, so a failure never leaves an empty or truncated trace."""
    check_suffix(path, "write_trace", "a trace (Chrome's trace format)", csv=False)
    text = trace_text(plan, scale)
    try:
        write_file(path, text)
    except OSError as err:
        raise SchedcError(f"cannot write {path}: {err.strerror}") from None
