"""Demand models as estimators on real data: ``from_formula`` → ``fit()`` → ``params``, ``bse``,
``summary()``.

The data are a long table with one row per product and market (``market_ids`` plus product
columns and the shares), like pyblp's product data. Markets may list different numbers of
products; they become the stacked array ``(n, J, C)`` the models take, ``J`` the largest market,
a smaller market's absent products rows of NaN after its own (share 0). Standard errors are
those of :class:`~restrictiveness.procedures.estimation.LeastSquaresResults` on ``J``, the
Jacobian of the shares at the estimate (valid for interior estimates; a parameter at a bound is
flagged in the summary notes): by default the classical nonlinear-least-squares ones,
``s² (JᵀJ)⁻¹`` with ``s² = SSR / (N − P)`` and Student-t inference on ``N − P`` degrees of
freedom; ``fit(cov_type="cluster", groups="market_ids")`` gives the sandwich clustered by market
(the shares of one market share its outside good, so their errors are correlated), with ``G − 1``
degrees of freedom, and ``cov_type="HC1"`` White's.
"""

from __future__ import annotations

from collections.abc import Sequence
from functools import cached_property

import numpy as np
import pandas as pd

from ..procedures.estimation import CovType, LeastSquaresResults, cluster_codes
from ..shared._lsq_nb import CONVERGED, STATUS
from ..shared.checks import ids_of_one_type, keywords_of, known_keywords, numeric_columns
from ..shared.exceptions import DataError, FormulaError
from ..shared.formula import parse_formula
from ..shared.sample import Sample
from .markets import _nest_index

#: Models a DemandModel binds to data, by their ``model`` attribute, with their summary titles.
_TITLES = {"MNL": "Multinomial logit", "NL": "Nested logit", "MXL": "Mixed logit"}

__all__ = ["DemandModel", "DemandResults", "markets_from_frame"]


def markets_from_frame(data: pd.DataFrame, columns: list[str], response: str | None,
                       market_ids: str = "market_ids"):
    """Long product data → markets ``X (n, J, C)``, shares ``y (n, J)`` and market labels.

    ``J`` is the largest market's number of products; a market with fewer is padded with rows of
    NaN in ``X`` and shares 0 in ``y`` after its products (the models read them as absent).
    Within a market, products keep the data's row order.

    Examples
    --------
    >>> df = pd.DataFrame({"market_ids": [1, 1, 2, 2], "prices": [1., 2., 1., 3.],
    ...                    "shares": [.1, .2, .3, .1]})
    >>> X, y, ids = markets_from_frame(df, ["prices"], "shares")
    >>> X.shape, y.shape
    ((2, 2, 1), (2, 2))
    """
    if not isinstance(data, pd.DataFrame):
        raise DataError("data must be a pandas DataFrame with one row per product and market")
    need = [market_ids] + list(columns) + ([response] if response else [])
    missing = [c for c in need if c not in data.columns]
    if missing:
        raise FormulaError(f"data lack column(s) {missing}; available: {list(data.columns)}")
    # text was parsed as numbers, complex cut to its real part, a repeated column a reshape error
    numeric_columns(data, need[1:], "demand data")
    if data.columns.tolist().count(market_ids) > 1:
        raise DataError(f"demand data: the data have column(s) {[market_ids]} more than once")
    gaps = data[need].isna()
    if gaps.to_numpy().any():
        counts = gaps.sum()
        counts = counts[counts > 0]
        where = ", ".join(f"{c!r} ({n} row{'s' * (n > 1)})" for c, n in counts.items())
        first = data.index[gaps.any(axis=1).to_numpy()][:5].tolist()
        raise DataError(f"demand data contain missing values (NaN) in the columns the model "
                        f"uses: {where}; first rows {first}")
    ids_of_one_type(data[market_ids], f"demand data: {market_ids!r}")
    if data.empty:  # the size check below said "market sizes range from nan to nan"
        raise DataError("data have no rows; give one row per product and market")
    groups = data.groupby(market_ids, sort=True)
    sizes = groups.size()
    n, J = len(sizes), int(sizes.max())
    ordered = data.iloc[_market_order(data, market_ids)]
    values = ordered[list(columns)].to_numpy(dtype=float)
    shares = ordered[response].to_numpy(dtype=float) if response else None
    if sizes.nunique() == 1:
        X = values.reshape(n, J, len(columns))
        y = shares.reshape(n, J) if shares is not None else None
    else:   # rows of NaN after a smaller market's products: absent, with share 0
        market = np.repeat(np.arange(n), sizes.to_numpy())
        slot = np.arange(len(ordered)) - np.repeat(np.cumsum(sizes.to_numpy()) - sizes.to_numpy(),
                                                   sizes.to_numpy())
        X = np.full((n, J, len(columns)), np.nan)
        X[market, slot] = values
        y = None
        if shares is not None:
            y = np.zeros((n, J))
            y[market, slot] = shares
    if y is not None:
        # named here by market: the models' own check says only that some market is wrong
        low = y.min(axis=1)
        if (low < 0).any():
            raise DataError(f"demand data: {response!r} holds negative shares: "
                            f"{_some(sizes.index[low < 0], low[low < 0], 'has a share of {:.6g}')}")
        total = y.sum(axis=1)
        full = total >= 1
        if full.any():
            raise DataError(f"demand data: the inside shares ({response!r}) of a market must sum "
                            f"to less than 1 (the outside good has the rest), but "
                            f"{_some(sizes.index[full], total[full], 'sums to {:.6g}')}")
    return X, y, sizes.index.to_numpy()


