"""A stronger lower bound: one rank scheduled exactly, the rest of the pipeline as delays.

For a rank r keep its tasks, its no-overlap, its cap (exactly, as in the full model) and the
microbatch order, and replace every other rank by what it must at least cost:

- between two tasks a, b of r and of one microbatch, b starts no earlier than a's start plus the
  longest dependency chain from a to b (``RankModel._dist``), as in the full problem;
- release: if a (microbatch i) depends on a task x of another rank, the group of x (same stage
  and kind) runs x's microbatches 0..i one at a time on x's rank, so x_i starts at >= head(x) +
  i * dur(x), and a at >= that + dist(x start -> a start);
- tail: if a task y of another rank depends on a, y's microbatches i..m-1 run one at a time after
  y_i, so the schedule ends at >= end(a) + dist(a end -> y start) + (m - i) * dur(y) + tail(y).

Suffix (``first`` > 0, for ranks with too many tasks to model whole): keep only microbatches
first..m-1, with F(s_v, i) (the rank's last forward of i) no earlier than the cap's sequence floor
L_i (``cap_sequence.forward_floors``, valid in every schedule in microbatch order). Dropping the
earlier microbatches drops tasks, constraints and held memory (the cap and the frontiers, stated
over the kept microbatches with indices from ``first``, still hold: what the dropped ones hold is
>= 0), so it stays a relaxation; the floors carry the earlier microbatches' cost into it.

Every schedule of the full problem, restricted to r, is a schedule of this relaxation (microbatch
order is lossless, ``solvers.symmetry``), with makespan >= its objective. So CP-SAT's proven bound on
the relaxation, for any r, bounds the full problem. The relaxation has (m - first) * v * |kinds|
tasks and captures what the analytic bounds miss: how the cap and the rank's own sequencing
interact.

A block (several ranks kept exactly, each with its no-overlap and cap, the rest as delays) is a
relaxation by the same argument, and over all microbatches at least as strong as each of its
ranks alone: its constraints imply theirs (in a suffix they need not: a member's release counts
the dropped microbatches of the block's other groups, which the block drops). It sees the
collisions between its ranks that one rank's delays leave out. Measured on p=8 m=32 v=2 looped
mem=4 (equal costs), whose optimum is 115.5: rank 0 alone and the pairs (0, 7) and (0, 1) prove
113.5 in 14-29 s, ranks 0-3 prove 115.5 in 172 s hinted with the optimal plan (200 s with the
list plan's 120.5). The solver relaxes single ranks, and after its search the block of the three
strongest (``block_bound``, ``BLOCK_RANKS``): four ranks' proofs take minutes where it has seconds.
"""

from __future__ import annotations

import math
import time
from collections.abc import Callable, Sequence
from dataclasses import replace
from fractions import Fraction

from ortools.sat.python import cp_model

from schedc.actions import Action
from schedc.plan import Plan
from schedc.problem import Problem
from schedc.solvers.bounds import rank_terms
from schedc.solvers.cap_sequence import forward_floors
from schedc.solvers.cpsat_model import (
    Frontier,
    Lifetime,
    add_cap_cumulative,
    add_frontiers,
    hint_schedule,
    serial_length,
)
from schedc.solvers.cpsat_params import proof_params, set_limits, set_param
from schedc.solvers.cpsat_solve import Clock, ceil_bound
from schedc.solvers.interruptible import run_interruptible
from schedc.solvers.paths import reaches, stage_paths
from schedc.solvers.progress import Interrupted
from schedc.solvers.symmetry import canonical_starts, frontiers_exact

Times = dict[Action, Fraction]


def _dag_rank(problem: Problem) -> Callable[[Action], tuple[int, int]]:
    """Sort key that lists every task of one microbatch after its dependencies (``schedc.dag``'s
    rules): forwards by stage, then backwards (I or B) from the last stage down, each W right after
    its I."""
    last = problem.num_stages

    def key(a: Action) -> tuple[int, int]:
        if a.kind == "F":
            return (a.stage, 0)
        return (2 * last - a.stage, 1 if a.kind == "W" else 0)

    return key


