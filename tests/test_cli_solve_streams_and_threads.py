# sed -i '205s/self.lost = True/pass/' schedc/cli_solve.py
"""``schedc solve`` where its surroundings are unusual: a stderr that has broken once, a call from a
thread other than the main one, and Ctrl-C before any plan exists (schedc/cli_solve.py).

A broken stderr is tried once, not once per progress line; ``main()`` from a thread does not
call ``signal.signal`` (a ValueError there); Ctrl-C before any plan says so in one line.
"""

from __future__ import annotations

import threading

from schedc.cli import main


class _Broken:
    """A stderr whose every write fails, counting the tries."""

    def __init__(self) -> None:
        self.tries = 0

    def write(self, _text: str) -> int:
        self.tries += 1
        raise BrokenPipeError

    def flush(self) -> None:
        pass


def test_once_stderr_has_broken_no_more_progress_lines_are_tried(monkeypatch):
    from schedc import cli_solve

    broken = _Broken()
    monkeypatch.setattr("sys.stderr", broken)
    lines = cli_solve.ProgressLines()
    for _ in range(3):
        lines.line("a progress line")
    assert broken.tries == 1
    again = _Broken()
    monkeypatch.setattr("sys.stderr", again)
    cli_solve.ProgressLines().line("a progress line")  # the next run's lines try stderr again
    assert again.tries == 1


def test_solve_runs_from_a_thread_other_than_the_main_one(capsys):
    codes: list[object] = []

    def call() -> None:
        try:
            codes.append(main(["solve", "--p", "2", "--m", "2", "--backend", "list", "--quiet"]))
        except BaseException as err:
            codes.append(err)

    thread = threading.Thread(target=call)
    thread.start()
    thread.join(60)
    assert codes == [0]
    assert capsys.readouterr().out.startswith("list:")


def test_ctrl_c_before_any_plan_is_one_line_that_nothing_was_written(monkeypatch, capsys, tmp_path):
    def interrupted(*_, **__):
        raise KeyboardInterrupt

    monkeypatch.setattr("schedc.solvers.solve", interrupted)
    out = tmp_path / "plan.json"
    assert main(["solve", "--p", "2", "--m", "2", "--quiet", "-o", str(out)]) == 1
    assert capsys.readouterr().err == ("schedc: error: interrupted before any plan was found; nothing "
                                       "written\n")
    assert not out.exists()
