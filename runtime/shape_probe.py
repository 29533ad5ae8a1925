"""The forward (the first step's, or a new input shape's) that finds a stage's output shapes and
dtypes (``output_metas``) before any data exists, so that receives can be posted ahead of their
data (``shapes.infer_boundaries``).

It must leave no trace, since the step then runs the stage for real:
- it runs on the meta device, in the module's own mode (so an output made in training only is
  learned), with the weights and buffers swapped for meta copies: no compute, and nothing real is
  written (a buffer updated in forward, an embedding's max_norm renormalising its rows). What the
  forward changes in Python is put back one level deep (``_PythonState``): each submodule's
  attributes, parameters and buffers, the entries of its dicts and lists, the attributes of plain
  objects it holds, callable ones included, and their dicts' and lists' entries (a cache, a counter,
  a parameter made on the first forward);
- under autocast (meta tensors keep the weights' dtype), or for a stage the meta device cannot run
  (data-dependent control flow, tensors made on a real device), it runs on zeros instead, in eval
  mode (no training-only update, as an EMA teacher's or a warm-up counter's), with the buffers and
  the weights an embedding's max_norm rewrites swapped for clones.
In both, a tensor a submodule holds as an attribute (neither parameter nor buffer) that the forward
writes in place gets its value back (on the meta device a plain object's tensors too, whose Python
state comes back with them), and Python's and NumPy's random state is restored.

Both restore torch's random state too (except around a lazy module's first
forward, which draws its initial weights there as the step would; in eval mode nothing else
draws), and keep autograd on with inputs that need
a gradient as the real forward's do (``handlers.stage_input``): a stage that registers a hook on an
activation or retains its gradient fails without a graph. Forward hooks fire, as in torch's own
shape inference (a forward on empty tensors).
"""

from __future__ import annotations

import contextlib
import random
import sys
from collections.abc import Iterator
from types import FunctionType, MethodType, ModuleType

import torch
from torch import nn
from torch.nn.parameter import is_lazy

from .errors import PlanMismatchError
from .shapes import Metas, differentiable, in_place_error, metas_of, modifies_input

META = torch.device("meta")


def output_metas(module: nn.Module, metas: Metas, device: torch.device, stage: int = 0) -> Metas:
    """Shapes and dtypes of ``module(*inputs)`` for inputs described by ``metas`` (module doc)."""
    if not _autocast_on():
        swapped = {name: t.to(META) for name, t in (*module.named_parameters(), *module.named_buffers())}
        try:
            with _PythonState(module).kept(), _tensor_attributes_kept(module, helpers=True):
                return metas_of(_forward(module, metas, META, stage, swapped), f"the output of stage {stage}")
        except PlanMismatchError:
            raise
        except Exception as err:  # anything the meta device cannot run: the real forward decides
            if modifies_input(err):
                raise in_place_error(stage) from None
    try:
        with _eval_mode(module), _tensor_attributes_kept(module), _random_state_kept():
            out = _forward(module, metas, device, stage, _clones(module))
    except Exception as err:  # the stage's own error, named with the input it got (chained, not lost)
        if modifies_input(err):
            raise in_place_error(stage) from None
        got = ", ".join(f"{tuple(m.shape)} {m.dtype}" for m in metas)
        first = (str(err).strip().splitlines() or [""])[0][:300]
        raise PlanMismatchError(f"stage {stage} fails on a microbatch input of {got} "
                                f"({type(err).__name__}: {first})") from err
    return metas_of(out, f"the output of stage {stage}")


def _autocast_on() -> bool:
    return any(torch.is_autocast_enabled(kind) for kind in ("cpu", "cuda"))


def _clones(module: nn.Module) -> dict[str, torch.Tensor]:
    """What a forward on real zeros may write to: the buffers, and the weight of an embedding that
    renormalises the rows it looks up (``max_norm``), which would otherwise change row 0."""
    clones = {name: t.clone() for name, t in module.named_buffers()}
    for name, sub in module.named_modules():
        if isinstance(sub, nn.Embedding | nn.EmbeddingBag) and sub.max_norm is not None:
            clones[f"{name}.weight" if name else "weight"] = sub.weight.detach().clone()
    return clones


