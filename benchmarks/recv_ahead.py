"""How far ahead the runner posts its receives (``PipelineRunner(..., recv_ahead=N)``): step times
for several N on 2 gloo ranks, for 1F1B, interleaved 1F1B and ZB-V, in one run.

    python benchmarks/recv_ahead.py [--aheads 4,1,2] [--steps 20] [--json PATH]

Every configuration runs in each of two sizes, an MLP of width 512 with 16 rows per microbatch
(actions of about 0.5 ms) and one of 1024 with 64 (about 5 ms); the steps of all variants
interleave, in an order rotated each step, so that the machine's load falls on them alike. Writes
``benchmarks/recv_ahead.json`` (the default options only; any other needs ``--json``).
"""

from __future__ import annotations

import argparse
import statistics
import time
from pathlib import Path

import needs_torch  # noqa: F401  (before torch: one line where it is missing)
import torch
import torch.distributed as dist
from bench_args import add_json_option, at_least, json_path, write_rows

from schedc.baselines import baseline_plan
from schedc.problem import Problem
from schedc.runtime import PipelineRunner, split_stages
from schedc.runtime.launch import run_local
from schedc.runtime.models import mlp, mlp_loss

DEFAULT_JSON = Path(__file__).resolve().parent / "recv_ahead.json"
P, M, LAYERS, WARMUP = 2, 8, 8, 3
SIZES = ((512, 16), (1024, 64))
PLANS = {"1f1b": Problem(p=P, m=M, split=False),
         "interleaved-1f1b": Problem(p=P, m=M, v=2, split=False),
         "zb-v": Problem(p=P, m=M, v=2, placement="vshape")}


def _aheads(text: str) -> tuple[int, ...]:
    try:
        values = tuple(int(part) for part in text.split(","))
    except ValueError:
        raise argparse.ArgumentTypeError(f"must be integers >= 0 separated by commas, got {text!r}") from None
    if not values or min(values) < 0:
        raise argparse.ArgumentTypeError(f"must be integers >= 0 separated by commas, got {text!r}")
    return values


def _worker(rank: int, _world: int, aheads: tuple[int, ...], steps: int) -> dict[str, float]:
    """Median step time per size, plan and recv_ahead, in ms (rank 0's answer is reported)."""
    torch.set_num_threads(1)
    medians = {}
    for width, rows in SIZES:
        times = _timed(_variants(rank, width, aheads), width, rows, steps)
        medians.update({f"{width}/{rows}/{name}": statistics.median(t) * 1e3 for name, t in times.items()})
    return medians


def _timed(steps_of: dict, width: int, rows: int, steps: int) -> dict[str, list[float]]:
    """Each variant's step times, barrier to barrier, the variants' order rotated each step."""
    times: dict[str, list[float]] = {name: [] for name in steps_of}
    names = list(steps_of)
    for k in range(WARMUP + steps):
        generator = torch.Generator().manual_seed(k)
        x = torch.randn(M * rows, width, generator=generator)
        y = torch.randn(M * rows, width, generator=generator)
        for name in names[k % len(names):] + names[:k % len(names)]:
            dist.barrier()
            start = time.perf_counter()
            steps_of[name](x, y)
            dist.barrier()
            if k >= WARMUP:
                times[name].append(time.perf_counter() - start)
    return times


def _variants(rank: int, width: int, aheads: tuple[int, ...]) -> dict:
    """One step function per (plan, recv_ahead), each with its own copy of the model."""
    out = {}
    for plan_name, problem in PLANS.items():
        plan = baseline_plan(plan_name, problem)
        for ahead in aheads:
            stages = split_stages(mlp(LAYERS, width), problem, rank)
            runner = PipelineRunner(plan, stages, mlp_loss, recv_ahead=ahead)

            def step(x, y, runner=runner, stages=stages) -> None:
                runner.step(x if runner.holds_first else None, target=y if runner.holds_last else None)
                for module in stages.values():
                    module.zero_grad(set_to_none=True)
            out[f"{plan_name}/{ahead}"] = step
    return out


def _row(medians: dict[str, float], width: int, rows: int, plan: str, ahead: int, first: int) -> dict:
    ms = medians[f"{width}/{rows}/{plan}/{ahead}"]
    return {"width": width, "rows": rows, "plan": plan, "recv_ahead": ahead, "step_ms": ms,
            "vs_first": ms / medians[f"{width}/{rows}/{plan}/{first}"]}


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--aheads", type=_aheads, default=(4, 1, 2),
                        help="the recv_ahead values, the first the one the others are compared with")
    parser.add_argument("--steps", type=at_least(1), default=20, help="timed steps per variant (default 20)")
    add_json_option(parser, DEFAULT_JSON)
    args = parser.parse_args()
    path = json_path(parser, args, DEFAULT_JSON)
    medians = run_local(_worker, P, args.aheads, args.steps, timeout=3600)[0]
    rows = [_row(medians, width, rows_per, plan_name, ahead, args.aheads[0])
            for width, rows_per in SIZES for plan_name in PLANS for ahead in args.aheads]
    for k in range(0, len(rows), len(args.aheads)):
        group = rows[k:k + len(args.aheads)]
        cells = "  ".join(f"{r['recv_ahead']}: {r['step_ms']:6.1f} ms ({r['vs_first']:.3f})" for r in group)
        print(f"width {group[0]['width']:4d} rows {group[0]['rows']:2d} {group[0]['plan']:17s} {cells}")
    write_rows(path, {"p": P, "m": M, "layers": LAYERS, "torch": torch.__version__}, rows)


if __name__ == "__main__":
    main()
