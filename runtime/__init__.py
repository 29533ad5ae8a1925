"""schedc.runtime: replays a plan on real devices with torch.distributed point-to-point transfers.

The only package of schedc that imports torch when imported (``schedc profile`` and
``schedc.profile_model`` load it lazily, when run).
"""

try:
    import torch  # noqa: F401  (first, for the message below: ``pip install .`` has no torch)
except ModuleNotFoundError as err:
    if err.name != "torch":  # a module torch itself needs: its own error says which
        raise
    from schedc.errors import TORCH_INSTALL

    raise ModuleNotFoundError(f"schedc.runtime needs torch: {TORCH_INSTALL}", name="torch") from None

from .clip import clip_grad_norm_
from .errors import GradDisabledError, PeerError, PeerTimeoutError, PlanMismatchError, StepAbortedError
from .runner import Held, PipelineRunner, Span
from .stages import split_stages, stage_bounds, stage_parameter, stage_parameters
from .tied import Tie

__all__ = ["GradDisabledError", "Held", "PeerError", "PeerTimeoutError", "PipelineRunner",
           "PlanMismatchError", "Span", "StepAbortedError", "Tie", "clip_grad_norm_", "split_stages",
           "stage_bounds", "stage_parameter", "stage_parameters"]
