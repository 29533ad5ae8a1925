# sed -i '90s/\.suffix\.lower()/.suffix/' schedc/picture.py
# sed -i '153s/min(30\.0, max(8\.0,/max(30.0, min(8.0,/' schedc/picture.py
# sed -i '155s/\[rows + 0\.6, 2\.2\]/[2.2, rows + 0.6]/' schedc/picture.py
# sed -i '157s/0\.8 \* width/width/' schedc/picture.py
# sed -i '177s/end == 0 or/end == 0 and/' schedc/picture.py
# sed -i '189s/if unit == 1:/if unit != 1:/' schedc/picture.py
# sed -i '204s/(rank - 0\.4, 0\.8)/(rank + 0.4, 0.8)/' schedc/picture.py
# sed -i '204s/(rank - 0\.4, 0\.8)/(rank, 0.8)/' schedc/picture.py
# sed -i '208s/colors=COLOURS\[kind\]\[0\]/colors=COLOURS[kind][shade]/' schedc/picture.py
# sed -i '208s/rank - 0\.4, rank + 0\.4/rank - 0.4, rank/' schedc/picture.py
# sed -i '210s/(len(str(bar\.mb)) + 1)/len(str(bar.mb))/' schedc/picture.py
# sed -i '210s/width \* inches_per_unit >=/width * inches_per_unit <=/' schedc/picture.py
# sed -i '211s/start + width \/ 2/start + width/' schedc/picture.py
# sed -i '211s/bar\.rank, str(bar\.mb)/bar.rank, str(bar.rank)/' schedc/picture.py
# sed -i '211s/start + width \/ 2, bar\.rank/start + width \/ 2, bar.rank + 1/' schedc/picture.py
# sed -i '214s/(plan\.problem\.p - 0\.5, -0\.5)/(-0.5, plan.problem.p - 0.5)/' schedc/picture.py
# sed -i '214s/p - 0\.5, -0\.5)/p + 0.5, -0.5)/' schedc/picture.py
# sed -i '215s/if k in {kind/if k not in {kind/' schedc/picture.py
# sed -i '217s/plan\.problem\.v > 1/plan.problem.v >= 1/' schedc/picture.py
# sed -i '218s/COLOURS\["F"\]\[1\]/COLOURS["F"][0]/' schedc/picture.py
# sed -i '255s/for t, _ in curve\] + \[end\]/for t, _ in curve] + [0.0]/' schedc/picture.py
# sed -i '251s/float(timeline\.end \/ unit)/float(timeline.end)/' schedc/picture.py
# sed -i '264s/ax\.set_ylim(bottom=0)/ax.set_ylim(top=0)/' schedc/picture.py
# sed -i '267s/problem.p \/\/ 12)/problem.p % 12)/' schedc/picture.py
# sed -i '141s/{"Software": None}/{}/' schedc/picture.py
# sed -i '140s/"Creator": None, "Producer": None/"Creator": None/' schedc/picture.py
# sed -i '138s/{"Date": None, "Creator": None}/{"Date": None}/' schedc/picture.py
"""Plan pictures drawn where the numbers say: bars on their rank's row at the simulator's times (also
in a scaled time unit), the figure's width from the busiest rank, rank 0 on top, labels centred on
wide enough bars, the legend naming what is drawn, and a picture name's extension in any case."""

from __future__ import annotations

from collections.abc import Iterable
from fractions import Fraction

import pytest

pytest.importorskip("matplotlib")

from matplotlib.collections import LineCollection
from matplotlib.colors import to_rgba

from schedc import save_picture
from schedc.baselines import baseline_plan
from schedc.picture import COLOURS, DIGIT_INCHES, figure, picture_format
from schedc.plan import Plan
from schedc.problem import Problem


def _rectangles(ax) -> list[tuple[float, float, float, float]]:
    """(x0, x1, y0, y1) of every bar drawn on the timeline axes (``broken_barh``'s rectangles)."""
    out = []
    for collection in ax.collections:
        for path in getattr(collection, "get_paths", list)():
            vertices = path.vertices
            if len(vertices) >= 4:  # a rectangle, not a tick's segment
                (x0, y0), (x1, y1) = vertices.min(axis=0), vertices.max(axis=0)
                out.append((float(x0), float(x1), float(y0), float(y1)))
    return out


