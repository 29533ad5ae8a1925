"""Problem <-> plain dict (JSON plan files, TOML/JSON problem files)."""

from __future__ import annotations

import math
import re
import tomllib
from fractions import Fraction
from pathlib import Path
from typing import Any

from schedc.errors import ProblemError
from schedc.exact import to_json
from schedc.input_files import parse_json, read_text
from schedc.problem import Problem

FIELDS = ("p", "m", "v", "placement", "split", "tf", "tb", "tw", "comm", "mem", "w_mem", "stage_costs")

MAX_TASKS = 10_000_000
"""Largest problem read from outside: the simulator alone takes minutes and gigabytes beyond it, so a
typo such as m = 1000000000 is an error instead of a hang."""


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
    """(field, rest) of a Problem error that names a command-line flag (``--w-mem must be ...`` ->
    ``("w_mem", " must be ...")``), so a reader of a file can name the field instead."""
    flag = re.match(r"--([a-z][a-z-]*)\b(.*)", message)
    return (flag.group(1).replace("-", "_"), flag.group(2)) if flag else None


def problem_from_dict(data: dict[str, Any], **overrides: Any) -> Problem:
    """Builds a Problem from a dict; keys beside FIELDS are an error, so typos do not pass silently."""
    if not isinstance(data, dict):
        raise ProblemError("a problem must be a table/object of fields")
    unknown = sorted(set(data) - set(FIELDS))
    if unknown:
        raise ProblemError(f"unknown problem field(s): {', '.join(unknown)}; known: {', '.join(FIELDS)}")
    if data.get("stage_costs") is not None and any(name in data for name in ("tf", "tb", "tw")):
        raise ProblemError("stage_costs set the costs of every stage, so tf, tb, tw would not apply: "
                           "give one or the other")
    fields = {**data, **overrides}
    costs = fields.get("stage_costs")
    if isinstance(costs, list | tuple):
        fields["stage_costs"] = tuple(_stage_cost(c, k) for k, c in enumerate(costs))
    if isinstance(fields.get("mem"), list):
        if not fields["mem"]:  # Problem reads () as no cap: in a file that is more likely a slip
            raise ProblemError("mem = [] gives no caps; give one, one per rank, or leave mem out for none")
        fields["mem"] = tuple(fields["mem"])
    _check_size(fields)
    try:
        return Problem(**fields)
    except TypeError as err:
        raise ProblemError(f"bad problem: {err}") from None


def _check_size(fields: dict[str, Any]) -> None:
    """Refuses more than MAX_TASKS tasks before Problem is built: it lays out one cap per rank."""
    counts = [fields.get(name, 1) for name in ("p", "v", "m")]
    if not all(type(c) is int for c in counts):
        return  # Problem names the bad count
    kinds = 2 if fields.get("split") is False else 3
    tasks = math.prod(counts) * kinds
    if tasks > MAX_TASKS:
        raise ProblemError(f"problem too large: {tasks} tasks (p*v*m*{kinds}); "
                           f"schedc handles at most {MAX_TASKS}")


def _stage_cost(entry: Any, index: int) -> Any:
    """A {tf, tb, tw} table becomes a triple; anything else is left for Problem to judge."""
    if isinstance(entry, dict):
        if set(entry) != {"tf", "tb", "tw"}:
            raise ProblemError(f"stage_costs[{index}] must have exactly tf, tb, tw; got {sorted(entry)}")
        return (entry["tf"], entry["tb"], entry["tw"])
    return entry


def read_problem_file(path: str) -> dict[str, Any]:
    """Reads a TOML or JSON problem file into a dict (fields as in FIELDS)."""
    file = Path(path)
    text = read_text(path, "problem file", ProblemError)
    try:
        if file.suffix == ".json":
            return parse_json(text)
        return tomllib.loads(text)
    except (ValueError, RecursionError) as err:  # decode errors, ints over 4300 digits, deep nesting
        raise ProblemError(f"problem file {path} is malformed: {err}") from None
