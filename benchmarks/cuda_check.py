"""The runtime on one GPU: correctness checks, then step times. Prints a table, writes JSON (with
--json), exits 1 if a check fails.

    python benchmarks/cuda_check.py [--device cuda] [--json benchmarks/cuda_check.json]

NCCL refuses two ranks on one GPU, so every stage runs on one rank (p = 1, several stages), as one
NCCL rank (world size 1: the runner takes the process-group path it takes under torchrun).
Transfers between ranks are checked with gloo on CPU (tests/test_runtime_*.py). On the device:

- one pipelined step's gradients and loss equal the full batch's (a tiny GPT in fp32, TF32 off),
  for interleaved 1F1B over 4 stages and for solver plans under activation caps, with split (I/W)
  and unsplit backward, looped and V-shape placement;
- parameters after 3 SGD steps (momentum 0.9) equal those of the unpipelined model;
- an embedding tied to the output head (two stages of the rank) trains as one shared weight;
- bf16 parameters and boundaries (looser tolerance: the microbatches' gradients add up in bf16);
- the loop's other calls: data-parallel buckets over a one-rank group (their NCCL all-reduces and
  the gradient hooks that start them inside a backward), ``clip_grad_norm_`` against torch's
  clipping, and ``eval`` against the unpipelined forward;
- profiling on CUDA (``profile_problem``), a plan solved for the profiled costs, and its
  measured step against the simulated makespan, a plain gradient-accumulation loop over the same
  microbatches, and torch.distributed.pipelining's runtime fed the same plan as CSV.

``--device cpu`` runs the same checks on gloo with a smaller timing model, so the script can be
tried anywhere (tests/test_cuda_check.py does).
"""

from __future__ import annotations

import argparse
import datetime
import json
import os
import platform
import statistics
import sys
import tempfile
import time
from collections.abc import Callable
from dataclasses import dataclass, replace

import needs_torch  # noqa: F401  (before torch: one line where it is missing)
import torch
import torch.distributed as dist
from bench_args import at_least, commit, writable_file
from torch import nn

from schedc.baselines import baseline_plan
from schedc.plan import Plan
from schedc.problem import Problem
from schedc.runtime import PipelineRunner, clip_grad_norm_, split_stages, stage_parameter
from schedc.runtime.launch import free_port
from schedc.runtime.models import transformer, transformer_loss
from schedc.runtime.profile import profile_problem
from schedc.solvers import solve
from schedc.torch_csv import write_csv

FP32_TOL = 1e-4
"""Largest relative error (per parameter, in norm) of fp32 gradients: a pipelined step sums m
microbatch gradients where the reference reduces the full batch at once."""
BF16_TOL = 5e-2
ERRORS = ("grads", "loss", "params", "norm", "eval")
"""The relative errors a check row may carry; its worst must be within the row's tolerance."""


@dataclass(frozen=True)
class Model:
    """A tiny GPT's shape and the microbatch fed to it."""

    blocks: int
    width: int
    heads: int
    seq: int
    vocab: int
    microbatch: int

    def layers(self, seed: int = 0) -> list[nn.Module]:
        return transformer(self.blocks, self.width, self.heads, self.seq, self.vocab, seed)

    def batch(self, m: int, device: torch.device, seed: int) -> tuple[torch.Tensor, torch.Tensor]:
        gen = torch.Generator().manual_seed(seed)
        ids = torch.randint(self.vocab, (m * self.microbatch, self.seq + 1), generator=gen).to(device)
        return ids[:, :-1].contiguous(), ids[:, 1:].contiguous()  # torch's stages check strides


CHECK_MODEL = Model(blocks=6, width=64, heads=4, seq=16, vocab=96, microbatch=2)
TIMING_MODEL = {"cuda": Model(blocks=8, width=1024, heads=16, seq=512, vocab=8192, microbatch=4),
                "cpu": Model(blocks=4, width=128, heads=4, seq=32, vocab=256, microbatch=2)}


def _plans() -> dict[str, Plan]:
    """The checked plans: all stages on one rank, so every boundary stays in the mailbox."""
    looped, vshape = Problem(p=1, m=4, v=4), Problem(p=1, m=4, v=2, placement="vshape")
    return {
        "interleaved-1f1b/split": baseline_plan("interleaved-1f1b", looped),
        "interleaved-1f1b/unsplit": baseline_plan("interleaved-1f1b", replace(looped, split=False)),
        "solver/split/cap1": solve(replace(looped, mem=(1,)), time_limit=5, workers=1),
        "solver/unsplit/cap1": solve(replace(looped, split=False, mem=(1,)), time_limit=5, workers=1),
        "solver/vshape/cap1": solve(replace(vshape, mem=(1,)), time_limit=5, workers=1),
    }


