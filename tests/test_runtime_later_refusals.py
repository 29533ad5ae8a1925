"""Later calls that one rank refuses alone, on real gloo processes: they abort its runner rather
than let its next call pair with its peers' current one (inputs of one batch against targets of the
next), unless every rank was given the batch; and a first input of too many tensors fails the peers
at once."""

from __future__ import annotations

import pytest
import torch.distributed as dist
from torch.distributed.fsdp.sharded_grad_scaler import ShardedGradScaler

from schedc.baselines import baseline_plan
from schedc.problem import Problem
from schedc.runtime import PipelineRunner, split_stages
from schedc.runtime.launch import run_local
from schedc.runtime.models import mlp, mlp_loss
from tests.test_runtime_failures import _error, _refused_alone, assert_aborted_rather_than_paired


def _later_refusals(rank, world):
    """A first input of 9 tensors on rank 0; later calls that rank 1 refuses alone, each on its own
    runner and group: a target forgotten, a ``losses`` that is not a list, and a batch given to it
    alone among ranks first called torch's way (x on the first rank, the target on the last)."""
    out = {}
    plan = baseline_plan("1f1b", Problem(p=2, m=2))
    mine = split_stages(mlp(2, 4), plan.problem, rank)
    x = y = mlp(1, 4)[0].weight.detach()[:4]
    nine = PipelineRunner(plan, mine, mlp_loss, dist.new_group([0, 1]), timeout=30)
    out["nine-inputs"] = _error(lambda: nine.step((x,) * 9 if rank == 0 else x, target=y))  # 8 at most
    for name, refused in (("target-forgotten", _target_forgotten), ("losses-tuple", _losses_tuple)):
        out[name], out[name + "-next"] = _refused_alone(refused, PipelineRunner(plan, mine, mlp_loss,
                                                        dist.new_group([0, 1]), timeout=60), rank, x, y)
    everywhere = PipelineRunner(plan, mine, mlp_loss, dist.new_group([0, 1]), timeout=60)
    everywhere.step(x, target=y)  # every rank given both: a later bad batch is refused alike
    out["alike"] = _error(lambda: everywhere.step(x[:3], target=y[:3]))
    out["alike-next"] = _error(lambda: everywhere.step(x, target=y))
    out["alike-eval"] = _error(lambda: everywhere.eval(x[:3]))  # x everywhere: refused alike, no target
    out["alike-eval-next"] = _error(lambda: everywhere.step(x, target=y))
    out["alike-nine"] = _error(lambda: everywhere.step((x,) * 9, target=y))  # every rank: 8 at most
    out["alike-nine-next"] = _error(lambda: everywhere.step(x, target=y))
    inference = PipelineRunner(plan, mine, mlp_loss, dist.new_group([0, 1]), timeout=60)
    inference.eval(x)  # every rank given x, none a target: an odd last batch is refused alike
    out["inference"] = _error(lambda: inference.eval(x[:3]))
    out["inference-next"] = _error(lambda: inference.eval(x))
    eval_first = PipelineRunner(plan, mine, mlp_loss, dist.new_group([0, 1]), timeout=60)
    eval_first.eval(x)  # x everywhere, then torch-style steps: rank 1 is inside when rank 0 refuses
    eval_first.timeout = 2
    out["eval-first"] = _error(lambda: eval_first.step(x[:3]) if rank == 0 else eval_first.step(None, y))
    out["eval-first-next"] = _error(lambda: eval_first.step(x)) if rank == 0 else None
    scaled = PipelineRunner(plan, mine, mlp_loss, dist.new_group([0, 1]), timeout=60)
    scaled.eval(x)  # the same with a float16 scaler: the call is then a "scaled step"
    scaled.timeout, scaler = 2, ShardedGradScaler("cpu")
    out["eval-first-scaled"] = _error(lambda: scaled.step(x[:3], scaler=scaler) if rank == 0
                                      else scaled.step(None, y, scaler=scaler))
    out["eval-first-scaled-next"] = _error(lambda: scaled.step(x, scaler=scaler)) if rank == 0 else None
    torch_style = PipelineRunner(plan, mine, mlp_loss, dist.new_group([0, 1]), timeout=60)
    torch_style.step(x if rank == 0 else None, target=None if rank == 0 else y)
    torch_style.timeout = 2  # then rank 1 alone is given x too, a batch of 3 that does not split in 2
    out["unlike"] = _error(lambda: torch_style.step(x, None) if rank == 0 else torch_style.step(x[:3], y[:3]))
    out["unlike-next"] = _error(lambda: torch_style.step(None, target=y)) if rank == 1 else None
    return out


