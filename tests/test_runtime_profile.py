# sed -i '17s/load <= cores - threads + 0.5/load < cores/' schedc/profile_busy.py
# sed -i '28s/max(cores - 2, 0)/cores - 2/' schedc/profile_busy.py
"""Profiling closes the loop: measured stage costs and latency become a problem file that the
schedc CLI reads back."""

from __future__ import annotations

from dataclasses import replace
from fractions import Fraction

import pytest
import torch
from torch import nn

from schedc.errors import ArgumentError, ProblemError
from schedc.problem import Problem, StageCost
from schedc.problem_io import problem_from_dict, problem_toml, read_problem_file
from schedc.runtime import profile, split_stages
from schedc.runtime.launch import run_local
from schedc.runtime.message_costs import _exchange
from schedc.runtime.models import mlp, mlp_loss
from schedc.runtime.profile import (
    MessageCalls,
    StageTimes,
    _boundary_tensors,
    as_fused,
    measure_message_calls,
    measure_p2p,
    profile_problem,
    time_stages,
    with_message_calls,
)
from schedc.runtime.shapes import TensorMeta


def _stages(problem):
    layers = mlp(problem.num_stages, 8)
    placed = {s: m for r in range(problem.p) for s, m in split_stages(layers, problem, r).items()}
    return [placed[s] for s in range(problem.num_stages)]


def test_stage_times_are_measured_per_stage_and_leave_no_gradients():
    stages = _stages(Problem(p=3, m=1))
    times = time_stages(stages, torch.randn(4, 8), mlp_loss, torch.randn(4, 8), repeats=2, warmup=1)
    assert len(times) == 3
    assert all(t.tf > 0 and t.tb > 0 and t.tw > 0 for t in times)
    assert all(p.grad is None for s in stages for p in s.parameters())


def test_only_the_model_first_stage_skips_its_input_gradient(monkeypatch):
    """As in the runner, the model's first stage computes no input gradient in I; a later stage
    timed alone (``first=False``) does, as it does in the pipeline."""
    import schedc.runtime.profile as profile

    seen, original = [], profile.backward_input

    def recording(outputs, grads, inputs, params):
        seen.append(len(inputs))
        return original(outputs, grads, inputs, params)

    monkeypatch.setattr(profile, "backward_input", recording)
    stages = _stages(Problem(p=2, m=1))
    time_stages(stages, torch.randn(4, 8), mlp_loss, torch.randn(4, 8), repeats=1, warmup=0)
    assert seen == [1, 0]  # backward order: stage 1 differentiates its input, stage 0 does not
    seen.clear()
    time_stages(stages[1:], torch.randn(4, 8), mlp_loss, torch.randn(4, 8), repeats=1, warmup=0, first=False)
    assert seen == [1]


def test_message_calls_are_charged_to_the_actions_whose_messages_cross_ranks():
    problem = Problem(p=2, m=2, v=2, placement="vshape", split=True)  # ranks of stages: 0 1 1 0
    base = [StageTimes(1.0, 2.0, 3.0)] * 4
    out = with_message_calls(problem, base, MessageCalls(send=0.1, recv=0.01))
    assert out[0] == StageTimes(1.1, 2.01, 3.0)  # F sends to stage 1; I receives its gradient
    assert out[1] == StageTimes(1.01, 2.1, 3.0)  # F receives from stage 0; I sends to it
    assert out[2] == StageTimes(1.1, 2.01, 3.0)  # stage 1 -> 2 is local; 2 -> 3 crosses
    assert out[3] == StageTimes(1.01, 2.1, 3.0)


def test_message_calls_are_measured_on_two_gloo_ranks():
    calls = measure_message_calls(TensorMeta((4, 8), torch.float32), repeats=3)
    assert calls.send > 0 and calls.recv > 0


