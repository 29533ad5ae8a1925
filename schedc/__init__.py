"""schedc: a compiler for pipeline-parallel training schedules.

Importing schedc never imports torch; only ``schedc.runtime`` does.
"""

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
