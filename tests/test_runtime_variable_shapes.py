"""``variable_shapes=True``: batches whose sequence length changes from step to step (Megatron's
``--variable-seq-lengths``) train as the unpipelined model does, the middle and last ranks given no
input learn each new shape in the call's all-reduce, and a shape seen before is not learned again."""

from __future__ import annotations

import copy

import pytest

from schedc.problem import Problem

torch = pytest.importorskip("torch")

from torch import nn  # noqa: E402

from schedc.runtime.models import transformer, transformer_loss  # noqa: E402
from tests.runtime_cases import run_baseline_cases  # noqa: E402

M, VOCAB = 2, 11
LENGTHS = (3, 5, 3, 7)
"""Sequence lengths of the steps: 3 comes back, and is not learned again."""
CASES = {"1f1b": ("1f1b", Problem(p=2, m=M, split=False)),
         "zb-v": ("zb-v", Problem(p=2, m=M, v=2, placement="vshape")),
         "interleaved": ("interleaved-1f1b", Problem(p=2, m=M, v=2))}
TOO_LONG = max(LENGTHS) + 2
"""Longer than the model's positions: stage 0 fails while the shapes are learned."""


def _model(num_stages: int) -> list[nn.Module]:
    return transformer(num_stages - 2, 16, 2, max(LENGTHS), VOCAB)


def _batch(length: int, seed: int = 0, rows: int = 2 * M) -> tuple[torch.Tensor, torch.Tensor]:
    gen = torch.Generator().manual_seed(length + 100 * seed)
    ids = torch.randint(0, VOCAB, (rows, length), generator=gen)
    return ids, torch.roll(ids, 1, dims=1)


def _grads(layers: list[nn.Module], mine: set[int]) -> dict:
    return {(i, n): p.grad.clone() for i, layer in enumerate(layers) for n, p in layer.named_parameters()
            if id(p) in mine and p.grad is not None}


def _counting() -> list[int]:
    """Counts this process's shape walks (``infer_boundaries`` as the shape book calls it)."""
    from schedc.runtime import shape_book

    walks, infer = [0], shape_book.infer_boundaries

    def counted(*args, **kwargs):
        walks[0] += 1
        return infer(*args, **kwargs)

    shape_book.infer_boundaries = counted
    return walks


def _worker(rank: int, _world: int, plans: dict) -> dict:
    from schedc.runtime import PipelineRunner, split_stages

    out: dict = {}
    walks = _counting()
    for case, plan in plans.items():
        layers = _model(plan.problem.num_stages)
        stages = split_stages(layers, plan.problem, rank)
        runner = PipelineRunner(plan, stages, transformer_loss, timeout=60, variable_shapes=True)
        mine = {id(p) for s in stages.values() for p in s.parameters()}
        walks[0] = 0
        for step, length in enumerate(LENGTHS):
            x, y = _batch(length)  # each rank is given what its stages need only
            runner.step(x if runner.holds_first else None, target=y if runner.holds_last else None)
            out[(case, step)] = _grads(layers, mine)
            for layer in layers:
                layer.zero_grad()
        out[(case, "learned")] = walks[0]
        logits = runner.eval(_batch(4)[0] if runner.holds_first else None)
        out[(case, "eval")] = None if logits is None else tuple(logits.shape)
        out[(case, "too long")] = _error(lambda r=runner: r.step(*_batch(TOO_LONG)))
        runner.step(*_batch(LENGTHS[1]))  # the pipeline still works: the failure left no message behind
        out[(case, "after")] = _grads(layers, mine)
        for layer in layers:
            layer.zero_grad()
    plan = plans["1f1b"]
    stages = split_stages(_model(plan.problem.num_stages), plan.problem, rank)
    runner = PipelineRunner(plan, stages, transformer_loss, timeout=20, variable_shapes=True)
    runner.step(*_batch(3))
    out["other shapes"] = _error(lambda: runner.step(*_batch(3 if rank == 0 else 5)))
    runner = PipelineRunner(plan, stages, transformer_loss, timeout=20, variable_shapes=True)
    runner.step(*_batch(3))
    x, y = _batch(5)
    out["failed"] = _error(lambda: runner.step(x, y if rank == 0 else y[:3]))  # rank 1's target: 3 rows
    runner = PipelineRunner(plan, stages, transformer_loss, timeout=20, variable_shapes=True)
    runner.step(*_batch(3))
    with torch.set_grad_enabled(rank == 0):  # a check before the batch's: its peer learns of it too
        out["no grad"] = _error(lambda: runner.step(*_batch(5)))
    mixed = PipelineRunner(plan, stages, transformer_loss, timeout=20, variable_shapes=rank == 0)
    out["mixed"] = _error(lambda: mixed.step(*_batch(3)))
    fixed = PipelineRunner(plan, stages, transformer_loss, timeout=20)
    fixed.step(*_batch(3))
    out["fixed"] = _error(lambda: fixed.step(*_batch(5)))
    later = PipelineRunner(plan, stages, transformer_loss, timeout=20)  # input first on rank 0 only
    later.eval(_batch(3)[0] if rank == 0 else None)
    out["input later"] = _error(lambda: later.step(*_batch(3)))
    runner = PipelineRunner(plan, stages, transformer_loss, timeout=20, variable_shapes=True)
    runner.step(*_batch(3))
    out["calls"] = _error(lambda: runner.step(*_batch(3)) if rank else runner.eval(_batch(3)[0]))
    return out


