"""Per-product share regressors: the paper's TabPFN design for markets (SPEC §8, §7).

* :class:`LogShareRegressor` — market shares as the paper's TabPFN procedure predicts them: one
  regression per product position ``j`` of ``log(s_j / s_0)`` on the market's flattened,
  standardised characteristics (``J × C`` features), back-transformed with the logit
  ``s_j = exp(ŷ_j) / (1 + Σ_k exp(ŷ_k))``.
* :class:`GridGP` — the default regressor of :class:`LogShareRegressor`, needing only NumPy and
  SciPy: Gaussian-process regression with a sample mean, a Matérn-5/2 (or Matérn-3/2, squared-
  exponential) kernel and hyperparameters chosen per output by marginal likelihood over a small
  grid — length scale, nugget, and the relevance of the other products' characteristics
  relative to the product's own.

Why the relevance: with one isotropic length scale over all 72 standardised features, product
j's own three characteristics are drowned by the 69 others; on the demand prior the isotropic GP
had share restrictiveness 0.71 (n = 75) against about 0.1 with the relevance grid, which the
likelihood sets to 0 (own characteristics only) in most fits, and on the cereal data it reduced
the common-intercept logit's cross-validated share MSE by 14.5% against 28%.
"""

from __future__ import annotations

from collections.abc import Sequence

import numpy as np
import scipy.linalg
from scipy.spatial.distance import cdist

from ..eligible.kernels import Matern32, Matern52, SquaredExponential
from ..engine.protocol import Fitted, Procedure
from ..procedures.learners import (
    check_regressor,
    clone_estimator,
    global_seed,
    seed_estimator,
)
from ..shared.blas import one_thread
from ..shared.checks import real_predictions
from ..shared.exceptions import ConfigurationError, DataError
from ..shared.random_state import seeded_globals
from ..shared.sample import Sample
from .models import check_markets, check_shares

__all__ = ["GridGP", "LogShareRegressor", "logit_shares"]

#: Bound on predicted log share ratios: exp(±30) keeps every share positive and the inside
#: total below one in float64 (the outside share is at least 1 / (1 + J e^30) ≫ 1e-16 for J < 1e6).
LOG_RATIO_BOUND = 30.0

_BLOCK = 512  # prediction rows per block

_KERNELS = {"matern52": Matern52, "matern32": Matern32, "squared_exponential": SquaredExponential}


# ----------------------------------------------------------------------------------- GridGP


