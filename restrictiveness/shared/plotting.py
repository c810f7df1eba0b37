"""matplotlib on demand: an optional dependency, imported only when something is drawn."""

from __future__ import annotations

__all__ = ["new_axes"]


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
