"""The restrictiveness–completeness frontier (the paper's Figure 1).

Restrictiveness (simulated eligible rules) says how much a procedure rules out; completeness
(real data) how much of the predictable variation it captures. Plotting one against the other
shows the trade-off: a procedure is dominated when another is both more restrictive and more
complete.
"""

from __future__ import annotations

from collections.abc import Sequence

import numpy as np
import pandas as pd
import scipy.stats

from ..shared.exceptions import ConfigurationError, DataError
from ..shared.plotting import greek, interval_label, new_axes, place_labels

__all__ = ["frontier_table", "plot_frontier"]


def frontier_table(restrictiveness, completeness, n: int | None = None,
                   discrepancy: str | None = None,
                   procedures: Sequence[str] | None = None) -> pd.DataFrame:
    """One row per procedure with r̂, se(r̂), κ̂ and se(κ̂), and whether it is on the frontier.

    Parameters
    ----------
    restrictiveness : Results
        A restrictiveness study.
    completeness : CompletenessResults
        Completeness on real data.
    n : int, optional
        Sample size of the restrictiveness profile to use (default: 100 if present, else the
        largest).
    discrepancy : str, optional
        Default: the study's first.
    procedures : str or sequence of str, optional
        Default: the procedures present in both results.

    Returns
    -------
    DataFrame
        Columns ``restrictiveness``, ``restrictiveness_se``, ``completeness``,
        ``completeness_se``, ``frontier`` (not dominated: no other procedure is at least as
        restrictive and at least as complete, and better in one); ``attrs`` records ``n``
        and ``discrepancy``.

    Raises
    ------
    ConfigurationError
        ``n`` or ``discrepancy`` not in the restrictiveness results, no procedure in both
        results, or a procedure named twice.
    DataError
        A procedure's r̂ or κ̂ is not finite (e.g. NaN from a degenerate baseline or
        benchmark): it can neither be placed on the frontier nor dominate.

    Examples
    --------
    With ``res`` from the :class:`~restrictiveness.Results` example and ``comp`` from the
    :class:`~restrictiveness.CompletenessResults` example (same labels): the linear model is
    more restrictive, the quadratic more complete, so neither dominates the other.

    >>> table = frontier_table(res, comp, n=20)
    >>> cols = ["restrictiveness", "completeness", "frontier"]
    >>> table[cols].round(3)  # doctest: +NORMALIZE_WHITESPACE
               restrictiveness  completeness  frontier
    procedure
    linear               0.231         0.918      True
    quadratic            0.058         1.017      True
    """
    if not all(hasattr(restrictiveness, a) for a in ("ns", "restrictiveness", "se")) \
            or not all(hasattr(completeness, a) for a in ("procedures", "kappa", "kappa_se")):
        raise ConfigurationError(f"frontier_table takes restrictiveness Results (Study.run) and "
                                 f"CompletenessResults (estimate_completeness), got "
                                 f"{type(restrictiveness).__name__} and "
                                 f"{type(completeness).__name__}")
    ns = restrictiveness.ns
    n = n if n is not None else (100 if 100 in ns else ns[-1])
    if n not in ns:
        raise ConfigurationError(f"n={n!r} is not in the restrictiveness results {ns}")
    disc = discrepancy or restrictiveness.discrepancies[0]
    if disc not in restrictiveness.discrepancies:  # was xarray's KeyError about an index
        raise ConfigurationError(f"discrepancy {disc!r} is not in the restrictiveness results "
                                 f"{restrictiveness.discrepancies}")
    common = [p for p in restrictiveness.procedures if p in completeness.procedures]
    # one label as a string was read letter by letter ("procedures ['l', 'i', ...]")
    labels = (common if procedures is None
              else [procedures] if isinstance(procedures, str) else list(procedures))
    missing = [p for p in labels if p not in common]
    if not common and procedures is None:
        # was "procedures [] are not in both results; common procedures: []"
        raise ConfigurationError(
            f"no procedure is in both results: the restrictiveness results have "
            f"{list(restrictiveness.procedures)}, the completeness results "
            f"{list(completeness.procedures)}; label the same procedure alike in both")
    if missing or not labels:
        raise ConfigurationError(f"procedures {missing or labels} are not in both results; "
                                 f"common procedures: {common}")
    if len(set(labels)) != len(labels):
        raise ConfigurationError(f"procedures has duplicates: {labels}")
    r = restrictiveness.restrictiveness.sel(discrepancy=disc, n=n)
    se = restrictiveness.se.sel(discrepancy=disc, n=n)
    table = pd.DataFrame({
        "restrictiveness": [float(r.sel(procedure=p)) for p in labels],
        "restrictiveness_se": [float(se.sel(procedure=p)) for p in labels],
        "completeness": [float(completeness.kappa[p]) for p in labels],
        "completeness_se": [float(completeness.kappa_se[p]) for p in labels],
    }, index=pd.Index(labels, name="procedure"))
    R, K = table["restrictiveness"].to_numpy(), table["completeness"].to_numpy()
    unknown = table.index[~(np.isfinite(R) & np.isfinite(K))].tolist()
    if unknown:  # NaN compares False: such a point was called undominated, and dominated none
        raise DataError(f"r̂ or κ̂ of {unknown} is not finite (r̂ at n={n}: "
                        f"{table['restrictiveness'][unknown].tolist()}, κ̂: "
                        f"{table['completeness'][unknown].tolist()}), so their place on the "
                        "frontier is unknown; leave them out with procedures=[...]")
    dominated = [bool(np.any((R >= R[i]) & (K >= K[i]) & ((R > R[i]) | (K > K[i]))))
                 for i in range(len(R))]
    table["frontier"] = ~np.array(dominated)
    table.attrs.update({"n": n, "discrepancy": disc})
    return table


