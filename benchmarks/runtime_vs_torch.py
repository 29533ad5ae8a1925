"""schedc's runtime vs torch.distributed.pipelining on the same model and schedule; and measured
step time vs the plan's simulated makespan under profiled costs. Prints a table, writes JSON.

    python benchmarks/runtime_vs_torch.py [--p 2] [--m 8] [--width 1024] [--layers 8] [--microbatch 64]
                                          [--steps 10] [--rounds 3] [--json PATH]

The default configuration writes the committed ``benchmarks/runtime_vs_torch.json``; any other needs
its own ``--json``, so that a trial run never overwrites the committed result.

The default model gives actions of a few ms (forwards about 6 ms and backwards about 13 ms in
the committed run, depending on the machine; stage 0's input gradient, which does no work, about
0.1 ms), the scale at which a pipeline stage does real work; ``--width 512 --microbatch 16``
gives actions of about 0.5 ms, where the per-message costs of gloo on 2 shared cores (about 70 us
per call alone, about 360 us during the run, with stalls of several ms) dominate and the
simulator, which models a transfer as a fixed latency, underestimates the step (see docs/benchmarks.md).

One run of ``p`` local gloo processes (one thread each). Per schedule, two copies of the same MLP
(same seed) run the same per-rank order: schedc's PipelineRunner, and torch's schedule class
(Schedule1F1B, ScheduleInterleaved1F1B, ScheduleZBVZeroBubble). The orders of the last two are
taken from torch's own ``pipeline_order``, so both runtimes replay identical schedules. Steps
alternate between the two runtimes; a step is timed from a barrier to a barrier (all ranks done)
and the median counts. Each rank times its own stages (``schedc.runtime.profile.time_stages``,
all ranks at once, as in the run; for the unsplit schedules each stage's whole backward too, to
which I and W are scaled, as ``profile_problem`` prices a B), ranks 0 and 1 measure the P2P
latency and the runner's per-message call costs (``measure_message_calls``), added to the stage costs as
``profile_problem`` adds them (``with_message_calls``); the plan replayed by the simulator with
these costs gives the simulated makespan. A solver plan for the profiled
zero-bubble problem is measured too (no torch counterpart).
"""

from __future__ import annotations

import argparse
import json
import os
import platform
import statistics
import time
from dataclasses import dataclass
from pathlib import Path

import needs_torch  # noqa: F401  (before torch: one line where it is missing)
import torch
import torch.distributed as dist
from bench_args import at_least, commit, json_path
from torch.distributed.pipelining import PipelineStage
from torch.distributed.pipelining.schedules import (
    Schedule1F1B,
    ScheduleInterleaved1F1B,
    ScheduleZBVZeroBubble,
)

from schedc.actions import Action
from schedc.baselines import baseline_plan
from schedc.plan import Plan
from schedc.problem import Problem, StageCost
from schedc.runtime import PipelineRunner, split_stages
from schedc.runtime.launch import run_local
from schedc.runtime.models import mlp, mlp_loss
from schedc.runtime.profile import (
    MessageCalls,
    as_fused,
    measure_message_calls,
    measure_p2p,
    time_stages,
    with_message_calls,
)
from schedc.runtime.shapes import TensorMeta
from schedc.simulate import simulate

US = 1e-6
HERE = Path(__file__).resolve().parent
DEFAULT_JSON = HERE / "runtime_vs_torch.json"


@dataclass(frozen=True)
class Config:
    p: int
    m: int
    width: int
    layers: int
    microbatch: int
    steps: int
    warmup: int
    rounds: int


SCHEDULES = {
    "1F1B": (dict(v=1, placement="looped", split=False), Schedule1F1B),
    "interleaved 1F1B": (dict(v=2, placement="looped", split=False), ScheduleInterleaved1F1B),
    "ZB-V": (dict(v=2, placement="vshape", split=True), ScheduleZBVZeroBubble),
}


def _batch(cfg: Config, step: int) -> tuple[torch.Tensor, torch.Tensor]:
    gen = torch.Generator().manual_seed(step)
    shape = (cfg.m * cfg.microbatch, cfg.width)
    return torch.randn(shape, generator=gen), torch.randn(shape, generator=gen)


def _torch_schedule(cls, problem: Problem, stages: dict):
    cpu = torch.device("cpu")
    torch_stages = [PipelineStage(stages[s], s, problem.num_stages, cpu) for s in sorted(stages)]
    if cls is Schedule1F1B:
        return cls(torch_stages[0], problem.m, loss_fn=mlp_loss)
    return cls(torch_stages, problem.m, loss_fn=mlp_loss)


def _orders_of(schedule, p: int) -> tuple[tuple[Action, ...], ...]:
    """torch's per-rank compute order as schedc actions (idle slots dropped)."""
    return tuple(tuple(Action.parse(str(a)) for a in schedule.pipeline_order[r] if a is not None)
                 for r in range(p))


