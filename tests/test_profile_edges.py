# sed -i '131s/ or not loss.requires_grad//' runtime/profile.py
# sed -i '165s/s.tb + s.tw > 0/s.tb + s.tw >= 0/' runtime/profile.py
# sed -i '218s/len(stages) != problem.num_stages/len(stages) < problem.num_stages/' runtime/profile.py
# sed -i '223s/ and not isinstance(value, bool)//' runtime/profile.py
# sed -i '232s/example\[0\] if/example[-1] if/' runtime/profile.py
# sed -i '233s/first.dim() > 0/first.dim() > 1/' runtime/profile.py
# sed -i '242s/0 < longest < unit/0 <= longest < unit/' runtime/profile.py
# sed -i '288s/_units(t.tb, unit, 1)/_units(t.tb, unit, 0)/' runtime/profile.py
# sed -i '290s/_units(comm, unit, 0)/_units(comm, unit, 1)/' runtime/profile.py
# sed -i '293s/split=problem.split/split=True/' runtime/profile.py
# sed -i '280s/len(stages) > 1 and problem.p > 1/len(stages) > 1 or problem.p > 1/' runtime/profile.py
# sed -i '283s/_grad_calls(metas, calls, repeats)/calls/' runtime/profile.py
"""Edges of ``profile_problem`` and its helpers that the other profile tests pass through without
looking: a loss that needs no gradient, fused scaling of a stage with no backward time, stage counts,
boolean and empty arguments, rounding floors, the held bytes of an unsplit problem, a single rank,
a tuple example and a boundary with integer tensors."""

from __future__ import annotations

import pytest
import torch
from torch import nn

import schedc.runtime.profile as profile
from schedc.errors import ArgumentError, ProblemError
from schedc.problem import Problem, StageCost
from schedc.runtime import split_stages
from schedc.runtime.activation_bytes import StageBytes
from schedc.runtime.errors import PlanMismatchError
from schedc.runtime.models import mlp, mlp_loss
from schedc.runtime.profile import MessageCalls, StageTimes, as_fused, profile_problem, time_stages


def _stages(problem: Problem) -> list[nn.Module]:
    layers = mlp(problem.num_stages, 8)
    placed = {s: m for r in range(problem.p) for s, m in split_stages(layers, problem, r).items()}
    return [placed[s] for s in range(problem.num_stages)]


def test_a_loss_that_needs_no_gradient_is_a_one_line_error() -> None:
    """A loss computed under no_grad (or a constant) has nothing to differentiate: refused by name
    rather than timed as an empty backward or failing inside autograd."""
    stages = _stages(Problem(p=2, m=2))

    def detached(out: torch.Tensor, target: torch.Tensor) -> torch.Tensor:
        return mlp_loss(out, target).detach()

    with pytest.raises(ProblemError, match="loss_fn must return a scalar tensor that requires grad"):
        time_stages(stages, torch.randn(4, 8), detached, torch.randn(4, 8), repeats=1, warmup=0)


def test_fused_scaling_keeps_a_stage_with_no_split_backward_time() -> None:
    """tb + tw of 0 (a clock too coarse to see them) has no ratio to scale: kept as measured (scale
    one), not divided by zero."""
    assert as_fused([StageTimes(1.0, 0.0, 0.0)], [StageTimes(1.0, 0.5, 0.0)]) == [StageTimes(1.0, 0.0, 0.0)]


def test_no_stages_and_too_many_stages_are_refused() -> None:
    """An empty list has no first stage to time; five stages for a problem of four would price a
    stage the plan does not have."""
    with pytest.raises(ArgumentError, match=r"stages must be a list of every stage's nn\.Module"):
        time_stages([], torch.randn(4, 8), repeats=1, warmup=0)
    problem = Problem(p=2, m=2, v=2)
    stages = _stages(Problem(p=1, m=2, v=5))
    with pytest.raises(ProblemError, match="5 stages given for a problem of p\\*v = 4"):
        profile_problem(stages, torch.randn(4, 8), problem, comm=0.0, repeats=1)


@pytest.mark.parametrize("name", ["comm", "unit"])
def test_a_boolean_comm_or_unit_is_refused(name: str) -> None:
    """True is a Real equal to 1: taken as one second it would set the latency (or the unit)
    silently; it is a flag's value, not a number of seconds."""
    problem = Problem(p=2, m=2)
    args = {"comm": 0.0, name: True}
    with pytest.raises(ProblemError, match=f"{name} must be a finite number of seconds"):
        profile_problem(_stages(problem), torch.randn(4, 8), problem, repeats=1, **args)


