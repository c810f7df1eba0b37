"""Nonlinear least squares of RDU-family models on real lottery data, statsmodels-style.

``CPT.from_formula("ce ~ z_hi + z_lo + p", data, free=(...)).fit(cov_type=...)`` builds a
:class:`LotteryNLS` and returns :class:`LotteryNLSResults` with ``params``, ``bse``,
``tvalues``, ``pvalues``, ``conf_int()``, ``ssr``, ``nobs`` and a statsmodels ``summary()``.

Standard errors are the usual NLS ones at the estimate, with ``J`` the Jacobian of the fitted
certainty equivalents with respect to the *internal* free parameters (α, γ, log δ) and ``e``
the residuals:

* classical: ``s² (JᵀJ)⁻¹`` with ``s² = SSR / (N − k)``;
* cluster: ``(JᵀJ)⁻¹ (Σ_g J_gᵀ e_g e_gᵀ J_g) (JᵀJ)⁻¹ · G/(G − 1) · (N − 1)/(N − k)``
  (statsmodels' and Stata's small-sample factor);

then carried to the reported scale (δ, or η for disappointment aversion) by the delta method,
``V = D V_int Dᵀ`` with ``D = ∂(reported)/∂(internal)``. Inference uses Student-t with
``N − k`` degrees of freedom (classical) or ``G − 1`` (cluster). The formulas assume an interior
optimum; parameters on a bound are flagged in the summary's notes.
"""

from __future__ import annotations

import copy
from collections.abc import Sequence
from functools import cached_property
from typing import Literal

import numpy as np
import pandas as pd
import scipy.stats
from statsmodels.iolib.summary import Summary, fmt_2cols, fmt_params
from statsmodels.iolib.table import SimpleTable

from ..shared.exceptions import ConfigurationError, DataError, FormulaError
from ..shared.formula import parse_formula
from . import _rdu_nb
from .lotteries import lottery_matrix

__all__ = ["LotteryNLS", "LotteryNLSResults"]


