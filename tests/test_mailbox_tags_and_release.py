# sed -i '56s/(calls_before % 2) \* 2 + (call/(calls_before % 2) + (call/' runtime/comm.py
# sed -i '176s/"act", key.stage - 1, key.mb/"act", key.stage, key.mb/' runtime/comm.py
# sed -i '178s/key.stage + 1/key.stage - 1/' runtime/comm.py
"""The mailbox's call tags tell all four (parity, kind) calls apart, and a bare mailbox (no plan
``Delivery``) frees the sends a received gradient proves delivered."""

from __future__ import annotations

import torch

from schedc.actions import Action
from schedc.runtime.comm import CALL_TAGS, Mailbox, _InFlight, call_tag
from schedc.runtime.lowering import TensorKey


def test_call_tags_tell_step_from_eval_and_one_call_from_the_next() -> None:
    """An eval's messages must never pair with a step's, nor a call's with the next one's: the four
    (parity, kind) pairs need four tags, each below CALL_TAGS; the parity repeats every other call."""
    tags = {(n, call): call_tag(call, n) for n in (0, 1) for call in ("step", "eval")}
    assert sorted(tags.values()) == list(range(CALL_TAGS))
    assert call_tag("step", 2) == tags[(0, "step")] and call_tag("eval", 3) == tags[(1, "eval")]
    assert call_tag("scaled step", 0) == tags[(0, "step")]  # a scaled step is a step


class _Work:
    """A transfer that is complete once waited on, as gloo's are."""

    waited = 0

    def wait(self, timeout: float | None = None) -> bool:
        _Work.waited += 1
        return True


def test_a_received_gradient_frees_the_activation_and_the_gradient_it_proves_delivered() -> None:
    """Rank 0 holds stages 0 and 2 (interleaved, p=2): it sent stage 0's activation and stage 2's
    input gradient to rank 1, whose stage 1 took both before sending the gradient of its input:
    taking that gradient proves both delivered, so both sends are waited on and dropped."""
    act, grad_in, back = TensorKey("act", 0, 0), TensorKey("grad", 2, 0), TensorKey("grad", 1, 0)
    box = Mailbox(None, 0, 4, 5.0, torch.device("cpu"))
    box.sending.append((act, _InFlight([_Work()], (torch.ones(2),), 1, Action("F", 0, 0))))
    box.sending.append((grad_in, _InFlight([_Work()], (torch.ones(2),), 1, Action("B", 2, 0))))
    box.receiving[back] = _InFlight([_Work()], (torch.ones(2),), 1, Action("B", 0, 0))
    _Work.waited = 0
    box.take(back, Action("B", 0, 0))
    assert box.sending == [] and _Work.waited == 3  # the receive, then both freed sends
