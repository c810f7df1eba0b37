"""Generic procedures on two-dimensional samples.

:class:`Constant` (least squares over constants, the usual baseline), :class:`OLS` (linear least
squares from a formula) and :class:`GPRegression` (noise-free Gaussian-process posterior mean).
The protocol they implement is :mod:`restrictiveness.engine.protocol`.

Every formula is honoured: designs are patsy's (:func:`training_design`), with transforms,
splines, categorical terms and interactions applied again, with their training state, at
prediction; a formula a procedure cannot honour (covariates for a constant, none for a learner)
is refused. Procedures also fit on DataFrames, where the formula names the response.
"""

from __future__ import annotations

import importlib.util
import math
import numbers
from collections.abc import Sequence

import numpy as np
import pandas as pd
import scipy.linalg

from ..eligible.constraints import Between, Constraint
from ..eligible.kernels import Kernel, Matern32
from ..engine.protocol import Fitted, FunctionRule, Procedure
from ..shared.checks import keywords_of, known_keywords, numeric_column
from ..shared.exceptions import ConfigurationError, ConstraintError, DataError, FormulaError
from ..shared.formula import FORMULA_ENV, check_study_columns, parse_formula, repeated_columns
from ..shared.sample import Sample, as_columns, merge_repeats
from .estimation import cluster_codes

__all__ = ["Constant", "OLS", "GPRegression", "training_design"]


def _as_table(X, columns: Sequence[str] | None) -> tuple[np.ndarray, tuple[str, ...]]:
    """Covariates as an array with column names (from a DataFrame, or an array with the
    training sample's columns)."""
    if isinstance(X, pd.DataFrame):
        # its numeric columns: another column of text crashed the conversion
        numbers = X.select_dtypes(include=["number", "bool"])
        return numbers.to_numpy(dtype=float), tuple(numbers.columns)
    if columns is None:
        raise DataError("this rule was fitted on a DataFrame: predict on a DataFrame too")
    A = np.asarray(X, dtype=float)
    if A.ndim != 2 or A.shape[1] != len(columns):  # other shapes gave numbers or numpy errors
        raise DataError(f"predict needs covariates of shape (m, {len(columns)}), the columns "
                        f"{list(columns)}; got shape {A.shape}")
    return A, tuple(columns)


def _frame_numbers(X: pd.DataFrame, names: Sequence[str]) -> np.ndarray:
    """The columns ``names`` of a DataFrame as a float matrix (named errors otherwise)."""
    missing = [c for c in names if c not in X.columns]
    if missing:
        raise DataError(f"predict: the DataFrame lacks the column(s) {missing}; it has "
                        f"{list(X.columns)}")
    for c in names:
        numeric_column(X[c], "predict")
    return X[list(names)].to_numpy(dtype=float)


