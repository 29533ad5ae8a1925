"""The textbook schedules against their published closed forms, replayed by the simulator.

Closed forms are stated for equal costs tf = tb = tw = t (T = tf+tb+tw). ZB-H1/H2/V bubbles are per-rank
spans (the Zero Bubble paper's measure); GPipe, 1F1B and interleaved 1F1B are stated for the makespan.
"""

from __future__ import annotations

import re
from dataclasses import replace
from fractions import Fraction
from importlib import import_module

import pytest
from hypothesis import HealthCheck, given, settings

from schedc.baselines import BASELINES, applicable, baseline_plan
from schedc.errors import ProblemError
from schedc.problem import Problem
from schedc.simulate import Timeline
from schedc.solvers.bounds import lower_bound
from schedc.validate import validate
from tests.strategies import problems

GRID = [(p, m) for p in (2, 4, 8) for m in (p, 2 * p, 4 * p)]
T_UNIT = (Fraction(1), Fraction(3, 2))  # two scales of equal costs


def run(name: str, **kw) -> Timeline:
    return baseline_plan(name, Problem(**kw)).timeline


# ---- GPipe and 1F1B ------------------------------------------------------------------------------

def test_seed_example() -> None:
    """2 stages x 4 microbatches, F = B = 1: makespan 10, 80% busy; rank 0 holds 4 (GPipe), 2 (1F1B)."""
    for name, peak in (("gpipe", 4), ("1f1b", 2)):
        tl = run(name, p=2, m=4, split=False, tb=1, tw=0)
        assert tl.makespan == 10
        assert tl.bubble == Fraction(1, 5)
        assert tl.peak_mem[0] == peak


@pytest.mark.parametrize(("p", "m"), GRID)
@pytest.mark.parametrize("costs", [(1, 1, 1), (1, 2, 1), (2, 1, Fraction(1, 2))])
def test_gpipe_and_1f1b_unsplit(p: int, m: int, costs: tuple) -> None:
    """(m+p-1)(tf+tb+tw) for any equal-per-stage costs; rank 0 holds m (GPipe) or p (1F1B)."""
    tf, tb, tw = costs
    for name, peak in (("gpipe", m), ("1f1b", p)):
        tl = run(name, p=p, m=m, split=False, tf=tf, tb=tb, tw=tw)
        assert tl.makespan == (m + p - 1) * (tf + tb + tw)
        assert tl.peak_mem[0] == peak


# ---- ZB-H1 and ZB-H2 -----------------------------------------------------------------------------

@pytest.mark.parametrize(("p", "m"), GRID)
@pytest.mark.parametrize("t", T_UNIT)
def test_zb_h1(p: int, m: int, t: Fraction) -> None:
    """Largest span m*T + (p-1)(tf+tb-tw); all ranks end together, so it is also the makespan."""
    tl = run("zb-h1", p=p, m=m, tf=t, tb=t, tw=t)
    assert tl.max_span == m * 3 * t + (p - 1) * t
    assert tl.makespan == tl.max_span
    assert tl.peak_mem[0] == max(tl.peak_mem) == p


@pytest.mark.parametrize(("p", "m"), [(p, m) for p, m in GRID if m >= 2 * p - 1])
@pytest.mark.parametrize("t", T_UNIT)
def test_zb_h2(p: int, m: int, t: Fraction) -> None:
    """Every span m*T (bubble (p-1)(tf+tb-2tw) = 0); the makespan adds the last rank's (p-1)t start.
    The order needs m >= 2p-1 to fill its warm-up: m = p is in test_zb_small_m."""
    tl = run("zb-h2", p=p, m=m, tf=t, tb=t, tw=t)
    assert set(tl.spans) == {m * 3 * t}
    assert tl.makespan == m * 3 * t + (p - 1) * t
    assert tl.bubble == 1 - p * m * 3 * t / (p * tl.makespan)  # idle within the makespan, not the span
    assert tl.peak_mem[0] == max(tl.peak_mem) == 2 * p - 1


@pytest.mark.parametrize("w_mem", [Fraction(0), Fraction(1, 3), Fraction(1)])
def test_zb_peaks_per_rank(w_mem: Fraction) -> None:
    """Rank r holds its forwards in flight plus the w_mem share of its pending W's: p-r + r*w_mem
    (ZB-H1), 2p-1-2r + 2r*w_mem (ZB-H2); ZB-V holds p on every rank whatever w_mem."""
    for p in (2, 5):
        m = 3 * p
        h1 = run("zb-h1", p=p, m=m, w_mem=w_mem).peak_mem
        h2 = run("zb-h2", p=p, m=m, w_mem=w_mem).peak_mem
        zv = run("zb-v", p=p, m=m, v=2, placement="vshape", w_mem=w_mem).peak_mem
        assert h1 == tuple(p - r + r * w_mem for r in range(p))
        assert h2 == tuple(2 * p - 1 - 2 * r + 2 * r * w_mem for r in range(p))
        assert set(zv) == {p}