def _profile(cfg: Config, problem: Problem, stages: dict, rank: int,
             calls: MessageCalls) -> tuple[StageCost, ...]:
    """Every rank times its own stages at the same time (as they run), plus the message calls each
    action makes; costs in microseconds."""
    mine = {}
    last = problem.num_stages - 1
    for s, module in stages.items():
        x = torch.randn(cfg.microbatch, cfg.width)
        loss = (mlp_loss, torch.randn(cfg.microbatch, cfg.width)) if s == last else (None, None)
        timed = time_stages([module], x, *loss, repeats=10, first=s == 0)
        if not problem.split:  # B is one autograd pass, cheaper than I and W apart, as profile prices it
            timed = as_fused(timed, time_stages([module], x, *loss, repeats=10, first=s == 0, fused=True))
        mine[s] = timed[0]
    everyone: list = [None] * problem.p
    dist.all_gather_object(everyone, mine)
    merged = {s: c for part in everyone for s, c in part.items()}
    times = with_message_calls(problem, [merged[s] for s in range(problem.num_stages)], calls)
    return tuple(StageCost(max(1, round(t.tf / US)), max(1, round(t.tb / US)), round(t.tw / US))
                 for t in times)


def _timed(step, times: list[float]) -> None:
    dist.barrier()
    start = time.perf_counter()
    step()
    dist.barrier()
    times.append(time.perf_counter() - start)


def _schedc_step(runner, stages, x, y):
    def run():
        runner.step(x if runner.holds_first else None, target=y if runner.holds_last else None)
        for module in stages.values():
            module.zero_grad(set_to_none=True)
    return run


def _torch_step(schedule, stages, problem, x, y):
    def run():
        args = (x,) if 0 in stages else ()
        schedule.step(*args, target=y if problem.num_stages - 1 in stages else None)
        for module in stages.values():
            module.zero_grad(set_to_none=True)
    return run


def _in_run_costs(problem: Problem, timelines: list, rank: int) -> tuple[StageCost, ...]:
    """Median duration of each (kind, stage) as the runtime recorded it during the timed steps."""
    seen: dict[tuple[str, int], list[float]] = {}
    for timeline in timelines:
        for span in timeline:  # compute only: the time blocked on a receive is the simulator's lag
            key = (span.action.kind, span.action.stage)
            seen.setdefault(key, []).append(span.end - span.start - span.waited)
    mine = {key: statistics.median(values) / US for key, values in seen.items()}
    everyone: list = [None] * problem.p
    dist.all_gather_object(everyone, mine)
    d = {key: v for part in everyone for key, v in part.items()}

    def us(kind: str, s: int, least: int) -> int:
        return max(least, round(d.get((kind, s), 0.0)))

    back = ("I", "W") if problem.split else ("B", None)
    return tuple(StageCost(us("F", s, 1), us(back[0], s, 1), us(back[1], s, 0) if back[1] else 0)
                 for s in range(problem.num_stages))


def _rank_breakdown(timelines: list, p: int) -> list[dict]:
    """Per rank, medians over steps: compute, time blocked on receives, and the rest of its span
    (Python, posting transfers, the gaps the schedule leaves)."""
    def med(f):
        return statistics.median(f(t) for t in timelines) * 1e3

    mine = {
        "compute": med(lambda t: sum(s.end - s.start - s.waited for s in t)),
        "waited": med(lambda t: sum(s.waited for s in t)),
        "span": med(lambda t: t[-1].end),
    }
    everyone: list = [None] * p
    dist.all_gather_object(everyone, mine)
    return everyone


def _plan(cfg, rank, structure, cls, problem, schedule, profiled, solver_plan):
    if solver_plan:
        box = [None]
        if rank == 0:
            from schedc.solvers import solve

            box[0] = solve(profiled, time_limit=10, workers=1).orders
        dist.broadcast_object_list(box, src=0)
        return Plan(problem=problem, orders=box[0], source="cp-sat")
    if cls is Schedule1F1B:
        return baseline_plan("1f1b", problem)
    return Plan(problem=problem, orders=_orders_of(schedule, cfg.p), source=f"torch {cls.__name__}")


