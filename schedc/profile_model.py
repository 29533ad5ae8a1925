"""The model ``schedc profile`` measures: a built-in demo, or the user's ``--module``, with its
example microbatch.

The user's code runs here, so whatever it raises or prints is the user's: a failure (an exception
or a ``sys.exit``) is one line naming the module, and an example microbatch without samples, which
would measure only overhead and turn any byte budget into no cap, is refused.
"""

from __future__ import annotations

import argparse
import importlib
import os
import sys
import warnings
from dataclasses import dataclass, fields
from typing import Any

from schedc.errors import SchedcError
from schedc.exact import plain_digits
from schedc.model_size import FLOAT_BYTES, check_fits, demo_parameters, tensor_bytes

DEFAULT_MICROBATCH = 8


@dataclass(frozen=True)
class ModelFlags:
    """The model options of ``schedc profile``: the demo's (defaults filled in, also beside a
    --module, which refuses them given), the module's and its input's (None: not given). Data, not
    the CLI's Namespace; the messages below still name the flags, where the values came from."""

    model: str
    layers: int
    width: int
    heads: int
    seq: int
    vocab: int
    module: str | None = None
    input_shape: str | None = None
    input_dtype: str | None = None
    microbatch: int | None = None

    @classmethod
    def from_args(cls, args: argparse.Namespace) -> ModelFlags:
        return cls(**{f.name: getattr(args, f.name) for f in fields(cls)})


def model_of(flags: ModelFlags) -> tuple[list, Any, Any, Any]:
    """(layers, example microbatch, loss_fn, target) of the chosen model."""
    import torch

    from schedc.runtime import models

    b = flags.microbatch or DEFAULT_MICROBATCH
    if flags.module:
        return _user_model(flags)
    size = demo_parameters(flags.model, flags.layers, flags.width, flags.seq, flags.vocab)
    check_fits(size * FLOAT_BYTES, f"the {flags.model} demo model's parameters",
               "give smaller --layers or --width" + (", --vocab or --seq" if flags.model != "mlp" else ""))
    if flags.model == "mlp":
        return (models.mlp(flags.layers, flags.width), torch.randn(b, flags.width), models.mlp_loss,
                torch.randn(b, flags.width))
    layers = models.transformer(flags.layers, flags.width, flags.heads, flags.seq, flags.vocab)
    tokens = torch.randint(0, flags.vocab, (b, flags.seq))
    return layers, tokens, models.transformer_loss, tokens


def _user_model(flags: ModelFlags) -> tuple[list, Any, Any, Any]:
    """(layers, example, loss_fn, target) from the user's function, which returns the layers,
    (layers, example) or (layers, example, loss_fn, target); without a loss the last stage's
    backward starts from ones, and the loss's own forward and backward are not timed."""
    name, _, func = flags.module.partition(":")
    if not name or not func:
        raise SchedcError(f"--module {flags.module}: expected PKG.MOD:FUNC, a function returning the "
                          f"layers, (layers, example_microbatch) or (layers, example, loss_fn, target)")
    if "" not in sys.path and os.getcwd() not in sys.path:
        sys.path.insert(0, os.getcwd())  # the console script's path starts at its own directory
    try:
        made = getattr(importlib.import_module(name), func)()
    except (Exception, SystemExit) as err:  # the user's code: whatever it raises (or exits with), one line
        raise SchedcError(f"--module {flags.module}: cannot load it ({type(err).__name__}: {err})") from None
    loss_fn = target = None
    if _is_quad(made):
        made, loss_fn, target = made[:2], made[2], made[3]
        if not callable(loss_fn):
            raise SchedcError(f"--module {flags.module}: the third of (layers, example, loss_fn, target) "
                              "must be a loss function (output, target) -> loss, got "
                              f"{type(loss_fn).__name__}")
    if isinstance(made, tuple) and len(made) not in (2, 4) and not _all_layers(made):
        raise SchedcError(f"--module {flags.module}: expected the layers, (layers, example_microbatch) or "
                          f"(layers, example, loss_fn, target), got a tuple of {len(made)}")
    layers, example = made if _is_pair(made) else (made, None)
    for flag, value in (("--microbatch", flags.microbatch), ("--input-shape", flags.input_shape),
                        ("--input-dtype", flags.input_dtype)):
        if example is not None and value is not None:
            raise SchedcError(f"{flag}: --module {flags.module} returns its own example microbatch, which "
                              "sets it; drop the flag")
    example = _example(flags) if example is None else example
    if _first_size(example) == 0:
        raise SchedcError(f"--module {flags.module}: its example microbatch has no samples (leading size "
                          "0): the timings would be overhead only, and the activation bytes 0")
    return _layer_list(layers, flags.module), example, loss_fn, target