@pytest.mark.parametrize("costs", [(1, 2, 1), (2, 1, 1), (3, 2, 1), (2, 3, Fraction(1, 2))])
def test_zb_unequal_costs(costs: tuple) -> None:
    """The paper's bubbles hold beyond equal costs as long as tw <= min(tf, tb)."""
    tf, tb, tw = costs
    for p in (2, 5):
        m = 3 * p
        work = m * (tf + tb + tw)
        assert run("zb-h1", p=p, m=m, tf=tf, tb=tb, tw=tw).max_span == work + (p - 1) * (tf + tb - tw)
        assert run("zb-h2", p=p, m=m, tf=tf, tb=tb, tw=tw).max_span == work + (p - 1) * (tf + tb - 2 * tw)


@pytest.mark.parametrize("p", [2, 3, 4, 8])
def test_zb_small_m(p: int) -> None:
    """Too few microbatches to fill the warm-up (ZB-H1: m < p, ZB-H2: m < 2p-1): rank 0 has run all
    its forwards before the first input gradient can come back, p*tf + (p-1)*tb after its start, and
    then still owes m I's and m W's. The orders reach exactly that bound on rank 0's span,
    (2p-1 + 2m)t, which exceeds the closed form by (p-m)t (ZB-H1) and (2p-1-m)t (ZB-H2)."""
    for name, threshold in (("zb-h1", p), ("zb-h2", 2 * p - 1)):
        for m in range(1, threshold):
            tl = run(name, p=p, m=m)
            assert tl.max_span == tl.spans[0] == 2 * p - 1 + 2 * m


# ---- ZB-V ----------------------------------------------------------------------------------------

@pytest.mark.parametrize(("p", "m"), GRID)
@pytest.mark.parametrize("t", T_UNIT)
def test_zb_v(p: int, m: int, t: Fraction) -> None:
    """Zero bubble and 1F1B's peak p on every rank (the authors' table, T_F = T_B = T_W) once
    m >= 2p-1; the makespan adds the last rank's start-up, p-1 chunk forwards of t/2."""
    tl = run("zb-v", p=p, m=m, v=2, placement="vshape", tf=t, tb=t, tw=t)
    if m < 2 * p - 1:
        # The order is built for 2p-1 microbatches and the missing ones are dropped (as PyTorch
        # does): their slots stay empty. Measured: each microbatch short of 2p-1 costs one t.
        assert tl.max_span == m * 3 * t + (2 * p - 1 - m) * t
        return
    assert set(tl.spans) == {m * 3 * t}
    assert tl.makespan == m * 3 * t + (p - 1) * t / 2
    assert set(tl.peak_mem) == {p}


@pytest.mark.parametrize(("p", "m"), GRID)
@pytest.mark.parametrize("v", [2, 3])
@pytest.mark.parametrize("t", T_UNIT)
@pytest.mark.parametrize("w_mem", [Fraction(1, 2), Fraction(0), Fraction(1)])
def test_interleaved_zb(p: int, m: int, v: int, t: Fraction, w_mem: Fraction) -> None:
    """Equal costs, p | m: ZB-H1's bubble divided by v, every rank ending together; rank r peaks
    at p - r(1-w_mem)/v (ZB-H1's p - r(1-w_mem) with chunks of 1/v)."""
    tl = run("interleaved-zb", p=p, m=m, v=v, tf=t, tb=t, tw=t, w_mem=w_mem)
    assert tl.makespan == tl.max_span == m * 3 * t + (p - 1) * t / v
    assert tl.peak_mem == tuple(p - r * (1 - w_mem) / v for r in range(p))


@pytest.mark.parametrize(("p", "m"), GRID)
@pytest.mark.parametrize("v", [2, 3])
@pytest.mark.parametrize("t", T_UNIT)
def test_looped_bfs(p: int, m: int, v: int, t: Fraction) -> None:
    """Unsplit, equal costs: interleaved 1F1B's makespan m*T + (p-1)*T/v, holding all m on every rank."""
    tl = run("looped-bfs", p=p, m=m, v=v, split=False, tf=t, tb=t, tw=t)
    assert tl.makespan == m * 3 * t + (p - 1) * 3 * t / v
    assert set(tl.peak_mem) == {m}


