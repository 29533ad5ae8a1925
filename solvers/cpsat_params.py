"""The SatParameters of schedc's CP-SAT searches: limits, the model's defaults and which workers run.

Kept apart from ``cpsat_solve``, which runs the searches, so each choice has one home and its
measurements beside it.
"""

from __future__ import annotations

from ortools.sat import sat_parameters_pb2
from ortools.sat.python import cp_model

from schedc.problem import Problem
from schedc.solvers import wall_guard

WORKER_KEYS = frozenset({"subsolvers", "extra_subsolvers", "num_full_subsolvers", "use_objective_lb_search"})
"""Parameters that choose the searches workers run: a caller that sets one keeps its own choice."""

def set_limits(solver: cp_model.CpSolver, seconds: float, workers: int) -> None:
    """Workers and time limit. One worker: the limit is deterministic time (about seconds on an
    idle core), so the same seed gives the same answer on a loaded machine; a wall-clock cap
    (``wall_guard``) still guards it."""
    solver.parameters.num_workers = workers
    if workers == 1:
        solver.parameters.max_deterministic_time = seconds
        solver.parameters.max_time_in_seconds = wall_guard.guard(seconds)
    else:
        solver.parameters.max_time_in_seconds = seconds


LP_SECONDS_PER_TASK = 0.004
"""A search of fewer seconds than this per task, on a model CP-SAT does not presolve (one stage
per rank), runs its workers without an LP (``without_lp``). There ``default_lp`` and
``objective_lb_search`` still solve an LP (linearization level 1, whatever the model's level), and
its first solve at the root is not cut by the time limit nor by ``stop_search``: 2 workers, CP-SAT
at 1.6 s per deterministic unit, the first bound of such a worker came after 0.5, 2.4, 4.1, 5.3 and
7.5 s on p=8 m=32, 48, 64, 80, 96 mem=4 (0.7-3.3 ms per task; p=16 m=48 mem=8 5.7 s, p=4 m=128
mem=2 4.0 s), against 0.2-0.8 s without the LP. So a 10 s solve of p=8 m=64 mem=4 ended after 10.3 to
12.9 s (the proof search after a stall, given 1.2 to 3.4 s, ran 4.4 to 6 s), p=8 m=80 and 96 after
12.9 to 14.5 s, and ``--time-limit 4`` after 6.0 to 6.3 s. The margin over 3.3 ms is for slower
machines. Given time, the LP is the better prover there: unhinted, ``default_lp`` beside ``probing``
proved p=8 m=64 mem=4 optimal (295) in 14-19 s, ``no_lp`` beside it reached 282 in 20 s."""
NO_LP_TWINS = {"default_lp": "no_lp", "max_lp": "no_lp", "quick_restart": "quick_restart_no_lp",
               "probing_max_lp": "probing",
               "objective_lb_search": "objective_lb_search_no_lp",
               "objective_lb_search_max_lp": "objective_lb_search_no_lp",
               "objective_shaving": "objective_shaving_no_lp",
               "objective_shaving_max_lp": "objective_shaving_no_lp"}
"""CP-SAT's workers with an LP, and the same searches without one."""
LP_FREE_WORKERS = ("no_lp", "fixed", "quick_restart_no_lp", "probing")
"""CP-SAT's default full-problem workers (OR-Tools 9.15, in its order: default_lp, fixed, no_lp,
max_lp, pseudo_costs, reduced_costs, quick_restart, quick_restart_no_lp, lb_tree_search, probing)
without those that need an LP, first the twin of its first."""


def proof_params(workers: int) -> dict[str, object]:
    """For a search that should prove a bound rather than find plans: CP-SAT's objective lower-bound
    search as the full-problem worker (with one worker, the same search), run on a model without
    hints. Measured at 30 s on p8-m32-v2V-unsplit-c0-mem3_2-uneq: with the incumbent as hint the
    default worker moved the bound 528 -> 529 (objective_lb_search: 531.5); without the hint,
    objective_lb_search proved the incumbent's 543 optimal in 28.5 s. The hinted search runs it too
    on presolving makespan models, where it finds plans at its bound (``backends.HINTED_LB_SEARCH``)."""
    return {"extra_subsolvers": ["objective_lb_search"]} if workers > 1 else {"use_objective_lb_search": True}