def test_a_one_dimensional_example_of_no_samples_is_refused() -> None:
    """A batch of token ids or scalars per sample is one-dimensional: shape (0,) has no samples
    either, and its timings would be overhead only."""
    problem = Problem(p=1, m=2)
    with pytest.raises(ProblemError, match=r"the example microbatch has no samples \(shape \(0,\)\)"):
        profile_problem([nn.Identity()], torch.randn(0), problem, comm=0.0, repeats=1)


def test_stages_too_fast_for_the_clock_are_not_called_coarse(monkeypatch: pytest.MonkeyPatch) -> None:
    """Forwards measured as 0 s (a clock coarser than them) say nothing against the unit: the unit
    is refused only when some forward took longer than 0 s yet all are shorter than it."""
    times = [StageTimes(0.0, 1e-6, 0.0)] * 2
    monkeypatch.setattr(profile, "time_stages", lambda stages, *a, **k: times)
    problem = Problem(p=2, m=2)
    measured = profile_problem(_stages(problem), torch.randn(4, 8), problem, comm=0.0).problem
    assert measured.stage_costs == (StageCost(1, 1, 0), StageCost(1, 1, 0))  # the one-unit floors


def test_an_input_gradient_under_half_a_unit_still_costs_one(monkeypatch: pytest.MonkeyPatch) -> None:
    """I always does work (tb > 0 in the model): 0.3 units round to 0, and the floor of one unit
    applies to tb as to tf; only W may cost nothing."""
    times = [StageTimes(5e-6, 0.3e-6, 0.3e-6)] * 2
    monkeypatch.setattr(profile, "time_stages", lambda stages, *a, **k: times)
    problem = Problem(p=2, m=2)
    measured = profile_problem(_stages(problem), torch.randn(4, 8), problem, comm=0.0).problem
    assert measured.stage_costs == (StageCost(5, 1, 0), StageCost(5, 1, 0))


def test_a_latency_under_half_a_unit_costs_nothing() -> None:
    """comm may be 0 (ranks on one machine, or given as 0): no floor of one unit as for F and I."""
    problem = Problem(p=2, m=2)
    for comm in (0.0, 0.3e-6):
        prof = profile_problem(_stages(problem), torch.randn(4, 8), problem, loss_fn=mlp_loss,
                               target=torch.randn(4, 8), comm=comm, repeats=1)
        assert prof.problem.comm == 0


def test_an_unsplit_problem_holds_everything_until_b() -> None:
    """Without split, B frees all of a microbatch at once: what a stage holds after I is what it
    held after F. Measured as if split, stage 0 (fed the batch, so W runs the whole backward) would
    report its output's gradient on top."""
    problem = Problem(p=2, m=2, split=False)
    x, y = torch.randn(4, 8), torch.randn(4, 8)
    held = profile_problem(_stages(problem), x, problem, loss_fn=mlp_loss, target=y, comm=0.0,
                           repeats=1).activation_bytes
    assert len(held) == 2 and all(b.after_input == b.forward > 0 for b in held)
    split = Problem(p=2, m=2, split=True)
    held = profile_problem(_stages(split), x, split, loss_fn=mlp_loss, target=y, comm=0.0,
                           repeats=1).activation_bytes
    assert held[0] == StageBytes(4 * 8 * 4, 2 * 4 * 8 * 4)  # Tanh's output, then also its gradient


def test_one_rank_measures_no_latency() -> None:
    """p = 1 sends no message whatever v is: no latency to measure (and no local processes to
    start), so comm is 0 and no message calls are charged."""
    problem = Problem(p=1, m=2, v=2)
    prof = profile_problem(_stages(problem), torch.randn(4, 8), problem, loss_fn=mlp_loss,
                           target=torch.randn(4, 8), repeats=1)
    assert prof.comm_seconds == 0 and prof.problem.comm == 0
    assert prof.message_calls is None and prof.grad_message_calls is None



class _Tempered(nn.Module):
    """A first stage fed a tuple: the batch, then a 0-d tensor applied to every sample (a temperature)."""

    def __init__(self) -> None:
        super().__init__()
        self.lin = nn.Linear(8, 8)

    def forward(self, x: torch.Tensor, scale: torch.Tensor) -> torch.Tensor:
        return self.lin(x) * scale


