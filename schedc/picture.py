"""Plans -> a picture (PNG, SVG or PDF): each rank's timeline as bars, and its activation memory.

The text timeline (``schedc show``) fits a terminal and the Chrome trace needs a browser; a picture
goes into a paper, a README or an issue. Top panel: one row per rank, one bar per action, coloured
by kind (F, I, W, B) and shaded by the rank's stage (its first stage dark, a later one light, as in
the Zero Bubble and DualPipe figures), labelled with the microbatch where the bar is wide enough to
read. Bottom panel: every rank's activation memory over time against its cap, both from the
simulator, so the picture shows the numbers schedc prints and nothing else.

matplotlib is imported only here, and only when a picture is asked for (``pip install ".[plot]"``
in a checkout, or matplotlib alone); its object-oriented API (``Figure`` without pyplot) needs no
display and keeps no global state.
"""

from __future__ import annotations

import io
import os
import statistics
import textwrap
from dataclasses import dataclass
from fractions import Fraction
from pathlib import Path
from typing import TYPE_CHECKING

from schedc.errors import ArgumentError, ProblemError, SchedcError
from schedc.exact import decade_exponent, fmt, percent
from schedc.input_files import checked_path
from schedc.output_paths import write_file
from schedc.plan import Plan
from schedc.problem import Problem

if TYPE_CHECKING:
    from matplotlib.axes import Axes
    from matplotlib.figure import Figure
    from matplotlib.patches import Patch

FORMATS = ("png", "svg", "pdf")
TITLE_CHARS_PER_INCH = 11  # DejaVu Sans at 10 pt averages 6.4 pt a character: 11.2 an inch
COLOURS = {  # kind -> (first stage of a rank, later stages): matplotlib's tab20 pairs
    "F": ("#1f77b4", "#aec7e8"),
    "I": ("#ff7f0e", "#ffbb78"),
    "W": ("#2ca02c", "#98df8a"),
    "B": ("#d62728", "#ff9896"),
}
INCHES_PER_ACTION = 0.2
"""Figure width per action of the busiest rank (between 8 and 30 inches in all)."""
EDGE_MIN_INCHES = 0.03
"""Bars narrower than this (about 3 pixels at matplotlib's 100 dpi) lose their white edges: the
edges of a 99.5%-busy pipeline's sub-pixel bars (p=64 m=1024 v=4) painted 71% of the picture white."""
DIGIT_INCHES = 0.05
"""Width of one digit of a 6-point label: a bar narrower than its label plus a margin gets none."""
MAX_TASKS = 1_000_000
"""Largest plan drawn. 288,000 tasks took 9.4 s and 490 MB (growing linearly), and a figure at most
30 inches wide gives such a plan's tasks less than a pixel each; plans go up to 10 million tasks,
whose picture would need about 17 GB. The trace shows any size."""
ROW_INCHES = 0.45
"""Height of one rank's row of bars, up to ``MAX_ROWS`` ranks; more ranks share that height."""
MAX_ROWS = 64
"""Ranks drawn at full row height and named each on the axis: above it the timeline panel keeps 64
rows' height (p=3,000 drew a 135,000-pixel-high image in 55 s) and names every k-th rank."""
LEGEND_RANKS = 24
"""Most ranks the memory panel's legend names: its columns of 12 names squeezed the panels to
nothing from about p=100 (matplotlib warned that its layout collapsed). Above it the curves,
coloured in matplotlib's cycle of ten, go unnamed and the legend keeps the cap."""


@dataclass(frozen=True)
class Bar:
    """One action as drawn: its rank, time span, kind, microbatch and the rank's stage index."""

    rank: int
    start: Fraction
    end: Fraction
    kind: str
    mb: int
    chunk: int
    """Position of the action's stage among its rank's stages (0: the first, layer order)."""


def bars(plan: Plan) -> list[Bar]:
    """Every action of the plan with the simulator's times, rank by rank."""
    chunk = {s: i for stages in plan.problem.rank_stages for i, s in enumerate(stages)}
    return [Bar(r, slot.start, slot.end, slot.action.kind, slot.action.mb, chunk[slot.action.stage])
            for r, slots in enumerate(plan.timeline.slots) for slot in slots]


def picture_format(path: str, what: str = "--plot") -> str:
    """The format a picture path names by its extension; a one-line error for any other."""
    suffix = Path(path).suffix.lower().lstrip(".")
    if suffix not in FORMATS:
        raise ProblemError(f"{what} {path}: the name must end in {', '.join('.' + f for f in FORMATS)}")
    return suffix


def require_matplotlib(what: str = "--plot") -> None:
    """A one-line error, before any work, where matplotlib is not installed."""
    try:
        import matplotlib  # noqa: F401
    except ImportError:
        raise SchedcError(f"{what} needs matplotlib: pip install matplotlib") from None


