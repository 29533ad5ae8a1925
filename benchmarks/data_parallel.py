"""Pipeline x data parallelism: the runner's bucketed averaging (``dp_group=``) against one
all-reduce per parameter, by hand after the step or as ``grads_ready`` hands them over.

    python benchmarks/data_parallel.py [--blocks 8] [--width 256] [--m 4] [--steps 10] [--json PATH]

Four local gloo processes (one thread each): two pipelines of two ranks (1F1B, ZB-H1 and ZB-V
plans), each over half of the global batch, on a small GPT (``runtime.models.transformer``). Per
plan and way of averaging, the same model takes ``--steps`` steps after one warm-up; a step is
timed from a barrier to a barrier and the median counts; ``none`` does not average at all and is
the baseline of the ratios. ``after``: one all-reduce per parameter after the step; ``grads_ready``:
one per parameter, started as the runner hands it over; ``buckets``: the runner's ``dp_group=``
with DDP's 25 MiB buckets (the first 1 MiB), and ``buckets 2MiB`` with 2 MiB ones; ``in a
backward`` counts the buckets a rank launched from the gradient hooks, inside its last backward.
It also checks that every way gives the same gradients, and counts the
all-reduces each rank calls per step. The default configuration writes the committed
``benchmarks/data_parallel.json``; any other needs its own ``--json``.

On 2 shared cores four processes compete for the CPU, so a collective's cost here is mostly the
time its processes wait for one another; on GPUs NCCL's per-call latency is what bucketing saves.
"""

from __future__ import annotations

import argparse
import json
import platform
import statistics
import time
from pathlib import Path

import needs_torch  # noqa: F401  (before torch: one line where it is missing)
import torch
import torch.distributed as dist
from bench_args import add_json_option, at_least, json_path, run_facts

from schedc.baselines import baseline_plan
from schedc.problem import Problem
from schedc.runtime import PipelineRunner, split_stages
from schedc.runtime.launch import run_local
from schedc.runtime.models import transformer, transformer_loss

HERE = Path(__file__).resolve().parent
DEFAULT_JSON = HERE / "data_parallel.json"
PIPELINES = ([0, 2], [1, 3])
REPLICAS = ([0, 1], [2, 3])
MODES = ("none", "after", "grads_ready", "buckets", "buckets 2MiB")
BUCKET_BYTES = {"buckets": 25 * 2**20, "buckets 2MiB": 2 * 2**20}
SCHEDULES = {"1f1b": {"split": False}, "zb-h1": {}, "zb-v": {"v": 2, "placement": "vshape"}}
SEQ, VOCAB, HEADS, ROWS = 64, 1000, 4, 8


def _step_fn(mode: str, runner: PipelineRunner, params: list[torch.Tensor], group: dist.ProcessGroup):
    """One step, averaged the given way; returns the all-reduces it called."""
    def step(x: torch.Tensor, y: torch.Tensor) -> int:
        for p in params:
            p.grad = None
        started.clear()
        runner.step(x, target=y)
        if mode == "after":
            for p in params:
                dist.all_reduce(p.grad, group=group)
        for work in started:
            work.wait()
        if mode in ("after", "grads_ready"):
            for p in params:
                p.grad /= len(PIPELINES)
        if mode in BUCKET_BYTES:
            return len(runner._dp.launched) + 2  # and the replicas' layout check and used flags
        return 0 if mode == "none" else len(params)

    started: list = []
    if mode == "grads_ready":
        runner.grads_ready = lambda ready: started.extend(
            dist.all_reduce(p.grad, group=group, async_op=True) for p in ready)
    return step


