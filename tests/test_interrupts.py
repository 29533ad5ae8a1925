"""Ctrl-C at awkward moments: inside the wait for a CP-SAT search, inside a C++ module's import."""

from __future__ import annotations

import subprocess
import sys
import textwrap

import pytest

from schedc.cli import main

STORM = textwrap.dedent('''
    import os, signal, sys
    from ortools.sat.python import cp_model
    from schedc.solvers.interruptible import run_interruptible

    model = cp_model.CpModel()
    xs = [model.new_int_var(0, 1000, f"x{i}") for i in range(60)]
    model.add_all_different(xs)
    model.minimize(sum(x * (i % 7 + 1) for i, x in enumerate(xs)))  # seconds to prove: interrupted first
    left = [0]

    def ctrl_c(*_):
        if left[0] > 0:
            left[0] -= 1
            raise KeyboardInterrupt

    signal.signal(signal.SIGALRM, ctrl_c)
    stopped = 0
    for k in range(int(sys.argv[1])):
        solver = cp_model.CpSolver()
        solver.parameters.max_time_in_seconds = 20
        solver.parameters.num_workers = 1
        try:
            left[0] = 3  # three Ctrl-C's 0.2 ms apart, at a moment that moves from call to call
            signal.setitimer(signal.ITIMER_REAL, 0.0005 + (k % 50) * 0.0011, 0.0002)
            stopped += run_interruptible(solver, model)[1]
        except KeyboardInterrupt:
            pass
        while True:
            try:
                left[0] = 0
                signal.setitimer(signal.ITIMER_REAL, 0)
                break
            except KeyboardInterrupt:
                pass
    print("returned", stopped, flush=True)
    os._exit(0)  # (a storm of interrupts can leave OR-Tools' C++ state to abort at exit: not ours)
''')


def test_a_storm_of_ctrl_c_never_hangs_the_wait_for_a_search():
    """A Ctrl-C inside threading.Event.wait could leave the Event's own lock held: the search's
    thread then blocked in Event.set, the main thread in Event.wait, forever (one in about 30
    interrupted CLI solves), or it died on "release unlocked lock"."""
    calls = 150
    done = subprocess.run([sys.executable, "-c", STORM, str(calls)], capture_output=True, text=True,
                          timeout=120)
    assert done.returncode == 0, done.stderr[-2000:]
    assert done.stdout.startswith("returned ") and int(done.stdout.split()[1]) > calls // 2


def test_ctrl_c_while_a_cpp_module_initialises_exits_quietly(monkeypatch, capsys):
    """OR-Tools' C++ module turns a KeyboardInterrupt during its import into ImportError
    ("initialization failed"), which printed a traceback."""
    import schedc.solvers as solvers

    def interrupted_import(*args, **kwargs):
        try:
            raise KeyboardInterrupt
        except KeyboardInterrupt as err:
            raise ImportError("initialization failed") from err

    monkeypatch.setattr(solvers, "solve", interrupted_import)
    assert main(["solve", "--p", "2", "--m", "2"]) == 130
    assert capsys.readouterr().err == ""

    def broken_import(*args, **kwargs):
        raise ImportError("no module named ortools")

    monkeypatch.setattr(solvers, "solve", broken_import)
    with pytest.raises(ImportError, match="no module named ortools"):
        main(["solve", "--p", "2", "--m", "2"])


INTERRUPTED_LOAD = textwrap.dedent('''
    import sys

    class Interrupting:  # a Ctrl-C landing while the command line's modules load, every time
        def find_spec(self, name, path=None, target=None):
            if name == "schedc.cli":
                raise KeyboardInterrupt
            return None

    sys.meta_path.insert(0, Interrupting())
    from schedc.entry import main
    sys.exit(main())
''')


def test_ctrl_c_while_the_command_line_loads_exits_130_without_a_traceback():
    """The console script's entry (``schedc.entry``) imports the command line itself, so a Ctrl-C
    in its first half second is caught; it used to come from inside ``import schedc``."""
    done = subprocess.run([sys.executable, "-c", INTERRUPTED_LOAD], capture_output=True, text=True,
                          timeout=120)
    assert (done.returncode, done.stdout, done.stderr) == (130, "", "")


def test_the_package_loads_its_public_names_on_first_use():
    """Names shared with their modules (``simulate``, ``validate``) stay the functions; submodules are
    attributes after ``import schedc`` alone, as when the package imported them all."""
    code = ("import sys, schedc; assert 'schedc.plan' not in sys.modules; "
            "from schedc import Plan, simulate; assert Plan.__module__ == 'schedc.plan'; "
            "assert set(schedc.__all__) <= set(dir(schedc)); "
            "assert all(getattr(schedc, name) is not None for name in schedc.__all__); "
            "import schedc.validate; from schedc import validate; assert callable(validate); "
            "assert schedc.problem.Problem is schedc.Problem and not hasattr(schedc, 'nothing'); "
            "assert not hasattr(schedc, 'runtime') and 'torch' not in sys.modules; "
            "assert 'sys' not in dir(schedc) and sorted(schedc.__all__) == sorted(schedc._HOMES)")
    done = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=120)
    assert done.returncode == 0, done.stderr[-2000:]