def _some(markets, values, what: str) -> str:
    """``market 'C01Q1' has 23 products, ...`` for the first five markets of a refusal
    (``what`` formats a market's value)."""
    pairs = [f"market {m!r} " + what.format(v) for m, v in zip(markets[:5], values[:5],
                                                               strict=False)]
    more = f" (and {len(markets) - 5} more)" if len(markets) > 5 else ""
    return ", ".join(pairs) + more


def _market_order(data: pd.DataFrame, market_ids: str) -> np.ndarray:
    """Row positions of ``data`` grouped by market (markets sorted, rows in data order within
    a market): the order of :func:`markets_from_frame`'s flattened ``X`` and ``y``."""
    return data[[market_ids]].reset_index(drop=True).sort_values(
        market_ids, kind="stable").index.to_numpy()


class DemandModel:
    """A demand model (:class:`~restrictiveness.demand.models.MNL`, ``NestedLogit``,
    ``MixedLogit``) bound to long product data.

    Usually built with ``MNL.from_formula(formula, data)``.

    Parameters
    ----------
    procedure : MNL, NestedLogit or MixedLogit
        The model and its fitting options.
    data : DataFrame
        One row per product and market.
    market_ids : str
        Column naming each row's market.

    Examples
    --------
    >>> from restrictiveness.datasets import load_cereal
    >>> from restrictiveness.demand.models import MNL
    >>> res = MNL.from_formula("shares ~ prices + sugar + mushy", load_cereal()).fit()
    >>> res.nobs, res.df_resid, round(float(res.bse["prices"]), 4)
    (2256, 2252, 1.0028)
    """

    def __init__(self, procedure, data: pd.DataFrame,
                 market_ids: str = "market_ids") -> None:
        if getattr(procedure, "model", None) not in _TITLES or not hasattr(procedure, "fit"):
            raise TypeError("procedure must be an MNL, NestedLogit or MixedLogit instance")
        if not isinstance(data, pd.DataFrame):  # None was an AttributeError below
            raise DataError(f"demand estimation takes a DataFrame of products by market, got "
                            f"{type(data).__name__}")
        self.procedure, self.market_ids, self.data = procedure, market_ids, data
        f = parse_formula(procedure.formula)
        if f.response is None:
            raise FormulaError(f"formula {procedure.formula!r} needs the shares on the left")
        columns = list(f.covariates)
        nest = getattr(procedure, "nest", None)
        extras = [nest] if nest else []
        if "prices" in data.columns:
            extras.append("prices")
        for c in extras:
            if c not in columns:
                columns.append(c)
        self.columns, self.response = tuple(columns), f.response
        self.X, self.y, self.markets = markets_from_frame(data, columns, f.response, market_ids)
        if nest:  # refused here, not at fit (a nest column of 1/2 or of three nests)
            _nest_index(self.X, columns, nest)
        _distinct_products(data, market_ids)
        # results report per-row arrays in the data's row order, as statsmodels does; X and y
        # are grouped by market, which reorders rows whenever markets are not sorted blocks
        self._rows = _market_order(data, market_ids)
        # which entries of the flattened (n·J) market arrays are rows of the data (the others
        # pad markets with fewer products)
        self._present = ~np.isnan(self.X[:, :, 0]).ravel()

    @classmethod
    def from_formula(cls, procedure_class, formula: str, data: pd.DataFrame,
                     market_ids: str = "market_ids", **kwargs) -> DemandModel:
        """Build the procedure from a formula and options, bound to ``data``.

        Options the procedure does not take are a ``ConfigurationError`` naming them and the
        accepted ones.

        Parameters
        ----------
        procedure_class : type
            :class:`~restrictiveness.demand.models.MNL`, ``NestedLogit`` or ``MixedLogit``.
        formula : str
            Inside shares on the left, product characteristics on the right.
        data : DataFrame
            One row per product and market.
        market_ids : str
            Column naming each row's market.
        **kwargs
            Options of ``procedure_class``.

        Returns
        -------
        DemandModel
            The model bound to the data; ``fit()`` estimates.

        Examples
        --------
        >>> from restrictiveness.datasets import load_cereal
        >>> from restrictiveness.demand.models import MNL
        >>> model = DemandModel.from_formula(MNL, "shares ~ prices + sugar", load_cereal())
        >>> model.X.shape, model.columns
        ((94, 24, 2), ('prices', 'sugar'))
        """
        known_keywords(kwargs, keywords_of(procedure_class, skip=("formula",)),
                       f"{procedure_class.__name__}.from_formula")
        return cls(procedure_class(formula, **kwargs), data, market_ids)

    def fit(self, cov_type: CovType = "nonrobust",
            groups: str | np.ndarray | Sequence | None = None) -> DemandResults:
        """Fit by least squares on the inside shares; see :class:`DemandResults`.

        Parameters
        ----------
        cov_type : {"nonrobust", "HC1", "cluster"}
            Classical NLS standard errors, White's (HC1), or clustered by ``groups``
            (:class:`~restrictiveness.procedures.estimation.LeastSquaresResults` gives the
            formulas).
        groups : str or array_like, optional
            Clusters for ``cov_type="cluster"``: a column of the data (``"market_ids"`` clusters
            by market) or one identifier per row of the data, in its row order.

        Returns
        -------
        DemandResults
            Estimates, standard errors and the statsmodels-style summary.

        Examples
        --------
        >>> from restrictiveness.datasets import load_cereal
        >>> from restrictiveness.demand.models import MNL
        >>> model = MNL.from_formula("shares ~ prices + sugar + mushy", load_cereal())
        >>> res = model.fit(cov_type="cluster", groups="market_ids")
        >>> res.params.index.tolist(), res.n_clusters, round(float(res.bse["prices"]), 4)
        (['Intercept', 'prices', 'sugar', 'mushy'], 94, 0.977)
        """
        cov_type, codes = cluster_codes(cov_type, groups, len(self.data), self.data)
        sample = Sample(self.X, self.y, self.columns, self.response)
        return DemandResults(self, self.procedure.fit(sample, np.random.default_rng(0)),
                             cov_type, codes)


