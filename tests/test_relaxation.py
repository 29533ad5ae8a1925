# sed -i '299s/\[:BLOCK_RANKS\]/[:1]/' solvers/relaxation.py
"""The rank relaxation's bound (solvers/relaxation.py): never above the optimum, above the analytic
bound where the cap and the rank's own sequencing interact, and its search settings."""

from __future__ import annotations

from fractions import Fraction

from hypothesis import given
from hypothesis import strategies as st

from schedc.problem import Problem
from tests.strategies import problems
from tests.test_cpsat import FEW, optimum


@FEW
@given(problems(max_p=3, max_m=4, max_v=2).filter(lambda p: p.m >= 2))
def test_rank_relaxation_never_exceeds_the_optimum(problem):
    from schedc.solvers.relaxation import relaxed_rank_bound

    best = optimum(problem)
    for r in range(problem.p):
        assert relaxed_rank_bound(problem, r, time_limit=5) <= best


@FEW
@given(problems(max_p=3, max_m=5, max_v=2).filter(lambda p: p.m >= 2), st.integers(1, 4))
def test_suffix_relaxation_never_exceeds_the_optimum(problem, first):
    from schedc.solvers.relaxation import relaxed_rank_bound

    first = min(first, problem.m - 1)
    best = optimum(problem)
    for r in range(problem.p):
        assert relaxed_rank_bound(problem, r, time_limit=5, first=first) <= best


@FEW
@given(problems(max_p=3, max_m=5, max_v=2).filter(lambda p: p.m >= 2), st.integers(0, 4))
def test_a_plan_restricted_to_a_rank_solves_its_relaxation(problem, first):
    """``RankModel.hint``'s premise, the relaxation's own: every schedule restricted to the rank (and
    to the kept microbatches) is a schedule of the relaxation. With every variable fixed to the hint,
    CP-SAT must find it feasible, and the hinted bound stays within the plan."""
    from ortools.sat.python import cp_model

    from schedc.plan import Plan
    from schedc.solvers.list_scheduler import best_list_schedule
    from schedc.solvers.relaxation import RankModel, relaxed_rank_bound
    from schedc.solvers.symmetry import canonical_starts

    plan = Plan(problem=problem, orders=best_list_schedule(problem), source="list")
    hint = canonical_starts(plan.timeline), plan.makespan
    first = min(first, problem.m - 1)
    for r in range(problem.p):
        relaxation = RankModel(problem, r, first)
        relaxation.hint(*hint)
        solver = cp_model.CpSolver()
        solver.parameters.fix_variables_to_their_hinted_value = True
        solver.parameters.max_time_in_seconds = 5
        assert solver.solve(relaxation.model) in (cp_model.OPTIMAL, cp_model.FEASIBLE)
        assert relaxed_rank_bound(problem, r, time_limit=5, first=first, hint=hint) <= plan.makespan


@FEW
@given(problems(max_p=4, max_m=4, max_v=2).filter(lambda p: p.m >= 2 and p.p >= 2), st.data())
def test_a_block_of_ranks_relaxes_the_problem_and_tightens_its_ranks(problem, data):
    """Several ranks kept exactly, the rest as delays: a plan restricted to the block solves it (a
    relaxation, below the optimum), and over all microbatches its constraints imply each member's
    own relaxation, so its optimum is at least theirs."""
    from ortools.sat.python import cp_model

    from schedc.plan import Plan
    from schedc.solvers.list_scheduler import best_list_schedule
    from schedc.solvers.relaxation import RankModel, relaxed_rank_bound
    from schedc.solvers.symmetry import canonical_starts

    block = data.draw(st.sets(st.integers(0, problem.p - 1), min_size=2), label="block")
    first = data.draw(st.integers(0, problem.m - 1), label="first")
    plan = Plan(problem=problem, orders=best_list_schedule(problem), source="list")
    relaxation = RankModel(problem, sorted(block), first)
    relaxation.hint(canonical_starts(plan.timeline), plan.makespan)
    solver = cp_model.CpSolver()
    solver.parameters.fix_variables_to_their_hinted_value = True
    solver.parameters.max_time_in_seconds = 5
    assert solver.solve(relaxation.model) in (cp_model.OPTIMAL, cp_model.FEASIBLE)
    together = relaxed_rank_bound(problem, sorted(block), time_limit=5, first=first)
    assert together <= optimum(problem)
    solver = cp_model.CpSolver()
    solver.parameters.max_time_in_seconds = 5
    if solver.solve(RankModel(problem, sorted(block)).model) == cp_model.OPTIMAL:
        for r in block:
            alone = RankModel(problem, r)
            one = cp_model.CpSolver()
            one.parameters.max_time_in_seconds = 5
            if one.solve(alone.model) == cp_model.OPTIMAL:
                assert one.objective_value <= solver.objective_value