def _target_forgotten(runner, x, y):
    runner.step(x)


def _losses_tuple(runner, x, y):
    runner.step(x, target=y, losses=())


@pytest.fixture(scope="module")
def later_results():
    return run_local(_later_refusals, 2, timeout=90)


def test_a_later_bad_batch_given_to_every_rank_is_refused_alike_and_the_runner_stays_usable(later_results):
    """Every rank was given x and target in its first call and in this one: all refuse the batch at
    once, none is inside the call, and the next step trains (what the first call's "given" flag is for)."""
    for rank, per_rank in enumerate(later_results):
        refused = (f"rank {rank}: the input batch of 3 does not split into the plan's m = 2 equal, "
                   "non-empty microbatches")
        assert per_rank["alike"] == ("PlanMismatchError", refused)
        assert per_rank["alike-next"] == ("none", "")


def test_a_later_bad_input_given_to_every_rank_without_a_target_is_refused_alike_too(later_results):
    """Every rank was given x in the first call and in this one, an eval without a target (the last
    batch of a validation set, say): all refuse it, and the runner stays usable. Until the input and
    the target were flagged apart, such a refusal aborted every runner (the sixtieth session's rule)."""
    for rank, per_rank in enumerate(later_results):
        refused = (f"rank {rank}: the input batch of 3 does not split into the plan's m = 2 equal, "
                   "non-empty microbatches")
        for name in ("alike-eval", "inference"):
            assert per_rank[name] == ("PlanMismatchError", refused)
            assert per_rank[name + "-next"] == ("none", "")


def test_a_later_input_of_too_many_tensors_given_to_every_rank_is_refused_alike(later_results):
    """Its check came after the batch's and counted as alike until the input and the target were
    flagged apart, then aborted every runner (the reviewer of that change)."""
    nine = ", ".join(["Tensor"] * 9)
    for rank, per_rank in enumerate(later_results):
        assert per_rank["alike-nine"] == ("PlanMismatchError", f"rank {rank}: the input of stage 0 must be "
                                          f"a tensor or a tuple of 1 to 8 tensors, got {nine}")
        assert per_rank["alike-nine-next"] == ("none", "")


def test_a_step_after_an_eval_first_given_x_everywhere_aborts_on_a_refusal_of_its_own(later_results):
    """A first eval(x) on every rank, then steps torch's way (x on rank 0, the target on rank 1): an
    odd x that rank 0 refuses must abort it, since rank 1, given a target that splits, is inside the
    call. Taken for alike (every rank was given x first), rank 0's next step paired with rank 1's
    current one, training one batch's inputs against the last one's targets (the reviewer's repro)."""
    for name in ("eval-first", "eval-first-scaled"):  # a scaled step slipped through (a second review)
        (refused, next_call), (inside, _) = ((r[name], r[name + "-next"]) for r in later_results)
        assert refused == ("PlanMismatchError", "rank 0: the input batch of 3 does not split into the plan's "
                                                "m = 2 equal, non-empty microbatches"), name
        assert inside[0] == "PeerTimeoutError" and inside[1].startswith("rank 1 "), name
        assert next_call[0] == "StepAbortedError", name


def test_a_first_input_of_too_many_tensors_fails_the_peers_at_once_too(later_results):
    """Rank 0 refused the tuple after its checks had passed, outside the failure's telling, and its
    peer waited for the plan check until its timeout (found by a reviewer)."""
    nine = ", ".join(["Tensor"] * 9)
    first, peer = (per_rank["nine-inputs"] for per_rank in later_results)
    assert first == ("PlanMismatchError", "rank 0: the input of stage 0 must be a tensor or a tuple of 1 "
                                          f"to 8 tensors, got {nine}")
    assert peer == ("PlanMismatchError", "rank 1: rank 0 failed before its first step or eval (its own "
                                         "error says why)")


@pytest.mark.parametrize(("name", "refusal"), [("target-forgotten", "PlanMismatchError"),
                                               ("losses-tuple", "ArgumentError"),
                                               ("unlike", "PlanMismatchError")])
def test_a_later_call_refused_on_one_rank_alone_aborts_it(later_results, name, refusal):
    """A target forgotten on the last stage's rank alone, or a ``losses`` that is not a list, was
    taken for a check that every rank fails alike, and paired its next call with the peers' current
    one (found by a reviewer); a batch's check is alike only where every rank is given the batch,
    which a first call with x on the first rank alone does not show."""
    assert_aborted_rather_than_paired(later_results, name, refusal)
