# sed -i '53s/p.dtype == first.dtype and //' runtime/evaluate.py
# sed -i '55s/ and len(p) == len(first)//' runtime/evaluate.py
# sed -i '59s/ and p.keys() == first.keys()//' runtime/evaluate.py
"""runner.eval joins the last stage's outputs along the batch only where torch.cat keeps them as
they are: tensors of one dtype. Outputs whose dtype differs by microbatch come back as a list,
each in its own dtype, as those whose other dimensions differ do (cat would promote them)."""

from __future__ import annotations

import pytest

from schedc.problem import Problem

torch = pytest.importorskip("torch")

from torch import nn  # noqa: E402

from tests.runtime_cases import WIDTH, batch  # noqa: E402


def _eval(last: nn.Module) -> tuple[object, tuple[torch.Tensor, ...]]:
    """runner.eval of two microbatches through two MLP layers and ``last`` on one rank, and the MLP
    layers' outputs per microbatch (what ``last`` was given)."""
    from schedc.baselines import baseline_plan
    from schedc.runtime import PipelineRunner, split_stages
    from schedc.runtime.models import mlp

    problem = Problem(p=1, m=2)
    layers = [*mlp(2, WIDTH), last]
    runner = PipelineRunner(baseline_plan("1f1b", problem), split_stages(layers, problem, 0),
                            lambda out, y: 0)  # eval computes no loss
    x, _ = batch(2)
    out = runner.eval(x)
    with torch.no_grad():
        return out, nn.Sequential(*layers[:-1])(x).chunk(2)



class Alternating(nn.Module):
    """A last layer whose output dtype depends on the call: float32, then float64."""

    def __init__(self) -> None:
        super().__init__()
        self.calls = 0

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        self.calls += 1
        return x if self.calls % 2 else x.double()


def test_eval_lists_outputs_whose_dtype_differs_by_microbatch() -> None:
    """Joining a float32 and a float64 output would silently return one float64 tensor."""
    out, want = _eval(Alternating())
    assert isinstance(out, list) and len(out) == 2
    assert [t.dtype for t in out] == [torch.float32, torch.float64]
    for got, expected in zip(out, want, strict=True):
        torch.testing.assert_close(got.float(), expected)


class Growing(nn.Module):
    """A last layer whose tuple output has one entry more on every call (as a model returning its
    hidden states for a number of layers that depends on the input would)."""

    def __init__(self) -> None:
        super().__init__()
        self.calls = 0

    def forward(self, x: torch.Tensor) -> tuple[torch.Tensor, ...]:
        self.calls += 1
        return tuple(k * x for k in range(1, self.calls + 1))


def test_eval_lists_tuple_outputs_whose_length_differs_by_microbatch() -> None:
    """Tuples of different lengths cannot be merged entry by entry: one tuple per microbatch comes
    back (zip(strict=True) over them raised a bare ValueError)."""
    out, want = _eval(Growing())
    assert isinstance(out, list) and [len(t) for t in out] == [1, 2]
    torch.testing.assert_close(out[0][0], want[0])
    torch.testing.assert_close(out[1][1], 2 * want[1])


class Keyed(nn.Module):
    """A last layer whose dict output gains a key on its second call."""

    def __init__(self) -> None:
        super().__init__()
        self.calls = 0

    def forward(self, x: torch.Tensor) -> dict[str, torch.Tensor]:
        self.calls += 1
        return {"logits": x} if self.calls == 1 else {"logits": x, "extra": -x}


def test_eval_lists_dict_outputs_whose_keys_differ_by_microbatch() -> None:
    """Dicts with other keys cannot be merged key by key: one dict per microbatch comes back
    (merging by the first's keys would drop or fail on the others)."""
    out, want = _eval(Keyed())
    assert isinstance(out, list) and [sorted(d) for d in out] == [["logits"], ["extra", "logits"]]
    torch.testing.assert_close(out[1]["extra"], -want[1])
