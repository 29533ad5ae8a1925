# sed -i '119s/str(p.dtype)/p.element_size()/' runtime/dp_buckets.py
# sed -i '105s/(param.dtype, param.device) !=/(param.dtype, buckets[-1][0].device) !=/' runtime/dp_buckets.py
"""The bucket plan of data-parallel averaging (``runtime/dp_buckets.py``): the same on every replica,
in the order gradients become final. The four-process test in test_runtime_data_parallel.py runs it."""

from __future__ import annotations

import pytest

from schedc.baselines import baseline_plan
from schedc.problem import Problem

torch = pytest.importorskip("torch")

from schedc.runtime.dp_buckets import layout_digest, plan_buckets, ready_order  # noqa: E402


def _params(*sizes: int, dtype=torch.float32) -> list[torch.Tensor]:
    return [torch.nn.Parameter(torch.zeros(n, dtype=dtype)) for n in sizes]


def _sizes(buckets: list[list[torch.Tensor]]) -> list[list[int]]:
    return [[p.numel() for p in b] for b in buckets]


def test_buckets_fill_up_to_the_size_in_order_and_a_large_parameter_stands_alone():
    params = _params(10, 10, 30, 5, 1)  # float32: 40, 40, 120, 20 and 4 bytes
    buckets = plan_buckets([params], 80, first_bytes=80)
    assert _sizes(buckets) == [[10, 10], [30], [5, 1]]
    assert [p for b in buckets for p in b] == params  # nothing lost, nothing reordered


def test_the_first_bucket_is_smaller_and_no_bucket_spans_two_groups():
    """As DDP's first bucket, the first gradients final start early; a bucket holding parameters
    final at two points would wait for the later one."""
    first, second = _params(5, 5, 5, 5), _params(1, 1)
    assert _sizes(plan_buckets([first, second], 80, first_bytes=40)) == [[5, 5], [5, 5], [1, 1]]


def test_a_bucket_holds_one_dtype_on_one_device():
    """A bucket is flattened with one ``torch.cat``: parameters of another dtype, or on another device
    (a stage partly offloaded), need a bucket each, however small."""
    params = [*_params(4), *_params(4, dtype=torch.bfloat16), *_params(4)]
    assert [len(b) for b in plan_buckets([params], 10**6)] == [1, 1, 1]
    params[1] = torch.nn.Parameter(torch.zeros(4, device="meta"))
    assert [[p.device.type for p in b] for b in plan_buckets([params], 10**6)] == [["cpu"], ["meta"], ["cpu"]]


def test_stages_go_in_the_order_their_last_backward_runs_and_tied_weights_last():
    """ZB-V on rank 0 holds stages 0 and 3; stage 3's last W runs first, so its group goes first;
    a parameter both stages hold goes with stage 0, whose last W runs later."""
    problem = Problem(p=2, m=4, v=2, placement="vshape")
    order = baseline_plan("zb-v", problem).orders[0]
    last = {s: max(i for i, a in enumerate(order) if a.stage == s and a.kind in "WB") for s in (0, 3)}
    assert last[3] < last[0]
    first, shared, tied, head = _params(1, 2, 3, 4)
    params = {0: [first, shared, tied], 3: [head, shared]}
    got = ready_order(order, params, late={id(tied)})
    assert _sizes(got) == [[4], [2, 1], [3]]  # stage 3, then stage 0 (reversed), tied last


def test_the_layout_digest_tells_frozen_or_reshaped_parameters_apart():
    """Replicas compare it before any bucket goes out: the same sizes in other shapes or dtypes, or
    another parameter of one shape frozen, would otherwise be averaged against each other."""
    a, b = _params(4, 4)
    names = {id(a): "0.weight", id(b): "1.weight"}
    c, d = _params(4, 4)
    assert layout_digest([[a, b]], names) == layout_digest([[c, d]], {id(c): "0.weight", id(d): "1.weight"})
    assert layout_digest([[a]], names) != layout_digest([[b]], names)  # one shape, another parameter
    assert layout_digest([[a, b]], names) != layout_digest([[a], [b]], names)
    assert layout_digest([[a]], {}) != layout_digest([[torch.nn.Parameter(torch.zeros(2, 2))]], {})
    assert layout_digest([[a]], {}) != layout_digest([[*_params(4, dtype=torch.float64)]], {})
    assert layout_digest([_params(4, dtype=torch.float16)], {}) != \
        layout_digest([_params(4, dtype=torch.bfloat16)], {})  # one element size, two formats
    assert 0 <= layout_digest([[a]], names) < 2**62
