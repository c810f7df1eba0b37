"""statsmodels-style results of least-squares estimators on real data.

One base class, :class:`LeastSquaresResults`, holds what every (nonlinear) least-squares fit
reports — ``params``, ``bse``, ``tvalues``, ``pvalues``, ``conf_int()``, ``cov_params()``,
``ssr``, ``rsquared`` and a statsmodels ``summary()`` — computed from the Jacobian ``J`` of the
fitted values with respect to the estimated parameters and the residuals ``e`` at the estimate
(N observations, k parameters):

* ``"nonrobust"``: ``s² (JᵀJ)⁻¹`` with ``s² = SSR / (N − k)``;
* ``"HC1"``: ``N/(N − k) · (JᵀJ)⁻¹ (Σᵢ eᵢ² JᵢJᵢᵀ) (JᵀJ)⁻¹`` (White, with the usual
  small-sample factor);
* ``"cluster"``: ``G/(G − 1) · (N − 1)/(N − k) · (JᵀJ)⁻¹ (Σ_g J_gᵀe_g e_gᵀJ_g) (JᵀJ)⁻¹``
  (statsmodels' and Stata's factor).

These are the OLS formulas applied to the linearised model, so they equal statsmodels' OLS of
``e`` on ``J`` at an interior optimum; ``(JᵀJ)⁻¹`` is computed from the singular value
decomposition of ``J`` itself (as statsmodels' pseudo-inverse of the design), not by inverting
``JᵀJ``, whose condition number is J's squared. Parameters reported on another scale than the one
estimated (δ from log δ) are carried over by the delta method, ``V = D V_est Dᵀ``.

Inference uses Student-t: ``N − k`` degrees of freedom for ``nonrobust`` and ``HC1``, ``G − 1``
for ``cluster`` (as Stata's ``nl``/``regress``; statsmodels uses the normal for robust
covariances unless ``use_t=True``). All formulas assume an interior optimum: parameters on a
bound are listed in ``at_bound`` and flagged in the summary.

Subclasses (:class:`restrictiveness.procedures.nls.NLSResults`,
:class:`restrictiveness.lottery.estimation.LotteryNLSResults`) set the fit's arrays with
:meth:`LeastSquaresResults._set_fit` and describe themselves for the summary.
"""

from __future__ import annotations

import copy
import warnings
from collections.abc import Sequence
from functools import cached_property
from typing import Literal, cast

import numpy as np
import pandas as pd
import scipy.stats
from statsmodels.iolib.summary import Summary, fmt_2cols, fmt_params
from statsmodels.iolib.table import SimpleTable

from ..shared.checks import aligned_by_label, describe_rows, probability
from ..shared.exceptions import ConfigurationError, DataError, FormulaError

__all__ = ["CovType", "COV_TYPES", "LeastSquaresResults", "cluster_codes"]

CovType = Literal["nonrobust", "HC1", "cluster"]
#: Covariance types and their names in summaries.
COV_TYPES = {"nonrobust": "Nonrobust", "HC1": "HC1", "cluster": "Clustered"}


def cluster_codes(cov_type: str, groups, nobs: int, data: pd.DataFrame | None = None,
                  aliases: dict[str, str] | None = None) -> tuple[CovType, np.ndarray | None]:
    """Validate ``cov_type`` and ``groups``; return the canonical type and cluster codes.

    Parameters
    ----------
    cov_type : str
        One of :data:`COV_TYPES` (or an alias in ``aliases``).
    groups : str or array_like or None
        Cluster identifiers: a column of ``data`` or one entry per observation; required for
        ``"cluster"`` and refused otherwise. A :class:`pandas.Series` is aligned with the rows
        of ``data`` by index label (extra labels are ignored; a missing label, or a non-unique
        index that differs from the data's, is a :class:`DataError`), as pandas aligns; an array
        or list is taken in the data's row order.
    nobs : int
        Number of observations.
    data : DataFrame, optional
        Where a column name in ``groups`` is looked up.
    aliases : dict, optional
        Other accepted names, e.g. ``{"classical": "nonrobust"}``.

    Returns
    -------
    cov_type : str
    codes : ndarray of int or None
        ``0..G−1`` per observation for ``"cluster"``.

    Examples
    --------
    >>> cluster_codes("cluster", ["a", "b", "a"], 3)[1].tolist()
    [0, 1, 0]
    """
    name = (aliases or {}).get(cov_type, cov_type)
    if name not in COV_TYPES:
        names = [*COV_TYPES, *(aliases or {})]
        raise ConfigurationError(f"cov_type must be one of {names}, got {cov_type!r}")
    canonical = cast(CovType, name)  # checked against COV_TYPES just above
    if canonical != "cluster":
        if groups is not None:
            raise ConfigurationError("groups is only used with cov_type='cluster'")
        return canonical, None
    if groups is None:
        raise ConfigurationError("groups is required when cov_type='cluster' (a column name "
                                 "or one cluster identifier per observation)")
    if isinstance(groups, str):
        if data is None or groups not in data.columns:
            raise FormulaError(f"groups names column {groups!r} that the data do not have")
        groups = data[groups].to_numpy()
    elif isinstance(groups, pd.Series) and data is not None:
        groups = aligned_by_label(groups, data.index, "groups")
    groups = np.asarray(groups)
    if groups.shape != (nobs,):
        raise DataError(f"groups must have one entry per observation ({nobs}), "
                        f"got shape {groups.shape}")
    missing = pd.isna(groups)
    if missing.any():  # named by the data's labels, as df.loc finds them
        rows = data.index if data is not None and len(data.index) == nobs else None
        raise DataError(f"groups contains missing values in {describe_rows(missing, rows)}")
    codes = pd.factorize(groups)[0]
    if codes.max(initial=0) < 1:  # no rows at all was numpy's ValueError
        raise DataError("cov_type='cluster' needs at least two clusters")
    return canonical, codes