def test_profiled_problem_keeps_the_structure_and_round_trips_through_toml(tmp_path):
    problem = Problem(p=2, m=6, v=2, placement="vshape", split=False, mem=(3, 4), w_mem=Fraction(1, 3))
    prof = profile_problem(_stages(problem), torch.randn(4, 8), problem, loss_fn=mlp_loss,
                           target=torch.randn(4, 8), comm=2.5e-5, repeats=2)
    measured = prof.problem
    assert replace(measured, stage_costs=None, tf=1, tb=1, tw=1, comm=0) == replace(
        problem, stage_costs=None, tf=1, tb=1, tw=1, comm=0)
    assert measured.comm == 25 and len(measured.stage_costs) == 4
    assert all(c.tf >= 1 and c.tb >= 1 and c.tw >= 0 for c in measured.stage_costs)
    path = tmp_path / "p.toml"
    path.write_text(problem_toml(measured, "a comment"))
    assert problem_from_dict(read_problem_file(str(path))) == measured
    mixed = replace(measured, mem=(3, None))  # TOML has no null: the uncapped rank is "none"
    path.write_text(problem_toml(mixed))
    assert problem_from_dict(read_problem_file(str(path))) == mixed
    with pytest.raises(ProblemError, match="3 stages given"):
        profile_problem(_stages(problem)[:3], torch.randn(4, 8), problem, comm=0.0)
    with pytest.raises(ProblemError, match=r"the example microbatch has no samples \(shape \(0, 8\)\)"):
        profile_problem(_stages(problem), torch.randn(0, 8), problem, comm=0.0)  # all bytes read 0


def _swap_pair(rank: int, _world: int) -> list:
    """Rank r sends (r, 10 r as int64) and gets its peer's pair: the exchange moves every tensor."""
    pair = [torch.full((3,), float(rank)), torch.full((2, 2), 10 * rank, dtype=torch.int64)]
    out = [torch.empty_like(t) for t in pair]
    for sending in (rank == 0, rank == 1):
        _exchange(pair if sending else out, 1 - rank, sending, None)
    return [t.tolist() for t in out]


class _Pass(nn.Module):
    def forward(self, x: torch.Tensor, ids: torch.Tensor) -> tuple[torch.Tensor, torch.Tensor]:
        return x, ids


def test_a_boundary_of_several_tensors_travels_whole():
    assert run_local(_swap_pair, 2, timeout=90) == [[[1.0] * 3, [[10, 10]] * 2], [[0.0] * 3, [[0, 0]] * 2]]
    metas = (TensorMeta((4, 8), torch.float32), TensorMeta((4,), torch.int64))
    assert measure_p2p(metas, repeats=2) > 0 and measure_p2p(metas[0], repeats=2) > 0
    assert _boundary_tensors(_Pass(), (torch.randn(4, 8), torch.arange(4))) == metas
    calls = measure_message_calls(metas, repeats=2)
    assert calls.send > 0 and calls.recv > 0


def test_fused_times_scale_i_and_w_to_the_whole_backward():
    split = [StageTimes(1.0, 2.0, 2.0), StageTimes(1.0, 3.0, 0.0)]
    fused = [StageTimes(1.2, 3.0, 0.0), StageTimes(1.1, 3.3, 0.0)]
    assert as_fused(split, fused) == [StageTimes(1.0, 1.5, 1.5), StageTimes(1.0, 3.3, 0.0)]


@pytest.mark.parametrize("split", [True, False])
def test_an_unsplit_problem_is_profiled_with_its_whole_backward(monkeypatch, split):
    calls = []

    def timed(stages, example, loss_fn, target, repeats, fused=False, **_):
        calls.append(fused)
        return [StageTimes(1e-3, 3e-3 if fused else 2e-3, 0 if fused else 2e-3)] * len(stages)

    monkeypatch.setattr(profile, "time_stages", timed)
    problem = Problem(p=2, m=2, split=split)
    measured = profile_problem(_stages(problem), torch.randn(4, 8), problem, comm=0.0).problem
    assert calls == ([False] if split else [True, False])  # the whole backward first: it always runs
    expected = StageCost(1000, 2000, 2000) if split else StageCost(1000, 1500, 1500)
    assert measured.stage_costs == (expected, expected)


def test_times_round_to_the_nearest_unit_and_only_a_free_w_costs_nothing(monkeypatch):
    """2.6, 3.4 and 0.4 units round to 3, 3 and 0 (truncating gave 2 for 2.6); F and I cost at least
    one unit, W may cost none (a stage without weights), and that floor is not raised to one."""
    times = [StageTimes(2.6e-6, 3.4e-6, 0.4e-6), StageTimes(0.2e-6, 1e-6, 0.0)]
    monkeypatch.setattr(profile, "time_stages", lambda stages, *a, **k: times)
    problem = Problem(p=2, m=2)
    measured = profile_problem(_stages(problem), torch.randn(4, 8), problem, comm=0.0).problem
    assert measured.stage_costs == (StageCost(round(2.6), round(3.4), round(0.4)), StageCost(1, 1, 0))


