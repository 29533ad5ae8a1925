# sed -i '99s/_first_size(example) == 0/not _first_size(example)/' schedc/profile_model.py
# sed -i '107s/ and example else/ else/' schedc/profile_model.py
# sed -i '109s/if shape else None/if shape is not None else None/' schedc/profile_model.py
# sed -i '124s/ and not isinstance(made\[1\], nn.Module)//' schedc/profile_model.py
# sed -i '145s/tuple):  # what/type(None)):  # what/' schedc/profile_model.py
# sed -i '165s/not isinstance(dtype, torch.dtype)/dtype is None/' schedc/profile_model.py
# sed -i '167s/(flags.microbatch or DEFAULT_MICROBATCH, /(DEFAULT_MICROBATCH, /' schedc/profile_model.py
# sed -i '173s/if dtype.is_floating_point else/if not dtype.is_floating_point else/' schedc/profile_model.py
"""What a --module returns and the input profile builds for it: a tuple of two layers, examples with
no leading size, and inputs from --input-shape, --input-dtype and --microbatch."""

from __future__ import annotations

from pathlib import Path

import pytest

from schedc.cli import main

MODULE = """\
import torch
from torch import nn

def pair():
    return nn.Linear(6, 6), nn.Linear(6, 6)

def scalar():
    return [nn.Linear(6, 6), nn.Linear(6, 6)], torch.tensor(1.0)

def nothing():
    return [nn.Linear(6, 6), nn.Linear(6, 6)], ()

def embed():
    return [nn.Embedding(10, 6), nn.Linear(6, 6)]

def flat():
    return [nn.Flatten(), nn.Linear(12, 4)]

def named():
    return "linear", nn.Linear(6, 6)

class Reentrant(nn.Module):
    def __init__(self):
        super().__init__()
        self.lin = nn.Linear(6, 6)

    def forward(self, x):
        return torch.utils.checkpoint.checkpoint(self.lin, x, use_reentrant=True)

def reentrant():
    return [nn.Linear(6, 6), Reentrant()]
"""

BASE = ["profile", "--p", "2", "--m", "2", "--repeats", "1", "--comm", "0", "--module"]


@pytest.fixture
def odd_inputs(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    (tmp_path / "odd_inputs.py").write_text(MODULE)
    monkeypatch.chdir(tmp_path)


@pytest.mark.usefixtures("odd_inputs")
def test_a_tuple_of_two_layers_is_the_layers_not_layers_and_an_example(
        capsys: pytest.CaptureFixture[str]) -> None:
    """(Linear, Linear) is two layers (its second is a layer, never an example): taken as
    (layers, example) it failed with "expected a list of torch.nn.Module layers, got Linear"."""
    assert main([*BASE, "odd_inputs:pair", "--input-shape", "6"]) == 0
    out = capsys.readouterr().out
    assert "(odd_inputs:pair, microbatch 8)" in out and out.count("{ tf = ") == 2


@pytest.mark.usefixtures("odd_inputs")
def test_examples_without_a_leading_size_fail_in_one_line_naming_what_is_wrong(
        capsys: pytest.CaptureFixture[str]) -> None:
    """A 0-d tensor and an empty tuple have no sample count: no IndexError from reading it, and no
    "no samples (leading size 0)" either, which they do not have; the model or the runtime says
    what is wrong, in one line."""
    for func, message in (("scalar", "the model fails on the example microbatch (RuntimeError: "),
                          ("nothing", "the example must be a tensor or a tuple of 1 to 8 tensors")):
        assert main([*BASE, f"odd_inputs:{func}"]) == 1
        out, err = capsys.readouterr()
        assert out == "" and err.startswith("schedc: error: ") and err.count("\n") == 1
        assert message in err and "leading size" not in err


@pytest.mark.usefixtures("odd_inputs")
def test_integer_inputs_are_valid_token_ids(capsys: pytest.CaptureFixture[str]) -> None:
    """--input-dtype int64 makes token ids of 0 (the help says all zeros): random normal numbers
    cast to int64 hold negative ids an embedding refuses."""
    assert main([*BASE, "odd_inputs:embed", "--input-shape", "3", "--input-dtype", "int64"]) == 0
    assert "(odd_inputs:embed, microbatch 8)" in capsys.readouterr().out


@pytest.mark.usefixtures("odd_inputs")
def test_every_dimension_of_the_input_shape_and_the_microbatch_count(
        capsys: pytest.CaptureFixture[str]) -> None:
    """--input-shape 3,4 is a 3x4 sample, which Flatten makes the 12 features the Linear takes;
    --microbatch 3 is the input's leading size, as the header says."""
    assert main([*BASE, "odd_inputs:flat", "--input-shape", "3,4", "--microbatch", "3"]) == 0
    assert "(odd_inputs:flat, microbatch 3)" in capsys.readouterr().out


@pytest.mark.usefixtures("odd_inputs")
def test_a_torch_name_that_is_no_dtype_is_a_bad_input_dtype(capsys: pytest.CaptureFixture[str]) -> None:
    """torch.Tensor is a torch attribute but no dtype: one line, not an AttributeError on its
    item size."""
    assert main([*BASE, "odd_inputs:flat", "--input-shape", "3,4", "--input-dtype", "Tensor"]) == 1
    err = capsys.readouterr().err
    assert err == "schedc: error: bad --input-dtype 'Tensor': a torch dtype, e.g. float32 or int64\n"


@pytest.mark.usefixtures("odd_inputs")
def test_a_tuple_of_layers_holding_something_else_names_it(capsys: pytest.CaptureFixture[str]) -> None:
    """("linear", Linear) is a tuple of layers (its second is one) with a str among them: the error
    says what the tuple holds, as it does for a list, not just "got tuple"."""
    assert main([*BASE, "odd_inputs:named", "--input-shape", "6"]) == 1
    err = capsys.readouterr().err
    assert err.endswith("expected a list of torch.nn.Module layers, got a tuple holding str\n")


@pytest.mark.usefixtures("odd_inputs")
def test_a_backward_that_cannot_split_points_to_an_unsplit_profile(
        capsys: pytest.CaptureFixture[str]) -> None:
    """A reentrant checkpoint cannot split its backward into I and W: the split profile showed
    torch's own words as "the model fails", where the model trains in unsplit plans, which
    ``profile --no-split`` times."""
    assert main([*BASE, "odd_inputs:reentrant", "--input-shape", "6"]) == 1
    err = capsys.readouterr().err
    assert err.startswith("schedc: error: --module odd_inputs:reentrant: a stage uses "
                          "checkpoint(use_reentrant=True), which cannot split its backward into I and W: ")
    assert err.rstrip().endswith("(profile --no-split)") and "fails on the example" not in err
    assert main([*BASE, "odd_inputs:reentrant", "--input-shape", "6", "--no-split"]) == 0
