"""Shared pieces of the ``schedc`` subcommands: outputs and summaries (plan inputs: ``cli_plan_input``).

Stable API for subcommand modules (``cli_solve``, ``cli_profile``, ...):

* ``add_problem_options(parser, role=...)`` then ``problem_from_args(args) -> Problem``: the
  problem options, in ``schedc.cli_problem``.
* ``add_output_options(parser)`` then ``write_and_report(plan, args, report)``: ``-o/--output``
  (plan JSON), ``--csv`` with ``--csv-layout`` (torch compute-only CSV), ``--trace`` (Chrome
  trace JSON), ``--plot`` (PNG/SVG/PDF picture), written as one all-or-nothing set before
  ``report(console)`` prints, then the "wrote" lines (``write_outputs`` and ``print_written`` are
  its two halves); ``check_outputs(args)`` refuses bad output paths early (``write_outputs`` calls it too).
* ``add_plan_argument(parser)`` then ``plan_from_args(args) -> (Plan, note)``: a plan file, JSON or CSV
  (its rows give the structure; problem options the costs and caps), in ``schedc.cli_plan_input``
  with ``csv_input`` / ``reject_problem_options`` for custom readers.
* ``make_console()``: the rich Console every subcommand prints to (no colour when piped).
* ``print_plan_summary(plan, console)`` and ``figures(plan)``: the simulator's numbers.

A subcommand registers with ``parser.set_defaults(func=run)`` where ``run(args) -> int | None``
(None means 0). It raises ``SchedcError`` for any user-facing failure; ``schedc.cli.main``
prints it as ``schedc: error: <message>`` and exits 1.
"""

from __future__ import annotations

import argparse
import contextlib
import itertools
import os
import sys
from collections.abc import Callable
from dataclasses import replace
from fractions import Fraction
from typing import Any

from rich.console import Console
from rich.measure import Measurement
from rich.table import Table

from schedc.cli_once import Once
from schedc.cli_plan_input import is_csv
from schedc.errors import ProblemError, SchedcError, printable, to_stderr
from schedc.exact import exact, fmt, fmt_exact, percent
from schedc.output_paths import check_writable, file_key, is_special_file, write_files
from schedc.plan import Plan
from schedc.plan_json import plan_text
from schedc.problem import Problem
from schedc.torch_csv import LAYOUTS
from schedc.trace import MIN_US_PER_UNIT, US_PER_UNIT
from schedc.write_signals import Terminated

_INPUTS = (("plan", "the input plan"), ("problem", "--problem"))
_OUTPUTS = (("output", "-o"), ("csv", "--csv"), ("trace", "--trace"), ("plot", "--plot"))


# ---- outputs --------------------------------------------------------------------------------


def add_output_options(parser: argparse.ArgumentParser) -> None:
    group = parser.add_argument_group("outputs")
    group.add_argument("-o", "--output", metavar="PLAN.json", action=Once,
                       help="write the plan as schedc JSON")
    group.add_argument("--csv", metavar="FILE", action=Once,
                       help="write torch.distributed.pipelining's compute-only CSV")
    group.add_argument("--csv-layout", choices=LAYOUTS,
                       help="lockstep (default): idle steps as empty cells, for _PipelineScheduleRuntime "
                            "and (no two adjacent stages on one rank: not a V shape, nor p = 1 with v >= 2) "
                            "PipelineScheduleMulti; compact: the orders alone, for _PipelineScheduleRuntime "
                            "only (smaller at large p)")
    group.add_argument("--trace", metavar="FILE", action=Once,
                       help="write a Chrome trace JSON (Perfetto); 1 cost unit = 1000 us unless --trace-unit")
    group.add_argument("--trace-unit", metavar="US",
                       help="microseconds per cost unit in the trace (default 1000; 1 for the microsecond "
                            "costs of schedc profile)")
    group.add_argument("--plot", metavar="FILE", action=Once,
                       help="draw the timeline and each rank's activation memory: .png, .svg or .pdf "
                            "(needs matplotlib: pip install matplotlib)")


