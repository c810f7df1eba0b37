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

from ..shared.exceptions import ConfigurationError
from ..shared.plotting import new_axes

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
    procedures : sequence of str, optional
        Default: the procedures present in both results.

    Returns
    -------
    DataFrame
        Columns ``restrictiveness``, ``restrictiveness_se``, ``completeness``,
        ``completeness_se``, ``frontier`` (not dominated: no other procedure is at least as
        restrictive and at least as complete, and better in one).
    """
    ns = restrictiveness.ns
    n = n if n is not None else (100 if 100 in ns else ns[-1])
    if n not in ns:
        raise ConfigurationError(f"n={n} is not in the restrictiveness results {ns}")
    disc = discrepancy or restrictiveness.discrepancies[0]
    common = [p for p in restrictiveness.procedures if p in completeness.procedures]
    labels = list(procedures) if procedures is not None else common
    missing = [p for p in labels if p not in common]
    if missing or not labels:
        raise ConfigurationError(f"procedures {missing or labels} are not in both results; "
                                 f"common procedures: {common}")
    r = restrictiveness.restrictiveness.sel(discrepancy=disc, n=n)
    se = restrictiveness.se.sel(discrepancy=disc, n=n)
    table = pd.DataFrame({
        "restrictiveness": [float(r.sel(procedure=p)) for p in labels],
        "restrictiveness_se": [float(se.sel(procedure=p)) for p in labels],
        "completeness": [float(completeness.kappa[p]) for p in labels],
        "completeness_se": [float(completeness.kappa_se[p]) for p in labels],
    }, index=pd.Index(labels, name="procedure"))
    R, K = table["restrictiveness"].to_numpy(), table["completeness"].to_numpy()
    dominated = [bool(np.any((R >= R[i]) & (K >= K[i]) & ((R > R[i]) | (K > K[i]))))
                 for i in range(len(R))]
    table["frontier"] = ~np.array(dominated)
    table.attrs.update({"n": n, "discrepancy": disc})
    return table


def plot_frontier(table: pd.DataFrame, ax=None, annotate: bool = True):
    """Restrictiveness (vertical) against completeness (horizontal) with ±1.96 se error bars.

    Parameters
    ----------
    table : DataFrame
        From :func:`frontier_table`.
    ax : matplotlib Axes, optional

    Returns
    -------
    matplotlib Axes
    """
    ax = new_axes(ax, figsize=(6, 4.5))
    on = table["frontier"].to_numpy()
    for mask, style in ((on, dict(color="C0", label="frontier")),
                        (~on, dict(color="C7", label="dominated"))):
        if mask.any():
            t = table[mask]
            ax.errorbar(t["completeness"], t["restrictiveness"],
                        xerr=1.96 * t["completeness_se"], yerr=1.96 * t["restrictiveness_se"],
                        fmt="o", capsize=2, **style)
    if annotate:
        for label, row in table.iterrows():
            ax.annotate(str(label), (row["completeness"], row["restrictiveness"]),
                        textcoords="offset points", xytext=(4, 4), fontsize=8)
    ax.set_xlabel("completeness κ̂ (real data)")
    ax.set_ylabel(f"restrictiveness r̂ (n = {table.attrs.get('n', '?')})")
    ax.legend(loc="best", fontsize=8)
    return ax