def test_a_tuple_example_is_judged_by_its_first_tensor() -> None:
    """The samples are counted on the batch, the tuple's first tensor: a batch of no samples is
    refused even when a later tensor is a 0-d scalar that has no sample dimension to look at."""
    problem = Problem(p=1, m=2)
    with pytest.raises(ProblemError, match=r"the example microbatch has no samples \(shape \(0, 8\)\)"):
        profile_problem([_Tempered()], (torch.randn(0, 8), torch.tensor(0.5)), problem, comm=0.0, repeats=1)


class _WithIds(nn.Module):
    """A first stage whose boundary is its hidden state and the samples' integer ids."""

    def __init__(self) -> None:
        super().__init__()
        self.lin = nn.Linear(8, 8)

    def forward(self, x: torch.Tensor) -> tuple[torch.Tensor, torch.Tensor]:
        return self.lin(x), torch.arange(x.shape[0])


class _TakesIds(nn.Module):
    def __init__(self) -> None:
        super().__init__()
        self.lin = nn.Linear(8, 8)

    def forward(self, h: torch.Tensor, ids: torch.Tensor) -> torch.Tensor:
        return self.lin(h) + ids[:, None]


def test_gradient_messages_of_a_boundary_with_integers_cost_their_own_calls(
        monkeypatch: pytest.MonkeyPatch) -> None:
    """The gradient of a (hidden, ids) boundary carries only the hidden state: I's message calls
    are those measured on the float tensor alone (here half of the whole boundary's), not the
    forward message's. Calls cost 2 and 1 us per tensor sent and received."""
    monkeypatch.setattr(profile, "time_stages", lambda stages, *a, **k: [StageTimes(5e-6, 5e-6, 5e-6)] * 2)
    monkeypatch.setattr(profile, "measure_p2p", lambda metas, repeats: 1e-5)
    monkeypatch.setattr(profile, "measure_message_calls",
                        lambda metas, repeats: MessageCalls(send=2e-6 * len(metas), recv=1e-6 * len(metas)))
    problem = Problem(p=2, m=2, split=True)
    prof = profile_problem([_WithIds(), _TakesIds()], torch.randn(4, 8), problem, repeats=1)
    assert prof.message_calls == MessageCalls(4e-6, 2e-6)
    assert prof.grad_message_calls == MessageCalls(2e-6, 1e-6)
    # stage 0: F sends the boundary (4), I receives the gradient (1); stage 1: F receives (2), I sends (2)
    assert prof.problem.stage_costs == (StageCost(9, 6, 5), StageCost(7, 7, 5))
    assert prof.problem.comm == 10


class _WithNone(nn.Module):
    """Returns a tensor and None: no boundary the runner can send."""

    def __init__(self) -> None:
        super().__init__()
        self.lin = nn.Linear(8, 8)

    def forward(self, x: torch.Tensor) -> tuple[torch.Tensor, None]:
        return self.lin(x), None


def test_a_stage_output_of_the_wrong_kind_names_its_stage() -> None:
    """It said "an output must be a tensor or a tuple ..., got Tensor, NoneType", naming no stage:
    the runner's own words, with the stage, now."""
    stages = [nn.Linear(8, 8), _WithNone(), nn.Linear(8, 8)]
    with pytest.raises(PlanMismatchError, match=r"^the output of stage 1 must be a tensor or a tuple"):
        time_stages(stages, torch.randn(4, 8), repeats=1, warmup=0)


def test_an_unsplit_profile_times_a_backward_that_cannot_split_whole():
    """A reentrant checkpoint trains in unsplit plans, but profiling timed I and W apart for the I : W
    ratio and failed ("the model fails on the example"): an unsplit profile now times the whole
    backward alone; a split one still fails, its plans could not train the model."""
    from tests.test_runtime_backward_errors import Reentrant

    stages = [nn.Linear(4, 4), Reentrant()]
    example = torch.randn(2, 4)
    measured = profile_problem(stages, example, Problem(p=2, m=4, split=False), comm=0.0, repeats=1)
    assert not measured.problem.split and all(c.tb > c.tw for c in measured.problem.stage_costs)
    with pytest.raises(RuntimeError, match="use_reentrant=True"):
        profile_problem(stages, example, Problem(p=2, m=4), comm=0.0, repeats=1)
