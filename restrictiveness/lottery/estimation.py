"""Nonlinear least squares of RDU-family models on real lottery data, statsmodels-style.

``CPT.from_formula("ce ~ z_hi + z_lo + p", data, free=(...)).fit(cov_type=...)`` builds a
:class:`LotteryNLS` and returns :class:`LotteryNLSResults` with ``params``, ``bse``,
``tvalues``, ``pvalues``, ``conf_int()``, ``ssr``, ``nobs`` and a statsmodels ``summary()``.

Standard errors are those of :mod:`restrictiveness.procedures.estimation` (nonrobust, HC1 or
clustered, Student-t inference), computed with ``J`` the Jacobian of the fitted certainty
equivalents with respect to the *internal* free parameters (α, γ, log δ) and carried to the
reported scale (δ, or η for disappointment aversion) by the delta method,
``V = D V_int Dᵀ`` with ``D = ∂(reported)/∂(internal)``. ``cov_type="classical"`` is accepted as
another name for ``"nonrobust"``.
"""

from __future__ import annotations

from collections.abc import Sequence
from functools import cached_property
from typing import Literal

import numpy as np
import pandas as pd

from ..procedures.estimation import LeastSquaresResults, cluster_codes
from ..shared.checks import describe_rows, numeric_columns
from ..shared.exceptions import ConfigurationError, DataError, FormulaError
from ..shared.formula import parse_formula
from . import _rdu_nb
from .lotteries import lottery_columns, lottery_matrix

__all__ = ["LotteryNLS", "LotteryNLSResults"]


