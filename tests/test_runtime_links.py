# sed -i '86s/dist.destroy_process_group(link)/pass/' runtime/links.py
"""The NCCL transport, checked without a GPU: a model of NCCL's point-to-point semantics replays
the lowered programs, and the link groups run for real on gloo.

The model (conservative): each rank issues its ops in program order and stops at a compute whose
received inputs have not arrived. A posted send or receive joins a FIFO queue: one per directed
link with link groups, one per rank pair (both directions) without. A transfer happens only when
the send heads its queue on the sender and the matching receive heads its queue on the receiver,
as NCCL holds a stream until the peer's matching call. NCCL ignores tags, so a receive pairs with
whatever send heads the other queue: a different key there is a wrong pairing, reported as such.
"""

from __future__ import annotations

from collections import deque

import pytest
import torch
from hypothesis import given, settings
from hypothesis import strategies as st

from schedc.baselines import applicable, baseline_plan
from schedc.dag import dependencies
from schedc.problem import Problem
from schedc.runtime import PipelineRunner, split_stages
from schedc.runtime.launch import run_local
from schedc.runtime.lowering import Compute, PostRecv, Send, edge_tensor, in_send_order, lower
from schedc.runtime.models import mlp, mlp_loss
from tests.strategies import problems_with_orders

PROBLEMS = [Problem(p=2, m=4), Problem(p=4, m=8), Problem(p=4, m=8, split=False), Problem(p=4, m=8, v=2),
            Problem(p=4, m=8, v=2, placement="vshape"), Problem(p=8, m=16, v=2, placement="vshape"),
            Problem(p=3, m=6, v=3)]


def nccl_replay(problem: Problem, programs, per_link: bool) -> str | None:
    """None when every op completes under the model above, else why it stops."""
    pc, arrived, queues = [0] * problem.p, set(), {}

    def queue(rank, peer, sending):
        link = ((rank, peer) if sending else (peer, rank)) if per_link else tuple(sorted((rank, peer)))
        return queues.setdefault((rank, link), deque())

    moved = True
    while moved:
        moved = False
        for r, program in enumerate(programs):
            while pc[r] < len(program):
                op = program[pc[r]]
                if isinstance(op, Compute):
                    needs = {edge_tensor(d, op.action) for d in dependencies(problem, op.action)
                             if problem.stage_rank[d.stage] != r}
                    if not needs <= {k for rank, k in arrived if rank == r}:
                        break
                else:
                    queue(r, op.peer, isinstance(op, Send)).append(op)
                pc[r] += 1
                moved = True
        for (r, _), q in list(queues.items()):
            if q and isinstance(q[0], Send):
                other = queue(q[0].peer, r, sending=False)
                if other and isinstance(other[0], PostRecv):
                    if other[0].key != q[0].key:
                        return f"rank {q[0].peer} would pair {other[0].key} with the send of {q[0].key}"
                    arrived.add((q[0].peer, q.popleft().key))
                    other.popleft()
                    moved = True
    stuck = [r for r in range(problem.p) if pc[r] < len(programs[r])]
    return f"deadlock: ranks {stuck} stop at {[str(programs[r][pc[r]]) for r in stuck]}" if stuck else None


def _programs(problem, orders, ahead, ordered=True):
    lowering = in_send_order if ordered else lower
    return [lowering(problem, orders, r, ahead) for r in range(problem.p)]


@pytest.mark.parametrize("problem", PROBLEMS, ids=lambda p: p.describe())
@pytest.mark.parametrize("ahead", [0, 4, None])
def test_every_baseline_completes_over_link_groups_in_send_order(problem, ahead):
    for name in applicable(problem):
        orders = baseline_plan(name, problem).orders
        assert nccl_replay(problem, _programs(problem, orders, ahead), per_link=True) is None, name


@settings(max_examples=40)
@given(problems_with_orders(max_p=4, max_m=6),
       st.sampled_from([0, 2, None]))
def test_every_deadlock_free_order_completes_over_link_groups(case, ahead):
    """Any per-rank orders cut from a topological order (so whatever a solver or a hand-edited plan
    gives): each receive is posted before its consumer, the reordering for send order keeps every
    operation, and the NCCL-like replay with one queue per link completes."""
    problem, orders = case
    for r, program in enumerate(_programs(problem, orders, ahead)):
        consumed = {op.action: k for k, op in enumerate(program) if isinstance(op, Compute)}
        assert all(k < consumed[op.consumer] for k, op in enumerate(program) if isinstance(op, PostRecv)), r
        assert sorted(map(str, program)) == sorted(map(str, lower(problem, orders, r, ahead)))
    assert nccl_replay(problem, _programs(problem, orders, ahead), per_link=True) is None


