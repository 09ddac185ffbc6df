"""Figure 1 as an image: inflation against average top-score tie size (log axis).

matplotlib is an optional extra (``pip install 'tieeval[plot]'``) imported only when a
figure is drawn; without it :func:`require_matplotlib` raises :class:`MissingExtraError`
with the install command. Drawing never touches pyplot's global state (no display needed).
"""


from __future__ import annotations

import math
import os

from tieeval.errors import MissingExtraError, ParameterError
from tieeval.records.paper import FigurePanel
from tieeval.sink import atomic_output, check_output_path

PLOT_SUFFIXES = (".png", ".pdf", ".svg")


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
    Figure = require_matplotlib()
    from tieeval.report.paper import (  # text is formatted in report/
        fmt_r,
        setting_title,
    )

    check_plot_path(path, inputs)
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
        for p, x, y in zip(panel.points, xs, ys):
            # a '$' would start matplotlib's mathtext
            ax.annotate(p.method.replace("$", r"\$"), (x, y), textcoords="offset points",
                        xytext=(4, 4), fontsize=8)
        ax.set_xscale("log")
        ax.set_xlabel("Avg. top-score tie size (log scale)")
        ax.set_ylabel("Inflation: mean relative drop (%)")
        title = setting_title(panel.task, panel.dataset).replace("$", r"\$")
        ax.set_title(f"{title}\n{fmt_r(panel.r)}",
                     fontsize=10)
        ax.grid(True, which="both", alpha=0.3)
    fig.suptitle("Inflation under the original protocol vs. top-score tie size")
    _save(fig, path, inputs)
    return path


def _save(fig, path: str, inputs=()) -> None:
    """Draw through the output sink: a full disk or an interrupt leaves the old file (or
    none), never a truncated one."""
    ext = os.path.splitext(path)[1].lstrip(".").lower() or None
    with atomic_output(path, inputs=inputs, what="the plot") as out:
        fig.savefig(out, dpi=150, format=ext)