def default_params(problem: Problem) -> dict[str, object]:
    """Measured with benchmarks/solver_quality.py. One stage per rank: the model is all precedences
    and min/max frontiers, and CP-SAT's presolve and LP only slow the proof down (headline: 0.9 s
    instead of 5 s). Several stages per rank: the cumulative needs presolve (p=4 m=16 vshape cap 1.5
    proven in 2 s with it, still open after 20 s without), and CP-SAT's fuller LP relaxation
    (linearization level 2, of the no-overlaps and the cumulatives) steadies the search:
    p16-m16-v2-split-c1_2-mem8-uneq was proven optimal (157, in 20-25 s) in 6 of 6 runs with it and
    in about half without (166 in three benchmark runs in a row); the two instances proven near
    25 s without it stayed so (23.6 and 27.2 s). The full grid with it: 146 of 151 small instances
    within 1% (145 without); the plans of the five structural misses moved within their spread over
    earlier grids (for example 281 against 273.5-290.5, 248.25 against 243.6-249.6).

    ``max_alldiff_domain_size`` 1 (none expanded; CP-SAT refuses 0): where every task lasts one tick
    (equal split costs, v = 2), presolve turns each rank's no-overlap into an all-different and, below
    its default domain size of 256 ticks, expands that into a Boolean per task and tick. On
    p8-m32-v2-split-c0-mem4-eq (1,536 tasks, horizon 241 ticks) that made 160,000 Booleans and
    540,000-790,000 clauses per probing round: a 20 s solve stopped in presolve with no answer, so the
    60 s grid run kept the list plan (120.5). Without the expansion its hinted search finds 117.5 in 15
    s (a 600 s solve with it found 117.5 at 289 s; the optimum is 115.5), and p=4 m=8 v=2 vshape mem=2
    is proven in 0.4 s (with it: 2.5 s, and a 2 s solve stopped in presolve)."""
    if problem.v == 1:
        return {"cp_model_presolve": False, "linearization_level": 0}
    return {"linearization_level": 2, "max_alldiff_domain_size": 1}


def worker_params(problem: Problem, objective: str, workers: int) -> dict[str, object]:
    """One stage per rank (no presolve), makespan, several workers: CP-SAT's probing search
    (``use_probing_search``: it probes literals and bounds as it branches, which settles the
    frontiers' min/max chains early) joins the default full-problem worker; with 2 workers the two
    full searches take both, where CP-SAT would give the second to LNS. Those models are proofs more
    than searches: the list plan is usually optimal. Measured on 2026-12-03, 2 workers, 3 runs each
    interleaved, whole solve (list, relaxation, search), default workers / with this: the headline
    0.97-1.40 / 0.67-0.77 s (the search alone 0.52-0.84 / 0.39-0.53 s in 6 runs),
    p8-m32-v1-split-c0-mem2-uneq 1.84-2.67 / 1.05-1.51 s, p16-m32-v1-unsplit-c1_2-mem8-unbal
    7.1-11.0 / 3.8-5.9 s, p16-m16-v1-split-c0-mem8-unbal 1.8-2.9 / 1.5-2.4 s; the grid's other 53
    one-stage instances were proven as before, and the large ones (p=16 m=64 unsplit mem=16, 2,048
    tasks; p=32 m=256 with and without cap 8) ended with the same plans and bounds. The probing
    search alone beside LNS proved the headline sooner (0.45-0.57 s) but took 5.0-7.2 s on
    p16-m16-v1-split-c0-mem8-unbal. More than 2 workers: probing joins CP-SAT's full-problem workers
    (not measured: this machine has 2 cores). Several stages per rank: not measured, unchanged."""
    if problem.v > 1 or objective != "makespan" or workers < 2:
        return {}
    return {"extra_subsolvers": ["probing"], **({"num_full_subsolvers": 2} if workers == 2 else {})}


def search_params(problem: Problem, objective: str, workers: int, params: dict[str, object] | None,
                  seconds: float | None = None) -> dict[str, object]:
    """The model's defaults, the caller's ``params`` over them, and the workers' searches unless
    the caller chose those; for a search of ``seconds`` too short for an LP (``LP_SECONDS_PER_TASK``)
    their LP-free twins."""
    chosen = {**default_params(problem), **(params or {})}
    if not WORKER_KEYS & chosen.keys():
        chosen |= worker_params(problem, objective, workers)
    if seconds is not None and workers > 1 and seconds < LP_SECONDS_PER_TASK * problem.num_tasks \
            and not default_params(problem).get("cp_model_presolve", True):
        chosen = without_lp(chosen)
    return chosen


def without_lp(params: dict[str, object]) -> dict[str, object]:
    """``params`` with every named worker's LP-free twin (``NO_LP_TWINS``), CP-SAT's own list of
    full-problem workers replaced by ``LP_FREE_WORKERS`` where the caller named none, and no name
    twice (CP-SAT would run it twice rather than another)."""
    twins = lambda names: list(dict.fromkeys(NO_LP_TWINS.get(name, name) for name in names))  # noqa: E731
    extra = twins(params.get("extra_subsolvers", []))
    full = twins(params.get("subsolvers", LP_FREE_WORKERS))
    chosen = {**params, "subsolvers": [name for name in full if name not in extra]}
    if "extra_subsolvers" in params:
        chosen["extra_subsolvers"] = extra
    return chosen


def set_param(prm: sat_parameters_pb2.SatParameters, key: str, value: object) -> None:
    """Sets one SatParameters field; enum fields take their names (``search_branching="FIXED_SEARCH"``).

    A solver's pybind parameters want the enum's member, which the name is looked up on; protobuf's
    message (its field an ``int``) and string fields such as ``log_prefix`` take the string as it is."""
    if isinstance(value, list):
        getattr(prm, key).extend(value)
        return
    current = getattr(prm, key)
    if isinstance(value, str) and not isinstance(current, (str, int)):
        value = getattr(type(current), value)
    setattr(prm, key, value)
