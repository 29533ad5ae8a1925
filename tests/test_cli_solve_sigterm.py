"""``schedc solve`` under SIGTERM (``timeout``, Slurm, systemd): the search stops with its best plan,
which is written and reported, and the process still ends with a SIGTERM's status, 143."""

from __future__ import annotations

import contextlib
import os
import signal
import subprocess
import sys
import time

import pytest

from schedc.cli import main
from schedc.plan_json import load_plan
from tests.cli_helpers import signalled_search


@pytest.fixture
def default_sigterm():
    """SIGTERM with its default action, whatever pytest inherited."""
    previous = signal.signal(signal.SIGTERM, signal.SIG_DFL)
    try:
        yield
    finally:
        signal.signal(signal.SIGTERM, previous)


def test_sigterm_during_a_long_search_writes_the_best_plan_so_far(tmp_path):
    """SIGTERM ended the process during the search: a search of hours under `timeout` left nothing."""
    out = tmp_path / "plan.json"
    code, stdout = signalled_search(signal.SIGTERM, str(out))
    assert code == 143, stdout
    assert load_plan(str(out)).fits() and "stopped by SIGTERM (the best plan found by then)" in stdout
    assert not [p for p in os.listdir(tmp_path) if p != "plan.json"]  # no temporary left


def _terminated_search(monkeypatch, backend: str | None) -> None:
    """solve() gets a SIGTERM at its start; with a backend it returns that backend's plan, as the
    search does once it has one; without, the interrupt escapes, as before any plan."""
    import schedc.solvers as solvers

    real = solvers.solve

    def solve(problem, **options):
        if backend is None:
            os.kill(os.getpid(), signal.SIGTERM)
        with contextlib.suppress(KeyboardInterrupt):
            os.kill(os.getpid(), signal.SIGTERM)
        return real(problem, **{**options, "backend": backend})

    monkeypatch.setattr(solvers, "solve", solve)


def test_a_terminated_search_reports_and_writes_its_plan_then_exits_143(
        monkeypatch, tmp_path, capsys, default_sigterm):
    out = tmp_path / "plan.json"
    _terminated_search(monkeypatch, "list")
    assert main(["solve", "--p", "3", "--m", "6", "--mem", "2", "--quiet", "-o", str(out)]) == 143
    assert "stopped by SIGTERM (the best plan found by then)" in capsys.readouterr().out
    assert load_plan(str(out)).fits()
    assert signal.getsignal(signal.SIGTERM) is signal.SIG_DFL  # put back


def test_a_sigterm_after_a_proven_optimum_cut_nothing_short(monkeypatch, capsys, default_sigterm):
    _terminated_search(monkeypatch, "cp-sat")
    assert main(["solve", "--p", "3", "--m", "6", "--mem", "2", "--quiet"]) == 143
    out = capsys.readouterr().out
    assert "cp-sat (optimal)" in out and "stopped by" not in out


def test_sigterm_before_any_plan_says_nothing_was_written(monkeypatch, tmp_path, capsys, default_sigterm):
    out = tmp_path / "plan.json"
    _terminated_search(monkeypatch, None)
    assert main(["solve", "--p", "3", "--m", "6", "--quiet", "-o", str(out)]) == 143
    assert capsys.readouterr().err == "schedc: terminated before any plan was found; nothing written\n"
    assert not out.exists()


def test_a_callers_sigterm_handler_stays_in_charge(monkeypatch, capsys):
    """A program that runs main() with its own SIGTERM handler keeps it during the search."""
    import schedc.solvers as solvers

    real, seen = solvers.solve, []

    def solve(problem, **options):
        seen.append(signal.getsignal(signal.SIGTERM))
        return real(problem, **options)

    def handler(signum, frame):
        raise AssertionError("not called here")

    monkeypatch.setattr(solvers, "solve", solve)
    previous = signal.signal(signal.SIGTERM, handler)
    try:
        assert main(["solve", "--p", "2", "--m", "2", "--quiet"]) == 0
    finally:
        signal.signal(signal.SIGTERM, previous)
    assert seen == [handler]


def _signalled_write(monkeypatch, times: int) -> None:
    """The outputs' writing gets ``times`` SIGTERMs at its start."""
    import schedc.cli_outputs as cli_outputs

    original = cli_outputs.write_outputs

    def write(plan, args, *rest):
        for _ in range(times):
            os.kill(os.getpid(), signal.SIGTERM)
        return original(plan, args, *rest)

    monkeypatch.setattr(cli_outputs, "write_outputs", write)


def test_a_sigterm_after_the_search_still_gets_the_plan_written(
        monkeypatch, tmp_path, capsys, default_sigterm):
    """Between the search's end and the files (seconds of rendering at scale) a SIGTERM killed the
    process: no files, no word. It asks for what follows anyway, as a late Ctrl-C does."""
    out = tmp_path / "plan.json"
    _signalled_write(monkeypatch, 1)
    flags = ["solve", "--p", "2", "--m", "4", "--quiet", "-o", str(out), "--csv", str(tmp_path / "p.csv")]
    assert main(flags) == 143
    assert load_plan(str(out)).fits() and "wrote" in capsys.readouterr().out
    assert signal.getsignal(signal.SIGTERM) is signal.SIG_DFL