class GridGP:
    """Gaussian-process regression with grid-searched hyperparameters (NumPy/SciPy only).

    Model for each output column ``c``: ``y_c = m_c + f_c(x) + e``, ``m_c`` the training mean,
    ``f_c ~ GP(0, σ_c² k(d_η(x, x') / ℓ_c))``, ``e ~ N(0, λ_c σ_c²)``, where
    ``d_η(x, x')² = ‖x_F − x'_F‖² + η² ‖x_R − x'_R‖²`` splits the inputs into *focus* features
    ``F`` (``focus`` passed to :meth:`fit`; default all, then ``d`` is the Euclidean distance)
    and the rest ``R``, down-weighted by a relevance ``η``. For every grid point ``(η, ℓ, λ)`` —
    ``η`` in ``relevance``, length scales ``ℓ = scale × median pairwise d_η`` of the training
    inputs, relative nuggets ``λ`` — the signal variance has the closed-form maximiser
    ``σ̂² = y_cᵀ (K + λI)⁻¹ y_c / n``, and the profiled log marginal likelihood
    ``−n/2 log σ̂² − ½ log|K + λI|`` picks each column's grid point (type-II maximum
    likelihood). Prediction is the posterior mean ``m_c + k(x, X)(K + λI)⁻¹ y_c``. One Cholesky
    factor per grid point serves all columns.

    Inputs are used as given (standardise them first; :class:`LogShareRegressor` does).

    Parameters
    ----------
    kernel : {"matern52", "matern32", "squared_exponential"}
        Correlation function.
    scales : sequence of float
        Length scales as multiples of the median pairwise training distance.
    nuggets : sequence of float
        Noise variances relative to the signal variance.
    relevance : sequence of float
        Weights ``η ≥ 0`` of the non-focus features (used only when ``focus`` is given).

    Attributes
    ----------
    lengthscale_, nugget_, relevance_ : ndarray
        Chosen hyperparameters per output column (after ``fit``).
    log_marginal_likelihood_ : ndarray
        The profiled log marginal likelihood at the chosen grid point (up to a constant).

    Examples
    --------
    >>> import numpy as np
    >>> X = np.random.default_rng(0).random((30, 2))
    >>> gp = GridGP().fit(X, np.sin(3 * X[:, 0]))
    >>> bool(np.abs(gp.predict(X) - np.sin(3 * X[:, 0])).max() < 1e-2)
    True
    """

    def __init__(self, kernel: str = "matern52",
                 scales: Sequence[float] = (0.5, 1.0, 2.0, 4.0, 8.0),
                 nuggets: Sequence[float] = (1e-6, 1e-4, 1e-2, 1e-1),
                 relevance: Sequence[float] = (0.0, 0.1, 0.3, 1.0)) -> None:
        self.kernel, self.scales, self.nuggets = kernel, tuple(scales), tuple(nuggets)
        self.relevance = tuple(relevance)

    def get_params(self, deep: bool = True) -> dict:
        """Constructor parameters (scikit-learn's cloning protocol).

        Parameters
        ----------
        deep : bool
            Unused (no sub-estimators); part of scikit-learn's signature.

        Returns
        -------
        dict
            ``kernel``, ``scales``, ``nuggets`` and ``relevance``.

        Examples
        --------
        >>> GridGP(scales=(1.0, 2.0)).get_params()["scales"]
        (1.0, 2.0)
        """
        return {"kernel": self.kernel, "scales": self.scales, "nuggets": self.nuggets,
                "relevance": self.relevance}

    def set_params(self, **params) -> GridGP:
        """Set constructor parameters (scikit-learn's cloning protocol).

        Parameters
        ----------
        **params
            New values of constructor parameters (grids as sequences of float).

        Returns
        -------
        GridGP
            ``self``.

        Examples
        --------
        >>> gp = GridGP().set_params(kernel="matern32", nuggets=[1e-4])
        >>> gp.kernel, gp.nuggets
        ('matern32', (0.0001,))
        """
        for k, v in params.items():
            if k not in self.get_params():
                raise ConfigurationError(f"GridGP has no parameter {k!r}")
            setattr(self, k, v if k == "kernel" else tuple(v))
        return self

    def __repr__(self) -> str:
        return (f"GridGP(kernel={self.kernel!r}, scales={self.scales!r}, "
                f"nuggets={self.nuggets!r}, relevance={self.relevance!r})")

    def _correlation(self):
        if self.kernel not in _KERNELS:
            raise ConfigurationError(f"kernel must be one of {sorted(_KERNELS)}, "
                                     f"got {self.kernel!r}")
        return _KERNELS[self.kernel]().correlation

    def _split(self, X, Y=None, total=None):
        """Squared distances on the focus features and on the rest (``total``: precomputed
        squared distances over all features, so only the focus columns are recomputed)."""
        Y = X if Y is None else Y
        if self.focus_ is None:
            return (cdist(X, Y, "sqeuclidean") if total is None else total), None
        f = cdist(X[:, self.focus_], Y[:, self.focus_], "sqeuclidean")
        if total is not None:
            return f, np.maximum(total - f, 0.0)
        rest = np.setdiff1d(np.arange(X.shape[1]), self.focus_)
        r = cdist(X[:, rest], Y[:, rest], "sqeuclidean") if rest.size else np.zeros_like(f)
        return f, r

    def fit(self, X: np.ndarray, y: np.ndarray, focus: Sequence[int] | np.ndarray | None = None, *,
            sq_distances: np.ndarray | None = None) -> GridGP:
        """Fit to inputs ``X (n, d)`` and outputs ``y (n,)`` or ``(n, k)``; returns self.

        Parameters
        ----------
        X : ndarray
            Inputs ``(n, d)``, standardised.
        y : ndarray
            Outputs ``(n,)`` or ``(n, k)``; each column gets its own hyperparameters.
        focus : sequence of int, optional
            Indices of the features at full weight; the others get a relevance ``η`` chosen
            from the grid (default: no split, Euclidean distance on all features).
        sq_distances : ndarray, optional
            The squared Euclidean distances ``(n, n)`` between the rows of ``X`` over all
            features; saves recomputing them when several fits share ``X``.

        Returns
        -------
        GridGP
            ``self``, with ``lengthscale_``, ``nugget_``, ``relevance_`` and
            ``log_marginal_likelihood_`` set.

        Examples
        --------
        An output that depends on the focus feature only: the other features get relevance 0.

        >>> import numpy as np
        >>> X = np.random.default_rng(0).random((20, 3))
        >>> gp = GridGP().fit(X, np.sin(3 * X[:, 0]), focus=[0])
        >>> gp.relevance_, gp.nugget_
        (array([0.]), array([1.e-06]))
        """
        corr = self._correlation()
        if not self.scales or min(self.scales) <= 0:
            raise ConfigurationError("scales must be positive multiples of the median distance")
        if not self.nuggets or min(self.nuggets) < 0:
            raise ConfigurationError("nuggets must be nonnegative")
        if not self.relevance or min(self.relevance) < 0:
            raise ConfigurationError("relevance weights must be nonnegative")
        X = np.asarray(X, dtype=float)
        y = np.asarray(y, dtype=float)
        if X.ndim != 2 or y.shape[:1] != X.shape[:1] or y.ndim not in (1, 2):
            raise DataError(f"GridGP.fit: X must be (n, d) and y (n,) or (n, k); got shapes "
                            f"{X.shape} and {y.shape}")
        if not (np.isfinite(X).all() and np.isfinite(y).all()):
            raise DataError("GridGP.fit: X or y contains NaN or infinite values")
        self.focus_ = None if focus is None else np.unique(np.asarray(focus, dtype=int))
        self._vector = y.ndim == 1
        Y = y.reshape(len(y), -1)
        n, k = Y.shape
        self.mean_ = Y.mean(axis=0)
        Yc = Y - self.mean_
        d2_focus, d2_rest = self._split(X, total=sq_distances)
        upper = np.triu_indices(n, 1)
        etas = (1.0,) if d2_rest is None else self.relevance
        best = np.full(k, -np.inf)
        self.alpha_ = np.zeros_like(Yc)
        self.lengthscale_, self.nugget_ = np.ones(k), np.zeros(k)
        self.relevance_ = np.ones(k)
        tiny = np.finfo(float).tiny
        eye = np.eye(n)
        for eta in etas:
            D = np.sqrt(d2_focus if d2_rest is None else d2_focus + eta * eta * d2_rest)
            off = D[upper]
            off = off[off > 0]
            median = float(np.median(off)) if off.size else 1.0
            for scale in self.scales:
                ls = scale * median
                R = corr(D / ls)
                for lam in self.nuggets:
                    try:
                        L = scipy.linalg.cholesky(R + lam * eye, lower=True, check_finite=False)
                    except np.linalg.LinAlgError:
                        continue  # not numerically positive definite: skip this grid point
                    w = scipy.linalg.solve_triangular(L, Yc, lower=True, check_finite=False)
                    quad = np.maximum((w * w).sum(axis=0), tiny)
                    loglik = -0.5 * n * np.log(quad / n) - np.log(np.diag(L)).sum()
                    better = loglik > best
                    if better.any():
                        sol = scipy.linalg.solve_triangular(L, w[:, better], lower=True,
                                                            trans="T", check_finite=False)
                        best[better] = loglik[better]
                        self.alpha_[:, better] = sol
                        self.lengthscale_[better], self.nugget_[better] = ls, lam
                        self.relevance_[better] = eta
        if not np.isfinite(best).all():
            raise np.linalg.LinAlgError("GridGP.fit: no grid point gave a positive definite "
                                        "kernel matrix; add a larger nugget")
        self.log_marginal_likelihood_ = best
        self.X_ = X
        return self

    def predict(self, X: np.ndarray, *, sq_distances: np.ndarray | None = None) -> np.ndarray:
        """Posterior mean at ``X (m, d)``: ``(m,)`` or ``(m, k)`` like the training outputs.

        Parameters
        ----------
        X : ndarray
            Inputs ``(m, d)``, standardised as the training inputs.
        sq_distances : ndarray, optional
            Squared Euclidean distances ``(m, n)`` from ``X`` to the training inputs over all
            features (shared by several fits on the same inputs).

        Returns
        -------
        ndarray
            ``(m,)`` after a fit to ``(n,)`` outputs, else ``(m, k)``.

        Examples
        --------
        >>> import numpy as np
        >>> X = np.random.default_rng(0).random((20, 2))
        >>> Y = np.column_stack([np.sin(3 * X[:, 0]), X[:, 1]])
        >>> pred = GridGP(scales=(1.0, 2.0), nuggets=(1e-6,)).fit(X, Y).predict(X[:2])
        >>> pred.shape, bool(np.abs(pred - Y[:2]).max() < 1e-2)
        ((2, 2), True)
        """
        corr = self._correlation()
        X = np.asarray(X, dtype=float)
        out = np.empty((len(X), len(self.mean_)))
        groups = sorted({(e, s) for e, s in zip(self.relevance_, self.lengthscale_, strict=True)})
        for start in range(0, len(X), _BLOCK):  # row blocks keep the temporaries in cache
            rows = slice(start, start + _BLOCK)
            d2_focus, d2_rest = self._split(X[rows], self.X_,
                                            None if sq_distances is None else sq_distances[rows])
            for eta, ls in groups:
                cols = (self.relevance_ == eta) & (self.lengthscale_ == ls)
                if d2_rest is None or eta == 0:
                    r = np.sqrt(d2_focus)
                else:
                    r = d2_rest * (eta * eta)
                    r += d2_focus
                    np.sqrt(r, out=r)
                r *= 1.0 / ls
                out[rows, cols] = self.mean_[cols] + corr(r) @ self.alpha_[:, cols]
        return out[:, 0] if self._vector else out