# ---- DualPipeV -----------------------------------------------------------------------------------

@pytest.mark.parametrize(("p", "m"), [(p, m) for p, m in GRID if m >= 2 * p] + [(3, 7), (5, 11)])
@pytest.mark.parametrize("t", T_UNIT)
@pytest.mark.parametrize("w_mem", [Fraction(1, 2), Fraction(1, 3)])
def test_dualpipev(p: int, m: int, t: Fraction, w_mem: Fraction) -> None:
    """Equal costs (measured here, not a published form): ZB-V's makespan, every rank ending
    together, rank r's span short of it by its r*t/2 late start; and a peak of p + 1/2 on
    every rank whatever w_mem, half an activation above ZB-V's (its steady state runs a chunk's
    F before the B that frees the other chunk's, and its B's free nothing before they end)."""
    tl = run("dualpipev", p=p, m=m, v=2, placement="vshape", tf=t, tb=t, tw=t, w_mem=w_mem)
    assert tl.makespan == m * 3 * t + (p - 1) * t / 2
    assert tl.spans == tuple(m * 3 * t + (p - 1 - r) * t / 2 for r in range(p))
    assert set(tl.peak_mem) == {p + Fraction(1, 2)}


def test_dualpipev_unsplit() -> None:
    """Without the split backward every I is a B and no W is left: the same order with whole B's."""
    split = BASELINES["dualpipev"].build(Problem(p=4, m=9, v=2, placement="vshape"))
    unsplit = BASELINES["dualpipev"].build(Problem(p=4, m=9, v=2, placement="vshape", split=False))
    for ours, theirs in zip(unsplit, split, strict=True):
        assert [str(a) for a in ours] == [str(a).replace("I", "B") for a in theirs if a.kind != "W"]
    with pytest.raises(ProblemError, match=r"m >= 2p = 8 microbatches"):
        baseline_plan("dualpipev", Problem(p=4, m=7, v=2, placement="vshape"))


# ---- interleaved 1F1B ----------------------------------------------------------------------------

@pytest.mark.parametrize(("p", "m"), GRID)
@pytest.mark.parametrize("v", [2, 3, 4])
@pytest.mark.parametrize("costs", [(1, 1, 1), (1, 2, 1), (1, 3, Fraction(1, 2))])
def test_interleaved(p: int, m: int, v: int, costs: tuple) -> None:
    """Megatron: makespan m*T + (p-1)*T/v (p | m, unsplit); rank 0 holds p*(1 + (p-1)/(p*v))
    microbatches' activations (Korthikanti et al.), all m when its warm-up runs every forward."""
    tf, tb, tw = costs
    tl = run("interleaved-1f1b", p=p, m=m, v=v, split=False, tf=tf, tb=tb, tw=tw)
    big_t = Fraction(tf + tb + tw)
    assert tl.makespan == m * big_t + (p - 1) * big_t / v
    assert tl.peak_mem[0] == min(m, p + Fraction(p - 1, v))


@pytest.mark.parametrize("p", [2, 4, 8])
@pytest.mark.parametrize("v", [2, 3])
def test_interleaved_small_m(p: int, v: int) -> None:
    """m < p: one round of m microbatches cannot keep p ranks busy, so each of the v-1 hand-overs
    between chunks idles rank 0 for p-m stage passes: the makespan is a plain pipeline's over p*v
    stages of T/v each, (m + p*v - 1)T/v, which exceeds Megatron's by (p-m)(v-1)T/v."""
    for m in range(1, p):
        tl = run("interleaved-1f1b", p=p, m=m, v=v, split=False)
        assert tl.makespan == Fraction(3 * (m + p * v - 1), v)


def test_interleaved_uneven_rounds() -> None:
    """m not a multiple of p: PyTorch's equal rounds of >= p microbatches (10 = 5 + 5 on 4 ranks)
    still reach Megatron's bubble; m that no equal rounds fit (9 on 4 ranks) is refused."""
    tl = run("interleaved-1f1b", p=4, m=10, v=2, split=False)
    assert tl.makespan == 10 * 3 + Fraction(3 * 3, 2)
    with pytest.raises(ProblemError, match="equal rounds"):
        baseline_plan("interleaved-1f1b", Problem(p=4, m=9, v=2))


@pytest.mark.parametrize("name, torch_class", [("interleaved-1f1b", "ScheduleInterleaved1F1B"),
                                               ("interleaved-zb", "ScheduleInterleavedZeroBubble")])
