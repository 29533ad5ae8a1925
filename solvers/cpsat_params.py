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
per rank), runs its workers without an LP (``without_lp``): the LP's first root solve ignores the
time limit (0.7-3.3 ms per task: a 10 s solve ran to 12.9 s). Given time, the LP is the better prover.
(measurements: benchmarks/SOLVER_NOTES.md, *Moved from docstrings*, ``cpsat_params.LP_SECONDS_PER_TASK``)"""
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
    """One stage per rank: presolve and the LP only slow the proof (headline: 0.9 s, not 5 s). Several:
    the cumulative needs presolve and the fuller LP (level 2) steadies the search; ``max_alldiff_domain_size``
    1, as presolve would expand one-tick tasks' no-overlaps to a Boolean per task and tick (and stall).
    (measurements: benchmarks/SOLVER_NOTES.md, *Moved from docstrings*, ``cpsat_params.default_params``)"""
    if problem.v == 1:
        return {"cp_model_presolve": False, "linearization_level": 0}
    return {"linearization_level": 2, "max_alldiff_domain_size": 1}


def worker_params(problem: Problem, objective: str, workers: int) -> dict[str, object]:
    """One stage per rank (no presolve), makespan, several workers: CP-SAT's probing search joins the
    default full-problem worker (with 2 workers the two take both, not LNS): these models are proofs more
    than searches, and probing settles the frontiers' chains early (headline 0.67-0.77 s, not 0.97-1.40 s).
    (measurements: benchmarks/SOLVER_NOTES.md, *Moved from docstrings*, ``cpsat_params.worker_params``)"""
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