def _flat(rows: Iterable[tuple[float, ...]]) -> list[float]:
    """Sorted rows as one list, for ``pytest.approx`` (which compares no nested tuples)."""
    return [x for row in sorted(rows) for x in row]


def _slots(plan: Plan, scale: Fraction = Fraction(1)) -> list[tuple[float, float, int]]:
    return [(float(s.start * scale), float(s.end * scale), r)
            for r, rank in enumerate(plan.timeline.slots) for s in rank]


def test_an_upper_case_extension_names_its_format(tmp_path):
    """``plan.PNG`` is a PNG (file systems and cameras write upper-case extensions); the check compared
    the suffix as written and refused it."""
    assert [picture_format(name) for name in ("a.PNG", "b.Svg", "c.pdf")] == ["png", "svg", "pdf"]
    path = tmp_path / "plan.PNG"
    save_picture(baseline_plan("gpipe", Problem(p=2, m=2)), path)
    assert path.read_bytes().startswith(b"\x89PNG\r\n\x1a\n")


@pytest.mark.parametrize("m, inches", [(2, 8.0), (20, 12.0), (100, 30.0)])
def test_the_figure_is_a_fifth_of_an_inch_per_action_between_8_and_30_inches(m, inches):
    """p = 2 runs 3 m actions per rank (F, I, W): 6 of them get the 8-inch minimum, 60 get 12 inches,
    300 the 30-inch maximum. Swapped min and max drew every plan 30 inches wide."""
    plan = baseline_plan("1f1b", Problem(p=2, m=m))
    assert all(len(order) == 3 * m for order in plan.orders)
    assert figure(plan).get_figwidth() == pytest.approx(inches)


def test_the_timeline_panel_grows_with_the_ranks_and_outgrows_the_memory_panel():
    """Eight rows of bars need more height than the memory curves (fixed height): the panels' height
    ratios were swapped, squeezing the rows into the smaller panel."""
    def ratios(p: int) -> list[float]:
        top, _ = figure(baseline_plan("gpipe", Problem(p=p, m=2))).axes
        return list(top.get_subplotspec().get_gridspec().get_height_ratios())

    (top8, bottom8), (top2, bottom2) = ratios(8), ratios(2)
    assert top8 > bottom8 and bottom8 == bottom2 and top8 - top2 == pytest.approx(6 * 0.45)


@pytest.mark.parametrize("cost", ["1", "1e100", "1e-290"])
def test_times_a_float_holds_are_drawn_in_cost_units(cost):
    """Only times a float cannot hold (below 1e-300) are rescaled: a plan of ordinary costs got an axis
    in 'units of 1e1' when the test for an ordinary end needed it to be 0 as well."""
    plan = baseline_plan("1f1b", Problem(p=2, m=2, tf=cost, tb=cost, tw=cost))
    top, bottom = figure(plan).axes
    assert bottom.get_xlabel() == "time (cost units)"
    assert _flat(_rectangles(top)) == pytest.approx(
        _flat((start, end, r - 0.4, r + 0.4) for start, end, r in _slots(plan)))


def test_bars_of_tiny_costs_are_drawn_at_their_times_in_the_scaled_unit():
    """Costs of 1e-400: each bar's time is divided by the axis unit (1e-399) before it becomes a float;
    converting first made every bar start at 0 with no width, all on top of each other."""
    plan = baseline_plan("1f1b", Problem(p=2, m=2, tf="1e-400", tb="1e-400", tw="1e-400"))
    top, bottom = figure(plan).axes
    assert bottom.get_xlabel() == "time (units of 1e-399)"
    want = sorted((start, end, r - 0.4, r + 0.4) for start, end, r in _slots(plan, Fraction(10) ** 399))
    assert want[-1][1] == pytest.approx(0.8)  # the makespan, 8e-400, in units of 1e-399
    assert _flat(_rectangles(top)) == pytest.approx(_flat(want))


