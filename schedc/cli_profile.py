"""The ``schedc profile`` subcommand: measure stage costs, activation bytes and P2P latency, write a
problem file.

It closes the loop from hardware to plan: ``schedc profile ... -o problem.toml`` then
``schedc solve --problem problem.toml``. Costs are integer microseconds per microbatch and stage.
From the activation bytes it writes the measured ``w_mem`` (unless one is given) and, with
``--activation-budget``, the caps that fit the budget.
torch is imported inside the command only, so ``schedc --help`` stays torch-free.
"""

from __future__ import annotations

import argparse
import contextlib
import json
import os
import sys
from collections.abc import Callable, Sequence
from pathlib import Path
from types import ModuleType
from typing import TYPE_CHECKING, Any

from schedc.byte_sizes import format_bytes, parse_size
from schedc.cli_once import Once, OnceValue
from schedc.cli_outputs import check_outputs
from schedc.cli_problem import add_problem_options, nonempty, problem_from_args, problem_overrides
from schedc.cli_summary import make_console, print_table
from schedc.errors import TORCH_INSTALL, ProblemError, SchedcError, counted, to_stderr
from schedc.exact import exact, fmt_exact, plain_digits
from schedc.layer_ranges import format_layer_ranges, parse_layer_ranges
from schedc.output_paths import is_special_file, write_files
from schedc.problem import Problem
from schedc.problem_io import problem_file_fields, problem_to_dict, problem_toml
from schedc.profile_busy import busy_note, load_average, p2p_busy_note
from schedc.profile_failures import is_out_of_memory, module_failure, out_of_memory_in_one_line
from schedc.profile_model import DEFAULT_MICROBATCH, ModelFlags, model_of, samples

if TYPE_CHECKING:
    from schedc.runtime.activation_bytes import StageBytes
    from schedc.runtime.profile import Profile
    from schedc.runtime.stages import Chain

MODELS = ("mlp", "transformer")
_COUNTS = ("layers", "width", "heads", "seq", "vocab", "microbatch", "repeats")
DEMO_DEFAULTS = {"model": "mlp", "layers": 8, "width": 256, "heads": 4, "seq": 64, "vocab": 1000}
"""The demo models' flags, None until ``_check_options`` has seen which were given."""
TRANSFORMER_ONLY = ("heads", "seq", "vocab")
MAX_THREADS = 1024
"""--threads above it is refused: torch.set_num_threads(50000) then a matmul kills the process."""
MAX_REPEATS = 10_000
"""--repeats above it is refused: each repeat times every stage and five P2P round trips, and a
count of 1e20 ran on without end."""