def _one_microbatch(problem: Problem) -> tuple[list[Action], Times, Times, Times]:
    """The one-microbatch DAG's tasks in dependency order, their durations, head[a] (longest path
    from the source to a's start) and tail[a] (after a's end), from ``paths.stage_paths``."""
    paths = stage_paths(problem)
    order = sorted((Action(kind, stage, 0) for kind, stage in paths.head), key=_dag_rank(problem))
    dur = {a: problem.duration(a.kind, a.stage) for a in order}
    head = {a: paths.head[a.kind, a.stage] for a in order}
    tail = {a: paths.tail[a.kind, a.stage] for a in order}
    return order, dur, head, tail


def relaxed_rank_bound(problem: Problem, rank: int | Sequence[int], *, time_limit: float, workers: int = 1,
               clock: Clock | None = None, first: int = 0,
               hint: tuple[Times, Fraction] | None = None) -> Fraction:
    """CP-SAT's proven lower bound on the relaxation of ``rank`` over microbatches ``first``..m-1
    (0 if it proves nothing in time). With several workers the limit is wall time and covers the
    model's construction too. ``hint``: a plan's canonical starts and makespan (``RankModel.hint``)."""
    t0 = time.perf_counter()
    relaxation = RankModel(problem, rank, first)
    if hint is not None:
        relaxation.hint(*hint)
    built = time.perf_counter() - t0 if workers > 1 else 0.0
    return proven_bound(relaxation, time_limit=max(0.01, time_limit - built), workers=workers, clock=clock)


