# sed -i '232s/len(set(caps)) == 1/len(set(caps)) >= 1/' schedc/picture.py
# sed -i '238s/if any(cap is not None/if all(cap is not None/' schedc/picture.py
"""Plan pictures (--plot): the bars and memory curves are the simulator's, files are whole and
reproducible, and bad requests fail before any work."""

from __future__ import annotations

import sys
import xml.etree.ElementTree as ET
from dataclasses import replace
from fractions import Fraction

import pytest
from hypothesis import given, settings

from schedc.baselines import baseline_plan
from schedc.errors import ProblemError, SchedcError
from schedc.picture import COLOURS, bars, figure, picture_bytes, save_picture
from schedc.problem import Problem
from schedc.solvers.incumbent import list_plan
from tests.cli_helpers import run
from tests.strategies import problems

MAGIC = {"png": b"\x89PNG\r\n\x1a\n", "pdf": b"%PDF-"}


@settings(max_examples=15, deadline=None)
@given(problems(max_p=4, max_m=6))
def test_bars_are_the_timeline_and_chunks_follow_the_placement(problem):
    plan = list_plan(problem, "makespan")
    drawn = bars(plan)
    slots = [(r, s.start, s.end, s.action) for r, rank in enumerate(plan.timeline.slots) for s in rank]
    assert [(b.rank, b.start, b.end, b.kind, b.mb) for b in drawn] == \
        [(r, start, end, a.kind, a.mb) for r, start, end, a in slots]
    for bar, (_, _, _, action) in zip(drawn, slots, strict=True):
        assert problem.rank_stages[bar.rank][bar.chunk] == action.stage


def test_the_figure_draws_every_task_and_each_ranks_peak_and_cap():
    """vshape, v = 2, a cap: one bar per task in its kind's colour (light for a rank's second stage),
    one memory line per rank peaking at the simulator's peak, and the cap as a dashed line."""
    problem = Problem(p=3, m=6, v=2, placement="vshape", mem=(3,))
    plan = baseline_plan("zb-v", problem)
    top, bottom = figure(plan).axes
    assert sum(len(c.get_paths()) for c in top.collections) == problem.num_tasks
    colours = {tuple(c.get_facecolor()[0]) for c in top.collections}
    from matplotlib.colors import to_rgba

    assert colours == {to_rgba(COLOURS[k][shade]) for k in "FIW" for shade in (0, 1)}
    lines = {line.get_label(): line for line in bottom.get_lines()}
    for r in range(problem.p):
        assert max(lines[f"rank {r}"].get_ydata()) == plan.timeline.peak_mem[r]
    caps = [line.get_ydata() for line in bottom.get_lines() if line.get_linestyle() == "--"]
    assert [list(y) for y in caps if len(y)] == [[3, 3]]  # the other is the legend's empty entry


def test_memory_freed_and_allocated_at_one_instant_draws_no_spike():
    """zb-v at p = 1 runs each W up to the next F: the line dipped to the level between."""
    plan = baseline_plan("zb-v", Problem(p=1, m=4, v=2, placement="vshape"))
    curve = plan.timeline.memory_curve(plan.problem, 0)
    assert len({t for t, _ in curve}) < len(curve)  # the case: two changes at one time
    (line,) = [line for line in figure(plan).axes[1].get_lines() if line.get_label() == "rank 0"]
    times = list(line.get_xdata())
    assert times[:-1] == sorted(set(times[:-1])) and max(line.get_ydata()) == plan.timeline.peak_mem[0]


@pytest.mark.parametrize("mem", [(2, None, 3), (2, 3, 4)])
def test_caps_that_differ_are_drawn_per_rank_in_its_colour_and_none_gets_no_line(mem):
    """A legend entry explains the dashed lines (it was left out unless every rank had a cap); caps
    that merely were all set were drawn as one black line at the first rank's cap."""
    problem = Problem(p=3, m=4, mem=mem)
    _, bottom = figure(list_plan(problem, "makespan")).axes
    ranks = {line.get_label(): line for line in bottom.get_lines() if line.get_label().startswith("rank")}
    caps = [line for line in bottom.get_lines() if line.get_linestyle() == "--" and len(line.get_ydata())]
    assert sorted((list(line.get_ydata()), line.get_color()) for line in caps) == [
        ([cap, cap], ranks[f"rank {r}"].get_color()) for r, cap in enumerate(mem) if cap is not None]
    assert [t.get_text() for t in bottom.get_legend().get_texts()] == \
        ["rank 0", "rank 1", "rank 2", "cap (rank's colour)"]


