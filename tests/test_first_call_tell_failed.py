# sed -i '82s/contextlib.suppress(Exception)/contextlib.suppress(RuntimeError)/' runtime/first_call.py
"""``tell_failed`` (runtime/first_call.py): a rank whose own checks failed before its first call's
check only tells its peers so; when that telling fails too, the rank's own error must still be the
one raised. A peer running another plan makes the check raise PlanMismatchError (a ValueError, not a
RuntimeError): it replaced the rank's own error.
"""

from __future__ import annotations

import pytest
import torch

from schedc.baselines import baseline_plan
from schedc.problem import Problem
from schedc.runtime import PeerTimeoutError, PlanMismatchError, first_call


@pytest.mark.parametrize("error", [PlanMismatchError("rank 0: the ranks run different plans"),
                                   PeerTimeoutError("rank 0 waited for the other ranks' plan digests"),
                                   ValueError("anything else")])
def test_a_failed_telling_is_not_raised_over_the_ranks_own_error(monkeypatch, error):
    told = []

    def check(*args):
        told.append(args[1])
        raise error

    monkeypatch.setattr(first_call, "check_same_plan", check)
    plan = baseline_plan("1f1b", Problem(p=2, m=2))
    first_call.tell_failed(plan, "step", (8, 8), None, False, None, 0, None, torch.device("cpu"), 5.0)
    assert told and told[0][1] == 1  # it did tell: rank 0 failed, sent as rank + 1
