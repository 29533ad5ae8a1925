"""schedc.runtime: replays a plan on real devices with torch.distributed point-to-point transfers.

The only package of schedc that imports torch when imported (``schedc profile`` and
``schedc.profile_model`` load it lazily, when run).
"""

from .clip import clip_grad_norm_
from .errors import GradDisabledError, PeerError, PeerTimeoutError, PlanMismatchError, StepAbortedError
from .runner import Held, PipelineRunner, Span
from .stages import split_stages, stage_bounds, stage_parameter, stage_parameters
from .tied import Tie

__all__ = ["GradDisabledError", "Held", "PeerError", "PeerTimeoutError", "PipelineRunner",
           "PlanMismatchError", "Span", "StepAbortedError", "Tie", "clip_grad_norm_", "split_stages",
           "stage_bounds", "stage_parameter", "stage_parameters"]
