"""The problem options every ``schedc`` subcommand shares, and the Problem they describe.

``add_problem_options(parser)`` adds ``--p --m --v --placement --no-split/--split --tf --tb --tw
--comm --mem --w-mem --problem FILE``; ``problem_from_args(args)`` merges them with the problem
file (flags win) into a validated Problem. Values are parsed exactly (``0.5`` and ``1/3`` are
Fractions), so a bad number is a one-line ``ProblemError`` naming the flag, or the file and field it
came from.
"""

from __future__ import annotations

import argparse
from fractions import Fraction
from typing import Any

from schedc.cli_once import Once
from schedc.errors import ProblemError, SchedcError, printable, to_stderr
from schedc.exact import exact, fmt_exact, plain_digits
from schedc.problem import Problem
from schedc.problem_io import FIELDS, field_error, problem_file_fields, problem_from_dict
from schedc.solvers.feasibility import check_caps

_INT_FLAGS = ("p", "m", "v")
_NUMBER_FLAGS = ("tf", "tb", "tw", "comm", "w_mem")


def add_problem_options(parser: argparse.ArgumentParser, role: str = "problem") -> None:
    """Adds the problem options. All default to None so that ``--problem`` fills the gaps. ``role``
    words the help for where they apply: "problem" (they define it), "plan" (they apply to a CSV
    plan, whose rows give the structure), "profile" (the costs are measured)."""
    title = {"problem": "the scheduling problem (flags override --problem)",
             "plan": "for a CSV plan only (a plan JSON carries its problem): its rows give p, m, v, "
                     "placement and split; these give costs and caps, and override",
             "profile": "the pipeline to profile for (tf, tb, tw are measured)"}[role]
    required = " (default: the CSV's rows)" if role == "plan" else "; required unless --problem"
    group = parser.add_argument_group("problem", title)
    group.add_argument("--p", metavar="N", help=f"ranks (devices) in the pipeline{required}")
    group.add_argument("--m", metavar="N", help=f"microbatches per step{required}")
    rows = role == "plan"
    group.add_argument("--v", metavar="N", help="stages per rank (default" + (
        ": the CSV's rows)" if rows else " 1; --placement vshape needs 2)"))
    group.add_argument("--placement", metavar="looped|vshape",
                       help="stage placement (default" + (": the CSV's rows)" if rows else " looped)"))
    split = group.add_mutually_exclusive_group()
    split.add_argument("--no-split", dest="split", action="store_const", const=False,
                       help="one backward task B, costing tb + tw, instead of I then W")
    split.add_argument("--split", dest="split", action="store_const", const=True,
                       help="split backward into I and W (the default" + (
                           " unless the CSV's rows hold B's only)" if rows else ")"))
    measured = role == "profile"  # profile refuses them as a usage error: it measures them
    cost = {"help": argparse.SUPPRESS, "action": _Measured} if measured else {}
    group.add_argument("--tf", metavar="T", **({"help": "forward time of one microbatch through a rank, "
                       "all its v stages (default 1)"} | cost))
    group.add_argument("--tb", metavar="T", **({"help": "input-gradient (I) time (default 1)"} | cost))
    group.add_argument("--tw", metavar="T", **({"help": "weight-gradient (W) time (default 1)"} | cost))
    group.add_argument("--comm", metavar="T", help="latency between stages on different ranks (default "
                       + ("measured over gloo)" if role == "profile" else "0)"))
    group.add_argument("--mem", metavar="CAP",
                       help="activation cap per rank, in units of one microbatch's activations through "
                            "all of a rank's layers (so at least 1): one number, a comma list (one per "
                            "rank), or none (the default)")
    group.add_argument("--w-mem", metavar="R", help="share of activation W still needs after I (default " + (
        "measured; a --problem file's w_mem other than 1/2, the default every plan file carries, is kept)"
        if role == "profile" else "1/2)"))
    group.add_argument("--problem", metavar="FILE", type=nonempty, action=Once,
                       help="TOML/JSON problem file (or a plan JSON: its problem)" + (
                           "; its costs are replaced by the measured ones" if role == "profile" else
                           ", e.g. for per-stage costs (stage_costs: each stage's own tf, tb, tw; a "
                           "file's tf, tb, tw are a rank's, as the flags)"))


