"""Failures on real gloo processes: a plan that does not fit fails before any communication; a
missing message or a dead peer ends in a one-line error naming the rank and what it waited for."""

from __future__ import annotations

import time

import pytest
import torch
import torch.distributed as dist
from torch import nn

from schedc.baselines import baseline_plan
from schedc.errors import ArgumentError
from schedc.problem import Problem
from schedc.runtime import (
    GradDisabledError,
    PeerError,
    PeerTimeoutError,
    PipelineRunner,
    PlanMismatchError,
    StepAbortedError,
    split_stages,
)
from schedc.runtime.launch import run_local
from schedc.runtime.models import mlp, mlp_loss


def _error(fn) -> tuple[str, str]:
    try:
        fn()
    except (PlanMismatchError, PeerError, StepAbortedError, GradDisabledError, ArgumentError) as err:
        return type(err).__name__, str(err)
    return "none", ""


class Widen(nn.Module):
    """A stage whose output doubles its width once ``wide`` is set: a shape the first step did not learn."""

    def __init__(self, inner: nn.Module) -> None:
        super().__init__()
        self.inner, self.wide = inner, False

    def forward(self, x):
        out = self.inner(x)
        return torch.cat([out, out], 1) if self.wide else out


def _worker(rank, world):
    out = {}
    three = baseline_plan("1f1b", Problem(p=3, m=2))
    out["world"] = _error(lambda: PipelineRunner(three, split_stages(mlp(3, 4), three.problem, 0), mlp_loss))
    plan = baseline_plan("1f1b", Problem(p=2, m=2))
    layers = mlp(2, 4)
    wrong = split_stages(layers, plan.problem, 1 - rank)
    out["stages"] = _error(lambda: PipelineRunner(plan, wrong, mlp_loss))
    as_list = list(split_stages(layers, plan.problem, rank).values())
    out["list"] = _error(lambda: PipelineRunner(plan, as_list, mlp_loss))
    # A tie between a (4, 4) weight on rank 0 and a (4,) bias on rank 1: both fail, nothing is copied.
    tie = [(0, "0.weight"), (1, "0.bias")]
    held = split_stages(layers, plan.problem, rank)
    before = [p.detach().clone() for p in layers[2].parameters()]
    out["tie"] = _error(lambda: PipelineRunner(plan, held, mlp_loss, ties=[tie]))
    out["tie-kept"] = all(torch.equal(a, b) for a, b in zip(before, layers[2].parameters(), strict=True))
    x = y = mlp(1, 4)[0].weight.detach()[:4]
    own = baseline_plan("1f1b" if rank == 0 else "gpipe", plan.problem)  # as from solves on each rank
    other = PipelineRunner(own, split_stages(layers, plan.problem, rank), mlp_loss, dist.new_group([0, 1]),
                           timeout=5)
    out["plans"] = _error(lambda: other.step(x, target=y))
    bounds = [(0, 2), (2, 4)] if rank == 0 else [(0, 3), (3, 4)]  # rank 1's stage 1 is a Tanh alone
    cut = PipelineRunner(plan, split_stages(layers, plan.problem, rank, bounds), mlp_loss,
                         dist.new_group([0, 1]), timeout=30)
    out["cut"] = _error(lambda: cut.step(x, target=y))
    calls = PipelineRunner(plan, split_stages(layers, plan.problem, rank), mlp_loss, dist.new_group([0, 1]),
                           timeout=30)
    out["calls"] = _error(lambda: (calls.step if rank == 0 else calls.eval)(x, target=y))
    sizes = PipelineRunner(plan, split_stages(layers, plan.problem, rank), mlp_loss, dist.new_group([0, 1]),
                           timeout=30)  # rank 1 gets half the batch: MSE would broadcast it silently
    out["batches"] = _error(lambda: sizes.step(x if rank == 0 else x[:2], target=y if rank == 0 else y[:2]))
    single = baseline_plan("1f1b", Problem(p=2, m=1))  # m = 1: batches of 4 and 3 both split
    by_one = PipelineRunner(single, split_stages(layers, single.problem, rank), mlp_loss,
                            dist.new_group([0, 1]), timeout=30)
    out["by-one"] = _error(lambda: by_one.step(x if rank == 0 else x[:3], target=y if rank == 0 else y[:3]))
    target_only = PipelineRunner(plan, split_stages(layers, plan.problem, rank), mlp_loss,
                                 dist.new_group([0, 1]), timeout=30)
    out["target-only"] = _error(lambda: target_only.step(x if rank == 0 else None, target=y))
    flat = PipelineRunner(plan, split_stages(layers, plan.problem, rank),  # B*T targets, no input given
                          lambda out, t: mlp_loss(out.reshape(-1), t), dist.new_group([0, 1]), timeout=30)
    out["flat-target"] = _error(lambda: flat.step(x, None) if rank == 0 else flat.step(None, y.reshape(-1)))
    vshape = baseline_plan("zb-v", Problem(p=2, m=2, v=2, placement="vshape"))  # rank 0 holds the last stage
    lossless = PipelineRunner(vshape, split_stages(mlp(4, 4), vshape.problem, rank), None,
                              dist.new_group([0, 1]), timeout=30)
    out["lossless-first"] = _error(lambda: (lossless.step if rank == 0 else lossless.eval)(x, target=y))
    lossless.eval(x)  # the plan check again, passed this time
    out["lossless-step"] = _error(lambda: lossless.step(x, target=y))
    # Groups over the same ranks: a timeout closes its group's connections, so each scenario that
    # may time out gets its own.
    mine = split_stages(layers, plan.problem, rank)
    odd = PipelineRunner(plan, mine, mlp_loss, timeout=3)  # both ranks get a batch of 3: both fail at once
    out["odd-batch"] = _error(lambda: odd.step(x[:3], target=y[:3]))
    shaped = {s: Widen(m) for s, m in mine.items()}
    widening = PipelineRunner(plan, shaped, mlp_loss, dist.new_group([0, 1]), timeout=60)
    widening.step(x, target=y)
    widening.timeout, shaped.get(0, Widen(None)).wide = 2, True
    out["widened"] = _error(lambda: widening.step(x, target=y))
    later = PipelineRunner(plan, mine, mlp_loss, dist.new_group([0, 1]), timeout=60)
    later.step(x, target=y)  # the first call's plan check compares the call kinds; later ones do not
    later.timeout = 2
    out["later-calls"] = _error(lambda: (later.eval if rank == 0 else later.step)(x, target=y))
    for name, refused in (("refused-later", _under_no_grad), ("input-changed", _half_batch)):
        out[name], out[name + "-next"] = _refused_alone(refused, PipelineRunner(plan, mine, mlp_loss,
                                                        dist.new_group([0, 1]), timeout=60), rank, x, y)
    runners = [PipelineRunner(plan, mine, mlp_loss, dist.new_group([0, 1]), timeout=60) for _ in range(2)]
    for runner in runners:
        runner.step(x, target=y)
        runner.timeout = 2  # the first step may take long (process start-up); later ones must not
    if rank == 1:
        time.sleep(5)  # skips the second step: rank 0 misses its gradient; then rank 1 exits
        return out
    out["missing"] = _error(lambda: runners[0].step(x, target=y))
    out["again"] = _error(lambda: runners[0].step(x, target=y))
    time.sleep(5)  # rank 1 is gone now
    out["dead"] = _error(lambda: runners[1].step(x, target=y))
    return out


