"""Whether torch's ``PipelineScheduleMulti`` reads a compute-only CSV right.

It runs the rows in lockstep, a column at a time, pairing each send with the receive in the same
column: an action whose input comes from another rank's action in the same or a later column gets
another action's tensor and trains wrong gradients, silently (a CSV without the idle cells: the
compact layout, and every CSV schedc wrote before its exports kept them). ``_PipelineScheduleRuntime``
reads each row as its rank's own sequence and is not affected; nor are torch's ``compute_comms``
dumps, which only it reads.
"""

from __future__ import annotations

from collections.abc import Sequence

from schedc.actions import Action, is_overlap, parse_cell, transfer_of
from schedc.dag import dependencies
from schedc.problem import Problem

Placed = tuple[int, int, Action]
"""(rank, column, action) of a compute action in the CSV, from 0."""


def _key(action: Action) -> tuple[str, int, int]:
    """What a neighbour receives: a stage's forward output, or its input gradient (I or a whole B)."""
    return ("F" if action.kind == "F" else "back", action.stage, action.mb)


def lockstep_conflict(problem: Problem, rows: Sequence[Sequence[str]]) -> tuple[Placed, Placed] | None:
    """The first (consumer, producer) whose input crosses ranks in the same or a later column."""
    if _runtime_only(rows):
        return None
    placed: dict[tuple[str, int, int], Placed] = {}
    for r, row in enumerate(rows):
        for c, cell in enumerate(row):
            placed.update({_key(a): (r, c, a) for a in parse_cell(cell) if a.kind != "W"})
    for r, c, action in sorted(placed.values(), key=lambda placed: (placed[1], placed[0])):
        needed = Action("I", action.stage, action.mb) if action.kind == "B" and problem.split else action
        for d in dependencies(problem, needed):
            producer = placed.get(_key(d))
            if producer is not None and producer[0] != r and producer[1] >= c:
                return (r, c, action), producer
    return None


def shared_neighbours(problem: Problem) -> tuple[int, int] | None:
    """(stage, rank) of the first stage whose successor is on its rank (a V shape, p = 1): torch's
    ``PipelineScheduleMulti`` sends between them over the process group, which fails on gloo."""
    ranks = problem.stage_rank
    return next(((s, r) for s, r in enumerate(ranks[:-1]) if ranks[s + 1] == r), None)


def _runtime_only(rows: Sequence[Sequence[str]]) -> bool:
    """A compute_comms dump or an OVERLAP_F_B cell: only ``_PipelineScheduleRuntime`` reads it."""
    return any(is_overlap(cell) or (not parse_cell(cell) and transfer_of(cell) is not None)
               for row in rows for cell in row)


def lockstep_note(problem: Problem, rows: Sequence[Sequence[str]], path: str) -> str | None:
    """For a CSV that ``PipelineScheduleMulti`` would fail on (gloo; NCCL was not tried) or misread,
    one line each (None otherwise)."""
    shared = shared_neighbours(problem)
    notes = [_shared_note(*shared)] if shared is not None and not _runtime_only(rows) else []
    found = lockstep_conflict(problem, rows)
    if found is not None:
        notes.append(_conflict_note(found, path, bool(notes)))
    return "\n".join(notes) or None


def _shared_note(s: int, r: int) -> str:
    return (f"note: torch's PipelineScheduleMulti sends between stages {s} and {s + 1}, which share rank "
            f"{r}, over the process group, which gloo refuses (\"Pair is not connected\"); "
            "_PipelineScheduleRuntime runs this CSV")


def _conflict_note(found: tuple[Placed, Placed], path: str, shared: bool) -> str:
    """The misread; beside a ``_shared_note`` only for a backend that runs such a file at all (gloo
    does not, nor does it with the idle cells, so no advice to write them)."""
    (r, c, action), (pr, pc, producer) = found
    where = "where a backend runs it (not gloo), " if shared else ""
    rewrite = f"`schedc show {path} --csv OUT.csv` writes it with the idle cells"
    advice = f"; whether {rewrite} it reads right was not tried" if shared else f"; {rewrite} both read"
    return (f"note: {where}torch's PipelineScheduleMulti runs the columns in lockstep, pairing each send "
            f"with the receive in the same column: here {action} (rank {r}, column {c + 1}) takes its input "
            f"from {producer} (rank {pr}, column {pc + 1}), so it would pair the wrong tensors and train "
            f"wrong gradients, silently (_PipelineScheduleRuntime reads it right){advice}")
