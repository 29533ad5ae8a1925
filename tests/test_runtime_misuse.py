# sed -i '58s/if not is_flag(value):/if not isinstance(value, bool):/' runtime/arguments.py
# sed -i '106s/bool(record)  #/record  #/' runtime/runner.py
# sed -i '41s/type(bucket_bytes) is not int or/not isinstance(bucket_bytes, int) or/' runtime/dp_buckets.py
"""Misuse of the runtime that a PyTorch user plausibly commits: each gets one line. One-rank plans
run without a process group, so these need no spawned processes."""

from __future__ import annotations

import numpy as np
import pytest
import torch
from torch import nn
from torch.nn import functional

from schedc.baselines import baseline_plan
from schedc.errors import ArgumentError, ProblemError
from schedc.problem import Problem
from schedc.runtime import PipelineRunner, PlanMismatchError, split_stages, stage_bounds
from schedc.runtime.models import mlp, mlp_loss
from schedc.runtime.profile import measure_p2p, profile_problem, time_stages
from schedc.runtime.shapes import TensorMeta
from tests.runtime_cases import WIDTH, batch, grads_of, reference_grads

W = WIDTH
CUT = "stage bounds must cut the 8 layers in order"


def _runner(**kwargs) -> PipelineRunner:
    problem = Problem(p=1, m=2)
    stages = split_stages(mlp(2, W), problem, 0)
    return PipelineRunner(baseline_plan("1f1b", problem), stages, mlp_loss, **kwargs)


@pytest.mark.parametrize("kwargs, message", [
    ({"timeout": float("inf")}, "timeout must be a number of seconds in (0, 1e+07] (None: the process"),
    ({"timeout": 0}, "own), got 0"),
    ({"timeout": "5"}, "timeout must be a number of seconds"),
    ({"recv_ahead": -1}, "recv_ahead must be None or an integer >= 0, got -1"),
    ({"ties": (0, "0.weight")}, "ties must be a list of ties, each a list of (stage, parameter name) pairs"),
    ({"ties": [[0, "0.weight"]]}, "tie 0 must be a list of (stage, parameter name) pairs"),
    ({"dp_group": 1}, "dp_group must be a torch.distributed process group (dist.new_group(...)) or None, "
                      "got int"),
    ({"dp_group": -100}, "dp_group does not hold this process"),  # new_group's answer outside the group
    ({"bucket_bytes": 0}, "bucket_bytes must be a positive integer, got 0"),
    ({"dp_group": 1, "grads_ready": print}, "give grads_ready or dp_group, not both"),
    ({"bucket_bytes": 2.5e7}, "bucket_bytes must be a positive integer, got 25000000.0"),
    ({"bucket_bytes": True}, "bucket_bytes must be a positive integer, got True"),  # a flag, not 1 byte
    ({"bucket_bytes": False}, "bucket_bytes must be a positive integer, got False"),
    # from a fuzz of the API: an OverflowError, a ValueError from repr() of a 5,000-digit int, flags
    # taken as switched on, torch's own errors about a group or device
    ({"timeout": 10**400}, "timeout must be a number of seconds in (0, 1e+07] (None: the process group's "
                           "own), got 1000000000000000000000000000000000000000..."),
    ({"recv_ahead": -10**5000}, "recv_ahead must be None or an integer >= 0, got an integer of about 5001"),
    ({"record": "yes"}, "record must be True or False, got 'yes'"),
    ({"record_memory": 1}, "record_memory must be True or False, got 1"),
    ({"link_groups": "x"}, "link_groups must be True or False, got 'x'"),
    ({"group": 5}, "group must be a torch.distributed ProcessGroup or None (the default group), got int 5"),
    ({"device": 5}, "device must name a torch device this machine has, such as 'cpu' or 'cuda:0', got 5"),
])
def test_bad_runner_arguments_are_one_line(kwargs, message):
    with pytest.raises((ArgumentError, PlanMismatchError)) as err:
        _runner(**kwargs)
    assert message in str(err.value) and "\n" not in str(err.value)


