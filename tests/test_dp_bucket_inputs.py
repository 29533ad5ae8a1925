# sed -i '38s/type(bucket_bytes) is not int or/not isinstance(bucket_bytes, int) or/' runtime/dp_buckets.py
# sed -i '100s/str(p.dtype)/p.element_size()/' runtime/dp_buckets.py
# sed -i '86s/(param.dtype, param.device) !=/(param.dtype, buckets[-1][0].device) !=/' runtime/dp_buckets.py
"""The bucket plan (runtime/dp_buckets.py): ``bucket_bytes`` is a positive integer and not a flag, a
bucket holds one device's parameters, and the layout the replicas compare tells dtypes of one
element size apart."""

from __future__ import annotations

import pytest
import torch

from schedc.baselines import baseline_plan
from schedc.errors import ArgumentError
from schedc.problem import Problem
from schedc.runtime import PipelineRunner, split_stages
from schedc.runtime.dp_buckets import layout_digest, plan_buckets
from schedc.runtime.models import mlp, mlp_loss


@pytest.mark.parametrize("flag", [True, False])
def test_a_bool_bucket_bytes_is_one_line(flag: bool) -> None:
    """``bucket_bytes=True`` is a flag passed by mistake, not a one-byte bucket (and False is no size):
    as the runner's other integer options, a bool is refused in one line."""
    problem = Problem(p=1, m=2)
    with pytest.raises(ArgumentError, match=f"^bucket_bytes must be a positive integer, got {flag}$"):
        PipelineRunner(baseline_plan("1f1b", problem), split_stages(mlp(2, 4), problem, 0), mlp_loss,
                       bucket_bytes=flag)


def test_the_layout_digest_tells_two_dtypes_of_one_size_apart() -> None:
    """float16 and bfloat16 take two bytes an element each: replicas that cast a parameter to
    different ones would average bit patterns of two formats."""
    half = torch.nn.Parameter(torch.zeros(4, dtype=torch.float16))
    brain = torch.nn.Parameter(torch.zeros(4, dtype=torch.bfloat16))
    names = {id(half): "0.weight", id(brain): "0.weight"}
    assert half.element_size() == brain.element_size()
    assert layout_digest([[half]], names) != layout_digest([[brain]], names)


def test_a_bucket_never_spans_two_devices() -> None:
    """A bucket is flattened with one ``torch.cat``: parameters of one rank on two devices (a stage
    partly offloaded) need a bucket each, even of one dtype and well under the size."""
    here = torch.nn.Parameter(torch.zeros(4))
    there = torch.nn.Parameter(torch.zeros(4, device="meta"))
    also_here = torch.nn.Parameter(torch.zeros(4))
    buckets = plan_buckets([[here, there, also_here]], 10**6)
    assert [[p.device.type for p in bucket] for bucket in buckets] == [["cpu"], ["meta"], ["cpu"]]

