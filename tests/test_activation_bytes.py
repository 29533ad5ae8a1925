# sed -i '35s/value < 999.5/value <= 999.5/' schedc/byte_sizes.py
"""Activation bytes: what one microbatch holds on each stage after F and after I, the model's terms
they give (a unit's bytes, w_mem), and the caps a byte budget allows (``--activation-budget``)."""

from __future__ import annotations

import tomllib
from fractions import Fraction

import pytest

torch = pytest.importorskip("torch")
from torch import nn  # noqa: E402

from schedc.cli import main  # noqa: E402
from schedc.errors import ProblemError  # noqa: E402
from schedc.problem import Problem  # noqa: E402
from schedc.runtime.activation_bytes import (  # noqa: E402
    StageBytes,
    caps_for_budget,
    measured_w_mem,
    stage_bytes,
    unit_bytes,
)
from schedc.runtime.stages import Chain  # noqa: E402

ROW = 4 * 8 * 4  # one (4, 8) float32 tensor


def _stages() -> list[nn.Module]:
    torch.manual_seed(0)
    return [Chain(nn.Linear(8, 8), nn.Tanh()), Chain(nn.Linear(8, 8), nn.Tanh())]


def test_what_a_stage_holds_after_f_and_after_i():
    x = torch.randn(4, 8)
    held = stage_bytes(_stages(), x)
    # Stage 0 takes the batch (held by the step anyway): after F its Tanh output; with no input to
    # differentiate, W runs the whole backward, so after I it also holds the output's gradient.
    assert held[0] == StageBytes(ROW, 2 * ROW)
    # Stage 1: its input (kept for I, saved by Linear) and output; after I, Linear's saved input and
    # the gradient recorded where the weight joins the input's path (what W starts from).
    assert held[1] == StageBytes(2 * ROW, 2 * ROW)
    assert stage_bytes(_stages(), x, split=False)[1] == StageBytes(2 * ROW, 2 * ROW)


def test_a_last_stage_under_mse_loss_counts_what_the_runner_holds():
    """mse_loss's 0-d result shares its elementwise buffer: counted as the stage's output, it made
    the last stage 1.5 times what the runner holds (which keeps the scaled loss, a tensor of its own)."""
    from schedc.runtime import PipelineRunner, split_stages
    from schedc.runtime.models import mlp, mlp_loss
    from schedc.solvers import solve

    torch.manual_seed(0)
    layers, problem = mlp(2, 64), Problem(p=1, m=1)
    stages = split_stages(layers, problem, 0)
    x, y = torch.randn(8, 64), torch.randn(8, 64)
    counted = stage_bytes([stages[0]], x, mlp_loss, y)[0]
    runner = PipelineRunner(solve(problem, time_limit=5, workers=1), stages, mlp_loss, record_memory=True)
    runner.step(x, target=y)
    held = {h.action.kind: h.activations for h in runner.memory}
    assert counted == StageBytes(held["F"], held["I"]) == StageBytes(2 * 2048 + 4, 2 * 2048 + 4)


def test_i_frees_what_only_the_input_gradient_needed():
    """GELU saves its input, which no weight gradient needs: I frees it and W still holds the first
    Linear's input, the GELU output the second Linear saved, and the gradients at both Linears."""
    torch.manual_seed(0)
    stage = Chain(nn.Linear(8, 8), nn.GELU(), nn.Linear(8, 8))
    held = stage_bytes([stage], torch.randn(4, 8), first=False)
    assert held == [StageBytes(4 * ROW, 4 * ROW)]  # after F: input, GELU's input and output, output

    class Spare(nn.Module):  # a trainable parameter this forward never uses (a pooler, a head)
        def __init__(self) -> None:
            super().__init__()
            self.body, self.spare = stage, nn.Linear(8, 8)

        def forward(self, x: torch.Tensor) -> torch.Tensor:
            return self.body(x)

    assert stage_bytes([Spare()], torch.randn(4, 8), first=False) == held