def test_numpy_bools_are_flags_as_a_problems_split_takes_them():
    runner = _runner(record=np.True_, record_memory=np.True_, link_groups=np.False_)
    runner.step(*batch(2))
    assert runner.record is True and [s.action for s in runner.timeline] == list(runner.plan.orders[0])
    assert [h.action for h in runner.memory] == list(runner.plan.orders[0])


def test_a_loss_fn_that_is_not_callable_is_one_line_before_any_step():
    """A string loss_fn was taken, and the first step failed with a bare TypeError (other ranks
    then waited for their timeout)."""
    problem = Problem(p=1, m=2)
    stages = split_stages(mlp(2, W), problem, 0)
    with pytest.raises(ArgumentError, match=r"^loss_fn must be callable as loss_fn\(output, target\) or "
                                            r"None, got str 'mse'$"):
        PipelineRunner(baseline_plan("1f1b", problem), stages, "mse")


def test_a_loss_class_without_its_parentheses_is_one_line_before_any_step():
    """nn.MSELoss takes two positional arguments, so the class passed the arity check, and the first
    step failed on the last rank with torch's "Boolean value of Tensor ... is ambiguous", its peers
    waiting (found by an acceptance tester). An instance is taken."""
    problem = Problem(p=1, m=2)
    plan = baseline_plan("1f1b", problem)
    with pytest.raises(ArgumentError, match=r"^loss_fn must be callable as loss_fn\(output, target\) or "
                                            r"None, got the class MSELoss: give an instance \(MSELoss\(\)\)"):
        PipelineRunner(plan, split_stages(mlp(2, W), problem, 0), nn.MSELoss)
    PipelineRunner(plan, split_stages(mlp(2, W), problem, 0), nn.MSELoss())


def test_a_group_this_rank_is_not_in_is_named_so():
    """new_group([0, 1]) returns the int -100 on rank 2, which read "group must be a ProcessGroup or
    None, got int -100" (found by an acceptance tester)."""
    problem = Problem(p=1, m=2)
    with pytest.raises(ArgumentError, match=r"^group: this rank is not in the group it passed \(new_group "
                                            r"returns GroupMember.NON_GROUP_MEMBER, -100"):
        PipelineRunner(baseline_plan("1f1b", problem), split_stages(mlp(2, W), problem, 0), mlp_loss,
                       group=torch.distributed.GroupMember.NON_GROUP_MEMBER)


def test_callbacks_of_the_wrong_arity_are_one_line_before_any_step():
    """A one-argument loss_fn or a grads_ready taking nothing failed with Python's own TypeError in
    the first step (on the last stage's rank, the others waiting for their timeout)."""
    problem = Problem(p=1, m=2)
    plan = baseline_plan("1f1b", problem)
    with pytest.raises(ArgumentError, match=r"^loss_fn must be callable as loss_fn\(output, target\) or "
                                            r"None, but <lambda>\(out\) cannot be: too many positional"):
        PipelineRunner(plan, split_stages(mlp(2, W), problem, 0), lambda out: out.sum())
    with pytest.raises(ArgumentError, match=r"^grads_ready must be callable as grads_ready\(params\), .* "
                                            r"but <lambda>\(\) cannot be: too many positional"):
        PipelineRunner(plan, split_stages(mlp(2, W), problem, 0), mlp_loss, grads_ready=lambda: None)
    PipelineRunner(plan, split_stages(mlp(2, W), problem, 0), nn.MSELoss())  # a module: taken


def test_a_problem_in_place_of_a_plan_is_one_line():
    problem = Problem(p=1, m=2)
    with pytest.raises(ArgumentError, match="PipelineRunner needs a Plan"):
        PipelineRunner(problem, split_stages(mlp(2, W), problem, 0), mlp_loss)


