"""What the runner holds against what the memory model predicts, per rank, on two gloo ranks.

    python benchmarks/activation_memory.py [--json FILE]

For the demo MLP and transformer and several plans (textbook schedules and solver plans under a
cap), each rank runs one step with ``record_memory=True`` and reports the most bytes of activation
it held after any action (activations; the messages and losses it also held are reported apart,
since no cap counts them). The prediction is the plan's peak in units (the simulator) times the
rank's unit in bytes, two ways: as ``schedc profile`` sets it up (w_mem measured, a unit v times the
most a stage holds after F or I) and as the Zero Bubble paper's model would (w_mem 1/2, a unit v
times what a stage holds after F). A ratio measured / predicted above 1 means the runner held more
than the caps would allow. Prints a table; the default run writes ``activation_memory.json``.
"""

from __future__ import annotations

import argparse
import json
import time
from dataclasses import replace
from fractions import Fraction
from pathlib import Path

import needs_torch  # noqa: F401  (before torch: one line where it is missing)
import torch
from bench_args import commit, json_path

from schedc.baselines import baseline_plan
from schedc.plan import Plan
from schedc.problem import Problem
from schedc.runtime import PipelineRunner, split_stages
from schedc.runtime.activation_bytes import measured_w_mem, stage_bytes, unit_bytes
from schedc.runtime.launch import run_local
from schedc.runtime.models import mlp, mlp_loss, transformer, transformer_loss
from schedc.runtime.stages import Chain, stage_bounds
from schedc.solvers import solve

HERE = Path(__file__).resolve().parent
M, ROWS = 8, 8
PLANS = (("1f1b", 1, "looped"), ("zb-h1", 1, "looped"), ("zb-h2", 1, "looped"),
         ("interleaved-1f1b", 2, "looped"), ("zb-v", 2, "vshape"), ("solver cap 2", 2, "vshape"))


def _model(name: str) -> tuple[list, torch.Tensor, object, object]:
    torch.manual_seed(0)
    if name == "mlp":
        return mlp(8, 256), torch.randn(M * ROWS, 256), mlp_loss, torch.randn(M * ROWS, 256)
    tokens = torch.randint(0, 1000, (M * ROWS, 64))
    return transformer(8, 256, 4, 64, 1000), tokens, transformer_loss, tokens


def _plan(name: str, problem: Problem) -> Plan:
    if name.startswith("solver"):
        return solve(replace(problem, mem=(Fraction(2),)), time_limit=10, workers=1)
    return baseline_plan(name, problem)


def _worker(rank: int, _world: int, model: str, plan: Plan) -> tuple[int, int]:
    """(most activation bytes, most other bytes: messages and losses) after any action."""
    layers, x, loss_fn, y = _model(model)
    runner = PipelineRunner(plan, split_stages(layers, plan.problem, rank), loss_fn, record_memory=True)
    runner.step(x, target=y)
    return max(held.activations for held in runner.memory), max(held.other for held in runner.memory)


def measure(model: str, schedule: str, v: int, placement: str) -> dict:
    layers, x, loss_fn, y = _model(model)
    base = Problem(p=2, m=M, v=v, placement=placement)
    stages = [Chain(*layers[a:b]) for a, b in stage_bounds(len(layers), base.num_stages)]
    held = stage_bytes(stages, x[:ROWS], loss_fn, y[:ROWS])
    problem = replace(base, w_mem=measured_w_mem(base, held))
    plan = _plan(schedule, problem)
    measured = run_local(_worker, 2, model, plan, timeout=600)
    units = unit_bytes(problem, held)
    paper = replace(base, mem=())
    paper_units = [v * max(held[s].forward for s in base.rank_stages[r]) for r in range(2)]
    paper_peaks = Plan(problem=paper, orders=plan.orders, source="paper").timeline.peak_mem
    rows = []
    for r in range(2):
        predicted = plan.timeline.peak_mem[r] * units[r]
        naive = paper_peaks[r] * paper_units[r]
        held, other = measured[r]
        rows.append({"rank": r, "measured": held, "other": other, "predicted": int(predicted),
                     "paper": int(naive), "vs_predicted": held / float(predicted),
                     "vs_paper": held / float(naive)})
    return {"model": model, "plan": schedule, "w_mem": str(problem.w_mem), "ranks": rows}


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--json", help="output JSON (default: activation_memory.json beside this script)")
    args = parser.parse_args()
    path = json_path(parser, args, HERE / "activation_memory.json")
    started = {"date": time.strftime("%Y-%m-%d %H:%M"), "commit": commit(), "torch": torch.__version__}
    results = [measure(model, *spec) for model in ("mlp", "transformer") for spec in PLANS]
    print(f"{'model':12} {'plan':18} {'w_mem':>5} {'rank':>4} {'held':>11} {'model':>11} {'ratio':>6} "
          f"{'paper':>11} {'ratio':>6} {'messages':>10}")
    for result in results:
        for r in result["ranks"]:
            print(f"{result['model']:12} {result['plan']:18} {result['w_mem']:>5} {r['rank']:>4} "
                  f"{r['measured']:>11,} {r['predicted']:>11,} {r['vs_predicted']:6.2f} {r['paper']:>11,} "
                  f"{r['vs_paper']:6.2f} {r['other']:>10,}")
    path.write_text(json.dumps({**started, "results": results}, indent=1))
    print(f"wrote {path}")


if __name__ == "__main__":
    main()