def _rel_error(mine: list[torch.Tensor], want: list[torch.Tensor]) -> float:
    """Largest ||a - b|| / ||b|| over parameters (fp64 norms)."""
    return max(float((a.detach().double() - b.detach().double()).norm()
                     / b.detach().double().norm().clamp_min(1e-30))
               for a, b in zip(mine, want, strict=True))


def _cast(layers: list[nn.Module], device: torch.device, dtype: torch.dtype) -> list[nn.Module]:
    return [layer.to(device=device, dtype=dtype) for layer in layers]


def _grads_check(plan: Plan, device: torch.device, dtype: torch.dtype = torch.float32,
                 tie: bool = False) -> dict:
    """One pipelined step against the unpipelined model on the full batch."""
    problem = plan.problem
    x, y = CHECK_MODEL.batch(problem.m, device, seed=1)
    ref = _cast(CHECK_MODEL.layers(), device, dtype)
    piped = _cast(CHECK_MODEL.layers(), device, dtype)
    ties = ()
    if tie:  # the reference shares one weight; the pipelined copies start different
        ref[-1][1].weight = ref[0].tokens.weight
        ties = ([stage_parameter(piped, problem, piped[0].tokens.weight),
                 stage_parameter(piped, problem, piped[-1][1].weight)],)
    loss_ref = transformer_loss(nn.Sequential(*ref)(x), y)
    loss_ref.backward()
    stages = split_stages(piped, problem, 0)
    runner = PipelineRunner(plan, stages, transformer_loss, timeout=60, ties=ties)
    loss = runner.step(x, target=y)
    pairs = [(a, b) for pl, rl in zip(piped, ref, strict=True)
             for a, b in zip(pl.parameters(), rl.parameters(), strict=True)]
    return {"grads": _rel_error([a.grad for a, _ in pairs], [b.grad for _, b in pairs]),
            "loss": _rel_error([loss.detach()], [loss_ref.detach()]),
            "device": str(runner.device), "dtype": str(dtype).removeprefix("torch.")}


def _sgd_check(plan: Plan, device: torch.device, steps: int = 3) -> dict:
    """Parameters after a few SGD steps (linear in the gradients, so errors stay their size)."""
    problem = plan.problem
    piped, ref = _cast(CHECK_MODEL.layers(), device, torch.float32), _cast(CHECK_MODEL.layers(), device,
                                                                          torch.float32)
    runner = PipelineRunner(plan, split_stages(piped, problem, 0), transformer_loss, timeout=60)
    full = nn.Sequential(*ref)
    opt = torch.optim.SGD(nn.Sequential(*piped).parameters(), lr=0.1, momentum=0.9)
    opt_ref = torch.optim.SGD(full.parameters(), lr=0.1, momentum=0.9)
    for k in range(steps):
        x, y = CHECK_MODEL.batch(problem.m, device, seed=10 + k)
        runner.step(x, target=y)
        transformer_loss(full(x), y).backward()
        for o in (opt, opt_ref):
            o.step()
            o.zero_grad()
    return {"params": _rel_error(list(nn.Sequential(*piped).parameters()), list(full.parameters()))}


def _loop_check(plan: Plan, device: torch.device, steps: int = 2) -> dict:
    """The training loop's other calls on the device: data-parallel buckets over a one-rank group
    (NCCL all-reduces, gradient hooks from the second step on), ``clip_grad_norm_`` and ``eval``,
    against the unpipelined model with torch's own clipping."""
    problem = plan.problem
    piped, ref = (_cast(CHECK_MODEL.layers(), device, torch.float32) for _ in range(2))
    runner = PipelineRunner(plan, split_stages(piped, problem, 0), transformer_loss, timeout=60,
                            dp_group=dist.new_group([0]), bucket_bytes=2**14)
    full = nn.Sequential(*ref)
    x, y = CHECK_MODEL.batch(problem.m, device, seed=20)
    norms = []
    for _ in range(steps):
        for model in (nn.Sequential(*piped), full):
            model.zero_grad()
        runner.step(x, target=y)
        transformer_loss(full(x), y).backward()
        norms.append((clip_grad_norm_(runner, 0.1),
                      torch.nn.utils.clip_grad_norm_(full.parameters(), 0.1)))
    with torch.no_grad():
        want = full(x)
    pairs = list(zip(nn.Sequential(*piped).parameters(), full.parameters(), strict=True))
    return {"grads": _rel_error([a.grad for a, _ in pairs], [b.grad for _, b in pairs]),
            "norm": _rel_error([n for n, _ in norms], [w for _, w in norms]),
            "eval": _rel_error([runner.eval(x)], [want]),
            "in_backward": runner._dp.launched.count("during a backward")}


