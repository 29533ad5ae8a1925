"""Problem <-> plain dict (JSON plan files, TOML/JSON problem files)."""

from __future__ import annotations

import re
import tomllib
from decimal import Decimal
from fractions import Fraction
from pathlib import Path
from typing import Any

from schedc.errors import ProblemError, counted, printable
from schedc.exact import to_json
from schedc.input_files import parse_json, read_text
from schedc.problem import Problem

FIELDS = ("p", "m", "v", "placement", "split", "tf", "tb", "tw", "comm", "mem", "w_mem", "stage_costs")

def problem_to_dict(problem: Problem) -> dict[str, Any]:
    """The problem's fields; tf, tb and tw only without per-stage costs, which replace them."""
    data: dict[str, Any] = {"p": problem.p, "m": problem.m, "v": problem.v, "placement": problem.placement,
                            "split": problem.split}
    if problem.stage_costs is None:
        data.update(tf=to_json(problem.tf), tb=to_json(problem.tb), tw=to_json(problem.tw))
    data.update(comm=to_json(problem.comm), w_mem=to_json(problem.w_mem), mem=_caps_field(problem.mem))
    if problem.stage_costs is not None:
        data["stage_costs"] = [
            {"tf": to_json(c.tf), "tb": to_json(c.tb), "tw": to_json(c.tw)} for c in problem.stage_costs
        ]
    return data


def _caps_field(caps: tuple[Fraction | None, ...]) -> Any:
    """One cap for all ranks as one value (so the problem still reads with another p), else a list."""
    if len(set(caps)) == 1:
        return None if caps[0] is None else to_json(caps[0])
    return [None if c is None else to_json(c) for c in caps]


def field_error(message: str) -> tuple[str, str] | None:
    """(field, rest) of a Problem error that starts with the field it is about (``w_mem must be ...``
    -> ``("w_mem", " must be ...")``), so the CLI can name the flag or the file that gave it."""
    named = re.match(r"([a-z][a-z_]*)\b(.*)", message)
    return (named.group(1), named.group(2)) if named and named.group(1) in FIELDS else None


def without_stale_costs(data: dict[str, Any]) -> dict[str, Any]:
    """A plan file's problem fields without tf, tb and tw where stage_costs are given: versions
    before 2026-11-30 wrote them (their defaults) beside the stage costs, which set every stage's."""
    if data.get("stage_costs") is None:
        return data
    return {k: v for k, v in data.items() if k not in ("tf", "tb", "tw")}


def problem_from_dict(data: dict[str, Any], *, in_plan: bool = False, **overrides: Any) -> Problem:
    """Builds a Problem from a dict; keys beside FIELDS are an error, so typos do not pass silently.
    ``in_plan``: a plan file's problem, which schedc wrote: versions before 2026-11-30 wrote tf, tb
    and tw (their defaults) beside stage_costs, which give way to the stage costs, as in Python."""
    if not isinstance(data, dict):
        raise ProblemError("a problem must be a table/object of fields")
    unknown = sorted(set(data) - set(FIELDS))
    if unknown:
        named = ", ".join(printable(str(k)[:40]) for k in unknown[:5])  # keys from a file: escaped
        more = f" and {len(unknown) - 5} more" if len(unknown) > 5 else ""
        raise ProblemError(f"unknown problem field(s): {named}{more}; known: {', '.join(FIELDS)}")
    nulls = [name for name in FIELDS if name in data and data[name] is None and name != "mem"]
    if nulls:  # JSON's null; only mem reads it (no cap): elsewhere it would drop a value without a word
        raise ProblemError(f"{nulls[0]} is null; give it a value, or leave it out for its default")
    if data.get("stage_costs") is not None and any(name in data for name in ("tf", "tb", "tw")):
        if not in_plan:
            raise ProblemError("stage_costs set the costs of every stage, so tf, tb, tw would not apply: "
                               "give one or the other (a file from `schedc profile` before 2026-11-30 has "
                               "both: delete tf, tb and tw)")
        data = without_stale_costs(data)
    fields = {**data, **overrides}
    missing = [what for name, what in (("p", "p (ranks)"), ("m", "m (microbatches)")) if name not in fields]
    if missing:
        raise ProblemError(f"the problem gives no {' and no '.join(missing)}")
    if isinstance(fields.get("mem"), list):
        if not fields["mem"]:  # Problem reads () as no cap: in a file that is more likely a slip
            raise ProblemError("mem = [] gives no caps; give one, one per rank, or leave mem out for none")
        fields["mem"] = tuple(fields["mem"])
    _check_cap_count(fields)
    try:
        return Problem(**fields)
    except TypeError as err:
        raise ProblemError(f"bad problem: {err}") from None


