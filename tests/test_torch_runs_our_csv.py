"""torch.distributed.pipelining's own runners execute schedc's CSV and train as the unpipelined model.

Two gloo ranks run each exported plan with torch's ``_PipelineScheduleRuntime`` (which lowers the
compute-only rows to send/recv itself) and ``PipelineScheduleMulti`` (which runs the columns in
lockstep, so the idle cells matter: without them it trained wrong gradients, silently). torch's
lockstep runner fails on V-shaped placements whatever the rows, so those run with the runtime only,
as do the compact rows (no idle cells) written for it. A plan whose last stage runs its forwards out
of microbatch order is renumbered on export: torch reads that stage's losses by their order (without
the renumbering both runners trained it with zero and missing gradients, exit 0).
"""

from __future__ import annotations

import pytest

from schedc.baselines import baseline_plan
from schedc.plan import Plan
from schedc.problem import Problem
from schedc.torch_csv import csv_text

OUT_OF_ORDER = (("0F0", "0F1", "0I0", "0W0", "0I1", "0W1"), ("1F1", "1F0", "1I0", "1W0", "1I1", "1W1"))
"""Valid, but the last stage runs microbatch 1's forward first."""

RUNTIME = ("_PipelineScheduleRuntime",)
BOTH = ("PipelineScheduleMulti", *RUNTIME)
CASES = {  # name: (baseline, problem, torch classes, CSV layout)
    "zb-h1 looped v=1": ("zb-h1", Problem(p=2, m=4), BOTH, "lockstep"),
    "interleaved-zb looped v=2": ("interleaved-zb", Problem(p=2, m=4, v=2), BOTH, "lockstep"),
    "zb-v vshape": ("zb-v", Problem(p=2, m=4, v=2, placement="vshape"), RUNTIME, "lockstep"),
    "interleaved-zb compact": ("interleaved-zb", Problem(p=2, m=4, v=2), RUNTIME, "compact"),
    "zb-v compact": ("zb-v", Problem(p=2, m=4, v=2, placement="vshape"), RUNTIME, "compact"),
    "last stage out of order": (OUT_OF_ORDER, Problem(p=2, m=2), BOTH, "lockstep"),
}


def _plan(name_or_orders: str | tuple, problem: Problem) -> Plan:
    if isinstance(name_or_orders, str):
        return baseline_plan(name_or_orders, problem)
    return Plan(problem=problem, orders=name_or_orders, source="hand")


def _worker(rank: int, _world: int, cases: dict, folder: str) -> dict:
    import torch
    from torch.distributed.pipelining import PipelineStage, schedules

    from schedc.runtime import split_stages
    from schedc.runtime.models import mlp, mlp_loss
    from tests.runtime_cases import WIDTH, batch

    out = {}
    for case, (problem, classes) in cases.items():
        for cls in classes:
            layers = mlp(problem.num_stages, WIDTH)
            stages = split_stages(layers, problem, rank)
            cpu = torch.device("cpu")
            piped = [PipelineStage(stages[s], s, problem.num_stages, cpu) for s in sorted(stages)]
            runner = getattr(schedules, cls)(piped, problem.m, loss_fn=mlp_loss)
            runner._load_csv(f"{folder}/{case}.csv")
            x, y = batch(problem.m)
            last = problem.num_stages - 1
            runner.step(*((x,) if 0 in stages else ()), target=y if last in stages else None)
            out[case, cls] = {key: p.grad.tolist() for key, p in _named(layers, stages)}  # no shared memory
    return out


def _named(layers, stages):
    """(layer index, parameter name) -> parameter, for this rank's layers."""
    mine = {id(p) for s in stages.values() for p in s.parameters()}
    return [((i, n), p) for i, layer in enumerate(layers)
            for n, p in layer.named_parameters() if id(p) in mine]


def test_torch_runners_train_our_csv_as_the_unpipelined_model(tmp_path):
    pytest.importorskip("torch")
    from schedc.runtime.launch import run_local
    from schedc.runtime.models import mlp
    from tests.runtime_cases import WIDTH, batch, reference_grads

    cases = {}
    for case, (name, problem, classes, layout) in CASES.items():
        (tmp_path / f"{case}.csv").write_text(csv_text(_plan(name, problem), layout))
        cases[case] = (problem, classes)
    results = run_local(_worker, 2, cases, str(tmp_path), timeout=240)
    import torch

    for case, (problem, classes) in cases.items():
        layers = mlp(problem.num_stages, WIDTH)
        x, y = batch(problem.m)
        want = dict(zip([(i, n) for i, layer in enumerate(layers) for n, _ in layer.named_parameters()],
                        reference_grads(layers, x, y, problem.m), strict=True))
        for cls in classes:
            got = {k: g for per_rank in results for k, g in per_rank[case, cls].items()}
            assert set(got) == set(want), (case, cls)
            for key, grad in got.items():
                torch.testing.assert_close(torch.tensor(grad), want[key], msg=f"{case} {cls} {key}")