def training_design(who: str, formula: str | None, data: Sample | pd.DataFrame,
                    intercept: bool = True):
    """A procedure's design on training data and a function that builds it on new covariates.

    The design is the formula's patsy design (transforms, splines, categorical terms and
    interactions, with the training data's state kept for new data), or the raw covariates when
    there is no formula. Learners other than linear models take it without the intercept
    (``intercept=False``). A formula of bare column names selects those columns directly (the
    same matrix patsy builds, without its cost in a study's thousands of fits).

    Parameters
    ----------
    who : str
        The procedure, for error messages.
    formula : str or None
    data : Sample or DataFrame
        A study's training sample, or data (then the formula is required: it names the
        response).
    intercept : bool
        Keep the formula's intercept column.

    Returns
    -------
    design : ndarray
    y : ndarray
        The training labels.
    build : callable
        ``build(X)`` → the design at covariates ``X``: an array with the training sample's
        columns, or a DataFrame.
    columns : tuple of str or None
        The training sample's covariate names (None when fitted on a DataFrame).
    """
    if isinstance(data, pd.DataFrame):
        if formula is None:
            raise FormulaError(f"{who}: fitting on a DataFrame needs a formula naming the "
                               "response, e.g. 'y ~ x1 + x2'")
        f = parse_formula(formula)
        y, columns, frame = f.response_values(data), None, data
    elif isinstance(data, Sample):
        y, columns = np.asarray(data.y, dtype=float), tuple(data.columns)
        if formula is None:
            def build_raw(X):
                return _as_table(X, columns)[0] if not isinstance(X, pd.DataFrame) \
                    else _frame_numbers(X, columns)
            return np.asarray(data.X, dtype=float), y, build_raw, columns
        f = parse_formula(formula)
        f.check_response(data.response)
        frame = data.columns_dict()
    else:
        raise DataError(f"{who}.fit takes a Sample or a pandas DataFrame, got "
                        f"{type(data).__name__}")
    if not intercept and not f.covariates:  # "y ~ 1" on a sample fitted a constant
        raise FormulaError(f"{who}: formula {formula!r} leaves no covariates in the design")
    if f.plain and not intercept and columns is not None:
        missing = [c for c in f.covariates if c not in columns]
        if missing:
            raise FormulaError(f"formula {formula!r} names column(s) {missing} that the sample "
                               f"does not have; available columns: {list(columns)}")
        idx = [columns.index(c) for c in f.covariates]

        def build_plain(X):
            return _frame_numbers(X, f.covariates) if isinstance(X, pd.DataFrame) \
                else _as_table(X, columns)[0][:, idx]
        return np.asarray(data.X, dtype=float)[:, idx], y, build_plain, columns
    # "y ~ 1" reads no column, and patsy counts the rows of a mapping by the columns it reads
    # ("I can't tell how many rows"): a DataFrame says how many
    if not f.covariates and not isinstance(frame, pd.DataFrame):
        frame = pd.DataFrame(frame)
    D, build_frame = f.design_builder(frame, intercept=intercept)
    if D.shape[1] == 0:
        raise FormulaError(f"{who}: formula {formula!r} leaves no covariates in the design")

    def build(X):
        if isinstance(X, pd.DataFrame):
            return build_frame(X)
        table = as_columns(X, _as_table(X, columns)[1])
        return build_frame(pd.DataFrame(table) if not f.covariates else table)
    return D, y, build, columns


class FormulaProcedure(Procedure):
    """Base of procedures whose covariates an optional patsy formula (``formula``) selects.

    Subclasses set ``formula`` in their constructor and ``covariates_required`` to False when
    a formula without covariates (``"y ~ 1"``) is meaningful, as for a linear model or a
    constant.
    """

    formula: str | None = None
    covariates_required: bool = True

    def validate(self, columns, response):
        """Check the formula against a study's columns before anything runs.

        Parameters
        ----------
        columns : sequence of str
            The study's covariate names.
        response : str
            The study's response name.

        Raises
        ------
        FormulaError
            The formula names a column or response the study does not have, or (when
            ``covariates_required``) has no covariates.

        Examples
        --------
        >>> OLS("y ~ x1 + np.log(x2)").validate(["x1", "x2"], "y")  # passes silently
        >>> OLS("y ~ x3").validate(["x1", "x2"], "y")  # doctest: +ELLIPSIS
        Traceback (most recent call last):
        ...
        restrictiveness.shared.exceptions.FormulaError: formula 'y ~ x3' names column(s) ['x3'] ...
        >>> GPRegression("y ~ 1").validate(["x1", "x2"], "y")  # doctest: +ELLIPSIS
        Traceback (most recent call last):
        ...
        restrictiveness.shared.exceptions.FormulaError: formula 'y ~ 1' has no covariates ...
        """
        check_study_columns(self.formula, columns, response,
                            covariates=self.covariates_required)