def test_uneven_rounds_name_the_torch_schedule_with_the_same_limit(name: str, torch_class: str) -> None:
    """interleaved-zb's refusal named ScheduleInterleaved1F1B, where torch's interleaved zero bubble
    schedule is the one raising 'Zero bubble requires ...'."""
    with pytest.raises(ProblemError, match=f"rounds .* \\(PyTorch's {torch_class} has the same limit\\)$"):
        baseline_plan(name, Problem(p=4, m=9, v=2))


# ---- same orders as PyTorch's generators ----------------------------------------------------------

def _torch_orders(schedule: type, p: int, m: int, v: int) -> list[list[str]]:
    """Runs a PyTorch schedule's per-rank generator without a process group."""
    state = type("State", (), {})()
    state.pp_group_size, state._n_microbatches, state.n_local_stages = p, m, v
    state._stages = [None] * v
    state.num_stages = p * v
    state.number_of_rounds = max(1, m // p)
    state.microbatches_per_round = m // state.number_of_rounds
    return [[str(a) for a in schedule._calculate_single_rank_operations(state, r) if a is not None]
            for r in range(p)]


def _flat(actions: list, split: bool) -> list[str]:
    """PyTorch's actions as tokens: an overlapped pair as its two sub-actions in order, and a full
    backward B, with the split backward, as I then W (how schedc writes DualPipeV's B's)."""
    out: list[str] = []
    for action in actions:
        for sub in action.sub_actions or (action,):
            token = str(sub)
            stage, kind, mb = re.fullmatch(r"(\d+)([A-Z]+)(\d+)", token).groups()
            out += [f"{stage}I{mb}", f"{stage}W{mb}"] if split and kind == "B" else [token]
    return out


def test_dualpipev_same_order_as_pytorch() -> None:
    schedules = import_module("torch.distributed.pipelining.schedules")  # a test requirement: no skip
    for p in range(1, 7):
        for m in range(2 * p, 2 * p + 5):
            state = type("State", (), {"pp_group_size": p, "_n_microbatches": m})()
            theirs = [_flat(schedules.ScheduleDualPipeV._calculate_single_rank_operations(state, r), True)
                      for r in range(p)]
            ours = BASELINES["dualpipev"].build(Problem(p=p, m=m, v=2, placement="vshape"))
            assert [[str(a) for a in order] for order in ours] == theirs, (p, m)


def test_gpipe_same_order_as_pytorch() -> None:
    schedules = import_module("torch.distributed.pipelining.schedules")
    for p, m in [(1, 2), (2, 3), (4, 12)]:
        state = type("State", (), {"_num_stages": p, "_n_microbatches": m})()
        theirs = schedules.ScheduleGPipe._get_pipeline_order(state)
        theirs = [[str(a) for a in theirs[r] if re.fullmatch(r"\d+[FB]\d+", str(a))] for r in range(p)]
        ours = BASELINES["gpipe"].build(Problem(p=p, m=m, split=False))
        assert [[str(a) for a in order] for order in ours] == theirs, (p, m)


def test_same_orders_as_pytorch() -> None:
    schedules = import_module("torch.distributed.pipelining.schedules")  # a test requirement: no skip
    cases = [
        ("interleaved-1f1b", schedules.ScheduleInterleaved1F1B, dict(v=3, split=False)),
        ("zb-h1", schedules.ScheduleInterleavedZeroBubble, dict(v=1)),
        ("zb-v", schedules.ScheduleZBVZeroBubble, dict(v=2, placement="vshape")),
        ("interleaved-zb", schedules.ScheduleInterleavedZeroBubble, dict(v=2)),
        ("interleaved-zb", schedules.ScheduleInterleavedZeroBubble, dict(v=3)),
        ("looped-bfs", schedules.ScheduleLoopedBFS, dict(v=2, split=False)),
        ("looped-bfs", schedules.ScheduleLoopedBFS, dict(v=3, split=False)),
    ]
    for name, schedule, kw in cases:
        for p, m in [(1, 3), (2, 2), (3, 7), (4, 2), (4, 8), (5, 12)]:
            problem = Problem(p=p, m=m, **kw)
            if BASELINES[name].why_not(problem):
                continue
            ours = [[str(a) for a in order] for order in BASELINES[name].build(problem)]
            assert ours == _torch_orders(schedule, p, m, problem.v), (name, p, m)


def test_zb_v_matches_pytorch_below_and_at_2p_minus_1_microbatches() -> None:
    """ZB-V's order is built for max(m, 2p - 1) microbatches and the missing ones dropped, as torch's
    generator does; built for 2p it still passes every closed form for m >= 2p, but for p < m <= 2p - 1
    the ranks ran their passes in another order than the schedule torch runs under that name."""
    schedules = import_module("torch.distributed.pipelining.schedules")  # a test requirement: no skip
    for p in range(2, 6):
        for m in range(1, 2 * p + 1):
            problem = Problem(p=p, m=m, v=2, placement="vshape")
            ours = [[str(a) for a in order] for order in BASELINES["zb-v"].build(problem)]
            assert ours == _torch_orders(schedules.ScheduleZBVZeroBubble, p, m, 2), (p, m)


# ---- applicability and validity ------------------------------------------------------------------

def test_why_not() -> None:
    assert applicable(Problem(p=4, m=8)) == ["gpipe", "1f1b", "zb-h1", "zb-h2"]
    assert applicable(Problem(p=4, m=8, split=False)) == ["gpipe", "1f1b"]
    assert applicable(Problem(p=4, m=8, v=2)) == ["interleaved-1f1b", "looped-bfs", "interleaved-zb"]
    assert applicable(Problem(p=4, m=8, v=2, split=False)) == ["interleaved-1f1b", "looped-bfs"]
    assert applicable(Problem(p=4, m=8, v=2, placement="vshape")) == ["zb-v", "dualpipev"]
    assert applicable(Problem(p=4, m=7, v=2, placement="vshape")) == ["zb-v"]
    assert applicable(Problem(p=4, m=8, v=2, placement="vshape", split=False)) == ["dualpipev"]
    with pytest.raises(ProblemError, match="split backward"):
        baseline_plan("zb-h2", Problem(p=2, m=4, split=False))
    why = BASELINES["interleaved-zb"].why_not  # the placement first: its no-split hint fits looped only
    assert why(Problem(p=4, m=8, v=2, placement="vshape", split=False)).startswith("needs looped placement")
    assert why(Problem(p=4, m=8, v=2, split=False)).endswith("with --no-split use interleaved-1f1b")


def test_every_order_valid_on_small_grid() -> None:
    """Deadlock freedom depends on the orders alone, not on costs: one replay per shape covers all
    costs and latencies. Every shape with p <= 6, m <= 12, v <= 3 that a baseline claims."""
    for p in range(1, 7):
        for m in range(1, 13):
            for v, placement in ((1, "looped"), (2, "looped"), (3, "looped"), (2, "vshape")):
                for split in (True, False):
                    problem = Problem(p=p, m=m, v=v, placement=placement, split=split)
                    for name in applicable(problem):
                        assert validate(problem, BASELINES[name].build(problem), check_memory=False) == []


@settings(max_examples=60, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(problems())
def test_baselines_valid_and_above_lower_bound(problem: Problem) -> None:
    """Baselines ignore the cap, so they are held to the uncapped bound; the capped one binds only
    the plans that fit their caps."""
    uncapped = lower_bound(replace(problem, mem=()))
    capped = lower_bound(problem)
    for name in applicable(problem):
        plan = baseline_plan(name, problem)
        assert plan.makespan >= uncapped
        if plan.fits():
            assert plan.makespan >= capped
        assert plan.timeline.max_span <= plan.makespan


def test_a_baseline_over_the_cap_carries_the_uncapped_bound_never_above_its_makespan() -> None:
    """The cap-aware bound holds only for plans within the cap: given to a baseline over it, it can
    exceed the baseline's own makespan (p=4 m=8 cap 2: 37 against GPipe's 30) and its gap then reads
    0%, a plan far from optimal shown as proven optimal."""
    problem = Problem(p=4, m=8, mem=2)  # every baseline is over this cap
    uncapped = lower_bound(replace(problem, mem=()))
    assert lower_bound(problem) > max(baseline_plan(n, problem).makespan for n in applicable(problem))
    for name in applicable(problem):
        plan = baseline_plan(name, problem)
        assert not plan.fits()
        assert plan.lower_bound == uncapped <= plan.makespan, name
    gpipe = baseline_plan("gpipe", problem)
    assert gpipe.gap == (gpipe.makespan - uncapped) / gpipe.makespan > 0


def test_a_baseline_within_the_cap_carries_the_cap_aware_bound() -> None:
    """The other way round: a fitting baseline given the weaker uncapped bound would print a gap
    schedc can close (ZB-H1 at p=2 m=4 tb=2 cap 2 is optimal: 18 against the uncapped 17)."""
    problem = Problem(p=2, m=4, tb=2, mem=2)
    assert lower_bound(problem) > lower_bound(replace(problem, mem=()))  # the cap binds the bound
    plan = baseline_plan("zb-h1", problem)
    assert plan.fits()
    assert plan.lower_bound == lower_bound(problem) == plan.makespan and plan.gap == 0