class RankModel:
    """Build: the relaxation of one rank (or of a block of ranks) over microbatches first..m-1 as a
    CP-SAT model (module doc). The model's microbatch i is the problem's first + i."""

    def __init__(self, problem: Problem, rank: int | Sequence[int], first: int = 0) -> None:
        self.problem, self.first = problem, first
        self.ranks = (rank,) if isinstance(rank, int) else tuple(rank)
        self.order, self.dur1, self.head, self.tail = _one_microbatch(problem)
        self.scale, self.kept = problem.time_scale, problem.m - first
        self.ub = math.ceil(serial_length(problem) * self.scale)  # the optimum, a replay's, lies within
        self.model = cp_model.CpModel()
        mine = [a for a in self.order if problem.stage_rank[a.stage] in self.ranks]
        self.others = [x for x in self.order if problem.stage_rank[x.stage] not in self.ranks]
        self.start, self.dur = self._tasks(mine)
        self.z = self.model.new_int_var(0, self.ub, "z")
        self._sequencing(mine)
        self.lifetimes, self.frontiers = [], []
        kept = replace(problem, m=self.kept)
        for r in self.ranks:
            own = [t for t in self.start if problem.stage_rank[t.stage] == r]
            # one task at a time on a kept rank, as in the full model: the collisions the bound is for
            self.model.add_no_overlap([self.model.new_fixed_size_interval_var(self.start[t], self.dur[t], "")
                                       for t in own])
            lifetimes, frontiers = _memory(kept, r, self.model, self.start, self.dur, self.scale, self.ub)
            self.lifetimes += lifetimes
            self.frontiers += frontiers
        self.model.minimize(self.z)

    def hint(self, starts: Times, value: Fraction) -> None:
        """Warm start from a plan of the problem (its canonical starts and its makespan): restricted to
        the rank and the kept microbatches it solves the relaxation (module doc), so the search starts
        at the plan's value. Without it CP-SAT's own first answers start far above the optimum (156
        on rank 0 of p=8 m=32 v=2 looped mem=4, whose optimum 113.5 it then proved at 28-33 s; 18 s
        hinted)."""
        shifted = {t: starts[Action(t.kind, t.stage, self.first + t.mb)] for t in self.start}
        hint_schedule(self.model, self.problem, self.scale, self.start, shifted, self.lifetimes,
                      self.frontiers)
        self.model.add_hint(self.z, int(value * self.scale))

    def _dist(self, a: Action, b: Action) -> Fraction | None:
        """Longest path from a's start to b's start, None if b is not downstream of a (nor a): b's
        head minus a's (``paths``' module doc; a table of every pair was quadratic in the stages)."""
        return self.head[b] - self.head[a] if b != a and reaches(a, b) else None

    def _release(self, a: Action, i: int) -> Fraction:
        """Earliest start of a's microbatch i: the other ranks' groups before it run one at a time."""
        best = self.head[a]
        for x in self.others:
            if (path := self._dist(x, a)) is not None:
                best = max(best, self.head[x] + i * self.dur1[x] + path)
        return best

    def _after(self, a: Action, i: int) -> Fraction:
        """Least time after a's microbatch i ends: the other ranks' groups after it, one at a time."""
        best = self.tail[a]
        for x in self.others:
            if (path := self._dist(a, x)) is not None:
                best = max(best, path - self.dur1[a] + (self.m - i) * self.dur1[x] + self.tail[x])
        return best

    @property
    def m(self) -> int:
        return self.problem.m

    def _tasks(self, mine: list[Action]) -> tuple[dict[Action, cp_model.IntVar], dict[Action, int]]:
        """A start per kept task, no earlier than its release (and, in a suffix, than the cap's
        sequence floor on the rank's last forward: ``cap_sequence.forward_floors``)."""
        problem, first = self.problem, self.first
        floors = {Action("F", problem.rank_stages[r][-1], 0): row  # no row without a cap
                  for r in self.ranks if first and (row := forward_floors(problem, r))}
        start, dur = {}, {}
        for a in mine:
            for i in range(self.kept):
                t = Action(a.kind, a.stage, i)
                dur[t] = int(self.dur1[a] * self.scale)
                low = self._release(a, first + i)
                if a in floors:
                    low = max(low, floors[a][first + i])
                start[t] = self.model.new_int_var(math.ceil(low * self.scale), self.ub, str(t))
        return start, dur

    def _sequencing(self, mine: list[Action]) -> None:
        """The objective after every task's tail; the one-microbatch chains between the rank's tasks;
        microbatch order within each (stage, kind) (lossless: ``solvers.symmetry``)."""
        model, start, dur, scale = self.model, self.start, self.dur, self.scale
        for t in start:
            a = Action(t.kind, t.stage, 0)
            model.add(self.z >= start[t] + dur[t] + math.ceil(self._after(a, self.first + t.mb) * scale))
            for b in mine:
                if (path := self._dist(a, b)) is not None:
                    gap = math.ceil(path * scale)
                    model.add(start[Action(b.kind, b.stage, t.mb)] >= start[t] + gap)
            if t.mb + 1 < self.kept:
                model.add(start[Action(t.kind, t.stage, t.mb + 1)] >= start[t] + dur[t])


def relaxation_params(workers: int) -> dict[str, object]:
    """Only the bound matters: with 2 workers CP-SAT's default search and its lower-bound search, no
    LNS. The first proves small relaxations sooner, the second raises the others' bounds (together 6.7 s
    where either alone took 9.1 s or more); one worker: the lower-bound search (``proof_params``).
    (measurements: benchmarks/SOLVER_NOTES.md, *Moved from docstrings*, ``relaxation.relaxation_params``)"""
    if workers == 2:
        return {"extra_subsolvers": ["objective_lb_search"], "num_full_subsolvers": 2}
    return proof_params(workers)