def test_a_cap_above_m_gets_no_line_and_leaves_the_axis_to_the_curves():
    """No curve reaches a cap above m; a budget's caps (52,428.5 units, now that profile no longer
    clips them to m) stretched the memory axis to 55,050 and flattened the curves on it. A cap of
    m, which gpipe reaches, keeps its line."""
    plan = baseline_plan("gpipe", Problem(p=2, m=4, mem=(Fraction(104857, 2), 4)))
    _, bottom = figure(plan).axes
    dashed = [line for line in bottom.get_lines() if line.get_linestyle() == "--" and len(line.get_ydata())]
    assert [list(line.get_ydata()) for line in dashed] == [[4, 4]] and bottom.get_ylim()[1] < 5


def test_a_source_with_dollars_is_drawn_as_written_not_as_mathtext():
    plan = replace(baseline_plan("gpipe", Problem(p=2, m=2)), source="cost_$5_$6.csv\tx")
    assert picture_bytes(plan, "png").startswith(MAGIC["png"])
    assert figure(plan).get_suptitle().startswith("cost_$5_$6.csv\\tx: p=2 m=2")


def test_the_title_prints_the_bubble_as_the_summary_does():
    """1f1b on 3000 microbatches idles 1/3001 of its step: '<0.1%', as `solve` prints it, not 0.0%."""
    from schedc.exact import percent

    plan = baseline_plan("1f1b", Problem(p=2, m=3000, split=False))
    assert 0 < plan.timeline.bubble * 1000 < 1
    title = figure(plan).get_suptitle()
    assert title.endswith(f"bubble {percent(plan.timeline.bubble)}") and title.endswith("<0.1%")


@pytest.mark.parametrize("source", ["/data/" + "dumps/" * 20 + "zb-v.csv", "x" * 300], ids=["path", "word"])
def test_a_long_source_is_wrapped_whole_inside_the_figure(source):
    """A torch CSV's long path made a one-line title wider than the figure, cut off at both edges."""
    from matplotlib.backends.backend_agg import FigureCanvasAgg

    plan = replace(baseline_plan("gpipe", Problem(p=2, m=2)), source=source)
    fig = figure(plan)
    canvas = FigureCanvasAgg(fig)
    canvas.draw()
    title, drawn = fig.get_suptitle(), fig.get_tightbbox(canvas.get_renderer())
    assert title.replace("\n", "").startswith(source + ": p=2 m=2") and title.endswith("bubble 25.0%")
    assert drawn.x0 >= 0 and drawn.x1 <= fig.bbox_inches.x1


@pytest.mark.parametrize("fmt", ["png", "svg", "pdf"])
def test_cli_writes_each_format_whole_and_the_same_bytes_twice(capsys, tmp_path, fmt):
    paths = [tmp_path / f"a.{fmt}", tmp_path / f"b.{fmt}"]
    for path in paths:
        code, out, _ = run(capsys, "baseline", "1f1b", "--p", "3", "--m", "4", "--plot", str(path))
        assert code == 0 and f"wrote {path}" in out
    data = paths[0].read_bytes()
    assert data == paths[1].read_bytes()
    if fmt == "svg":
        assert ET.fromstring(data).tag.endswith("svg")
    else:
        assert data.startswith(MAGIC[fmt])


def test_bad_extension_and_missing_matplotlib_fail_before_solving(capsys, tmp_path, monkeypatch):
    monkeypatch.setattr("schedc.solvers.solve", lambda *a, **k: pytest.fail("solved before the check"))
    code, out, err = run(capsys, "solve", "--p", "2", "--m", "2", "--plot", str(tmp_path / "t.jpg"))
    assert code == 1 and out == "" and "the name must end in .png, .svg, .pdf" in err
    monkeypatch.setitem(sys.modules, "matplotlib", None)  # import matplotlib now raises ImportError
    code, out, err = run(capsys, "solve", "--p", "2", "--m", "2", "--plot", str(tmp_path / "t.png"))
    # not 'schedc[plot]': schedc is installed from a checkout, not a registry
    assert (code, out) == (1, "")
    assert err == "schedc: error: --plot needs matplotlib: pip install matplotlib\n"
    assert not list(tmp_path.iterdir())