class Constant(FormulaProcedure):
    """Least squares over constant rules: predicts the mean training label.

    Parameters
    ----------
    formula : str, optional
        ``"y ~ 1"``: a constant has no covariates, so any other right-hand side is refused
        (it cannot be honoured). Needed to fit on a DataFrame (it names the response).

    Examples
    --------
    >>> import numpy as np
    >>> from restrictiveness import Sample
    >>> s = Sample(np.zeros((3, 1)), np.array([1.0, 2.0, 3.0]), ("x",))
    >>> Constant().fit(s, np.random.default_rng(0)).predict(np.zeros((2, 1)))
    array([2., 2.])
    """

    label = "constant"
    covariates_required = False

    def __init__(self, formula: str | None = None) -> None:
        if formula is not None and not parse_formula(formula).intercept_only:
            raise FormulaError(f"Constant predicts the mean label; its formula can only be "
                               f"'y ~ 1', got {formula!r}")
        self.formula = formula

    def fit(self, sample, rng=None):
        """Fit to a training sample, or to a DataFrame (with ``formula="y ~ 1"``).

        Parameters
        ----------
        sample : Sample or DataFrame
            A study's training sample; or data, whose response the formula names.
        rng : numpy.random.Generator, optional
            Unused: the fit is deterministic.

        Returns
        -------
        FunctionRule
            Predicts the mean training label everywhere; ``info["params"]`` records it.

        Examples
        --------
        >>> import pandas as pd
        >>> df = pd.DataFrame({"x": [0.0, 1.0, 2.0, 3.0], "y": [1.0, 3.0, 5.0, 7.0]})
        >>> rule = Constant("y ~ 1").fit(df)
        >>> rule.predict(df), rule.info
        (array([4., 4., 4., 4.]), {'params': [4.0]})
        """
        if isinstance(sample, pd.DataFrame):
            if self.formula is None:
                raise FormulaError("Constant: fitting on a DataFrame needs formula='y ~ 1' "
                                   "naming the response")
            y = parse_formula(self.formula).response_values(sample)
        elif isinstance(sample, Sample):
            if self.formula is not None:
                parse_formula(self.formula).check_response(sample.response)
            y = np.asarray(sample.y, dtype=float)
        else:  # an array was an AttributeError
            raise DataError(f"Constant.fit takes a Sample or a pandas DataFrame, got "
                            f"{type(sample).__name__}")
        c = y.mean(axis=0)
        return FunctionRule(lambda X: np.broadcast_to(c, (np.shape(X)[0],) + c.shape).copy(),
                            {"params": np.atleast_1d(c).tolist()})


class _LinearRule(Fitted):
    def __init__(self, beta, build):
        self.beta, self.build = beta, build
        self.info = {"params": beta.tolist()}

    def predict(self, X):
        return self.build(X) @ self.beta