class LotteryNLS:
    """Nonlinear least-squares estimator of an RDU-family model of certainty equivalents.

    Parameters
    ----------
    endog : array_like
        ``(N,)`` certainty equivalents.
    exog : array_like
        ``(N, 3)`` lotteries ``(z_hi, z_lo, p)``.
    model : RDU
        The model (e.g. ``CPT(free=("alpha", "delta"))``), which also does the fit.
    data : DataFrame, optional
        The data the arrays came from (lets ``fit`` take ``groups`` as a column name).
    formula : str, optional
        The formula the arrays came from.
    names : sequence of str
        Names of the response and the three covariates (for the summary).

    Examples
    --------
    >>> import numpy as np
    >>> from restrictiveness.lottery.models import CPT
    >>> X = np.array([[1.0, 0.0, 0.5], [0.6, 0.2, 0.3], [0.9, 0.1, 0.8], [0.5, 0.0, 0.1]])
    >>> res = LotteryNLS([0.4, 0.3, 0.6, 0.1], X, CPT(free=("alpha",))).fit()
    >>> res.nobs
    4
    """

    def __init__(self, endog, exog, model, data: pd.DataFrame | None = None,
                 formula: str | None = None,
                 names: Sequence[str] = ("ce", "z_hi", "z_lo", "p")) -> None:
        if not (hasattr(model, "fit_arrays") and hasattr(model, "utility")):
            raise ConfigurationError("model must be an RDU-family model such as CPT(...)")
        self.model = model
        self.exog = lottery_matrix(exog, shift=model.utility.shift)
        self.endog = np.ascontiguousarray(endog, dtype=float)
        if self.endog.shape != (self.exog.shape[0],):
            raise DataError(f"endog must have shape ({self.exog.shape[0]},), "
                            f"got {self.endog.shape}")
        if not np.isfinite(self.endog).all():
            raise DataError("endog contains NaN or infinite values")
        self.data, self.formula, self.names = data, formula, tuple(names)

    @classmethod
    def from_formula(cls, formula: str, data: pd.DataFrame, model) -> LotteryNLS:
        """Estimator from a formula ``"ce ~ z_hi + z_lo + p"`` (covariates in that role order).

        Examples
        --------
        >>> import pandas as pd
        >>> from restrictiveness.lottery.models import CPT
        >>> df = pd.DataFrame({"y": [0.4, 0.3, 0.6, 0.1], "hi": [1.0, 0.6, 0.9, 0.5],
        ...                    "lo": [0.0, 0.2, 0.1, 0.0], "prob": [0.5, 0.3, 0.8, 0.1]})
        >>> LotteryNLS.from_formula("y ~ hi + lo + prob", df, CPT(free=("alpha",))).names
        ('y', 'hi', 'lo', 'prob')
        """
        f = parse_formula(formula)
        if f.response is None:
            raise FormulaError(f"formula {formula!r} has no response (left-hand side)")
        if len(f.covariates) != 3:
            raise FormulaError(f"formula {formula!r} must name three covariates playing "
                               "(z_hi, z_lo, p), in that order")
        if not isinstance(data, pd.DataFrame):
            raise FormulaError("data must be a pandas DataFrame")
        missing = [c for c in (f.response,) + f.covariates if c not in data.columns]
        if missing:
            raise FormulaError(f"formula {formula!r} names column(s) {missing} that the data "
                               f"do not have; available columns: {list(data.columns)}")
        cols = [f.response, *f.covariates]
        if data[cols].isna().any().any():
            raise DataError(f"formula {formula!r}: the data contain missing values (NaN); "
                            "drop or impute them first")
        return cls(data[f.response].to_numpy(float), data[list(f.covariates)].to_numpy(float),
                   model, data=data, formula=formula, names=cols)

    @property
    def nobs(self) -> int:
        """Number of observations."""
        return int(self.endog.shape[0])

    def fit(self, cov_type: Literal["classical", "cluster"] = "classical",
            groups: str | np.ndarray | Sequence | None = None) -> LotteryNLSResults:
        """Estimate by least squares and compute standard errors.

        Parameters
        ----------
        cov_type : {"classical", "cluster"}
            Homoskedastic NLS covariance, or cluster-robust by ``groups``.
        groups : str or array_like, optional
            Cluster identifiers (a column of the formula's data, or an array of length N);
            required for ``cov_type="cluster"``.

        Returns
        -------
        LotteryNLSResults
        """
        if cov_type not in ("classical", "cluster"):
            raise ConfigurationError(f"cov_type must be 'classical' or 'cluster', "
                                     f"got {cov_type!r}")
        codes = None
        if cov_type == "cluster":
            if groups is None:
                raise ConfigurationError("groups is required when cov_type='cluster'")
            if isinstance(groups, str):
                if self.data is None or groups not in self.data.columns:
                    raise FormulaError(f"groups names column {groups!r} that the data do not "
                                       "have")
                groups = self.data[groups].to_numpy()
            groups = np.asarray(groups)
            if groups.shape != (self.nobs,):
                raise DataError(f"groups must have one entry per observation ({self.nobs}), "
                                f"got shape {groups.shape}")
            if pd.isna(groups).any():
                raise DataError("groups contains missing values")
            codes = pd.factorize(groups)[0]
        elif groups is not None:
            raise ConfigurationError("groups is only used with cov_type='cluster'")
        fitted = self.model.fit_arrays(self.exog, self.endog)
        return LotteryNLSResults(self, fitted, cov_type, codes)