def test_why_links_one_queue_per_rank_pair_deadlocks_1f1b():
    problem = Problem(p=2, m=4)
    programs = _programs(problem, baseline_plan("1f1b", problem).orders, 0)
    assert "deadlock" in nccl_replay(problem, programs, per_link=False)


def test_why_send_order_zb_v_pairs_wrong_tensors_in_its_own_order():
    problem = Problem(p=2, m=4, v=2, placement="vshape")
    orders = baseline_plan("zb-v", problem).orders
    assert "would pair" in nccl_replay(problem, _programs(problem, orders, 0, ordered=False), per_link=True)
    assert nccl_replay(problem, _programs(problem, orders, 0), per_link=True) is None


CASES = {
    "zb-v": Problem(p=2, m=4, v=2, placement="vshape"),
    "interleaved-1f1b": Problem(p=2, m=4, v=2, split=False),
    "1f1b": Problem(p=2, m=4),
}


def _worker(rank, _world):
    worst = {}
    for name, problem in CASES.items():
        gen = torch.Generator().manual_seed(1)
        x, y = torch.randn(8, 6, generator=gen), torch.randn(8, 6, generator=gen)
        ref = torch.nn.Sequential(*mlp(problem.num_stages, 6))
        mlp_loss(ref(x), y).backward()
        layers = mlp(problem.num_stages, 6)
        stages = split_stages(layers, problem, rank)
        runner = PipelineRunner(baseline_plan(name, problem), stages, mlp_loss, timeout=60, link_groups=True)
        assert runner.links is not None
        runner.step(x, target=y)
        mine = {id(p) for s in stages.values() for p in s.parameters()}
        both = zip(torch.nn.Sequential(*layers).parameters(), ref.parameters(), strict=True)
        pairs = [(a, b) for a, b in both if id(a) in mine]
        for a, b in pairs:
            torch.testing.assert_close(a.grad, b.grad)
        worst[name] = max(float((a.grad - b.grad).abs().max()) for a, b in pairs)
    return worst


def _late_links(rank, _world):
    """Rank 1 fails building its runner (modules for the wrong stage) and lingers; rank 0 waits to
    build the links. Then the links' own timeout: the runner's, else the parent group's."""
    import time

    from schedc.runtime import PeerTimeoutError, PlanMismatchError
    from schedc.runtime.links import _timeout_of

    problem = Problem(p=2, m=2)
    stages = split_stages(mlp(2, 6), problem, rank)
    try:
        PipelineRunner(baseline_plan("1f1b", problem), {0: stages[1]} if rank else stages, mlp_loss,
                       timeout=3, link_groups=True)
        failed = "none"
    except (PlanMismatchError, PeerTimeoutError) as err:
        failed = f"{type(err).__name__}: {err}"
        if rank == 1:
            time.sleep(6)  # alive past rank 0's timeout, as a process that logs its error would be
    cpu = torch.device("cpu")
    return failed, _timeout_of(None, cpu, 8.0)["timeout"].total_seconds(), \
        _timeout_of(None, cpu, None)["timeout"].total_seconds()


def test_a_peer_that_never_builds_its_links_is_a_one_line_timeout():
    """dist.new_group took torch's 30-minute default: rank 0 hung there, past the runner's 3 s; and
    with timeout=None the links kept that default, not the process group's own (17 s here)."""
    (failed0, own, parent), (failed1, *_) = run_local(_late_links, 2, timeout=120, pg_timeout=17)
    assert failed1.startswith("PlanMismatchError: rank 1: the plan puts stages [1] on it")
    assert failed0 == ("PeerTimeoutError: rank 0 waited for global ranks [0, 1] to build a link's process "
                       "group (every rank builds its runner, with link_groups alike): none within 3 s")
    assert (own, parent) == (8.0, 17.0)


def test_link_groups_on_gloo_give_the_full_batch_gradients():
    for per_rank in run_local(_worker, 2, timeout=180):
        assert set(per_rank) == set(CASES) and max(per_rank.values()) < 1e-5


