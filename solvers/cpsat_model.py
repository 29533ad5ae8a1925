"""Builds the CP-SAT model of a problem: one interval per task, integer time and memory.

Every constraint mirrors a rule of the simulator (``schedc.simulate``) or is implied by one:

- time is scaled by the lcm of all denominators of costs and latency, so integer starts are exact;
- precedences come from ``schedc.dag`` (the one home of the rules) with their communication lag;
- no-overlap per rank: a rank runs one task at a time;
- the cap is a cumulative over activation lifetimes: F allocates at its start, I frees (1-w)/v
  and W frees w/v at their ends (B frees 1/v); a lifetime [F start, release end) is half-open,
  so a release at time t makes room for an F starting at t, exactly as the simulator counts it;
  a lifetime lasts at least its round trip (the dependency chain from F to the release);
- microbatch order, cap-implied precedences and release frontiers (``solvers.symmetry``: lossless
  for the makespan, argued there; not for spans, see ``solvers.span_bound``); with one stage per
  rank the frontiers state the cap exactly and replace the cumulative;
- the objective is the makespan (all starts >= 0 and F(0, 0) may start at 0) or the largest
  per-rank span measured the way the simulator measures it (see ``_add_objective``), or, with
  ``free_start``, from each rank's first start in the model (a relaxation of every plan's spans).
"""

from __future__ import annotations

import math
from collections.abc import Iterator
from dataclasses import dataclass, field
from fractions import Fraction

from ortools.sat.python import cp_model

from schedc.actions import Action
from schedc.dag import dependencies, lag
from schedc.errors import ProblemError
from schedc.exact import fmt_magnitude
from schedc.problem import Problem
from schedc.solvers.bounds import heads_and_tails
from schedc.solvers.paths import stage_paths
from schedc.solvers.symmetry import cap_precedences, frontier_options, frontiers_exact, order_pairs

Starts = dict[Action, cp_model.IntVar]
Lifetime = tuple[cp_model.IntVar, Action, Action]
"""An activation lifetime's length variable, its F and its release task."""
Frontier = tuple[cp_model.IntVar, tuple[cp_model.IntVar, ...], tuple[tuple[Action, ...], ...]]
"""A release frontier's helpers: (earliest, per-option last release, options)."""


@dataclass
class CpsatModel:
    """A built model and the handles that solving and extraction need."""

    problem: Problem
    model: cp_model.CpModel
    objective: str
    scale: int
    """Model time unit = 1 / scale of the problem's time."""
    horizon: int
    starts: Starts
    objective_var: cp_model.IntVar
    lifetimes: list[Lifetime] = field(default_factory=list)
    """Length variables of the activation lifetimes, for complete hints."""
    frontiers: list[Frontier] = field(default_factory=list)
    """Release-frontier helpers, for complete hints."""

    def to_time(self, value: int) -> Fraction:
        return Fraction(value, self.scale)


MAX_TICKS = 2**50
"""Largest scaled time the CP-SAT models may need: CP-SAT's integers hold 62 bits, its cumulative
multiplies times by demands and its LP works in doubles, so a wide margin keeps them exact."""


def serial_length(problem: Problem) -> Fraction:
    """Every task and every lag in a row: no replay ends later (its makespan is a path through its
    orders and the DAG, which visits each task once)."""
    work = sum(problem.duration(kind, s) for s in range(problem.num_stages) for kind in problem.kinds)
    return work * problem.m + problem.num_tasks * problem.comm


def check_integer_model(problem: Problem) -> None:
    """Every schedule fits in the serial one (``serial_length``): refuses a problem whose serial
    length, in ticks of the common time unit, CP-SAT's integers cannot hold; and, under a cap, one
    whose memory units (w_mem's denominator) they cannot hold (1e-30 raised a pybind RuntimeError
    from the cap's cumulative)."""
    scale = problem.time_scale
    ticks = serial_length(problem) * scale
    if ticks > MAX_TICKS:
        raise ProblemError(f"costs too large or too finely divided for CP-SAT's integers (a serial schedule "
                           f"is {fmt_magnitude(ticks)} ticks long, at most 2**50; ticks per time unit: "
                           f"{fmt_magnitude(scale)}): use coarser units (round fine costs, e.g. to 1e-6; "
                           "scale huge ones down), or use --backend list (backend='list' in solve())")
    units = problem.m * problem.memory_scale  # a rank's m activations, in the cap cumulative's units
    if any(c is not None for c in problem.binding_caps) and units > MAX_TICKS:  # no cumulative else
        raise ProblemError(f"w_mem too finely divided for CP-SAT's integers (m activations are "
                           f"{fmt_magnitude(units)} memory units, at most 2**50; units per activation: "
                           f"{fmt_magnitude(problem.memory_scale)}): round w_mem (e.g. to 1e-6), or use "
                           "--backend list (backend='list' in solve())")