def nonempty(text: str) -> str:
    """A value that may not be empty: ``--problem "$F"`` with F unset would otherwise drop the file
    silently and plan the flags' (or the defaults') problem instead."""
    if not text.strip():
        raise argparse.ArgumentTypeError(f"needs a value, got {text!r}")
    return text


class _Measured(argparse.Action):
    """A cost flag given to ``profile``: a usage error (exit 2), as an option the command lacks.
    Kept on the namespace and raised by ``refuse_measured`` after parsing, so that a ``--help``
    later on the line still prints the help."""

    def __call__(self, parser: argparse.ArgumentParser, namespace: argparse.Namespace, values: str,
                 option_string: str | None = None) -> None:
        if getattr(namespace, "refused_flag", None) is None:  # the first one named, as argparse would
            namespace.refused_flag = (parser, f"{option_string}: the costs are measured here; drop the flag")


def refuse_measured(args: argparse.Namespace) -> None:
    """The usage error a ``_Measured`` flag left on the namespace, if any (exits 2)."""
    refused = getattr(args, "refused_flag", None)
    if refused is not None:
        parser, message = refused
        parser.error(message)


def parse_int(text: str, flag: str) -> int:
    plain_digits(text, flag)
    try:
        return int(text.strip())
    except ValueError:
        raise ProblemError(f"{flag} must be an integer, got {text!r}") from None


def parse_caps(text: str) -> tuple[Fraction | None, ...]:
    """``none``, ``4``, ``2.5`` or ``4,3,none,2`` -> one cap or one per rank (None: no cap)."""
    caps = []
    for item in text.split(","):
        item = item.strip()
        if not item:
            raise ProblemError(f"--mem has an empty entry in {text!r}")
        caps.append(None if item.lower() == "none" else exact(item, "--mem"))
    return () if caps == [None] else tuple(caps)


def problem_overrides(args: argparse.Namespace) -> dict[str, Any]:
    """The problem fields given as flags, parsed."""
    fields: dict[str, Any] = {}
    for name in _INT_FLAGS:
        if getattr(args, name, None) is not None:
            fields[name] = parse_int(getattr(args, name), f"--{name}")
    for name in _NUMBER_FLAGS:
        if getattr(args, name, None) is not None:
            fields[name] = exact(getattr(args, name), f"--{name.replace('_', '-')}")
    if getattr(args, "placement", None) is not None:
        fields["placement"] = args.placement.strip()
    if getattr(args, "split", None) is not None:
        fields["split"] = args.split
    if getattr(args, "mem", None) is not None:
        fields["mem"] = parse_caps(args.mem)
    return fields


def has_problem(args: argparse.Namespace) -> bool:
    """Whether the command line describes a problem at all (used for CSV plans)."""
    return getattr(args, "problem", None) is not None or bool(problem_overrides(args))


def _one_cap_for_any_p(base: dict[str, Any]) -> dict[str, Any]:
    """A file's list of equal caps as one cap, so that --p can change its rank count: plan files
    before d46c57d wrote ``mem = [3, 3]`` (or ``[null, null]``) for one cap on two ranks."""
    caps = base.get("mem")
    if isinstance(caps, list) and len(caps) > 1 and all(c == caps[0] for c in caps):
        return {**base, "mem": caps[:1]}
    return base


