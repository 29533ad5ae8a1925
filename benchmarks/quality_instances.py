"""The benchmark's instances: the issue's grid, its hard cases, the cap sweep, the headline and scale.

Kept apart from ``solver_quality.py``, which measures them, so that other scripts (``steady_state.py``)
and the tests take the same instances without the measuring code.
"""

from __future__ import annotations

from dataclasses import dataclass
from fractions import Fraction

from schedc.problem import Problem, StageCost


@dataclass(frozen=True)
class Instance:
    name: str
    problem: Problem
    group: str
    """headline, grid, caps or scale: which target applies."""
    time_limit: float = 60.0


def _costs(kind: str, p: int, v: int) -> dict:
    """eq: tf = tb = tw = 1; uneq: tf 1, tb 2, tw 1; unbal: per-stage, first stage 1.25x and last
    stage (the loss head) 1.5x of the unequal costs."""
    if kind == "eq":
        return {}
    if kind == "uneq":
        return {"tf": 1, "tb": 2, "tw": 1}
    stages = p * v
    weights = [Fraction(5, 4) if s == 0 else Fraction(3, 2) if s == stages - 1 else Fraction(1)
               for s in range(stages)]
    return {"stage_costs": tuple(StageCost(w / v, 2 * w / v, w / v) for w in weights)}


def _caps(p: int) -> list[Fraction | None]:
    """From the smallest feasible cap (1) to none."""
    return [*sorted({Fraction(1), Fraction(3, 2), Fraction(max(2, p // 2)), Fraction(p)}), None]


LAYOUTS = ((1, "looped"), (2, "looped"), (2, "vshape"))
VARIANTS = [(split, comm, costs) for costs in ("uneq", "eq", "unbal") for split in (True, False)
            for comm in (Fraction(0), Fraction(1, 2))]


def _name(p, m, v, placement, cap, split, comm, costs) -> str:
    cap_s = "none" if cap is None else str(cap).replace("/", "_")
    return (f"p{p}-m{m}-v{v}{'' if placement == 'looped' else 'V'}-{'split' if split else 'unsplit'}"
            f"-c{str(comm).replace('/', '_')}-mem{cap_s}-{costs}")


def grid(time_limit: float) -> list[Instance]:
    """The issue's grid, covered rather than multiplied out: every (p, m, layout, cap) appears once,
    and the split/comm/costs variant rotates through its 12 combinations along the grid, so each
    variant meets every p, layout and cap level."""
    out, k = [], 0
    for p in (2, 4, 8, 16):
        for m in (p, 2 * p, 4 * p):
            for v, placement in LAYOUTS:
                for cap in _caps(p):
                    split, comm, costs = VARIANTS[k % len(VARIANTS)]
                    k += 1
                    problem = Problem(p=p, m=m, v=v, placement=placement, split=split, comm=comm,
                                      mem=() if cap is None else (cap,), **_costs(costs, p, v))
                    out.append(Instance(_name(p, m, v, placement, cap, split, comm, costs), problem, "grid",
                                        time_limit))
    return out


def hard(time_limit: float) -> list[Instance]:
    """The issue's hard cases: tight caps with v = 2 and unequal costs; and the headline command with
    ``--v 2`` (p=8 m=32 v=2 looped mem=4, equal costs), which the grid's rotation of variants gives
    per-stage costs and unsplit: its default 10 s run ends at the list plan (120.5 against 107.5)."""
    specs = [
        (4, 8, 2, "looped", Fraction(3, 2), "uneq"), (4, 16, 2, "vshape", Fraction(3, 2), "eq"),
        (8, 16, 2, "looped", Fraction(2), "uneq"), (8, 32, 2, "vshape", Fraction(2), "uneq"),
        (8, 32, 1, "looped", Fraction(2), "uneq"), (16, 32, 2, "looped", Fraction(4), "unbal"),
        (8, 32, 2, "looped", Fraction(4), "eq"),
    ]
    return [Instance(_name(p, m, v, pl, cap, True, Fraction(0), costs),
                     Problem(p=p, m=m, v=v, placement=pl, mem=(cap,), **_costs(costs, p, v)), "grid",
                     time_limit)
            for p, m, v, pl, cap, costs in specs]


def cap_sweep(time_limit: float) -> list[Instance]:
    """The caps from 3/2 or 2 up to p, in steps of half a rank's activations (p = 4) or a whole
    (p = 8), where the grid takes only 1, 3/2, max(2, p/2) and p: two stages per rank, tb = 2,
    comm 1/2. The grid's coarse caps miss the middle, where the cap binds without forcing the order
    (p=4 m=16 v=2 looped mem=3: 92 to 94.5 against a bound of 84.5 in 60 s before the solver gave
    small models one uninterrupted search, backends.WHOLE_SEARCH_MAX_TASKS; 92 is optimal, and proven
    in about 49 s since the strongest rank's relaxation runs first, portfolio.RELAX_FIRST_SHARE)."""
    out = []
    for p, first, step in ((4, Fraction(3, 2), Fraction(1, 2)), (8, Fraction(2), Fraction(1))):
        caps = [first + k * step for k in range(int((p - first) / step) + 1)]
        for v, placement in LAYOUTS[1:]:
            for cap in caps:
                problem = Problem(p=p, m=16, v=v, placement=placement, comm=Fraction(1, 2), mem=(cap,),
                                  **_costs("uneq", p, v))
                out.append(Instance("caps-" + _name(p, 16, v, placement, cap, True, Fraction(1, 2), "uneq"),
                                    problem, "caps", time_limit))
    return out


def headline() -> Instance:
    return Instance("headline-p8-m32-mem4", Problem(p=8, m=32, mem=(4,)), "headline", 10.0)


def scale(time_limit: float) -> list[Instance]:
    return [Instance("scale-p32-m256", Problem(p=32, m=256), "scale", time_limit),
            Instance("scale-p32-m256-mem8", Problem(p=32, m=256, mem=(8,)), "scale", time_limit)]