def _first_size(example: Any) -> int | None:
    """The leading size of the example's first tensor (its samples), None when it has none."""
    first = example[0] if isinstance(example, tuple | list) and example else example
    shape = getattr(first, "shape", None)
    return int(shape[0]) if shape else None


def _is_quad(made: Any) -> bool:
    """(layers, example, loss_fn, target): a tuple of four whose second is no layer (a tuple of
    layers has one there, an example never; the loss may be a module, as nn.MSELoss())."""
    from torch import nn

    return isinstance(made, tuple) and len(made) == 4 and not isinstance(made[1], nn.Module)


def _is_pair(made: Any) -> bool:
    """(layers, example): a tuple of two whose second is no layer (a tuple of layers is layers)."""
    from torch import nn

    return isinstance(made, tuple) and len(made) == 2 and not isinstance(made[1], nn.Module)


def _all_layers(made: tuple) -> bool:
    """Whether a tuple is the layers themselves (a tuple of modules), not a tuple of parts."""
    from torch import nn

    return bool(made) and all(isinstance(x, nn.Module) for x in made)


def _layer_list(layers: Any, where: str) -> list:
    """The user's layers as a list of modules; anything else would fail deep inside torch."""
    from torch import nn

    try:
        items = list(layers)
    except TypeError:
        items = []
    if not items or not all(isinstance(layer, nn.Module) for layer in items):
        others = sorted({type(x).__name__ for x in items if not isinstance(x, nn.Module)})
        got = type(layers).__name__
        if isinstance(layers, list | tuple):  # what in it is wrong (a str is iterable too: not there)
            got = f"an empty {got}" if not items else f"a {got} holding {', '.join(others)}"
        raise SchedcError(f"--module {where}: expected a list of torch.nn.Module layers, got {got}")
    return items


def _example(flags: ModelFlags) -> Any:
    """A microbatch built from --input-shape and --input-dtype."""
    import torch

    if not flags.input_shape:
        raise SchedcError("--module needs --input-shape (or a function returning (layers, example))")
    try:
        shape = [int(plain_digits(d, "--input-shape")) for d in flags.input_shape.split(",")]
    except ValueError:
        shape = []
    name = (flags.input_dtype or "float32").removeprefix("torch.")
    dtype = getattr(torch, name, None)
    if not shape or min(shape) < 1:
        raise SchedcError(f"bad --input-shape {flags.input_shape!r}: positive sizes D1,D2,... per sample")
    if not isinstance(dtype, torch.dtype):
        raise SchedcError(f"bad --input-dtype {flags.input_dtype!r}: a torch dtype, e.g. float32 or int64")
    size = (flags.microbatch or DEFAULT_MICROBATCH, *shape)
    check_fits(tensor_bytes(size, dtype.itemsize), f"an input microbatch of shape {size} ({dtype})",
               "give a smaller --input-shape or --microbatch")
    try:
        with warnings.catch_warnings():  # quantized dtypes warn of their deprecation, then fail
            warnings.simplefilter("ignore")
            return torch.randn(size).to(dtype) if dtype.is_floating_point else torch.zeros(size, dtype=dtype)
    except (RuntimeError, NotImplementedError, TypeError) as err:  # quantized, packed: no plain tensor
        first = str(err).strip().splitlines()[0] if str(err).strip() else type(err).__name__
        raise SchedcError(f"bad --input-dtype {flags.input_dtype!r}: torch cannot make an input of it "
                          f"({first:.120})") from None


def samples(example: Any) -> str:
    """The example microbatch's sample count (its first tensor's leading size), for the header."""
    size = _first_size(example)
    return "of the module's example" if size is None else str(size)