def _measure(cfg, rank, name, structure, cls, comm_us, calls, solver_plan=False):
    problem = Problem(p=cfg.p, m=cfg.m, **structure)
    ours = split_stages(mlp(cfg.layers, cfg.width), problem, rank)
    theirs = split_stages(mlp(cfg.layers, cfg.width), problem, rank)
    schedule = _torch_schedule(cls, problem, theirs)
    for k in range(cfg.warmup):  # warms caches and the allocator before the stages are timed
        _torch_step(schedule, theirs, problem, *_batch(cfg, k))()
    costs = _profile(cfg, problem, ours, rank, calls)
    profiled = Problem(p=cfg.p, m=cfg.m, **structure, stage_costs=costs, comm=comm_us)
    plan = _plan(cfg, rank, structure, cls, problem, schedule, profiled, solver_plan)
    runner = PipelineRunner(plan, ours, mlp_loss, record=True)
    ours_t: list[float] = []
    theirs_t: list[float] = []
    timelines = []
    for k in range(cfg.warmup + cfg.steps):
        x, y = _batch(cfg, k)
        _timed(_schedc_step(runner, ours, x, y), ours_t)
        timelines.append(runner.timeline)
        if not solver_plan:
            _timed(_torch_step(schedule, theirs, problem, x, y), theirs_t)
    in_run = Problem(p=cfg.p, m=cfg.m, **structure, comm=comm_us,
                     stage_costs=_in_run_costs(problem, timelines[cfg.warmup:], rank))
    simulated = float(simulate(profiled, plan.orders).makespan) * US
    simulated_in_run = float(simulate(in_run, plan.orders).makespan) * US
    ours_s = statistics.median(ours_t[cfg.warmup:])
    per_rank = _rank_breakdown(timelines[cfg.warmup:], cfg.p)
    theirs_s = statistics.median(theirs_t[cfg.warmup:]) if theirs_t else None
    return {
        "schedule": name, "plan": plan.source, "problem": problem.describe(),
        "schedc_step_ms": ours_s * 1e3, "torch_step_ms": theirs_s * 1e3 if theirs_s else None,
        "ratio_schedc_over_torch": ours_s / theirs_s if theirs_s else None,
        "simulated_ms": simulated * 1e3, "simulated_error": (simulated - ours_s) / ours_s,
        "simulated_in_run_ms": simulated_in_run * 1e3,
        "simulated_in_run_error": (simulated_in_run - ours_s) / ours_s,
        "per_rank_ms": per_rank,
        "profiled_stage_costs_us": [[int(c.tf), int(c.tb), int(c.tw)] for c in costs],
        "in_run_stage_costs_us": [[int(c.tf), int(c.tb), int(c.tw)] for c in in_run.stage_costs],
    }


def _worker(rank: int, world: int, cfg: Config) -> list[list[dict]]:
    """Rounds of every schedule, the order rotated each round so that load drifts hit all alike."""
    meta = TensorMeta((cfg.microbatch, cfg.width), torch.float32)
    comm_us = max(0, round(measure_p2p(meta) / US))
    calls = measure_message_calls(meta)
    runs = [(name, structure, cls, False) for name, (structure, cls) in SCHEDULES.items()]
    runs.append(("solver (ZB-V problem)", *SCHEDULES["ZB-V"], True))
    rounds = []
    for k in range(cfg.rounds):
        order = runs[k % len(runs):] + runs[:k % len(runs)]
        rows = {name: _measure(cfg, rank, name, structure, cls, comm_us, calls, solver)
                for name, structure, cls, solver in order}
        rounds.append([{**rows[name], "comm_us": comm_us, "send_call_us": calls.send / US,
                        "recv_call_us": calls.recv / US} for name, *_ in runs])
    return rounds


def _median_of(values: list) -> object:
    """The median over rounds of one figure, element by element inside lists and dicts (per-rank
    times, stage costs); text, None and booleans are the same in every round and kept as they are."""
    first = values[0]
    if isinstance(first, dict):
        return {key: _median_of([v[key] for v in values]) for key in first}
    if isinstance(first, list):
        return [_median_of(list(column)) for column in zip(*values, strict=True)]
    if isinstance(first, int | float) and not isinstance(first, bool):
        middle = statistics.median(values)
        whole = all(type(v) is int for v in values) and middle == int(middle)
        return int(middle) if whole else middle
    return first


def _median_rows(rounds: list[list[dict]]) -> list[dict]:
    """Per schedule, the median over rounds of every figure (each on its own, so a ratio is not the
    ratio of the median times), plus the range of the ratio and of the simulation error over rounds."""
    out = []
    for rows in zip(*rounds, strict=True):
        row = {key: _median_of([r[key] for r in rows]) for key in rows[0]}
        for key in ("ratio_schedc_over_torch", "simulated_error"):
            values = [r[key] for r in rows if r[key] is not None]
            row[key + "_range"] = [min(values), max(values)] if values else None
        out.append(row)
    return out


def _range(r: dict, key: str, pct: bool) -> str:
    span = r.get(key + "_range")
    if not span:
        return "-"
    return f"{span[0] * 100:.0f}..{span[1] * 100:.0f}%" if pct else f"{span[0]:.2f}..{span[1]:.2f}"


