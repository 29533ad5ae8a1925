"""Plans -> Chrome trace JSON (opens in Perfetto, ui.perfetto.dev, or chrome://tracing).

One track (tid) per rank, named by a ``thread_name`` metadata event; one complete event (ph "X")
per action, named like the seed tables (``F3``, ``I3``) and carrying the stage, microbatch, torch
token and exact start/end in ``args``; one counter track per rank with its activation memory.

Scale: schedc times are cost units (whatever tf/tb/tw are measured in). The trace format counts
microseconds, so one cost unit is written as ``US_PER_UNIT`` = 1000 us by default: a plan with
unit costs reads in milliseconds. Costs measured by ``schedc profile`` are microseconds already:
``--trace-unit 1``. Exact times are kept as strings in each event's args.
"""

from __future__ import annotations

import json
from fractions import Fraction
from typing import Any

from schedc.errors import ArgumentError, ProblemError, SchedcError
from schedc.exact import exact, fmt_exact, to_json
from schedc.output_paths import write_file
from schedc.plan import Plan

US_PER_UNIT = 1000
MIN_US_PER_UNIT = Fraction(1, 10**100)
"""Below it a trace's times could underflow to 0.0 (the largest unit is exact()'s 1e100)."""
PID = 0


def _us(t: Fraction, scale: Fraction) -> float:
    """``float(t * scale)`` without the Fraction product's gcd (a third of a large trace's time):
    Python's int / int is correctly rounded, as float() of the product is."""
    return (t.numerator * scale.numerator) / (t.denominator * scale.denominator)


def trace_events(plan: Plan, scale: Fraction | int = US_PER_UNIT) -> list[dict[str, Any]]:
    """The trace's events: metadata, one X event per action, memory counters."""
    if not isinstance(plan, Plan):
        raise ArgumentError(f"a trace needs a Plan, got {type(plan).__name__}")
    scale = exact(scale, "the trace's microseconds per cost unit")
    if scale < MIN_US_PER_UNIT:  # a negative scale wrote negative durations, a tiny one zeros
        raise ProblemError(f"the trace's microseconds per cost unit must be at least 1e-100, got "
                           f"{fmt_exact(scale)}")
    problem, timeline = plan.problem, plan.timeline
    events: list[dict[str, Any]] = [
        {"name": "process_name", "ph": "M", "pid": PID, "args": {"name": f"schedc {plan.source}"}},
    ]
    for r, slots in enumerate(timeline.slots):
        meta = {"ph": "M", "pid": PID, "tid": r}
        events.append({"name": "thread_name", **meta, "args": {"name": f"rank {r}"}})
        events.append({"name": "thread_sort_index", **meta, "args": {"sort_index": r}})
        for slot in slots:
            a = slot.action
            events.append({
                "name": f"{a.kind}{a.mb}", "cat": a.kind, "ph": "X", "pid": PID, "tid": r,
                "ts": _us(slot.start, scale), "dur": _us(slot.end - slot.start, scale),
                "args": {"stage": a.stage, "mb": a.mb, "token": str(a),
                         "start": to_json(slot.start), "end": to_json(slot.end)},
            })
        for t, level in timeline.memory_curve(problem, r):
            events.append({"name": f"rank {r} activation", "ph": "C", "pid": PID, "ts": _us(t, scale),
                           "args": {"activation": float(level)}})
    return events


def trace_dict(plan: Plan, scale: Fraction | int = US_PER_UNIT) -> dict[str, Any]:
    return {
        "traceEvents": trace_events(plan, scale),
        "displayTimeUnit": "ms",
        "otherData": {"problem": plan.problem.describe(), "source": plan.source,
                      "makespan": to_json(plan.makespan), "us_per_cost_unit": to_json(Fraction(scale))},
    }


def trace_text(plan: Plan, scale: Fraction | int = US_PER_UNIT) -> str:
    """The trace file's whole text, rendered before any file is touched."""
    return json.dumps(trace_dict(plan, scale)) + "\n"


def write_trace(plan: Plan, path: str, scale: Fraction | int = US_PER_UNIT) -> None:
    """Writes the trace all-or-nothing, so a failure never leaves an empty or truncated trace."""
    text = trace_text(plan, scale)
    try:
        write_file(path, text)
    except OSError as err:
        raise SchedcError(f"cannot write {path}: {err.strerror}") from None