def test_an_input_no_op_saves_is_still_held_and_weights_are_not():
    x = torch.randn(4, 8)
    relu = nn.Sequential(nn.ReLU())  # saves only its output: the runner still keeps the input until I
    assert stage_bytes([relu], x, first=False) == [StageBytes(2 * ROW, 0)]  # nothing for W
    frozen = nn.Linear(8, 8)
    frozen.weight.requires_grad_(False)  # a weight still, trainable or not
    assert stage_bytes([frozen], x, first=False)[0].forward == 2 * ROW  # input and output only
    buffered = nn.Module()
    buffered.register_buffer("w", torch.randn(8, 8))
    buffered.forward = lambda t: t @ buffered.w  # a buffer, saved by the product: not an activation
    assert stage_bytes([buffered], x, first=False)[0].forward == 2 * ROW  # input and output only


def test_units_w_mem_and_caps_are_conservative():
    problem = Problem(p=2, m=8, v=2)  # stages 0, 2 on rank 0; 1, 3 on rank 1
    held = [StageBytes(100, 40), StageBytes(300, 330), StageBytes(50, 20), StageBytes(500, 200)]
    assert unit_bytes(problem, held) == (200, 1000)  # v times the largest stage, after F or I
    assert measured_w_mem(problem, held) == Fraction(3, 4)  # 330 of 500: 0.66, up to eighths
    problem = Problem(p=2, m=8, v=2, w_mem=Fraction(3, 4))
    assert caps_for_budget(problem, (200, 1000), 1250) == (Fraction(25, 4), Fraction(5, 4))
    assert caps_for_budget(problem, (200, 1000), 1199) == (Fraction(47, 8), Fraction(9, 8))  # eighths, down
    assert caps_for_budget(problem, (200, 1000), 10**6) == (5000, 1000)  # not clipped to m=8
    assert caps_for_budget(problem, (200, 1000), 1000) == (Fraction(5), Fraction(1))  # the smallest named
    with pytest.raises(ProblemError, match="the smallest budget that fits every rank is 1,000 bytes"):
        caps_for_budget(problem, (200, 1000), 999)


def test_the_bytes_agree_with_torchs_memory_profiler():
    """An independent count of what F keeps: the CPU memory each stage's forward allocates and does
    not free (torch's profiler), plus its input, allocated before it and kept by the runner."""
    from torch.profiler import ProfilerActivity, profile

    from schedc.runtime import models
    from schedc.runtime.handlers import stage_input
    from schedc.runtime.stages import stage_bounds

    torch.manual_seed(0)
    layers = models.transformer(4, 64, 4, 32, 100)
    stages = [Chain(*layers[a:b]) for a, b in stage_bounds(len(layers), 2)]
    ours = stage_bytes(stages[1:], torch.randn(8, 32, 64), first=False)  # a middle stage: no loss
    x = stage_input(torch.randn(8, 32, 64), False)
    with profile(activities=[ProfilerActivity.CPU], profile_memory=True) as prof:
        out = stages[1](x)
    assert ours[0].forward == sum(e.self_cpu_memory_usage for e in prof.events()) + x.nbytes
    assert out.requires_grad


