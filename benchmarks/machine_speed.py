"""How fast this machine runs the solver right now, so that benchmark runs from different days can be
compared. Every timed result here depends on it: the solver's budgets are wall-clock seconds (with
several workers), and these machines are shared. On 2026-12-02 the same code (fd7fbcf, checked out
again) proved a relaxation bound in 12–13 s that had taken 7–9 s in an earlier session, and cap-sweep
instances proven near 48 s ended unproven at 60 s.

Two fixed workloads, each timed on the wall clock:

- ``cpsat``: one CP-SAT worker for a fixed amount of CP-SAT's deterministic time (its own count of
  work done, the same on every machine) on the cap sweep's p=4 looped mem=3 model, hinted with the
  list plan; reported as wall seconds per unit of deterministic time (of what the search spent,
  should it ever end early).
- ``python``: the simulator's replay of a fixed plan (the list scheduler, the bounds and every check
  are pure Python), in seconds.

Larger numbers mean a slower machine. ``solver_quality.py`` records both at the start and at the end
of a run (``meta.speed``): a machine that grew busier meanwhile shows there.
"""

from __future__ import annotations

import argparse
import sys
import time
from fractions import Fraction

from schedc.baselines import baseline_plan
from schedc.problem import Problem
from schedc.simulate import simulate

REFERENCE = Problem(p=4, m=16, v=2, tf=1, tb=2, tw=1, comm=Fraction(1, 2), mem=(Fraction(3),))
"""caps-p4-m16-v2-split-c1_2-mem3-uneq (384 tasks; optimum 92): REFERENCE_DTIME takes 4-5 s of one
core on this project's machines (2026-12-02, a slow day: 2.2-2.6 s per unit)."""
REFERENCE_DTIME = 2.0
REPLAYED = Problem(p=8, m=32, v=2)
"""Replayed REPLAYS times in its interleaved 1F1B order (1,536 tasks; about half a second)."""
REPLAYS = 200


def cpsat_seconds_per_dtime(dtime: float = REFERENCE_DTIME) -> float:
    """Wall seconds per unit of CP-SAT deterministic time, one worker, on the reference model."""
    from schedc.solvers.cpsat_model import add_hint, build_model
    from schedc.solvers.cpsat_solve import solve_model
    from schedc.solvers.incumbent import list_plan
    from schedc.solvers.symmetry import canonical_starts

    start = list_plan(REFERENCE, "makespan")
    cm = build_model(REFERENCE, horizon=start.makespan)
    add_hint(cm, canonical_starts(start.timeline), start.value)
    result = solve_model(cm, time_limit=dtime, workers=1, seed=0)
    return result.wall / max(result.deterministic_time, 1e-9)


def python_seconds(replays: int = REPLAYS) -> float:
    """Wall seconds of ``replays`` simulator replays of one fixed plan."""
    orders = baseline_plan("interleaved-1f1b", REPLAYED).orders
    t0 = time.perf_counter()
    for _ in range(replays):
        simulate(REPLAYED, orders)
    return time.perf_counter() - t0


def measure() -> dict[str, float]:
    """Both figures, rounded for the JSON."""
    return {"cpsat_s_per_dtime": round(cpsat_seconds_per_dtime(), 3), "python_s": round(python_seconds(), 3)}


def main(argv: list[str] | None = None) -> int:
    """Prints both figures; no options (solver_quality.py records them in its JSON)."""
    argparse.ArgumentParser(description=" ".join(__doc__.split("\n\n")[0].split())).parse_args(argv)
    print(measure())
    return 0


if __name__ == "__main__":
    sys.exit(main())
