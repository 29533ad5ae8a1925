# sed -i '61s/len(self.shape) > MAX_DIMS/len(self.shape) >= MAX_DIMS/' runtime/shapes.py
# sed -i '79s/isinstance(value, tuple | list)/isinstance(value, tuple)/' runtime/shapes.py
# sed -i '80s/len(values) > MAX_TENSORS/len(values) >= MAX_TENSORS/' runtime/shapes.py
# sed -i '80s/if not values or not all/if not all/' runtime/shapes.py
# sed -i '110s/len(message) - 2/len(message) - 1/' runtime/shapes.py
"""The shape message's limits are inclusive: a boundary tensor of MAX_DIMS dims and a boundary of
MAX_TENSORS tensors are both carried; one more of either is refused in one line."""

from __future__ import annotations

import pytest
import torch

from schedc.baselines import baseline_plan
from schedc.problem import Problem
from schedc.runtime import PipelineRunner, PlanMismatchError, split_stages
from schedc.runtime.launch import run_local
from schedc.runtime.shapes import (
    FAILED,
    MAX_DIMS,
    MAX_TENSORS,
    TensorMeta,
    as_tensors,
    decode_metas,
    encode_metas,
    failure_message,
)


def test_a_tensor_of_max_dims_dims_round_trips_and_one_more_is_refused() -> None:
    """The check said ``>= MAX_DIMS``: an 8-dim activation (the encoding has room for 8) was refused."""
    meta = TensorMeta(tuple(range(2, 2 + MAX_DIMS)), torch.float16)
    assert TensorMeta.decode(meta.encode()) == meta
    with pytest.raises(PlanMismatchError, match="dims"):
        TensorMeta(tuple(range(2, 3 + MAX_DIMS)), torch.float16).encode()


def test_a_boundary_of_max_tensors_tensors_is_taken_and_round_trips() -> None:
    """The check said ``>= MAX_TENSORS``: a stage returning 8 tensors (the message's room) was refused."""
    values = tuple(torch.zeros(k + 1, 3) for k in range(MAX_TENSORS))
    assert as_tensors(values, "the output of stage 0") == values
    metas = tuple(TensorMeta.of(v) for v in values)
    assert decode_metas(encode_metas(metas)) == metas
    with pytest.raises(PlanMismatchError, match=f"1 to {MAX_TENSORS} tensors"):
        as_tensors((*values, torch.zeros(1)), "the output of stage 0")


@pytest.mark.parametrize("value", [(), []])
def test_an_empty_boundary_is_refused(value: object) -> None:
    """A stage returning nothing has no boundary to send: it must be one line, not an empty message."""
    with pytest.raises(PlanMismatchError, match="got nothing"):
        as_tensors(value, "the output of stage 0")


def test_a_failure_notice_lists_as_many_failed_ranks_as_it_holds() -> None:
    """With more failed ranks than the message holds it lists the lowest ones and says how many;
    a slice one longer than the room left raised a RuntimeError from inside the failure path."""
    message = failure_message(set(range(200)))
    room = len(message) - 2  # after the FAILED mark and the count
    assert int(message[0]) == FAILED and int(message[1]) == room
    assert message[2:].tolist() == list(range(room))
    few = failure_message({5, 1})
    assert few[:4].tolist() == [FAILED, 2, 1, 5] and not few[4:].any()


def test_a_list_of_tensors_is_a_boundary_as_a_tuple_is() -> None:
    """A stage may return a list of tensors (``as_tensors``' contract): reading the list as one value
    refused it as "not a tensor"."""
    from torch import nn

    from schedc.runtime.shape_probe import output_metas

    class Pair(nn.Module):
        def forward(self, x: torch.Tensor) -> list[torch.Tensor]:
            return [x, x.sum(1)]

    a, b = torch.zeros(2, 3), torch.ones(4)
    assert as_tensors([a, b], "the output of stage 0") == (a, b)
    f32 = torch.float32
    assert output_metas(Pair(), (TensorMeta((2, 3), f32),), torch.device("cpu")) == (
        TensorMeta((2, 3), f32), TensorMeta((2,), f32))


class Nine(torch.nn.Module):
    """Returns its input with nine dims, one more than a shape message holds."""

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return x.reshape(*x.shape, 1, 1, 1, 1, 1, 1, 1)


def _nine_dims(rank: int, _world: int) -> str:
    problem = Problem(p=2, m=2)
    stages = split_stages([Nine(), torch.nn.Flatten(1)], problem, rank)
    try:
        PipelineRunner(baseline_plan("1f1b", problem), stages, lambda out, y: out.sum(), timeout=60).step(
            torch.randn(4, 3), target=torch.randn(4, 3))
    except Exception as err:  # rank 1 is told of rank 0's failure
        return str(err)
    return "stepped"


def test_boundary_limits_met_in_a_step_name_the_rank_as_every_runtime_error_does() -> None:
    """A stage output of nine dims and an input tuple of nine tensors were refused without the
    "rank k:" that starts every other runtime error (and names the rank torchrun's log shows)."""
    assert run_local(_nine_dims, 2)[0].startswith("rank 0: stage 0's output: boundary tensors need <= 8 dims")
    plan = baseline_plan("interleaved-1f1b", Problem(p=1, m=2, v=2))
    stages = {0: torch.nn.Identity(), 1: torch.nn.Identity()}
    with pytest.raises(PlanMismatchError, match=r"^rank 0: the input of stage 0 must be a tensor or a tuple"):
        PipelineRunner(plan, stages, lambda out, y: out[0].sum()).step(
            tuple(torch.randn(4, 4) for _ in range(MAX_TENSORS + 1)), target=torch.randn(4, 4))