class OLS(FormulaProcedure):
    """Ordinary least squares of the response on a formula's design matrix.

    The formula is a patsy formula: transforms (``np.log(x)``), splines (``bs(x, df=3)``),
    categorical terms (``C(g)``) and interactions, with their training state kept at prediction.
    On a DataFrame, ``fit`` is estimation: ``OLS(formula).fit(df)`` is
    ``OLS.from_formula(formula, df).fit()``, statsmodels' OLS results.

    Parameters
    ----------
    formula : str
        A patsy formula ``"y ~ x1 + x2"``; in studies the response must be the study's.

    Examples
    --------
    >>> import numpy as np
    >>> from restrictiveness import Sample
    >>> X = np.array([[0.0], [1.0], [2.0]])
    >>> s = Sample(X, 1 + 2 * X[:, 0], ("x",))
    >>> OLS("y ~ x").fit(s, np.random.default_rng(0)).predict(np.array([[3.0]]))
    array([7.])
    """

    label = "OLS"
    formula: str  # required here
    covariates_required = False

    def __init__(self, formula: str) -> None:
        self.formula = formula
        parse_formula(formula)

    def fit(self, sample, rng=None, **estimation):
        """Least squares on a training sample, or estimation on a DataFrame.

        Parameters
        ----------
        sample : Sample or DataFrame
            A study's training sample (gives a fitted rule); or data (gives
            :meth:`estimate`'s statsmodels results).
        rng : numpy.random.Generator, optional
            Unused: the fit is deterministic.
        **estimation
            ``cov_type`` and ``groups`` for estimation on a DataFrame (see :meth:`estimate`).

        Returns
        -------
        Fitted or statsmodels RegressionResults
            A fitted rule (``info["params"]`` the coefficients) for a sample; statsmodels'
            OLS results for a DataFrame.

        Examples
        --------
        >>> import numpy as np, pandas as pd
        >>> from restrictiveness import Sample
        >>> X = np.array([[0.0], [1.0], [2.0]])
        >>> rule = OLS("y ~ x").fit(Sample(X, 1 + 2 * X[:, 0], ("x",)))
        >>> np.round(rule.info["params"], 6).tolist()
        [1.0, 2.0]
        >>> df = pd.DataFrame({"x": [0.0, 1.0, 2.0, 3.0], "y": [1.0, 3.1, 4.9, 7.0]})
        >>> OLS("y ~ x").fit(df).params.round(2).tolist()
        [1.03, 1.98]
        """
        who = f"{type(self).__name__}.fit"
        if isinstance(sample, pd.DataFrame):
            known_keywords(estimation, keywords_of(self.estimate, skip=("data",)), who)
            return self.estimate(sample, **estimation)
        if estimation:  # cov_type='HC1' on a training sample was ignored without a word
            raise ConfigurationError(f"{who}: {sorted(estimation)} apply to estimation on a "
                                     "DataFrame, not to fits on a training sample")
        D, y, build, _ = training_design("OLS", self.formula, sample)
        beta, *_ = np.linalg.lstsq(D, y, rcond=None)
        return _LinearRule(beta, build)

    @classmethod
    def from_formula(cls, formula: str, data: pd.DataFrame):
        """Statsmodels' OLS model of ``formula`` on ``data`` (missing values refused).

        Parameters
        ----------
        formula : str
            A patsy formula naming the response, ``"y ~ x1 + C(g)"``.
        data : DataFrame
            Holds the response and the formula's columns, without missing values.

        Returns
        -------
        statsmodels.regression.linear_model.OLS
            The unfitted model; its ``fit()`` gives statsmodels' results.

        Raises
        ------
        FormulaError
            The formula has no response or names a column the data lack.
        DataError
            Missing values in the formula's columns.

        Examples
        --------
        >>> import pandas as pd
        >>> df = pd.DataFrame({"x": [0.0, 1.0, 2.0, 3.0], "y": [1.0, 3.1, 4.9, 7.0]})
        >>> OLS.from_formula("y ~ x", df).fit().params.round(2).tolist()
        [1.03, 1.98]
        """
        import statsmodels.formula.api as smf

        f = parse_formula(formula)
        if f.response is None:
            raise FormulaError(f"formula {formula!r} has no response (left-hand side)")
        f.design_matrix(data)   # our checks first: missing columns and values are named
        f.response_values(data)
        # statsmodels fails on any repeated column name, used or not (AttributeError)
        repeated_columns(data, list(data.columns), "OLS estimation")
        # the formulas' fixed namespace; statsmodels >= 0.15 takes it as a dict (its
        # FormulaManager), older versions as patsy's EvalEnvironment
        new = importlib.util.find_spec("statsmodels.formula._manager") is not None
        return smf.ols(formula, data, missing="raise",
                       eval_env={"np": np} if new else FORMULA_ENV)

    def estimate(self, data: pd.DataFrame, cov_type: str = "nonrobust", groups=None):
        """Estimate on data: statsmodels OLS results with Student-t inference.

        Parameters
        ----------
        data : DataFrame
            Holds the response and the formula's columns, without missing values.
        cov_type : {"nonrobust", "HC1", "cluster"}
            Covariance of the estimates, as in :mod:`restrictiveness.procedures.estimation`.
        groups : str or array_like, optional
            Cluster identifiers for ``"cluster"``: a column name or one identifier per row; a
            :class:`pandas.Series` is aligned with the data's rows by index label, not position.

        Returns
        -------
        statsmodels.regression.linear_model.RegressionResults
            With ``use_t=True`` (t and F inference, as the package's other estimators).

        Examples
        --------
        >>> import pandas as pd
        >>> df = pd.DataFrame({"x": [0.0, 1.0, 2.0, 3.0], "y": [1.0, 3.1, 4.9, 7.0]})
        >>> fit = OLS("y ~ x").estimate(df, cov_type="HC1")
        >>> fit.params.round(2).tolist(), fit.bse.round(3).tolist(), fit.use_t
        ([1.03, 1.98], [0.061, 0.025], True)
        """
        cov_type, codes = cluster_codes(cov_type, groups, len(data), data)
        model = self.from_formula(self.formula, data)
        kwds = {"groups": codes} if cov_type == "cluster" else None
        return model.fit(cov_type=cov_type, cov_kwds=kwds, use_t=True)


