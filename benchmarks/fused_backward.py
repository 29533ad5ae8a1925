"""Whole backward (B) against input plus weight gradient (I + W), per stage, as the runtime runs them.

Why: schedc's model prices an unsplit plan's B at tb + tw. Split, the backward is two autograd
passes (``backward_input``, then ``backward_weight``); unsplit it is one (``backward_full``), which
may cost less. ``schedc profile`` therefore times B too on an unsplit problem and scales its tb and
tw to sum to B (``runtime.profile.as_fused``); this script measures how much that changes.

    python benchmarks/fused_backward.py                  # the demo MLP and transformer, CPU
    python benchmarks/fused_backward.py --repeats 20 --json /tmp/fused_backward.json

Prints, per model and stage, the median I, W and B times and B / (I + W); writes JSON: the committed
``benchmarks/fused_backward.json`` for the default configuration, any other only to its own ``--json``.
"""

from __future__ import annotations

import argparse
import statistics
import time
from pathlib import Path

import needs_torch  # noqa: F401  (before torch: one line where it is missing)
import torch
from bench_args import at_least, json_path, write_rows

from schedc.problem import Problem
from schedc.runtime import split_stages
from schedc.runtime.models import mlp, mlp_loss, transformer, transformer_loss
from schedc.runtime.profile import time_stages

HERE = Path(__file__).resolve().parent
DEFAULT_JSON = HERE / "fused_backward.json"
TRANSFORMER_SHARE = 4
"""The transformer's microbatch is batch // 4 sequences of 128 tokens, so --batch must be at least 4."""


def _stages(layers: list, problem: Problem) -> list:
    placed = {s: m for r in range(problem.p) for s, m in split_stages(layers, problem, r).items()}
    return [placed[s] for s in range(problem.num_stages)]


def _cases(batch: int) -> dict[str, tuple]:
    """Each model cut into 4 stages, with one microbatch and its target."""
    problem = Problem(p=4, m=1)
    x = torch.randn(batch, 512)
    ids = torch.randint(0, 1000, (batch // TRANSFORMER_SHARE, 128))
    return {
        "mlp 16x512": (_stages(mlp(16, 512), problem), x, mlp_loss, torch.randn(batch, 512)),
        "transformer 6x256 seq128": (_stages(transformer(6, 256, 4, 128, 1000), problem), ids,
                                     transformer_loss, torch.randint(0, 1000, ids.shape)),
    }


def measure(repeats: int, batch: int) -> list[dict]:
    rows = []
    for name, (stages, x, loss, target) in _cases(batch).items():
        split = time_stages(stages, x, loss, target, repeats)
        fused = time_stages(stages, x, loss, target, repeats, fused=True)
        for k, (s, f) in enumerate(zip(split, fused, strict=True)):
            rows.append({"model": name, "stage": k, "i_ms": s.tb * 1e3, "w_ms": s.tw * 1e3,
                         "b_ms": f.tb * 1e3, "ratio": f.tb / (s.tb + s.tw)})
    return rows


def _parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--repeats", type=at_least(1), default=10, help="timed passes per stage (median)")
    no_empty = " (the transformer's microbatch, batch // 4 sequences, must not be empty)"
    parser.add_argument("--batch", type=at_least(TRANSFORMER_SHARE, no_empty), default=64,
                        help="microbatch size (the transformer's is batch // 4)")
    parser.add_argument("--json", default=None,
                        help=f"where to write the result (default: {DEFAULT_JSON.relative_to(HERE.parent)}, "
                             "the committed result, and only for the default configuration: any other "
                             "needs its own --json)")
    return parser


def main() -> None:
    parser = _parser()
    args = parser.parse_args()
    path = json_path(parser, args, DEFAULT_JSON)
    torch.set_num_threads(1)  # one rank's compute on one core: the 2-core machines are shared
    rows = measure(args.repeats, args.batch)
    print(f"{'model':26} {'stage':>5} {'I ms':>8} {'W ms':>8} {'B ms':>8} {'B/(I+W)':>8}")
    for r in rows:
        times = " ".join(f"{r[key]:8.3f}" for key in ("i_ms", "w_ms", "b_ms", "ratio"))
        print(f"{r['model']:26} {r['stage']:>5} {times}")
    for model in dict.fromkeys(r["model"] for r in rows):
        ratios = [r["ratio"] for r in rows if r["model"] == model]
        print(f"{model}: median B/(I+W) {statistics.median(ratios):.3f}")
    meta = {"date": time.strftime("%Y-%m-%d %H:%M"), "torch": torch.__version__, "threads": 1,
            "repeats": args.repeats, "batch": args.batch}
    write_rows(path, meta, rows)


if __name__ == "__main__":
    main()
