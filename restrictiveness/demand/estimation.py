"""Demand models as estimators on real data: ``from_formula`` → ``fit()`` → ``params``, ``bse``,
``summary()``.

The data are a long table with one row per product and market (``market_ids`` plus product
columns and the shares), like pyblp's product data. Every market must list the same number of
products; markets become the stacked array ``(n, J, C)`` the models take. Standard errors are the
classical nonlinear-least-squares ones, ``s² (JᵀJ)⁻¹`` with ``s² = SSR / (N − P)`` and ``J`` the
Jacobian of the share residuals at the estimate (valid for interior estimates; a parameter at a
bound is flagged in the summary notes).
"""

from __future__ import annotations

from functools import cached_property

import numpy as np
import pandas as pd
import scipy.stats

from ..shared.exceptions import DataError, FormulaError
from ..shared.formula import parse_formula
from ..shared.sample import Sample

#: Models a DemandModel binds to data, by their ``model`` attribute, with their summary titles.
_TITLES = {"MNL": "Multinomial logit", "NL": "Nested logit", "MXL": "Mixed logit"}

__all__ = ["DemandModel", "DemandResults", "markets_from_frame"]


def markets_from_frame(data: pd.DataFrame, columns: list[str], response: str | None,
                       market_ids: str = "market_ids"):
    """Long product data → markets ``X (n, J, C)``, shares ``y (n, J)`` and market labels.

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
    if data[need].isna().to_numpy().any():
        raise DataError("data contain missing values (NaN) in the columns the model uses")
    groups = data.groupby(market_ids, sort=True)
    sizes = groups.size()
    if sizes.nunique() != 1:
        raise DataError("every market must list the same number of products; market sizes "
                        f"range from {sizes.min()} to {sizes.max()}")
    J = int(sizes.iloc[0])
    ordered = data.sort_values(market_ids, kind="stable")
    X = ordered[list(columns)].to_numpy(dtype=float).reshape(len(sizes), J, len(columns))
    y = (ordered[response].to_numpy(dtype=float).reshape(len(sizes), J)
         if response else None)
    return X, y, sizes.index.to_numpy()


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
    >>> import pyblp  # doctest: +SKIP
    >>> from restrictiveness.demand.models import MNL
    >>> df = pd.read_csv(pyblp.data.NEVO_PRODUCTS_LOCATION)  # doctest: +SKIP
    >>> res = MNL.from_formula("shares ~ prices + sugar + mushy", df).fit()  # doctest: +SKIP
    >>> print(res.summary())  # doctest: +SKIP
    """

    def __init__(self, procedure, data: pd.DataFrame,
                 market_ids: str = "market_ids") -> None:
        if getattr(procedure, "model", None) not in _TITLES or not hasattr(procedure, "fit"):
            raise TypeError("procedure must be an MNL, NestedLogit or MixedLogit instance")
        self.procedure, self.market_ids = procedure, market_ids
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

    @classmethod
    def from_formula(cls, procedure_class, formula: str, data: pd.DataFrame,
                     market_ids: str = "market_ids", **kwargs) -> DemandModel:
        """Build the procedure from a formula and options, bound to ``data``."""
        return cls(procedure_class(formula, **kwargs), data, market_ids)

    def fit(self) -> DemandResults:
        """Fit by least squares on the inside shares; see :class:`DemandResults`."""
        sample = Sample(self.X, self.y, self.columns, self.response)
        return DemandResults(self, self.procedure.fit(sample, np.random.default_rng(0)))