def test_save_picture_names_a_wrong_format_and_missing_matplotlib_in_its_own_errors(tmp_path, monkeypatch):
    """A format is a name chosen from a list, a ProblemError (a bare SchedcError before); without
    matplotlib save_picture and figure raised ModuleNotFoundError, not the CLI's one line."""
    plan = baseline_plan("1f1b", Problem(p=2, m=2))
    with pytest.raises(ProblemError, match=r"^picture .*t\.jpg: the name must end in \.png, \.svg, \.pdf$"):
        save_picture(plan, tmp_path / "t.jpg")
    monkeypatch.setitem(sys.modules, "matplotlib", None)
    with pytest.raises(SchedcError, match=r"^save_picture needs matplotlib: pip install matplotlib$"):
        save_picture(plan, tmp_path / "t.png")
    with pytest.raises(SchedcError, match=r"^figure needs matplotlib: pip install matplotlib$"):
        figure(plan)
    assert not list(tmp_path.iterdir())


def test_plot_and_another_output_on_one_file_is_refused(capsys, tmp_path):
    path = str(tmp_path / "x.svg")
    code, _, err = run(capsys, "baseline", "gpipe", "--p", "2", "--m", "2", "--trace", path, "--plot", path)
    assert code == 1 and "--trace and --plot name the same file" in err


def test_times_too_small_for_a_float_are_drawn_in_a_unit_that_fits():
    """Costs of 1e-400 (valid down to 1e-999): every float time was 0, and the scale divided by it."""
    tiny = Problem(p=2, m=2, tf="1e-400", tb="1e-400", tw="1e-400")
    _, bottom = figure(baseline_plan("1f1b", tiny)).axes
    assert bottom.get_xlabel() == "time (units of 1e-399)"  # the makespan is 8e-400
    lines = {line.get_label(): line for line in bottom.get_lines()}
    assert max(lines["rank 0"].get_xdata()) == float(baseline_plan("1f1b", tiny).makespan * 10**399) == 0.8


def test_zero_length_actions_are_drawn_as_ticks_at_their_times():
    """tw = 0: a W has no width, so its bar drew nothing; each gets a tick at its time on its rank."""
    from matplotlib.collections import LineCollection

    plan = baseline_plan("zb-h1", Problem(p=2, m=3, tw=0))
    top, _ = figure(plan).axes
    ticks = sorted((float(seg[0][0]), float(seg[0][1] + 0.4)) for c in top.collections
                   if isinstance(c, LineCollection) for seg in c.get_segments())
    assert ticks == sorted((float(s.start), r) for r, rank in enumerate(plan.timeline.slots)
                           for s in rank if s.action.kind == "W")


def test_a_plan_too_large_to_draw_is_refused_in_one_line_before_any_work(capsys, tmp_path, monkeypatch):
    """Plans go up to 10 million tasks, whose picture would need about 17 GB (288,000 took 490 MB):
    above ``MAX_TASKS`` the picture is refused, ``solve`` refuses before its search and ``baseline``
    before it builds the plan (1e6 tasks took 24 s to build before the refusal)."""
    monkeypatch.setattr("schedc.picture.MAX_TASKS", 11)  # p=2 m=2 has 12 tasks
    path = str(tmp_path / "t.png")
    with monkeypatch.context() as built:
        built.setattr("schedc.cli_baselines.baseline_plan", lambda *a: pytest.fail("built before the check"))
        code, out, err = run(capsys, "baseline", "1f1b", "--p", "2", "--m", "2", "--plot", path)
    assert code == 1 and err == "schedc: error: a picture draws at most 11 tasks (about 2 GB of memory, " \
                                "and each task under a pixel), this plan has 12: use --trace instead\n"
    monkeypatch.setattr("schedc.solvers.solve", lambda *a, **k: pytest.fail("solved before the check"))
    code, out, err = run(capsys, "solve", "--p", "2", "--m", "2", "--plot", path)
    assert code == 1 and out == "" and "a picture draws at most 11 tasks" in err
    assert not list(tmp_path.iterdir())
    monkeypatch.setattr("schedc.picture.MAX_TASKS", 12)
    assert run(capsys, "baseline", "1f1b", "--p", "2", "--m", "2", "--plot", path)[0] == 0
