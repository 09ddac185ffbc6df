"""Figure 1 as an image: inflation against average top-score tie size (log axis).

matplotlib is an optional extra (``pip install 'tieeval[plot]'``) imported only when a
figure is drawn; without it :func:`require_matplotlib` raises :class:`MissingExtraError`
with the install command. Drawing never touches pyplot's global state (no display needed).
"""

from __future__ import annotations

import io
import math
import os
import textwrap
import warnings

from tieeval.errors import MissingExtraError, ParameterError
from tieeval.records.paper import FigurePanel
from tieeval.sink import atomic_output, check_output_path
from tieeval.util.escaping import escape

PLOT_SUFFIXES = (".png", ".pdf", ".svg")
SUPTITLE = "Inflation under the original protocol vs. top-score tie size"
SUPTITLE_SIZE = 12.0
# a DejaVu Sans character is at most ~0.62 em wide on average for this text; wrapping at
# that estimate keeps the centred suptitle inside a one-panel (4 in) figure
_CHAR_EM = 0.62
# below one decade a log axis has at most one labelled major tick and labels its minor
# ticks, which collide; such a tie-size axis gets a few plain integer ticks instead
_NARROW_RATIO = 10.0
# a point's label and a panel's title longer than this are shortened in their middle:
# longer ones leave no room for the axes in a 4 in panel (matplotlib then warns that its
# layout collapsed, and draws the labels over each other)
LABEL_CHARS = 40
TITLE_CHARS = 60


def require_matplotlib():
    """Import matplotlib's object API, or say how to install it."""
    try:
        from matplotlib.figure import Figure
    except ImportError:
        raise MissingExtraError("--plot needs matplotlib, which is not installed: "
                                "pip install 'tieeval[plot]'") from None
    return Figure


def check_plot_path(path: str, inputs=()) -> str:
    """Refuse an output path that cannot be written, before any dump is read: a suffix
    other than .png / .pdf / .svg, or a target the output sink refuses (a device, a folder,
    one of ``inputs``; see :mod:`tieeval.sink`)."""
    path = os.fspath(path)
    suffix = os.path.splitext(path)[1].lower()
    if suffix not in PLOT_SUFFIXES:
        raise ParameterError(f"{path}: the plot file must end in "
                             + ", ".join(PLOT_SUFFIXES))
    return check_output_path(path, inputs=inputs, what="the plot")


def draw_figure1(panels: list[FigurePanel], path: str, inputs=()) -> str:
    """Draw one panel per (task, dataset) setting into ``path`` (png, pdf or svg), through
    the output sink; ``inputs``: the files the figure was computed from, never
    overwritten."""
    require_matplotlib()
    check_plot_path(path, inputs)
    _save(figure1_figure(panels), path, inputs)
    return path


def figure1_figure(panels: list[FigurePanel]):
    """Figure 1 as a matplotlib ``Figure`` (one panel per setting), not yet drawn."""
    Figure = require_matplotlib()
    from tieeval.report.paper import (  # text is formatted in report/
        fmt_r,
        setting_title,
    )

    n = max(len(panels), 1)
    ncols = min(n, 4)
    nrows = math.ceil(n / ncols)
    fig = Figure(figsize=(4.0 * ncols, 3.4 * nrows), layout="constrained")
    axes = fig.subplots(nrows, ncols, squeeze=False)
    for ax in axes.flat[len(panels):]:
        ax.set_visible(False)
    for ax, panel in zip(axes.flat, panels):
        xs = [p.top_tie_size for p in panel.points]
        ys = [100.0 * p.inflation for p in panel.points]
        ax.scatter(xs, ys, zorder=3)
        ax.set_xscale("log")
        # room inside the frame for the labels of the outermost points
        ax.margins(x=0.12, y=0.15)
        if xs:
            _tie_size_ticks(ax, min(xs), max(xs))
        _label_points(ax, fig, [_short(escape(p.method, "plot")) for p in panel.points],
                      xs, ys)
        ax.set_xlabel("Avg. top-score tie size (log scale)")
        ax.set_ylabel("Inflation: mean relative drop (%)")
        title = _short(escape(setting_title(panel.task, panel.dataset), "plot"), TITLE_CHARS)
        ax.set_title(f"{title}\n{fmt_r(panel.r)}", fontsize=10)
        ax.grid(True, which="both", alpha=0.3)
    fig.suptitle(_wrap_to_width(SUPTITLE, fig.get_figwidth(), SUPTITLE_SIZE),
                 fontsize=SUPTITLE_SIZE)
    return fig


LABEL_SIZE = 8.0  # points
# points closer than this (a fraction of the axes, about a marker's width) share one label
_SAME_SPOT = 0.03