def plot_frontier(table: pd.DataFrame, ax=None, annotate: bool = True, level: float = 0.95):
    """Restrictiveness (vertical) against completeness (horizontal) with normal intervals.

    The baseline (κ = 0, r = 1) and the benchmark (κ = 1) are marked by reference lines;
    labels are typeset with Greek letters and placed so that none overlaps another or a point.

    Parameters
    ----------
    table : DataFrame
        From :func:`frontier_table`.
    ax : matplotlib Axes, optional
        Drawn into; a new figure's Axes otherwise.
    annotate : bool
        Label each point with its procedure.
    level : float
        Coverage of the error bars (normal intervals), stated in the legend.

    Returns
    -------
    matplotlib Axes

    Examples
    --------
    >>> import matplotlib
    >>> matplotlib.use("Agg")
    >>> table = pd.DataFrame({"restrictiveness": [0.2, 0.21], "restrictiveness_se": [0.01, 0.01],
    ...                       "completeness": [0.9, 0.91], "completeness_se": [0.02, 0.02],
    ...                       "frontier": [True, True]},
    ...                      index=pd.Index(["CPT(delta)", "CPT(alpha,delta)"], name="procedure"))
    >>> [t.get_text() for t in plot_frontier(table).texts]
    ['CPT(δ)', 'CPT(α,δ)']
    """
    if not 0 < level < 1:
        raise ConfigurationError(f"level must lie in (0, 1); got {level}")
    needed = ["restrictiveness", "restrictiveness_se", "completeness", "completeness_se",
              "frontier"]
    if not isinstance(table, pd.DataFrame) or any(c not in table.columns for c in needed):
        raise ConfigurationError(f"plot_frontier takes the table of frontier_table(...) with "
                                 f"columns {needed}, got {type(table).__name__}")
    if table.empty:  # drew empty axes, silently
        raise ConfigurationError("plot_frontier: the table has no procedure to plot")
    ax = new_axes(ax, figsize=(6, 4.5))
    z = scipy.stats.norm.ppf(0.5 + level / 2)
    ax.axvline(0.0, color="grey", lw=0.8, ls=":", label="baseline (κ = 0, r = 1)")
    ax.axhline(1.0, color="grey", lw=0.8, ls=":")
    ax.axvline(1.0, color="black", lw=0.8, ls="--", label="benchmark (κ = 1)")
    on = table["frontier"].to_numpy()
    for mask, style in ((on, dict(color="C0", label=f"frontier ({interval_label(level)}s)")),
                        (~on, dict(color="C7", label="dominated"))):
        if mask.any():
            t = table[mask]
            ax.errorbar(t["completeness"], t["restrictiveness"],
                        xerr=z * t["completeness_se"], yerr=z * t["restrictiveness_se"],
                        fmt="o", capsize=2, **style)
    ax.set_xlabel("completeness κ̂ (real data)")
    ax.set_ylabel(f"restrictiveness r̂ (n = {table.attrs.get('n', '?')})")
    ax.legend(loc="best", fontsize=8)
    if annotate:
        place_labels(ax, table["completeness"].to_numpy(), table["restrictiveness"].to_numpy(),
                     [greek(str(p)) for p in table.index])
    return ax