def register(subparsers: argparse._SubParsersAction) -> None:
    """Adds ``schedc profile``: its options are the model's (demo or ``--module``) and the timing's;
    problem options come from ``cli_problem`` as for every command."""
    p = subparsers.add_parser(
        "profile", help="measure tf/tb/tw and activation bytes per stage and P2P latency; write a problem "
                        "file (needs torch)",
        description="Times F, I and W of every stage on one microbatch (the runtime's own autograd "
                    "calls, median of --repeats), the activation bytes each stage holds per microbatch, "
                    "and the one-way gloo latency of a boundary tensor, "
                    "and writes a problem file for `schedc solve --problem FILE`. Costs are in "
                    "microseconds. --p, --m (and --v, --placement, --no-split, --mem, --w-mem) "
                    "describe the pipeline; --comm skips the latency measurement, and with it "
                    "the per-message send and receive call costs the measured run adds to tf and tb.")
    model = p.add_argument_group("model (a built-in demo, or your own)")
    model.add_argument("--model", choices=MODELS, help="built-in demo model (default mlp)")
    model.add_argument("--layers", type=_whole, help="blocks of the demo model (default 8; an mlp block is 2 "
                       "layers, a Linear and a Tanh; a transformer block 1, plus an embedding and a head)")
    model.add_argument("--width", type=_whole, help="hidden width of the demo model (default 256)")
    model.add_argument("--heads", type=_whole, help="attention heads (transformer; default 4)")
    model.add_argument("--seq", type=_whole, help="sequence length (transformer; default 64)")
    model.add_argument("--vocab", type=_whole, help="vocabulary (transformer; default 1000)")
    model.add_argument("--module", metavar="PKG.MOD:FUNC", type=nonempty, action=OnceValue,
                       help="a function returning the model's layers (cut into p*v stages, as evenly as "
                            "possible unless --bounds), (layers, example_microbatch) or (layers, "
                            "example_microbatch, loss_fn, target), which times the loss too; replaces "
                            "--model")
    model.add_argument("--bounds", metavar="START:END,...", type=parse_layer_ranges,
                       help="the stages' layer ranges [start, end) in layer order, one per stage "
                            "(0:3,3:8,...; layers, not --layers' blocks): uneven stages, measured as "
                            "trained; give split_stages the same bounds= (default: as even as possible, "
                            "split_stages' default)")
    model.add_argument("--input-shape", metavar="D1,D2,...", type=nonempty,
                       help="per-sample input shape for --module")
    model.add_argument("--input-dtype", type=nonempty,
                       help="input dtype for --module (default float32, drawn from a normal distribution; "
                            "int64, ...: all zeros, as token ids of 0; return (layers, example) for other "
                            "inputs)")
    model.add_argument("--microbatch", type=_whole,
                       help=f"samples per microbatch (default {DEFAULT_MICROBATCH}; a --module that returns "
                            "its own example microbatch sets it)")
    p.add_argument("--repeats", type=_whole, default=10,
                   help="timed repeats per stage; the median counts (default 10)")
    p.add_argument("--threads", type=_whole, help="torch intra-op threads (default: torch's choice)")
    p.add_argument("--autocast", choices=("bfloat16", "float16"),
                   help="measure times and bytes under torch.autocast (CPU) to this dtype, as steps run "
                        "under it will (default: none, float32)")
    p.add_argument("-o", "--output", metavar="FILE", action=Once,
                   help="problem file (.toml or .json; times in microseconds); default stdout")
    p.add_argument("--activation-budget", metavar="SIZE", type=parse_size,
                   help="bytes each rank may hold in activations (40GiB, 512MB, 1e9): writes the caps "
                        "that fit it, from each rank's measured activation bytes per microbatch (instead "
                        "of --mem)")
    add_problem_options(p, role="profile")
    p.set_defaults(func=_run)


def _whole(text: str) -> int:
    """An integer flag as written: int() alone reads 4_0 as 40 and full-width digits as ASCII ones."""
    try:
        return int(plain_digits(text, "value"))
    except ValueError:
        raise argparse.ArgumentTypeError(f"must be an integer in ASCII digits, got {text!r}") from None


def _check_options(args: argparse.Namespace) -> None:
    """Counts and sizes must be positive, and -o writable, before torch builds and times anything:
    torch would build empty layers, or fail with a traceback, or the measurement would be lost."""
    for name in _COUNTS:
        if getattr(args, name) is not None and getattr(args, name) < 1:
            raise ProblemError(f"--{name} must be >= 1, got {getattr(args, name)}")
    if args.threads is not None and not 1 <= args.threads <= MAX_THREADS:  # torch crashes far above
        raise ProblemError(f"--threads must be within [1, {MAX_THREADS}], got {args.threads}")
    if args.repeats > MAX_REPEATS:
        raise ProblemError(f"--repeats must be within [1, {MAX_REPEATS:,}], got {args.repeats}")
    for flag, given in (("--input-shape", args.input_shape), ("--input-dtype", args.input_dtype)):
        if given and not args.module:
            raise SchedcError(f"{flag} describes the input of a --module; the demo models make their own")
    _demo_flags(args)
    if args.model == "transformer" and not args.module and args.width % args.heads:
        raise ProblemError(f"--width {args.width} must be a multiple of --heads {args.heads} (transformer)")
    named = args.output and not is_special_file(args.output)  # /dev/null takes any format
    if named and Path(args.output).suffix.lower() not in (".toml", ".json"):  # x.yaml held TOML
        raise SchedcError(f"-o {args.output}: profile writes a problem file as TOML or JSON: name it "
                          ".toml or .json")
    check_outputs(args)  # writable, and not the --problem file it reads


