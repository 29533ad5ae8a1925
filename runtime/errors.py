"""Runtime errors: each names the rank and what it was doing, in one line."""

from __future__ import annotations

from schedc.errors import SchedcError


class PlanMismatchError(SchedcError):
    """The plan does not fit the modules, the loss function, the input or the process group."""


class GradDisabledError(SchedcError, RuntimeError):
    """step() was called under ``torch.no_grad()`` (or inference mode): a training step needs autograd.
    A RuntimeError too, which is what torch raises for the same mistake."""


class StepAbortedError(RuntimeError):
    """An earlier step failed part-way on this rank: messages of it may still be in flight, and its
    peers may be waiting for some that never come, so the runner cannot run another step."""


class PeerError(RuntimeError):
    """A transfer with another rank failed: the peer died, or a message never came."""


class PeerTimeoutError(PeerError, TimeoutError):
    """A transfer did not complete within the runner's timeout."""
