"""One line, never a traceback, under conditions a shared login node or a job script brings: a closed
stdout at a usage error, memory or threads refused by a limit, a closed stderr (whose notes then
went into the report on stdout), and a torch that is installed but fails to load."""

from __future__ import annotations

import builtins
import subprocess
import sys

import pytest

from schedc.cli import main
from tests.cli_helpers import run

HAND = "0F0,0F1,0I0,0W0,0I1,0W1\n1F1,1F0,1I0,1W0,1I1,1W1\n"  # the last stage runs microbatch 1 first


@pytest.mark.parametrize("argv, status", [(["solve", "--p", "4", "--bogus"], 2), (["--version"], 0),
                                          (["solve", "--help"], 0)])
@pytest.mark.parametrize("closed", [">&-", "2>&-"])
def test_a_closed_stream_at_a_usage_error_or_help_exits_as_usual(argv, status, closed):
    """``>&-``: sys.stdout is None, and flushing it raised AttributeError (exit 1, a traceback); and
    ``2>&-``: argparse's error went to None, with the same result."""
    code = f"import sys; from schedc.cli import main; sys.exit(main({argv!r}))"
    command = ["bash", "-c", f'"{sys.executable}" -c "$0" {closed}', code]
    done = subprocess.run(command, capture_output=True, text=True)
    assert done.returncode == status and "Traceback" not in done.stderr


@pytest.mark.parametrize("raised, message", [
    (MemoryError(), "schedc: error: out of memory: the problem or plan needs more than this process "
     "may use\n"),
    (RuntimeError("Resource temporarily unavailable"), "schedc: error: the system refused a thread or memory "
     "(Resource temporarily unavailable): give fewer workers or threads, or more memory\n"),
])
def test_memory_or_threads_refused_is_one_line(monkeypatch, capsys, raised, message):
    """ulimit -v: a large baseline's MemoryError, or CP-SAT failing to start its threads."""
    import schedc.solvers as solvers

    def refused(*args: object, **kwargs: object) -> None:
        raise raised

    monkeypatch.setattr(solvers, "solve", refused)
    assert main(["solve", "--p", "2", "--m", "2"]) == 1
    assert capsys.readouterr().err == message


def test_another_runtime_error_is_still_a_traceback(monkeypatch):
    """Only the system's refusals are the user's limits; any other RuntimeError is a bug to see."""
    import schedc.solvers as solvers

    def broken(*args: object, **kwargs: object) -> None:
        raise RuntimeError("an invariant broke")

    monkeypatch.setattr(solvers, "solve", broken)
    with pytest.raises(RuntimeError, match="an invariant broke"):
        main(["solve", "--p", "2", "--m", "2"])


def test_with_stderr_closed_notes_stay_out_of_the_report(monkeypatch, capsys, tmp_path):
    """``2>&-``: print(file=None) writes to stdout, so the renumbering note became the report's first
    line; the error of a bad option likewise."""
    (tmp_path / "hand.csv").write_text(HAND)
    monkeypatch.setattr(sys, "stderr", None)
    code, out, _ = run(capsys, "show", str(tmp_path / "hand.csv"), "--csv", str(tmp_path / "out.csv"))
    assert code == 0 and "schedc: note" not in out and "(orders only): p=2 m=2" in out.splitlines()[0]
    assert main(["solve", "--p", "0", "--m", "2"]) == 1 and "schedc: error" not in capsys.readouterr().out


def test_a_torch_that_fails_to_load_is_not_called_missing(monkeypatch, capsys):
    """Under ulimit -v numpy's C extension failed to map inside ``import torch``: the advice was to
    install torch, which was installed."""
    real = builtins.__import__

    def failing(name, *args, **kwargs):
        if name == "torch":
            raise ImportError("libtorch_cpu.so: failed to map segment from shared object")
        return real(name, *args, **kwargs)

    monkeypatch.delitem(sys.modules, "torch", raising=False)
    monkeypatch.setattr(builtins, "__import__", failing)
    code, _, err = run(capsys, "profile", "--p", "2", "--m", "2")
    assert code == 1 and err == ("schedc: error: profile: torch is installed but failed to import "
                                 "(libtorch_cpu.so: failed to map segment from shared object)\n")