# ------------------------------------------------------------------------ LogShareRegressor


def logit_shares(log_ratios: np.ndarray) -> np.ndarray:
    """Inside shares from log share ratios ``log(s_j / s_0)``: ``exp(ŷ_j) / (1 + Σ_k exp(ŷ_k))``.

    Ratios are clipped to ±:data:`LOG_RATIO_BOUND`, so shares are positive and sum below one.

    Examples
    --------
    >>> s = logit_shares(np.log(np.array([[0.2, 0.3]]) / 0.5))
    >>> np.round(s, 12)
    array([[0.2, 0.3]])
    """
    v = np.clip(np.asarray(log_ratios, dtype=float), -LOG_RATIO_BOUND, LOG_RATIO_BOUND)
    top = np.maximum(v.max(axis=-1, keepdims=True), 0.0)  # the outside good's 0 is a candidate
    e = np.exp(v - top)
    return e / (np.exp(-top) + e.sum(axis=-1, keepdims=True))


class _LogShareRule(Fitted):
    def __init__(self, regressors, mean, scale, shape, info, seed):
        self.regressors, self.mean, self.scale, self.shape = regressors, mean, scale, shape
        self.info, self.seed = info, seed

    def log_ratios(self, X: np.ndarray) -> np.ndarray:
        """Predicted ``log(s_j / s_0)``, shape ``(m, J)``."""
        X = np.asarray(X, dtype=float)
        if X.ndim != 3 or X.shape[1:] != self.shape:
            raise DataError(f"X must be markets of shape (m, {self.shape[0]}, {self.shape[1]}) "
                            f"like the training sample; got shape {X.shape}")
        Z = (X.reshape(len(X), -1) - self.mean) / self.scale
        if all(isinstance(r, GridGP) for r in self.regressors):
            # the fits share their training inputs: all-feature distances computed once
            total = cdist(Z, self.regressors[0].X_, "sqeuclidean")
            return np.column_stack([r.predict(Z, sq_distances=total) for r in self.regressors])
        # each regressor its own copy: one that transforms its input in place (a copy=False
        # scaler) changed the features every later product's regressor was given
        with seeded_globals(self.seed):  # a regressor drawing from them predicts reproducibly
            return np.column_stack([real_predictions(r.predict(Z.copy()),
                                                     type(r).__name__).ravel()
                                    for r in self.regressors])

    def predict(self, X):
        return logit_shares(self.log_ratios(X))


