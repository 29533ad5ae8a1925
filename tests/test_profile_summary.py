# sed -i '380s/if problem.split else "-"/if not problem.split else "-"/' schedc/cli_profile.py
# sed -i '379s/str(problem.stage_rank\[s\])/str(s % problem.p)/' schedc/cli_profile.py
# sed -i '385s/if stage_bytes:/if not stage_bytes:/' schedc/cli_profile.py
# sed -i '378s/fmt_exact(t)/str(t)/' schedc/cli_profile.py
# sed -i '384s/{fmt_exact(problem.comm)}/{problem.comm}/' schedc/cli_profile.py
"""The summary profile prints when it writes a file: each stage's rank and bytes, the latency and
and each rank's unit."""

from __future__ import annotations

from fractions import Fraction

import pytest

from schedc.cli_profile import _print
from schedc.problem import Problem, StageCost
from schedc.runtime.activation_bytes import StageBytes


def _rows(out: str) -> list[list[str]]:
    """The table's rows, split into words (a byte count is two: '2 KiB')."""
    return [line.split() for line in out.splitlines() if line.split() and line.split()[0].isdigit()]


def test_the_summary_names_each_stages_own_rank_and_every_ranks_unit(
        capsys: pytest.CaptureFixture[str]) -> None:
    """V-shape placement puts stages 0..3 on ranks 0, 1, 1, 0 (not s mod p); each rank's unit is v
    times its largest stage's bytes, 2 x 2 KiB here, and the latency says it was given."""
    problem = Problem(p=2, m=4, v=2, placement="vshape",
                      stage_costs=tuple(StageCost(10 + s, 20 + s, 30 + s) for s in range(4)))
    _print(problem, (StageBytes(2048, 1024),) * 4, "out.toml", comm_given=True)
    out = capsys.readouterr().out
    rows = _rows(out)
    assert [(r[0], r[1]) for r in rows] == [(str(s), str(problem.stage_rank[s])) for s in range(4)]
    assert [r[1] for r in rows] == ["0", "1", "1", "0"]
    assert [r[2:5] for r in rows] == [[str(10 + s), str(20 + s), str(30 + s)] for s in range(4)]
    assert [r[5:] for r in rows] == [["2", "KiB", "1", "KiB"]] * 4  # held after F, after I
    assert "P2P latency (one way): 0 us (given by --comm)\n" in out
    assert "one unit of each rank's cap: 4 KiB 4 KiB\n" in out
    assert out.endswith("wrote out.toml; next: schedc solve --problem out.toml\n")


def test_an_unsplit_problem_has_no_bytes_after_i_and_a_measured_latency(
        capsys: pytest.CaptureFixture[str]) -> None:
    """Without the split backward there is no I to hold bytes after: '-' in that column; a latency
    not given by --comm is the measured one and says nothing of --comm."""
    problem = Problem(p=2, m=4, split=False, comm=Fraction(1, 20),
                      stage_costs=tuple(StageCost(Fraction(3, 2), 2, 0) for _ in range(2)))
    _print(problem, (StageBytes(2048, 1024),) * 2, "out.toml", comm_given=False)
    out = capsys.readouterr().out
    assert [r[-3:] for r in _rows(out)] == [["2", "KiB", "-"]] * 2
    assert "P2P latency (one way): 0.05 us\n" in out and "--comm" not in out  # decimals, as describe()
    assert [r[2:4] for r in _rows(out)] == [["1.5", "2"]] * 2