def _error(call) -> tuple[str, str]:
    try:
        call()
        return ("none", "")
    except Exception as err:
        return (type(err).__name__, str(err))


@pytest.fixture(scope="module")
def results() -> list[dict]:
    return run_baseline_cases(_worker, CASES)


def _reference(problem: Problem, length: int, seed: int = 0) -> dict:
    model = nn.Sequential(*copy.deepcopy(_model(problem.num_stages)))
    x, y = _batch(length, seed)
    for xs, ys in zip(x.chunk(M), y.chunk(M), strict=True):
        (transformer_loss(model(xs), ys) / M).backward()
    return _grads(list(model), {id(p) for p in model.parameters()})


def _check(results: list[dict], key: tuple, want: dict) -> None:
    got = {k: g for per_rank in results for k, g in per_rank[key].items()}
    assert got.keys() == want.keys()
    for name, grad in got.items():
        torch.testing.assert_close(grad, want[name], msg=f"{key} {name}")


def test_each_length_trains_as_the_unpipelined_model(results):
    for case, (_, problem) in CASES.items():
        for step, length in enumerate(LENGTHS):
            _check(results, (case, step), _reference(problem, length))


def test_a_length_that_fails_while_learned_leaves_the_pipeline_working(results):
    """With two stages per rank the failing rank's peer sent its own notice back to it, which no one
    took: gloo then closed the pair, and every later call failed with "Connection closed by peer"."""
    for case, (_, problem) in CASES.items():
        for rank, per_rank in enumerate(results):
            kind, message = per_rank[(case, "too long")]
            assert kind == "PlanMismatchError" and "\n" not in message
            assert message.startswith(f"rank {rank}: "), message
        _check(results, (case, "after"), _reference(problem, LENGTHS[1]))


def test_a_length_seen_before_is_not_learned_again_and_eval_takes_a_new_one(results):
    for case in CASES:
        for per_rank in results:
            assert per_rank[(case, "learned")] == len(set(LENGTHS))
        last = CASES[case][1].stage_rank[-1]  # the output of the whole batch, where the last stage is
        assert [per_rank[(case, "eval")] for per_rank in results] == [
            (2 * M, 4, VOCAB) if rank == last else None for rank in range(2)]


def test_ranks_given_inputs_of_other_shapes_fail_at_once_on_both(results):
    for rank, per_rank in enumerate(results):
        here = "(2, 3) torch.int64" if rank == 0 else "(2, 5) torch.int64"
        assert per_rank["other shapes"] == (
            "PlanMismatchError", f"rank {rank}: the ranks given an input got microbatches of other shapes in "
                                 f"this call ({here}): give every rank the same x")


