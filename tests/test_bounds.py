# sed -i '114s/order += generation/order += generation[::-1]/' solvers/paths.py
"""Lower bounds never exceed any schedule that fits, nor the exhaustive optimum of tiny problems."""

from __future__ import annotations

import itertools
from dataclasses import replace
from fractions import Fraction

import networkx as nx
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from schedc.actions import Action
from schedc.baselines import BASELINES, applicable
from schedc.dag import build_dag
from schedc.problem import Problem, StageCost
from schedc.simulate import simulate
from schedc.solvers.bounds import (
    heads_and_tails,
    jackson,
    lower_bound,
    memory_window,
    rank_terms,
    span_lower_bound,
    stage_paths,
    warmup_bound,
)
from schedc.solvers.list_scheduler import RULES, best_list_result, run_rule
from schedc.solvers.paths import reaches
from tests.exhaustive import optimum, span_searchable
from tests.strategies import problems, tight_problems

FAST = settings(max_examples=60, deadline=None, suppress_health_check=[HealthCheck.too_slow])


def _full_dag_heads_and_tails(problem: Problem):
    graph = build_dag(problem)
    order = list(nx.topological_sort(graph))
    head, tail = {}, {}
    for a in order:
        head[a] = max((head[d] + graph.nodes[d]["duration"] + graph.edges[d, a]["lag"]
                       for d in graph.predecessors(a)), default=Fraction(0))
    for a in reversed(order):
        tail[a] = max((graph.edges[a, u]["lag"] + graph.nodes[u]["duration"] + tail[u]
                       for u in graph.successors(a)), default=Fraction(0))
    return head, tail


@FAST
@given(problems(max_p=4, max_m=4))
def test_heads_and_tails_equal_longest_paths_of_the_full_dag(problem: Problem) -> None:
    assert heads_and_tails(problem) == _full_dag_heads_and_tails(problem)


@FAST
@given(problems())
def test_bounds_never_exceed_a_schedule_that_fits(problem: Problem) -> None:
    makespan_bound, span_bound = lower_bound(problem), span_lower_bound(problem)
    assert span_bound <= makespan_bound  # why lower_bound need not compute the span terms
    uncapped_bound = lower_bound(replace(problem, mem=()))
    for rule in RULES:
        timeline = simulate(problem, run_rule(problem, rule).orders)
        assert makespan_bound <= timeline.makespan and span_bound <= timeline.max_span
    for name in applicable(problem):
        timeline = simulate(problem, BASELINES[name].build(problem))
        assert uncapped_bound <= timeline.makespan  # a baseline over the cap still obeys the cap-free terms
        if all(c is None or peak <= c for peak, c in zip(timeline.peak_mem, problem.mem, strict=True)):
            assert makespan_bound <= timeline.makespan and span_bound <= timeline.max_span


def _tiny() -> list[Problem]:
    half = Fraction(1, 2)
    uneven = (StageCost(1, 2, 1), StageCost(2, 1, half), StageCost(1, 1, 2), StageCost(half, 3, 1))
    out = []
    for p, m, v, placement in ((1, 3, 2, "looped"), (2, 2, 1, "looped"), (2, 3, 1, "looped"),
                               (2, 2, 2, "looped"), (2, 2, 2, "vshape")):
        for split in (True, False):
            for comm in (Fraction(0), Fraction(1, 2)):
                for cap in ((), (1,), (Fraction(3, 2),), (2,)):
                    costs = uneven if p * v == 4 and comm else None
                    out.append(Problem(p=p, m=m, v=v, placement=placement, split=split, comm=comm,
                                       mem=cap, tf=1, tb=2 if comm else 1, tw=1, stage_costs=costs))
    for placement in ("looped", "vshape"):  # three microbatches on two stages per rank, tight caps
        for cap in (1, Fraction(3, 2)):
            out.append(Problem(p=2, m=3, v=2, placement=placement, mem=(cap,), tb=2, w_mem=Fraction(1, 3)))
    return out


@pytest.mark.parametrize("problem", _tiny(), ids=lambda pr: pr.describe())
def test_bounds_never_exceed_the_exhaustive_optimum(problem: Problem) -> None:
    _check_against_optimum(problem)


def _check_against_optimum(problem: Problem) -> None:
    heuristic = best_list_result(problem)
    best = optimum(problem, upper=heuristic.makespan)
    assert lower_bound(problem) <= best <= heuristic.makespan
    span_heuristic = best_list_result(problem, "span")  # beyond span_searchable: the index-order
    index_order = not span_searchable(problem)  # optimum, no lower than the true one
    best_span = optimum(problem, "span", upper=span_heuristic.max_span, index_order=index_order)
    assert span_lower_bound(problem) <= best_span and (index_order or best_span <= span_heuristic.max_span)