def _refused_alone(refused, runner, rank, x, y) -> tuple:
    """After a first step, a call that rank 1 refuses while rank 0 steps: (each rank's error, rank
    1's next call's)."""
    runner.step(x, target=y)
    runner.timeout = 2
    now = _error(lambda: refused(runner, x, y) if rank == 1 else runner.step(x, target=y))
    return now, (_error(lambda: runner.step(x, target=y)) if rank == 1 else None)


def _under_no_grad(runner, x, y):
    with torch.no_grad():
        runner.step(x, target=y)


def _half_batch(runner, x, y):
    runner.step(x[:2], target=y[:2])


@pytest.fixture(scope="module")
def results():
    return run_local(_worker, 2, timeout=90)


def test_a_plan_for_another_world_size_fails_before_communicating(results):
    for rank in (0, 1):
        kind, message = results[rank]["world"]
        assert kind == "PlanMismatchError"
        assert message.startswith(f"rank {rank}: the plan has p = 3 ranks but the process group has 2")


def test_modules_for_the_wrong_stages_fail_before_communicating(results):
    for rank in (0, 1):  # each rank got the other's module
        kind, message = results[rank]["stages"]
        assert kind == "PlanMismatchError"
        assert message == (f"rank {rank}: the plan puts stages [{rank}] on it (looped, p=2 v=1) "
                           f"but it got modules for stages [{1 - rank}]")


