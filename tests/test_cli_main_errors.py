# sed -i '120s/err.__cause__ or err.__context__/err.__cause__/' schedc/cli.py
# sed -i '68s/" ".join(str(err).split("\\n"))/str(err)/' schedc/cli.py
"""``schedc``'s entry point on errors raised from below it: a Ctrl-C that a C++ module's import turned
into ImportError implicitly, and an OSError whose message spans lines."""

from __future__ import annotations

import pytest

from schedc.cli import main


def test_ctrl_c_during_an_import_met_while_handling_it_exits_quietly(
        monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]) -> None:
    """An extension module that raises ImportError while a KeyboardInterrupt is being handled (no
    ``from``) leaves it as the ImportError's context, not its cause: still a Ctrl-C (exit 130, no
    traceback); looking at the cause alone re-raised it."""
    import schedc.solvers as solvers

    def interrupted_import(*args: object, **kwargs: object) -> None:
        try:
            raise KeyboardInterrupt
        except KeyboardInterrupt:
            raise ImportError("initialization failed")  # noqa: B904 (the implicit chain is the case)

    monkeypatch.setattr(solvers, "solve", interrupted_import)
    assert main(["solve", "--p", "2", "--m", "2"]) == 130
    assert capsys.readouterr().err == ""


def test_an_os_error_over_two_lines_is_reported_on_one_with_a_space(
        monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]) -> None:
    """An OSError that is no write of the report (a measurement's, say) prints as one error line; its
    line break reads as a space, not as a literal backslash-n escape."""
    import schedc.solvers as solvers

    def failing(*args: object, **kwargs: object) -> None:
        raise OSError("the link timed out\nafter 5 s")

    monkeypatch.setattr(solvers, "solve", failing)
    assert main(["solve", "--p", "2", "--m", "2"]) == 1
    assert capsys.readouterr().err == "schedc: error: the link timed out after 5 s\n"