def test_suffix_relaxation_sees_the_cap_and_the_ranks_own_work():
    """p=8 m=16 cap 4: rank 0's last eight microbatches, from their cap floors, prove more than the
    analytic bound (71, whose dense refill ignores that F, I and W share one rank; optimum 79)."""
    from schedc.solvers.bounds import lower_bound
    from schedc.solvers.relaxation import relaxation_bound, relaxed_rank_bound

    problem = Problem(p=8, m=16, mem=(4,))
    suffix = relaxed_rank_bound(problem, 0, time_limit=10, first=8)
    assert lower_bound(problem) < suffix <= optimum(problem)
    assert relaxation_bound(problem, time_limit=10, max_tasks=24) >= suffix


def test_relaxation_tries_capped_ranks_first_strongest_first():
    from schedc.solvers.bounds import rank_terms
    from schedc.solvers.relaxation import rank_strength_order

    problem = Problem(p=4, m=8, v=2, mem=(2, None, 3, 2), tf=1, tb=2, tw=1)
    order = rank_strength_order(problem)
    assert sorted(order) == [0, 1, 2, 3] and order[-1] == 1  # the uncapped rank last
    strength = [max(rank_terms(problem, r)) for r in order[:-1]]
    assert strength == sorted(strength, reverse=True)


def test_two_worker_relaxation_runs_the_default_and_the_lower_bound_search(monkeypatch):
    """``relaxation_params``: with 2 workers both are full-problem searches (no LNS), and the bound
    they prove is still within the optimum and above the analytic one."""
    from schedc.solvers import relaxation
    from schedc.solvers.bounds import lower_bound

    seen, original = {}, relaxation.set_param

    def recorded(prm, key, value):
        seen[key] = value
        original(prm, key, value)

    monkeypatch.setattr(relaxation, "set_param", recorded)
    problem = Problem(p=3, m=6, v=2, placement="looped", mem=(2,), tf=1, tb=2, tw=1)
    bound = relaxation.relaxation_bound(problem, time_limit=10, workers=2)
    assert seen == {"extra_subsolvers": ["objective_lb_search"], "num_full_subsolvers": 2}
    assert lower_bound(problem) < bound <= optimum(problem)


def test_rank_relaxation_beats_the_analytic_bound_under_a_tight_cap():
    from schedc.solvers.bounds import lower_bound
    from schedc.solvers.relaxation import relaxation_bound

    problem = Problem(p=3, m=6, v=2, placement="looped", mem=(2,), tf=1, tb=2, tw=1)
    bound = relaxation_bound(problem, time_limit=10)
    assert lower_bound(problem) < bound <= optimum(problem)


def test_a_relaxation_cut_short_returns_its_proven_bound_not_its_best_solution():
    """Hinted with the one-microbatch-at-a-time plan (200) and stopped long before a proof, CP-SAT
    holds that solution: its value bounds nothing, and only the proven bound may come back, which is
    at most the optimum and so within any plan that fits (the list plan's 71.5)."""
    from schedc.plan import Plan
    from schedc.solvers.incumbent import best_incumbent, sequential_orders
    from schedc.solvers.relaxation import relaxed_rank_bound
    from schedc.solvers.symmetry import canonical_starts

    problem = Problem(p=4, m=16, v=2, mem=(3,), tf=1, tb=2, tw=1)
    poor = Plan(problem=problem, orders=sequential_orders(problem), source="sequential")
    fitting = best_incumbent(problem)
    assert fitting.fits() and fitting.makespan < poor.makespan
    hint = (canonical_starts(poor.timeline), poor.makespan)
    bound = relaxed_rank_bound(problem, 0, time_limit=0.01, hint=hint)
    assert bound <= fitting.makespan


def test_the_block_of_the_three_strongest_ranks_sees_what_each_alone_misses():
    """p=3 m=4 v=2 cap 3/2: each rank alone proves at most 17, the three together 35/2 (their
    collisions), still within the optimum; hinted with a plan, the block proves the same."""
    from schedc.solvers.incumbent import best_incumbent
    from schedc.solvers.relaxation import block_bound, relaxed_rank_bound

    problem = Problem(p=3, m=4, v=2, mem=(Fraction(3, 2),))
    alone = [relaxed_rank_bound(problem, r, time_limit=5) for r in range(3)]
    assert max(alone) == 17
    assert block_bound(problem, time_limit=10) == Fraction(35, 2) <= optimum(problem)
    assert block_bound(problem, time_limit=10, incumbent=best_incumbent(problem)) == Fraction(35, 2)