def check_size(problem: Problem) -> None:
    """A one-line refusal, before any work, of a plan too large to draw (``MAX_TASKS``)."""
    if problem.num_tasks > MAX_TASKS:
        raise SchedcError(f"a picture draws at most {MAX_TASKS:,} tasks (about 2 GB of memory, and each "
                          f"task under a pixel), this plan has {problem.num_tasks:,}: use --trace instead")


def picture_bytes(plan: Plan, fmt: str) -> bytes:
    """The picture file's whole content, rendered before any file is touched."""
    import matplotlib

    buffer = io.BytesIO()
    with matplotlib.rc_context({"svg.hashsalt": "schedc"}):  # SVG ids from a fixed salt, not a random one
        figure(plan).savefig(buffer, format=fmt, metadata=_metadata(fmt))
    return buffer.getvalue()


def save_picture(plan: Plan, path: str | os.PathLike[str]) -> None:
    """Writes the plan's picture in the format its name gives, all-or-nothing (``write_file``)."""
    if not isinstance(plan, Plan):
        raise ArgumentError(f"save_picture needs a Plan, got {type(plan).__name__}")
    path = checked_path(path, "picture", ArgumentError)
    fmt = picture_format(path, "picture")
    require_matplotlib("save_picture")
    data = picture_bytes(plan, fmt)
    try:
        write_file(path, data)
    except OSError as err:
        raise SchedcError(f"cannot write {path}: {err.strerror or err}") from None


def _metadata(fmt: str) -> dict[str, str | None]:
    """No creation date or software version in the file, so the same plan gives the same bytes."""
    if fmt == "svg":
        return {"Date": None, "Creator": None}
    if fmt == "pdf":
        return {"CreationDate": None, "Creator": None, "Producer": None}
    return {"Software": None}


def figure(plan: Plan) -> Figure:
    """The timeline above the memory curves, sharing the time axis."""
    if not isinstance(plan, Plan):
        raise ArgumentError(f"figure needs a Plan, got {type(plan).__name__}")
    check_size(plan.problem)
    require_matplotlib("figure")  # ModuleNotFoundError before, from save_picture too
    from matplotlib.figure import Figure

    rows = ROW_INCHES * min(plan.problem.p, MAX_ROWS)
    width = min(30.0, max(8.0, max(len(order) for order in plan.orders) * INCHES_PER_ACTION))
    fig = Figure(figsize=(width, 1.2 + rows + 2.2), layout="constrained")
    top, bottom = fig.subplots(2, 1, sharex=True, height_ratios=[rows + 0.6, 2.2])
    unit = _time_unit(plan.timeline.end)
    _draw_bars(top, plan, unit, inches_per_unit=0.8 * width / float(plan.timeline.end / unit or 1))
    _draw_memory(bottom, plan, unit)
    fig.suptitle(_title(plan, width), fontsize=10, parse_math=False)  # a $ is a $
    return fig


def _title(plan: Plan, width: float) -> str:
    """The source, problem, makespan and bubble, wrapped to the figure's width: matplotlib neither
    wraps nor shrinks a title, so a long path (a torch CSV's) was cut off at both edges."""
    timeline = plan.timeline
    lines = (f"{plan.label}: {plan.problem.describe()}",
             f"makespan {fmt(timeline.makespan)}, bubble {percent(timeline.bubble)}")
    columns = int(width * TITLE_CHARS_PER_INCH)
    return "\n".join(part for line in lines for part in textwrap.wrap(line, columns, break_on_hyphens=False))


def _time_unit(end: Fraction) -> Fraction:
    """What one unit of the time axis stands for: 1, or a power of ten where a float of the times
    would underflow to 0 or overflow (costs down to 1e-999 are valid; 1e-400 drew nothing and then
    divided by zero)."""
    if end == 0 or Fraction(1, 10**300) < end < 10**300:
        return Fraction(1)
    return Fraction(1, 10 ** decade_exponent(1 / end)) if end < 1 else Fraction(10) ** decade_exponent(end)


def _decade(unit: Fraction) -> str:
    return f"1e-{decade_exponent(1 / unit)}" if unit < 1 else f"1e{decade_exponent(unit)}"


def _axis_times(bar: Bar, unit: Fraction) -> tuple[float, float]:
    """A bar's start and width on the time axis, each time converted once (Fraction arithmetic on
    every bar was a third of a large picture's time)."""
    if unit == 1:
        start, end = float(bar.start), float(bar.end)
    else:
        start, end = float(bar.start / unit), float(bar.end / unit)
    return start, end - start


