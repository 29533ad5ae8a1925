"""schedc: a compiler for pipeline-parallel training schedules.

Importing schedc never imports torch; only ``schedc.runtime`` does. The names below load on first
use (PEP 562), so that ``import schedc.<module>`` (the ``schedc`` command's entry, the runtime)
reads only what it needs, and a Ctrl-C in the command's first moments is caught by its entry point
(``schedc.entry``) rather than printed as a traceback from inside an import.
"""

from __future__ import annotations

import importlib
import importlib.util
import sys
import types
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
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


class _Package(types.ModuleType):
    """Importing the submodule ``schedc.simulate`` (or ``schedc.validate``) binds it on the package,
    which would hide the function of that name the package exports: the function stays, as it did
    when this file imported every name at once. The submodule stays in ``sys.modules``."""

    def __setattr__(self, name: str, value: Any) -> None:
        if name in _HOMES and isinstance(value, types.ModuleType):
            return
        super().__setattr__(name, value)


sys.modules[__name__].__class__ = _Package


def __getattr__(name: str) -> Any:
    """A public name, or a submodule (``schedc.problem`` after ``import schedc``, as when this file
    imported them all)."""
    home = _HOMES.get(name)
    if home is None:
        if name.startswith("_") or importlib.util.find_spec(f"schedc.{name}") is None:
            raise AttributeError(f"module 'schedc' has no attribute {name!r}")
        return importlib.import_module(f"schedc.{name}")
    value = getattr(importlib.import_module(f"schedc.{home}"), name)
    globals()[name] = value  # later lookups skip this function
    return value


def __dir__() -> list[str]:
    return sorted(set(globals()) | set(__all__))