def _table(rows: list[dict]) -> str:
    head = (f"{'schedule':23} {'schedc ms':>9} {'torch ms':>9} {'ratio':>6} {'ratio range':>11} "
            f"{'sim ms':>7} {'err':>7} {'err range':>11} {'sim(run) ms':>11} {'err':>7}")
    lines = [head, "-" * len(head)]
    for r in rows:
        torch_ms = f"{r['torch_step_ms']:.1f}" if r["torch_step_ms"] else "-"
        ratio = f"{r['ratio_schedc_over_torch']:.2f}" if r["ratio_schedc_over_torch"] else "-"
        lines.append(f"{r['schedule']:23} {r['schedc_step_ms']:9.1f} {torch_ms:>9} {ratio:>6} "
                     f"{_range(r, 'ratio_schedc_over_torch', False):>11} {r['simulated_ms']:7.1f} "
                     f"{r['simulated_error'] * 100:6.1f}% {_range(r, 'simulated_error', True):>11} "
                     f"{r['simulated_in_run_ms']:11.1f} {r['simulated_in_run_error'] * 100:6.1f}%")
    return "\n".join(lines)


_positive = at_least(1)
_ranks = at_least(2, " (ranks 0 and 1 measure the P2P latency inside the run)")


def _parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(description=" ".join(__doc__.split("\n\n")[0].split()))
    parser.add_argument("--p", type=_ranks, default=2,
                        help="ranks (at least 2: ranks 0 and 1 measure the P2P latency inside the run)")
    parser.add_argument("--m", type=_positive, default=8, help="microbatches (at least p, for torch's 1F1B)")
    parser.add_argument("--width", type=_positive, default=1024)
    parser.add_argument("--layers", type=_positive, default=8,
                        help="Linear+Tanh blocks, cut into p*v stages (at least p)")
    parser.add_argument("--microbatch", type=_positive, default=64, help="rows per microbatch")
    parser.add_argument("--steps", type=_positive, default=10, help="timed steps per round (median counts)")
    parser.add_argument("--warmup", type=at_least(0), default=2, help="untimed steps before them")
    parser.add_argument("--rounds", type=_positive, default=3, help="repeat everything; medians over rounds")
    parser.add_argument("--json", default=None,
                        help=f"where to write the result (default: {DEFAULT_JSON.relative_to(HERE.parent)}, "
                             "the committed result, and only for the default configuration: any other "
                             "needs its own --json)")
    return parser


def _check(parser: argparse.ArgumentParser, args: argparse.Namespace) -> None:
    """Refuses, before any work, what would fail only after the ranks ran (or overwrite the
    committed result with a trial's)."""
    if args.m < args.p:
        parser.error(f"--m must be at least --p ({args.p}) for torch's Schedule1F1B, got {args.m}")
    rounds = args.m // args.p
    if args.m % rounds:
        parser.error(f"--m {args.m} with --p {args.p}: torch's interleaved 1F1B needs m to be a multiple "
                     f"of m // p = {rounds} (m < 2p, or a multiple of p, always is)")
    if args.layers < args.p:
        parser.error(f"--layers must be at least --p ({args.p}): {args.layers} Linear+Tanh blocks "
                     f"({2 * args.layers} modules) cannot be cut into {2 * args.p} stages")
    args.json = str(json_path(parser, args, DEFAULT_JSON))


def main() -> None:
    parser = _parser()
    args = parser.parse_args()
    _check(parser, args)
    cfg = Config(args.p, args.m, args.width, args.layers, args.microbatch, args.steps, args.warmup,
                 args.rounds)
    started = {"date": time.strftime("%Y-%m-%d %H:%M"), "commit": commit()}  # the code the run loads
    start = time.perf_counter()
    rounds = run_local(_worker, cfg.p, cfg, timeout=3600, pg_timeout=600)[0]
    rows = _median_rows(rounds)
    print(f"p={cfg.p} m={cfg.m} MLP {cfg.layers}x{cfg.width}, microbatch {cfg.microbatch}, gloo on CPU, "
          f"1 thread per rank; median of {cfg.steps} steps, then of {cfg.rounds} rounds; "
          f"P2P one-way {rows[0]['comm_us']} us; per message: send call {rows[0]['send_call_us']:.0f} us, "
          f"receive post {rows[0]['recv_call_us']:.0f} us; every column is its own median over rounds")
    print(_table(rows))
    result = {"config": vars(args), **started, "torch": torch.__version__, "machine": platform.machine(),
              "cpus": os.cpu_count(), "load_average": os.getloadavg(), "seconds": time.perf_counter() - start,
              "rows": rows, "rounds": rounds}
    with open(args.json, "w") as f:
        json.dump(result, f, indent=2)
    print(f"wrote {args.json}")


if __name__ == "__main__":
    main()