def _check_cap_count(fields: dict[str, Any]) -> None:
    """A list of caps from a user gives one per rank: ``--mem 4,4`` for 4 ranks is a slip, even though
    ``Problem`` reads equal caps as one (which ``dataclasses.replace(problem, p=...)`` needs)."""
    caps, p = fields.get("mem"), fields.get("p")
    if isinstance(caps, tuple) and len(caps) > 1 and type(p) is int and p >= 1 and len(caps) != p:
        raise ProblemError(f"mem gives {len(caps)} caps for {counted(p, 'rank')}; give one or {p}")


class FileNumber(Decimal):
    """A number a file writes with a fraction or an exponent, kept exactly as written: 0.1 is 1/10,
    1e-400 is no 0 and 1e400 no inf (as floats they would be), and an error quotes its text."""

    __slots__ = ("text",)

    def __new__(cls, text: str) -> FileNumber:
        number = super().__new__(cls, text)
        number.text = text
        return number

    def __repr__(self) -> str:
        return self.text


def read_problem_file(path: str) -> dict[str, Any]:
    """Reads a TOML or JSON problem file into a dict (fields as in FIELDS); numbers with a fraction
    or an exponent become FileNumbers, which ``exact`` reads exactly."""
    text = read_text(path, "problem file", ProblemError)  # first: it names a path of the wrong type
    as_json, how = _format_of(str(path), text)
    try:
        if as_json:
            return parse_json(text, parse_float=FileNumber)
        return tomllib.loads(text, parse_float=FileNumber)
    except (ValueError, RecursionError) as err:  # decode errors, ints over 4300 digits, deep nesting
        raise ProblemError(f"problem file {path} is malformed (read as {how}): {err}") from None


def _format_of(path: str, text: str) -> tuple[bool, str]:
    """(JSON or not, how it was told) by a .json name, or a first character of "{", which no TOML
    document starts with:
    `-o` writes a plan JSON under any name but .csv and .toml, and --problem read a plan saved
    without a suffix as TOML ("malformed")."""
    if Path(path).suffix.lower() == ".json":
        return True, "JSON, by its name"
    if text.lstrip().startswith("{"):
        return True, "JSON, as it starts with {"
    return False, "TOML, as every name but .json is unless it starts with {"  # a plan CSV, say


def problem_file_fields(path: str) -> dict[str, Any]:
    """A problem file's fields; a schedc plan JSON contributes its problem."""
    data = read_problem_file(path)
    if isinstance(data, dict) and data.get("format") == "schedc-plan":
        from schedc.plan_json import check_header  # it reads problems: imported here, not at the top

        check_header(data, path)
        data = data.get("problem")
        data = without_stale_costs(data) if isinstance(data, dict) else data  # as load_plan reads it
    elif isinstance(data, dict) and isinstance(data.get("problem"), dict):
        raise ProblemError(f"problem file {path} holds its fields under \"problem\", as a plan does, but is "
                           "no schedc plan (no \"format\": \"schedc-plan\"): put them at the top level")
    if not isinstance(data, dict):
        raise ProblemError(f"problem file {path} must hold a table/object of problem fields")
    return data


def load_problem(path: str) -> Problem:
    """The problem of a TOML or JSON problem file (what ``schedc profile`` writes) or of a plan file."""
    fields = problem_file_fields(path)  # its errors name the file already
    try:
        return problem_from_dict(fields)
    except ProblemError as err:
        named = field_error(str(err))
        raise ProblemError(f"{path}: " + (f"field {named[0]}{named[1]}" if named else str(err))) from None


def _toml_value(value: object) -> str:
    if isinstance(value, bool):
        return "true" if value else "false"
    if isinstance(value, int):
        return str(value)
    if isinstance(value, str):
        return '"' + value.replace("\\", "\\\\").replace('"', '\\"') + '"'
    if isinstance(value, dict):
        return "{ " + ", ".join(f"{k} = {_toml_value(v)}" for k, v in value.items()) + " }"
    if isinstance(value, list):
        return "[" + ", ".join(_toml_value(v) for v in value) + "]"
    raise ProblemError(f"cannot write {value!r} to TOML")


def problem_toml(problem: Problem, comment: str = "") -> str:
    """The problem as a TOML file that ``schedc.problem_io.read_problem_file`` reads back exactly."""
    data = problem_to_dict(problem)
    caps = data.pop("mem")  # None (no cap at all) is TOML's missing key
    if caps is not None:  # TOML has no null: one uncapped rank among capped ones is "none"
        data["mem"] = ["none" if cap is None else cap for cap in caps] if isinstance(caps, list) else caps
    stage_costs = data.pop("stage_costs", None)
    lines = [f"# {line}" for line in comment.splitlines()]
    lines += [f"{key} = {_toml_value(value)}" for key, value in data.items()]
    if stage_costs is not None:
        lines += ["stage_costs = ["] + [f"  {_toml_value(c)}," for c in stage_costs] + ["]"]
    return "\n".join(lines) + "\n"