def problem_from_args(args: argparse.Namespace, inferred: dict[str, Any] | None = None,
                      replaced: tuple[str, ...] = ()) -> Problem:
    """Merges ``--problem FILE`` with the flags (flags win) into a validated Problem; ``inferred``
    (what a CSV plan's own rows determine) fills the structural fields neither gives. The file's
    ``replaced`` fields are left out: the command sets them (profile's costs, a budget's caps), so
    they need not fit a --p or --v given with the file."""
    base = problem_file_fields(args.problem) if getattr(args, "problem", None) else {}
    base = {k: v for k, v in base.items() if k not in replaced}
    overrides = problem_overrides(args)
    if "p" in overrides and "mem" not in overrides:
        base = _one_cap_for_any_p(base)
    fields = {**(inferred or {}), **base, **overrides}
    missing = [f"--{name}" for name in ("p", "m") if name not in fields]
    if missing and not set(base) <= set(FIELDS):  # a file that is no problem file: its unknown fields
        missing = []  # say so (problem_from_dict, below), where the missing p or m would mislead
    if missing and getattr(args, "problem", None):
        raise ProblemError(f"problem file {args.problem} gives no {' or '.join(n[2:] for n in missing)}: "
                           f"add it there or give {' and '.join(missing)}")
    if missing:
        raise ProblemError(f"{' and '.join(missing)} required (or give --problem FILE)")
    if base.get("stage_costs") is not None:
        flags = [f"--{name}" for name in ("tf", "tb", "tw") if name in overrides]
        if flags:  # stage_costs replace tf/tb/tw: the flags would silently not apply
            raise ProblemError(f"{', '.join(flags)} cannot override the per-stage costs (stage_costs) of "
                               f"problem file {args.problem}: edit them there")
    where = f" (with problem file {args.problem})" if base else ""
    try:
        problem = problem_from_dict(fields)
    except SchedcError as err:
        raise type(err)(_blame(str(err), base, overrides, args.problem)) from None
    except (TypeError, ValueError) as err:  # a malformed file field that problem_from_dict lets through
        raise ProblemError(f"bad problem{where}: {err}") from None
    try:
        check_caps(problem)  # a cap no schedule fits: every figure printed against it would be vacuous
    except SchedcError as err:  # the caps are at fault: name the file only if they came from it
        raise type(err)(f"{err}{where if 'mem' not in overrides else ''}") from None
    _note_split_over_unsplit_caps(problem, base, overrides, args)
    _note_w_mem_below_files_caps(problem, base, overrides, args)
    _note_layout_over_stage_costs(base, overrides, args)
    _note_w_mem_unsplit(problem, base, overrides, args)
    return problem


def _note_w_mem_unsplit(problem: Problem, base: dict[str, Any], overrides: dict[str, Any],
                        args: argparse.Namespace) -> None:
    """w_mem changes nothing in an unsplit problem (its B frees the whole activation): a --w-mem (a
    file may be split), or an unsplit file's w_mem other than the 1/2 every plan file carries, is
    accepted but said, not silent. A split file's w_mem (profile measures one) under --no-split is
    not the file's mistake: no note."""
    if problem.split:
        return
    if "w_mem" in overrides:
        to_stderr("schedc: note: --w-mem does not apply to an unsplit problem (its B frees the whole "
                  "activation at its end)")
    elif base.get("split") is False and "w_mem" in base and problem.w_mem != Fraction(1, 2):
        to_stderr(f"schedc: note: w_mem = {fmt_exact(problem.w_mem)} in {printable(args.problem)} does not "
                  "apply to an unsplit problem (its B frees the whole activation at its end)")


def _note_split_over_unsplit_caps(problem: Problem, base: dict[str, Any], overrides: dict[str, Any],
                                  args: argparse.Namespace) -> None:
    """A file's caps for unsplit plans (``schedc profile --no-split`` writes them: its units count
    what F holds, not what I adds) taken for a split plan let the runner pass the byte budget, 2.5
    times on a tester's two-rank MLP, without a word: the caps may be the user's own, so a note."""
    from_file = "mem" in base and "mem" not in overrides
    capped = from_file and any(cap is not None for cap in problem.mem)
    if base.get("split") is False and overrides.get("split") is True and capped:
        to_stderr(f"schedc: note: --split overrides split = false in {printable(args.problem)}: caps "
                  "measured for unsplit plans (schedc profile --no-split) do not hold a split plan's I; "
                  "profile without --no-split for split plans")


