"""A bound on every plan's largest span: the least end of rank 0's work.

Rank 0 holds stage 0, whose forwards need no input, and every other task of a microbatch follows its
stage-0 forward; so rank 0's first task is such a forward, which the replay starts at 0, and rank 0's
span is the end of its last task. No plan's largest span is below the least such end over all plans
within the caps, whatever their microbatch order (the orders that ``span_bound`` must allow).

That least end is a makespan-like optimum, solved on the makespan model with the objective replaced:
- relabelling a schedule into microbatch order (``symmetry``) keeps every rank's busy intervals, so
  rank 0's last end, and the cap-implied constraints hold in every ordered schedule: the model's
  extras lose no optimum of this objective either; under that order rank 0's last task is one of
  its (stage, kind)'s microbatch m-1;
- the horizon is the serial length, the sum of every task and every lag: a replay's makespan is a
  path through its orders and the DAG, which visits each task once, so some optimum (a replay of
  its own orders, relabelled) ends within it.
On p=4 m=8 vshape mem=2, comm 1/2 the span bound went from 35 to 44.5 (proven in 0.5 s), the best
plan's span: rank 0 holds both ends of the V, and its last backward ends the step.
"""

from __future__ import annotations

from fractions import Fraction

from ortools.sat.python import cp_model

from schedc.errors import ScheduleError
from schedc.plan import Plan
from schedc.problem import Problem
from schedc.solvers.cpsat_model import CpsatModel, add_hint, build_model, serial_length
from schedc.solvers.cpsat_params import proof_params
from schedc.solvers.cpsat_solve import CpsatResult, solve_model
from schedc.solvers.symmetry import canonical_starts


def first_rank_end_model(problem: Problem) -> tuple[CpsatModel, cp_model.IntVar]:
    """The makespan model minimising the end of rank 0's last task, and that end's variable."""
    cm = build_model(problem, horizon=serial_length(problem))
    end = cm.model.new_int_var(0, cm.horizon, "rank0_end")
    for a, start in cm.starts.items():  # microbatch order (build_model's): m-1 ends each (stage, kind)
        if problem.stage_rank[a.stage] == 0 and a.mb == problem.m - 1:
            cm.model.add(end >= start + int(problem.duration(a.kind, a.stage) * cm.scale))
    cm.model.minimize(end)
    return cm, end


def first_rank_end(problem: Problem, *, time_limit: float, workers: int, seed: int = 0,
                   plan: Plan | None = None) -> tuple[Fraction, CpsatResult]:
    """CP-SAT's proven bound on rank 0's last end (0 if none), and the search's result; ``plan``, a
    plan of ``problem``, is the hint. Only the bound matters: the lower-bound search joins."""
    cm, end = first_rank_end_model(problem)
    if plan is not None:
        add_hint(cm, canonical_starts(plan.timeline), plan.makespan)
        cm.model.add_hint(end, int(Fraction(plan.timeline.ends[0][-1], plan.timeline.scale) * cm.scale))
    result = solve_model(cm, time_limit=time_limit, workers=workers, seed=seed, params=proof_params(workers))
    if result.status in ("INFEASIBLE", "MODEL_INVALID"):  # every replay is a solution: a modelling bug
        raise ScheduleError(f"internal error: CP-SAT found rank 0's end model {result.status}")
    return max(Fraction(0), result.bound), result
