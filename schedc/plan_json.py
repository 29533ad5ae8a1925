"""Plan <-> JSON on disk, with a format version. load(save(plan)) == plan, exactly.

The file records the simulator's start and end of every action for other tools to read. On load
the orders are replayed and the recorded times must be the replay's: first the physical checks
(durations, no overlap, inputs arrived) explain an impossible time, then any other difference is
named, so a hand-edited file cannot carry numbers schedc would not print. An entry may also be a
bare token (``"0F3"``): hand-written plans need no times.
"""

from __future__ import annotations

import json
import math
import re
from fractions import Fraction
from typing import Any

from schedc.actions import Action
from schedc.claims import check_claims
from schedc.errors import ArgumentError, PlanFormatError, SchedcError, ScheduleError, shown
from schedc.exact import MAX_DERIVED, exact, fmt_exact, to_json
from schedc.input_files import parse_json, read_text
from schedc.output_paths import check_suffix, write_file
from schedc.plan import Plan
from schedc.problem import Problem
from schedc.problem_io import FileNumber, field_error, problem_from_dict, problem_to_dict
from schedc.simulate import Slot
from schedc.validate import first_and_count, replay_errors, timing_errors

FORMAT = "schedc-plan"
VERSION = 1


def plan_to_dict(plan: Plan) -> dict[str, Any]:
    t = plan.timeline
    return {
        "format": FORMAT,
        "version": VERSION,
        "problem": problem_to_dict(plan.problem),
        "source": plan.source,
        "status": plan.status,
        "objective": plan.objective,
        "lower_bound": None if plan.lower_bound is None else to_json(plan.lower_bound),
        "solve_seconds": plan.solve_seconds,
        "makespan": to_json(t.makespan),
        "peak_mem": [to_json(x) for x in t.peak_mem],
        "ranks": [
            [[str(s.action), to_json(s.start), to_json(s.end)] for s in slots] for slots in t.slots
        ],
    }


def plan_text(plan: Plan) -> str:
    """The plan file's whole text, rendered before any file is touched: one entry a line (json's
    indented writer, which put each entry on five lines, took 2 of 3 s for 786,432 tasks)."""
    data = plan_to_dict(plan)
    ranks = ",\n".join(_rank_text(rank) for rank in data.pop("ranks"))
    head = json.dumps(data, indent=1)
    return f'{head[:-2]},\n "ranks": [\n{ranks}\n ]\n}}\n'


def _rank_text(entries: list[list[Any]]) -> str:
    """A rank's entries, one a line: json writes them in one line, split between entries, as no
    token or time holds "], [" (tokens are digits and a letter, times numbers or "a/b"). Every rank
    holds entries: each has a stage, and a problem at least one microbatch."""
    return "  [\n   " + json.dumps(entries)[1:-1].replace("], [", "],\n   [") + "\n  ]"


def save_plan(plan: Plan, path: str) -> None:
    """Writes the plan file all-or-nothing: a failed write leaves no truncated file."""
    if not isinstance(plan, Plan):
        raise ArgumentError(f"save_plan needs a Plan, got {type(plan).__name__}")
    check_suffix(path, "save_plan", "a plan file", csv=False, toml_ok=False)
    check_claims(plan)  # what load_plan would refuse (a status kept across a changed problem)
    text = plan_text(plan)
    try:
        write_file(path, text)
    except OSError as err:
        raise PlanFormatError(f"cannot write plan {path}: {err.strerror or err}") from None


def load_plan(path: str) -> Plan:
    """Reads a plan file; any defect is a one-line SchedcError naming what is wrong."""
    text = read_text(path, "plan", PlanFormatError)
    try:
        data = parse_json(text, parse_float=FileNumber)  # exactly as written, as in problem files
    except json.JSONDecodeError as err:
        hint = _csv_hint(str(path)) if text.lstrip()[:1].isdigit() else ""
        raise PlanFormatError(f"plan {path} is not valid JSON: {err}{hint}") from None
    except RecursionError:
        raise PlanFormatError(f"plan {path} is not a JSON text file") from None
    except ValueError as err:  # a key given twice, an integer literal over Python's 4300-digit limit
        raise PlanFormatError(f"plan {path} is not valid JSON: {err}") from None
    return plan_from_dict(data, path)


def _csv_hint(path: str) -> str:
    if path.lower().endswith(".csv"):
        return " (a torch CSV plan loads with schedc.torch_csv.load_csv_plan(path, problem))"
    return " (a torch CSV plan needs a .csv name)"


