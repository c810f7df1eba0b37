"""The paper's within-function-averaging tables of the demand application (Tables A.15–A.19).

A study run with ``draws = K`` training samples per demand system gives both columns of the
paper's comparison: the K-sample estimates, and the one-sample estimates from each system's
first sample (the samples a K = 1 study draws, fits and scores identically, since seeds are keyed
by replication, procedure, n and draw). :func:`first_draw` makes that K = 1 view;
:func:`within_function_table` is Table A.18 and :func:`structural_sensitivity` the structural
rows of Tables A.15–A.17 (and, on both views, A.19).

Examples
--------
>>> import restrictiveness as rx
>>> study = rx.demand.study(procedures={"MNL": rx.demand.MNL()}, n=[20], replications=3,
...                         draws=2, prior=rx.demand.DemandPrior(n_types=32, n_eval=4,
...                                                              n_train=20))
>>> res = study.run(progress=False)
>>> within_function_table(res, n=20).columns.tolist()
['K=1', 'K=2', 'change']
"""

from __future__ import annotations

import pandas as pd
import xarray as xr

from ..engine.results import Results
from ..shared.exceptions import ConfigurationError

__all__ = ["STRUCTURAL_COMPARISONS", "first_draw", "within_function_table",
           "structural_sensitivity"]

#: The structural comparisons of Tables A.15 (shares), A.16 (own) and A.17 (cross), as the
#: paper orders them (each positive in the paper's main estimates).
STRUCTURAL_COMPARISONS = {"shares": ("MNL-NL", "MNL-MXL", "NL-MXL"),
                          "own": ("NL-MNL", "MXL-MNL", "NL-MXL"),
                          "cross": ("NL-MNL", "MXL-MNL", "MXL-NL")}


def _draws(res: Results) -> int:
    return int(res.dataset.sizes.get("draw", 1))


def first_draw(res: Results) -> Results:
    """The K = 1 estimates of a study with K > 1 training samples per truth: every loss of the
    first sample only (the baseline's too)."""
    if _draws(res) < 2:
        raise ConfigurationError("first_draw needs a study run with draws > 1 (within-function "
                                 "averaging); this one has one training sample per truth")
    return Results(res.dataset.isel(draw=0))


def within_function_table(res: Results, n: int = 100) -> pd.DataFrame:
    """Table A.18: restrictiveness with one and with K training samples per demand system.

    Returns a frame indexed by (discrepancy, procedure) with columns ``K=1``, ``K=<K>`` and
    ``change`` (K-sample minus one-sample), at sample size ``n``.
    """
    if n not in res.ns:
        raise ConfigurationError(f"n={n} was not run; the study has n in {res.ns}")
    one, many = first_draw(res).restrictiveness, res.restrictiveness
    K = _draws(res)
    rows = {}
    for disc in res.discrepancies:
        for p in res.procedures:
            a = float(one.sel(procedure=p, discrepancy=disc, n=n))
            b = float(many.sel(procedure=p, discrepancy=disc, n=n))
            rows[(disc, p)] = {"K=1": a, f"K={K}": b, "change": b - a}
    frame = pd.DataFrame.from_dict(rows, orient="index")
    frame.index.names = ["discrepancy", "procedure"]
    return frame


def structural_sensitivity(res: Results, gamma: float = 2.0,
                           gamma_max: float = 3.0) -> dict[str, xr.Dataset]:
    """The structural rows of Tables A.15–A.17: for each discrepancy, the comparisons of
    :data:`STRUCTURAL_COMPARISONS` (those whose procedures the study ran) under uniform weights,
    their bounds at ``gamma`` and their critical Γ*, by n (:meth:`Results.sensitivity_dataset`).
    """
    out = {}
    for disc, comps in STRUCTURAL_COMPARISONS.items():
        run = [c for c in comps if set(c.split("-")) <= set(res.procedures)]
        if disc in res.discrepancies and run:
            out[disc] = res.sensitivity_dataset(run, gamma=gamma, gamma_max=gamma_max,
                                                discrepancy=disc)
    return out