def correctness(device: torch.device) -> list[dict]:
    rows = []
    plans = _plans()
    for case, plan in plans.items():
        rows.append({"case": case, "check": "grads fp32", "tol": FP32_TOL, **_grads_check(plan, device)})
    split = plans["solver/split/cap1"]
    rows.append({"case": "solver/split/cap1", "check": "3 SGD steps", "tol": FP32_TOL,
                 **_sgd_check(split, device)})
    rows.append({"case": "solver/split/cap1", "check": "tied embed/head", "tol": FP32_TOL,
                 **_grads_check(split, device, tie=True)})
    rows.append({"case": "solver/split/cap1", "check": "grads bf16", "tol": BF16_TOL,
                 **_grads_check(split, device, torch.bfloat16)})
    rows.append({"case": "solver/split/cap1", "check": "dp, clip, eval", "tol": FP32_TOL,
                 **_loop_check(split, device)})
    for row in rows:
        hooked = row.get("in_backward", 1) > 0  # the dp check's buckets started inside a backward
        row["ok"] = max(v for k, v in row.items() if k in ERRORS) <= row["tol"] and hooked
    return rows


# ---- timing -------------------------------------------------------------------------------------


def _sync(device: torch.device) -> None:
    if device.type == "cuda":
        torch.cuda.synchronize(device)


def _median_seconds(step: Callable[[], object], device: torch.device, steps: int) -> float:
    step()  # warm-up: shapes, allocator, kernels
    times = []
    for _ in range(steps):
        _sync(device)
        t0 = time.perf_counter()
        step()
        _sync(device)
        times.append(time.perf_counter() - t0)
    return statistics.median(times)


def _plain_step(layers: list[nn.Module], x: torch.Tensor, y: torch.Tensor, m: int) -> Callable:
    """Gradient accumulation over the same m microbatches, no pipeline runtime."""
    full = nn.Sequential(*layers)

    def run() -> None:
        for xs, ys in zip(x.chunk(m), y.chunk(m), strict=True):
            (transformer_loss(full(xs), ys) / m).backward()
        full.zero_grad(set_to_none=True)
    return run


def _runner_step(runner: PipelineRunner, layers: list[nn.Module], x, y) -> Callable:
    def run() -> None:
        runner.step(x, target=y)
        for layer in layers:
            layer.zero_grad(set_to_none=True)
    return run


def _torch_step(plan: Plan, layers: list[nn.Module], device: torch.device, x, y) -> Callable:
    """torch.distributed.pipelining's runtime on the same stages, loading the plan's CSV."""
    from torch.distributed.pipelining import PipelineStage
    from torch.distributed.pipelining.schedules import _PipelineScheduleRuntime

    problem = plan.problem
    stages = split_stages(layers, problem, 0)
    torch_stages = [PipelineStage(stages[s], s, problem.num_stages, device) for s in sorted(stages)]
    schedule = _PipelineScheduleRuntime(torch_stages, problem.m, loss_fn=transformer_loss)
    with tempfile.TemporaryDirectory() as tmp:
        path = os.path.join(tmp, "plan.csv")
        write_csv(plan, path)
        schedule._load_csv(path)

    def run() -> None:
        schedule.step(x, target=y)
        for layer in layers:
            layer.zero_grad(set_to_none=True)
    return run


def timing(device: torch.device, steps: int) -> dict:
    """Profiled costs -> solved plan -> measured step, against the simulator and two other loops."""
    model = TIMING_MODEL[device.type]
    layers = _cast(model.layers(), device, torch.float32)
    base = Problem(p=1, m=8, v=4)
    x, y = model.batch(base.m, device, seed=3)
    stages = split_stages(layers, base, 0)
    mb_x, mb_y = x[: model.microbatch], y[: model.microbatch]
    plain = _median_seconds(_plain_step(layers, x, y, base.m), device, steps)  # also brings up the clocks
    profile = profile_problem([stages[s] for s in sorted(stages)], mb_x, base,
                              loss_fn=transformer_loss, target=mb_y)
    costs = profile.problem
    plans = {"interleaved-1f1b": baseline_plan("interleaved-1f1b", costs),
             "interleaved-1f1b unsplit": baseline_plan("interleaved-1f1b", replace(costs, split=False)),
             "solver cap 1": solve(replace(costs, mem=(1,)), time_limit=10, workers=1)}
    out = {"model": model.__dict__, "m": base.m, "v": base.v, "steps": steps, "unit_s": profile.unit,
           "stage_costs_us": [[int(c.tf), int(c.tb), int(c.tw)] for c in costs.stage_costs],
           "plain_s": plain, "plans": {}}
    for name, plan in plans.items():
        runner = PipelineRunner(plan, stages, transformer_loss, timeout=120)
        row = {"simulated_s": float(plan.makespan) * profile.unit,
               "schedc_s": _median_seconds(_runner_step(runner, layers, x, y), device, steps),
               "peak_activation": str(max(plan.timeline.peak_mem))}
        try:
            row["torch_s"] = _median_seconds(_torch_step(plan, layers, device, x, y), device, steps)
        except Exception as err:  # torch's runtime is the comparison, not the subject: record why
            row["torch_error"] = f"{type(err).__name__}: {err}"[:300]
        out["plans"][name] = row
    return out


