"""Pipeline and data parallelism together: two pipelines of two ranks each on four gloo processes.

Each pipeline runs the plan on its own process group, over half of the global batch; the ranks
holding the same stages then average their gradients over their data-parallel group, as Megatron's
PP x DP layout does. The result must equal the unpipelined model's gradients on the whole batch.
The pipeline groups are not contiguous ranks ([0, 2] and [1, 3]), so the runner's and the links'
translation between group and global ranks is exercised too.
"""

from __future__ import annotations

import pytest

from schedc.baselines import baseline_plan
from schedc.problem import Problem

PIPELINES = ([0, 2], [1, 3])  # global ranks of each pipeline; its position is the pipeline rank
REPLICAS = ([0, 1], [2, 3])  # global ranks holding the same stages: the data-parallel groups
CASES = {  # name: (plan, link_groups, all-reduce as gradients become final (grads_ready) or after)
    "zb-h1 split": (baseline_plan("zb-h1", Problem(p=2, m=4)), False, False),
    "interleaved v=2, link groups": (baseline_plan("interleaved-1f1b", Problem(p=2, m=4, v=2, split=False)),
                                     True, False),
    "interleaved-zb v=2, overlapped": (baseline_plan("interleaved-zb", Problem(p=2, m=4, v=2)), False, True),
}


def _worker(rank: int, _world: int, cases: dict) -> dict:
    import torch.distributed as dist

    from schedc.runtime import PipelineRunner, split_stages
    from schedc.runtime.models import mlp, mlp_loss
    from tests.runtime_cases import WIDTH, batch

    pipelines = [dist.new_group(members) for members in PIPELINES]  # every rank makes every group
    replicas = [dist.new_group(members) for members in REPLICAS]
    line = next(i for i, members in enumerate(PIPELINES) if rank in members)
    pp_rank = PIPELINES[line].index(rank)
    out = {}
    for case, (plan, link_groups, overlap) in cases.items():
        problem = plan.problem
        layers = mlp(problem.num_stages, WIDTH)  # seeded: the same weights everywhere
        stages = split_stages(layers, problem, pp_rank)
        started = []  # (parameter, its all-reduce in flight)

        def reduce_now(params, started=started):
            group = replicas[pp_rank]
            started.extend((p, dist.all_reduce(p.grad, group=group, async_op=True)) for p in params)

        runner = PipelineRunner(plan, stages, mlp_loss, pipelines[line], timeout=60, link_groups=link_groups,
                                grads_ready=reduce_now if overlap else None)
        x, y = batch(2 * problem.m)
        mine = slice(line * len(x) // 2, (line + 1) * len(x) // 2)  # this pipeline's half of the batch
        runner.step(x[mine], target=y[mine])
        named = [((i, n), p) for i, layer in enumerate(layers) for n, p in layer.named_parameters()
                 if any(p is q for s in stages.values() for q in s.parameters())]
        if overlap:  # every parameter started once, as its gradient became final
            assert sorted(id(p) for p, _ in started) == sorted(id(p) for _, p in named)
            for _, work in started:
                work.wait()
        else:
            for _, param in named:
                dist.all_reduce(param.grad, group=replicas[pp_rank])
        for _, param in named:
            param.grad /= len(PIPELINES)
        out[case] = {key: param.grad.tolist() for key, param in named}
    return out


def test_two_pipelines_with_averaged_gradients_train_as_the_whole_batch():
    pytest.importorskip("torch")
    import torch

    from schedc.runtime.launch import run_local
    from schedc.runtime.models import mlp
    from tests.runtime_cases import WIDTH, batch, reference_grads

    results = run_local(_worker, 4, CASES, timeout=240)
    for case, (plan, _, _) in CASES.items():
        problem = plan.problem
        layers = mlp(problem.num_stages, WIDTH)
        x, y = batch(2 * problem.m)
        want = dict(zip([(i, n) for i, layer in enumerate(layers) for n, _ in layer.named_parameters()],
                        reference_grads(layers, x, y, 2 * problem.m), strict=True))
        got = {key: grad for per_rank in results for key, grad in per_rank[case].items()}
        assert set(got) == set(want), case
        for key, grad in got.items():
            torch.testing.assert_close(torch.tensor(grad), want[key], msg=f"{case} {key}")
