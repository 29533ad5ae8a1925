# sed -i '35s/timeout <= MAX_TIMEOUT_S/timeout < MAX_TIMEOUT_S/' runtime/arguments.py
# sed -i '38s/recv_ahead < 0/recv_ahead <= 0/' runtime/arguments.py
# sed -i '38s/type(recv_ahead) is not int/not isinstance(recv_ahead, int)/' runtime/arguments.py
# sed -i '88s/len(found) > 1/len(found) > 2/' runtime/arguments.py
"""The ends of the runner's own argument ranges: each end is taken, one past it refused in one line."""

from __future__ import annotations

import pytest
import torch

from schedc.baselines import baseline_plan
from schedc.errors import ArgumentError
from schedc.problem import Problem
from schedc.runtime import PipelineRunner, PlanMismatchError, split_stages
from schedc.runtime.arguments import MAX_TIMEOUT_S
from schedc.runtime.models import mlp, mlp_loss
from tests.runtime_cases import WIDTH, batch


def _runner(**kwargs: object) -> PipelineRunner:
    problem = Problem(p=1, m=2)
    return PipelineRunner(baseline_plan("1f1b", problem), split_stages(mlp(2, WIDTH), problem, 0), mlp_loss,
                          **kwargs)


def test_the_longest_timeout_is_taken() -> None:
    """The range is (0, MAX_TIMEOUT_S], its upper end included: a ``<`` refused timeout=1e7."""
    _runner(timeout=MAX_TIMEOUT_S).step(*batch())
    with pytest.raises(ArgumentError, match="timeout must be a number of seconds"):
        _runner(timeout=MAX_TIMEOUT_S * 1.5)


def test_recv_ahead_zero_is_taken_and_a_bool_is_refused() -> None:
    """0 (post each receive just before its consumer) is the range's lower end; True is no count of
    computes, though isinstance(True, int) holds."""
    _runner(recv_ahead=0).step(*batch())
    with pytest.raises(ArgumentError, match=r"^recv_ahead must be None or an integer >= 0, got True$"):
        _runner(recv_ahead=True)


def test_a_device_other_than_the_stages_is_refused_naming_both() -> None:
    """Two devices (the parameters' and device=) are already several: boundary buffers on one and
    weights on the other fail mid-step."""
    with pytest.raises(PlanMismatchError, match=r"span several devices \['cpu', 'meta'\]"):
        _runner(device=torch.device("meta"))