class DemandResults:
    """Estimates of a demand model.

    Attributes
    ----------
    params : Series
        Estimates by name (utility coefficients, then ``rho[...]`` or ``L[a,b]``).
    bse : Series
        Classical NLS standard errors.
    tvalues, pvalues : Series
        ``params / bse`` and two-sided normal p-values.
    nobs : int
        Number of shares fitted (markets × products).
    ssr : float
        Sum of squared share residuals.
    fitted : DemandFit
        The fitted share function (``predict``, ``elasticities``).
    """

    def __init__(self, model: DemandModel, fitted) -> None:
        self.model, self.fitted = model, fitted
        self.params = pd.Series(fitted.params, index=fitted.names, name="params")
        self.nobs = int(model.y.size)
        self.ssr = float(2 * fitted.info["cost"])

    @cached_property
    def _jacobian(self) -> np.ndarray:
        return self.fitted.jacobian(self.model.X, self.model.y)

    @cached_property
    def cov_params(self) -> pd.DataFrame:
        """``s² (JᵀJ)⁻¹`` (pseudo-inverse when ``JᵀJ`` is singular)."""
        Jm = self._jacobian
        s2 = self.ssr / max(self.nobs - Jm.shape[1], 1)
        cov = s2 * np.linalg.pinv(Jm.T @ Jm)
        return pd.DataFrame(cov, index=self.params.index, columns=self.params.index)

    @cached_property
    def bse(self) -> pd.Series:
        return pd.Series(np.sqrt(np.clip(np.diag(self.cov_params), 0, None)),
                         index=self.params.index, name="bse")

    @property
    def tvalues(self) -> pd.Series:
        return (self.params / self.bse).rename("t")

    @property
    def pvalues(self) -> pd.Series:
        return pd.Series(2 * scipy.stats.norm.sf(np.abs(self.tvalues)),
                         index=self.params.index, name="P>|t|")

    def conf_int(self, alpha: float = 0.05) -> pd.DataFrame:
        """Normal confidence intervals ``params ± z_{1−α/2} bse``."""
        q = scipy.stats.norm.ppf(1 - alpha / 2)
        return pd.DataFrame({"lower": self.params - q * self.bse,
                             "upper": self.params + q * self.bse})

    def summary(self, alpha: float = 0.05):
        """A statsmodels ``Summary`` (text, HTML, LaTeX) of the estimates."""
        from statsmodels.iolib.summary import Summary
        from statsmodels.iolib.table import SimpleTable

        proc = self.model.procedure
        title = _TITLES[proc.model]
        left = [("Model:", title), ("Formula:", proc.formula),
                ("Markets:", str(self.model.X.shape[0])),
                ("Products per market:", str(self.model.X.shape[1]))]
        right = [("No. shares:", str(self.nobs)), ("SSR:", f"{self.ssr:.6g}"),
                 ("Residual evals:", str(self.fitted.info.get("nfev", ""))),
                 ("Best start:", str(self.fitted.info.get("start", "")))]
        if proc.model == "NL":
            left.append(("Nests by:", proc.nest))
        if proc.model == "MXL":
            left.append(("Integration:", f"{proc.nodes} antithetic Sobol nodes"))
        while len(right) < len(left):
            right.append(("", ""))
        header = SimpleTable([[a, b, c, d] for (a, b), (c, d) in zip(left, right, strict=True)],
                             title=f"{title} — least squares on inside shares")
        ci = self.conf_int(alpha)
        rows = [[f"{self.params[k]:.4f}", f"{self.bse[k]:.4f}", f"{self.tvalues[k]:.3f}",
                 f"{self.pvalues[k]:.3f}", f"{ci.loc[k, 'lower']:.4f}",
                 f"{ci.loc[k, 'upper']:.4f}"] for k in self.params.index]
        lo, hi = alpha / 2, 1 - alpha / 2
        table = SimpleTable(rows, headers=["coef", "std err", "t", "P>|t|", f"[{lo:.3g}",
                                           f"{hi:.3g}]"],
                            stubs=list(self.params.index), title="")
        smry = Summary()
        smry.tables.append(header)
        smry.tables.append(table)
        notes = ["[1] Standard errors: classical nonlinear least squares s²(JᵀJ)⁻¹."]
        bounded = self.fitted.at_bounds()
        if bounded:
            notes.append(f"[2] At a bound (standard errors not valid): {', '.join(bounded)}.")
        smry.add_extra_txt(notes)
        return smry