def plan_from_dict(data: Any, path: str = "plan") -> Plan:
    """Builds and checks a plan from its JSON form; errors are prefixed with ``path``."""
    check_header(data, path)
    _check_fields(data, path)
    try:
        problem = _problem(data["problem"])
        slots = _read_slots(data["ranks"])
        bound = data.get("lower_bound")
        plan = Plan(
            problem=problem,
            orders=tuple(tuple(a for a, _ in rank) for rank in slots),
            source=data["source"],
            status=data.get("status", "heuristic"),
            objective=data.get("objective", "makespan"),
            lower_bound=None if bound is None else _number(bound, "lower_bound"),
            solve_seconds=_seconds(data.get("solve_seconds")),
        )
        _check_recorded(plan, slots, data)
        check_claims(plan)
    except KeyError as err:
        raise PlanFormatError(f"{path}: missing field {err}") from None
    except ScheduleError as err:
        raise ScheduleError(f"{path}: {err}", [f"{path}: {e}" for e in err.errors]) from None
    except SchedcError as err:
        raise type(err)(f"{path}: {err}") from None
    except (TypeError, ValueError) as err:  # a shape this reader did not foresee: still one line
        raise PlanFormatError(f"{path}: malformed plan: {err}") from None
    return plan


def _problem(data: Any) -> Problem:
    """The plan's problem; an error names the field (``problem field p``), not a flag never typed."""
    try:
        return problem_from_dict(data, in_plan=True)
    except SchedcError as err:
        named = field_error(str(err))
        raise type(err)(f"problem field {named[0]}{named[1]}" if named else str(err)) from None


FIELDS = ("format", "version", "problem", "source", "status", "objective", "lower_bound", "solve_seconds",
          "makespan", "peak_mem", "ranks")
"""What ``plan_to_dict`` writes: any other field is refused (a misspelt ``lower_bund`` was dropped,
silently)."""


def check_header(data: Any, path: str) -> None:
    """A schedc plan of the version this schedc reads (a plan read as a problem file too)."""
    if not isinstance(data, dict) or data.get("format") != FORMAT:
        raise PlanFormatError(f"{path}: not a schedc plan (missing \"format\": \"{FORMAT}\")")
    found = data.get("version")
    if type(found) is not int or found != VERSION:
        raise PlanFormatError(f"{path}: plan format version {found!r}, this schedc reads {VERSION}")


def _check_fields(data: dict, path: str) -> None:
    unknown = [key for key in data if key not in FIELDS]
    if unknown:
        listed = ", ".join(shown(str(key), 40) for key in unknown[:5]) + (", ..." if len(unknown) > 5 else "")
        raise PlanFormatError(f"{path}: unknown plan field{'s' if len(unknown) > 1 else ''} {listed} "
                              f"(a plan has {', '.join(FIELDS)})")


Recorded = tuple[tuple[tuple[Action, tuple[Fraction, Fraction] | None], ...], ...]


def _read_slots(ranks: Any) -> Recorded:
    """Per rank: (action, (start, end) or None) for every entry, shape-checked."""
    if not isinstance(ranks, list):
        raise PlanFormatError("\"ranks\" must be a list with one list of actions per rank")
    times: dict[int | str, Fraction] = {}  # a plan's times repeat: each distinct one is read once
    out = []
    for r, rank in enumerate(ranks):
        if not isinstance(rank, list):
            raise PlanFormatError(f"rank {r}: expected a list of actions, got {rank!r:.60}")
        out.append(tuple(_read_entry(entry, r, k, times) for k, entry in enumerate(rank)))
    return tuple(out)


def bare_tokens(data: dict[str, Any]) -> list[list[str]]:
    """Each rank's action tokens, from entries bare or timed ([token, start, end]), in a plan file
    that passed the format checks."""
    return [[e if isinstance(e, str) else e[0] for e in rank] for rank in data["ranks"]]


def _read_entry(entry: Any, r: int, k: int,
                times: dict[int | str, Fraction]) -> tuple[Action, tuple[Fraction, Fraction] | None]:
    """One entry; its messages are built only on error (they were half of loading a large plan)."""
    if isinstance(entry, str):
        return _token(entry, r, k), None
    if not (isinstance(entry, list) and len(entry) == 3 and isinstance(entry[0], str)):
        raise PlanFormatError(f"rank {r} position {k}: expected [token, start, end] or a token, "
                              f"got {entry!r:.60}")
    action = _token(entry[0], r, k)
    start = _time(entry[1], times, r, k, action, "start")
    return action, (start, _time(entry[2], times, r, k, action, "end"))


def _token(text: str, r: int, k: int) -> Action:
    try:
        return Action.parse(text)
    except PlanFormatError as err:
        raise PlanFormatError(f"rank {r} position {k}: {err}") from None


