"""A plan's timeline as text, one line per rank, like the tables in the pipeline papers.

Cells are placed by the simulator's exact times. The time quantum is the largest q that divides
every start and end (a Fraction gcd), so every action covers a whole number of cells and no
rounding moves an action. Two layouts:

* labels: each cell is one quantum and shows ``F3``/``I3``/``W3``/``B3`` (with a chunk letter
  ``a``, ``b``, ... when ranks hold several stages), a longer action continues with ``-``, idle
  cells are ``__``: ``F0 F1 __ I0 W0``;
* compact, when labels do not fit the width: one character per column, each column owned by the
  action that fills most of it (``_`` when mostly idle); a run of columns owned by one action
  shows its label when wide enough, else its kind letter. A column covers k quanta, the smallest
  k that fits (k = 1 keeps it exact).
"""

from __future__ import annotations

import math
from fractions import Fraction

from schedc.actions import Action
from schedc.exact import fmt
from schedc.plan import Plan
from schedc.problem import Problem
from schedc.simulate import Timeline

IDLE = "_"
CONTINUE = "-"
CHUNKS = "abcdefghijklmnopqrstuvwxyz"


def quantum(timeline: Timeline) -> Fraction:
    """Largest q such that every start and end, measured from the first start, is a multiple of q."""
    origin = int(timeline.start * timeline.scale)
    g = math.gcd(*(t - origin for times in (*timeline.starts, *timeline.ends) for t in times))
    return Fraction(g, timeline.scale) if g else Fraction(1)


def label(problem: Problem, action: Action) -> str:
    """``F3``; with several stages per rank the chunk follows as letters: ``F3a``, ``F3b``, and past
    ``z`` (v > 26) ``F3aa``, ``F3ab``, ... (chunk 26 drew as ``a``, chunk 0's label)."""
    text = f"{action.kind}{action.mb}"
    if problem.v > 1:
        rank = problem.stage_rank[action.stage]
        text += _chunk_letters(problem.rank_stages[rank].index(action.stage))
    return text


def _chunk_letters(chunk: int) -> str:
    """a..z, then aa, ab, ... (spreadsheet columns from 0)."""
    letters = ""
    chunk += 1
    while chunk:
        chunk, rest = divmod(chunk - 1, len(CHUNKS))
        letters = CHUNKS[rest] + letters
    return letters


def _cells(timeline: Timeline, q: Fraction) -> list[list[tuple[Action, int, int]]]:
    """Per rank: (action, first cell, end cell) in integer quanta from the first start."""
    t0 = timeline.start
    return [
        [(s.action, int((s.start - t0) / q), int((s.end - t0) / q)) for s in rank] for rank in timeline.slots
    ]


def _label_rows(problem: Problem, cells: list[list[tuple[Action, int, int]]], n: int, cw: int) -> list[str]:
    rows = []
    for rank in cells:
        parts, at = [], 0
        for action, start, end in rank:
            if end == start:
                continue  # a zero-length action (tw = 0) has no cell to draw in
            parts += [IDLE * cw] * (start - at)
            width = (end - start) * (cw + 1) - 1
            parts.append(label(problem, action).ljust(width, CONTINUE))
            at = end
        parts += [IDLE * cw] * (n - at)
        rows.append(" ".join(parts))
    return rows


def _owners(rank: list[tuple[Action, int, int]], cols: int, k: int, n: int) -> list[int | None]:
    """Per column of k quanta: index of the action filling most of it; None when mostly idle."""
    best: list[tuple[int, int | None]] = [(0, None)] * cols
    busy = [0] * cols
    for i, (_, start, end) in enumerate(rank):
        for b in range(start // k, (end - 1) // k + 1):
            overlap = min(end, (b + 1) * k) - max(start, b * k)
            busy[b] += overlap
            if overlap > best[b][0]:
                best[b] = (overlap, i)
    return [i if 2 * busy[b] >= min(k, n - b * k) else None for b, (_, i) in enumerate(best)]


def _compact_rows(
    problem: Problem, cells: list[list[tuple[Action, int, int]]], n: int, k: int
) -> list[str]:
    """Each run of columns owned by one action shows its label when the run is wide enough, else
    its kind letter (a microbatch number is never cut short)."""
    cols = -(-n // k)
    rows = []
    for rank in cells:
        owners, parts, c = _owners(rank, cols, k, n), [], 0
        while c < cols:
            run = c
            while run < cols and owners[run] == owners[c]:
                run += 1
            if owners[c] is None:
                parts.append(IDLE * (run - c))
            else:
                action = rank[owners[c]][0]
                text = label(problem, action)
                parts.append(text if len(text) <= run - c else action.kind)
                parts.append(CONTINUE * (run - c - len(parts[-1])))
            c = run
        rows.append("".join(parts))
    return rows


def _ruler(offsets: list[int], times: list[Fraction], width: int) -> str:
    """Time labels above the columns, left-aligned to their column, skipped where they would touch
    the previous label or run past the rows' width."""
    line = ""
    for pos, t in zip(offsets, times, strict=True):
        text = fmt(t)
        if pos >= len(line) + (2 if line else 0) and pos + len(text) <= width:
            line = line.ljust(pos) + text
    return line


def _zero_length_note(timeline: Timeline) -> list[str]:
    """Says that actions with no duration (tw = 0) are in the plan, since no cell shows them."""
    kinds: dict[str, int] = {}
    for rank in timeline.slots:
        for s in rank:
            if s.end == s.start:
                kinds[s.action.kind] = kinds.get(s.action.kind, 0) + 1
    if not kinds:
        return []
    counts = ", ".join(f"{n} {kind}" for kind, n in sorted(kinds.items()))
    return [f"({counts} of zero length take no cell)"]


def render_timeline(plan: Plan, width: int) -> list[str]:
    """The timeline in at most ``width`` columns (never less than a few cells per rank)."""
    problem, timeline = plan.problem, plan.timeline
    q = quantum(timeline)
    n = int(timeline.makespan / q)
    cells = _cells(timeline, q)
    names = [f"r{r}" for r in range(problem.p)]
    prefix = max(len(name) for name in names) + 1
    avail = max(width - prefix, 8)
    cw = max(len(label(problem, s.action)) for rank in timeline.slots for s in rank)
    if n * (cw + 1) - 1 <= avail:
        rows, k, note = _label_rows(problem, cells, n, cw), 1, ""
        offsets = [i * (cw + 1) for i in range(n)]
    else:
        k = -(-n // avail)  # integer ceilings: n may exceed what a float holds exactly
        rows = _compact_rows(problem, cells, n, k)
        offsets = list(range(-(-n // k)))
        unit = "time unit" if k * q == 1 else "time units"
        note = f"(1 column = {fmt(k * q)} {unit}; narrow actions show only their kind, the narrowest none)"
    times = [timeline.start + o * k * q for o in range(len(offsets))]
    lines = [" " * prefix + _ruler(offsets, times, len(rows[0]))]
    lines += [name.ljust(prefix) + row for name, row in zip(names, rows, strict=True)]
    if note:
        lines.append(note)
    lines += _zero_length_note(timeline)
    if problem.v > 1 and any(ch.isdigit() for row in rows for ch in row):  # some label is shown
        lines.append("(chunks: a = the rank's first stage in layer order, b = its second, ...)")
    return lines
