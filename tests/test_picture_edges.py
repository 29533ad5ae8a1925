# sed -i '205s/"face" if thin else "white"/"white"/' schedc/picture.py
"""Bars narrower than a few pixels drop their white edges: at p=64 m=1024 v=4 the edges of sub-pixel
bars painted 71% of a 99.5%-busy timeline white (found by the scale hunt)."""

from __future__ import annotations

from schedc.baselines import baseline_plan
from schedc.problem import Problem


def _edges(plan) -> set[bool]:
    """For each bar group of the timeline: whether its edges are its face's colour."""
    from schedc.picture import figure

    top = figure(plan).axes[0]
    groups = [c for c in top.collections if len(c.get_facecolor()) and len(c.get_paths())]
    return {bool((c.get_edgecolor() == c.get_facecolor()).all()) for c in groups}


def test_wide_bars_keep_white_edges_and_thin_ones_take_their_face() -> None:
    assert _edges(baseline_plan("zb-h1", Problem(p=4, m=8))) == {False}
    assert _edges(baseline_plan("interleaved-zb", Problem(p=4, m=256, v=4))) == {True}