@settings(max_examples=40, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(tight_problems().filter(lambda p: p.num_tasks <= 24))
def test_bounds_never_exceed_the_exhaustive_optimum_on_random_binding_caps(problem: Problem) -> None:
    """The fixed grid above shares one cap per problem and keeps tw > 0 and w_mem = 1/2; here per-rank
    caps, free W passes, any w_mem and per-stage costs, against the true optimum (a bound between the
    optimum and the heuristic would pass a comparison with the heuristic alone)."""
    _check_against_optimum(problem)


@pytest.mark.parametrize("problem", [
    Problem(p=2, m=1, v=2, placement="vshape", tf=Fraction(1, 2), tb=Fraction(3, 2), tw=0, w_mem=0, mem=(1,)),
    Problem(p=3, m=1, v=2, tf=Fraction(1, 2), tb=1, tw=3, comm=1, mem=(1,)),
], ids=lambda pr: pr.describe())
def test_the_cap_window_ends_by_the_least_tail_of_the_releases(problem: Problem) -> None:
    """Term 3's window closes at the rank's last release, after which only the least tail of its
    releasing tasks is certain: here the releasers' tails differ (a free W beside a long I, or a
    long W), and taking the largest (a mutation neither the grid nor the random problems above
    caught) put the bound at 19/4 and 137/8 above plans of 4 and 16 within the cap."""
    _check_against_optimum(problem)


def test_cap_term_binds_at_tight_caps() -> None:
    """At cap 1 with v = 1, rank 0 holds one microbatch at a time for at least its round trip."""
    problem = Problem(p=4, m=8, mem=1)
    round_trip = 4 * 1 + 4 * 1  # F on four stages, then I back
    assert lower_bound(problem) >= 8 * (round_trip + Fraction(1, 2))  # + the W share (w_mem = 1/2)
    assert lower_bound(problem) > lower_bound(replace(problem, mem=()))


def test_the_count_term_counts_whole_stage_activations() -> None:
    """Term 3's second form: at cap 5/4 with v = 2 at most floor(5/2) = 2 stage activations are fully
    alive at once, so their round trips take at least half their sum on the rank, more than the
    level form's share here (44 of 88 against 36)."""
    problem = Problem(p=2, m=4, v=2, mem=(Fraction(5, 4),), comm=2)
    # by hand: rank 0 holds stages 0 and 2, each task costs 1/2 (v = 2); stage 0's round trip is 8
    # tasks and 6 rank crossings, 4 + 12 = 16, stage 2's 4 tasks and 2 crossings, 2 + 4 = 6: 88 for
    # m = 4; the level form adds the W shares (w_mem 1/2 of 4 * (1/2 + 1/2)) over v * cap = 5/2
    assert memory_window(problem, 0) == (Fraction(88 + 2, Fraction(5, 2)), Fraction(88, 2)) == (36, 44)
    assert lower_bound(problem) >= 44


def test_sequence_term_proves_the_list_schedule_optimal_at_cap_one() -> None:
    """With v = 1 and cap 1 each W must end before the next F: the recursion is exact here. One
    microbatch at a time: F down four stages, I back up, then rank 0's W, all of cost 1."""
    p, m = 4, 8
    problem = Problem(p=p, m=m, mem=1)
    assert lower_bound(problem) == best_list_result(problem).makespan == m * (p + p + 1)


def test_warmup_term_binds_when_the_first_release_needs_a_long_round_trip() -> None:
    """Looped v = 2, p = 4, cap 2, every cost 0.5 (term 5 of solvers.bounds): rank 0 frees nothing
    before I(4, 0) starts at 5.5, and the 4 forwards that fit under its cap take 2; its last forward
    is followed by 6 of tail (Q0 = 6.5) and at most 4.5 of work: 5.5 + (24 - 2 - 4.5) + 6.5 = 29.5,
    where terms 2-4 give 28.5. The optimum is 31.5 (CP-SAT proves it)."""
    problem = Problem(p=4, m=8, v=2, mem=(2,))
    assert max(rank_terms(problem, 0)[:3]) == Fraction(57, 2)
    paths = stage_paths(problem)
    assert lower_bound(problem) == warmup_bound(problem, 0, paths.head, paths.tail) == Fraction(59, 2)
    assert Fraction(59, 2) <= best_list_result(problem).makespan  # a bound, below a real schedule
    large = Problem(p=16, m=32, v=2, mem=(8,))  # the module doc's case
    assert lower_bound(large) == Fraction(239, 2) <= best_list_result(large).makespan


def _longest_from(problem: Problem, stage: int) -> dict[tuple[str, int], Fraction]:
    """A pass over the one-microbatch DAG from F(stage): what ``stage_paths`` made for every stage."""
    return _longest_from_task(problem, Action("F", stage, 0))


def _longest_from_task(problem: Problem, source: Action) -> dict[tuple[str, int], Fraction]:
    """Longest paths from the start of ``source`` to the start of every task it reaches."""
    graph = build_dag(replace(problem, m=1, mem=()))
    dist = {source: Fraction(0)}
    for a in nx.topological_sort(graph):
        for d in graph.predecessors(a):
            if d in dist:
                t = dist[d] + graph.nodes[d]["duration"] + graph.edges[d, a]["lag"]
                dist[a] = max(dist.get(a, t), t)
    return {(a.kind, a.stage): t for a, t in dist.items()}


@FAST
@given(problems(max_p=4, max_m=1, max_v=3))
def test_paths_from_every_task_are_head_differences(problem: Problem) -> None:
    """The module doc of solvers.paths, from any task (the rank relaxation reads paths from I, B
    and W too): the longest path from a to each b it reaches is b's head minus a's."""
    head = stage_paths(problem).head
    for a in build_dag(replace(problem, m=1, mem=())):
        exact = _longest_from_task(problem, a)
        assert exact == {key: head[key] - head[a.kind, a.stage] for key in exact}


@FAST
@given(problems(max_p=6, max_m=1, max_v=3))
def test_paths_keep_networkx_topological_order(problem: Problem) -> None:
    """``stage_paths`` numbers the DAG itself (no networkx on a solve's path) and keeps the order its
    dicts had when built from ``build_dag``: callers iterate them, so ties break as before."""
    paths = stage_paths(problem)
    order = [(a.kind, a.stage) for a in nx.topological_sort(build_dag(replace(problem, m=1, mem=())))]
    assert list(paths.head) == list(paths.tail) == order
    for r, stages in enumerate(problem.rank_stages):
        assert list(paths.rank_head[r]) == list(paths.rank_tail[r]) == [k for k in order if k[1] in stages]


@FAST
@given(problems(max_p=4, max_m=1, max_v=3))
def test_paths_from_a_forward_are_head_differences(problem: Problem) -> None:
    """The module doc of solvers.paths: F(s) lies on a longest path to all it reaches."""
    paths = stage_paths(problem)
    graph = build_dag(replace(problem, m=1, mem=()))
    for a in graph:
        assert {b for b in graph if reaches(a, b)} == nx.descendants(graph, a) | {a}
    back = "I" if problem.split else "B"
    for s in range(problem.num_stages):
        exact = _longest_from(problem, s)
        assert paths.from_forward(s).reached() == exact
        assert paths.round_trip[s] == exact[back, s] + problem.duration(back, s)
    for r, stages in enumerate(problem.rank_stages):
        exact = _longest_from(problem, stages[0])
        assert paths.rank_head[r] == {k: t for k, t in exact.items() if k[1] in stages}
        mine = [k for k in exact if k[1] in stages]
        for key in mine:  # from its end to the latest end of a task of the rank that it reaches
            reach = _longest_from_task(problem, Action(key[0], key[1], 0))
            ends = [reach[k] + problem.duration(*k) for k in mine if k in reach]
            assert paths.rank_tail[r][key] == max(ends) - problem.duration(*key)


@FAST
@given(problems(max_p=4, max_m=8, max_v=2))
def test_open_work_relaxation_is_never_below_the_exact_count(problem: Problem) -> None:
    """Term 5's cool-down work A: the concave relaxation used for huge caps bounds the exact count."""
    from schedc.solvers import bounds

    for r in range(problem.p):
        if problem.mem[r] is None:
            continue
        exact = bounds._open_work(problem, r)
        saved, bounds.EXACT_OPEN_WORK = bounds.EXACT_OPEN_WORK, -1
        try:
            assert bounds._open_work(problem, r) >= exact
        finally:
            bounds.EXACT_OPEN_WORK = saved


_GROUPS = st.lists(st.tuples(*(st.fractions(0, 8, max_denominator=3) for _ in range(3))), max_size=7)


@given(_GROUPS)
@settings(max_examples=300, deadline=None)
def test_jacksons_sweep_is_the_best_subset_of_least_head_work_and_least_tail(groups):
    """Term 2's definition, over every non-empty subset J: the sweep over heads that replaced the
    sum anew per (head, tail) pair (49 s at v = 100) must give the same maximum."""
    best = max((min(g[0] for g in subset) + sum(g[1] for g in subset) + min(g[2] for g in subset)
                for n in range(1, len(groups) + 1) for subset in itertools.combinations(groups, n)),
               default=Fraction(0))
    assert jackson(groups) == max(best, Fraction(0))