def _note_w_mem_below_files_caps(problem: Problem, base: dict[str, Any], overrides: dict[str, Any],
                                 args: argparse.Namespace) -> None:
    """A profiled file's caps are byte budgets in units of what its w_mem says W still holds after
    I: a smaller --w-mem over them lets a plan hold more than the budget on the runner, without a
    word. The caps and the w_mem may be the user's own, so a note, not an error."""
    from_file = "mem" in base and "mem" not in overrides and any(cap is not None for cap in problem.mem)
    if not (from_file and problem.split and "w_mem" in base and "w_mem" in overrides):
        return
    try:
        files = exact(base["w_mem"], "w_mem")
    except SchedcError:  # a bad value the flag replaced: nothing to compare with
        return
    if problem.w_mem < files:
        to_stderr(f"schedc: note: --w-mem {problem.w_mem} is below w_mem = {base['w_mem']} in "
                  f"{printable(args.problem)}: caps measured with that share (schedc profile) may not hold "
                  "what W keeps after I; give --mem too if they are your own")


LAYOUT_DEFAULTS = {"p": None, "v": 1, "placement": "looped"}
"""The fields that place stages on ranks, with a file's defaults (p has none: a file without it needs --p)."""


def _note_layout_over_stage_costs(base: dict[str, Any], overrides: dict[str, Any],
                                  args: argparse.Namespace) -> None:
    """Per-stage costs that ``schedc profile`` measured count the send and receive calls at the
    file's rank boundaries, and its caps the bytes of the stages each rank held there: another p, v
    or placement with as many stages moves both (a tester's vshape solve of a looped profile, and a
    --p 2 --v 2 solve of a p = 4 one, without a word). The costs may be the user's own, or a plan's
    problem measured at another layout, so a note that claims nothing about where, not an error."""
    if base.get("stage_costs") is None:
        return
    files = {name: base.get(name, default) for name, default in LAYOUT_DEFAULTS.items()}
    moved = [name for name in LAYOUT_DEFAULTS
             if name in overrides and files[name] is not None and str(overrides[name]) != str(files[name])]
    if not moved:
        return
    flags = " ".join(f"--{name} {overrides[name]}" for name in moved)
    values = ", ".join(f"{name} = {files[name]}{'' if name in base else ' (by default)'}" for name in moved)
    caps = base.get("mem") is not None and "mem" not in overrides
    to_stderr(f"schedc: note: {flags} override{'s' if len(moved) == 1 else ''} {values} in "
              f"{printable(args.problem)}: per-stage costs{' and caps' if caps else ''} that schedc profile "
              f"measured hold for the ranks they were measured on (the sends and receives at their "
              f"boundaries{', the bytes each rank holds' if caps else ''}); profile again with these flags "
              "if that was this file's layout")


def _blame(message: str, base: dict[str, Any], overrides: dict[str, Any], path: str | None) -> str:
    """Problem errors name their field (``w_mem must be ...``): the CLI names the flag instead
    (``--w-mem must be ...``), or when the field came from the problem file, the file and its field
    (``problem file x.toml: w_mem must be``), so the user edits the right place."""
    named = field_error(message)
    if named:
        field, rest = named
        if field in base and field not in overrides:
            new_p = field == "mem" and "p" in overrides
            hint = " (--p overrides the file's p: give --mem too)" if new_p else ""
            return f"problem file {path}: {field}{rest}{hint}"
        return f"--{field.replace('_', '-')}{rest}"
    return f"{message} (with problem file {path})" if base else message