def trace_unit(args: argparse.Namespace) -> Fraction:
    """--trace-unit: microseconds per cost unit, a positive number (only with --trace)."""
    given = getattr(args, "trace_unit", None)
    if given is None:
        return Fraction(US_PER_UNIT)
    if not getattr(args, "trace", None):
        raise SchedcError("--trace-unit applies to --trace only")
    unit = exact(given, "--trace-unit")
    if unit < MIN_US_PER_UNIT:  # a smaller one turns the trace's times into zeros
        raise SchedcError(f"--trace-unit must be at least 1e-100, got {fmt_exact(unit)}")
    return unit


def check_outputs(args: argparse.Namespace) -> None:
    """Checks every output option before anything is written (so an error leaves no partial set of
    files, and ``solve`` checks before searching): each must be writable and name a file of its own,
    neither another output nor an input."""
    trace_unit(args)
    if getattr(args, "csv_layout", None) and not getattr(args, "csv", None):
        raise SchedcError("--csv-layout applies to --csv only")
    if getattr(args, "plot", None):
        from schedc.picture import picture_format, require_matplotlib

        picture_format(args.plot)
        require_matplotlib()
    seen = {file_key(getattr(args, name, None)): flag for name, flag in _INPUTS}
    for name, flag in _OUTPUTS:
        path = getattr(args, name, None)
        if path is None:
            continue
        check_writable(path, flag)
        key = file_key(path)
        if key is not None and key in seen:
            raise SchedcError(f"{seen[key]} and {flag} name the same file {path}")
        seen[key] = flag
        _check_name(name, path, getattr(args, "command", None))


def _check_name(name: str, path: str, command: str | None) -> None:
    """An output's name must not pass it off as another format, since ``show``, ``validate`` and
    ``--problem`` go by the name: a CSV only as ``.csv``, JSON never as ``.csv`` or ``.toml`` (a plan
    under another name still reads back in ``show`` and, starting with "{", in ``--problem``)."""
    if name == "csv" and not is_csv(path) and not is_special_file(path):
        raise SchedcError(f"--csv {path}: {_csv_name_advice(path)} (show and validate read any other "
                          "name as a plan JSON)")
    if name == "output" and is_csv(path):
        raise SchedcError(f"-o {path}: -o writes a plan JSON, which show and validate would read as "
                          "a CSV by that name: name it .json (--csv writes torch's CSV)")
    if name == "output" and command != "profile" and path.lower().endswith(".toml"):  # profile's is TOML
        raise SchedcError(f"-o {path}: -o writes a plan JSON, which a .toml name passes off as TOML: "
                          "name it .json")
    if name == "trace" and is_csv(path):
        raise SchedcError(f"--trace {path}: a trace is JSON (Chrome's trace format), which a .csv name "
                          "passes off as torch's CSV, the name show and validate go by: name it .json")


def _csv_name_advice(path: str) -> str:
    """``.csv`` alone is a hidden file with no suffix at all, so "end it in .csv" would not help."""
    name = os.path.basename(path)
    if name.startswith(".") and not os.path.splitext(name)[1]:
        return "a hidden file has no suffix: name it plan.csv, say"
    return "give it a name ending in .csv, such as plan.csv"


def check_outputs_for(problem: Problem, args: argparse.Namespace) -> None:
    """``check_outputs``, and the limits the problem alone decides (the trace's time grid, the
    picture's size), before a plan is searched for or built: a baseline of 1e6 tasks took 24 s
    to build before --plot refused it."""
    check_outputs(args)
    if getattr(args, "trace", None):
        from schedc.trace import check_trace_grid

        check_trace_grid(problem, trace_unit(args))
    if getattr(args, "plot", None):
        from schedc.picture import check_size

        check_size(problem)


def _uncapped_hint(args: argparse.Namespace) -> str:
    """--mem applies where the problem comes from options: a plan JSON carries its own (refused)."""
    plan = getattr(args, "plan", None)
    if plan is not None and not is_csv(plan):
        return "remove or raise the cap in the plan file's problem (its \"mem\"), or "
    return "give --mem none to write it uncapped, or "


