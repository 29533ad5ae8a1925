"""Activation bytes: what one microbatch's forward leaves for the backward, per stage, and the caps a
byte budget allows (``schedc profile --activation-budget``)."""

from __future__ import annotations

import tomllib
from fractions import Fraction

import pytest

torch = pytest.importorskip("torch")
from torch import nn  # noqa: E402

from schedc.cli import main  # noqa: E402
from schedc.errors import ProblemError  # noqa: E402
from schedc.problem import Problem  # noqa: E402
from schedc.runtime.activation_bytes import caps_for_budget, rank_bytes, stage_activation_bytes  # noqa: E402
from schedc.runtime.stages import Chain  # noqa: E402

ROW = 4 * 8 * 4  # one (4, 8) float32 tensor


def _stages() -> list[nn.Module]:
    torch.manual_seed(0)
    return [Chain(nn.Linear(8, 8), nn.Tanh()), Chain(nn.Linear(8, 8), nn.Tanh())]


def test_a_stage_holds_its_saved_tensors_and_outputs_not_its_weights():
    x, y = torch.randn(4, 8), torch.randn(4, 8)
    # Linear saves its input, Tanh its output (also the stage's output): two tensors per stage.
    assert stage_activation_bytes(_stages(), x) == [2 * ROW, 2 * ROW]
    # With the loss, the last stage also holds what the loss saves: o - y, and the scalar loss.
    held = stage_activation_bytes(_stages(), x, lambda o, t: ((o - t) ** 2).mean(), y)
    assert held == [2 * ROW, 3 * ROW + 4]


def test_a_budget_gives_caps_on_the_memory_grid_or_a_one_line_error():
    problem = Problem(p=2, m=4, v=2)  # stages 0, 2 on rank 0; 1, 3 on rank 1; levels in quarters
    stage_bytes = [100, 300, 100, 500]
    assert rank_bytes(problem, stage_bytes) == (200, 800)
    assert caps_for_budget(problem, stage_bytes, 1000) == (Fraction(5), Fraction(5, 4))  # 1000/800 = 1.25
    assert caps_for_budget(problem, stage_bytes, 999) == (Fraction(19, 4), Fraction(1))  # rounded down
    assert caps_for_budget(problem, [0, 300, 0, 500], 1000)[0] is None  # nothing to hold: no cap
    with pytest.raises(ProblemError, match=r"holds 0\.875 of rank 1's microbatch activations"):
        caps_for_budget(problem, stage_bytes, 700)


def test_profile_writes_the_caps_of_an_activation_budget(tmp_path, capsys):
    out = tmp_path / "problem.toml"
    base = ["profile", "--p", "2", "--m", "4", "--layers", "2", "--width", "8", "--microbatch", "4",
            "--repeats", "1", "--comm", "0"]
    assert main([*base, "--activation-budget", "1KiB", "-o", str(out)]) == 0
    text = out.read_text()
    # one Linear + Tanh block per stage: stage 0 holds its input and output; stage 1 adds mse_loss's.
    held = [int(b) for b in text.split("one unit of its cap): ")[1].split("\n")[0].split()]
    assert held[0] == 2 * ROW and held[1] > held[0]
    caps = [Fraction(c) for c in tomllib.loads(text)["mem"]]
    assert caps == [Fraction(int(1024 * 2 / b), 2) for b in held]  # floor to halves (v = 1, w_mem 1/2)
    assert "activation" in capsys.readouterr().out
    for extra, message in ((["--activation-budget", "lots"], "expected bytes such as 40GiB"),
                           (["--activation-budget", "1KiB", "--mem", "3"], "give --mem or --activation"),
                           (["--activation-budget", "100B"], "a schedule needs at least 1")):
        assert main([*base, *extra]) in (1, 2)
        err = capsys.readouterr().err
        assert message in err and err.count("\n") == 1, err


def test_the_bytes_agree_with_torchs_memory_profiler():
    """An independent count: the CPU memory each stage's forward allocates and does not free (torch's
    profiler), plus the tensors it holds that were allocated before it (its input; the loss's target)."""
    from torch.profiler import ProfilerActivity, profile

    from schedc.runtime import models
    from schedc.runtime.handlers import stage_input
    from schedc.runtime.stages import stage_bounds

    torch.manual_seed(0)
    layers = models.transformer(4, 64, 4, 32, 100)
    stages = [Chain(*layers[a:b]) for a, b in stage_bounds(len(layers), 2)]
    tokens = torch.randint(0, 100, (8, 32))
    ours = stage_activation_bytes(stages, tokens, models.transformer_loss, tokens)
    value, alive = tokens, []
    for k, stage in enumerate(stages):
        inputs = (stage_input(value, k == 0),)
        with profile(activities=[ProfilerActivity.CPU], profile_memory=True) as prof:
            value = stage(*inputs)
            value = models.transformer_loss(value, tokens) if k == len(stages) - 1 else value
        alive.append(value)  # kept, as the runner keeps it, so its memory counts as held
        before = inputs[0].nbytes + (tokens.nbytes if k == len(stages) - 1 else 0)
        assert ours[k] == sum(e.self_cpu_memory_usage for e in prof.events()) + before, k