def test_ranks_running_different_plans_fail_on_the_first_step_naming_it(results):
    """One all-reduce of the plans' digests before any shape message: every rank names it."""
    for rank in (0, 1):
        kind, message = results[rank]["plans"]
        assert kind == "PlanMismatchError"
        assert message.startswith(f"rank {rank}: the ranks run different plans (other orders or another")


def test_ranks_that_cut_the_layers_differently_fail_on_the_first_step(results):
    """Each stage fits its neighbours' shapes, so without the check the ranks trained another model
    (a layer run twice or never), silently."""
    for rank in (0, 1):
        kind, message = results[rank]["cut"]
        assert kind == "PlanMismatchError" and message == (
            f"rank {rank}: the ranks cut the layers into stages differently (split_stages given other "
            "bounds or another number of layers): give every rank the same layers and bounds")


def test_a_step_on_one_rank_and_an_eval_on_another_fail_at_once_on_both(results):
    """The first call's plan check carries which call it is: rank 0's step waited for gradients
    that rank 1's eval never sends, and both failed only at their timeouts."""
    for rank, mine, theirs in ((0, "step", "eval"), (1, "eval", "step")):
        kind, message = results[rank]["calls"]
        assert kind == "PlanMismatchError"
        assert message == (f"rank {rank}: the ranks' first calls differ (this rank's is {mine}(), another "
                           f"rank's {theirs}()): every rank must call step() or eval() alike, with a "
                           "scaler on every rank or on none")


def test_an_eval_on_one_rank_beside_a_later_step_on_another_times_out_on_both(results):
    """Their messages carried one tag: rank 1's step took rank 0's eval activations, rank 0's next
    step took the gradients, and both went on a call apart with wrong gradients and no error. Both
    wait 2 s; the first to give up closes the group's connections, so the other may read that as a
    failed transfer rather than its own timeout (seen when the worker's earlier scenarios changed)."""
    kinds = []
    for rank in (0, 1):
        kind, message = results[rank]["later-calls"]
        assert kind in ("PeerTimeoutError", "PeerError") and f"rank {rank} " in message, (kind, message)
        kinds.append(kind)
    assert "PeerTimeoutError" in kinds


def test_ranks_given_batches_of_other_sizes_fail_at_once_on_both(results):
    """A last stage given half the batch trained on microbatches of other sizes than the first
    stage's, and a loss that broadcasts (MSE) took them without a word."""
    for rank, mine in ((0, 4), (1, 2)):
        assert results[rank]["batches"] == (
            "PlanMismatchError", f"rank {rank}: the ranks' first calls got input batches of 2 and 4 "
                                 f"samples ({mine} here): give every rank the same x and target")
        assert results[rank]["by-one"] == (  # one sample apart is apart: no tolerance in the check
            "PlanMismatchError", f"rank {rank}: the ranks' first calls got input batches of 3 and 4 "
                                 f"samples ({4 - rank} here): give every rank the same x and target")
        assert results[rank]["target-only"] == ("none", "")  # a rank given no input: its target counts
        assert results[rank]["flat-target"] == ("none", "")  # targets compared with targets only


def test_after_a_failed_plan_check_the_rank_without_a_loss_is_still_the_one_named(results):
    """The check that failed (first calls differ) left each rank's idea of which rank has no loss_fn
    in place, and the next check then sent every rank's own number: rank 0, holding the last stage
    without a loss_fn, read rank 1's runner as the one built without it."""
    for rank in (0, 1):
        assert results[rank]["lossless-first"][1].startswith(f"rank {rank}: the ranks' first calls differ")
        whose = "this runner" if rank == 0 else "rank 0's runner"
        assert results[rank]["lossless-step"] == (
            "PlanMismatchError", f"rank {rank}: step() needs a loss_fn on the rank holding the last stage; "
                                 f"{whose} was built without one (it runs eval() only)")