class _GPRule(Fitted):
    def __init__(self, kernel, Xtrain, alpha, mean, build, constraints, columns):
        self.kernel, self.Xtrain, self.alpha, self.mean = kernel, Xtrain, alpha, mean
        self.build, self.constraints, self.columns = build, constraints, columns

    def predict(self, X):
        pred = self.mean + self.kernel(self.build(X), self.Xtrain) @ self.alpha
        if self.constraints:
            A, names = _as_table(X, self.columns)
            for c in self.constraints:
                pred = c.repair(pred, A, names)
        return pred


class GPRegression(FormulaProcedure):
    """Noise-free Gaussian-process regression: the posterior mean ``k(x, X) K^{-1} y``.

    Parameters
    ----------
    formula : str, optional
        The covariates the kernel sees, as a patsy formula: ``"ce ~ z_hi + z_lo + p"`` (default:
        all columns), or transformed ones, ``"y ~ np.log(x1) + x2"`` (a GP on log x1), with the
        intercept dropped.
    kernel : Kernel
        Covariance function (default Matérn-3/2, variance 10, length scale 1: SPEC §6).
    noise : float
        Variance added to the diagonal (0: interpolation, as the paper's GP regression; repeated
        training locations are then merged, with the mean of their labels).
    mean : {"zero", "sample"}
        Prior mean: zero (the paper's) or the training mean.
    constraints : sequence of Constraint
        Repairs applied to predictions, e.g. ``[Between("z_lo", "z_hi")]`` clips to the prize
        interval; a constraint without a ``repair`` (``Increasing``) is refused.

    Examples
    --------
    >>> import numpy as np
    >>> from restrictiveness import Sample
    >>> X = np.linspace(0, 1, 5)[:, None]
    >>> rule = GPRegression().fit(Sample(X, np.sin(X[:, 0]), ("x",)), np.random.default_rng(0))
    >>> bool(np.allclose(rule.predict(X), np.sin(X[:, 0])))
    True
    """

    label = "GP regression"

    def __init__(self, formula: str | None = None, kernel: Kernel | None = None,
                 noise: float = 0.0, mean: str = "zero",
                 constraints: Sequence[Constraint] = ()) -> None:
        if mean not in ("zero", "sample"):
            raise ConfigurationError(f"mean must be 'zero' or 'sample', got {mean!r}")
        if isinstance(noise, bool) or not isinstance(noise, numbers.Real) \
                or not 0 <= noise < math.inf:
            raise ConfigurationError(f"noise must be a nonnegative variance, got {noise!r}")
        if kernel is not None and not isinstance(kernel, Kernel):
            raise ConfigurationError(f"kernel must be a Kernel (rx.Matern32, rx.Matern52, "
                                     f"rx.SquaredExponential), got {kernel!r}")
        if isinstance(constraints, Constraint | str) \
                or not all(isinstance(c, Constraint) for c in constraints):
            raise ConfigurationError(f"constraints must be a sequence of Constraint objects, "
                                     f"e.g. [rx.Between(0, 1)], got {constraints!r}")
        for c in constraints:  # Increasing('x') left the predictions as they were, silently
            if type(c).repair is Constraint.repair:
                raise ConfigurationError(
                    f"GPRegression cannot impose {c!r} on its predictions: it applies a "
                    f"constraint by its repair (rx.Between clips to its bounds), and "
                    f"{type(c).__name__} defines none (a study already guards every "
                    "procedure's predictions with its eligible set's constraints)")
        if formula is not None:
            parse_formula(formula)
        self.formula = formula
        self.kernel = kernel if kernel is not None else Matern32(variance=10.0, lengthscale=1.0)
        self.noise, self.mean, self.constraints = float(noise), mean, tuple(constraints)

    def validate(self, columns, response):
        """Check the formula, and the columns the constraints name, against a study's.

        Parameters
        ----------
        columns : sequence of str
            The study's covariate names.
        response : str
            The study's response name.

        Raises
        ------
        FormulaError
            The formula names a column or response the study does not have.
        ConfigurationError
            A constraint names a column the study does not have, or the kernel has neither one
            length scale nor one per covariate of a formula of bare column names: every fit
            would fail (the study ran and reported the baseline's r̂ of 1.0 as the
            procedure's).

        Examples
        --------
        >>> import restrictiveness as rx
        >>> gp = GPRegression("y ~ x1", constraints=[rx.Between(0, "x2")])
        >>> gp.validate(["x1", "x2"], "y")  # passes silently
        >>> gp.validate(["x1", "x3"], "y")  # doctest: +ELLIPSIS
        Traceback (most recent call last):
        ...
        restrictiveness.shared.exceptions.ConfigurationError: GPRegression constraint Between(...
        """
        super().validate(columns, response)
        # the kernel's length scales against the design's columns, where the formula says how
        # many there are without data (every fit failed, and r̂ repeated the baseline's)
        f = None if self.formula is None else parse_formula(self.formula)
        if f is None or f.plain:
            try:
                self.kernel._lengthscales(len(columns) if f is None else len(f.covariates))
            except ConfigurationError as exc:
                raise ConfigurationError(f"GPRegression({self.formula!r}): {exc}") from None
        row = np.zeros((1, len(columns)))
        for c in self.constraints:
            try:
                if isinstance(c, Between):  # a constraint of the user's is left to its fits
                    c.bounds(row, columns)
            except ConstraintError as exc:
                raise ConfigurationError(f"GPRegression constraint {c!r} cannot apply to this "
                                         f"study: {exc}") from None

    def memory_bytes(self, n: int) -> int:
        """Lower bound on the memory of one fit: the n × n covariance and its factor.

        Studies use it to size their worker pools
        (:meth:`~restrictiveness.engine.study.Study.memory_estimate`).

        Parameters
        ----------
        n : int
            Training sample size.

        Returns
        -------
        int
            Bytes: two float64 n × n matrices.

        Examples
        --------
        >>> GPRegression().memory_bytes(1000)  # 16 MB
        16000000
        """
        return 2 * 8 * int(n) ** 2

    def fit(self, sample, rng=None):
        """Fit to a training sample, or to a DataFrame (the formula names the response).

        Parameters
        ----------
        sample : Sample or DataFrame
            A study's training sample; or data, whose response the formula names.
        rng : numpy.random.Generator, optional
            Unused: the fit is deterministic.

        Returns
        -------
        Fitted
            The posterior mean, repaired by ``constraints`` at prediction.

        Examples
        --------
        Noise-free regression interpolates the data; ``noise`` smooths:

        >>> import pandas as pd
        >>> df = pd.DataFrame({"x": [0.0, 1.0, 2.0, 3.0], "y": [1.0, 3.1, 4.9, 7.0]})
        >>> GPRegression("y ~ x").fit(df).predict(df).round(6)
        array([1. , 3.1, 4.9, 7. ])
        >>> GPRegression("y ~ x", noise=1.0).fit(df).predict(df).round(2)
        array([1.01, 2.94, 4.77, 6.44])
        """
        Xt, y, build, columns = training_design("GPRegression", self.formula, sample,
                                                intercept=False)
        if not (np.isfinite(Xt).all() and np.isfinite(y).all()):
            raise DataError("GPRegression: the sample contains NaN or infinite values")
        mean = float(y.mean()) if self.mean == "sample" else 0.0
        if self.noise == 0:
            Xt, y, _ = merge_repeats(Xt, y)
        K = self.kernel(Xt) + self.noise * np.eye(len(Xt))
        try:
            factor = scipy.linalg.cho_factor(K, lower=True)
        except np.linalg.LinAlgError:  # was numpy's bare "leading minor ... not positive definite"
            raise DataError(
                f"GPRegression: the kernel matrix of the {len(Xt)} training points is not "
                f"numerically positive definite with noise={self.noise!r} ({self.kernel!r}); "
                f"give a noise variance of about 1e-8 times the kernel's "
                f"({1e-8 * self.kernel.variance:.3g})") from None
        alpha = scipy.linalg.cho_solve(factor, y - mean)
        return _GPRule(self.kernel, Xt, alpha, mean, build, self.constraints, columns)