def add_floor(cm: CpsatModel, floor: Fraction) -> None:
    """objective >= ``floor``, a lower bound proven elsewhere (analytic, a relaxation): it cuts off
    no schedule, and gives the search a bound its own LP relaxation may not reach, so a plan at the
    floor is known optimal at once."""
    if floor > 0:
        cm.model.add(cm.objective_var >= -((-floor.numerator * cm.scale) // floor.denominator))


def activation_releases(problem: Problem, rank: int) -> Iterator[tuple[Action, Action, int]]:
    """(F, the task that releases part of its activation, that part scaled by ``Problem.memory_scale``) for
    every activation share on ``rank``: the items of the rank's cap cumulative."""
    mscale = problem.memory_scale
    for s in problem.rank_stages[rank]:
        for i in range(problem.m):
            for kind in problem.kinds[1:]:
                demand = int(-problem.mem_delta(kind) * mscale)
                if demand:
                    yield Action("F", s, i), Action(kind, s, i), demand


def build_model(
    problem: Problem,
    *,
    objective: str = "makespan",
    horizon: Fraction,
    symmetry: bool = True,
    implied: bool = True,
    cumulative: bool = False,
    free_start: bool = False,
) -> CpsatModel:
    """The model; ``horizon`` must be at least the end of some optimal schedule (the incumbent's makespan
    for the makespan objective; see ``span_horizon`` for spans). ``symmetry`` and ``implied`` switch
    off the extras, lossless for the makespan; for spans they keep plans in microbatch order only, so
    the span bound for every plan (``solvers.span_bound``) builds without them, as do tests that
    compare against the plain model.
    ``free_start`` (spans, without the extras) measures each rank's span from its first start in the
    model, so every plan's replay is a solution (``solvers.span_bound``).

    With one stage per rank the cap-implied constraints are an exact encoding of the cap (see
    ``_add_release_frontiers``), so the cumulative is left out unless ``cumulative`` asks for it (it
    only slowed the proofs down; a test checks the two encodings agree), or a rank's frontiers are too
    many to state (``symmetry.frontiers_exact``)."""
    if free_start and (objective != "span" or symmetry):
        raise ValueError("free_start relaxes the span objective of the model without symmetry breaking")
    scale = problem.time_scale
    h = math.ceil(horizon * scale)
    model = cp_model.CpModel()
    head, tail = heads_and_tails(problem)
    dur = {a: int(problem.duration(a.kind, a.stage) * scale) for a in head}
    starts = {
        a: model.new_int_var(int(head[a] * scale), h - int(tail[a] * scale) - dur[a], str(a)) for a in head
    }
    obj = model.new_int_var(0, h, objective)
    cm = CpsatModel(problem, model, objective, scale, h, starts, obj)
    intervals = {a: model.new_fixed_size_interval_var(starts[a], dur[a], f"i{a}") for a in head}
    _add_precedences(cm, dur)
    _add_no_overlap(cm, intervals)
    exact = problem.v == 1 and all(frontiers_exact(problem, r) for r in range(problem.p))
    if cumulative or not (symmetry and implied and exact):
        _add_memory(cm, dur)
    if symmetry:
        _add_microbatch_order(cm, dur)
        if implied:
            _add_cap_precedences(cm, dur)
            _add_release_frontiers(cm, dur)
    _add_objective(cm, dur, head, ordered=symmetry, free_start=free_start)
    return cm


def span_horizon(problem: Problem, max_span: Fraction) -> Fraction:
    """A horizon that keeps an optimum of the span objective: its ASAP replay ends each rank at
    most (earliest start of the rank) + span, so within max head + the incumbent's max span."""
    head, _ = heads_and_tails(problem)
    return max(head.values()) + max_span


def _add_precedences(cm: CpsatModel, dur: dict[Action, int]) -> None:
    """A task starts after each input has ended and crossed the link (``schedc.dag``)."""
    for a in cm.starts:
        for d in dependencies(cm.problem, a):
            gap = dur[d] + int(lag(cm.problem, d, a) * cm.scale)
            cm.model.add(cm.starts[a] >= cm.starts[d] + gap)


def _add_no_overlap(cm: CpsatModel, intervals: dict[Action, cp_model.IntervalVar]) -> None:
    """A rank runs one task at a time."""
    for r in range(cm.problem.p):
        stages = set(cm.problem.rank_stages[r])
        cm.model.add_no_overlap([iv for a, iv in intervals.items() if a.stage in stages])


def _add_memory(cm: CpsatModel, dur: dict[Action, int]) -> None:
    """The cap as a cumulative over activation lifetimes (in the trials made while planning issue
    3, with microbatch order fixed, a cumulative beat a reservoir constraint).
    Ranks whose cap can hold every activation at once get no constraint (it could never bind)."""
    for r in range(cm.problem.p):
        if cm.problem.binding_caps[r] is not None:
            cm.lifetimes += add_cap_cumulative(cm.model, cm.problem, r, cm.starts, dur, cm.scale, cm.horizon)


def add_cap_cumulative(model: cp_model.CpModel, problem: Problem, rank: int, starts: Starts,
                       dur: dict[Action, int], scale: int, horizon: int) -> list[Lifetime]:
    """Rank ``rank``'s cap as a cumulative: each F(s, i) opens one lifetime per release task,
    [F start, I end) holding (1-w)/v and [F start, W end) holding w/v, or [F start, B end) holding
    1/v; zero demands are skipped. Each lifetime's length is a variable of its own, at least the
    chain of work and latency between its ends (the round trip): the cumulative then knows every
    activation's least energy and compulsory part from the start. Returns (length, F, release) per
    lifetime, for hints. Shared by the full model and the rank relaxation."""
    lifetimes, demands, sizes = [], [], []
    for alloc, release, demand in activation_releases(problem, rank):
        shortest = int(min_lifetime(problem, alloc.stage, release.kind) * scale)
        size = model.new_int_var(shortest, horizon, f"life{release}")
        sizes.append((size, alloc, release))
        end = starts[release] + dur[release]
        lifetimes.append(model.new_interval_var(starts[alloc], size, end, f"life{release}"))
        demands.append(demand)
    model.add_cumulative(lifetimes, demands, math.floor(problem.mem[rank] * problem.memory_scale))
    return sizes


def min_lifetime(problem: Problem, stage: int, release: str) -> Fraction:
    """Least time from F(stage)'s start to the end of its release task (I, W or B) of the same
    microbatch: the longest dependency chain between them."""
    return stage_paths(problem).from_forward(stage)[release, stage] + problem.duration(release, stage)


def _add_microbatch_order(cm: CpsatModel, dur: dict[Action, int]) -> None:
    """Lossless symmetry breaking (solvers.symmetry): per (stage, kind), microbatches in order.
    Both tasks share a rank, so the later one even starts after the earlier one ends."""
    for before, after in order_pairs(cm.problem):
        cm.model.add(cm.starts[after] >= cm.starts[before] + dur[before])


def _add_cap_precedences(cm: CpsatModel, dur: dict[Action, int]) -> None:
    """Implied by the cap under the fixed order (solvers.symmetry): strong propagation for free."""
    for release, alloc in cap_precedences(cm.problem):
        cm.model.add(cm.starts[alloc] >= cm.starts[release] + dur[release])


def _add_release_frontiers(cm: CpsatModel, dur: dict[Action, int]) -> None:
    """Implied by the cap under the fixed order (solvers.symmetry.frontier_options): F(s, i) starts
    after the earliest moment at which the releases of some Pareto option have all ended. A min of
    maxes, so root propagation already sees the cap's throughput limit, across the rank's stages.

    With one stage per rank these are exactly the cap (they imply ``_add_cap_precedences``, which
    propagate sooner): the level only rises at F starts, and at F(s, i)'s start it is (i+1)a minus
    the releases so far."""
    for s in range(cm.problem.num_stages):
        cm.frontiers += add_frontiers(cm.model, cm.problem, s, cm.starts, dur, cm.horizon)


def add_frontiers(model: cp_model.CpModel, problem: Problem, stage: int, starts: Starts,
                  dur: dict[Action, int], horizon: int) -> list[Frontier]:
    """``_add_release_frontiers`` for one stage's forwards; returns the helpers of the multi-option
    frontiers (earliest, per-option last release, options), for hints. Shared by the full model and
    the rank relaxation."""
    helpers = []
    for i in range(problem.m):
        options = frontier_options(problem, stage, i)
        if not options:
            continue
        alloc = starts[Action("F", stage, i)]
        if len(options) == 1:
            for a in options[0]:
                model.add(alloc >= starts[a] + dur[a])
            continue
        times = []
        for option in options:
            t = model.new_int_var(0, horizon, "")
            model.add_max_equality(t, [starts[a] + dur[a] for a in option])
            times.append(t)
        earliest = model.new_int_var(0, horizon, "")
        model.add_min_equality(earliest, times)
        model.add(alloc >= earliest)
        helpers.append((earliest, tuple(times), tuple(options)))
    return helpers


def _add_objective(
    cm: CpsatModel, dur: dict[Action, int], head: dict[Action, Fraction], ordered: bool,
    free_start: bool = False,
) -> None:
    """Makespan: the last end (the first start is F(0, 0) at 0 in an optimum). Span: per rank, last
    end minus the earliest possible start of the rank's first task. The simulator replays orders as
    soon as possible, where every rank's first task (F of its lowest stage, microbatch 0) starts at
    exactly that earliest time; so this is the replay's span, and a replay never ends later.
    Under the microbatch order only microbatch m-1 of each (stage, kind) can end last. With
    ``free_start`` a rank's span starts at its first start in the model instead (a variable)."""
    p, model, obj = cm.problem, cm.model, cm.objective_var
    lasts = [a for a in cm.starts if a.mb == p.m - 1 or not ordered]
    if cm.objective == "makespan":
        for a in lasts:
            model.add(obj >= cm.starts[a] + dur[a])
    elif free_start:
        for r in range(p.p):
            mine = [a for a in cm.starts if p.stage_rank[a.stage] == r]
            first = model.new_int_var(0, cm.horizon, f"first{r}")
            model.add_min_equality(first, [cm.starts[a] for a in mine])
            _pin_first_start(cm, dur, r, first)
            for a in mine:
                model.add(obj >= cm.starts[a] + dur[a] - first)
    else:
        for r in range(p.p):
            first = min(int(head[Action("F", s, 0)] * cm.scale) for s in p.rank_stages[r])
            for a in lasts:
                if p.stage_rank[a.stage] == r:
                    model.add(obj >= cm.starts[a] + dur[a] - first)
    model.minimize(obj)


def _pin_first_start(cm: CpsatModel, dur: dict[Action, int], rank: int, first: cp_model.IntVar) -> None:
    """``free_start``: a replay starts a rank as soon as its first task's input arrives (the rank is
    idle until then), not later of its own accord. That first task is a forward of the rank's
    lowest stage (every other task of the rank waits, through its own chain, on one of those), whose
    one input is the previous stage's forward on another rank (none on stage 0: it starts at 0)."""
    p, model = cm.problem, cm.model
    stage = min(p.rank_stages[rank])
    picks = []
    for i in range(p.m):
        f, pick = Action("F", stage, i), model.new_bool_var(f"first{rank}_{i}")
        arrival = 0
        if stage > 0:
            prev = Action("F", stage - 1, i)
            arrival = cm.starts[prev] + dur[prev] + int(lag(p, prev, f) * cm.scale)
        model.add(cm.starts[f] == first).only_enforce_if(pick)
        model.add(cm.starts[f] == arrival).only_enforce_if(pick)
        picks.append(pick)
    model.add_exactly_one(picks)


def add_hint(cm: CpsatModel, starts: dict[Action, Fraction], value: Fraction) -> None:
    """Warm start: a complete assignment (canonical starts of a valid schedule, the helper variables
    they imply, and the objective), so CP-SAT takes it as its first solution without search."""
    cm.model.clear_hints()
    hint_schedule(cm.model, cm.problem, cm.scale, cm.starts, starts, cm.lifetimes, cm.frontiers)
    cm.model.add_hint(cm.objective_var, int(value * cm.scale))


def hint_schedule(model: cp_model.CpModel, problem: Problem, scale: int, variables: Starts,
                  starts: dict[Action, Fraction], lifetimes: list[Lifetime],
                  frontiers: list[Frontier]) -> None:
    """Hints for the start ``variables`` from a schedule's ``starts`` and for the cap's helper
    variables they imply (``add_cap_cumulative``'s lifetimes, ``add_frontiers``' options). Shared
    by the full model and the rank relaxation, whose helpers are the same."""
    for a, var in variables.items():
        model.add_hint(var, int(starts[a] * scale))

    def end(a: Action) -> int:
        return int((starts[a] + problem.duration(a.kind, a.stage)) * scale)

    for size, alloc, release in lifetimes:
        model.add_hint(size, end(release) - int(starts[alloc] * scale))
    for earliest, times, options in frontiers:
        lasts = [max(end(a) for a in option) for option in options]
        for t, last in zip(times, lasts, strict=True):
            model.add_hint(t, last)
        model.add_hint(earliest, min(lasts))
