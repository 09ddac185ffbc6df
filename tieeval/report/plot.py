"""Figure 1 as an image: inflation against average top-score tie size (log axis).

matplotlib is an optional extra (``pip install 'tieeval[plot]'``) imported only when a
figure is drawn; without it :func:`require_matplotlib` raises :class:`MissingExtraError`
with the install command. Drawing never touches pyplot's global state (no display needed).
"""


from __future__ import annotations

import math
import os

from tieeval.errors import InputError, MissingExtraError, ParameterError
from tieeval.records.paper import FigurePanel

PLOT_SUFFIXES = (".png", ".pdf", ".svg")


def require_matplotlib():
    """Import matplotlib's object API, or say how to install it."""
    try:
        from matplotlib.figure import Figure
    except ImportError:
        raise MissingExtraError("--plot needs matplotlib, which is not installed: "
                                "pip install 'tieeval[plot]'") from None
    return Figure


def check_plot_path(path: str) -> str:
    """Refuse an output path that cannot be written, before any dump is read."""
    path = os.fspath(path)
    suffix = os.path.splitext(path)[1].lower()
    if suffix not in PLOT_SUFFIXES:
        raise ParameterError(f"{path}: the plot file must end in "
                             + ", ".join(PLOT_SUFFIXES))
    folder = os.path.dirname(os.path.abspath(path))
    if not os.path.isdir(folder):
        raise ParameterError(f"{path}: folder {folder} does not exist")
    return path


def draw_figure1(panels: list[FigurePanel], path: str) -> str:
    """Draw one panel per (task, dataset) setting into ``path`` (png, pdf or svg)."""
    Figure = require_matplotlib()
    from tieeval.report.paper import (  # text is formatted in report/
        fmt_r,
        setting_title,
    )

    check_plot_path(path)
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
    _save_atomically(fig, path)
    return path


def _save_atomically(fig, path: str) -> None:
    """Draw into a temporary file beside ``path``, then rename it: a full disk or an
    interrupt leaves the old file (or none), never a truncated one."""
    import uuid
    folder = os.path.dirname(os.path.abspath(path))
    base = os.path.basename(path)
    ext = os.path.splitext(base)[1].lstrip(".").lower() or None
    tmp = os.path.join(folder, f".{base}.{uuid.uuid4().hex[:12]}.tmp")
    try:
        fig.savefig(tmp, dpi=150, format=ext)
        os.replace(tmp, path)
    except OSError as exc:
        raise InputError(f"{path}: cannot write the plot: {exc.strerror or exc}") from None
    finally:
        if os.path.exists(tmp):
            os.unlink(tmp)
