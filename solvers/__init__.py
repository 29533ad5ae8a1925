"""schedc.solvers: the fastest schedule under activation caps, with a proof of how far off it can be.

``solve(problem, time_limit=, workers=, seed=, objective=, progress=, backend=) -> Plan`` is the interface;
``BACKENDS`` holds the pluggable ``Solver`` backends (list heuristic, CP-SAT, LNS). OR-Tools is
loaded only when a CP-SAT backend runs, so importing ``schedc.solvers`` stays light.
"""

from schedc.solvers.backends import BACKENDS, Budget, Solver
from schedc.solvers.portfolio import DEFAULT_TIME_LIMIT, solve
from schedc.solvers.progress import Progress, ProgressFn

__all__ = ["BACKENDS", "DEFAULT_TIME_LIMIT", "Budget", "Progress", "ProgressFn", "Solver", "solve"]