def _demo_flags(args: argparse.Namespace) -> None:
    """Refuses demo-model flags that would be ignored (any with --module, the transformer's with the
    MLP), then fills in the defaults of the rest."""
    given = [name for name in DEMO_DEFAULTS if getattr(args, name) is not None]
    if args.module and given:
        raise SchedcError(f"--{given[0]} describes a demo model; --module {args.module} replaces it: drop "
                          "the flag")
    unused = [name for name in TRANSFORMER_ONLY if name in given]
    if unused and args.model != "transformer":
        raise SchedcError(f"--{unused[0]} applies to --model transformer only")
    for name, default in DEMO_DEFAULTS.items():
        if getattr(args, name) is None:
            setattr(args, name, default)


def _import_torch() -> ModuleType:
    """torch, or a one-line error: ``pip install .`` installs the solver without it."""
    try:
        import torch
    except ModuleNotFoundError as err:
        if err.name != "torch":  # a module torch needs
            raise SchedcError(f"profile: torch is installed but failed to import ({err})") from None
        raise SchedcError(f"profile needs torch: {TORCH_INSTALL}") from None
    except ImportError as err:  # installed, but it could not load (a library, ulimit -v)
        if isinstance(err.__cause__ or err.__context__, KeyboardInterrupt):
            raise KeyboardInterrupt from None  # Ctrl-C inside torch's C++ import
        why = str(err).splitlines()[0] if str(err).strip() else type(err).__name__
        raise SchedcError(f"profile: torch is installed but failed to import ({why})") from None
    return torch


def _run(args: argparse.Namespace) -> int:
    given = problem_overrides(args)
    if args.activation_budget is not None and "mem" in given:
        raise SchedcError("give --mem or --activation-budget, not both: the budget sets the caps")
    budget_caps = ("mem",) if args.activation_budget is not None else ()
    measured_here = ("stage_costs", "tf", "tb", "tw", *budget_caps)  # a file's, set anew here
    problem = problem_from_args(args, replaced=measured_here)
    _check_options(args)
    if args.bounds is not None and len(args.bounds) != problem.num_stages:  # before torch's seconds
        raise SchedcError(f"--bounds: {counted(len(args.bounds), 'layer range')} given for the p*v = "
                          f"{problem.num_stages} stages: give one per stage")
    file_fields = problem_file_fields(args.problem) if args.problem else {}  # read once
    _note_replaced(args, file_fields, problem, "comm" in given, "mem" in given)

    prof, example, loss_fn, bounds = _measure(args, problem, given)
    if args.module and loss_fn is None:  # once measured: a failure's line stays alone
        to_stderr(f"schedc: note: --module {args.module} gives no loss: the last stage's backward starts "
                  "from ones and no loss is timed; return (layers, example, loss_fn, target) to time it")
    measured = _with_given(prof, given, args.activation_budget, _w_mem_given(given, file_fields))
    text = _file_text(args, measured, prof.activation_bytes, example, bounds)
    if args.bounds and _as_json(args):  # where the header would name the cut
        to_stderr("schedc: note: a JSON problem file has no header to record the cut: give split_stages "
                  f"bounds={bounds}, as --bounds measured")
    if not measured.split and any(cap is not None for cap in measured.mem):  # a JSON file has no header
        to_stderr("schedc: note: a --no-split profile's units count what F holds and it measures no w_mem: "
                  "its caps are for unsplit plans; profile without --no-split for split ones")
    if args.output:
        write_files([(args.output, text)])  # all-or-nothing: a full disk keeps the old file whole
        _print(measured, prof.activation_bytes, args.output, comm_given="comm" in given)  # says "wrote"
    else:
        print(text, end="")
    return 0


def _measure(args: argparse.Namespace, problem: Problem, given: dict[str, Any]
             ) -> tuple[Profile, object, Callable | None, list[tuple[int, int]]]:
    """The model's stages timed and sized (``runtime.profile``): the profile, the example microbatch,
    the loss function and the stages' layer ranges."""
    torch = _import_torch()
    from schedc.runtime.stages import Chain, stage_bounds

    if args.threads:
        torch.set_num_threads(args.threads)
    load, cores = load_average(), os.cpu_count() or 1
    p2p = p2p_busy_note(load, cores) if problem.p > 1 and "comm" not in given else None
    for note in (busy_note(torch.get_num_threads(), load, cores), p2p):
        if note:
            to_stderr(f"schedc: note: {note}")
    # the user's model may print: to stderr, so that stdout carries the problem file alone
    with out_of_memory_in_one_line(), contextlib.redirect_stdout(sys.stderr):
        layers, example, loss_fn, target = model_of(ModelFlags.from_args(args))
        if len(layers) < problem.num_stages:
            source = f"--module {args.module}" if args.module else \
                f"--model {args.model} with --layers {args.layers}, a block being {_block(args.model)}"
            count = f"{len(layers)} layer{'s' if len(layers) != 1 else ''}"
            raise SchedcError(f"the model ({source}) has {count}, fewer than the p*v = "
                              f"{problem.num_stages} stages to cut it into")
        bounds = stage_bounds(len(layers), problem.num_stages) if args.bounds is None else \
            _given_bounds(len(layers), problem, args.bounds)
        stages = [Chain(*layers[a:b]) for a, b in bounds]
        prof = _profile(args, stages, example, problem, loss_fn, target, comm_given="comm" in given)
    return prof, example, loss_fn, bounds


