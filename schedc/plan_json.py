"""Plan <-> JSON on disk, with a format version. load(save(plan)) == plan, exactly.

The file records the simulator's start and end of every action for other tools to read. On load
the orders are replayed; recorded times are checked (durations, no overlap, inputs arrived) so a
hand-edited file cannot carry numbers that no execution could produce.
"""

from __future__ import annotations

import json
from fractions import Fraction
from typing import Any

from schedc.actions import Action
from schedc.errors import PlanFormatError, SchedcError, ScheduleError
from schedc.exact import exact, to_json
from schedc.plan import Plan
from schedc.problem_io import problem_from_dict, problem_to_dict
from schedc.simulate import Slot
from schedc.validate import timing_errors

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


def save_plan(plan: Plan, path: str) -> None:
    with open(path, "w") as f:
        json.dump(plan_to_dict(plan), f, indent=1)
        f.write("\n")


def load_plan(path: str) -> Plan:
    """Reads a plan file; any defect is a one-line SchedcError naming what is wrong."""
    try:
        with open(path) as f:
            data = json.load(f)
    except OSError as err:
        raise PlanFormatError(f"cannot read plan {path}: {err.strerror}") from None
    except json.JSONDecodeError as err:
        raise PlanFormatError(f"plan {path} is not valid JSON: {err}") from None
    return plan_from_dict(data, path)


def plan_from_dict(data: Any, path: str = "plan") -> Plan:
    if not isinstance(data, dict) or data.get("format") != FORMAT:
        raise PlanFormatError(f"{path}: not a schedc plan (missing \"format\": \"{FORMAT}\")")
    if data.get("version") != VERSION:
        found = data.get("version")
        raise PlanFormatError(f"{path}: plan format version {found!r}, this schedc reads {VERSION}")
    try:
        problem = problem_from_dict(data["problem"])
        slots = _read_slots(data["ranks"])
        bound = data.get("lower_bound")
        plan = Plan(
            problem=problem,
            orders=tuple(tuple(s.action for s in rank) for rank in slots),
            source=str(data["source"]),
            status=data.get("status", "heuristic"),
            objective=data.get("objective", "makespan"),
            lower_bound=None if bound is None else exact(bound, "lower_bound"),
            solve_seconds=data.get("solve_seconds"),
        )
    except KeyError as err:
        raise PlanFormatError(f"{path}: missing field {err}") from None
    except SchedcError as err:
        raise type(err)(f"{path}: {err}") from None
    except (TypeError, ValueError) as err:
        raise PlanFormatError(f"{path}: malformed plan: {err}") from None
    errors = timing_errors(problem, slots) if len(slots) == problem.p else []
    if errors:
        raise ScheduleError(f"{path}: {errors[0]}")
    return plan


def _read_slots(ranks: Any) -> tuple[tuple[Slot, ...], ...]:
    if not isinstance(ranks, list):
        raise PlanFormatError("\"ranks\" must be a list with one list of actions per rank")
    out = []
    for r, rank in enumerate(ranks):
        row = []
        for k, entry in enumerate(rank):
            if not (isinstance(entry, list) and len(entry) == 3 and isinstance(entry[0], str)):
                raise PlanFormatError(f"rank {r} position {k}: expected [token, start, end], got {entry!r}")
            start: Fraction = exact(entry[1], "start")
            row.append(Slot(Action.parse(entry[0]), start, exact(entry[2], "end")))
        out.append(tuple(row))
    return tuple(out)