def _label_points(ax, fig, names: list[str], xs: list[float], ys: list[float]) -> None:
    """Name each point beside it without two labels overprinting: points on one spot
    (several tie-free methods at tie size 1 and no inflation) share one label listing
    them; a label that would cover another goes below its point, or further up, in the
    first free place. Places are estimated in axes fractions from the label's length,
    before matplotlib lays the figure out (the axes keep about their size)."""
    if not xs:
        return
    (x0, x1), (y0, y1) = ax.get_xlim(), ax.get_ylim()
    span = math.log(x1 / x0) or 1.0
    us = [math.log(x / x0) / span for x in xs]
    vs = [(y - y0) / ((y1 - y0) or 1.0) for y in ys]
    groups: list[list[int]] = []
    for i in sorted(range(len(xs)), key=lambda i: (us[i], vs[i])):
        for group in groups:
            j = group[0]
            if abs(us[i] - us[j]) < _SAME_SPOT and abs(vs[i] - vs[j]) < _SAME_SPOT:
                group.append(i)
                break
        else:
            groups.append([i])
    box = ax.get_position()
    width_pt = box.width * fig.get_figwidth() * 72.0
    height_pt = box.height * fig.get_figheight() * 72.0
    placed: list[tuple[float, float, float, float]] = []
    mid = math.sqrt(x0 * x1)  # the middle of the log axis
    for group in sorted(groups, key=lambda g: -vs[g[0]]):
        i = group[0]
        text = "\n".join(textwrap.wrap(", ".join(names[j] for j in sorted(group)), LABEL_CHARS,
                                        break_long_words=False)) or names[i]
        lines = text.split("\n")
        w = len(max(lines, key=len)) * _CHAR_EM * LABEL_SIZE / width_pt
        h = len(lines) * 1.25 * LABEL_SIZE / height_pt
        # labels of points right of the middle go to their left, so none crosses the frame
        right = xs[i] > mid
        left_edge = us[i] - w - 4 / width_pt if right else us[i] + 4 / width_pt
        for up, steps in [(True, 0), (False, 0), *((True, k) for k in range(1, 6))]:
            lift = 4 / height_pt + steps * 1.25 * LABEL_SIZE / height_pt
            bottom = vs[i] + lift if up else vs[i] - lift - h
            spot = (left_edge, bottom, left_edge + w, bottom + h)
            if not any(_overlap(spot, other) for other in placed):
                break
        else:
            up, steps, spot = True, 0, (left_edge, vs[i], left_edge + w, vs[i] + h)
        placed.append(spot)
        dy = 4 + steps * 1.25 * LABEL_SIZE
        ax.annotate(text, (xs[i], ys[i]), textcoords="offset points",
                    xytext=(-4 if right else 4, dy if up else -dy),
                    ha="right" if right else "left", va="bottom" if up else "top",
                    fontsize=LABEL_SIZE, linespacing=1.1)


def _overlap(a: tuple[float, float, float, float], b: tuple[float, float, float, float]
             ) -> bool:
    return a[0] < b[2] and b[0] < a[2] and a[1] < b[3] and b[1] < a[3]


def _short(text: str, limit: int | None = None) -> str:
    """``text`` cut to ``limit`` characters (:data:`LABEL_CHARS`), its middle replaced by
    an ellipsis (a run's file name keeps its start and its end)."""
    limit = LABEL_CHARS if limit is None else limit
    if len(text) <= limit:
        return text
    head = (limit - 1) // 2
    return text[:head] + "…" + text[len(text) - (limit - 1 - head):]


def _wrap_to_width(text: str, width_in: float, fontsize: float) -> str:
    """Break ``text`` into lines that fit ``width_in`` inches at ``fontsize`` points."""
    chars = max(int(0.92 * width_in * 72.0 / (_CHAR_EM * fontsize)), 10)
    return "\n".join(textwrap.wrap(text, chars))


def _tie_size_ticks(ax, lo: float, hi: float) -> None:
    """Keep the tie-size tick labels apart and at least two of them in view: within a
    decade, integer ticks on a span of at least two units (tie sizes are at least 1);
    within two decades, ticks at 1, 2 and 5 times powers of ten; wider ranges keep the
    log axis's own decades. Minor ticks stay unlabelled (matplotlib labels them on short
    log ranges, where they collide)."""
    if lo <= 0:
        return
    from matplotlib.ticker import (
        LogLocator,
        MaxNLocator,
        NullFormatter,
        StrMethodFormatter,
    )

    ratio = hi / lo
    if ratio < _NARROW_RATIO:
        left = max(math.floor(lo), 1)
        right = max(math.ceil(hi), left + 2)
        pad = (right / left) ** 0.08  # a margin on the log scale
        ax.set_xlim(min(left, lo) / pad, max(right, hi) * pad)
        ax.xaxis.set_major_locator(MaxNLocator(nbins=5, integer=True, min_n_ticks=2))
        ax.xaxis.set_major_formatter(StrMethodFormatter("{x:g}"))
    elif ratio < _NARROW_RATIO ** 2:
        ax.xaxis.set_major_locator(LogLocator(base=10.0, subs=(1.0, 2.0, 5.0)))
        ax.xaxis.set_major_formatter(StrMethodFormatter("{x:g}"))
    ax.xaxis.set_minor_formatter(NullFormatter())


def _save(fig, path: str, inputs=()) -> None:
    """Draw through the output sink: a full disk or an interrupt leaves the old file (or
    none), never a truncated one."""
    ext = os.path.splitext(path)[1].lstrip(".").lower() or None
    image = _drawn(fig, ext)
    with atomic_output(path, inputs=inputs, what="the plot") as out:
        out.write(image)


def _drawn(fig, ext: str | None) -> bytes:
    """The figure's bytes in ``ext``. Should matplotlib still warn while laying it out (its
    constrained layout gives up when the text leaves the axes no room), the figure is
    drawn again without that layout, cropped to what it holds: a figure either way, and no
    warning of matplotlib's (with its source line) on the user's terminal."""
    buf = io.BytesIO()
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        fig.savefig(buf, dpi=150, format=ext)
    if not caught:
        return buf.getvalue()
    if hasattr(fig, "set_layout_engine"):
        fig.set_layout_engine("none")
    else:  # matplotlib before 3.6
        fig.set_constrained_layout(False)
    buf = io.BytesIO()
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        fig.savefig(buf, dpi=150, format=ext, bbox_inches="tight")
    return buf.getvalue()
