"""schedc: a compiler for pipeline-parallel training schedules.

Importing schedc never imports torch; only ``schedc.runtime`` does. The names below load on first
use (PEP 562), so that ``import schedc.<module>`` (the ``schedc`` command's entry, the runtime)
reads only what it needs, and a Ctrl-C in the command's first moments is caught by its entry point
(``schedc.entry``) rather than printed as a traceback from inside an import.
"""

import os as _os
import sys as _sys
import typing as _typing
from importlib import import_module as _import_module
from importlib.util import find_spec as _find_spec
from types import ModuleType as _ModuleType

if _typing.TYPE_CHECKING:
    from schedc.actions import Action
    from schedc.errors import (
        ArgumentError,
        InfeasibleError,
        PlanFormatError,
        ProblemError,
        SchedcError,
        ScheduleError,
    )
    from schedc.picture import save_picture
    from schedc.plan import Plan
    from schedc.plan_json import load_plan, save_plan
    from schedc.problem import Problem, StageCost
    from schedc.problem_io import load_problem
    from schedc.simulate import Slot, Timeline, simulate
    from schedc.torch_csv import load_csv_plan, write_csv
    from schedc.trace import write_trace
    from schedc.validate import validate

_HOMES = {
    "Action": "actions",
    "ArgumentError": "errors",
    "InfeasibleError": "errors",
    "PlanFormatError": "errors",
    "ProblemError": "errors",
    "SchedcError": "errors",
    "ScheduleError": "errors",
    "save_picture": "picture",
    "Plan": "plan",
    "load_plan": "plan_json",
    "save_plan": "plan_json",
    "Problem": "problem",
    "StageCost": "problem",
    "load_problem": "problem_io",
    "Slot": "simulate",
    "Timeline": "simulate",
    "simulate": "simulate",
    "load_csv_plan": "torch_csv",
    "write_csv": "torch_csv",
    "write_trace": "trace",
    "validate": "validate",
}
"""Where each public name lives."""

__all__ = [
    "Action",
    "ArgumentError",
    "InfeasibleError",
    "Plan",
    "PlanFormatError",
    "Problem",
    "ProblemError",
    "SchedcError",
    "ScheduleError",
    "Slot",
    "StageCost",
    "Timeline",
    "load_csv_plan",
    "load_plan",
    "load_problem",
    "save_picture",
    "save_plan",
    "simulate",
    "validate",
    "write_csv",
    "write_trace",
]
__version__ = "0.1.0"


class _CheckoutFinder:
    """In a source checkout ``solvers/`` and ``runtime/`` sit beside this folder, and pyproject.toml
    maps them in as ``schedc.solvers`` and ``schedc.runtime`` at install time only: Python started
    in the checkout imports this folder ahead of an installed copy, which then had no
    ``schedc.solvers`` (after ``pip install .``, ``python -m schedc solve`` failed there). Asked
    first: an editable install's finder maps these names to its own checkout, whichever ``schedc``
    was loaded (a second clone's tests ran the first one's solvers)."""

    folders: _typing.ClassVar[dict[str, str]] = {}

    @classmethod
    def find_spec(cls, fullname: str, path: object = None, target: object = None) -> _typing.Any:
        folder = cls.folders.get(fullname)
        if folder is None:
            return None
        from importlib.util import spec_from_file_location

        init = _os.path.join(folder, "__init__.py")
        return spec_from_file_location(fullname, init, submodule_search_locations=[folder])


def _map_checkout() -> None:
    here = _os.path.dirname(_os.path.abspath(__file__))
    for name in ("solvers", "runtime"):
        beside = _os.path.join(_os.path.dirname(here), name)
        installed = _os.path.isfile(_os.path.join(here, name, "__init__.py"))
        if not installed and _os.path.isfile(_os.path.join(beside, "__init__.py")):
            _CheckoutFinder.folders[f"schedc.{name}"] = beside
    if _CheckoutFinder.folders and _CheckoutFinder not in _sys.meta_path:
        _sys.meta_path.insert(0, _CheckoutFinder)


_map_checkout()


_UNLISTED = ("runtime",)
"""Submodules not loaded by attribute access: ``hasattr(schedc, "runtime")`` must not import torch."""


class _Package(_ModuleType):
    """Importing the submodule ``schedc.simulate`` (or ``schedc.validate``) binds it on the package,
    which would hide the function of that name the package exports: the function stays, as it did
    when this file imported every name at once. The submodule stays in ``sys.modules``."""

    def __setattr__(self, name: str, value: _typing.Any) -> None:
        if name in _HOMES and isinstance(value, _ModuleType):
            return
        super().__setattr__(name, value)


_sys.modules[__name__].__class__ = _Package


def __getattr__(name: str) -> _typing.Any:
    """A public name, or a torch-free submodule (``schedc.problem`` after ``import schedc``, as when
    this file imported them all); anything else is an AttributeError, so that probes such as
    ``getattr(schedc, name, None)`` stay harmless."""
    home = _HOMES.get(name)
    if home is None:
        if name.startswith("_") or "." in name or name in _UNLISTED:
            raise AttributeError(f"module 'schedc' has no attribute {name!r}")
        try:
            if _find_spec(f"schedc.{name}") is not None:
                return _import_module(f"schedc.{name}")
        except ImportError:
            pass
        raise AttributeError(f"module 'schedc' has no attribute {name!r}")
    value = getattr(_import_module(f"schedc.{home}"), name)
    globals()[name] = value  # later lookups skip this function
    return value


def __dir__() -> list[str]:
    """The public names and the submodules loaded so far, not this file's helpers."""
    loaded = {n for n, v in globals().items() if isinstance(v, _ModuleType) and not n.startswith("_")}
    return sorted(set(__all__) | loaded | {n for n in globals() if n.startswith("__")})