def test_profile_writes_w_mem_and_the_caps_of_a_budget(tmp_path, capsys):
    out = tmp_path / "problem.toml"
    base = ["profile", "--p", "2", "--m", "4", "--layers", "2", "--width", "8", "--microbatch", "4",
            "--repeats", "1", "--comm", "0"]
    assert main([*base, "--activation-budget", "1KiB", "-o", str(out)]) == 0
    text = out.read_text()
    units = [int(b) for b in text.split("after F or I): ")[1].split("\n")[0].split()]
    data = tomllib.loads(text)
    assert Fraction(data["w_mem"]) == 1  # the runner's W holds what F left and the joins' gradients
    assert [Fraction(c) for c in data["mem"]] == [1024 // u for u in units]  # whole units: w_mem 1
    assert "held after F" in capsys.readouterr().out
    assert main([*base, "--activation-budget", str(2**64 - 1), "-o", str(out)]) == 0  # a float said 2**64
    assert tomllib.loads(out.read_text())["mem"] == [(2**64 - 1) // u for u in units]  # exact, not clipped
    assert main([*base, "--activation-budget", "1.024e+3", "-o", str(out)]) == 0  # as Python writes 1e3
    assert tomllib.loads(out.read_text())["mem"] == data["mem"]  # the same 1,024 bytes
    capsys.readouterr()
    for extra, message in ((["--activation-budget", "lots"], "expected bytes such as 40GiB"),
                           (["--activation-budget", "1e30000000"], "must be below 16 EiB"),
                           (["--activation-budget", str(2**64)], "must be below 16 EiB"),
                           (["--activation-budget", "1KiB", "--mem", "3"], "give --mem or --activation"),
                           (["--activation-budget", "100B"], "the smallest budget that fits every rank")):
        assert main([*base, *extra]) in (1, 2)
        err = capsys.readouterr().err
        assert message in err and err.count("\n") == 1, err


def test_the_runner_holds_no_more_bytes_than_the_caps_allow(monkeypatch):
    """End to end: caps in units whose bytes ``profile`` measured, a plan within them, and what the
    runner really holds after each action of the step, counted here on its own terms: the tensors
    autograd still saves, every stage's kept inputs, outputs and W work, the losses and the messages
    waiting in the mailbox (each storage once; weights, the batch and the targets left out)."""
    import weakref
    from dataclasses import replace

    from schedc.runtime import PipelineRunner, handlers, split_stages
    from schedc.runtime.models import mlp, mlp_loss
    from schedc.solvers import solve

    torch.manual_seed(0)
    layers, base = mlp(8, 64), Problem(p=1, m=6, v=4)
    stages = split_stages(layers, base, 0)
    x, y = torch.randn(6 * 4, 64), torch.randn(6 * 4, 64)
    held = stage_bytes([stages[s] for s in sorted(stages)], x[:4], mlp_loss, y[:4])
    problem = replace(base, w_mem=measured_w_mem(base, held), mem=(Fraction(2),))
    plan = solve(problem, time_limit=5, workers=1)
    limit = problem.mem[0] * unit_bytes(problem, held)[0]
    weights = {t.untyped_storage().data_ptr() for t in (x, y, *layers[0].parameters())}
    weights |= {p.untyped_storage().data_ptr() for s in stages.values() for p in s.parameters()}

    class Box:
        __slots__ = ("__weakref__", "t")

    boxes, peaks = [], []

    def pack(t: torch.Tensor) -> object:
        box = Box()
        box.t = t.detach()
        boxes.append(weakref.ref(box))
        return box

    def bytes_held(ctx) -> int:
        tensors = [b.t for ref in boxes if (b := ref()) is not None]
        for kept in ctx.saved.values():
            tensors += [*kept.inputs, *kept.outputs, *(kept.weight_work.held() if kept.weight_work else ())]
        tensors += [*ctx.losses.values(), *(t for value in ctx.mailbox.ready.values() for t in value)]
        sizes = {t.untyped_storage().data_ptr(): t.untyped_storage().nbytes() for t in tensors}
        return sum(size for ptr, size in sizes.items() if ptr not in weights)

    def tracked(handler):
        def run(ctx, action):
            handler(ctx, action)
            peaks.append(bytes_held(ctx))
        return run

    for kind, handler in list(handlers.HANDLERS.items()):
        monkeypatch.setitem(handlers.HANDLERS, kind, tracked(handler))
    runner = PipelineRunner(plan, stages, mlp_loss)
    with torch.autograd.graph.saved_tensors_hooks(pack, lambda box: box.t):
        runner.step(x, target=y)
    assert len(peaks) == problem.num_tasks and plan.fits()
    assert 0 < max(peaks) <= limit, (max(peaks), limit)
    monkeypatch.undo()  # the runner's own record agrees with this count, action by action
    recorder = PipelineRunner(plan, stages, mlp_loss, record_memory=True)
    recorder.step(x, target=y)
    assert [held.activations + held.other for held in recorder.memory] == peaks
    assert [held.action for held in recorder.memory] == list(plan.orders[0])
    assert max(held.activations for held in recorder.memory) <= limit


def test_recording_memory_changes_no_gradient():
    """record_memory routes saved tensors through boxes; the backward must see the same values."""
    import copy

    from schedc.baselines import baseline_plan
    from schedc.runtime import PipelineRunner, split_stages
    from schedc.runtime.models import mlp, mlp_loss

    plan = baseline_plan("interleaved-zb", Problem(p=1, m=4, v=4))
    x, y = torch.randn(16, 32), torch.randn(16, 32)
    grads = []
    for record in (False, True):
        layers = copy.deepcopy(mlp(8, 32))
        runner = PipelineRunner(plan, split_stages(layers, plan.problem, 0), mlp_loss, record_memory=record)
        loss = runner.step(x, target=y)
        grads.append([loss, *(p.grad for layer in layers for p in layer.parameters())])
        assert (len(runner.memory) == plan.problem.num_tasks) is record
    for a, b in zip(*grads, strict=True):
        assert torch.equal(a, b)


def test_recording_memory_still_refuses_a_saved_tensor_changed_in_place():
    """Saved-tensor hooks turn off autograd's own version check; the boxes keep it."""
    from schedc.baselines import baseline_plan
    from schedc.runtime import PipelineRunner, split_stages
    from schedc.runtime.models import mlp_loss

    class InPlace(nn.Module):
        def __init__(self) -> None:
            super().__init__()
            self.lin = nn.Linear(8, 8)

        def forward(self, t: torch.Tensor) -> torch.Tensor:
            h = torch.sigmoid(self.lin(t))
            out = h * 2
            h.add_(1)  # sigmoid saved h: its backward would read the changed value
            return out

    plan = baseline_plan("1f1b", Problem(p=1, m=2))
    for record in (False, True):
        runner = PipelineRunner(plan, split_stages([InPlace(), nn.Tanh()], plan.problem, 0), mlp_loss,
                                record_memory=record)
        with pytest.raises(RuntimeError, match="modified by an inplace operation"):
            runner.step(torch.randn(4, 8), target=torch.randn(4, 8))


def _messages_held(rank: int, _world: int, plan) -> list[int]:
    from schedc.runtime import PipelineRunner, split_stages
    from schedc.runtime.models import mlp, mlp_loss

    torch.manual_seed(0)
    layers = mlp(plan.problem.num_stages, 64)
    x, y = torch.randn(8 * 8, 64), torch.randn(8 * 8, 64)
    runner = PipelineRunner(plan, split_stages(layers, plan.problem, rank), mlp_loss, record_memory=True)
    runner.step(x, target=y)
    return [held.other for held in runner.memory]


def test_sent_activations_go_once_their_gradients_come_back():
    """gloo reports a send complete only once waited on: the runner kept all m sent activations
    until the step's end. A gradient coming back proves its activation delivered, and frees it."""
    from schedc.baselines import baseline_plan
    from schedc.runtime.launch import run_local

    plan = baseline_plan("1f1b", Problem(p=2, m=8))
    first, _ = run_local(_messages_held, 2, plan, timeout=120)
    boundary = 8 * 64 * 4  # one microbatch's (8, 64) float32 activation or gradient
    assert max(first) <= 2 * boundary  # it was 8 * boundary, every sent activation, at the end
    assert first[-1] == 0


def test_sent_gradients_go_once_the_peer_has_sent_anything_after_taking_them():
    """A gradient sent back never returns, so the rule above freed none: p=3 1f1b's middle rank
    held 9 boundaries' worth of messages at once and the last 8. Any message the peer sends after
    the action that took a tensor proves it delivered (``lowering.Delivery``)."""
    from schedc.baselines import baseline_plan
    from schedc.runtime.launch import run_local

    plan = baseline_plan("1f1b", Problem(p=3, m=8))
    held = run_local(_messages_held, 3, plan, timeout=120)
    boundary = 8 * 64 * 4
    most = [max(rank) / boundary for rank in held]  # the rest: receives posted ahead, the losses
    assert most[1] <= 5 and most[2] <= 4.1, most  # were 9 and 8.02


def test_an_empty_message_proves_nothing_delivered():
    """A gradient message of no tensors (a boundary of integers only) is never sent, so taking it
    says nothing about the peer: waiting on our sends then would block until the peer takes them."""
    from schedc.actions import Action
    from schedc.runtime.comm import Mailbox, _InFlight
    from schedc.runtime.lowering import Delivery, TensorKey

    class Work:
        waited = 0

        def wait(self, timeout=None) -> bool:
            Work.waited += 1
            return True

    sent, empty, full = TensorKey("act", 0, 0), TensorKey("grad", 1, 0), TensorKey("grad", 1, 1)
    box = Mailbox(None, 0, 2, 5.0, torch.device("cpu"), delivery=Delivery({1: (sent,)}, {empty: 1, full: 1}))
    box.sending.append((sent, _InFlight([Work()], (torch.ones(2),), 1, Action("F", 0, 0))))
    box.receiving[empty] = _InFlight([], (), 1, Action("I", 0, 0))
    box.take(empty, Action("I", 0, 0))
    assert Work.waited == 0 and len(box.sending) == 1
    box.receiving[full] = _InFlight([Work()], (torch.ones(2),), 1, Action("I", 0, 1))
    box.take(full, Action("I", 0, 1))
    assert Work.waited == 2 and box.sending == []  # the receive's wait, then the freed send's


def test_profile_of_a_plan_file_measures_w_mem_instead_of_keeping_its_default(tmp_path, capsys):
    """Every plan file carries w_mem (½ by default); only another value counts as the user's."""
    plan, out = tmp_path / "plan.json", tmp_path / "problem.toml"
    assert main(["baseline", "1f1b", "--p", "2", "--m", "4", "-o", str(plan)]) == 0
    base = ["profile", "--problem", str(plan), "--layers", "2", "--width", "8", "--microbatch", "4",
            "--repeats", "1", "--comm", "0", "-o", str(out)]
    assert main(base) == 0
    assert Fraction(tomllib.loads(out.read_text())["w_mem"]) == 1 and "note" not in capsys.readouterr().err
    assert main([*base, "--w-mem", "1/2"]) == 0  # given by flag: kept, with a note
    assert Fraction(tomllib.loads(out.read_text())["w_mem"]) == Fraction(1, 2)
    assert "note: measured, the runner still holds a w_mem share of 1" in capsys.readouterr().err


def test_sizes_just_below_a_unit_print_whole():
    from schedc.byte_sizes import format_bytes as _fmt_bytes

    assert [_fmt_bytes(n) for n in (1536, 999 * 1024, 999 * 1024 + 511, 999 * 1024 + 512, 999 * 1024 + 600,
                                    2**20 - 1)] == [
        "1.5 KiB", "999 KiB", "999 KiB", "1000 KiB", "1000 KiB", "1024 KiB"]  # 999.5 KiB up was 1e+03 KiB


def test_profile_replaces_a_files_costs_and_budgeted_caps_even_for_another_p(tmp_path, capsys):
    """What profile sets anew (costs; caps with --activation-budget) need not fit the --p given
    with the file: the file's 2 caps or 2 stage costs made --p 4 an error that --mem could not
    lift, since --mem and --activation-budget exclude each other."""
    source, out = tmp_path / "two.toml", tmp_path / "four.toml"
    source.write_text('p = 2\nm = 4\nmem = [2, 3]\nstage_costs = [[1, 2, 1], [1, 2, 1]]\n')
    base = ["profile", "--problem", str(source), "--p", "4", "--layers", "4", "--width", "8",
            "--microbatch", "4", "--repeats", "1", "--comm", "0", "-o", str(out)]
    assert main([*base, "--activation-budget", "1MiB"]) == 0
    data = tomllib.loads(out.read_text())
    assert data["p"] == 4 and len(data["stage_costs"]) == 4 and "mem" in data  # one cap, or 4
    err = capsys.readouterr().err
    assert "the costs in" in err and "caps in" in err and "replaced by those of --activation-budget" in err
    assert main(base) == 1  # without a budget the file's 2 caps stay, and do not fit 4 ranks
    assert "mem gives 2 caps for 4 ranks" in capsys.readouterr().err


def test_recorded_activations_leave_out_a_loss_modules_own_weights():
    """A loss module's weight that autograd saves was counted as activations (256,000 bytes here
    beside a few thousand): the README says weights count in neither figure."""
    from schedc.baselines import baseline_plan
    from schedc.runtime import PipelineRunner, split_stages
    from schedc.runtime.models import mlp

    class Projected(nn.Module):
        def __init__(self) -> None:
            super().__init__()
            self.w = nn.Parameter(torch.randn(8, 8000) / 100)

        def forward(self, out: torch.Tensor, y: torch.Tensor) -> torch.Tensor:
            return ((out @ self.w) ** 2).mean() + ((out - y) ** 2).mean()

    torch.manual_seed(0)
    problem = Problem(p=1, m=2)
    loss = Projected()
    runner = PipelineRunner(baseline_plan("1f1b", problem), split_stages(mlp(1, 8), problem, 0), loss,
                            record_memory=True)
    runner.step(torch.randn(8, 8), target=torch.randn(8, 8))
    most = max(held.activations for held in runner.memory)
    assert 0 < most < loss.w.nbytes  # 4 rows x 8000 of the product are activations; the weight is not
    assert most >= 4 * 8000 * 4
