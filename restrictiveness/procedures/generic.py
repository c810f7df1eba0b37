"""Generic procedures on two-dimensional samples.

:class:`Constant` (least squares over constants, the usual baseline), :class:`OLS` (linear least
squares from a formula) and :class:`GPRegression` (noise-free Gaussian-process posterior mean).
The protocol they implement is :mod:`restrictiveness.engine.protocol`.
"""

from __future__ import annotations

from collections.abc import Sequence

import numpy as np
import scipy.linalg

from ..eligible.constraints import Constraint
from ..eligible.kernels import Kernel, Matern32
from ..engine.protocol import Fitted, FunctionRule, Procedure
from ..shared.exceptions import DataError, FormulaError
from ..shared.formula import parse_formula
from ..shared.sample import as_columns

__all__ = ["Constant", "OLS", "GPRegression"]


def _validate_formula(formula: str | None, columns: Sequence[str], response: str) -> None:
    if formula is None:
        return
    f = parse_formula(formula)
    missing = [c for c in f.covariates if c not in columns]
    if f.response is not None and f.response != response:
        missing.append(f.response)
    if missing:
        raise FormulaError(f"formula {formula!r} names column(s) {missing} that the study does not "
                           f"have; covariates are {list(columns)} and the response is {response!r}")


def _covariate_matrix(formula: str | None, X: np.ndarray, columns: Sequence[str]) -> np.ndarray:
    """Raw covariate columns selected by a formula's right-hand side (all columns by default)."""
    if formula is None:
        return np.asarray(X, dtype=float)
    names = parse_formula(formula).covariates
    missing = [c for c in names if c not in columns]
    if missing:
        raise FormulaError(f"formula {formula!r} names column(s) {missing} that the sample does "
                           f"not have; available columns: {list(columns)}")
    idx = [list(columns).index(c) for c in names]
    return np.asarray(X, dtype=float)[:, idx]


class Constant(Procedure):
    """Least squares over constant rules: predicts the mean training label.

    Parameters
    ----------
    formula : str, optional
        ``"y ~ 1"``; accepted for symmetry with the other procedures.

    Examples
    --------
    >>> import numpy as np
    >>> from restrictiveness import Sample
    >>> s = Sample(np.zeros((3, 1)), np.array([1.0, 2.0, 3.0]), ("x",))
    >>> Constant().fit(s, np.random.default_rng(0)).predict(np.zeros((2, 1)))
    array([2., 2.])
    """

    label = "constant"

    def __init__(self, formula: str | None = None) -> None:
        self.formula = formula

    def fit(self, sample, rng):
        y = np.asarray(sample.y, dtype=float)
        c = y.mean(axis=0)
        return FunctionRule(lambda X: np.broadcast_to(c, (np.shape(X)[0],) + c.shape).copy(),
                            {"params": np.atleast_1d(c).tolist()})


class _LinearRule(Fitted):
    def __init__(self, beta, build, columns):
        self.beta, self.build, self.columns = beta, build, columns
        self.info = {"params": beta.tolist()}

    def predict(self, X):
        return self.build(as_columns(X, self.columns)) @ self.beta


class OLS(Procedure):
    """Ordinary least squares of the response on a formula's design matrix.

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

    def __init__(self, formula: str) -> None:
        self.formula = formula
        parse_formula(formula)

    def validate(self, columns, response):
        _validate_formula(self.formula, columns, response)

    def fit(self, sample, rng):
        f = parse_formula(self.formula)
        D, build = f.design_builder(sample.columns_dict())
        beta, *_ = np.linalg.lstsq(D, np.asarray(sample.y, dtype=float), rcond=None)
        return _LinearRule(beta, build, sample.columns)


class _GPRule(Fitted):
    def __init__(self, kernel, Xtrain, alpha, mean, select, constraints, columns):
        self.kernel, self.Xtrain, self.alpha, self.mean = kernel, Xtrain, alpha, mean
        self.select, self.constraints, self.columns = select, constraints, columns

    def predict(self, X):
        pred = self.mean + self.kernel(self.select(X), self.Xtrain) @ self.alpha
        for c in self.constraints:
            pred = c.repair(pred, X, self.columns)
        return pred


class GPRegression(Procedure):
    """Noise-free Gaussian-process regression: the posterior mean ``k(x, X) K^{-1} y``.

    Parameters
    ----------
    formula : str, optional
        Selects the covariates, e.g. ``"ce ~ z_hi + z_lo + p"`` (default: all columns).
    kernel : Kernel
        Covariance function (default Matérn-3/2, variance 10, length scale 1: SPEC §6).
    noise : float
        Variance added to the diagonal (0: interpolation, as the paper's GP regression).
    mean : {"zero", "sample"}
        Prior mean: zero (the paper's) or the training mean.
    constraints : sequence of Constraint
        Repairs applied to predictions, e.g. ``[Between("z_lo", "z_hi")]`` clips to the prize
        interval.

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
            raise ValueError("mean must be 'zero' or 'sample'")
        if noise < 0:
            raise ValueError("noise must be nonnegative")
        self.formula = formula
        self.kernel = kernel if kernel is not None else Matern32(variance=10.0, lengthscale=1.0)
        self.noise, self.mean, self.constraints = float(noise), mean, tuple(constraints)

    def validate(self, columns, response):
        _validate_formula(self.formula, columns, response)

    def memory_bytes(self, n: int) -> int:
        """At least the n × n covariance and its factor (float64)."""
        return 2 * 8 * int(n) ** 2

    def fit(self, sample, rng):
        columns = sample.columns

        def select(X):
            return _covariate_matrix(self.formula, X, columns)

        Xt = select(sample.X)
        y = np.asarray(sample.y, dtype=float)
        if not (np.isfinite(Xt).all() and np.isfinite(y).all()):
            raise DataError("GPRegression: the sample contains NaN or infinite values")
        mean = float(y.mean()) if self.mean == "sample" else 0.0
        K = self.kernel(Xt) + self.noise * np.eye(len(Xt))
        alpha = scipy.linalg.cho_solve(scipy.linalg.cho_factor(K, lower=True), y - mean)
        return _GPRule(self.kernel, Xt, alpha, mean, select, self.constraints, columns)
