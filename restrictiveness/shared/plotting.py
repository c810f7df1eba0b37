"""matplotlib on demand: an optional dependency, imported only when something is drawn."""

from __future__ import annotations

import re
from collections.abc import Sequence

import numpy as np

__all__ = ["greek", "interval_label", "new_axes", "place_labels"]


def new_axes(ax=None, figsize: tuple[float, float] = (6, 4)):
    """``ax`` itself, or the axes of a new figure; ImportError naming the extra to install
    when matplotlib is missing.

    Examples
    --------
    >>> import matplotlib
    >>> matplotlib.use("Agg")
    >>> new_axes().get_figure().get_size_inches().tolist()
    [6.0, 4.0]
    """
    if ax is not None:
        return ax
    try:
        import matplotlib.pyplot as plt
    except ImportError as exc:
        raise ImportError("plotting needs matplotlib: pip install 'restrictiveness[plot]'"
                          ) from exc
    return plt.subplots(figsize=figsize)[1]


#: Parameter names spelled out in procedure labels, and their Greek letters.
_GREEK = {"alpha": "α", "beta": "β", "gamma": "γ", "delta": "δ", "rho": "ρ", "Gamma": "Γ"}
_GREEK_RE = re.compile(r"(?<![A-Za-z])(" + "|".join(_GREEK) + r")(?![A-Za-z])")


def greek(label: str) -> str:
    """``label`` with spelled-out Greek parameter names as letters, for figures.

    Parameters
    ----------
    label : str
        A procedure label or comparison, e.g. ``"CPT(alpha,delta)"``.

    Returns
    -------
    str
        The label with ``alpha``, ``gamma``, ``delta``, ... replaced, and ``_`` subscripts
        and a top-level ``-`` typeset (``C_delta-C_gamma`` → ``C$_δ$ − C$_γ$``).

    Examples
    --------
    >>> greek("CPT(alpha,delta)")
    'CPT(α,δ)'
    >>> greek("C_delta-C_gamma")
    'C$_δ$ − C$_γ$'
    """
    text = _GREEK_RE.sub(lambda m: _GREEK[m.group(1)], label)
    text = re.sub(r"_([^\s_()\-+,]+)", r"$_\1$", text)
    return re.sub(r"(?<=\S)-(?=\S)", " − ", text) if "$" in text else text


def place_labels(ax, x: Sequence[float] | np.ndarray, y: Sequence[float] | np.ndarray,
                 labels: Sequence[str],
                 fontsize: float = 8) -> list:
    """Annotate points so no two labels overlap, no label covers a point, and every label is
    nearer its own point than any other.

    Each label tries offsets around its point, nearest first, in display coordinates, and
    takes the first whose box is clear of the labels already placed and of every point's
    marker, lies inside the axes and is unambiguous (no other point nearer the box than its
    own); when none qualifies, the one with the least overlap, then the fewest nearer points.

    Parameters
    ----------
    ax : matplotlib Axes
        Drawn into (its figure's renderer measures the text).
    x, y : sequence of float
        Data coordinates of the points.
    labels : sequence of str
        One per point.
    fontsize : float
        Text size in points.

    Returns
    -------
    list of matplotlib.text.Annotation
        In the order of ``labels``.

    Examples
    --------
    >>> import matplotlib
    >>> matplotlib.use("Agg")
    >>> ax = new_axes()
    >>> _ = ax.plot([0, 0.001], [0, 0.001], "o")
    >>> a, b = place_labels(ax, [0, 0.001], [0, 0.001], ["CPT(δ)", "CPT(α,δ)"])
    >>> r = ax.figure.canvas.get_renderer()
    >>> bool(a.get_window_extent(r).overlaps(b.get_window_extent(r)))
    False
    """
    from matplotlib.transforms import Bbox

    fig = ax.figure
    fig.canvas.draw()  # fixes the data-to-display transform (limits) before measuring
    renderer = fig.canvas.get_renderer()
    pts = ax.transData.transform(np.column_stack([x, y]))
    marker = 5.0  # display pixels kept clear around each point
    obstacles = [Bbox.from_extents(px - marker, py - marker, px + marker, py + marker)
                 for px, py in pts]
    offsets = [(dx * r, dy * r) for r in (5, 12, 20, 30)
               for dx, dy in ((1, 1), (1, -1), (-1, 1), (-1, -1), (1, 0), (-1, 0), (0, 1),
                              (0, -1))]
    placed = []
    for (px, py), label in zip(pts, labels, strict=True):
        best: tuple | None = None
        best_cost = np.inf
        for dx, dy in offsets:
            ha = "left" if dx > 0 else "right" if dx < 0 else "center"
            va = "bottom" if dy > 0 else "top" if dy < 0 else "center"
            ann = ax.annotate(label, ax.transData.inverted().transform((px, py)),
                              textcoords="offset points", xytext=(dx, dy), ha=ha, va=va,
                              fontsize=fontsize)
            box = ann.get_window_extent(renderer).padded(1.0)
            # a label beside a neighbour's point reads as that neighbour's label
            own = _distance(box, px, py)
            ambiguous = sum(_distance(box, qx, qy) < own for qx, qy in pts)
            outside = box.width * box.height - _overlap(box, ax.bbox)
            cost = sum(_overlap(box, o) for o in obstacles) + outside + ambiguous * _AMBIGUITY
            if cost < best_cost:
                if best is not None:
                    best[0].remove()
                best, best_cost = (ann, box), cost
            else:
                ann.remove()
            if cost == 0:
                break
        assert best is not None  # the first offset always becomes the best so far
        obstacles.append(best[1])
        placed.append(best[0])
    return placed


#: Cost of one point nearer a label than the label's own point, in squared display pixels: a
#: label overlapping another by less than this area is preferred to an ambiguous one.
_AMBIGUITY = 100.0


def _distance(box, x: float, y: float) -> float:
    """Display distance from the point (x, y) to the box (0 inside it)."""
    return float(np.hypot(max(box.x0 - x, 0.0, x - box.x1), max(box.y0 - y, 0.0, y - box.y1)))


def _overlap(a, b) -> float:
    """Area shared by two display boxes."""
    w = min(a.x1, b.x1) - max(a.x0, b.x0)
    h = min(a.y1, b.y1) - max(a.y0, b.y0)
    return max(w, 0.0) * max(h, 0.0)


def interval_label(level: float) -> str:
    """Legend text stating an interval's coverage, e.g. ``"95% normal interval"``.

    Parameters
    ----------
    level : float
        Coverage in (0, 1).

    Returns
    -------
    str

    Examples
    --------
    >>> interval_label(0.9)
    '90% normal interval'
    """
    return f"{level:.0%} normal interval"