def test_each_bar_is_centred_on_its_rank_s_row_and_rank_0_is_on_top():
    """A bar covers 0.8 of its row around the rank's tick (y = rank), with rank 0 at the top as in the
    papers and ``schedc show``: the bars were drawn off their rows, or the axis ran upwards."""
    plan = baseline_plan("zb-h1", Problem(p=3, m=3))
    top, _ = figure(plan).axes
    assert _flat(_rectangles(top)) == pytest.approx(
        _flat((start, end, r - 0.4, r + 0.4) for start, end, r in _slots(plan)))
    assert list(top.get_yticks()) == [0, 1, 2]
    assert [t.get_text() for t in top.get_yticklabels()] == ["rank 0", "rank 1", "rank 2"]
    assert top.get_ylim() == (2.5, -0.5)  # rank 0 on top, half a row of margin each side


def test_labels_name_each_bar_s_microbatch_at_its_centre():
    """Labels sit at the centre of their bar on its rank's row and give its microbatch (not its rank);
    with 1-inch-wide bars every bar is labelled."""
    plan = baseline_plan("1f1b", Problem(p=2, m=2))  # 8 inches for 8 time units: bars of 1 unit
    top, _ = figure(plan).axes
    want = sorted(((float(s.start + s.end) / 2, r), str(s.action.mb))
                  for r, rank in enumerate(plan.timeline.slots) for s in rank)
    assert sorted((t.get_position(), t.get_text()) for t in top.texts) == want


def test_a_bar_is_labelled_only_where_its_label_fits_as_drawn():
    """A bar gets its microbatch only if it is about as wide as the label (one digit width per character
    plus one for a margin). The rule takes the axis as 0.8 of the figure's width, an estimate, so the
    test leaves a factor of two: on the axis as laid out a labelled bar is as wide as its label, and
    every bar twice that wide gets one. The label rule took the whole figure width, dropped the
    margin, or was inverted."""
    plan = baseline_plan("1f1b", Problem(p=2, m=10, tf=Fraction(1, 3), tb=1, tw=1))
    fig = figure(plan)
    top, _ = fig.axes
    fig.draw_without_rendering()  # the constrained layout fixes the axis' size

    def inches(x0: float, x1: float) -> float:
        (a, _), (b, _) = top.transData.transform([(x0, 0), (x1, 0)])
        return (b - a) / fig.dpi

    labelled = {(round(x, 9), y) for x, y in (t.get_position() for t in top.texts)}
    sizes = {r: set() for r in range(2)}
    for r, rank in enumerate(plan.timeline.slots):
        for s in rank:
            need = DIGIT_INCHES * (len(str(s.action.mb)) + 1)
            wide = inches(float(s.start), float(s.end))
            sizes[r].add(round(wide / need, 1))
            at = (round(float(s.start + s.end) / 2, 9), r)
            assert at not in labelled or wide >= need
            assert at in labelled or wide < 2 * need
    assert any(0.5 < size < 1 for size in sizes[0])  # the case: F bars a little too narrow for a label


def test_the_legend_names_the_kinds_drawn_and_the_light_shade_only_with_several_stages():
    """A plan of F, I and W lists those in their dark colours, and 'later stage (light)' in the light F
    colour only where a rank holds more than one stage; the kinds drawn were left out, or the shade
    entry shown for v = 1."""
    def legend(plan: Plan) -> list[tuple[str, tuple[float, ...]]]:
        top, _ = figure(plan).axes
        entries = top.get_legend()
        return [(t.get_text(), h.get_facecolor()) for t, h in zip(entries.get_texts(), entries.legend_handles,
                                                                  strict=True)]

    dark = [(k, to_rgba(COLOURS[k][0])) for k in "FIW"]
    assert legend(baseline_plan("1f1b", Problem(p=2, m=2))) == dark
    assert legend(baseline_plan("1f1b", Problem(p=2, m=2, split=False))) == \
        [(k, to_rgba(COLOURS[k][0])) for k in "FB"]
    assert legend(baseline_plan("zb-v", Problem(p=2, m=4, v=2, placement="vshape"))) == \
        [*dark, ("later stage (light)", to_rgba(COLOURS["F"][1]))]