@contextlib.contextmanager
def _tensor_attributes_kept(module: nn.Module, helpers: bool = False) -> Iterator[None]:
    """The values of tensors a submodule holds as plain attributes (``self.count = torch.zeros(())``,
    neither parameter nor buffer, so not swapped): ``self.count += 1`` in the probe's forward was a
    real update, one more than the unpipelined model's on every stage but the last. ``helpers``: the
    tensors of the plain objects they hold too, where their Python state comes back with them (the
    meta probe): on zeros a helper's table put back beside the length it was grown to failed the step."""
    owners = [vars(sub) for sub in module.modules()]
    if helpers:
        owners += [vars(v) for attrs in list(owners) for v in attrs.values() if _plain_object(v)]
    kept = [(attrs, name, t, t.detach().clone(), t._version) for attrs in owners for name, t in attrs.items()
            if isinstance(t, torch.Tensor) and not isinstance(t, nn.Parameter) and t.device != META
            and not t.is_inference()]  # no version counter, and no in-place write outside inference mode
    try:
        yield
    finally:
        with torch.no_grad():
            for attrs, name, tensor, value, version in kept:
                if tensor._version != version:  # written in place: its value back
                    if tensor.shape != value.shape:  # resized in place (``resize_``)
                        tensor.resize_(value.shape)
                    tensor.copy_(value)
                attrs[name] = tensor  # rebound (``self.count = self.count + 1``): the object back


@contextlib.contextmanager
def _eval_mode(module: nn.Module) -> Iterator[None]:
    modes = [(sub, sub.training) for sub in module.modules()]
    module.eval()
    try:
        yield
    finally:
        for sub, training in modes:
            sub.training = training


class _PythonState:
    """What a forward may change in Python, one level deep, to put back after the meta forward: a
    meta tensor left in a cache would reach the real forward."""

    def __init__(self, module: nn.Module) -> None:
        self.saved: list[tuple[object, object]] = []
        for sub in module.modules():
            self._save(sub.__dict__)
            for value in list(sub.__dict__.values()):  # _parameters, _buffers and _modules among them
                if isinstance(value, dict | list):
                    self._save(value)
                elif _plain_object(value):  # and its own dicts and lists (a cache keyed by length)
                    self._save(vars(value))
                    for inner in list(vars(value).values()):
                        if isinstance(inner, dict | list):
                            self._save(inner)

    def _save(self, container: object) -> None:
        self.saved.append((container, container.copy()))

    @contextlib.contextmanager
    def kept(self) -> Iterator[None]:
        """Also Python's and NumPy's random state (torch's is forked in ``_forward``)."""
        try:
            with _random_state_kept():
                yield
        finally:
            for container, copy in reversed(self.saved):
                if isinstance(container, list):
                    container[:] = copy
                else:
                    container.clear()
                    container.update(copy)


@contextlib.contextmanager
def _random_state_kept() -> Iterator[None]:
    """Python's and NumPy's random state, on both probes: the forward on zeros left them one draw
    further (a LayerDrop written with ``random``), torch's alone being forked."""
    python = random.getstate()
    numpy = sys.modules.get("numpy")
    numpy_state = numpy.random.get_state() if numpy is not None else None
    try:
        yield
    finally:
        random.setstate(python)
        if numpy_state is not None:
            numpy.random.set_state(numpy_state)


def _plain_object(value: object) -> bool:
    """An instance of a user class holding state in its ``__dict__`` (a rotary helper, one with a
    ``__call__`` too: left out, its meta cache crashed the first step), not a module, tensor,
    function, method, class or imported Python module (``self.np = numpy``)."""
    return hasattr(value, "__dict__") and not isinstance(value, _NOT_PLAIN)


_NOT_PLAIN = (nn.Module, torch.Tensor, type, ModuleType, FunctionType, MethodType)


def _forward(module: nn.Module, metas: Metas, device: torch.device, stage: int,
             swapped: dict[str, torch.Tensor]) -> object:
    """The stage on zeros (or empty meta tensors) on ``device``, its state swapped for ``swapped``."""
    inputs = [torch.zeros(m.shape, dtype=m.dtype, device=device) for m in metas]
    inputs = [x.requires_grad_(stage > 0 and differentiable(x.dtype)) for x in inputs]
    cuda = [device] if device.type == "cuda" else []
    lazy = any(is_lazy(p) for p in module.parameters())  # its first forward draws the initial weights
    forked = contextlib.nullcontext() if lazy else torch.random.fork_rng(devices=cuda)
    with torch.enable_grad(), forked:
        return torch.func.functional_call(module, swapped, tuple(inputs), strict=False)