def test_a_second_sigterm_while_writing_ends_the_run_without_temporaries(
        monkeypatch, tmp_path, capsys, default_sigterm):
    _signalled_write(monkeypatch, 2)
    assert main(["solve", "--p", "2", "--m", "4", "--quiet", "-o", str(tmp_path / "plan.json")]) == 143
    assert os.listdir(tmp_path) == []
    assert capsys.readouterr().err.startswith("schedc: terminated while writing the outputs; ")


def test_a_second_sigterm_in_the_search_waits_for_its_best_plan(
        monkeypatch, tmp_path, capsys, default_sigterm):
    """The first SIGTERM stops the search, which then replays its best plan (seconds at scale): a
    second one there escaped as "no plan was found" and lost it."""
    import schedc.solvers as solvers

    real = solvers.solve

    def solve(problem, **options):
        with contextlib.suppress(KeyboardInterrupt):
            os.kill(os.getpid(), signal.SIGTERM)
        os.kill(os.getpid(), signal.SIGTERM)  # while the search winds down: noted, not raised
        return real(problem, **{**options, "backend": "list"})

    monkeypatch.setattr(solvers, "solve", solve)
    out = tmp_path / "plan.json"
    assert main(["solve", "--p", "3", "--m", "6", "--mem", "2", "--quiet", "-o", str(out)]) == 143
    assert load_plan(str(out)).fits() and "stopped by SIGTERM" in capsys.readouterr().out


@pytest.mark.parametrize(("first", "code", "said"), [(signal.SIGINT, 1, "interrupted"),
                                                    (signal.SIGTERM, 143, "terminated")])
def test_a_ctrl_c_in_the_wind_down_does_not_claim_no_plan_was_found(
        first, code, said, monkeypatch, capsys, default_sigint, default_sigterm):
    """A Ctrl-C after the stop still interrupts the wind-down (a user at a terminal may want out),
    but the error said no plan had been found, where one was being handed over."""
    import schedc.solvers as solvers

    def solve(problem, **options):
        with contextlib.suppress(KeyboardInterrupt):
            os.kill(os.getpid(), first)
        os.kill(os.getpid(), signal.SIGINT)
        raise AssertionError("the Ctrl-C interrupts")

    monkeypatch.setattr(solvers, "solve", solve)
    assert main(["solve", "--p", "3", "--m", "6", "--quiet"]) == code
    assert f"{said} again before the search had handed over its best plan" in capsys.readouterr().err


def test_sigterm_while_or_tools_loads_is_a_sigterm(monkeypatch, capsys, default_sigterm):
    """OR-Tools' C++ module turns the handler's KeyboardInterrupt into ImportError('initialization
    failed'), which read as a Ctrl-C: status 130 and no word."""
    import schedc.solvers as solvers

    def solve(problem, **options):
        try:
            os.kill(os.getpid(), signal.SIGTERM)  # lands in the extension's start-up
        except KeyboardInterrupt as err:
            raise ImportError("initialization failed") from err

    monkeypatch.setattr(solvers, "solve", solve)
    assert main(["solve", "--p", "3", "--m", "6", "--quiet"]) == 143
    assert capsys.readouterr().err == "schedc: terminated before any plan was found; nothing written\n"


def test_one_sigterm_ends_a_write_to_a_fifo_without_reader(tmp_path):
    """Once the search is over a first SIGTERM waits for the files; a FIFO without reader never
    takes its output, and one SIGTERM (all `timeout` sends) left the process blocked for ever."""
    if not _fifo_waits_visible(tmp_path / "probe.fifo"):
        pytest.skip("needs Linux's /proc/PID/wchan to show a process waiting for a FIFO's reader")
    fifo = tmp_path / "plan.fifo"
    os.mkfifo(fifo)
    cmd = [sys.executable, "-m", "schedc", "solve", "--p", "2", "--m", "2", "--quiet", "-o", str(fifo)]
    proc = subprocess.Popen(cmd, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    try:
        deadline = time.monotonic() + 60
        while not _blocked_in_open(proc.pid):
            assert time.monotonic() < deadline and proc.poll() is None, "never waited for the FIFO"
            time.sleep(0.1)
        proc.send_signal(signal.SIGTERM)
        _, err = proc.communicate(timeout=30)
    finally:
        proc.kill()
    assert proc.returncode == 143 and "terminated while writing the outputs" in err


def _fifo_waits_visible(fifo) -> bool:
    """Whether this kernel shows a process blocked opening a FIFO (a child that does only that)."""
    os.mkfifo(fifo)
    child = subprocess.Popen([sys.executable, "-c", f"open({str(fifo)!r}, 'w')"])
    try:
        deadline = time.monotonic() + 20
        while time.monotonic() < deadline and child.poll() is None:
            if _blocked_in_open(child.pid):
                return True
            time.sleep(0.1)
        return False
    finally:
        child.kill()
        child.wait()


def _blocked_in_open(pid: int) -> bool:
    """The process waits in the kernel for a FIFO's reader (Linux: its wait channel)."""
    try:
        with open(f"/proc/{pid}/wchan") as f:
            return f.read() in ("wait_for_partner", "fifo_open")
    except OSError:
        return False