def test_a_missing_message_times_out_naming_rank_peer_and_action(results):
    kind, message = results[0]["missing"]
    assert kind == PeerTimeoutError.__name__
    assert message == ("rank 0 waited for the gradient of stage 1 -> 0, microbatch 0 from rank 1 "
                       "(needed by 0I0): nothing arrived within 2 s")  # not rank 1's exit at 5 s


def test_a_dead_peer_ends_in_an_error_not_a_hang(results):
    kind, message = results[0]["dead"]
    assert kind in (PeerError.__name__, PeerTimeoutError.__name__)
    assert message.startswith("rank 0 ") and "rank 1" in message, message


def test_tied_copies_of_other_shapes_on_two_ranks_fail_on_both_before_copying(results):
    assert results[0]["tie"] == ("PlanMismatchError", "rank 0: tie 0: copies on ranks [1] differ in shape "
                                 "or dtype from (0, '0.weight') here ((4, 4) torch.float32)")
    assert results[1]["tie"] == ("PlanMismatchError", "rank 1: tie 0: its copies here are (4,) "
                                 "torch.float32, but (0, '0.weight') on rank 0 is (4, 4) torch.float32")
    assert results[0]["tie-kept"] and results[1]["tie-kept"]


def test_every_rank_given_the_batch_checks_it_so_all_fail_alike(results):
    for rank in (0, 1):
        assert results[rank]["odd-batch"] == ("PlanMismatchError", f"rank {rank}: the input batch of 3 does "
                                              "not split into the plan's m = 2 equal, non-empty microbatches")


def _three_holders(rank, world):
    """Ties over three ranks where one holder's copy differs: every holder fails at once, none waits
    for values (a 5 s timeout would show as PeerTimeoutError)."""
    out = {}
    plan = baseline_plan("1f1b", Problem(p=3, m=3))
    stages = split_stages(mlp(3, 4), plan.problem, rank)
    bad_last = [(0, "0.weight"), (1, "0.weight"), (2, "0.bias")]
    out["remote"] = _error(lambda: PipelineRunner(plan, stages, mlp_loss, timeout=5, ties=[bad_last]))
    looped = baseline_plan("looped-bfs", Problem(p=3, m=3, v=2))  # rank 0 holds stages 0 and 3
    held = split_stages(mlp(6, 4), looped.problem, rank)
    bad_here = [(0, "0.weight"), (3, "0.bias"), (1, "0.weight")]
    out["local"] = _error(lambda: PipelineRunner(looped, held, mlp_loss, timeout=5, ties=[bad_here]))
    good = [(0, "0.weight"), (1, "0.weight"), (2, "0.weight")]
    runner = PipelineRunner(plan, stages, mlp_loss, timeout=30, ties=[good])
    out["synced"] = stages[rank][0].weight.detach().sum().item() if rank in stages else None
    runner.step(torch.ones(3, 4), target=torch.zeros(3, 4))
    bounds = [(0, 2), (2, 4), (4, 6)] if rank < 2 else [(0, 2), (2, 3), (3, 6)]  # rank 2 reruns layer 3
    cut = split_stages(mlp(3, 4), plan.problem, rank, bounds)
    mixed = PipelineRunner(plan, dict(cut) if rank == 1 else cut, mlp_loss, timeout=30)  # rank 1: no record
    out["mixed-cut"] = _error(lambda: mixed.step(torch.ones(3, 4), target=torch.zeros(3, 4)))
    return out


@pytest.fixture(scope="module")
def three():
    return run_local(_three_holders, 3, timeout=120)


def test_ranks_that_know_their_cut_are_compared_beside_one_that_does_not(three):
    """A rank given a plain dict (no split_stages record) turned the check off for every rank."""
    for rank in range(3):
        assert three[rank]["mixed-cut"][1].startswith(f"rank {rank}: the ranks cut the layers into stages")