def test_a_rank_whose_own_checks_fail_tells_its_peer_in_the_shape_check(results):
    assert results[1]["failed"] == ("PlanMismatchError", "rank 1: the target batch of 3 does not match the "
                                    "input batch of 4")  # its own error
    assert results[0]["failed"] == ("PlanMismatchError", "rank 0: rank 1 failed before this call's shape "
                                    "check (its own error says why)")


def test_a_step_without_gradients_on_one_rank_fails_its_peer_at_once(results):
    assert results[1]["no grad"][0] == "GradDisabledError"
    assert results[0]["no grad"] == ("PlanMismatchError", "rank 0: rank 1 failed before this call's shape "
                                     "check (its own error says why)")


def test_a_rank_first_given_no_input_may_be_given_one_later(results):
    """It kept no shape of the input, and comparing the later one with none raised a TypeError."""
    for per_rank in results:
        assert per_rank["input later"] == ("none", "")


def test_calls_are_compared_on_every_call(results):
    for rank, per_rank in enumerate(results):
        mine, other = ("eval()", "step()") if rank == 0 else ("step()", "eval()")
        assert per_rank["calls"] == (
            "PlanMismatchError", f"rank {rank}: the ranks' calls differ (this rank's is {mine}, another "
                                 f"rank's {other}): every rank must call step() or eval() alike, with a "
                                 "scaler on every rank or on none")


def test_without_variable_shapes_a_new_length_is_refused_naming_the_option(results):
    for rank, per_rank in enumerate(results):
        kind, message = per_rank["fixed"]
        assert kind == "PlanMismatchError"
        assert message.startswith(f"rank {rank}: microbatch input changed from (2, 3) torch.int64 to (2, 5)")
        assert "variable_shapes=True" in message and "sized on the first call (step or eval)" in message


def test_runners_built_with_and_without_variable_shapes_fail_at_the_first_call(results):
    """Else the one with it would start its next call with an all-reduce its peer never joins."""
    for rank, per_rank in enumerate(results):
        assert per_rank["mixed"] == (
            "PlanMismatchError", f"rank {rank}: the ranks' runners differ in variable_shapes ({rank == 0} "
                                 "here): build every rank's runner with the same variable_shapes")


def test_a_failing_rank_notifies_each_peer_once_and_never_a_failed_one():
    """Interleaved p=2: rank 0 holds stages 0 and 2, and rank 1 fails on the first notice (boundary
    0), so a second one (boundary 2) would stay unfinished; ZB-V: rank 1, failed by rank 0's notice,
    would have sent one back for boundary 2."""
    from schedc.runtime.shapes import _first_waits

    interleaved = Problem(p=2, m=M, v=2)
    assert _first_waits(interleaved, 0, set(), {0}) == {1: 0}
    assert _first_waits(interleaved, 0, {0}, {0}) == {1: 2}  # boundary 0 went out: the peer waits at 2
    vshape = CASES["zb-v"][1]
    assert _first_waits(vshape, 1, set(), {0, 1}) == {}
    assert _first_waits(vshape, 1, set(), {1}) == {0: 2}


DP_STEPS = ((3, 3), (5, 6))
"""Each step's sequence lengths on the two data-parallel replicas: alike, then not (Megatron lets
each replica pad to its own longest sequence)."""