@pytest.mark.parametrize("x, target, message", [
    (torch.randn(0, W), torch.randn(0, W), "the input batch of 0 does not split into the plan's m = 2 equal, "
                                           "non-empty microbatches"),
    (torch.tensor(1.0), torch.randn(8, W), "the input is a 0-d tensor"),
    ({"x": torch.randn(8, W)}, torch.randn(8, W), "the input must be a tensor or a tuple of tensors, got"),
    (torch.randn(8, W), {"y": torch.randn(8, W)}, "the target must be a tensor or a tuple of tensors (or"),
    (torch.randn(8, W, requires_grad=True), torch.randn(8, W), "the input requires grad"),
    ((), torch.randn(8, W), "the input is an empty tuple"),
])
def test_batches_without_a_batch_dimension_to_cut_are_one_line(x, target, message):
    with pytest.raises(PlanMismatchError) as err:
        _runner().step(x, target)
    assert message in str(err.value)


def test_the_first_calls_batch_sizes_count_samples_of_a_tuples_entries():
    """What the ranks compare at their first call: a tuple's samples (its entries' common length), not
    its number of entries, so tuple batches of other sizes on two ranks are told apart."""
    from schedc.runtime.batches import batch_sizes

    pair = (torch.zeros(8, 3), torch.zeros(8, 5))
    assert batch_sizes(pair, None) == (8, None) and batch_sizes(None, pair) == (None, 8)
    assert batch_sizes(torch.zeros(6, 2), [0] * 6) == (6, 6)


def test_a_tuple_target_is_cut_entry_by_entry():
    def weighted(out, target):
        y, w = target
        return (functional.mse_loss(out, y, reduction="none").mean(1) * torch.as_tensor(w)).mean()

    problem = Problem(p=1, m=2)
    layers = mlp(2, W)
    runner = PipelineRunner(baseline_plan("1f1b", problem), split_stages(layers, problem, 0), weighted)
    x, y = batch()
    ref = reference_grads(layers, x, y, 2)
    loss = runner.step(x, (y, torch.ones(8)))  # weights of 1: the plain mean loss
    with torch.no_grad():
        torch.testing.assert_close(loss, functional.mse_loss(nn.Sequential(*layers)(x), y))
    for got, want in zip(grads_of(layers), ref, strict=True):
        torch.testing.assert_close(got, want)
    with pytest.raises(PlanMismatchError, match=r"the target's entries have batches of \[8, 4\]"):
        runner.step(x, (y, torch.ones(4)))
    for layer in layers:
        layer.zero_grad()
    runner.step(x, (y, np.ones(8, dtype=np.float32)))  # an array entry is cut as a tensor is
    for got, want in zip(grads_of(layers), ref, strict=True):
        torch.testing.assert_close(got, want)


@pytest.mark.parametrize("target", [torch.randn(16, W), list(range(16)), np.zeros(16), tuple(range(16)),
                                    (torch.randn(16, W), np.ones(16))])
def test_a_target_of_another_batch_size_is_one_line_whatever_its_type(target):
    """Cut into m pieces it would pair each microbatch with the wrong samples (a loss such as MSE
    broadcasts silently), whether a tensor, a list, a numpy array or a tuple of either."""
    with pytest.raises(PlanMismatchError, match="the target batch of 16 does not match the input batch of 8"):
        _runner().step(torch.randn(8, W), target)


@pytest.mark.parametrize("labels", [tuple(range(8)), list("abcdefgh"), np.arange(8),
                                    tuple((k, k / 2) for k in range(8))])  # per-sample pairs, not entries
def test_a_target_of_labels_is_cut_as_samples(labels):
    seen = []

    def count(out, target):
        seen.append(list(target))
        return out.mean()

    problem = Problem(p=1, m=2)
    PipelineRunner(baseline_plan("1f1b", problem), split_stages(mlp(2, W), problem, 0), count).step(
        torch.randn(8, W), labels)
    assert seen == [list(labels[:4]), list(labels[4:])]


