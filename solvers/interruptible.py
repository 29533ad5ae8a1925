"""A CP-SAT search that Ctrl-C and its caller's stop condition end as its time limit does: the
best solution kept, and the answer marked interrupted (or not, for the caller's stop). OR-Tools'
own SIGINT handling is off; the search runs on a helper thread while the main thread waits.
"""

from __future__ import annotations

import _thread
import time
from collections.abc import Callable

from ortools.sat.python import cp_model

from schedc.solvers import wall_guard

NEVER_BEGAN_S = 2.0
"""A Ctrl-C inside ``Thread.start`` may come before the thread exists: after this long without it
beginning, no search is waited for (the answer is UNKNOWN, as for a search stopped at once)."""


def run_interruptible(solver: cp_model.CpSolver, model: cp_model.CpModel,
                      callback: cp_model.CpSolverSolutionCallback | None = None,
                      stop_when: Callable[[], bool] | None = None) -> tuple[int, bool]:
    """Solves on a helper thread while the main thread waits, so a Ctrl-C reaches Python at once:
    the search is stopped (best solution kept, as at a time limit) and ``interrupted`` is True.
    ``stop_when()``, polled every 50 ms, stops the search the same way (not marked interrupted)."""
    solver.parameters.catch_sigint_signal = False
    out: list[int] = []
    failed: list[BaseException] = []
    began: list[bool] = []
    finished: list[bool] = []
    wake = _thread.allocate_lock()
    wake.acquire()

    def target() -> None:
        began.append(True)
        try:
            out.append(solver.solve(model, callback))
        except BaseException as err:  # raised again on the caller's thread, not lost with this one
            failed.append(err)
        finally:
            finished.append(True)
            wake.release()

    # ``finished`` says whether the search has ended; ``wake`` only ends a wait early. No Event, nor
    # threading.Thread (whose start() and join() wait on Events): a Ctrl-C inside Event.wait can
    # leave the Event's own lock held, and both threads then wait on it forever (or the thread dies
    # on "release unlocked lock"). Whether a Ctrl-C leaves ``wake`` held or not, the loops only poll it.
    interrupted = stopped = False
    try:
        _thread.start_new_thread(target, ())
        while not finished:
            wake.acquire(timeout=0.05)
            if not finished and stop_when is not None and stop_when():
                solver.stop_search()
                stopped = True
    except KeyboardInterrupt:
        interrupted = True
    given_up = time.perf_counter() + NEVER_BEGAN_S
    while not finished and (began or time.perf_counter() < given_up):
        try:  # stop (again: the search may not have begun) and wait, even on a 2nd Ctrl-C
            solver.stop_search()
            wake.acquire(timeout=0.05)
        except KeyboardInterrupt:
            pass
    if failed:
        raise failed[0]
    status = out[0] if out else cp_model.UNKNOWN
    if not (interrupted or stopped):
        _check_guard(solver, status)
    return status, interrupted


def _check_guard(solver: cp_model.CpSolver, status: int) -> None:
    """Whether the wall-clock guard, not deterministic time, ended this search (``wall_guard.watched``)."""
    prm = solver.parameters
    decided = status in (cp_model.OPTIMAL, cp_model.INFEASIBLE, cp_model.MODEL_INVALID)
    wall_guard.check_search(prm.num_workers, prm.max_deterministic_time, prm.max_time_in_seconds,
                            solver.deterministic_time, solver.wall_time, decided)