def _time(value: Any, times: dict[int | str, Fraction], r: int, k: int, action: Action,
          side: str) -> Fraction:
    """A start or end, read once per distinct int or string (bools, equal to ints, and floats are
    read every time)."""
    keyed = type(value) is int or type(value) is str
    known = times.get(value) if keyed else None
    if known is None:
        known = _number(value, f"rank {r} position {k} action {action} {side}")
        if keyed:
            times[value] = known
    return known


def _seconds(value: Any) -> Any:
    """solve_seconds as the float schedc wrote; a value no float holds stays as written, for
    ``Plan`` to refuse with its text."""
    if isinstance(value, FileNumber) and value.is_finite():
        seconds = float(value)  # 1e300 and 1e-320 too: what save_plan wrote for them
        if math.isfinite(seconds) and (seconds != 0 or value.is_zero()):  # 1e-400 is no float: refused
            return seconds
    return value


_PLAIN = re.compile(r"([0-9]{1,100})(?:/([0-9]{1,100}))?")
"""A time as schedc writes it ("6175/2", "31"): read directly, under MAX_DERIVED (1e120) by its
length; ``exact``'s general checks were a third of loading a large plan (196,608 tasks: 10.5 of 33
profiled seconds)."""


def _number(value: Any, what: str) -> Fraction:
    """A number of the file; a bad one is a format error (not a problem error)."""
    if type(value) is int and -MAX_DERIVED <= value <= MAX_DERIVED:
        return Fraction(value)
    plain = _PLAIN.fullmatch(value) if type(value) is str else None
    if plain and int(plain.group(2) or 1):  # "1/0" is ``exact``'s error
        number = Fraction(int(plain.group(1)), int(plain.group(2) or 1))
        if number <= MAX_DERIVED:
            return number
    try:
        return exact(value, what, MAX_DERIVED, finest=None)
    except SchedcError as err:
        raise PlanFormatError(str(err)) from None


def _check_recorded(plan: Plan, recorded: Recorded, data: dict[str, Any]) -> None:
    """Recorded times and figures, where the file has them, must be the replay's."""
    t = plan.timeline
    errors = [f"recorded {key} {data[key]!r} differs from the replay's {_show(value)}"
              for key, value in (("makespan", t.makespan), ("peak_mem", list(t.peak_mem)))
              if key in data and _figure(data[key], key) != value]  # first: they say the most
    if all(times is not None for rank in recorded for _, times in rank):
        if _differs(recorded, t.slots):  # else the times are the replay's, which keep every rule
            slots = tuple(tuple(Slot(a, *times) for a, times in rank) for rank in recorded)
            replayed = replay_errors(t, slots)
            errors += timing_errors(plan.problem, slots) or replayed
    elif any(times is not None for rank in recorded for _, times in rank):
        raise PlanFormatError("give times for every action or for none")
    if errors:
        raise ScheduleError(first_and_count(errors), errors)


def _differs(recorded: Recorded, replayed: tuple[tuple[Slot, ...], ...]) -> bool:
    """Whether any recorded time differs from the replay's (checked before building the error
    lines, which cost a large plan's load 2 s where none differs)."""
    return any(times != (slot.start, slot.end)
               for rank, slots in zip(recorded, replayed, strict=True)
               for (_, times), slot in zip(rank, slots, strict=True))


def every_error(data: dict[str, Any], path: str) -> list[str]:
    """Every error of a plan whose orders are a schedule: ``plan_from_dict`` stops at the first
    check that fails, so a status 'optimal' without its bound hid the recorded times' errors
    (``validate`` printed 1 error where a heuristic plan's copy had 32). The recorded figures are
    checked without the claims, and the claims without the figures."""
    records = ("makespan", "peak_mem")
    unclaimed = {**{k: v for k, v in data.items() if k != "lower_bound"}, "status": "heuristic"}
    unrecorded = {**{k: v for k, v in data.items() if k not in records},
                  "ranks": bare_tokens(data)}
    errors: list[str] = []
    for part in (unclaimed, unrecorded):
        try:
            plan_from_dict(part, path)
        except ScheduleError as err:
            errors += [e for e in err.errors if e not in errors]
    return errors


def _figure(value: Any, key: str) -> Fraction | list[Fraction]:
    if isinstance(value, list):
        return [_number(x, key) for x in value]
    return _number(value, key)


def _show(value: Fraction | list[Fraction]) -> str:
    if isinstance(value, list):
        return "[" + ", ".join(fmt_exact(x) for x in value) + "]"
    return fmt_exact(value)