def _subgroup_worker(rank, _world):
    """Link groups on a pipeline group that is not the world's group object: 3 ranks, so the middle
    one builds more link groups than either neighbour."""
    import torch.distributed as dist

    group = dist.new_group([0, 1, 2])
    pp_rank = dist.get_group_rank(group, rank)
    worst = 0.0
    plans = [baseline_plan("1f1b", Problem(p=3, m=3)),
             baseline_plan("interleaved-1f1b", Problem(p=3, m=3, v=2))]
    for plan in plans:
        problem = plan.problem
        gen = torch.Generator().manual_seed(2)
        x, y = torch.randn(6, 6, generator=gen), torch.randn(6, 6, generator=gen)
        layers = mlp(problem.num_stages, 6)
        ref = torch.nn.Sequential(*mlp(problem.num_stages, 6))
        ref.load_state_dict(torch.nn.Sequential(*layers).state_dict())
        mlp_loss(ref(x), y).backward()
        stages = split_stages(layers, problem, pp_rank)
        runner = PipelineRunner(plan, stages, mlp_loss, group, timeout=60, link_groups=True)
        assert len(runner.links.groups) == (4 if problem.v == 2 or pp_rank == 1 else 2)  # each way
        runner.step(x, target=y)
        mine = {id(p) for s in stages.values() for p in s.parameters()}
        for a, b in zip(torch.nn.Sequential(*layers).parameters(), ref.parameters(), strict=True):
            if id(a) in mine:
                worst = max(worst, float((a.grad - b.grad).abs().max()))
    return worst


def test_link_groups_on_a_pipeline_sub_group_of_three_ranks():
    """torch's local synchronization named the middle rank's later link groups differently from its
    neighbours' (it had made more groups by then), and building the runner waited forever."""
    assert max(run_local(_subgroup_worker, 3, timeout=180)) < 1e-5


def _rebuilt(rank, _world):
    """Five runners built, stepped and closed in turn; then a step on the last one."""
    import os

    import torch.distributed as dist

    from schedc.runtime import StepAbortedError

    def held():
        return len(dist.distributed_c10d._world.pg_map), len(os.listdir("/proc/self/fd"))

    problem = Problem(p=2, m=2)
    x, y = torch.randn(4, 6), torch.randn(4, 6)
    stages, plan = split_stages(mlp(2, 6), problem, rank), baseline_plan("1f1b", problem)
    counts = []
    for _ in range(5):
        runner = PipelineRunner(plan, stages, mlp_loss, timeout=60, link_groups=True)
        runner.step(x, target=y)
        runner.close()
        counts.append(held())
    try:
        runner.step(x, target=y)
        refused = "none"
    except StepAbortedError as err:
        refused = str(err)
    return counts, refused, _closed_after_failures(rank, plan, stages, x, y)


def _closed_after_failures(rank, plan, stages, x, y):
    """Rank 0's step fails after its last message (its grads_ready raises), rank 1's does not: each
    closes (a barrier in close() waited for rank 0 until the timeout). Then close() after the world
    is destroyed, twice (it raised ValueError: the groups were gone)."""
    import contextlib

    import torch.distributed as dist

    def refuse(params):
        if rank == 0 and any(p.shape[0] == 6 for p in params):
            raise RuntimeError("refused")

    runner = PipelineRunner(plan, stages, mlp_loss, timeout=30, link_groups=True, grads_ready=refuse)
    with contextlib.suppress(RuntimeError):
        runner.step(x, target=y)
    failed = runner.aborted is not None
    runner.close()  # with a barrier: rank 1 waited for rank 0, then raised PeerTimeoutError
    runner = PipelineRunner(plan, stages, mlp_loss, timeout=30, link_groups=True)
    runner.step(x, target=y)
    dist.barrier()
    dist.destroy_process_group()
    runner.close()
    runner.close()
    return failed


def test_closed_runners_release_their_link_groups():
    """Each runner built its own link groups and nothing destroyed them: ten file descriptors and six
    threads a runner on gloo, until a process that rebuilt its runner ran out of descriptors."""
    for rank, (counts, refused, failed) in enumerate(run_local(_rebuilt, 2, timeout=180)):
        assert counts == [counts[0]] * 5, counts
        assert refused == f"rank {rank}: this runner was closed (close()): build a new one"
        assert failed == (rank == 0)
