"""Priority rules for the list scheduler: which ready task a free rank starts first.

Every task gets an int key and the smallest wins (ties: lower task id), so the scheduler's heaps
compare ints only. The rules in ``RULES`` map each (stage, kind) to a pair (base, mult) and the task
of microbatch ``mb`` gets ``base + mb * mult``; a reference rule 'ref:NAME' takes the task's start in
baseline NAME's replay. W never blocks anything but memory, so 'zb', 'ff', 'zb-bfs' and 'lst-mb'
put it last: it fills idle time, and runs when the F a rank wants does not fit its cap (the
scheduler skips blocked F's, so a W behind them comes up); '1f1b' runs it right after its I, and
'mb', 'head' and 'lst' rank it by its microbatch or its time like any other task.
"""

from __future__ import annotations

from functools import lru_cache

from schedc.dag import Orders
from schedc.errors import ProblemError
from schedc.simulate import simulate
from schedc.solvers.bounds import memory_window
from schedc.solvers.paths import stage_paths
from schedc.solvers.scaled import Scaled

# Class order of kinds per rule family (smaller first).
_CLASS = {
    "zb": {"I": 0, "B": 0, "F": 1, "W": 2},  # backward first, then forward, W deferred (ZB-H1/H2 spirit)
    "1f1b": {"I": 0, "B": 0, "W": 1, "F": 2},  # backward and its W right away, then forward
    "ff": {"F": 0, "I": 1, "B": 1, "W": 2},  # forward first (GPipe-like, bounded by the caps)
}

RULES: tuple[str, ...] = ("zb", "1f1b", "ff", "mb", "zb-bfs", "head", "lst", "lst-mb")
"""zb / 1f1b / ff: kind class, then oldest microbatch, then the deeper stage (depth-first).
mb: oldest microbatch first, then zb's class. zb-bfs: zb with the shallower stage first
(breadth-first over stages, as interleaved 1F1B). head: earliest "pipeline time" first, the task's
head plus mb * cycle, where cycle is the per-microbatch time the busiest rank (or its cap) needs.
lst: latest start first: mb * cycle + critical path - tail - duration (the tail of the critical path
from ``stage_paths`` decides). lst-mb: lst on microbatch cycles with W deferred."""


def task_keys(sc: Scaled, rule: str) -> list[int]:
    """The priority key of every task id for ``rule`` (smaller first): ``base + mb * mult`` for the
    rules in ``RULES``; for 'ref:NAME' the start of the task in baseline NAME's replay."""
    if rule.startswith(REFERENCE):
        return reference_keys(sc, rule.removeprefix(REFERENCE))
    base, mult = priority_keys(sc, rule)
    m = sc.m
    return [base[sk] + mb * mult[sk] for sk in range(sc.num_sk) for mb in range(m)]


def priority_keys(sc: Scaled, rule: str) -> tuple[list[int], list[int]]:
    """(base, mult) per sk for ``rule``, a task's key being base + mb * mult: a table per (stage,
    kind), not per task, since microbatches only shift the key (``task_keys`` expands it)."""
    if rule not in RULES:
        raise ProblemError(f"unknown list-scheduling rule {rule!r}; choose from {', '.join(RULES)}")
    nk, num_sk, m = len(sc.kinds), sc.num_sk, sc.m
    stages = num_sk // nk
    kind = [sc.kinds[sk % nk] for sk in range(num_sk)]
    stage = [sk // nk for sk in range(num_sk)]
    if rule in ("zb", "1f1b", "ff", "zb-bfs"):
        cls = _CLASS["zb" if rule == "zb-bfs" else rule]
        depth = [stage[sk] if rule == "zb-bfs" else stages - 1 - stage[sk] for sk in range(num_sk)]
        base = [cls[kind[sk]] * (m + 1) * stages + depth[sk] for sk in range(num_sk)]
        return base, [stages] * num_sk
    if rule == "mb":
        cls = _CLASS["zb"]
        base = [cls[kind[sk]] * stages + stages - 1 - stage[sk] for sk in range(num_sk)]
        return base, [3 * stages] * num_sk
    return _path_keys(sc, rule, kind, stage)


REFERENCE = "ref:"
"""Rule prefix: follow a baseline's timing (its replay's start times) as the priority, while the
scheduler still checks memory and fills idle time. It brings the baselines' steady-state patterns
(interleaved 1F1B, ZB-H1, ZB-V) into capped problems they do not fit as they are."""


def reference_keys(sc: Scaled, name: str) -> list[int]:
    """The start tick of every task id in baseline ``name``'s replay (the 'ref:NAME' keys)."""
    return list(_reference_starts(sc, name))


@lru_cache(maxsize=16)
def _reference_starts(sc: Scaled, name: str) -> tuple[int, ...]:
    """Cached: the list portfolio runs each reference rule under several windows and admissions,
    and a replay by the simulator costs 0.1 s at p = 32, m = 256."""
    from schedc.baselines import BASELINES

    problem = sc.problem
    if name not in BASELINES or BASELINES[name].why_not(problem) is not None:
        raise ProblemError(f"reference schedule {name!r} does not apply to {problem.describe()}")
    return tuple(replay_starts(sc, BASELINES[name].build(problem)))


def replay_starts(sc: Scaled, orders: Orders) -> list[int]:
    """Start ticks of every task id when ``orders`` are replayed as soon as possible: the
    simulator's starts, in ``Problem.time_scale`` ticks as ``sc``'s are."""
    timeline = simulate(sc.problem, orders)
    start = [0] * (sc.num_sk * sc.m)
    for actions, starts in zip(timeline.actions, timeline.starts, strict=True):
        for a, t in zip(actions, starts, strict=True):
            start[sc.sk_of(a.kind, a.stage) * sc.m + a.mb] = t
    return start


def _path_keys(sc: Scaled, rule: str, kind: list[str], stage: list[int]) -> tuple[list[int], list[int]]:
    paths = stage_paths(sc.problem)
    scale = sc.time_scale
    head = [int(paths.head[kind[sk], stage[sk]] * scale) for sk in range(sc.num_sk)]
    tail = [int(paths.tail[kind[sk], stage[sk]] * scale) for sk in range(sc.num_sk)]
    cp = max(h + d + t for h, d, t in zip(head, sc.dur, tail, strict=True))
    cycle = max(1, cycle_ticks(sc))
    if rule == "head":
        return head, [cycle] * sc.num_sk
    lst = [cp - t - d for t, d in zip(tail, sc.dur, strict=True)]
    if rule == "lst":
        return lst, [cycle] * sc.num_sk
    late = (sc.m + 2) * cycle + cp  # lst-mb: W after every other task that is ready
    return [x + (late if kind[sk] == "W" else 0) for sk, x in enumerate(lst)], [cycle] * sc.num_sk


def cycle_ticks(sc: Scaled) -> int:
    """Ticks per microbatch that the busiest rank needs: its work, or its cap's throughput limit."""
    problem = sc.problem
    work = [0] * problem.p
    for sk, d in enumerate(sc.dur):
        work[sc.rank[sk]] += d
    best = max(work)
    for r in range(problem.p):
        window = memory_window(problem, r)
        if window is not None:
            best = max(best, int(max(window) * sc.time_scale / problem.m))
    return best
