"""Pipeline and data parallelism together: two pipelines of two ranks each on four gloo processes.

Each pipeline runs the plan on its own process group, over half of the global batch; the ranks
holding the same stages then average their gradients over their data-parallel group, as Megatron's
PP x DP layout does: by hand after the step, by hand as ``grads_ready`` hands them over, or by the
runner itself in buckets (``dp_group=``). The result must equal the unpipelined model's gradients
on the whole batch. The pipeline groups are not contiguous ranks ([0, 2] and [1, 3]), so the
runner's and the links' translation between group and global ranks is exercised too.
"""

from __future__ import annotations

from typing import NamedTuple

import pytest

from schedc.baselines import baseline_plan
from schedc.plan import Plan
from schedc.problem import Problem

torch = pytest.importorskip("torch")

PIPELINES = ([0, 2], [1, 3])  # global ranks of each pipeline; its position is the pipeline rank
REPLICAS = ([0, 1], [2, 3])  # global ranks holding the same stages: the data-parallel groups


class Case(NamedTuple):
    """How gradients are averaged (``mode``): "after" the step or from "grads_ready" by hand, or by
    the runner (``dp_group``) in one "bucket" or in small "buckets"."""

    plan: Plan
    mode: str
    link_groups: bool = False
    gated: bool = False  # the first layer is Gated
    tied: bool = False  # the first and last Linear share one weight, declared with ties=
    accumulate: bool = False  # the runner's two steps add up, without zero_grad between them


def _plan(name: str, **shape) -> Plan:
    return baseline_plan(name, Problem(p=2, m=4, **shape))


CASES = {
    "zb-h1 split": Case(_plan("zb-h1"), "after"),
    "interleaved v=2, link groups": Case(_plan("interleaved-1f1b", v=2, split=False), "after", True),
    "interleaved-zb v=2, overlapped": Case(_plan("interleaved-zb", v=2), "grads_ready"),
    "zb-v, buckets": Case(_plan("zb-v", v=2, placement="vshape"), "buckets"),
    "1f1b, one bucket, gated": Case(_plan("1f1b", split=False), "bucket", gated=True),
    "zb-h1, buckets, gated": Case(_plan("zb-h1"), "buckets", gated=True),
    "1f1b, buckets, tied, accumulated": Case(_plan("1f1b"), "buckets", tied=True, accumulate=True),
}
SMALL_BUCKET = 100
"""Bytes: below a Linear(8, 8)'s weight, so every parameter is a bucket of its own, or shares one
with a bias or a scalar."""


class Gated(torch.nn.Module):
    """A layer whose ``gate`` is used only on microbatches of positive mean (one pipeline's half of
    the batch here), and whose ``never`` is used by no replica: DDP's unused parameters."""

    def __init__(self, inner: torch.nn.Module) -> None:
        super().__init__()
        self.inner = inner
        self.gate = torch.nn.Parameter(torch.tensor(1.5))
        self.never = torch.nn.Parameter(torch.zeros(3))

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        y = self.inner(x)
        return y * self.gate if x.mean() > 0 else y


def _layers(case: Case, reference: bool = False) -> list:
    """The model: seeded, the same weights everywhere; a tied one shares one Parameter in the
    reference, and holds two copies the runner keeps equal when pipelined."""
    from schedc.runtime.models import mlp
    from tests.runtime_cases import WIDTH

    layers = mlp(case.plan.problem.num_stages, WIDTH)
    if case.gated:
        layers[0] = Gated(layers[0])
    if case.tied and reference:
        layers[-2].weight = layers[0].weight
    return layers


def stages_params(stages: dict) -> list:
    return [p for stage in stages.values() for p in stage.parameters()]


def _batch(m: int) -> tuple:
    """The global batch; its first half (pipeline 0's) has rows of positive mean, the second not."""
    from tests.runtime_cases import batch

    x, y = batch(m)
    half = len(x) // 2
    return torch.cat([x[:half].abs(), -x[half:].abs()]), y