# ---- report -------------------------------------------------------------------------------------


def _init(device: torch.device) -> None:
    """One-rank process group: NCCL on CUDA, gloo on CPU (world size 1)."""
    if device.type == "cuda":
        torch.cuda.set_device(device)
        torch.backends.cuda.matmul.allow_tf32 = False
        torch.backends.cudnn.allow_tf32 = False
    dist.init_process_group("nccl" if device.type == "cuda" else "gloo",
                            init_method=f"tcp://127.0.0.1:{free_port()}", rank=0, world_size=1,
                            timeout=datetime.timedelta(seconds=120),
                            device_id=device if device.type == "cuda" else None)


def _print(rows: list[dict], times: dict) -> None:
    print(f"{'case':28} {'check':16} {'error':>10} {'tol':>8}  ok")
    for r in rows:
        err = max(v for k, v in r.items() if k in ERRORS)
        print(f"{r['case']:28} {r['check']:16} {err:10.2e} {r['tol']:8.0e}  {'yes' if r['ok'] else 'NO'}")
    print(f"\nstep of m = {times['m']} microbatches over {times['v']} stages, median seconds of "
          f"{times['steps']} steps; plain gradient accumulation: {times['plain_s']:.4f}")
    for name, r in times["plans"].items():
        torch_part = (f"torch {r['torch_s']:.4f} (schedc/torch {r['schedc_s'] / r['torch_s']:.3f})"
                      if "torch_s" in r else f"torch failed: {r['torch_error']}")
        print(f"{name:24} simulated {r['simulated_s']:.4f}  schedc {r['schedc_s']:.4f} "
              f"(measured/simulated {r['schedc_s'] / r['simulated_s']:.3f}, "
              f"/plain {r['schedc_s'] / times['plain_s']:.3f})  {torch_part}")


def _device(text: str) -> torch.device:
    """argparse type: cpu or an available CUDA device, refused before any check runs (torch would
    fail only when the process group starts)."""
    try:
        device = torch.device(text)
    except RuntimeError:
        raise argparse.ArgumentTypeError(f"not a torch device: {text!r} (use cpu or cuda[:N])") from None
    if device.type not in TIMING_MODEL:
        raise argparse.ArgumentTypeError(f"{text!r} is neither cpu nor cuda[:N]")
    if device.type == "cpu":
        return torch.device("cpu")
    if not torch.cuda.is_available():
        built = torch.backends.cuda.is_built()
        raise argparse.ArgumentTypeError("no CUDA device is visible" if built else
                                         "CUDA is not available in this torch build")
    index = 0 if device.index is None else device.index
    if index >= torch.cuda.device_count():
        raise argparse.ArgumentTypeError(f"{text!r}: only {torch.cuda.device_count()} CUDA device(s) visible")
    return torch.device("cuda", index)


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=" ".join(__doc__.split("\n\n")[0].split()))
    parser.add_argument("--device", type=_device, default="cuda" if torch.cuda.is_available() else "cpu",
                        help="cpu or cuda[:N] (default: cuda if available)")
    parser.add_argument("--json", default=None, type=writable_file,
                        help="where to write the result (default: nowhere)")
    parser.add_argument("--steps", type=at_least(1), default=10, help="timed steps per loop (median counts)")
    args = parser.parse_args(argv)
    device = args.device
    started = {"date": time.strftime("%Y-%m-%d %H:%M"), "commit": commit()}  # None where the copy has no .git
    _init(device)
    try:
        rows = correctness(device)
        times = timing(device, args.steps)
    finally:
        dist.destroy_process_group()
    _print(rows, times)
    env = {"torch": torch.__version__, "python": platform.python_version(), "device": str(device),
           "gpu": torch.cuda.get_device_name(device) if device.type == "cuda" else None,
           "nccl": ".".join(map(str, torch.cuda.nccl.version())) if device.type == "cuda" else None,
           **started}
    if args.json:
        with open(args.json, "w") as f:
            json.dump({"env": env, "checks": rows, "timing": times}, f, indent=1)
    failed = [f"{r['case']} {r['check']}" for r in rows if not r["ok"]]
    if failed:
        print(f"FAILED: {', '.join(failed)}", file=sys.stderr)
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main())