class LogShareRegressor(Procedure):
    """Market shares by per-product regression of log share ratios (the paper's TabPFN design).

    For each product position ``j = 1..J`` a regressor of ``log(s_j / s_0)`` on the market's
    characteristics — all ``J × C`` of them (72 for 24 products with price, sugar and mushy),
    standardised with the training sample's means and standard deviations (constant features
    become 0) — is fitted; predictions are back-transformed with the logit
    ``s_j = exp(ŷ_j) / (1 + Σ_k exp(ŷ_k))``, so predicted shares are positive and sum below
    one by construction (ŷ clipped to ±30). Depending on every product's characteristics lets
    the rule represent flexible substitution patterns.

    Parameters
    ----------
    regressor : estimator, optional
        Any scikit-learn-style regressor (``fit(X, y)``, ``predict(X)``), cloned per product;
        its ``random_state`` parameters (a pipeline's steps' too) are set from the study's
        random stream. Default:
        :class:`GridGP` — Matérn-5/2, sample mean, and per product a length scale, nugget and
        relevance of the other products' characteristics chosen by marginal likelihood, the
        product's own characteristics being the focus features. A :class:`GridGP` passed here
        gets the same focus (``GridGP(relevance=(1.0,))`` treats all 72 features alike).
    label : str, optional
        Name in results (default ``"log-share GP"``, or ``"log-share <Estimator>"``).

    Examples
    --------
    >>> import numpy as np
    >>> from restrictiveness import Sample
    >>> rng = np.random.default_rng(0)
    >>> X = rng.random((30, 4, 3))
    >>> v = 0.5 - 2 * X[..., 0] + X[..., 1]
    >>> y = np.exp(v) / (1 + np.exp(v).sum(axis=1, keepdims=True))
    >>> rule = LogShareRegressor().fit(Sample(X, y, ("prices", "sugar", "mushy")), rng)
    >>> s = rule.predict(X)
    >>> bool((s > 0).all() and (s.sum(axis=1) < 1).all() and np.abs(s - y).max() < 1e-3)
    True
    """

    label = "log-share GP"

    def __init__(self, regressor=None, label: str | None = None) -> None:
        if isinstance(regressor, type):  # every fit failed ("get_params() missing 'self'")
            raise ConfigurationError(f"regressor must be an instance, e.g. "
                                     f"{regressor.__name__}(), not the class itself")
        if regressor is not None and not (hasattr(regressor, "fit")
                                          and hasattr(regressor, "predict")):
            raise TypeError("regressor must have fit(X, y) and predict(X) methods")
        if regressor is not None:
            check_regressor(regressor, "LogShareRegressor")
        self.regressor = regressor
        if label is not None:
            self.label = label
        elif regressor is not None:
            self.label = f"log-share {type(regressor).__name__}"

    def fit(self, sample: Sample, rng: np.random.Generator) -> Fitted:
        """Fit one regressor of log share ratios per product position.

        Parameters
        ----------
        sample : Sample
            Markets ``X (m, J, C)`` and positive inside shares ``y (m, J)``.
        rng : Generator
            Seeds regressors with a ``random_state`` (GridGP has none).

        Returns
        -------
        Fitted
            ``predict(X) -> (m, J)`` shares; ``info`` holds the numbers of features and
            products and, with GridGP, each product's chosen relevance, length scale and
            nugget.

        Examples
        --------
        >>> import numpy as np
        >>> from restrictiveness import Sample
        >>> rng = np.random.default_rng(0)
        >>> X = rng.random((12, 2, 3))
        >>> v = 0.5 - 2 * X[..., 0] + X[..., 1]
        >>> y = np.exp(v) / (1 + np.exp(v).sum(axis=1, keepdims=True))
        >>> rule = LogShareRegressor().fit(Sample(X, y, ("prices", "sugar", "mushy")), rng)
        >>> rule.info["features"], rule.info["products"], rule.predict(X[:1]).shape
        (6, 2, (1, 2))
        """
        X = check_markets(sample.X, sample.columns, "sample.X")
        y = check_shares(sample.y, X, "sample.y")
        if (y <= 0).any():
            raise DataError("sample.y: log share ratios need positive inside shares; "
                            f"{int((y <= 0).sum())} share(s) are zero")
        F = X.reshape(len(X), -1)
        mean, scale = F.mean(axis=0), F.std(axis=0)
        scale[~(scale > 0)] = 1.0  # constant features (e.g. a product's sugar) carry nothing
        Z = (F - mean) / scale
        T = np.log(y) - np.log1p(-y.sum(axis=1))[:, None]
        info: dict = {"features": int(F.shape[1]), "products": int(y.shape[1])}
        template = GridGP() if self.regressor is None else self.regressor
        C = X.shape[2]
        total = cdist(Z, Z, "sqeuclidean") if isinstance(template, GridGP) else None
        regressors, seed = [], global_seed(rng)
        for j in range(T.shape[1]):
            est = clone_estimator(template)
            if isinstance(est, GridGP):  # product j's own characteristics at full weight
                # one BLAS thread: small factorisations, and studies parallelise over processes
                with one_thread():
                    est.fit(Z, T[:, j], focus=np.arange(j * C, (j + 1) * C),
                            sq_distances=total)
            else:
                seed_estimator(est, rng)
                # numpy's and Python's global states too, for the product's fit alone
                with seeded_globals((seed + j) % 2**32):
                    est.fit(Z.copy(), T[:, j].copy())  # its own copies, as in predict
            regressors.append(est)
        if isinstance(template, GridGP):
            info.update({name: [float(getattr(r, name + "_")[0]) for r in regressors]
                         for name in ("relevance", "lengthscale", "nugget")})
        return _LogShareRule(regressors, mean, scale, X.shape[1:], info, seed)
