"""The list scheduler's portfolio: which variants (priority rule, window, admission) it runs on a
problem, and in what order. The tables were tuned on the benchmarks each docstring names; the
engine that runs one variant is ``list_scheduler.run_variant``."""

from __future__ import annotations

import math
from dataclasses import dataclass, replace

from schedc.baselines import applicable
from schedc.problem import Problem
from schedc.solvers.admission import ADMISSIONS
from schedc.solvers.priorities import REFERENCE, RULES

WINDOWS = ("none", "1f1b", "1f1b+1", "2x1f1b")


@dataclass(frozen=True)
class Variant:
    """One way to run the list scheduler: a priority rule, a virtual-cap window, an admission policy."""

    rule: str = "zb"
    window: str = "none"
    admission: str = "banker"
    wait: bool = False
    """Idle for a task of higher priority that surely arrives before the chosen one would end."""
    entry: str | None = None
    """Admission policy of the rank that holds stage 0, where it differs from ``admission``
    (``VSHAPE_RUNS``); written 'entry:admission' in the variant's name."""

    def __str__(self) -> str:
        admission = self.admission if self.entry is None else f"{self.entry}:{self.admission}"
        return f"{self.rule}/{self.window}/{admission}{'/wait' if self.wait else ''}"


def variant_named(name: str) -> Variant:
    """The variant a name such as 'zb/k2/banker/wait' stands for (``str(variant)`` reversed)."""
    rule, window, admission, *wait = name.split("/")
    entry, _, rest = admission.rpartition(":")
    return Variant(rule, window, rest, wait=bool(wait), entry=entry or None)


PORTFOLIO = tuple(variant_named(name) for name in (
    "lst-mb/none/due", "ff/none/forecast", "lst-mb/none/forecast/wait", "zb/none/forecast",
    "ff/none/overlap", "lst/2x1f1b/due/wait", "zb-bfs/none/banker", "head/none/forecast", "ff/none/banker",
    "ff/none/overlap/wait", "lst-mb/none/forecast", "ff/1f1b/banker", "lst-mb/none/room",
    "zb/none/forecast/wait", "ff/none/due", "lst-mb/none/banker", "lst/none/forecast/wait",
))
"""Variants in the order that covered the quick quality grid best (``benchmarks/list_scheduler_quality.py``,
equal, unequal and unbalanced costs: 1296 instances): each adds the most to the ones before. With the
reference variants below they came within 0.01% (mean) and 2.2% (worst) of the best of all."""

REFERENCE_RUNS = ("none/forecast", "none/forecast/wait", "none/banker", "none/due/wait")
"""Window/admission[/wait] of the runs of each applicable baseline as a reference rule."""

FLIGHT_RUNS = ("ff/k{}/banker", "head/k{}/banker/wait", "zb/k{}/banker")
"""Runs of each in-flight window 'kN' (N from ``flight_counts``), for v > 1 under a cap: no admission
policy keeps a rank with two stages from letting a third microbatch in while two are in flight, which
starves their second-stage F's (p16-m32-v2-unsplit-c1_2-mem3_2-uneq: 1955 -> 1582 with N = 2).
(measurements: benchmarks/SOLVER_NOTES.md, *Moved from docstrings*, ``list_portfolio.FLIGHT_RUNS``)"""


VSHAPE_RUNS = tuple(variant_named(name) for name in (
    "head/none/forecast:banker/wait", "lst/none/forecast:due/wait", "head/none/room:forecast/wait",
    "lst/none/banker:forecast", "lst/none/room:forecast/wait", "lst/none/room:forecast",
    "lst/none/due:overlap/wait", "zb/none/due:banker", "lst-mb/none/forecast:overlap",
))
"""Runs for V shapes under a cap, with an admission policy of their own on rank 0, which holds the
first and the last stage, so that its entries set the pipeline's pace and its last stage competes
with them for memory. The best of 30 policy pairs (sweep, cap 3: 168.5 -> 159); looped gained little.
(measurements: benchmarks/SOLVER_NOTES.md, *Moved from docstrings*, ``list_portfolio.VSHAPE_RUNS``)"""


DEEP_RUNS = tuple(variant_named(f"{rule}/none/lookahead") for rule in ("zb", "lst-mb", "ff"))
"""Runs for three stages per rank or more under a cap, with the admission that projects the level to
a newcomer's last F on the rank (``admission.py``; forecast with v <= 2): list plans 4.1% shorter on
average, up to 15%. They run first: behind the others a default solve's list budget cut them off.
(measurements: benchmarks/SOLVER_NOTES.md, *Moved from docstrings*, ``list_portfolio.DEEP_RUNS``)"""