def test_zero_length_actions_of_a_later_stage_are_ticked_across_the_row_in_the_dark_colour():
    """tw = 0 with two stages per rank: every W is a tick from the top to the bottom of its rank's bar
    row (rank - 0.4 to rank + 0.4), in W's dark colour, which a thin line needs to be seen: the light
    shade of a later stage, or a tick ending at the row's middle, was drawn."""
    plan = baseline_plan("zb-v", Problem(p=2, m=4, v=2, placement="vshape", tw=0))
    top, _ = figure(plan).axes
    ticks = [(c, seg) for c in top.collections if isinstance(c, LineCollection) for seg in c.get_segments()]
    want = sorted((float(s.start), r) for r, rank in enumerate(plan.timeline.slots) for s in rank
                  if s.action.kind == "W")
    assert len(ticks) == len(want) == plan.problem.num_tasks // 3
    assert _flat((float(seg[0][0]), float(seg[0][1] + 0.4)) for _, seg in ticks) == pytest.approx(_flat(want))
    for collection, seg in ticks:
        assert seg[1][1] - seg[0][1] == pytest.approx(0.8) and seg[1][0] == seg[0][0]
        assert [tuple(c) for c in collection.get_colors()] == [to_rgba(COLOURS["W"][0])]


@pytest.mark.parametrize("p, m, cost, unit", [(3, 3, "1", Fraction(1)),
                                              (2, 2, "1e-400", Fraction(1, 10**399))])
def test_every_rank_s_memory_line_runs_forward_to_the_plan_s_end(p, m, cost, unit):
    """Each rank's step line goes forward in time and ends at the plan's end (in the axis unit), where
    its rank has freed everything: the last point was put at time 0 (a line back across the plot), or
    the end was not converted to the axis unit (0 for 1e-400 costs, drawn in units of 1e-399)."""
    plan = baseline_plan("1f1b", Problem(p=p, m=m, tf=cost, tb=cost, tw=cost))
    _, bottom = figure(plan).axes
    end = float(plan.timeline.end / unit)
    lines = [line for line in bottom.get_lines() if line.get_label().startswith("rank")]
    assert len(lines) == p
    for line in lines:
        times = [float(t) for t in line.get_xdata()]
        assert times == sorted(times) and times[-1] == pytest.approx(end) and line.get_ydata()[-1] == 0


def test_the_memory_axis_starts_at_zero_and_shows_every_peak():
    """The activation axis runs from 0 up past the highest peak: it was capped at 0 instead."""
    plan = baseline_plan("1f1b", Problem(p=3, m=4))
    _, bottom = figure(plan).axes
    low, high = bottom.get_ylim()
    assert low == 0 and high >= max(plan.timeline.peak_mem) > 0


@pytest.mark.parametrize("p, columns", [(3, 1), (11, 1), (12, 2)])
def test_the_memory_legend_takes_a_column_per_twelve_ranks(p, columns):
    """One legend column for up to 11 ranks, a second from 12: the columns came from p modulo 12, a
    column per rank for small p."""
    fig = figure(baseline_plan("gpipe", Problem(p=p, m=2)))
    fig.draw_without_rendering()
    texts = fig.axes[1].get_legend().get_texts()
    assert len({round(t.get_window_extent().x0) for t in texts}) == columns


@pytest.mark.parametrize("fmt", ["png", "svg", "pdf"])
def test_a_picture_names_no_software_version(fmt):
    """The same plan gives the same bytes with any matplotlib: no creator, producer or software entry
    (each carrying matplotlib's version) is written in any format."""
    import matplotlib

    from schedc.picture import picture_bytes

    data = picture_bytes(baseline_plan("gpipe", Problem(p=2, m=2)), fmt)
    assert matplotlib.__version__.encode() not in data