def test_a_loss_that_does_not_require_grad_is_one_line():
    problem = Problem(p=1, m=2)
    runner = PipelineRunner(baseline_plan("1f1b", problem), split_stages(mlp(2, W), problem, 0),
                            lambda out, y: mlp_loss(out, y).detach())
    with pytest.raises(PlanMismatchError, match=r"^rank 0: loss_fn returned a loss that does not require"):
        runner.step(*batch())


@pytest.mark.parametrize("loss_fn", [nn.MSELoss(reduction="none"), lambda out, y: mlp_loss(out, y).item(),
                                     lambda out, y: (mlp_loss(out, y), {"loss": 0.0})])
def test_a_loss_that_is_not_one_number_is_one_line_naming_the_rank(loss_fn):
    """As every runtime error does, so that the lines of several ranks tell whose is whose."""
    problem = Problem(p=1, m=2)
    runner = PipelineRunner(baseline_plan("1f1b", problem), split_stages(mlp(2, W), problem, 0), loss_fn)
    says = r"^rank 0: loss_fn must return one number per microbatch"
    with pytest.raises(PlanMismatchError, match=says) as e:
        runner.step(*batch())
    assert ("Megatron's (loss, metrics) form" in str(e.value)) == ("got tuple" in str(e.value))


def test_tied_copies_of_another_shape_on_one_rank_are_one_line():
    problem = Problem(p=1, m=2, v=2)
    stages = split_stages(mlp(2, W), problem, 0)
    tie = [(0, "0.weight"), (1, "0.bias")]
    message = r"tie 0's copies differ in shape or dtype: stage 0 '0.weight' \(8, 8\) torch.float32, stage 1"
    with pytest.raises(PlanMismatchError, match=message):
        PipelineRunner(baseline_plan("looped-bfs", problem), stages, mlp_loss, ties=[tie])


class Whole(nn.Module):
    def __init__(self) -> None:
        super().__init__()
        self.body = nn.Sequential(*mlp(2, W))

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return self.body(x)


@pytest.mark.parametrize("call, message", [
    (lambda p: split_stages(mlp(4, W), baseline_plan("1f1b", p), 0), "split_stages needs the plan's Problem"),
    (lambda p: split_stages(Whole(), p, 0), "layers must be an nn.Sequential, an nn.ModuleList or a list of"),
    (lambda p: split_stages(mlp(4, W), p, "0"), "rank '0' is outside the plan's 2 ranks"),
    (lambda p: split_stages(mlp(4, W), p, 0, bounds=[(0, 3), (4, 8)]), CUT),
    (lambda p: split_stages(mlp(4, W), p, 0, bounds=[(0, 5), (3, 8)]), CUT),
    (lambda p: split_stages(mlp(4, W), p, 0, bounds=[(0, 2), (2, 4)]), CUT),
    (lambda p: split_stages(mlp(4, W), p, 0, bounds=[(0, 0), (0, 8)]), CUT),
    (lambda p: split_stages(mlp(4, W), p, 0, bounds=[4, 8]), "a list of (start, end) integer pairs"),
    (lambda p: stage_bounds(4, 0), "stage_bounds needs integer counts of layers and (>= 1) stages"),
])
def test_cutting_a_model_wrongly_is_one_line(call, message):
    with pytest.raises((ArgumentError, PlanMismatchError)) as err:
        call(Problem(p=2, m=2))
    assert message in str(err.value)


def test_given_bounds_that_cover_the_layers_are_kept():
    stages = split_stages(mlp(4, W), Problem(p=2, m=2), 1, bounds=[(0, 3), (3, 8)])
    assert len(stages[1]) == 5