def _given_bounds(count: int, problem: Problem, bounds: tuple[tuple[int, int], ...]) -> list[tuple[int, int]]:
    """--bounds checked against the model's layers and the p*v stages (the runtime's check)."""
    from schedc.runtime.stages import check_bounds

    try:
        return check_bounds(count, problem.num_stages, bounds)
    except SchedcError as err:
        raise SchedcError(f"--bounds: {err}") from None


def _file_text(args: argparse.Namespace, measured: Problem, held: tuple[StageBytes, ...], example: object,
               bounds: list[tuple[int, int]]) -> str:
    """The problem file: JSON for a .json output, else TOML under a header of how it was measured."""
    from schedc.runtime.activation_bytes import unit_bytes

    units = unit_bytes(measured, held)
    budget = "" if args.activation_budget is None else \
        f"caps from an activation budget of {args.activation_budget} bytes per rank\n"
    under = f", under autocast to {args.autocast}" if args.autocast else ""
    header = (f"measured by schedc profile ({args.module or args.model}, microbatch {samples(example)}"
              f"{under}); times in microseconds\n" + budget +
              "bytes of one unit of each rank's cap (v times the most one of its stages holds, "
              f"{_held_when(measured)}): {' '.join(map(str, units))}\n"
              f"layers per stage: {format_layer_ranges(bounds)} ({_cut_source(args)})\n"
              "next: schedc solve --problem THIS_FILE (and --trace-unit 1 with --trace)")
    if _as_json(args):
        return json.dumps(problem_to_dict(measured), indent=2) + "\n"
    return problem_toml(measured, header)


def _as_json(args: argparse.Namespace) -> bool:
    """The problem file is written as JSON (a .json output), which has no header."""
    return bool(args.output) and Path(args.output).suffix.lower() == ".json"


def _cut_source(args: argparse.Namespace) -> str:
    """Where the header's layer ranges come from, and what training needs for the same stages."""
    return "--bounds: give split_stages the same bounds=" if args.bounds else "split_stages' even cut"


def _block(model: str) -> str:
    """How many layers one demo block is (``runtime.models``): the cut is by layers, not blocks."""
    return "2 layers (a Linear, a Tanh)" if model == "mlp" else "1 layer, plus an embedding and a head"


def _note_replaced(args: argparse.Namespace, fields: dict[str, Any], problem: Problem,
                   comm_given: bool, mem_given: bool) -> None:
    """Notes on what of the --problem file (its ``fields``) the measurement replaces."""
    if not args.problem:
        return
    costs = fields.get("stage_costs") is not None or any(
        k in fields and exact(fields[k], k) != 1 for k in ("tf", "tb", "tw"))
    replaced = [what for what, there in (("costs", costs), ("comm", problem.comm != 0 and not comm_given))
                if there]
    if replaced:
        to_stderr(f"schedc: note: the {' and '.join(replaced)} in {args.problem} are replaced by the "
                  "measured ones")
    if fields.get("mem") is not None and args.activation_budget is not None:
        to_stderr(f"schedc: note: the caps in {args.problem} are replaced by those of --activation-budget")
    elif fields.get("mem") is not None and not mem_given:
        to_stderr(f"schedc: note: the caps in {args.problem} are kept as numbers, now in units of this "
                  "measurement's bytes (the header's), which may differ from those they were set in; "
                  "give --activation-budget to set them in bytes")