class DemandResults(LeastSquaresResults):
    """Estimates of a demand model, with the statsmodels interface of
    :class:`~restrictiveness.procedures.estimation.LeastSquaresResults`.

    Standard errors are by default the classical NLS ones, ``s² (JᵀJ)⁻¹`` on the linearised
    share equations, with Student-t inference on ``N − k`` degrees of freedom, like every other
    least-squares result in the package (the lottery's and ``rx.NLS``'s), so that a demand
    table and a lottery table read alike (with N in the thousands, t and normal agree to the
    printed digits). ``cov_type="cluster"`` with ``groups="market_ids"`` is the sandwich
    clustered by market (t with G − 1 degrees of freedom); ``"HC1"`` is White's.

    Parameters
    ----------
    model : DemandModel
        The model and its data.
    fitted : DemandFit
        The fit on ``model``'s data.
    cov_type : {"nonrobust", "HC1", "cluster"}
        The covariance (:meth:`DemandModel.fit`).
    codes : ndarray of int, optional
        Cluster of every row of the data, in its row order (``cov_type="cluster"``).

    Attributes
    ----------
    params : Series
        Estimates by name (utility coefficients, then ``rho[...]`` or ``L[a,b]``).
    bse, tvalues, pvalues : Series
        Standard errors, t statistics and two-sided t p-values (``N − k`` degrees of freedom).
    nobs : int
        Number of shares fitted (markets × products).
    converged : bool
        Whether the winning start stopped on a convergence test rather than on the evaluation
        budget (the summary says which; the standard errors assume an optimum).
    ssr : float
        Sum of squared share residuals.
    endog, fittedvalues, resid : ndarray
        Observed shares, fitted shares and their difference, one per row of the data in the
        data's row order (``res.model.y`` holds them by market, markets sorted).
    fitted : DemandFit
        The fitted share function on market arrays ``(m, J, C)`` whose last axis is
        ``res.model.columns`` (``predict``, ``elasticities``); :meth:`predict` and
        :meth:`elasticities` here take and give long product data.

    Examples
    --------
    >>> import pandas as pd
    >>> from restrictiveness.demand.models import MNL
    >>> df = pd.DataFrame({"market_ids": [1, 1, 2, 2, 3, 3, 4, 4],
    ...                    "prices": [1., 2., 1.5, 3., 2., 1., 2.5, 1.5],
    ...                    "shares": [.3, .2, .3, .1, .2, .35, .15, .3]})
    >>> res = MNL.from_formula("shares ~ prices", df).fit()
    >>> res.cov_params().shape, res.predict().shape
    ((2, 2), (8,))
    """

    _title = "Demand Estimation Results"

    def __init__(self, model: DemandModel, fitted, cov_type: CovType = "nonrobust",
                 codes: np.ndarray | None = None) -> None:
        self.model, self.fitted = model, fitted
        self.params = pd.Series(fitted.params, index=fitted.names, name="params")
        # a fit that ran out of its evaluation budget (always so with the paper's MXL setting)
        # was presented like an optimum, its standard errors included
        self.converged = int(fitted.info.get("status", 0)) in CONVERGED
        # y, the predictions and the Jacobian rows come grouped by market: put them back in the
        # data's row order (the cereal data's were not, and resid, fittedvalues and endog did
        # not line up with the rows they were assigned to); the covariance does not change
        rows, keep = model._rows, model._present
        self._set_fit(_data_order(self._jacobian, rows), _data_order(model.y.ravel()[keep], rows),
                      _data_order(fitted.predict(model.X).ravel()[keep], rows), fitted.names,
                      cov_type, codes, fitted.at_bounds())

    @cached_property
    def _jacobian(self) -> np.ndarray:
        """Grouped by market, as ``model.X`` (the fit's order, not the data's); the rows of
        the data only (no padding)."""
        return self.fitted.jacobian(self.model.X, self.model.y)[self.model._present]

    def predict(self, exog: pd.DataFrame | np.ndarray | None = None
                ) -> pd.Series | np.ndarray:
        """Inside shares at the estimate, one per row of the data: the fitted values, or the
        shares in the markets of new product data.

        Parameters
        ----------
        exog : DataFrame or ndarray, optional
            Long product data with the market column and the model's columns (any column
            order; markets may list different numbers of products), or markets as an array
            ``(m, J, C)`` whose last axis follows ``res.model.columns`` (a market with fewer
            than ``J`` products padded with rows of NaN after them, which get share 0).
            Default: the estimation data.

        Returns
        -------
        Series or ndarray
            For product data, a Series indexed like the data's rows, in their order, named by
            the response; for an array of markets, the shares ``(m, J)`` (as statsmodels
            returns an array for an array).

        Raises
        ------
        DataError
            ``exog`` is neither, or its markets or columns are unusable.

        Examples
        --------
        >>> from restrictiveness.datasets import load_cereal
        >>> from restrictiveness.demand.models import MNL
        >>> df = load_cereal()
        >>> res = MNL.from_formula("shares ~ prices + sugar + mushy", df).fit()
        >>> s = res.predict()
        >>> bool(s.index.equals(df.index)), round(float(((df["shares"] - s) ** 2).sum()), 4)
        (True, 1.4091)
        >>> cheaper = df.assign(prices=0.9 * df["prices"])      # all prices 10% lower
        >>> inside = res.predict(cheaper).groupby(df["market_ids"]).sum()
        >>> bool((inside > s.groupby(df["market_ids"]).sum()).all())
        True
        """
        X, rows, index = self._markets(exog, "predict")
        if rows is None:
            return self.fitted.predict(X)
        keep = ~np.isnan(X[:, :, 0]).ravel()
        return pd.Series(_data_order(self.fitted.predict(X).ravel()[keep], rows), index=index,
                         name=self.model.response)

    def elasticities(self, exog: pd.DataFrame | np.ndarray | None = None
                     ) -> pd.DataFrame | np.ndarray:
        """Analytic price elasticities at the estimate, one row per row of the data (pyblp's
        layout): column ``k`` of a row is ``∂ log s_j / ∂ log p_k``, ``j`` the row's product and
        ``k`` the ``k``-th product of its market, counted in the data's row order.

        Parameters
        ----------
        exog : DataFrame or ndarray, optional
            Long product data, or markets ``(m, J, C)``, as for :meth:`predict`, with positive
            prices. Default: the estimation data.

        Returns
        -------
        DataFrame or ndarray
            For product data, indexed like the data's rows, in their order; columns
            ``0 .. J − 1``, ``J`` the largest market's number of products (a smaller market's
            rows are NaN in the columns past its products, as pyblp's). The own-price
            elasticity of a row is the column of its position in its market. For an array of
            markets, ``E[m, j, k]`` ``(m, J, J)``, NaN in the rows and columns of absent
            products.

        Examples
        --------
        An MNL's own-price elasticity is ``β_p p_j (1 − s_j)``:

        >>> import numpy as np
        >>> from restrictiveness.datasets import load_cereal
        >>> from restrictiveness.demand.models import MNL
        >>> df = load_cereal()
        >>> res = MNL.from_formula("shares ~ prices + sugar + mushy", df).fit()
        >>> E = res.elasticities()
        >>> own = E.to_numpy()[np.arange(len(df)), df.groupby("market_ids").cumcount()]
        >>> s = res.predict()
        >>> E.shape, bool(np.allclose(own, res.params["prices"] * df["prices"] * (1 - s)))
        ((2256, 24), True)
        """
        X, rows, index = self._markets(exog, "elasticities")
        E = self.fitted.elasticities(X)  # which checks an array's shape first
        price = self.model.columns.index("prices") if "prices" in self.model.columns else None
        if price is not None:
            p = np.asarray(X, dtype=float)[:, :, price]
            if not (p[~np.isnan(p)] > 0).all():     # NaN: absent products of padded markets
                raise DataError("elasticities: prices must be positive (elasticities are "
                                "derivatives in log price)")
        if rows is None:
            return E
        keep = ~np.isnan(X[:, :, 0]).ravel()
        return pd.DataFrame(_data_order(E.reshape(-1, E.shape[2])[keep], rows), index=index,
                            columns=pd.RangeIndex(E.shape[2]))

    def _markets(self, exog, who: str) -> tuple[np.ndarray, np.ndarray | None, pd.Index | None]:
        """Markets ``X`` in the model's columns, the data-order positions of their rows and the
        rows' labels, of the estimation data or of ``exog`` (no rows for an array of markets)."""
        model = self.model
        if exog is None:
            return model.X, model._rows, model.data.index
        if isinstance(exog, np.ndarray):  # checked by the fitted rule
            return exog, None, None
        if not isinstance(exog, pd.DataFrame):
            raise DataError(f"{who} takes long product data (a DataFrame with {model.market_ids!r}"
                            f" and the columns {list(model.columns)}) or markets as an array "
                            f"(m, J, C) with the last axis in res.model.columns, got "
                            f"{type(exog).__name__}")
        X, _, _ = markets_from_frame(exog, list(model.columns), None, model.market_ids)
        _distinct_products(exog, model.market_ids)
        return X, _market_order(exog, model.market_ids), exog.index

    def _summary_model(self) -> list[tuple[str, str]]:
        proc = self.model.procedure
        sizes = (~np.isnan(self.model.X[:, :, 0])).sum(axis=1)
        per = (str(sizes[0]) if sizes.min() == sizes.max()
               else f"{sizes.min()} to {sizes.max()}")
        rows = [("Model:", _TITLES[proc.model]), ("Dep. Variable:", self.model.response),
                ("Markets:", str(self.model.X.shape[0])), ("Products per market:", per)]
        if proc.model == "NL":
            rows.append(("Nests by:", proc.nest))
        if proc.model == "MXL":
            rows.append(("Integration:", f"{proc.nodes} antithetic Sobol nodes"))
        return rows

    def _summary_notes(self) -> list[str]:
        info = self.fitted.info
        status = int(info.get("status", 0))
        ended = (f"converged ({STATUS.get(status, status)})" if self.converged else
                 f"NOT converged ({STATUS.get(status, status)}): the estimate is the best point "
                 "reached, not an optimum, and the standard errors assume one")
        return [f"{_TITLES[self.model.procedure.model]}: {self.model.procedure.formula}; least "
                f"squares on inside shares ({info.get('nfev', '?')} residual evaluations, "
                f"best start {info.get('start', '?')}); {ended}."]


def _distinct_products(data: pd.DataFrame, market_ids: str,
                       product_ids: str = "product_ids") -> None:
    """Refuse a market that lists a product id twice (when the data have product ids): the
    models read every row as another product, so a repeated row counted twice in the shares."""
    if product_ids not in data.columns:
        return
    twice = data.duplicated([market_ids, product_ids], keep=False)
    if twice.any():
        pairs = data.loc[twice, [market_ids, product_ids]].drop_duplicates().head(5)
        raise DataError(f"demand data: market(s) list a product id more than once "
                        f"({market_ids}, {product_ids}): "
                        f"{list(pairs.itertuples(index=False, name=None))}; each row is one "
                        "product of one market")


def _data_order(grouped: np.ndarray, rows: np.ndarray) -> np.ndarray:
    """Rows of an array in :func:`markets_from_frame`'s market order, put in the data's order."""
    out = np.empty_like(grouped)
    out[rows] = grouped
    return out