class LotteryNLSResults:
    """Results of :class:`LotteryNLS`.

    Attributes
    ----------
    model : LotteryNLS
        The estimator.
    fitted : RDUFitted
        The fitted rule (``predict`` at new lotteries).
    params : Series
        Estimates on the reported scale.
    bse, tvalues, pvalues : Series
        Standard errors, t statistics and two-sided p-values.
    ssr : float
        Sum of squared residuals.
    nobs, df_model, df_resid : int
        N, the number of estimated parameters k, and N − k.
    cov_type : str
        ``"classical"`` or ``"cluster"``.
    n_clusters : int or None
        Number of clusters G (cluster covariance only).
    resid, fittedvalues : ndarray
        Residuals ``y − f`` and fitted certainty equivalents.
    at_bound : list of str
        Parameters whose estimate sits on a bound (the standard errors assume interior).
    """

    def __init__(self, model: LotteryNLS, fitted, cov_type: str,
                 codes: np.ndarray | None) -> None:
        self.model, self.fitted, self.cov_type = model, fitted, cov_type
        rdu = model.model
        self._names = list(rdu.param_names)
        f, J = _rdu_nb.rdu_values(fitted.theta, model.exog, rdu.utility.shift,
                                  rdu.weighting.kind)
        free = [a for a, q in enumerate(("alpha", "gamma", "delta")) if q in rdu.free]
        self._J = J[:, free]
        self.fittedvalues = f
        self.resid = model.endog - f
        self.ssr = float(self.resid @ self.resid)
        self.nobs = model.nobs
        self.df_model = len(free)
        self.df_resid = self.nobs - self.df_model
        self.at_bound = list(fitted.info["at_bound"])
        self.n_clusters = None if codes is None else int(codes.max() + 1)
        self._codes = codes

    # -- covariance -----------------------------------------------------------------------
    @cached_property
    def _cov_internal(self) -> np.ndarray:
        J, e, N, k = self._J, self.resid, self.nobs, self.df_model
        if k == 0:
            return np.zeros((0, 0))
        bread = np.linalg.pinv(J.T @ J)
        if self.cov_type == "classical":
            s2 = self.ssr / self.df_resid if self.df_resid > 0 else np.nan
            return s2 * bread
        G = self.n_clusters
        scores = np.zeros((G, k))
        np.add.at(scores, self._codes, J * e[:, None])
        factor = G / (G - 1) * (N - 1) / (N - k) if G > 1 and N > k else np.nan
        return factor * bread @ (scores.T @ scores) @ bread

    def cov_params(self) -> pd.DataFrame:
        """Covariance matrix of the estimates on the reported scale (delta method)."""
        D = self.model.model._reported_jacobian(self.fitted.theta)
        V = D @ self._cov_internal @ D.T
        return pd.DataFrame(V, index=self._names, columns=self._names)

    @cached_property
    def params(self) -> pd.Series:
        """Estimates on the reported scale."""
        return pd.Series(self.fitted.params, name="params").reindex(self._names)

    @cached_property
    def bse(self) -> pd.Series:
        """Standard errors."""
        return pd.Series(np.sqrt(np.diag(self.cov_params().to_numpy())), index=self._names,
                         name="std_err")

    @cached_property
    def tvalues(self) -> pd.Series:
        """t statistics for the hypothesis that a parameter is 0."""
        return (self.params / self.bse).rename("tstat")

    @property
    def df_inference(self) -> int:
        """Degrees of freedom of the t distribution: N − k, or G − 1 with clusters."""
        return self.n_clusters - 1 if self.cov_type == "cluster" else self.df_resid

    @cached_property
    def pvalues(self) -> pd.Series:
        """Two-sided p-values (Student-t with :attr:`df_inference` degrees of freedom)."""
        return pd.Series(2 * scipy.stats.t.sf(np.abs(self.tvalues), self.df_inference),
                         index=self._names, name="pvalue")

    def conf_int(self, alpha: float = 0.05) -> pd.DataFrame:
        """Two-sided ``1 − alpha`` confidence intervals (columns ``lower``, ``upper``).

        Parameters
        ----------
        alpha : float
            One minus the coverage.

        Examples
        --------
        >>> import numpy as np
        >>> from restrictiveness.lottery.models import CPT
        >>> X = np.array([[1.0, 0.0, 0.5], [0.6, 0.2, 0.3], [0.9, 0.1, 0.8], [0.5, 0.0, 0.1]])
        >>> res = LotteryNLS([0.4, 0.3, 0.6, 0.1], X, CPT(free=("alpha",))).fit()
        >>> list(res.conf_int().columns)
        ['lower', 'upper']
        """
        if not 0 < alpha < 1:
            raise ConfigurationError("alpha must lie in (0, 1)")
        q = scipy.stats.t.ppf(1 - alpha / 2, self.df_inference)
        return pd.DataFrame({"lower": self.params - q * self.bse,
                             "upper": self.params + q * self.bse})

    @property
    def rsquared(self) -> float:
        """1 − SSR / total sum of squares about the mean."""
        y = self.model.endog
        tss = float(((y - y.mean()) ** 2).sum())
        return 1.0 - self.ssr / tss if tss > 0 else np.nan

    # -- presentation -----------------------------------------------------------------------
    def summary(self, alpha: float = 0.05) -> Summary:
        """statsmodels ``Summary`` (``as_text()``, ``as_latex()``, ``as_html()``).

        Examples
        --------
        >>> import numpy as np
        >>> from restrictiveness.lottery.models import CPT
        >>> X = np.array([[1.0, 0.0, 0.5], [0.6, 0.2, 0.3], [0.9, 0.1, 0.8], [0.5, 0.0, 0.1]])
        >>> res = LotteryNLS([0.4, 0.3, 0.6, 0.1], X, CPT(free=("alpha",))).fit()
        >>> "CPT(alpha)" in res.summary().as_text()
        True
        """
        rdu, names = self.model.model, self.model.names
        cov = "Classical" if self.cov_type == "classical" else "Clustered"
        left = [("Model:", rdu.label), ("Dep. Variable:", names[0]), ("Method:", "Least Squares"),
                ("Lotteries:", ", ".join(names[1:])), ("Cov. Type:", cov)]
        right = [("No. Observations:", str(self.nobs)), ("Df Model:", str(self.df_model)),
                 ("Df Residuals:", str(self.df_resid)), ("SSR:", f"{self.ssr:#.5g}"),
                 ("R-squared:", f"{self.rsquared:#.4f}")]
        if self.n_clusters is not None:
            right.append(("No. Clusters:", str(self.n_clusters)))
        while len(left) < len(right):
            left.append(("", ""))
        fmt = copy.deepcopy(fmt_2cols)
        fmt["data_fmts"][1] = "%18s"
        top = SimpleTable([[v] for _, v in left], stubs=[s for s, _ in left], txt_fmt=fmt,
                          title=f"{rdu.label} Estimation Results")
        top.extend_right(SimpleTable([[v] for _, v in right], stubs=[s for s, _ in right],
                                     txt_fmt=copy.deepcopy(fmt_2cols)))
        smry = Summary()
        smry.tables.append(top)
        ci = self.conf_int(alpha)
        rows = [[f"{self.params[q]:0.4f}", f"{self.bse[q]:0.4f}", f"{self.tvalues[q]:0.3f}",
                 f"{self.pvalues[q]:0.4f}", f"{ci.loc[q, 'lower']:0.4f}",
                 f"{ci.loc[q, 'upper']:0.4f}"] for q in self._names]
        lo, hi = f"[{alpha / 2:g}", f"{1 - alpha / 2:g}]"
        smry.tables.append(SimpleTable(rows or [[""] * 6],
                                       headers=["coef", "std err", "t", "P>|t|", lo, hi],
                                       stubs=self._names or [""], txt_fmt=fmt_params,
                                       title="Parameter Estimates"))
        notes = ["[1] Fixed at 1: " + (", ".join(q for q in ("alpha", "gamma", "delta")
                                                  if q not in rdu.free
                                                  and q in rdu.utility.parameters
                                                  + rdu.weighting.parameters) or "none") + "."]
        notes.append(f"[2] Standard errors: {cov.lower()} NLS covariance at the estimate "
                     "(delta method for delta/eta from log delta).")
        if self.at_bound:
            notes.append(f"[3] On a bound: {', '.join(self.at_bound)}; the standard errors "
                         "assume an interior optimum and are not valid for it.")
        smry.add_extra_txt(notes)
        return smry

    def __repr__(self) -> str:
        return self.summary().as_text()

    def _repr_html_(self) -> str:
        return self.summary().as_html()