@pytest.mark.parametrize("layers", [nn.ModuleList(mlp(4, W)), nn.Sequential(*mlp(4, W)), iter(mlp(4, W))])
def test_layers_may_be_any_sequence_or_iterable_of_modules_and_indices_numpy_ints(layers):
    stages = split_stages(layers, Problem(p=2, m=2), np.int64(1), bounds=[(0, np.int64(3)), (3, 8)])
    assert list(stages) == [1] and len(stages[1]) == 5


# ---- profiling: arguments that would give a wrong profile or a traceback -------------------------


def _profile_stages(problem: Problem) -> list[nn.Module]:
    return [split_stages(mlp(2, W), problem, r)[r] for r in range(problem.p)]


@pytest.mark.parametrize("kwargs, message", [
    ({"unit": 1.0}, "unit = 1 s is coarser than every stage's forward"),
    ({"unit": 0}, "unit must be a finite number of seconds > 0, got 0"),
    ({"unit": float("nan")}, "unit must be a finite number of seconds > 0, got nan"),
    ({"comm": -1.0}, "comm must be a finite number of seconds >= 0, got -1.0"),
    ({"repeats": 0}, "--repeats must be an integer >= 1, got 0"),
])
def test_profile_arguments_that_would_mislead_are_one_line(kwargs, message):
    problem = Problem(p=2, m=2)
    args = {"comm": 0.0, "repeats": 1, **kwargs}
    with pytest.raises(ProblemError) as err:
        profile_problem(_profile_stages(problem), torch.randn(4, W), problem, loss_fn=mlp_loss,
                        target=torch.randn(4, W), **args)
    assert str(err.value).startswith(message)


def test_profile_takes_a_module_list_and_checks_stages_warmup_and_the_loss():
    problem = Problem(p=2, m=2)
    stages = _profile_stages(problem)
    x, y = torch.randn(4, W), torch.randn(4, W)
    measured = profile_problem(nn.ModuleList(stages), x, problem, loss_fn=mlp_loss, target=y, comm=0.0,
                               repeats=1)
    assert len(measured.problem.stage_costs) == 2
    with pytest.raises(ArgumentError, match=r"stages must be a list of every stage's nn\.Module"):
        time_stages(dict(enumerate(stages)), x, mlp_loss, y, repeats=1)
    with pytest.raises(ProblemError, match="warmup must be an integer >= 0, got -1"):
        time_stages(stages, x, mlp_loss, y, repeats=1, warmup=-1)
    with pytest.raises(ProblemError, match="loss_fn must return a scalar tensor that requires grad"):
        time_stages(stages, x, lambda out, t: functional.mse_loss(out, t, reduction="none"), y, repeats=1)
    with pytest.raises(ProblemError, match="repeats must be an integer >= 1, got 0"):
        measure_p2p(TensorMeta((4, W), torch.float32), repeats=0)


def test_a_target_that_requires_grad_is_one_line():
    teacher = nn.Linear(W, W)
    x, _ = batch()
    with pytest.raises(PlanMismatchError, match="the target requires grad, but the runner gives the target"):
        _runner().step(x, teacher(x))


def test_the_shape_finding_forward_names_an_in_place_op_on_the_stage_input():
    """It runs with autograd on now, as the real forward does, and says the same thing."""
    from schedc.runtime.shape_probe import output_metas

    stage = nn.Sequential(nn.ReLU(inplace=True), nn.Linear(W, W))
    with pytest.raises(PlanMismatchError, match=r"^stage 1 modifies its input in place \(e\.g\. ReLU"):
        output_metas(stage, (TensorMeta((2, W), torch.float32),), torch.device("cpu"), 1)
    assert output_metas(stage, (TensorMeta((2, W), torch.float32),), torch.device("cpu"), 0) == (
        TensorMeta((2, W), torch.float32),)  # stage 0's input needs no gradient, as in the real forward