def _draw_bars(ax: Axes, plan: Plan, unit: Fraction, inches_per_unit: float) -> None:
    drawn = bars(plan)
    spans_of = [_axis_times(bar, unit) for bar in drawn]
    groups: dict[tuple[str, int, int], list[tuple[float, float]]] = {}  # (kind, shade, rank) -> spans
    for bar, span in zip(drawn, spans_of, strict=True):
        groups.setdefault((bar.kind, min(bar.chunk, 1), bar.rank), []).append(span)
    for (kind, shade, rank), spans in sorted(groups.items()):
        thin = statistics.median(width for _, width in spans) * inches_per_unit < EDGE_MIN_INCHES
        ax.broken_barh(spans, (rank - 0.4, 0.8), facecolors=COLOURS[kind][shade],
                       edgecolors="face" if thin else "white", linewidth=0.5)
        instants = [start for start, width in spans if width == 0]
        if instants:  # no width (tw = 0): a tick in the kind's dark colour (a thin light one is hard to see)
            ax.vlines(instants, rank - 0.4, rank + 0.4, colors=COLOURS[kind][0], linewidth=1.5)
    for bar, (start, width) in zip(drawn, spans_of, strict=True):
        if width * inches_per_unit >= DIGIT_INCHES * (len(str(bar.mb)) + 1):
            ax.text(start + width / 2, bar.rank, str(bar.mb), ha="center", va="center", fontsize=6)
    named = range(0, plan.problem.p, -(-plan.problem.p // MAX_ROWS))  # every rank up to MAX_ROWS
    ax.set_yticks(named, [f"rank {r}" for r in named])
    ax.set_ylim(plan.problem.p - 0.5, -0.5)  # rank 0 on top, as in the papers and `schedc show`
    kinds = [k for k in COLOURS if k in {kind for kind, _, _ in groups}]
    handles = [_patch(COLOURS[k][0], k) for k in kinds]
    if plan.problem.v > 1:
        handles.append(_patch(COLOURS["F"][1], "later stage (light)"))
    ax.legend(handles=handles, loc="upper left", bbox_to_anchor=(1.0, 1.0), fontsize=8, frameon=False)


def _patch(colour: str, label: str) -> Patch:
    from matplotlib.patches import Patch

    return Patch(facecolor=colour, label=label)


def _draw_caps(ax: Axes, caps: tuple[Fraction | None, ...], colours: list[str]) -> None:
    """One black dashed line for a cap every rank shares; else each capped rank's own cap, dashed in
    its curve's colour (an uncapped rank gets none, and so does a cap above m, which no curve
    reaches: a budget's 52,428 units stretched the axis flat)."""
    if None not in caps and len(set(caps)) == 1:
        ax.axhline(float(caps[0]), color="black", linestyle="--", linewidth=1, label="cap")
        return
    for cap, colour in zip(caps, colours, strict=True):
        if cap is not None:
            ax.axhline(float(cap), color=colour, linestyle="--", linewidth=1)
    if any(cap is not None for cap in caps):
        ax.plot([], [], color="grey", linestyle="--", linewidth=1, label="cap (rank's colour)")


def _settled(curve: list[tuple[Fraction, Fraction]]) -> list[tuple[Fraction, Fraction]]:
    """The level each time settles at: a W that ends as the next F starts frees and allocates at
    one instant, which a step line drew as a spike to the level between. No peak is lost: a task
    that allocates (F) runs for a while, so nothing of its rank frees at the instant it starts."""
    return list(dict(curve).items())  # a later level at one time replaces the earlier, in time order


def _draw_memory(ax: Axes, plan: Plan, unit: Fraction) -> None:
    problem, timeline = plan.problem, plan.timeline
    end = float(timeline.end / unit)
    colours = []
    for r in range(problem.p):
        curve = _settled(timeline.memory_curve(problem, r))
        times = [float(t / unit) for t, _ in curve] + [end]
        levels = [float(level) for _, level in curve] + [float(curve[-1][1])]
        label = f"rank {r}" if problem.p <= LEGEND_RANKS else "_nolegend_"
        (line,) = ax.step(times, levels, where="post", linewidth=1, label=label)
        colours.append(line.get_color())
    binding = tuple(cap if cap is not None and cap <= problem.m else None for cap in problem.mem)
    _draw_caps(ax, binding, colours)
    ax.set_ylabel("activation" if problem.p <= LEGEND_RANKS else "activation (a curve per rank)")
    ax.set_xlabel("time (cost units)" if unit == 1 else f"time (units of {_decade(unit)})")
    ax.set_ylim(bottom=0)
    if ax.get_legend_handles_labels()[1]:  # nothing to name: many ranks and no cap within m
        ax.legend(loc="upper left", bbox_to_anchor=(1.0, 1.0), fontsize=8, frameon=False,
                  ncols=1 + problem.p // 12)