def _with_given(prof: Profile, given: dict[str, Any], budget: int | None, w_mem_given: bool) -> Problem:
    """The measured problem with a --comm the user gave, the w_mem the runner's split backward
    needs (unless given), and the caps an activation budget allows."""
    from dataclasses import replace

    from schedc.runtime.activation_bytes import caps_for_budget, measured_w_mem, unit_bytes

    measured = prof.problem
    if "comm" in given:
        measured = replace(measured, comm=given["comm"])
    if measured.split and prof.activation_bytes:
        share = measured_w_mem(measured, prof.activation_bytes)
        if not w_mem_given:
            measured = replace(measured, w_mem=share)
        elif measured.w_mem < share:
            to_stderr(f"schedc: note: measured, the runner still holds a w_mem share of {share} after I, "
                      f"more than the {measured.w_mem} given: its memory may then exceed the caps")
    if budget is not None:
        units = unit_bytes(measured, prof.activation_bytes)
        measured = replace(measured, mem=caps_for_budget(measured, units, budget))
    return measured


def _held_when(problem: Problem) -> str:
    """When a unit's bytes are held: an unsplit file's units count F alone and it measures no w_mem,
    so under a --split override its caps let the runner pass the budget (53,248 bytes against
    50,000): the header says which plans it is for."""
    if problem.split:
        return "after F or I"
    return ("after F; for unsplit plans only: profile without --no-split for split ones, whose I holds "
            "more and whose w_mem is measured")


def _w_mem_given(given: dict[str, Any], fields: dict[str, Any]) -> bool:
    """Whether the user set w_mem: by flag, or in the problem file (its ``fields``) to another value
    than the default, which every plan and problem file schedc writes carries (a plan solved with the
    default would otherwise keep ½ where the runner holds more)."""
    from schedc.problem import W_MEM

    if "w_mem" in given:
        return True
    return "w_mem" in fields and exact(fields["w_mem"], "w_mem") != W_MEM


def _profile(args: argparse.Namespace, stages: list[Chain], example: Any, problem: Problem,
             loss_fn: Callable | None, target: Any, comm_given: bool) -> Profile:
    """profile_problem on the stages; a user module's failure is one line naming the module."""
    import torch

    from schedc.runtime.profile import profile_problem

    dtype = getattr(torch, args.autocast) if args.autocast else None
    try:
        with torch.autocast("cpu", dtype=dtype, enabled=dtype is not None):
            return profile_problem(stages, example, problem, loss_fn=loss_fn, target=target,
                                   comm=0.0 if comm_given else None, repeats=args.repeats)
    except (Exception, SystemExit) as err:
        if not args.module or isinstance(err, SchedcError) or is_out_of_memory(err):
            raise  # the built-in models always run: a failure there is schedc's, with its traceback
        raise module_failure(args.module, err) from None


def _print(problem: Problem, stage_bytes: Sequence[StageBytes], output: str | None, comm_given: bool) -> None:
    """The measured costs and activation bytes as a table, then the latency and each rank's unit in
    bytes (on stdout only when the file goes elsewhere)."""
    from rich import box
    from rich.table import Table

    if not output:
        return
    console = make_console()
    table = Table(box=box.SIMPLE_HEAD, pad_edge=False, title=problem.describe())
    for column in ("stage", "rank", "tf us", "tb us", "tw us", "held after F", "after I"):
        table.add_column(column, justify="right")
    for s, cost in enumerate(problem.stage_costs):
        held = stage_bytes[s] if s < len(stage_bytes) else None
        times = (fmt_exact(t) for t in (cost.tf, cost.tb, cost.tw))  # decimals, as describe() prints
        table.add_row(str(s), str(problem.stage_rank[s]), *times,
                      *((format_bytes(held.forward), format_bytes(held.after_input) if problem.split else "-")
                        if held else ("", "")))
    print_table(console, table)
    given = " (given by --comm)" if comm_given else ""
    console.print(f"P2P latency (one way): {fmt_exact(problem.comm)} us{given}", markup=False)
    if stage_bytes:
        from schedc.runtime.activation_bytes import unit_bytes

        units = " ".join(format_bytes(u) for u in unit_bytes(problem, stage_bytes))
        console.print(f"one unit of each rank's cap: {units}", markup=False)
    console.print(f"wrote {output}; next: schedc solve --problem {output}", markup=False)