def _wrapped_in_ddp(_rank: int, _world: int) -> list[str]:
    from schedc.runtime.errors import PlanMismatchError as Mismatch

    problem = Problem(p=1, m=2)
    layers = mlp(2, W)
    said = []
    for stage in (nn.parallel.DistributedDataParallel(nn.Sequential(*layers)),
                  nn.Sequential(nn.parallel.DistributedDataParallel(layers[0]), *layers[1:])):
        try:
            PipelineRunner(baseline_plan("1f1b", problem), {0: stage}, mlp_loss)
            said.append("no error")
        except Mismatch as err:
            said.append(str(err))
    return said


def test_a_stage_wrapped_in_ddp_is_refused_in_one_line():
    """DDP would all-reduce once per microbatch backward (twice per microbatch in a split plan);
    dp_group= averages once per step."""
    from schedc.runtime.launch import run_local

    [said] = run_local(_wrapped_in_ddp, 1)
    for line in said:  # the stage itself wrapped, or a layer inside it
        assert "stages [0] are or hold modules wrapped in DistributedDataParallel: pass the bare modules " \
               "and dp_group=" in line and "\n" not in line, line


@pytest.mark.parametrize("entry", [5, None])
def test_a_tuple_batch_with_an_entry_that_has_no_batch_dimension_is_one_line(entry):
    """Its length was taken first: a bare TypeError ("object of type 'int' has no len()")."""
    x, y = batch()
    with pytest.raises(PlanMismatchError, match=r"^rank 0: the input must be a tensor or a tuple of tensors, "
                                                r"got (int|NoneType)$"):
        _runner().step((x, entry), target=y)


def test_a_complex_loss_is_one_line_naming_the_rank():
    """autograd's "grad can be implicitly created only for real scalar outputs" came through bare."""
    problem = Problem(p=1, m=2)
    runner = PipelineRunner(baseline_plan("1f1b", problem), split_stages(mlp(2, W), problem, 0),
                            lambda out, y: mlp_loss(out, y).to(torch.complex64))
    with pytest.raises(PlanMismatchError, match=r"^rank 0: loss_fn must return a real number per microbatch, "
                                                r"got a torch.complex64 one"):
        runner.step(*batch())


@pytest.mark.parametrize(("args", "message"), [
    ((10**400,), "max_norm must be a number >= 0 that a float holds, got 10000000000000"),
    ((1.0, 10**400), "norm_type must be a number > 0 that a float holds, got 10000000000000"),
    (("x" * 100_000,), "max_norm must be a number >= 0, got 'xxxxxxxx"),
])
def test_clip_arguments_a_float_cannot_hold_are_one_short_line(args, message):
    from schedc.runtime import clip_grad_norm_

    runner = _runner()
    runner.step(*batch())
    with pytest.raises(ArgumentError) as err:
        clip_grad_norm_(runner, *args)
    assert str(err.value).startswith(message) and len(str(err.value)) < 120


def test_stage_bounds_of_a_model_instead_of_a_count_is_one_short_line():
    """The message quoted the model's whole repr (29,477 characters for 500 layers)."""
    with pytest.raises(ArgumentError) as err:
        stage_bounds(nn.Sequential(*[nn.Linear(1, 1) for _ in range(500)]), 2)
    assert str(err.value).startswith("stage_bounds needs integer counts of layers and (>= 1) stages, got "
                                     "Sequential(") and len(str(err.value)) < 150


def test_a_flattened_target_gets_the_ways_that_work():
    """A (B*T,) target beside a (B, ...) input is refused (cut by samples it would misalign with a
    loss of another reading); the message now names the two forms that work."""
    says = r"target batch of 24 does not match the input batch of 8 \(a target flattened to 8 samples x 3"
    with pytest.raises(PlanMismatchError, match=says):
        _runner().step(torch.randn(8, W), torch.zeros(24))
    for x, target in ((8, 20), (0, 8), (8, 0)):  # the empty ones: no hint, and no ZeroDivisionError
        says = rf"batch of {target} does not match the input batch of {x}$"
        with pytest.raises(PlanMismatchError, match=says):
            _runner().step(torch.randn(x, W), torch.zeros(target))
