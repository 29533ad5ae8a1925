"""Where an error of a step happened, in the runtime's messages and in the user's own errors.

Every runtime message starts with the rank in the pipeline's own group ("rank 1: ..."), the rank
the plan's orders are indexed by. Under data parallelism that is not the rank torchrun and the logs
name: pipeline 2's rank 1 may be global rank 5. Rather than thread both numbers through every
message, the runner's public calls add the global one where the two differ, in one place
(``names_global_rank``). An error the runtime did not write (a stage's forward, the loss function)
keeps its message, and gains a note naming the rank and the action it ran in (``noted``).
"""

from __future__ import annotations

import functools
import re
from collections.abc import Callable
from typing import Any, TypeVar

import torch.distributed as dist

from schedc.actions import Action
from schedc.errors import SchedcError

F = TypeVar("F", bound=Callable[..., Any])


def with_global_rank(err: BaseException, rank: int | None) -> None:
    """Rewrites ``err``'s message in place from "rank R..." to "rank R (global rank G)..." when this
    process's world rank G is not R. Only messages of the runtime's own form are touched: one string
    argument starting with the rank (a user's error passing through is left as it is)."""
    if rank is None or not dist.is_available() or not dist.is_initialized():
        return
    world_rank = dist.get_rank()
    if world_rank == rank or len(err.args) != 1 or not isinstance(err.args[0], str):
        return
    text = err.args[0]
    if isinstance(err, KeyError) or not re.match(rf"rank {rank}(?!\d)", text) or "(global rank" in text[:40]:
        return
    label = f"rank {rank}"
    err.args = (f"{label} (global rank {world_rank}){text[len(label):]}",)


def names_global_rank(method: F) -> F:
    """A runner method (or a function of the runner) whose errors name the global rank too
    (``with_global_rank``): the rank is read from its first argument once the error is raised."""

    @functools.wraps(method)
    def wrapped(runner: Any, *args: Any, **kwargs: Any) -> Any:
        try:
            return method(runner, *args, **kwargs)
        except Exception as err:
            with_global_rank(err, getattr(runner, "rank", None))
            raise

    return wrapped  # type: ignore[return-value]


def noted(rank: int, action: Action, run: Callable[..., Any], *args: Any) -> Any:
    """``run(*args)``, the compute of ``action`` on this rank. An error the runtime did not write (the
    user's code: a stage's forward or backward, the loss function; or torch's, from a hook) keeps its
    type and message, as without the pipeline, and gains a note naming where it ran, which its
    traceback prints: torch's "mat1 and mat2 must have the same dtype" names no rank or stage. The
    runtime's own errors name the rank already."""
    try:
        return run(*args)
    except Exception as err:
        if not (isinstance(err, SchedcError) or str(err).startswith("rank ")):
            world = dist.get_rank() if dist.is_available() and dist.is_initialized() else rank
            where = f"rank {rank}" + (f" (global rank {world})" if world != rank else "")
            err.add_note(f"schedc: raised on {where} in {action} ({action.kind} of stage {action.stage}, "
                         f"microbatch {action.mb})")
        raise