class LeastSquaresResults:
    """Base of least-squares results: covariance, inference and the statsmodels summary.

    Attributes
    ----------
    params : Series
        Estimates (reported scale).
    bse, tvalues, pvalues : Series
        Standard errors, t statistics, two-sided p-values.
    ssr : float
        Sum of squared residuals.
    nobs, df_model, df_resid : int
        N, k and N − k.
    df_inference : int
        Degrees of freedom of the t distribution: N − k, or G − 1 with clusters.
    cov_type : str
        ``"nonrobust"``, ``"HC1"`` or ``"cluster"``.
    n_clusters : int or None
        G (cluster covariance only).
    resid, fittedvalues : ndarray
        ``y − f`` and ``f`` at the estimate.
    at_bound : list of str
        Parameters whose estimate sits on a bound (the standard errors assume an interior one).
    """

    #: Summary title and the name of the estimated model (set by subclasses).
    _title = "Least Squares Estimation Results"
    #: Estimates on the reported scale (set by subclasses).
    params: pd.Series

    def _set_fit(self, jacobian: np.ndarray, endog: np.ndarray, fittedvalues: np.ndarray,
                 names: Sequence[str], cov_type: str, codes: np.ndarray | None,
                 at_bound: Sequence[str]) -> None:
        """Store the fit: ``jacobian`` is ``∂f/∂θ`` (N, k) on the estimated scale."""
        self._J = np.asarray(jacobian, dtype=float)
        self._names = list(names)
        self.endog = np.asarray(endog, dtype=float)
        self.fittedvalues = np.asarray(fittedvalues, dtype=float)
        self.resid = self.endog - self.fittedvalues
        self.ssr = float(self.resid @ self.resid)
        self.nobs = int(self.endog.shape[0])
        self.df_model = len(self._names)
        self.df_resid = self.nobs - self.df_model
        self.cov_type = cov_type
        self._codes = codes
        self.n_clusters = None if codes is None else int(codes.max() + 1)
        self.at_bound = list(at_bound)

    def _reported_jacobian(self) -> np.ndarray:
        """``∂(reported)/∂(estimated)``; identity unless a subclass reparameterises."""
        return np.eye(self.df_model)

    # -- covariance -----------------------------------------------------------------------
    @cached_property
    def _unidentified(self) -> np.ndarray:
        """Per parameter: whether it loads on the null space of the Jacobian (warned once).

        The pseudo-inverse of JᵀJ reports finite, even zero, standard errors for parameters
        the data cannot tell apart (a and b in ``a * b * x``, or any two with a constant
        covariate); :meth:`cov_params` makes theirs NaN.
        """
        if self.df_model == 0:
            return np.zeros(0, dtype=bool)
        _, Vt, kept = self._spectrum
        lost = (np.abs(Vt[~kept]) > 1e-8).any(axis=0)
        infinite = ~np.isfinite(self._J).all(axis=0)
        if infinite.any():
            names = [q for q, bad in zip(self._names, infinite, strict=True) if bad]
            warnings.warn(f"the Jacobian is not finite at the estimate for {names} (a derivative "
                          "that is infinite there, e.g. sqrt(a) at a = 0): their standard errors "
                          "are NaN, and the others are computed with them held fixed",
                          RuntimeWarning, stacklevel=4)
            lost &= ~infinite
        if lost.any():
            names = [q for q, bad in zip(self._names, lost, strict=True) if bad]
            warnings.warn(f"parameters {names} are not identified at the estimate (the Jacobian "
                          "is rank-deficient in their direction): their standard errors are NaN",
                          RuntimeWarning, stacklevel=4)
        return lost | infinite

    @cached_property
    def _spectrum(self) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
        """Singular values ``S`` (k, zeros past N) and right singular vectors ``Vt`` (k × k) of
        the Jacobian, and which directions its rank keeps (``S`` above matrix_rank's tolerance).

        One rank decision serves :attr:`_unidentified` and the covariance: the covariance was
        ``pinv(JᵀJ)``, which squares J's condition number (standard errors 5.9% low at
        cond(J) = 3e7) and whose cutoff (1e-15 on the squared singular values, 3e-8 on J's)
        dropped directions the identification check kept, so parameters the data barely inform
        got small finite standard errors (0.12 where statsmodels' OLS on the same Jacobian
        gives 4e10).
        """
        J = self._J_finite
        _, S, Vt = np.linalg.svd(J, full_matrices=True)
        S = np.concatenate([S, np.zeros(Vt.shape[0] - S.shape[0])])
        tol = S.max(initial=0.0) * max(J.shape) * np.finfo(float).eps  # matrix_rank's
        return S, Vt, S > tol

    @property
    def _J_finite(self) -> np.ndarray:
        """The Jacobian with its non-finite columns zeroed: those parameters are held fixed
        (an infinite entry gave a standard error of 0, or NaN for every parameter)."""
        return np.where(np.isfinite(self._J).all(axis=0), self._J, 0.0)

    @cached_property
    def _cov_estimated(self) -> np.ndarray:
        J, e, N, k = self._J_finite, self.resid, self.nobs, self.df_model
        if k == 0:
            return np.zeros((0, 0))
        S, Vt, kept = self._spectrum
        bread = (Vt[kept].T / S[kept] ** 2) @ Vt[kept]  # (JᵀJ)⁺ from J's SVD, not JᵀJ's
        if self.cov_type == "nonrobust":
            s2 = self.ssr / self.df_resid if self.df_resid > 0 else np.nan
            return s2 * bread
        if self.cov_type == "HC1":
            scores = J * e[:, None]
            factor = N / (N - k) if N > k else np.nan
            return factor * bread @ (scores.T @ scores) @ bread
        G, codes = self.n_clusters, self._codes
        assert G is not None and codes is not None  # cov_type "cluster" set both in _set_fit
        scores = np.zeros((G, k))
        np.add.at(scores, codes, J * e[:, None])
        factor = G / (G - 1) * (N - 1) / (N - k) if N > k else np.nan
        return factor * bread @ (scores.T @ scores) @ bread

    def cov_params(self) -> pd.DataFrame:
        """Covariance matrix of the estimates on the reported scale (delta method).

        Returns
        -------
        pandas.DataFrame
            k × k, indexed by parameter name on both axes; NaN rows and columns for
            parameters that are not identified at the estimate.

        Examples
        --------
        >>> import numpy as np, pandas as pd, restrictiveness as rx
        >>> x = np.linspace(0, 3, 40)
        >>> df = pd.DataFrame({"x": x, "y": 2 * np.exp(-0.7 * x) + 0.01 * np.cos(9 * x)})
        >>> res = rx.NLS.from_formula("y ~ a * exp(-b * x)", df,
        ...                           bounds={"a": (0, 10), "b": (0, 5)}).fit()
        >>> cov = res.cov_params()
        >>> cov.index.tolist(), bool(np.allclose(np.sqrt(np.diag(cov)), res.bse))
        (['a', 'b'], True)
        """
        D = self._reported_jacobian()
        ok = ~self._unidentified
        return pd.DataFrame(D @ self._cov_estimated @ D.T, index=self._names,
                            columns=self._names).where(np.outer(ok, ok))

    @cached_property
    def bse(self) -> pd.Series:
        """Standard errors."""
        # A pseudo-inverse of a near-singular JᵀJ can round a zero variance slightly negative.
        var = np.clip(np.diag(self.cov_params().to_numpy()), 0.0, None)
        return pd.Series(np.sqrt(var), index=self._names,
                         name="std_err")

    @cached_property
    def tvalues(self) -> pd.Series:
        """Student-t statistics for the hypothesis that a parameter is 0."""
        return (self.params / self.bse).rename("tstat")

    @property
    def df_inference(self) -> int:
        """Degrees of freedom of the t distribution: N − k, or G − 1 with clusters."""
        if self.cov_type == "cluster" and self.n_clusters is not None:
            return self.n_clusters - 1
        return self.df_resid

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

        Returns
        -------
        pandas.DataFrame
            One row per parameter; columns ``lower`` and ``upper``, the estimate ∓ the
            ``1 − alpha / 2`` quantile of t with :attr:`df_inference` degrees of freedom
            times :attr:`bse`.

        Examples
        --------
        >>> import numpy as np, pandas as pd, restrictiveness as rx
        >>> x = np.linspace(0, 3, 40)
        >>> df = pd.DataFrame({"x": x, "y": 2 * np.exp(-0.7 * x) + 0.01 * np.cos(9 * x)})
        >>> res = rx.NLS.from_formula("y ~ a * exp(-b * x)", df,
        ...                           bounds={"a": (0, 10), "b": (0, 5)}).fit()
        >>> ci = res.conf_int(0.1)
        >>> ci.columns.tolist(), bool((ci["lower"] < res.params).all())
        (['lower', 'upper'], True)
        """
        alpha = probability(alpha, "alpha")
        q = scipy.stats.t.ppf(1 - alpha / 2, self.df_inference)
        return pd.DataFrame({"lower": self.params - q * self.bse,
                             "upper": self.params + q * self.bse})

    @property
    def rsquared(self) -> float:
        """1 − SSR / total sum of squares about the mean."""
        y = self.endog
        tss = float(((y - y.mean()) ** 2).sum())
        return 1.0 - self.ssr / tss if tss > 0 else np.nan

    # -- presentation -----------------------------------------------------------------------
    def _summary_model(self) -> list[tuple[str, str]]:
        """Left-hand header rows before ``Cov. Type`` (model, dependent variable, ...)."""
        raise NotImplementedError

    def _summary_notes(self) -> list[str]:
        """Notes under the parameter table (without numbers)."""
        return []

    def summary(self, alpha: float = 0.05) -> Summary:
        """Summary table of the estimates, as statsmodels prints one.

        Parameters
        ----------
        alpha : float
            One minus the coverage of the confidence intervals in the table.

        Returns
        -------
        statsmodels.iolib.summary.Summary
            The header, the parameter table and numbered notes (inference, bounds);
            ``as_text()``, ``as_latex()`` and ``as_html()`` export it.

        Examples
        --------
        >>> import numpy as np, pandas as pd, restrictiveness as rx
        >>> x = np.linspace(0, 3, 40)
        >>> df = pd.DataFrame({"x": x, "y": 2 * np.exp(-0.7 * x) + 0.01 * np.cos(9 * x)})
        >>> res = rx.NLS.from_formula("y ~ a * exp(-b * x)", df,
        ...                           bounds={"a": (0, 10), "b": (0, 5)}).fit()
        >>> text = res.summary(alpha=0.1).as_text()
        >>> "[0.05" in text, "t with N - k = 38" in text
        (True, True)
        """
        left = [*self._summary_model(), ("Cov. Type:", COV_TYPES[self.cov_type])]
        right = [("No. Observations:", str(self.nobs)), ("Df Model:", str(self.df_model)),
                 ("Df Residuals:", str(self.df_resid)), ("SSR:", f"{self.ssr:#.5g}"),
                 ("R-squared:", f"{self.rsquared:#.4f}")]
        if self.n_clusters is not None:
            right.append(("No. Clusters:", str(self.n_clusters)))
        while len(left) < len(right):
            left.append(("", ""))
        while len(right) < len(left):
            right.append(("", ""))
        fmt = copy.deepcopy(fmt_2cols)
        fmt["data_fmts"][1] = "%18s"
        top = SimpleTable([[v] for _, v in left], stubs=[s for s, _ in left], txt_fmt=fmt,
                          title=self._title)
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
        notes = self._summary_notes()
        df = (f"t with G - 1 = {self.df_inference}" if self.cov_type == "cluster"
              else f"t with N - k = {self.df_inference}")
        notes.append(f"Standard errors: {COV_TYPES[self.cov_type].lower()} covariance of the "
                     f"linearised model at the estimate; inference: {df} degrees of freedom.")
        if self.at_bound:
            notes.append(f"On a bound: {', '.join(self.at_bound)}; the standard errors assume "
                         "an interior optimum and are not valid for it.")
        smry.add_extra_txt([f"[{k + 1}] {t}" for k, t in enumerate(notes)])
        return smry

    def __repr__(self) -> str:
        return self.summary().as_text()

    def _repr_html_(self) -> str:
        return self.summary().as_html()