def _dp_worker(rank: int, _world: int, plans: dict) -> dict:
    import torch.distributed as dist

    from schedc.runtime import PipelineRunner, split_stages

    pipelines = [dist.new_group([0, 1]), dist.new_group([2, 3])]  # every rank makes every group
    replicas = [dist.new_group([0, 2]), dist.new_group([1, 3])]
    line, pp_rank = divmod(rank, 2)
    plan = plans["1f1b"]
    layers = _model(plan.problem.num_stages)
    stages = split_stages(layers, plan.problem, pp_rank)
    runner = PipelineRunner(plan, stages, transformer_loss, pipelines[line], timeout=30,
                            dp_group=replicas[pp_rank], variable_shapes=True)
    mine = {id(p) for s in stages.values() for p in s.parameters()}
    out: dict = {}
    for step, lengths in enumerate(DP_STEPS):
        runner.step(*_batch(lengths[line], seed=line))
        out[step] = _grads(layers, mine)
        for layer in layers:
            layer.zero_grad()
    out["shares"] = _error(lambda: runner.step(*_batch(3, seed=line, rows=2 * M * (1 + line))))
    runner = PipelineRunner(plan, stages, transformer_loss, pipelines[line], timeout=30,
                            dp_group=replicas[pp_rank])
    runner.step(*_batch(3, seed=line))
    if line == 0:  # pipeline 0 evaluates alone: an eval averages nothing
        runner.eval(_batch(3, seed=line)[0])
    out["eval alone"] = _error(lambda: runner.step(*_batch(3, seed=line)))
    if line == 0:  # then its step fails its own checks
        out["failed"] = _error(lambda: runner.step(*_batch(3, seed=line, rows=3)))  # 3 rows, m = 2
    out["behind"] = _error(lambda: runner.step(*_batch(3, seed=line)))  # its next pairs with the others'
    runner = PipelineRunner(plan, stages, transformer_loss, pipelines[line], timeout=30,
                            dp_group=replicas[pp_rank], variable_shapes=line == 0)
    out["mixed"] = _error(lambda: runner.step(*_batch(3, seed=line)))
    return out


@pytest.fixture(scope="module")
def dp_results() -> list[dict]:
    return run_baseline_cases(_dp_worker, {"1f1b": CASES["1f1b"]}, world=4)


def test_data_parallel_replicas_may_differ_in_length_but_not_in_share(dp_results):
    results = dp_results
    problem = CASES["1f1b"][1]
    for step, lengths in enumerate(DP_STEPS):
        refs = [_reference(problem, length, seed) for seed, length in enumerate(lengths)]
        want = {key: (refs[0][key] + refs[1][key]) / 2 for key in refs[0]}  # the replicas' average
        for per_rank in results:
            for key, grad in per_rank[step].items():
                torch.testing.assert_close(grad, want[key], msg=f"step {step} {key}")
    for rank, per_rank in enumerate(results):  # all four, at once: each knows its pipeline's rows
        label = f"rank {rank % 2}" + (f" (global rank {rank})" if rank >= 2 else "")
        assert per_rank["shares"] == ("PlanMismatchError", f"{label}: {OUT_OF_STEP}")


OUT_OF_STEP = ("the data-parallel replicas were given microbatches of other shapes (with variable_shapes, of "
               "other sizes), are at other steps (a replica's step failed before this averaging), or scale "
               "their losses differently (a scaler on some replicas only, or scalers whose scales parted): "
               "each replica takes an equal share of the batch, and all step alike")


def test_replicas_built_with_and_without_variable_shapes_are_told_so(dp_results):
    """They were told their replicas got microbatches of other shapes, which they had not."""
    for rank, per_rank in enumerate(dp_results):
        label = f"rank {rank % 2}" + (f" (global rank {rank})" if rank >= 2 else "")
        assert per_rank["mixed"] == (
            "PlanMismatchError", f"{label}: the data-parallel replicas' runners differ in variable_shapes "
                                 f"({rank < 2} here): build every replica's runner with the same "
                                 "variable_shapes")


def test_a_replica_whose_call_failed_is_not_paired_with_the_others_next_call(dp_results):
    """Pipeline 0's call failed before its step while pipeline 1 went on into its step's averaging,
    which pipeline 0's next call then joined: a step of each batch averaged together, silently."""
    for rank, per_rank in enumerate(dp_results):
        assert per_rank["eval alone"] == ("none", "")
        if rank < 2:
            assert per_rank["failed"][0] == "PlanMismatchError"
        label = f"rank {rank % 2}" + (f" (global rank {rank})" if rank >= 2 else "")
        assert per_rank["behind"] == ("PlanMismatchError", f"{label}: {OUT_OF_STEP}")