def write_outputs(plan: Plan, args: argparse.Namespace, built: bool = False) -> list[str]:
    """Writes every output the options ask for, as one set: all texts are rendered first, then
    written all-or-nothing (``write_files``), so a failure leaves no partial set; returns the paths.
    One exception, for a plan ``built`` after the outputs were checked (a search's, a baseline's,
    against a floor only): a trace unit its own length rules out refuses the trace alone, so a long
    search's plan is not lost.
    Commands write before they print their report, so that a reader of stdout that stops early
    (``| head -1``) or a closed stdout does not lose the files."""
    from schedc.picture import picture_bytes, picture_format
    from schedc.torch_csv import csv_text
    from schedc.trace import trace_text

    check_outputs(args)
    if args.output and not plan.fits():  # its own cap would make the file fail validate
        raise SchedcError(f"{printable(plan.source)} does not fit the cap, so nothing was written: "
                          f"{_uncapped_hint(args)}leave out -o (--csv, --trace and --plot carry no cap)")
    scale = trace_unit(args)
    layout = getattr(args, "csv_layout", None) or LAYOUTS[0]
    renders = ((args.output, lambda: plan_text(plan)), (args.csv, lambda: csv_text(plan, layout)),
               (args.trace, lambda: trace_text(plan, scale)),
               (args.plot, lambda: picture_bytes(plan, picture_format(args.plot))))
    items, refused = [], None
    for path, render in renders:
        try:
            items += [(path, render())] if path else []
        except ProblemError as err:  # a unit only the plan's own length rules out, after a search
            if path != args.trace or not built:
                raise
            refused = err
    write_files(items)
    _note_renumbered(plan, args.csv)
    _note_compact(plan, args.csv, layout)
    if refused is not None:
        kept = f"; {', '.join(printable(path) for path, _ in items)} written" if items else ""
        raise SchedcError(f"{refused}; the trace was not written{kept}")
    return [path for path, _ in items]


def _note_renumbered(plan: Plan, csv_path: str | None) -> None:
    """A CSV whose microbatches were renumbered for torch's runners (``torch_numbering``) says so,
    since its tokens then differ from the plan's."""
    from schedc.torch_numbering import renumbering_note

    note = renumbering_note(plan.problem, plan.orders) if csv_path else None
    if note is not None:
        to_stderr(f"schedc: note: {printable(csv_path)}: {note}")


def _note_compact(plan: Plan, csv_path: str | None, layout: str) -> None:
    """A compact CSV that torch's ``PipelineScheduleMulti`` would misread says so as it is written
    (``validate`` said it, ``solve`` wrote it without a word)."""
    from schedc.torch_csv import orders_to_rows
    from schedc.torch_lockstep import lockstep_conflict, shared_neighbours

    if csv_path and layout == "compact" and lockstep_conflict(plan.problem, orders_to_rows(plan.orders)):
        fix = ("neither layout runs there on gloo: two neighbouring stages share a rank" if
               shared_neighbours(plan.problem) else "the default layout, lockstep, keeps them apart")
        to_stderr(f"schedc: note: {printable(csv_path)}: the compact layout is for torch's "
                  "_PipelineScheduleRuntime; PipelineScheduleMulti would pair its sends and receives by "
                  f"column and train wrong gradients, silently ({fix})")


def print_written(paths: list[str], console: Console) -> None:
    """The report's last lines: what ``write_outputs`` wrote."""
    for path in paths:
        console.print(f"wrote {printable(path)}", highlight=False, markup=False)  # a name's escapes shown


def write_and_report(plan: Plan, args: argparse.Namespace, report: Callable[[Console], None],
                     built: bool = False) -> None:
    """The outputs first, then ``report`` and the "wrote" lines: a reader of stdout that stops early
    (``| head -1``) or a closed stdout then keeps the files. A failed write still gets the report
    (a search's result, why a plan does not fit) before its error; a bad path, found without
    writing, fails before it."""
    check_outputs(args)
    try:
        written = write_outputs(plan, args, built)
    except Terminated:  # a second SIGTERM (``search_stops``), or one at a device or FIFO that waits
        to_stderr("schedc: terminated while writing the outputs; files not renamed into place by then "
                  "are left as they were")
        raise
    except SchedcError:
        with contextlib.suppress(SchedcError, OSError):  # the write's error is the one to tell
            report(make_console())
        raise
    console = make_console()
    report(console)
    print_written(written, console)


# ---- printing -------------------------------------------------------------------------------


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
                     "hold for every order, and a longer --time-limit may close the gap)")
    return lines


def print_plan_summary(plan: Plan, console: Console) -> None:
    """Header (source, status, problem) and figures."""
    console.print(f"{printable(plan.source)} ({plan.status}): {plan.problem.describe()}", highlight=False,
                  markup=False)
    for line in figures(plan):
        console.print(line, highlight=False, markup=False)
