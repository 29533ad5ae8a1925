"""What the ``schedc`` subcommands print: the console, tables without padding, and a plan's
figures (``print_plan_summary(plan, console)``, ``figures(plan)``: the simulator's numbers)."""

from __future__ import annotations

import itertools
import sys
from collections.abc import Callable
from dataclasses import replace
from fractions import Fraction
from typing import Any

from rich.console import Console
from rich.measure import Measurement
from rich.table import Table

from schedc.errors import SchedcError
from schedc.exact import fmt, fmt_exact, percent
from schedc.plan import Plan
from schedc.problem import Problem


def make_console(file: Any = None) -> Console:
    """A Console on stdout (looked up now, so redirections apply); plain text when not a tty, and
    then wide enough that a table of p = 8 peaks does not wrap (rich would assume 80 columns)."""
    out = file or sys.stdout
    if out is None:  # started with stdout closed (`>&-`): Python then has no sys.stdout
        raise SchedcError("stdout is closed, so the report cannot be printed (output files, if any, "
                          "are written before it)")
    width = None if out.isatty() else 132
    return Console(file=out, highlight=False, soft_wrap=True, width=width)


MAX_TABLE_WIDTH = 100_000
"""Width to measure a table's least width against (rich clamps a measurement to the width given)."""


def print_table(console: Console, table: Table) -> None:
    """A rich table without the spaces rich pads its lines and blank edges with: the printed text
    is then what the README shows, and diffs of saved reports hold no trailing blanks. Below its
    least width rich drops whole columns (compare's peaks under 58 columns): it is printed at
    that width instead, and the terminal wraps its lines."""
    least = Measurement.get(console, console.options.update(width=MAX_TABLE_WIDTH), table).minimum
    width = console.width
    console.width = max(width, least)
    try:
        with console.capture() as captured:
            console.print(table)
    finally:
        console.width = width
    for line in captured.get().splitlines():
        console.print(line.rstrip(), markup=False, highlight=False)


def _bound_scope(plan: Plan) -> str:
    """What the bound of a plan over its cap holds for. A baseline's is the uncapped one (a capped
    bound could exceed its makespan); "with or without the cap" alone read as if the cap cost
    nothing where ``compare`` printed a higher bound within it, so that one is named beside it. A
    bound from a file may count the cap."""
    from schedc.solvers.bounds import lower_bound, span_lower_bound
    from schedc.solvers.feasibility import min_feasible_cap

    bound = lower_bound if plan.objective == "makespan" else span_lower_bound
    uncapped = bound(replace(plan.problem, mem=()))
    if plan.lower_bound > uncapped:
        return "for plans within the cap"
    need = min_feasible_cap(plan.problem)
    if any(cap is not None and cap < need for cap in plan.problem.mem):
        return f"without the cap; no plan fits a cap below {fmt_exact(need)}"
    capped = bound(plan.problem)
    if capped > plan.lower_bound:
        return f"without the cap; {fmt(capped)} for plans within it"
    return "with or without the cap"


def fastest(plans: list[Plan], value: Callable[[Plan], Fraction]) -> Plan:
    """The plan of least ``value``; on a tie the one that holds least (its highest peak, then its
    ranks' peaks summed): at tw = 0 gpipe, 1f1b and zb-h1 all take 22 for p=4 m=8, and the first
    registered, gpipe at 8 per rank, was named the best."""
    return min(plans, key=lambda p: (value(p), max(p.timeline.peak_mem), sum(p.timeline.peak_mem)))


def peaks(plan: Plan) -> str:
    pairs = zip(plan.timeline.peak_mem, plan.problem.mem, strict=True)
    return per_rank([fmt_peak(x, cap) for x, cap in pairs])


PER_RANK_IN_FULL = 16
"""Up to this many ranks a per-rank line lists every value; beyond, runs of one value are counted
('1 ×200') where that is shorter: a capped plan's peaks mostly sit at the cap, and p = 200 printed
a line of 200 numbers."""


def per_rank(texts: list[str]) -> str:
    """Per-rank values in rank order: every one, or runs of one value as 'value ×count'."""
    every = " ".join(texts)
    if len(texts) <= PER_RANK_IN_FULL:
        return every
    runs = [(text, len(list(group))) for text, group in itertools.groupby(texts)]
    counted = ", ".join(text if count == 1 else f"{text} ×{count}" for text, count in runs)
    return counted if len(counted) < len(every) else every


def _more(count: int) -> str:
    return f" (+{count} more rank{'s' if count > 1 else ''})"


def fmt_peak(peak: Fraction, cap: Fraction | None) -> str:
    """A peak rounded for reading, unless the rounding would make it look equal to its cap (which
    ``caps`` prints exactly): "peak 3 (cap: 3)" beside "does NOT fit" reads as a contradiction.
    A peak at its cap is written as the cap is: "2.667 (cap: 8/3)" read as just under it."""
    if cap is not None and peak == cap:
        return fmt_exact(peak)
    text = fmt(peak)
    if cap is not None and text.lstrip("~") == fmt(cap):  # "~3" beside a cap of 3 hides the excess
        return fmt_exact(peak)
    return text


def caps(problem: Problem) -> str:
    """The caps as given, exactly: a cap rounded for display could look equal to a peak above it."""
    if all(c is None for c in problem.mem):
        return "none"
    if len(set(problem.mem)) == 1:
        return fmt_exact(problem.mem[0])
    return per_rank(["none" if c is None else fmt_exact(c) for c in problem.mem])


def figures(plan: Plan) -> list[str]:
    """The simulator's figures of a plan, one fact per line, plain text."""
    t = plan.timeline
    lines = [
        f"makespan {fmt(t.makespan)}   bubble {percent(t.bubble)}   largest rank span {fmt(t.max_span)}",
        f"peak activation per rank: {peaks(plan)}   (cap: {caps(plan.problem)})",
    ]
    violations = plan.violations()
    if violations:
        lines.append(f"does NOT fit the cap: {violations[0]}" + (
            _more(len(violations) - 1) if len(violations) > 1 else ""))
    what = " on the largest rank span" if plan.objective == "span" else ""  # the value it bounds
    if plan.lower_bound is not None and violations:  # the bound may count the cap this plan breaks
        lines.append(f"lower bound{what} {fmt(plan.lower_bound)} ({_bound_scope(plan)})")
    elif plan.lower_bound is not None:
        gap = "" if plan.gap is None else f"   gap {percent(plan.gap)}"
        lines.append(f"lower bound{what} {fmt(plan.lower_bound)}{gap}")
    if plan.objective == "span" and plan.status == "feasible":  # why a run can end early with a gap
        lines.append("(the span search keeps each stage's microbatches in index order; the bounds "
                     "hold for every order, and a longer search, solve's --time-limit, may close the gap)")
    return lines


def print_plan_summary(plan: Plan, console: Console) -> None:
    """Header (source, status, problem) and figures."""
    console.print(f"{plan.label} ({plan.status}): {plan.problem.describe()}", highlight=False,
                  markup=False)
    for line in figures(plan):
        console.print(line, highlight=False, markup=False)
