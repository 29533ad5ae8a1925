# sed -i '152s/min(plan.problem.p, MAX_ROWS)/plan.problem.p/' schedc/picture.py
# sed -i '212s/-(-plan.problem.p \/\/ MAX_ROWS)/1/' schedc/picture.py
# sed -i '257s/if problem.p <= LEGEND_RANKS else/if True else/' schedc/picture.py
# sed -i '262s/if problem.p <= LEGEND_RANKS else/if True else/' schedc/picture.py
# sed -i '265s/if ax.get_legend_handles_labels()\[1\]:/if True:/' schedc/picture.py
"""Many ranks: the picture keeps a bounded height and a legend that fits. At p=100 the memory
legend's columns of rank names squeezed both panels to nothing (a matplotlib warning on stderr),
and at p=3,000 the image was 135,000 pixels high and took 55 s (found by a user's review)."""

from __future__ import annotations

import warnings

from schedc.baselines import baseline_plan
from schedc.picture import LEGEND_RANKS, MAX_ROWS, figure
from schedc.problem import Problem


def _legend(ax) -> list[str]:
    legend = ax.get_legend()
    return [] if legend is None else [t.get_text() for t in legend.get_texts()]


def test_a_hundred_ranks_draw_without_warning_in_a_bounded_figure() -> None:
    plan = baseline_plan("1f1b", Problem(p=100, m=100, mem=50))
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        fig = figure(plan)
        fig.canvas.draw()  # the layout runs here: its collapse was the warning
    top, bottom = fig.axes
    assert fig.get_figheight() <= 1.2 + 0.45 * MAX_ROWS + 2.2
    assert [t.get_text() for t in top.get_yticklabels()] == [f"rank {r}" for r in range(0, 100, 2)]
    assert _legend(bottom) == ["cap"]
    assert len([line for line in bottom.get_lines() if line.get_linestyle() == "-"]) == 100


def test_up_to_the_legends_limit_every_rank_is_named_on_both_panels() -> None:
    plan = baseline_plan("gpipe", Problem(p=LEGEND_RANKS, m=2))
    top, bottom = figure(plan).axes
    names = [f"rank {r}" for r in range(LEGEND_RANKS)]
    assert [t.get_text() for t in top.get_yticklabels()] == names
    assert _legend(bottom) == names


def test_past_the_legends_limit_an_uncapped_plan_has_no_memory_legend() -> None:
    with warnings.catch_warnings():
        warnings.simplefilter("error")  # an empty legend is matplotlib's "No artists" warning
        top, bottom = figure(baseline_plan("gpipe", Problem(p=LEGEND_RANKS + 1, m=2))).axes
    assert _legend(bottom) == [] and bottom.get_ylabel() == "activation (a curve per rank)"
    assert len(top.get_yticklabels()) == LEGEND_RANKS + 1