class LotteryNLS:
    """Nonlinear least-squares estimator of an RDU-family model of certainty equivalents.

    Parameters
    ----------
    endog : array_like
        ``(N,)`` certainty equivalents.
    exog : array_like or DataFrame
        ``(N, 3)`` lotteries ``(z_hi, z_lo, p)``, or a DataFrame with the columns ``names``
        gives for them.
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
        names = tuple(names)
        if len(names) != 4:
            raise ConfigurationError(f"names must be the response and the three lottery "
                                     f"covariates, got {names!r}")
        # a DataFrame (from_formula's) is read by the names, and errors name its rows' labels
        self.exog = lottery_matrix(exog, names=names[1:], shift=model.utility.shift)
        self.endog = np.ascontiguousarray(endog, dtype=float)
        if self.endog.shape != (self.exog.shape[0],):
            raise DataError(f"endog must have shape ({self.exog.shape[0]},), "
                            f"got {self.endog.shape}")
        if not np.isfinite(self.endog).all():
            raise DataError("endog contains NaN or infinite values")
        self.data, self.formula, self.names = data, formula, names

    @classmethod
    def from_formula(cls, formula: str, data: pd.DataFrame, model) -> LotteryNLS:
        """Estimator from a formula ``"ce ~ z_hi + z_lo + p"`` (covariates in that role order).

        Parameters
        ----------
        formula : str
            Response, then the high outcome, the low outcome and the probability of the high
            one, in that order (by position: ``"ce ~ z_lo + z_hi + p"`` is refused).
        data : DataFrame
            One row per observation, with the formula's columns.
        model : RDU
            The model to estimate, e.g. ``CPT(free=("alpha", "delta"))``.

        Returns
        -------
        LotteryNLS
            The estimator; ``fit()`` estimates.

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
        lottery_columns(formula)
        if not isinstance(data, pd.DataFrame):
            raise FormulaError("data must be a pandas DataFrame")
        missing = [c for c in (f.response,) + f.covariates if c not in data.columns]
        if missing:
            raise FormulaError(f"formula {formula!r} names column(s) {missing} that the data "
                               f"do not have; available columns: {list(data.columns)}")
        cols = [f.response, *f.covariates]
        # text was parsed as numbers, complex cut to its real part, a repeated column misread
        numeric_columns(data, cols, f"formula {formula!r}")
        missing = data[cols].isna()
        if missing.any().any():
            which = [c for c in cols if missing[c].any()]
            rows = describe_rows(missing.any(axis=1).to_numpy(), data.index)
            raise DataError(f"formula {formula!r}: the data contain missing values (NaN) in "
                            f"column(s) {which} in {rows}; drop or impute them first")
        return cls(data[f.response].to_numpy(float), data[list(f.covariates)], model, data=data,
                   formula=formula, names=cols)

    @property
    def nobs(self) -> int:
        """Number of observations."""
        return int(self.endog.shape[0])

    def fit(self, cov_type: Literal["nonrobust", "HC1", "cluster", "classical"] = "nonrobust",
            groups: str | np.ndarray | Sequence | None = None) -> LotteryNLSResults:
        """Estimate by least squares and compute standard errors.

        Parameters
        ----------
        cov_type : {"nonrobust", "HC1", "cluster"}
            Homoskedastic NLS covariance (also called ``"classical"``), heteroskedasticity-robust,
            or cluster-robust by ``groups``.
        groups : str or array_like, optional
            Cluster identifiers (a column of the formula's data, or an array of length N);
            required for ``cov_type="cluster"``. With a formula's data, a
            :class:`pandas.Series` is aligned with the data's rows by index label, not position.

        Returns
        -------
        LotteryNLSResults
            Estimates, standard errors and the statsmodels-style summary.

        Raises
        ------
        DataError
            No more observations than free parameters (no standard errors can be computed).

        Examples
        --------
        >>> import pandas as pd
        >>> from restrictiveness.lottery.models import CPT
        >>> df = pd.DataFrame({"ce": [0.45, 0.3, 0.7, 0.12, 0.5], "z_hi": [1.0, 0.6, 0.9, 0.5, 0.8],
        ...                    "z_lo": [0.0, 0.2, 0.1, 0.0, 0.3], "p": [0.5, 0.3, 0.8, 0.1, 0.6]})
        >>> res = LotteryNLS.from_formula("ce ~ z_hi + z_lo + p", df, CPT(free=("alpha",))).fit()
        >>> res.params.index.tolist(), res.df_resid
        (['alpha'], 4)
        """
        cov_type, codes = cluster_codes(cov_type, groups, self.nobs, self.data,
                                        aliases={"classical": "nonrobust"})
        k = len(self.model.free)
        if self.nobs <= k:  # as NLS: every standard error was NaN, with no word of why
            raise DataError(f"estimation needs more observations ({self.nobs}) than parameters "
                            f"({k}) to compute standard errors")
        fitted = self.model.fit_arrays(self.exog, self.endog,
                                       rows=None if self.data is None else self.data.index)
        # the rule reads a new frame by the columns estimated on (the model's own formula, or
        # z_hi, z_lo, p, asked "ce ~ hi + lo + prob"'s data for columns they never had)
        fitted.names = self.names[1:]
        return LotteryNLSResults(self, fitted, cov_type, codes)