PICKY = 6
"""The sequence length the middle stage of the three-rank test refuses."""


class Picky(nn.Module):
    """A block that refuses one sequence length: a stage that fails after rank 0 sent its shape."""

    def __init__(self, inner: nn.Module) -> None:
        super().__init__()
        self.inner = inner

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        if x.shape[1] == PICKY:
            raise ValueError(f"no sequences of {PICKY}")
        return self.inner(x)


def _three_ranks(rank: int, _world: int, plans: dict) -> dict:
    from schedc.runtime import PipelineRunner, split_stages

    plan = plans["1f1b"]
    layers = _model(plan.problem.num_stages)
    layers[1] = Picky(layers[1])
    stages = split_stages(layers, plan.problem, rank)
    runner = PipelineRunner(plan, stages, transformer_loss, timeout=20, variable_shapes=True)
    runner.step(*_batch(3))
    out = {"picky": _error(lambda: runner.step(*_batch(PICKY)))}
    for layer in layers:
        layer.zero_grad()
    runner.step(*_batch(LENGTHS[1]))  # every rank dropped the shape alike and joins this call
    out["after"] = _grads(layers, {id(p) for s in stages.values() for p in s.parameters()})
    vshape = plans["zb-v"]  # stage 2 on rank 2, whose failure reaches rank 0 through rank 1 (stage 4)
    layers = _model(vshape.problem.num_stages)
    layers[2] = Picky(layers[2])
    runner = PipelineRunner(vshape, split_stages(layers, vshape.problem, rank), transformer_loss, timeout=20,
                            variable_shapes=True)
    runner.step(*_batch(3))
    out["relayed"] = _error(lambda: runner.step(*_batch(PICKY)))
    return out


@pytest.fixture(scope="module")
def three_rank_results() -> list[dict]:
    cases = {"1f1b": ("1f1b", Problem(p=3, m=M, split=False)),
             "zb-v": ("zb-v", Problem(p=3, m=M, v=2, placement="vshape"))}
    return run_baseline_cases(_three_ranks, cases, world=3)


def test_a_middle_stage_failing_on_a_new_shape_fails_every_rank_alike(three_rank_results):
    """Rank 0 had sent its shape and gone into the step, where it waited for its timeout with the
    new shape cached, while ranks 1 and 2 began the next call's all-reduce without it."""
    results = three_rank_results
    assert results[1]["picky"][0] == "PlanMismatchError" and "no sequences of 6" in results[1]["picky"][1]
    for rank in (0, 2):
        assert results[rank]["picky"][0] == "PlanMismatchError"
    assert results[0]["picky"][1] == ("rank 0: rank 1 failed while the shapes of this call's input were "
                                      "learned (its own error says why)")
    model = _model(3)
    model[1] = Picky(model[1])
    x, y = _batch(LENGTHS[1])
    reference = nn.Sequential(*model)
    for xs, ys in zip(x.chunk(M), y.chunk(M), strict=True):
        (transformer_loss(reference(xs), ys) / M).backward()
    want = _grads(list(reference), {id(p) for p in reference.parameters()})
    got = {k: g for per_rank in results for k, g in per_rank["after"].items()}
    assert got.keys() == want.keys()
    for key, grad in got.items():
        torch.testing.assert_close(grad, want[key], msg=str(key))


def test_a_failure_passed_on_by_a_rank_names_the_rank_that_failed(three_rank_results):
    """ZB-V on 3 ranks, stage 2 (rank 2) refusing the length: rank 1 fails on rank 2's notice and
    passes one on to rank 0, which named rank 1 alone, whose error only points on at rank 2's."""
    results = three_rank_results
    assert "no sequences of 6" in results[2]["relayed"][1]
    relayed = [r["relayed"] for r in results]
    assert relayed[1] == ("PlanMismatchError", "rank 1: rank 2 failed before it could send the shape of "
                                               "stage 3's output (its own error says why)")
    assert relayed[0] == ("PlanMismatchError", "rank 0: rank 1 could not send the shape of stage 4's output "
                                               "since rank 2 failed first (its own error says why)")
