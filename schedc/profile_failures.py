"""How ``schedc profile`` reports a model that fails while it is built or timed: the user's sizes
or model, in one line, where a failure of schedc's own keeps its traceback."""

from __future__ import annotations

import contextlib
from collections.abc import Iterator

from schedc.errors import SchedcError


def is_out_of_memory(err: BaseException) -> bool:
    """torch's allocation failures (CPU: "can't allocate memory" or C++'s std::bad_alloc; CUDA:
    OutOfMemoryError)."""
    text = str(err).lower()
    return isinstance(err, MemoryError) or (isinstance(err, RuntimeError) and any(
        sign in text for sign in ("can't allocate", "out of memory", "bad_alloc")))


@contextlib.contextmanager
def out_of_memory_in_one_line() -> Iterator[None]:
    """A model or microbatch too large for memory is the user's sizes, not a schedc failure."""
    try:
        yield
    except Exception as err:
        if not is_out_of_memory(err):
            raise
        first = str(err).strip().splitlines()[0] if str(err).strip() else type(err).__name__
        raise SchedcError(f"out of memory building or timing the model ({first}); give smaller "
                          f"--width, --layers, --seq or --microbatch (or --input-shape)") from None


def module_failure(module: str, err: BaseException) -> SchedcError:
    """A ``--module`` model's failure on the example microbatch, in one line. A backward that
    cannot split into I and W (a reentrant or selective checkpoint) is no fault of the model:
    ``profile --no-split`` times it whole, for unsplit plans."""
    from schedc.runtime.handlers import split_refusal

    if (known := split_refusal(err)) is not None:
        what, way = known
        return SchedcError(f"--module {module}: a stage {what}: "
                           f"{way.replace('(solve --no-split)', '(profile --no-split)')}")
    return SchedcError(f"--module {module}: the model fails on the example microbatch "
                       f"({type(err).__name__}: {err})")