def test_a_tie_over_three_ranks_with_one_bad_copy_fails_on_every_holder_at_once(three):
    results = three
    assert results[0]["remote"] == ("PlanMismatchError", "rank 0: tie 0: copies on ranks [2] differ in shape "
                                    "or dtype from (0, '0.weight') here ((4, 4) torch.float32)")
    assert results[1]["remote"] == ("PlanMismatchError", "rank 1: tie 0: the copies on other ranks differ in "
                                    "shape or dtype (rank 0 names them); nothing was copied")
    assert results[2]["remote"] == ("PlanMismatchError", "rank 2: tie 0: its copies here are (4,) "
                                    "torch.float32, but (0, '0.weight') on rank 0 is (4, 4) torch.float32")
    assert results[0]["local"] == ("PlanMismatchError", "rank 0: tie 0: copies here differ in shape or dtype "
                                   "from (0, '0.weight') here ((4, 4) torch.float32)")
    assert results[1]["local"][1].startswith("rank 1: tie 0: the copies on other ranks differ")
    assert results[2]["local"] == ("none", "")  # rank 2 holds no copy
    assert results[0]["synced"] == results[1]["synced"] == results[2]["synced"]


def test_stages_as_a_list_fail_naming_the_dict_split_stages_returns(results):
    for rank in (0, 1):
        assert results[rank]["list"] == ("PlanMismatchError", f"rank {rank}: stages must be a {{stage index: "
                                         "module} dict, as split_stages returns, got list")


def test_an_output_shape_the_first_step_did_not_learn_fails_on_the_sender_before_sending(results):
    kind, message = results[0]["widened"]
    assert kind == "PlanMismatchError"
    assert message.startswith("rank 0: the activation of stage 0 -> 1, microbatch 0 is (2, 8) torch.float32, "
                              "but the shapes learned for this input give (2, 4) torch.float32"), message
    assert results[1]["widened"][0] == PeerTimeoutError.__name__  # its peer: one line, not an abort


def test_a_step_after_a_failed_one_says_to_rebuild_the_runner(results):
    kind, message = results[0]["again"]
    assert kind == "StepAbortedError"
    assert message.startswith("rank 0: an earlier step failed here (PeerTimeoutError: rank 0 waited for ")
    assert message.endswith("build a new runner (and process group) on every rank before the next step")


class _FailingWork:
    """A dist.Work whose wait fails as gloo's does when the peer closed the connection."""

    def wait(self, timeout=None):
        raise RuntimeError("[../third_party/gloo/gloo/transport/tcp/pair.cc:534] Connection closed by peer "
                           "[127.0.0.1]:40211\nException raised from ... (C++ stack)")


def test_a_peer_error_quotes_the_backend_without_its_source_location():
    from schedc.runtime.waits import wait

    with pytest.raises(PeerError) as caught:
        wait(_FailingWork(), 2.0, "rank 0 waited for x")
    assert str(caught.value) == ("rank 0 waited for x: the transfer failed (Connection closed by peer "
                                 "[127.0.0.1]:40211)")


@pytest.mark.parametrize("text", ["[::1]:29500 Connection refused", "[127.0.0.1]:29500 Connection refused"])
def test_a_peer_error_keeps_a_leading_address(text):
    from schedc.runtime.waits import _reason

    assert _reason(RuntimeError(text)) == text


@pytest.mark.parametrize(("name", "refusal"), [("refused-later", "GradDisabledError"),
                                               ("input-changed", "PlanMismatchError")])
def test_a_later_call_refused_on_one_rank_aborts_it_rather_than_pair_with_the_next(results, name, refusal):
    """Later calls are compared only with variable_shapes: rank 1 refused its step (under no_grad, or
    a batch of another size) while rank 0 was inside it, and rank 1's next step paired with rank 0's
    current one, one batch's inputs against another's targets, without an error. Rank 0 now times out
    and rank 1's next call is refused (found by an acceptance tester)."""
    assert_aborted_rather_than_paired(results, name, refusal)


def assert_aborted_rather_than_paired(results: list[dict], name: str, refusal: str) -> None:
    """Rank 0 timed out inside the call that rank 1 refused with ``refusal``, and rank 1's next call
    was refused, its runner aborted."""
    kind, message = results[0][name]
    assert kind == "PeerTimeoutError" and message.startswith("rank 0 "), (kind, message)
    assert results[1][name][0] == refusal
    kind, message = results[1][name + "-next"]
    assert kind == "StepAbortedError" and "which its peers do not hear of without variable_shapes" in message
