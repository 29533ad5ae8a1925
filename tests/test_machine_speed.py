"""benchmarks/machine_speed.py: the speed figures that let benchmark runs from different days be
compared, and their place in solver_quality.py's JSON."""

from __future__ import annotations

import json
from fractions import Fraction

import pytest

from tests.benchmark_scripts import load_benchmark


def test_both_figures_are_measured_on_short_workloads():
    speed = load_benchmark("machine_speed")
    sweep = {inst.name: inst.problem for inst in load_benchmark("quality_instances").cap_sweep(60)}
    assert sweep["caps-p4-m16-v2-split-c1_2-mem3-uneq"] == speed.REFERENCE  # as its docstring says
    assert 0 < speed.cpsat_seconds_per_dtime(0.05) < 1000
    assert 0 < speed.python_seconds(1) < 60


def test_help_and_unknown_options_measure_nothing(capsys, monkeypatch):
    """It had no options at all: --help or a typo ran the 5-10 s workload and printed its figures."""
    speed = load_benchmark("machine_speed")
    monkeypatch.setattr(speed, "measure", lambda: pytest.fail("measured"))
    for argv, code in ((["--help"], 0), (["--bogus"], 2)):
        with pytest.raises(SystemExit) as stop:
            speed.main(argv)
        assert stop.value.code == code
    assert "How fast this machine runs the solver" in capsys.readouterr().out


def test_solver_quality_records_the_speed_at_the_start_and_at_the_end(monkeypatch, tmp_path):
    quality = load_benchmark("solver_quality")
    figures = iter([{"cpsat_s_per_dtime": 1.0, "python_s": 0.5}, {"cpsat_s_per_dtime": 2.0, "python_s": 0.7}])
    monkeypatch.setattr(quality.machine_speed, "measure", lambda: next(figures))

    def measured(job):
        inst = job[0]
        return quality.Record(inst.name, inst.group, inst.problem.num_tasks, inst.time_limit,
                              value=Fraction(151), lower_bound=Fraction(151), status="optimal", fits=True)

    monkeypatch.setattr(quality, "_run", measured)
    out = tmp_path / "q.json"
    assert quality.main(["--only", "headline", "--json", str(out)]) == 0
    meta = json.loads(out.read_text())["meta"]
    assert meta["speed"] == {"start": {"cpsat_s_per_dtime": 1.0, "python_s": 0.5},
                             "end": {"cpsat_s_per_dtime": 2.0, "python_s": 0.7}}