def proven_bound(relaxation: RankModel, *, time_limit: float, workers: int = 1,
                 clock: Clock | None = None) -> Fraction:
    """Solve and extract: the relaxation's optimum, else CP-SAT's proven bound (0 if none). A
    Ctrl-C stops CP-SAT as its limit would, and ``Interrupted`` carries the bound proven by then."""
    solver = cp_model.CpSolver()
    set_limits(solver, time_limit, workers)
    for key, value in relaxation_params(workers).items():
        set_param(solver.parameters, key, value)
    status, interrupted = run_interruptible(solver, relaxation.model)
    if clock is not None:
        clock.charge(solver)
    scale, bound = relaxation.scale, solver.best_objective_bound
    if status == cp_model.OPTIMAL:
        proven = Fraction(int(solver.objective_value), scale)
    else:
        proven = Fraction(max(0, ceil_bound(bound)), scale) if math.isfinite(bound) else Fraction(0)
    if interrupted:
        raise Interrupted(None, proven or None)
    return proven


def _memory(problem: Problem, rank: int, model: cp_model.CpModel, start: dict[Action, cp_model.IntVar],
            dur: dict[Action, int], scale: int, ub: int) -> tuple[list[Lifetime], list[Frontier]]:
    """The rank's cap, as exactly as the full model states it (``cpsat_model``: frontiers, and a
    cumulative when the rank holds several stages or its frontiers are too many to state), less its
    cap precedences, which the frontiers and microbatch order imply at one stage per rank (tested)
    and the cumulative at several; returns their helper variables, for hints."""
    lifetimes: list[Lifetime] = []
    frontiers: list[Frontier] = []
    if problem.binding_caps[rank] is None:
        return lifetimes, frontiers
    for s in problem.rank_stages[rank]:
        frontiers += add_frontiers(model, problem, s, start, dur, ub)
    if problem.v > 1 or not frontiers_exact(problem, rank):
        lifetimes += add_cap_cumulative(model, problem, rank, start, dur, scale, ub)
    return lifetimes, frontiers


MIN_RANK_SECONDS = 0.4
"""Below this much time left no further rank is tried: building its model alone can take that long.
With one worker the time is CP-SAT's deterministic time, which building does not spend (and a
one-worker solve relaxes only problems of at most 2,500 tasks), so there any share above the
0.05 s a part needs is used: a 4 s one-worker LNS solve of p=3 m=6 skipped its relaxation, which
proves the optimum in 0.1 s."""
RANK_SECONDS = 1.0
"""Least time a rank's suffix relaxation gets (if that much is left): an even split over many ranks
would leave the most constrained one too little to prove anything."""
FIRST_SHARE = 1 / 2
"""Of the relaxation time, the share of the strongest rank (``rank_strength_order``), or of the
first rank taken (after the search, where ``portfolio`` relaxed the strongest before it, the second
strongest): its bound is the one that counts, and it grows with time (rank 0 of
p8-m32-v2-unsplit-c0-mem4-unbal: 222.1 in 5 s, 227.4 proven in 37 s), where an even split gave
each of 8 ranks well under a second."""
SUFFIX_SHARE = 1 / 3
"""Of a rank's time, the share for the half-suffix relaxation tried before the whole one: with the
cap floors it often proves more, and faster, than the whole rank (whose first microbatches are easy)."""


def rank_strength_order(problem: Problem) -> list[int]:
    """Capped ranks first, then by their analytic terms (``bounds.rank_terms``), largest first: the
    strongest relaxation has been that of the rank whose terms are largest. Measured at 5 s a rank:
    p8-m32-v2-unsplit-c0-mem4-unbal, rank 0 (cap sequence 210.4, the largest) 222.1 against
    206.1 or less elsewhere but rank 7 (177.5); p8-m16-v2V-split-c0-mem4-uneq, rank 7 (sequence 68,
    tied with ranks 5 and 6, largest Jackson term 67.5) 79.5 against 74 or less."""
    def key(r: int) -> tuple:
        terms = rank_terms(problem, r)
        return problem.binding_caps[r] is None, -max(terms), -sum(terms), r

    return sorted(range(problem.p), key=key)


