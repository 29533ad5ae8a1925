"""The output options of the ``schedc`` subcommands, checked early and written as one set.

``add_output_options(parser)`` then ``write_and_report(plan, args, report)``: ``-o/--output`` (plan
JSON), ``--csv`` with ``--csv-layout`` (torch compute-only CSV), ``--trace`` (Chrome trace JSON),
``--plot`` (PNG/SVG/PDF picture), written as one all-or-nothing set before ``report(console)``
prints, then the "wrote" lines (``write_outputs`` and ``print_written`` are its two halves);
``check_outputs(args)`` refuses bad output paths early (``write_outputs`` calls it too).

A subcommand registers with ``parser.set_defaults(func=run)`` where ``run(args) -> int | None``
(None means 0). It raises ``SchedcError`` for any user-facing failure; ``schedc.cli.main``
prints it as ``schedc: error: <message>`` and exits 1. Problem options: ``schedc.cli_problem``;
plan inputs: ``schedc.cli_plan_input``; the printed summary: ``schedc.cli_summary``.
"""

from __future__ import annotations

import argparse
import contextlib
import os
from collections.abc import Callable
from fractions import Fraction

from rich.console import Console

from schedc.cli_once import Once
from schedc.cli_plan_input import is_csv
from schedc.cli_summary import make_console
from schedc.errors import ProblemError, SchedcError, printable, to_stderr
from schedc.exact import exact, fmt_exact
from schedc.output_paths import check_writable, file_key, is_special_file, write_files
from schedc.plan import Plan
from schedc.plan_json import plan_text
from schedc.problem import Problem
from schedc.torch_csv import LAYOUTS
from schedc.trace import MIN_US_PER_UNIT, US_PER_UNIT
from schedc.write_signals import Terminated

_INPUTS = (("plan", "the input plan"), ("problem", "--problem"))
_OUTPUTS = (("output", "-o"), ("csv", "--csv"), ("trace", "--trace"), ("plot", "--plot"))


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
        raise SchedcError(f"{plan.label} does not fit the cap, so nothing was written: "
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