def _worker(rank: int, _world: int, args: argparse.Namespace) -> dict:
    torch.set_num_threads(1)
    pipelines = [dist.new_group(g) for g in PIPELINES]
    replicas = [dist.new_group(g) for g in REPLICAS]
    line = next(i for i, g in enumerate(PIPELINES) if rank in g)
    pp_rank = PIPELINES[line].index(rank)
    torch.manual_seed(7 + line)
    ids = torch.randint(0, VOCAB, (args.m * ROWS, SEQ))
    out: dict = {}
    for name, shape in SCHEDULES.items():
        grads: dict[str, torch.Tensor] = {}
        problem = Problem(p=2, m=args.m, **shape)
        plan = baseline_plan(name, problem)
        for mode in MODES:
            layers = transformer(args.blocks, args.width, HEADS, SEQ, VOCAB)
            stages = split_stages(layers, problem, pp_rank)
            params = [p for s in stages.values() for p in s.parameters()]
            runner = PipelineRunner(plan, stages, transformer_loss, pipelines[line], timeout=600,
                                    dp_group=replicas[pp_rank] if mode in BUCKET_BYTES else None,
                                    bucket_bytes=BUCKET_BYTES.get(mode, 1))
            step = _step_fn(mode, runner, params, replicas[pp_rank])
            times, calls = [], 0
            for k in range(args.steps + 1):
                dist.barrier()
                start = time.perf_counter()
                calls = step(ids, ids)
                dist.barrier()
                if k:
                    times.append(time.perf_counter() - start)
            grads[mode] = torch.cat([p.grad.flatten() for p in params])
            early = runner._dp.launched.count("during a backward") if runner._dp else 0
            out[(name, mode)] = {"median_s": statistics.median(times), "all_reduces": calls,
                                 "params": len(params), "max_rel_diff_vs_after": None, "in_backward": early}
        for mode in ("grads_ready", *BUCKET_BYTES):  # the same data and weights: the same averages
            gap = (grads[mode] - grads["after"]).abs().max() / grads["after"].abs().max()
            out[(name, mode)]["max_rel_diff_vs_after"] = float(gap)
    return out


def _summarise(results: list[dict], args: argparse.Namespace) -> dict:
    rows = []
    for name in SCHEDULES:
        base = results[0][(name, "none")]["median_s"]
        for mode in MODES:
            cells = [r[(name, mode)] for r in results]
            gaps = [c["max_rel_diff_vs_after"] for c in cells]
            rows.append({"schedule": name, "mode": mode, "median_s": cells[0]["median_s"],
                         "vs_none": cells[0]["median_s"] / base,
                         "all_reduces_per_rank": [c["all_reduces"] for c in cells],
                         "params_per_rank": [c["params"] for c in cells],
                         "launched_in_a_backward_per_rank": [c["in_backward"] for c in cells],
                         "max_rel_diff_vs_after": None if None in gaps else max(gaps)})
    return {"config": vars(args) | {"json": None}, "machine": platform.processor() or platform.machine(),
            "torch": torch.__version__, **run_facts(), "rows": rows}


def _width(text: str) -> int:
    """--width: at least 8 and a multiple of the heads (30 failed in every rank's attention)."""
    value = at_least(8)(text)
    if value % HEADS:
        raise argparse.ArgumentTypeError(f"must be a multiple of the {HEADS} attention heads, got {value}")
    return value


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--blocks", type=at_least(2), default=8, help="transformer blocks (default 8)")
    parser.add_argument("--width", type=_width, default=256,
                        help=f"model width, a multiple of the {HEADS} attention heads (default 256)")
    parser.add_argument("--m", type=at_least(4, " (ZB-V needs m >= 2p)"), default=4,
                        help="microbatches per step and pipeline (default 4)")
    parser.add_argument("--steps", type=at_least(1), default=10, help="timed steps per cell (default 10)")
    add_json_option(parser, DEFAULT_JSON)
    args = parser.parse_args()
    path = json_path(parser, args, DEFAULT_JSON)
    results = run_local(_worker, 4, args, timeout=3600, pg_timeout=600)
    summary = _summarise(results, args)
    print(f"{'schedule':<8} {'averaging':<12} {'step s':>8} {'/ none':>7} {'all-reduces/rank':>17} "
          f"{'in a backward':>13} {'max rel diff':>12}")
    for row in summary["rows"]:
        diff = "" if row["max_rel_diff_vs_after"] is None else f"{row['max_rel_diff_vs_after']:.1e}"
        print(f"{row['schedule']:<8} {row['mode']:<12} {row['median_s']:>8.4f} {row['vs_none']:>7.3f} "
              f"{row['all_reduces_per_rank']!s:>17} {row['launched_in_a_backward_per_rank']!s:>13} "
              f"{diff:>12}")
    path.write_text(json.dumps(summary, indent=1) + "\n")
    print(f"wrote {path}")


if __name__ == "__main__":
    main()