ALLOCATING_RUNS = ("zb/a{n}/banker", "head/a{n}/due", "ff/a{n}/forecast", "zb/a{less}/banker")
"""Runs for three stages per rank or more under a cap, n = floor(smallest cap), less = n - 1 (at
least 1): at most n microbatches still allocating on a rank, each of which may come to hold a full
activation, so that early entries cannot crowd out the deeper stages' F's of those ahead (as a
CP-SAT plan of p=4 m=16 v=4 mem=2 does: two in, then one more as each pair's deepest F's are done).
Picked on 80 capped instances (p 4 and 8, v 3 and 4, m 2p and 4p, caps 1 to p/2 or 4, equal costs
or tb = 2 with comm 1/2; ``benchmarks/SOLVER_NOTES.md``), checked on ``benchmarks/deep_stages.py``'s
32, not used to pick them: 24 list plans shorter, by 3.9% on average and up to 14.9%."""


def allocating_runs(problem: Problem) -> list[Variant]:
    """``ALLOCATING_RUNS`` for the problem (none without a cap)."""
    caps = [c for c in problem.binding_caps if c is not None]
    if not caps:
        return []
    n = max(1, math.floor(min(caps)))
    return [variant_named(run.format(n=n, less=max(1, n - 1))) for run in ALLOCATING_RUNS]


def variants(problem: Problem, thorough: bool = False) -> list[Variant]:
    """Distinct variants for the problem: the portfolio and the baselines that apply as reference
    rules, then (``thorough``) every other combination. Admission policies differ only under a cap
    (real or virtual) and with v > 1 (a microbatch needs nothing more after its entry when v = 1), so
    elsewhere they collapse to 'banker'; with v = 2 'lookahead' is 'forecast'."""
    capped = any(c is not None for c in problem.binding_caps)

    def plain(v: Variant) -> Variant:
        counted = flight_limit(v.window) is not None or allocating_limit(v.window) is not None
        if problem.v == 1 or (not capped and (v.window == "none" or counted)):
            return Variant(v.rule, v.window, "banker", wait=v.wait)
        if problem.v == 2:
            same = {"lookahead": "forecast"}
            return replace(v, admission=same.get(v.admission, v.admission), entry=same.get(v.entry, v.entry))
        return v

    references = [REFERENCE + name for name in applicable(problem)]
    chosen = [*DEEP_RUNS, *allocating_runs(problem)] if capped and problem.v >= 3 else []  # first: a
    # solve's budget may cut the rest
    chosen += [*PORTFOLIO, *(variant_named(f"{rule}/{run}") for rule in references for run in REFERENCE_RUNS)]
    chosen += [variant_named(run.format(n)) for n in flight_counts(problem) for run in FLIGHT_RUNS]
    if capped and problem.placement == "vshape":
        chosen += VSHAPE_RUNS
    if thorough:
        chosen += [Variant(rule, window, admission)
                   for window in WINDOWS for admission in ADMISSIONS for rule in (*RULES, *references)]
    out: list[Variant] = []
    for v in chosen:
        if plain(v) not in out:
            out.append(plain(v))
    return out


def flight_limit(window: str) -> int | None:
    """N of a 'kN' window (at most N microbatches in flight on every rank), else None."""
    return _count(window, "k")


def allocating_limit(window: str) -> int | None:
    """N of an 'aN' window (at most N microbatches with an F still to run, on every rank), else None."""
    return _count(window, "a")


def _count(window: str, letter: str) -> int | None:
    if window.startswith(letter) and window[1:].isdigit() and int(window[1:]) >= 1:
        return int(window[1:])
    return None


FLIGHT_TASK_RUNS = 600_000
"""Tasks scheduled by all the in-flight runs together, at most (about 3 s): the best N is sharp
(p16-m32-v2-split-c1_2-mem16-eq: N = 21 only), so every N is run where this allows, and evenly
spaced ones (2 and the largest among them) on larger problems, where one worker runs every variant
whatever the time limit."""


def flight_counts(problem: Problem) -> list[int]:
    """The N of the 'kN' windows the portfolio runs: from 2 to what the largest cap holds, below m
    (none for v = 1 or without a cap: see FLIGHT_RUNS), thinned to FLIGHT_TASK_RUNS."""
    caps = [c for c in problem.binding_caps if c is not None]
    if problem.v == 1 or not caps:
        return []
    counts = list(range(2, min(problem.m - 1, math.floor(max(caps) / problem.stage_activation)) + 1))
    room = max(1, FLIGHT_TASK_RUNS // (len(FLIGHT_RUNS) * problem.num_tasks))
    if len(counts) <= room:
        return counts
    if room == 1:
        return counts[:1]
    return sorted({counts[round(i * (len(counts) - 1) / (room - 1))] for i in range(room)})