def test_a_unit_as_long_as_the_longest_forward_is_fine(monkeypatch):
    """The unit is refused only when coarser than every forward: at exactly the longest one, that
    stage costs one unit and the profile still tells the stages apart."""
    times = [StageTimes(1e-3, 2e-3, 1e-3), StageTimes(0.4e-3, 1e-3, 0.0)]
    monkeypatch.setattr(profile, "time_stages", lambda stages, *a, **k: times)
    problem = Problem(p=2, m=2)
    measured = profile_problem(_stages(problem), torch.randn(4, 8), problem, comm=0.0, unit=1e-3).problem
    assert measured.stage_costs == (StageCost(1, 2, 1), StageCost(1, 1, 0))


def test_gradient_messages_are_charged_their_own_costs(monkeypatch):
    problem = Problem(p=2, m=2)
    out = with_message_calls(problem, [StageTimes(1.0, 2.0, 3.0)] * 2, MessageCalls(send=0.1, recv=0.01),
                             MessageCalls(send=0.2, recv=0.02))
    assert out == [StageTimes(1.1, 2.02, 3.0), StageTimes(1.01, 2.2, 3.0)]
    floats, ids = TensorMeta((4, 8), torch.float32), TensorMeta((4,), torch.int64)
    calls = MessageCalls(0.1, 0.01)
    measured = []
    monkeypatch.setattr(profile, "measure_message_calls",
                        lambda metas, repeats: measured.append(metas) or MessageCalls(0.3, 0.03))
    assert profile._grad_calls((floats,), calls, 1) is calls  # every tensor has a gradient
    assert profile._grad_calls((ids,), calls, 1) == MessageCalls(0.0, 0.0)  # none has
    assert profile._grad_calls((floats, ids), calls, 1) == MessageCalls(0.3, 0.03)
    assert measured == [(floats,)]


@pytest.mark.parametrize("metas", [[], (), None, [(4, 8)], "x"])
def test_a_boundary_must_be_tensor_metas(metas):
    with pytest.raises(ArgumentError, match="a boundary must be a TensorMeta or a non-empty list of them"):
        measure_p2p(metas)


def test_profile_notes_a_busy_machine_when_torch_runs_several_threads():
    """Several torch threads on cores other work keeps busy timed a layer 30 ms against 0.17 ms; a
    load of 1.9 on 2 cores, below the cores' count the note first waited for, a transformer 90 times
    slower, unnoted."""
    from schedc.profile_busy import busy_note

    note = busy_note(2, 4.0, 2)
    assert note is not None and "load average 4.0 on 2 cores, fewer idle than torch's 2 threads" in note
    assert "--threads 1" in note
    assert busy_note(1, 4.0, 2) is None  # one thread has nothing to wait for
    assert busy_note(2, 0.5, 2) is None and busy_note(2, None, 2) is None  # idle, or no load average
    assert busy_note(2, 0.51, 2) is not None and busy_note(2, 1.9, 2) is not None  # half a core in use
    assert busy_note(8, 8.5, 16) is None and busy_note(8, 8.6, 16) is not None  # 7.4 cores idle for 8


def test_profile_notes_a_busy_machine_for_the_latency_whatever_the_threads():
    """The P2P ping-pong's two processes waited for a core: 2-4 ms one way against 50 us, with one
    torch thread too, unnoted."""
    from schedc.profile_busy import p2p_busy_note

    note = p2p_busy_note(1.9, 2)
    assert note is not None and note.startswith("this machine is busy (load average 1.9 on 2 cores)")
    assert note.endswith("--comm T gives it instead")
    assert p2p_busy_note(0.5, 2) is None and p2p_busy_note(None, 2) is None
    assert p2p_busy_note(14.5, 16) is None and p2p_busy_note(14.6, 16) is not None
    assert p2p_busy_note(0.0, 1) is None and p2p_busy_note(3.0, 1) is not None  # one core: "busy" when idle
