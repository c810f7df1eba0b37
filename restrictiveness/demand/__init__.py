"""Application 2 of the paper: differentiated-product demand (SPEC §7).

Ready-made pieces: the Nevo cereal calibration (:func:`restrictiveness.datasets.load_cereal`),
the market distribution (:mod:`.markets`), the random-utility prior (:mod:`.prior`), the share
and elasticity discrepancies (:mod:`.elasticities`), the logit family (:mod:`.models`,
:mod:`.estimation`), the per-product share regressors (:mod:`.learners`), and :func:`study`, the
configuration of the paper's Tables 3–4. An application: may import every generic layer and the
datasets, never the other application.

Markets are arrays ``(J = 24, 3)`` with columns ``("prices", "sugar", "mushy")`` in the data's
raw units; samples of n markets have ``X (n, 24, 3)`` and inside shares ``y (n, 24)``. The
models also estimate on markets that list fewer products (``MNL.from_formula`` on such data:
a shorter market is padded with rows of NaN, which the models read as absent products).

Examples
--------
>>> import restrictiveness as rx
>>> study = rx.demand.study(procedures={"MNL": rx.demand.MNL()}, n=[20], replications=2,
...                         prior=rx.demand.DemandPrior(n_types=32, n_eval=5, n_train=20))
>>> study.run(progress=False).discrepancies
['shares', 'own', 'cross']
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence

import pandas as pd

from ..engine.protocol import Procedure
from ..engine.study import Study
from ..shared.checks import baseline_label, ids_of_one_type, labelled
from ..shared.exceptions import ConfigurationError, DataError
from ..shared.sample import Sample
from .elasticities import CrossElasticityMSE, OwnElasticityMSE, SharesMSE
from .markets import MARKET_COLUMNS, MarketDistribution
from .models import MNL, PAPER_MXL, Logit, MixedLogit, NestedLogit
from .prior import DemandPrior

__all__ = ["CrossElasticityMSE", "OwnElasticityMSE", "SharesMSE", "MarketDistribution",
           "MNL", "Logit", "MixedLogit", "NestedLogit", "DemandPrior", "PAPER_MXL", "MXL_FITS",
           "table3_procedures",
           "study", "completeness", "market_sample"]


#: The mixed-logit fits :func:`table3_procedures` offers.
MXL_FITS = ("paper", "converged")


def table3_procedures(mxl: str = "paper") -> dict[str, Procedure]:
    """The structural models of Tables 3–4: MNL, nested logit (nests by mushy), mixed logit.

    Parameters
    ----------
    mxl : {"paper", "converged"}
        The mixed logit's fit: the paper's budget-limited scipy ``dogbox``
        (``MixedLogit(**PAPER_MXL)``, which reproduces Tables 3–4; see :class:`MixedLogit`), or
        the package default ``MixedLogit()``, which converges to the optimum (cross-price r̂
        about 0.08 above the paper's). MNL and NL converge either way.

    Returns
    -------
    dict of str to Procedure
        ``{"MNL": ..., "NL": ..., "MXL": ...}``.

    Examples
    --------
    >>> procs = table3_procedures()
    >>> list(procs), procs["NL"].nest
    (['MNL', 'NL', 'MXL'], 'mushy')
    >>> table3_procedures("converged")["MXL"].method, procs["MXL"].method
    ('lm', 'dogbox')
    """
    if mxl not in MXL_FITS:
        raise ConfigurationError(f"mxl must be one of {MXL_FITS} (the paper's budget-limited "
                                 f"dogbox fit, or the converged default), got {mxl!r}")
    return {"MNL": MNL(), "NL": NestedLogit(nest="mushy"),
            "MXL": MixedLogit(**PAPER_MXL) if mxl == "paper" else MixedLogit()}


def study(procedures: Mapping[str, Procedure] | None = None, n: Sequence[int] = (50, 100, 200),
          replications: int = 200, seed: int = 0, draws: int = 1,
          prior: DemandPrior | None = None, baseline: Procedure | None = None) -> Study:
    """A demand restrictiveness study (SPEC §7): one demand system per replication, 200 nested
    training markets, 100 evaluation markets; share, own- and cross-price elasticity MSEs;
    the common-intercept logit as the baseline (labelled ``logit``).

    Parameters
    ----------
    procedures : mapping of label to Procedure, optional
        Default: :func:`table3_procedures`.
    n, replications, seed, draws
        As in :class:`~restrictiveness.engine.study.Study` (the paper: n = 50, 100, 200; M = 200).
    prior : DemandPrior, optional
        Default: the calibrated prior of SPEC §7.
    baseline : Procedure, optional
        Default: :class:`Logit` (labelled ``logit``). Another baseline is named by its label
        (``"baseline"`` when it has none or a procedure has it).

    Returns
    -------
    Study
        Ready to ``run()``; nothing is drawn or fitted until then.

    Examples
    --------
    >>> st = study(n=(50,), replications=2)
    >>> st.baseline_label, list(st.procedures), [d.name for d in st.discrepancies]
    ('logit', ['MNL', 'NL', 'MXL'], ['shares', 'own', 'cross'])
    """
    prior = prior if prior is not None else DemandPrior(n_train=max(200, max(n)))
    procs = labelled(procedures, table3_procedures)
    _check_nests(procs, None)
    base = baseline if baseline is not None else Logit()
    return Study(prior, procs, baseline=base,
                 discrepancies=(SharesMSE(), OwnElasticityMSE(), CrossElasticityMSE()), n=n,
                 replications=replications, seed=seed, draws=draws,
                 baseline_label=baseline_label(base, procs))


def market_sample(frame) -> Sample:
    """Long product data (one row per product and market) → a market :class:`Sample`.

    Products are ordered by ``product_ids`` within each market, so a position is the same
    product in every market (per-product procedures rely on it).

    Parameters
    ----------
    frame : DataFrame
        Columns ``market_ids``, ``product_ids``, ``shares`` and the market columns ``prices``,
        ``sugar``, ``mushy``; every market has the same products.

    Returns
    -------
    Sample
        ``X (markets, J, 3)`` and inside shares ``y (markets, J)``.

    Examples
    --------
    >>> import pandas as pd
    >>> df = pd.DataFrame({"market_ids": [1, 1, 2, 2], "product_ids": [2, 1, 1, 2],
    ...                    "shares": [0.2, 0.3, 0.25, 0.15], "prices": [1.5, 1.0, 1.1, 1.4],
    ...                    "sugar": [4.0, 2.0, 2.0, 4.0], "mushy": [1, 0, 0, 1]})
    >>> s = market_sample(df)
    >>> s.X.shape, s.y.tolist()
    ((2, 2, 3), [[0.3, 0.2], [0.25, 0.15]])
    """
    from .estimation import markets_from_frame

    _check_frame(frame, "market_sample", ("market_ids", "product_ids", "shares",
                                          *MARKET_COLUMNS))
    for ids in ("market_ids", "product_ids"):  # else sorting them is a bare TypeError
        ids_of_one_type(frame[ids], f"market_sample: {ids!r}")
    frame = frame.sort_values(["market_ids", "product_ids"], kind="stable")
    X, y, _ = markets_from_frame(frame, list(MARKET_COLUMNS), "shares")
    # markets_from_frame pads a market with fewer products (the models take those), which
    # per-product procedures cannot: a position would be no product in it
    sizes = frame.groupby("market_ids", sort=True).size()
    short = sizes.index[sizes.to_numpy() != sizes.iloc[0]].tolist()
    if short:
        raise DataError(f"market_sample: every market must list the same products; market(s) "
                        f"{short[:5]} list {sizes[short[0]]} products, market "
                        f"{sizes.index[0]!r} {sizes.iloc[0]}")
    # a position must be one product in every market: markets listing other products (or one
    # product twice) had their rows paired by rank, silently
    products = frame["product_ids"].to_numpy().reshape(X.shape[:2]).tolist()
    markets = frame["market_ids"].unique().tolist()
    twice = [m for m, row in zip(markets, products, strict=True) if len(set(row)) < len(row)]
    if twice:
        raise DataError(f"market_sample: market(s) {twice[:5]} list a product id more than once")
    other = [m for m, row in zip(markets, products, strict=True) if row != products[0]]
    if other:
        raise DataError(f"market_sample: every market must list the same products; market(s) "
                        f"{other[:5]} differ from market {markets[0]!r} (products "
                        f"{products[0]})")
    return Sample(X, y, MARKET_COLUMNS, "shares")


def completeness(data=None, procedures: Mapping[str, Procedure] | None = None, folds: int = 5,
                 repeats: int = 5, seed: int = 0, benchmark: Procedure | None = None,
                 baseline: Procedure | None = None):
    """Completeness on the Nevo cereal data (SPEC §5, §7 "Completeness").

    ``repeats`` × ``folds`` cross-validation over the 47 cities (both markets of a city in the
    same fold); loss: MSE of the 24 inside shares, averaged over a city's markets; baseline: the
    common-intercept logit; SEs by the repeated-fold formula.

    Parameters
    ----------
    data : DataFrame, optional
        Long product data with ``market_ids``, ``city_ids``, ``product_ids``, ``shares``,
        ``prices``, ``sugar``, ``mushy`` (default: the shipped cereal data); every market lists
        the same products (:func:`market_sample`; the benchmark is per product).
    procedures : mapping, optional
        Default: :func:`table3_procedures`.
    folds, repeats : int
        ``repeats`` random splits of the cities into ``folds`` folds.
    seed : int
        Seed of the splits.
    benchmark : Procedure, optional
        The flexible benchmark. Default: :class:`~restrictiveness.demand.learners.LogShareRegressor`
        (per-product GP regression of log share ratios on all 72 market characteristics), which
        works offline; the paper's is TabPFN. κ is a ratio to the benchmark's improvement over
        the baseline, so a weaker benchmark inflates every κ by the same factor.
    baseline : Procedure, optional
        Default: :class:`Logit` (the common-intercept logit).

    Returns
    -------
    CompletenessResults

    Examples
    --------
    Six one-market cities with two products; the baseline's κ is 0 and the benchmark's 1 by
    definition:

    >>> import pandas as pd
    >>> df = pd.DataFrame({"market_ids": [m for m in range(1, 7) for _ in (1, 2)],
    ...                    "product_ids": [1, 2] * 6, "mushy": [0, 1] * 6,
    ...                    "prices": [1.2 + 0.1 * m + 0.2 * j for m in range(1, 7) for j in (0, 1)],
    ...                    "sugar": [2.0, 4.0] * 6})
    >>> df["city_ids"] = df["market_ids"]
    >>> df["shares"] = 0.32 - 0.08 * df["prices"] + 0.02 * df["mushy"]
    >>> res = completeness(df, {"MNL": MNL()}, folds=2, repeats=1)
    >>> res.estimates()["kappa"].round(2).to_dict()
    {'MNL': 1.04, 'logit': 0.0, 'log-share GP': 1.0}
    """
    from ..analysis.completeness.designs import RepeatedGroupKFold
    from ..analysis.completeness.estimate import estimate_completeness
    from ..datasets.cereal import load_cereal
    from ..eligible.constraints import Simplex
    from .learners import LogShareRegressor

    frame = load_cereal() if data is None else data
    _check_frame(frame, "completeness", ("market_ids", "product_ids", "city_ids", "shares",
                                         *MARKET_COLUMNS))
    procs = labelled(procedures, table3_procedures)
    _check_nests(procs, frame)
    base = baseline if baseline is not None else Logit()
    bench = benchmark if benchmark is not None else LogShareRegressor()
    return estimate_completeness(
        frame, procs, baseline=base, benchmark=bench,
        design=RepeatedGroupKFold(repeats=repeats, k=folds, group="city_ids"),
        to_sample=market_sample, seed=seed, constraints=[Simplex(outside=True)])


def _check_frame(frame, who: str, required: Sequence[str]) -> None:
    """Refuse anything but a DataFrame with the long product columns (a missing one was a
    bare KeyError deep in the reshaping)."""
    if not isinstance(frame, pd.DataFrame):
        raise DataError(f"{who} takes a DataFrame of products by market, got "
                        f"{type(frame).__name__}")
    missing = [c for c in required if c not in frame.columns]
    if missing:
        raise DataError(f"{who}: the data lack column(s) {missing}; expected {list(required)} "
                        f"(found {list(frame.columns)})")


def _check_nests(procs: Mapping[str, Procedure], frame: pd.DataFrame | None) -> None:
    """Refuse a nested logit whose nest column is not 0/1 in the markets it will see (the
    prior's, where only ``mushy`` is, or ``frame``'s): every fit failed, and its rows repeated
    the baseline's, with a warning after the run."""
    for label, proc in procs.items():
        nest = getattr(proc, "nest", None)
        if not isinstance(proc, NestedLogit) or nest not in MARKET_COLUMNS:
            continue  # a column the markets lack is the procedure's validate's to name
        if frame is None:
            if nest != "mushy":
                raise ConfigurationError(f"procedures[{label!r}]: NestedLogit(nest={nest!r}) "
                                         "needs a 0/1 column, and the demand prior's markets "
                                         f"have one, 'mushy' ({nest!r} is continuous): every "
                                         "fit would fail")
        else:
            other = frame[nest][~frame[nest].isin([0, 1])].unique()
            if len(other):
                raise DataError(f"procedures[{label!r}]: NestedLogit(nest={nest!r}) needs a 0/1 "
                                f"column, but the data's {nest!r} holds "
                                f"{', '.join(str(v) for v in other[:4])}"
                                f"{' ...' if len(other) > 4 else ''}: every fit would fail")