def _worker(rank: int, _world: int, cases: dict) -> dict:
    import torch.distributed as dist

    from schedc.runtime import PipelineRunner, split_stages
    from schedc.runtime.models import mlp_loss

    pipelines = [dist.new_group(members) for members in PIPELINES]  # every rank makes every group
    replicas = [dist.new_group(members) for members in REPLICAS]
    line = next(i for i, members in enumerate(PIPELINES) if rank in members)
    pp_rank = PIPELINES[line].index(rank)
    dp_group = replicas[pp_rank]
    out = {}
    for name, case in cases.items():
        plan, mode, problem = case.plan, case.mode, case.plan.problem
        layers = _layers(case)
        stages = split_stages(layers, problem, pp_rank)
        ties = [[(0, "0.weight"), (problem.num_stages - 1, "0.weight")]] if case.tied else []
        started = []  # (parameter, its all-reduce in flight)

        def reduce_now(params, started=started):
            started.extend((p, dist.all_reduce(p.grad, group=dp_group, async_op=True)) for p in params)

        runner = PipelineRunner(plan, stages, mlp_loss, pipelines[line], timeout=60, ties=ties,
                                link_groups=case.link_groups,
                                grads_ready=reduce_now if mode == "grads_ready" else None,
                                dp_group=dp_group if mode in ("bucket", "buckets") else None,
                                bucket_bytes=SMALL_BUCKET if mode == "buckets" else 2**20)
        x, y = _batch(2 * problem.m)
        mine = slice(line * len(x) // 2, (line + 1) * len(x) // 2)  # this pipeline's half of the batch
        for _ in range(2 if runner._dp is not None else 1):  # hooks launch from the second step on
            if not case.accumulate:
                for p in stages_params(stages):
                    p.grad = None
            runner.step(x[mine], target=y[mine])
        named = [((i, n), p) for i, layer in enumerate(layers) for n, p in layer.named_parameters()
                 if any(p is q for s in stages.values() for q in s.parameters())]
        if mode == "grads_ready":  # every parameter started once, as its gradient became final
            assert sorted(id(p) for p, _ in started) == sorted(id(p) for _, p in named)
            for _, work in started:
                work.wait()
        elif mode == "after":
            for _, param in named:
                dist.all_reduce(param.grad, group=dp_group)
        if mode in ("grads_ready", "after"):
            for _, param in named:
                param.grad /= len(PIPELINES)
        launched = runner._dp.launched if runner._dp is not None else []
        out[name] = ({key: None if p.grad is None else p.grad.tolist() for key, p in named}, launched)
    return out


def test_two_pipelines_with_averaged_gradients_train_as_the_whole_batch():
    from schedc.runtime.launch import run_local
    from tests.runtime_cases import reference_grads

    results = run_local(_worker, 4, CASES, timeout=240, spawn=True)  # own hash seeds: replicas agree anyway
    for name, case in CASES.items():
        mode, problem = case.mode, case.plan.problem
        layers = _layers(case, reference=True)
        x, y = _batch(2 * problem.m)
        want = dict(zip([(i, n) for i, layer in enumerate(layers) for n, _ in layer.named_parameters()],
                        reference_grads(layers, x, y, 2 * problem.m), strict=True))
        got = {key: grad for per_rank in results for key, grad in per_rank[name][0].items()}
        assert set(got) == set(want), name
        for key, grad in got.items():
            if want[key] is None:  # used by no replica: no gradient, as in the unpipelined model
                assert grad is None, (name, key)
            else:
                scale = 2 if case.accumulate else 1
                torch.testing.assert_close(torch.tensor(grad), scale * want[key], msg=f"{name} {key}")
        launched = [per_rank[name][1] for per_rank in results]
        if mode == "bucket":
            assert all(len(when) == 1 for when in launched), (name, launched)
        elif mode == "buckets":  # the small buckets split every stage's parameters
            assert min(map(len, launched)) > len(problem.rank_stages[0]), (name, launched)
        if mode == "buckets" and not case.gated:  # hooks start buckets inside the last backward
            assert all("during a backward" in when for when in launched), (name, launched)
        if case.tied:  # the tied copies' bucket waits for the ties' sum at the step's end
            assert all(when[-1] == "after a backward" for when in launched), (name, launched)
    gated = {key for per_rank in results for key in per_rank["zb-h1, buckets, gated"][0]}
    assert {(0, "gate"), (0, "never")} <= gated  # the gated layer's parameters were compared