class LotteryNLSResults(LeastSquaresResults):
    """Results of :class:`LotteryNLS` (inference as in
    :class:`~restrictiveness.procedures.estimation.LeastSquaresResults`).

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
        ``"nonrobust"``, ``"HC1"`` or ``"cluster"``.
    n_clusters : int or None
        Number of clusters G (cluster covariance only).
    resid, fittedvalues : ndarray
        Residuals ``y − f`` and fitted certainty equivalents.
    at_bound : list of str
        Parameters whose estimate sits on a bound (the standard errors assume interior).

    Parameters
    ----------
    model : LotteryNLS
        The estimator and its data.
    fitted : RDUFitted
        The least-squares fit.
    cov_type : {"nonrobust", "HC1", "cluster"}
        Covariance of the estimates.
    codes : ndarray or None
        Cluster codes, one per observation (``"cluster"`` only).

    Examples
    --------
    >>> import pandas as pd
    >>> from restrictiveness.lottery.models import CPT
    >>> df = pd.DataFrame({"ce": [0.45, 0.3, 0.7, 0.12, 0.5], "z_hi": [1.0, 0.6, 0.9, 0.5, 0.8],
    ...                    "z_lo": [0.0, 0.2, 0.1, 0.0, 0.3], "p": [0.5, 0.3, 0.8, 0.1, 0.6]})
    >>> res = CPT.from_formula("ce ~ z_hi + z_lo + p", df, free=("alpha",)).fit(cov_type="HC1")
    >>> type(res).__name__, res.cov_type, res.df_inference
    ('LotteryNLSResults', 'HC1', 4)
    """

    def __init__(self, model: LotteryNLS, fitted, cov_type: str,
                 codes: np.ndarray | None) -> None:
        self.model, self.fitted = model, fitted
        rdu = model.model
        f, J = _rdu_nb.rdu_values(fitted.theta, model.exog, rdu.utility.shift,
                                  rdu.weighting.kind)
        free = [a for a, q in enumerate(("alpha", "gamma", "delta")) if q in rdu.free]
        self._title = f"{rdu.label} Estimation Results"
        self._set_fit(J[:, free], model.endog, f, rdu.param_names, cov_type, codes,
                      fitted.info["at_bound"])

    def _reported_jacobian(self) -> np.ndarray:
        return self.model.model._reported_jacobian(self.fitted.theta)

    @cached_property
    def params(self) -> pd.Series:
        """Estimates on the reported scale."""
        return pd.Series(self.fitted.params, name="params").reindex(self._names)

    def predict(self, exog=None) -> np.ndarray:
        """Certainty equivalents at lotteries ``exog``; the fitted values when omitted.

        Parameters
        ----------
        exog : ndarray or DataFrame, optional
            Lotteries ``(N, 3)`` (high outcome, low outcome, probability) or a DataFrame with
            the formula's columns.

        Returns
        -------
        ndarray
            One certainty equivalent per lottery.

        Examples
        --------
        >>> import pandas as pd
        >>> from restrictiveness.lottery.models import CPT
        >>> df = pd.DataFrame({"ce": [0.45, 0.3, 0.7, 0.12, 0.5], "z_hi": [1.0, 0.6, 0.9, 0.5, 0.8],
        ...                    "z_lo": [0.0, 0.2, 0.1, 0.0, 0.3], "p": [0.5, 0.3, 0.8, 0.1, 0.6]})
        >>> res = CPT.from_formula("ce ~ z_hi + z_lo + p", df, free=("alpha",)).fit()
        >>> bool((res.predict(df) == res.predict()).all()), res.predict([[1.0, 1.0, 0.5]]).round(6)
        (True, array([1.]))
        """
        if exog is None:
            return self.fittedvalues
        # the utility's shift admits the prizes z >= -shift the estimation was given
        shift = self.model.model.utility.shift
        if isinstance(exog, pd.DataFrame):  # the formula's columns, checked like the data's
            exog = lottery_matrix(exog, names=self.model.names[1:], shift=shift)
        return self.fitted.predict(lottery_matrix(exog, shift=shift))

    def _summary_model(self) -> list[tuple[str, str]]:
        names = self.model.names
        return [("Model:", self.model.model.label), ("Dep. Variable:", names[0]),
                ("Method:", "Least Squares"), ("Lotteries:", ", ".join(names[1:]))]

    def _summary_notes(self) -> list[str]:
        rdu = self.model.model
        fixed = [q for q in ("alpha", "gamma", "delta") if q not in rdu.free
                 and q in rdu.utility.parameters + rdu.weighting.parameters]
        notes = [f"Fixed at 1: {', '.join(fixed) or 'none'}."]
        if "delta" in rdu.free:
            notes.append(f"{self._names[-1]} is estimated through log delta (delta method for "
                         "its standard error).")
        return notes