BLOCK_RANKS = 3
"""Ranks relaxed together after the search (``block_bound``): on the looped cap sweep three proved half a
point more than rank 0 alone, in 9-13 s, and four no more, in 15-18 s; four proved p=8 m=32 v=2 mem=4's
optimum, but in about 200 s.
(measurements: benchmarks/SOLVER_NOTES.md, *Moved from docstrings*, ``relaxation.BLOCK_RANKS``)"""


def block_bound(problem: Problem, *, time_limit: float, workers: int = 1, clock: Clock | None = None,
                incumbent: Plan | None = None) -> Fraction:
    """The relaxation of the ``BLOCK_RANKS`` strongest ranks together (``rank_strength_order``):
    over all microbatches at least as strong as each of them alone (module doc), and it sees their
    collisions. ``incumbent`` warm-starts it; 0 if it proves nothing in time."""
    ranks = sorted(rank_strength_order(problem)[:BLOCK_RANKS])
    hint = None if incumbent is None else (canonical_starts(incumbent.timeline), incumbent.makespan)
    try:
        return relaxed_rank_bound(problem, ranks, time_limit=time_limit, workers=workers, clock=clock,
                                  hint=hint)
    except KeyboardInterrupt:  # Ctrl-C while the model is built: nothing proven yet
        raise Interrupted(None, None) from None


def relaxation_bound(problem: Problem, *, time_limit: float, workers: int = 1,
                     max_tasks: int | None = None, which: slice = slice(None),
                     clock: Clock | None = None, incumbent: Plan | None = None) -> Fraction:
    """The best rank relaxation within ``time_limit``, strongest ranks first
    (``rank_strength_order``): the first gets FIRST_SHARE of the time, the others split the rest
    evenly (a rank proven early leaves its time to the next). Each rank is relaxed over the last
    half of its microbatches, then over all of them. Where ``max_tasks`` cuts, only over the last
    microbatches it allows (the suffix of the module doc), each rank given at least
    ``RANK_SECONDS``: the suffix models are small and their floors come from the cap sequence.
    ``which`` takes a slice of that order (``portfolio`` relaxes the strongest rank before its
    search and the others after it). A Ctrl-C raises ``Interrupted`` with the bound proven so far.
    A ``clock`` of ``time_limit`` given by the caller tells it what the relaxation left, in the
    unit the search counts (deterministic time with one worker, so the same seed repeats). An
    ``incumbent`` (a plan of the problem) warm-starts every relaxation (``RankModel.hint``)."""
    clock = clock or Clock(time_limit, workers)
    hint = None if incumbent is None else (canonical_starts(incumbent.timeline), incumbent.makespan)
    per_microbatch = problem.v * len(problem.kinds)
    kept = problem.m if max_tasks is None else max(1, min(problem.m, max_tasks // per_microbatch))
    ranks = rank_strength_order(problem)[which]
    sizes = [kept] if kept < problem.m or problem.m < 4 else [problem.m - problem.m // 2, kept]
    best = Fraction(0)
    try:
        for k, r in enumerate(ranks):
            least = MIN_RANK_SECONDS if workers > 1 else 0.05
            left = clock.left(enough=least)
            if left <= least:
                break
            share = max(left / (len(ranks) - k), FIRST_SHARE * left if k == 0 else 0)
            if kept < problem.m:
                share = max(share, min(left, RANK_SECONDS))
            for n, size in enumerate(sizes):
                part = share * SUFFIX_SHARE if n + 1 < len(sizes) else share - (left - clock.left())
                if part <= 0.05 or (problem.binding_caps[r] is None and size < problem.m):
                    continue
                best = max(best, relaxed_rank_bound(problem, r, time_limit=part, workers=workers,
                                                    clock=clock, first=problem.m - size, hint=hint))
    except Interrupted as stop:  # inside a relaxation's search: its bound, proven by then, counts too
        raise Interrupted(None, max(best, stop.floor or 0) or None) from None
    except KeyboardInterrupt:  # Ctrl-C: the bound proven so far still counts (``solve`` takes it)
        raise Interrupted(None, best or None) from None
    return best
