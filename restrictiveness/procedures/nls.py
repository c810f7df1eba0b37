"""Nonlinear least-squares models from a formula: R's ``nls`` for this package.

``NLS("ce ~ z_lo + (z_hi - z_lo) * exp(-beta * (-log(p))**alpha)",
bounds={"alpha": (0.05, 2), "beta": (0.05, 5)})`` declares a model whose right-hand side is an
expression in data columns and named parameters (parsed safely, never evaluated:
:mod:`restrictiveness.shared.expression`). The same object is

* a *procedure* in restrictiveness studies (``fit(sample, rng)`` → a fitted rule), and
* an *estimator* on data: ``NLS.from_formula(formula, data, bounds=...).fit(cov_type=...)`` →
  :class:`NLSResults` with ``params``, ``bse``, ``conf_int()``, ``summary()`` and the rest of
  :class:`~restrictiveness.procedures.estimation.LeastSquaresResults`.

A model that is not an expression can be given as a function,
``NLS(f, params=..., bounds=...)`` with ``f(data, **params)`` — or ``f(data, theta)`` when its
signature does not name the parameters, ``theta`` the vector in ``params`` order — returning the
predictions (``data`` is a DataFrame of the numeric covariates, never the response), and
optionally ``jac`` with the same arguments returning the ``(n, k)`` Jacobian (central finite
differences otherwise, one-sided at the bounds). An exception raised by either function is
re-raised as a
:class:`~restrictiveness.ModelFunctionError` naming the function, its role and the parameters
(the original as its ``__cause__``). Formula models run compiled;
function models run the same algorithm interpreted (about 10–100× slower).

**The fit** minimises the sum of squared residuals over the parameter box, with the lessons of
the lottery CPT fitter (SPEC §6: several starts, genuine local optima, optima on bounds):

1. *Screening.* A scrambled Sobol sequence of ``n_points`` points over the box (default
   ``32 · 2^k`` for k parameters, at most 4,096), the first quarter of them again on each of the
   ``2k`` faces of the box (the parameter set to its bound), as many again spread over its edges
   (two parameters on bounds; k ≥ 3), and the ``2^k`` corners (k ≤ 8), all evaluated. Positive
   parameters whose bounds span more than two decades (``hi/lo > 100``) are searched on the log
   scale (``scale=`` overrides: ``"log"`` or ``"linear"`` per parameter). A formula's
   parameters that it is jointly linear in (found symbolically: no ``∂f/∂θ_k`` among them
   contains one of them; the amplitudes of a sum of exponentials, Gaussians or sines) are
   *projected* at the interior points: set to their least-squares values given the others
   (variable projection; clipped to the box), so the screening searches the nonlinear
   parameters only. Without it the screening missed the three-exponential optima of NIST's
   Lanczos1–3 for two-exponential ones (function models are screened without projection).
2. *Refinement.* The ``n_refine`` best interior points at least 0.1 box widths apart, and the
   best point of each face and of the corners, are refined by the shared compiled bounded
   Levenberg–Marquardt (:mod:`restrictiveness.shared._lsq_nb`, driven by
   :mod:`restrictiveness.shared._multistart_nb`) with the analytic Jacobian:
   parameters on a bound with an outward gradient are held there exactly, so estimates land on
   bounds rather than near them.
   A start of your own (``start={name: value}``, or a list of them: R's ``nls(start=)``,
   scipy's ``p0``) is refined as well, whatever its screening rank: from a wide box the
   screening alone can miss a narrow basin of a many-parameter model (two Gaussians on an
   exponential: NIST's Gauss2 and Gauss3) that a local start reaches.
3. The best refinement wins, except that an optimum a start of your own reaches is kept
   unless another is lower by more than rounding (:data:`START_TIE` relative): equivalent
   optima (terms of a sum trading places, periods aliased on whole-number ``x``) differ only
   in the last digits, and the one your start reaches is the one you mean. ``info`` records
   every start (start, end, SSR, evaluations, status; a projected start as projected), the
   evaluations spent, whether the winner converged and which parameters sit on a bound.

The fit is deterministic (the Sobol scramble is seeded by ``seed``, not by the study's random
stream), so a study's numbers do not depend on the order of fits.

**Decisions.** Every parameter needs finite bounds (the search is over the box; for a parameter
you would leave free, give a wide box such as ``(-100, 100)``); a parameter without them is
refused. With fewer observations than parameters the procedure still fits (any least-squares
minimiser is a valid fitted rule; ``info["underdetermined"]`` is True), while estimation on data
refuses to compute standard errors without more observations than parameters.
"""

from __future__ import annotations

import functools
import inspect
import math
from collections.abc import Callable, Mapping, Sequence
from typing import Any, Literal, overload

import numpy as np
import pandas as pd
from scipy.stats import qmc

from ..engine.protocol import Fitted, Procedure
from ..shared._lsq_nb import CONVERGED, STATUS
from ..shared._multistart_nb import multistart_for, multistart_numpy
from ..shared.checks import keywords_of, known_keywords, numeric_column, whole_number
from ..shared.exceptions import ConfigurationError, DataError, FormulaError, ModelFunctionError
from ..shared.expression import (
    NonlinearFormula,
    callback_type,
    compile_expression,
    parse_nonlinear,
)
from ..shared.formula import check_response, repeated_columns
from ..shared.sample import Sample
from .estimation import LeastSquaresResults, cluster_codes

#: pandas copies a shallow copy's columns on write (always from 3.0; under 2.x a write through
#: ``.loc`` or ``*=`` reached the original frame).
_COPY_ON_WRITE = int(pd.__version__.split(".")[0]) >= 3

__all__ = ["NLS", "NLSFitted", "NLSEstimator", "NLSResults"]

#: Positive bounds wider than this ratio are searched on the log scale by default.
LOG_SCALE_RATIO = 100.0
#: Relative excess of the sum of squares within which an optimum the user's start reaches is
#: kept over a better one (rounding: ENSO's aliased optima differed by 5e-14).
START_TIE = 1e-9


class NLS(Procedure):
    """A nonlinear least-squares model: a procedure in studies and an estimator on data.

    Parameters
    ----------
    model : str or callable
        A formula ``"y ~ expression"`` in data columns and parameters (functions allowed:
        :data:`restrictiveness.shared.expression.FUNCTIONS`), or a function
        ``f(data, **params) -> predictions`` (or ``f(data, theta)``; module notes).
    params : sequence of str, optional
        Parameter names, in reporting order (default: the keys of ``bounds`` for a formula, the
        function's arguments after the first for a function).
    bounds : mapping of str to (low, high)
        Finite bounds of every parameter (required); ``(name, (low, high))`` pairs are read
        as the mapping they list.
    jac : callable, optional
        For a function model: the ``(n, k)`` Jacobian of the predictions, called like the
        function (default: finite differences). Formula models are differentiated symbolically.
    response : str, optional
        For a function model: the response column (formulas name it on the left).
    start : mapping of str to float, or a sequence of them, optional
        Starting values of every parameter (inside the bounds), each refined in addition to the
        screening's starts (module notes).
    scale : mapping of str to {"log", "linear"}, optional
        Search scale per parameter (default: log when ``0 < low`` and ``high/low > 100``).
    n_points : int, optional
        Screening points in the box (default ``32 · 2^k``, at most 4,096).
    n_refine : int
        Distinct interior screening points refined (plus one per face and the best corner).
    seed : int
        Seed of the scrambled Sobol screening points.
    max_nfev : int
        Evaluations per refinement.
    gtol, xtol, ftol : float
        Convergence tolerances of a refinement (MINPACK's gradient, step and objective tests;
        :mod:`restrictiveness.shared._lsq_nb`).
    label : str, optional
        Name in results (default ``"NLS"``).

    Examples
    --------
    >>> import numpy as np, restrictiveness as rx
    >>> model = rx.NLS("y ~ a * exp(-b * x)", bounds={"a": (0, 10), "b": (0.01, 5)})
    >>> x = np.linspace(0, 3, 30)
    >>> fit = model.fit(rx.Sample(x[:, None], 2 * np.exp(-0.7 * x), ("x",)))
    >>> {k: round(v, 6) for k, v in fit.params.items()}
    {'a': 2.0, 'b': 0.7}
    >>> fit.predict(np.array([[1.0]])).round(4)
    array([0.9932])
    """

    label = "NLS"

    def __init__(self, model: str | Callable, params: Sequence[str] | None = None,
                 bounds: Mapping[str, tuple[float, float]] | None = None,
                 jac: Callable | None = None, *, response: str | None = None,
                 start: Mapping[str, float] | Sequence[Mapping[str, float]] | None = None,
                 scale: Mapping[str, Literal["log", "linear"]] | None = None,
                 n_points: int | None = None, n_refine: int = 4, seed: int = 0,
                 max_nfev: int = 500, gtol: float = 1e-10, xtol: float = 1e-12,
                 ftol: float = 1e-14, label: str | None = None) -> None:
        if isinstance(params, str):
            raise ConfigurationError(f"params must be a sequence of names, not the string "
                                     f"{params!r}")
        if bounds is not None and not isinstance(bounds, Mapping) and not (
                isinstance(bounds, list | tuple) and all(
                    isinstance(pair, list | tuple) and len(pair) == 2
                    and isinstance(pair[0], str) for pair in bounds)):
            # a string "05" was read as the box (0, 5); pairs (name, (low, high)) read as dict
            raise ConfigurationError(f"bounds must be a mapping {{parameter: (low, high)}} (or "
                                     f"(parameter, (low, high)) pairs), got {bounds!r}")
        bounds = dict(bounds or {})
        self._formula: NonlinearFormula | None
        self.formula: str | None
        self.response: str | None
        if isinstance(model, str):
            if jac is not None:
                raise ConfigurationError("jac is for function models; a formula is "
                                         "differentiated symbolically")
            names = tuple(params) if params is not None else tuple(bounds)
            self._formula = parse_nonlinear(model, names)
            if response is not None and response != self._formula.response:
                raise FormulaError(f"response={response!r} differs from the formula's "
                                   f"{self._formula.response!r}")
            self.formula, self.function, self.response = model, None, self._formula.response
        elif callable(model):
            if params is None:  # the function's arguments after the data
                sig = list(inspect.signature(model).parameters.values())[1:]
                if any(p.kind not in (p.POSITIONAL_OR_KEYWORD, p.KEYWORD_ONLY) for p in sig):
                    raise ConfigurationError("give params=...: the function's parameters "
                                             "cannot be read from its signature")
                names = tuple(p.name for p in sig)
            else:
                names = tuple(params)
            if jac is not None and not callable(jac):
                raise ConfigurationError("jac must be a function jac(data, **params)")
            _check_signature(model, names, "model function")
            if jac is not None:
                _check_signature(jac, names, "jac")
            self._formula = None
            self.formula, self.function, self.response = None, model, response
        else:
            raise ConfigurationError("model must be a formula string 'y ~ expression' or a "
                                     "function f(data, **params)")
        self.jac = jac
        if not names:
            raise ConfigurationError("the model has no parameters; declare them with bounds="
                                     "{name: (low, high)}")
        if len(set(names)) != len(names):
            raise ConfigurationError(f"params has repeated names: {list(names)}")
        self.params = names
        missing = [q for q in names if q not in bounds]
        if missing:
            raise ConfigurationError(
                f"parameter(s) {missing} have no bounds; NLS searches a bounded box, so give "
                f"bounds={{name: (low, high)}} for every parameter (a wide box such as "
                "(-100, 100) for one you would leave free)")
        extra = [q for q in bounds if q not in names]
        if extra:
            raise ConfigurationError(f"bounds name unknown parameter(s) {extra}; the model's "
                                     f"parameters are {list(names)}")
        self.bounds = {}
        for q in names:
            try:
                if isinstance(bounds[q], str | bytes):  # "01" read as (0, 1)
                    raise TypeError
                lo, hi = (float(v) for v in bounds[q])
            except (TypeError, ValueError):
                raise ConfigurationError(f"bounds[{q!r}] must be a pair (low, high)") from None
            if not (math.isfinite(lo) and math.isfinite(hi) and lo < hi):
                raise ConfigurationError(f"bounds[{q!r}] must be finite with low < high, "
                                         f"got {(lo, hi)}")
            self.bounds[q] = (lo, hi)
        if scale is not None and not isinstance(scale, Mapping):
            raise ConfigurationError(f"scale must be a mapping {{parameter: 'log' or "
                                     f"'linear'}}, got {scale!r}")
        self.scale = {}
        for q, v in dict(scale or {}).items():
            if q not in names or v not in ("log", "linear"):
                raise ConfigurationError(f"scale[{q!r}] must name a parameter and be 'log' or "
                                         "'linear'")
            if v == "log" and self.bounds[q][0] <= 0:
                raise ConfigurationError(f"scale[{q!r}]='log' needs a positive lower bound")
            self.scale[q] = v
        k = len(names)
        self.n_points = whole_number(n_points, "n_points", minimum=2) if n_points is not None \
            else min(4096, 32 * 2 ** k)
        self.n_refine = whole_number(n_refine, "n_refine", minimum=1)
        self.max_nfev = whole_number(max_nfev, "max_nfev", minimum=1)
        self.seed = whole_number(seed, "seed", minimum=0)
        try:
            self.gtol, self.xtol, self.ftol = float(gtol), float(xtol), float(ftol)
        except (TypeError, ValueError):
            raise ConfigurationError(f"gtol, xtol and ftol must be positive numbers, got "
                                     f"{(gtol, xtol, ftol)}") from None
        if not min(self.gtol, self.xtol, self.ftol) > 0:
            raise ConfigurationError(f"gtol, xtol and ftol must be positive numbers, got "
                                     f"{(gtol, xtol, ftol)}")
        self.start = self._check_start(start)
        if label is not None:
            self.label = label

    def _check_start(self, start) -> tuple[dict[str, float], ...]:
        """The user's starts as a tuple of ``{name: value}``, each naming every parameter with a
        finite value inside its bounds."""
        if start is None:
            return ()
        starts = [start] if isinstance(start, Mapping) else start
        if isinstance(starts, str | bytes) or not isinstance(starts, Sequence) or not starts \
                or not all(isinstance(one, Mapping) for one in starts):
            raise ConfigurationError(f"start must be a mapping {{parameter: value}} or a list "
                                     f"of them, got {start!r}")
        out = []
        for one in starts:
            missing = [q for q in self.params if q not in one]
            extra = [q for q in one if q not in self.params]
            if missing or extra:
                raise ConfigurationError(
                    f"start must give every parameter {list(self.params)}: "
                    + (f"missing {missing}" if missing else f"unknown {extra}"))
            values = {}
            for q in self.params:
                try:
                    v = float(one[q])
                except (TypeError, ValueError):
                    raise ConfigurationError(f"start[{q!r}] must be a number, got "
                                             f"{one[q]!r}") from None
                lo, hi = self.bounds[q]
                if not lo <= v <= hi:  # NaN too
                    raise ConfigurationError(f"start[{q!r}] = {v!r} is outside its bounds "
                                             f"{(lo, hi)}")
                values[q] = v
            out.append(values)
        return tuple(out)

    # -- the parameter box ----------------------------------------------------------------
    @property
    def logscale(self) -> np.ndarray:
        """1 where a parameter is searched on the log scale."""
        out = []
        for q in self.params:
            lo, hi = self.bounds[q]
            auto = lo > 0 and hi / lo > LOG_SCALE_RATIO
            out.append(int(self.scale.get(q, "log" if auto else "linear") == "log"))
        return np.array(out, dtype=np.int64)

    def _box(self) -> tuple[np.ndarray, np.ndarray]:
        lo = np.array([self.bounds[q][0] for q in self.params])
        hi = np.array([self.bounds[q][1] for q in self.params])
        logs = self.logscale.astype(bool)
        lo[logs], hi[logs] = np.log(lo[logs]), np.log(hi[logs])
        return lo, hi

    def _natural(self, x: np.ndarray) -> np.ndarray:
        """Internal coordinates to parameters; exactly the bound when on it (exp∘log may miss
        by an ulp)."""
        lo, hi = self._box()
        theta = np.array(x, dtype=float)
        for k, (q, is_log) in enumerate(zip(self.params, self.logscale, strict=True)):
            if x[k] <= lo[k]:
                theta[k] = self.bounds[q][0]
            elif x[k] >= hi[k]:
                theta[k] = self.bounds[q][1]
            elif is_log:
                theta[k] = math.exp(x[k])
        return theta

    # -- data -----------------------------------------------------------------------------
    @property
    def variables(self) -> tuple[str, ...] | None:
        """Data columns a formula model uses (None for a function model)."""
        return None if self._formula is None else self._formula.variables

    def validate(self, columns, response):
        """Check names against a study's columns and compile the model now.

        Compiling before the study starts its workers lets forked worker processes inherit
        the compiled model.

        Parameters
        ----------
        columns : sequence of str
            The study's covariate names.
        response : str
            The study's response name.

        Raises
        ------
        FormulaError
            The formula's response is not the study's, or a name in it is neither a column nor
            a parameter.

        Examples
        --------
        >>> model = NLS("y ~ a * exp(-b * x)", bounds={"a": (0, 10), "b": (0.01, 5)})
        >>> model.validate(["x"], "y")  # passes silently
        >>> model.validate(["z"], "y")  # doctest: +ELLIPSIS
        Traceback (most recent call last):
        ...
        restrictiveness.shared.exceptions.FormulaError: ... 'x' is neither a data column nor ...
        """
        if self._formula is not None:
            self._formula.check_columns(columns, response)
            compile_expression(self._formula)
            multistart_for(callback_type())
        elif self.response is not None and self.response != response:
            raise FormulaError(f"NLS response {self.response!r} differs from the study's "
                               f"{response!r}")

    def _design(self, X, columns: Sequence[str]):
        """The model's input from covariates: the formula's columns as a contiguous matrix, or
        a column mapping for a function model."""
        if isinstance(X, pd.DataFrame):
            columns, X = list(X.columns), X
            get = X.__getitem__
        else:
            X = np.asarray(X, dtype=float)
            if X.ndim != 2 or X.shape[1] != len(columns):
                raise DataError(f"NLS needs two-dimensional covariates with columns "
                                f"{list(columns)}, got shape {X.shape}")
            cols = list(columns)

            def get(c):
                return X[:, cols.index(c)]
        if self._formula is None:
            return pd.DataFrame({c: np.asarray(get(c), dtype=float) for c in columns
                                 if isinstance(X, np.ndarray)
                                 or pd.api.types.is_numeric_dtype(X[c])})
        self._formula.check_columns(columns)
        if isinstance(X, pd.DataFrame):
            for c in self._formula.variables:
                numeric_column(X[c], "NLS")
        if not self._formula.variables:
            return np.zeros((len(X), 0))
        M = np.column_stack([np.asarray(get(c), dtype=float) for c in self._formula.variables])
        if not np.isfinite(M).all():
            raise DataError(f"NLS: the columns {list(self._formula.variables)} contain NaN or "
                            "infinite values")
        return np.require(M, float, ["C", "W"])

    # -- fitting --------------------------------------------------------------------------
    # A Sample gives the fitted rule of the procedure protocol, a DataFrame estimation results.
    @overload
    def fit(self, sample: Sample, rng: np.random.Generator | None = None,
            **estimation: Any) -> NLSFitted: ...

    @overload
    def fit(self, sample: pd.DataFrame, rng: np.random.Generator | None = None,
            **estimation: Any) -> NLSResults: ...

    def fit(self, sample: Sample | pd.DataFrame, rng: np.random.Generator | None = None,
            **estimation: Any) -> NLSFitted | NLSResults:
        """Fit to a training sample (a procedure in studies), or estimate on a DataFrame.

        Parameters
        ----------
        sample : Sample or DataFrame
            A study's training sample; or data, which gives
            ``NLSEstimator(self, sample).fit(**estimation)``.
        rng : Generator, optional
            Unused: the fit is deterministic.
        **estimation
            ``cov_type`` and ``groups`` for estimation on a DataFrame.

        Returns
        -------
        NLSFitted or NLSResults
            The fitted rule on a training sample; estimation results on a DataFrame.

        Examples
        --------
        >>> import numpy as np, pandas as pd
        >>> from restrictiveness import Sample
        >>> model = NLS("y ~ a * exp(-b * x)", bounds={"a": (0, 10), "b": (0.01, 5)})
        >>> x = np.linspace(0, 3, 30)
        >>> model.fit(Sample(x[:, None], 2 * np.exp(-0.7 * x), ("x",)))  # doctest: +ELLIPSIS
        <NLS fit: a=2, b=0.7; ssr=...>
        >>> df = pd.DataFrame({"x": x, "y": 2 * np.exp(-0.7 * x) + 0.01 * np.cos(9 * x)})
        >>> model.fit(df, cov_type="HC1").params.round(3).tolist()
        [2.002, 0.7]
        """
        if isinstance(sample, pd.DataFrame):
            known_keywords(estimation, keywords_of(NLSEstimator.fit, skip=("self",)), "NLS.fit")
            return NLSEstimator(self, sample).fit(**estimation)
        if estimation:
            raise ConfigurationError(f"{sorted(estimation)} apply to estimation on a DataFrame, "
                                     "not to fits on a training sample")
        if not isinstance(sample, Sample):
            raise DataError("NLS.fit takes a Sample (in studies) or a DataFrame (estimation)")
        check_response(self.response, sample.response,
                       f"NLS formula {self.formula!r}" if self.formula else "NLS")
        return self.fit_arrays(self._design(sample.X, sample.columns), sample.y, sample.columns)

    def fit_arrays(self, design, y, columns: Sequence[str] | None = None) -> NLSFitted:
        """Least squares on the model's input and responses ``y``.

        The screening and refinement of the module notes, on arrays already in the model's
        input form (what :meth:`fit` builds from a sample).

        Parameters
        ----------
        design : ndarray or DataFrame
            The model's input: for a formula, the ``(n, m)`` matrix of its data columns in
            :attr:`variables` order; for a function model, the DataFrame it receives.
        y : array_like
            The ``n`` responses.
        columns : sequence of str, optional
            The covariate names of the sample (the fitted rule then predicts on arrays with
            these columns; without them it predicts on DataFrames only).

        Returns
        -------
        NLSFitted
            The least-squares fit; ``info`` records the search.

        Raises
        ------
        DataError
            ``y`` of the wrong shape or not finite, or a model not finite anywhere in the box
            or at a ``start``.

        Examples
        --------
        >>> import numpy as np
        >>> model = NLS("y ~ a * exp(-b * x)", bounds={"a": (0, 10), "b": (0.01, 5)})
        >>> x = np.linspace(0, 3, 30)
        >>> fit = model.fit_arrays(x[:, None], 2 * np.exp(-0.7 * x), columns=["x"])
        >>> {k: round(v, 6) for k, v in fit.params.items()}
        {'a': 2.0, 'b': 0.7}
        >>> fit.info["converged"], fit.info["at_bound"], fit.info["screened"]
        (True, [], 260)
        """
        y = np.require(y, float, ["C", "W"])  # numba types read-only arrays apart
        n = len(design[next(iter(design))]) if isinstance(design, dict) and design \
            else np.shape(design)[0]
        if y.shape != (n,):
            raise DataError(f"y must have shape ({n},), got {y.shape}")
        if not np.isfinite(y).all():
            raise DataError("NLS: the response contains NaN or infinite values")
        for one in self.start:  # skipped by the search, silently, where it is not finite
            f = self.values(design, np.array(list(one.values())))
            if not np.isfinite(f).all():
                raise DataError(f"the model is not finite at start {one} on these data")
        lo, hi = self._box()
        points, group = self._starting_points(lo, hi)
        k = len(self.params)
        if self._formula is not None:
            compiled = compile_expression(self._formula)
            driver = functools.partial(multistart_for(callback_type()), compiled.resjac)
            # the screening projects the parameters the formula is linear in (module notes)
            linear = np.array(compiled.linear, dtype=np.int64) * (1 + self.logscale)
        else:
            driver = functools.partial(multistart_numpy, self._function_residuals)
            linear = np.zeros(k, dtype=np.int64)

        def search(points, group, free, linear):
            return driver((design, y, self.logscale), points, group, lo, hi, free, linear,
                          self.n_refine, 0.1, self.max_nfev, self.gtol, self.xtol, self.ftol)

        x, ssr, records, evals = search(points, group, np.ones(k, dtype=np.int64), linear)
        winner = int(np.argmin(records[:, 2 * k])) if len(records) else 0
        if self.start and math.isfinite(ssr):
            # the user's starts are the last points; an optimum one of them reaches wins unless
            # another beats it by more than rounding: where optima are equivalent (ENSO's periods
            # aliased on whole-month x, terms trading places) the user's is the one they mean
            mine = points[-len(self.start):]
            theirs = [c for c in range(len(records))
                      if (records[c, :k] == mine).all(axis=1).any()]
            if theirs:
                c = min(theirs, key=lambda c: records[c, 2 * k])
                if records[c, 2 * k] <= ssr * (1 + START_TIE):
                    x, ssr, winner = records[c, k:2 * k].copy(), records[c, 2 * k], c
        if math.isfinite(ssr):
            # an infinite slope at the estimate (sqrt(a) at a = 0) makes every step of the
            # other parameters NaN, so the refinement stopped where it started ("no decrease"),
            # off their optimum: refine them again with those parameters held
            J = self.values(design, self._natural(x), jacobian=True)[1]
            stuck = ~np.isfinite(J).all(axis=0)
            if stuck.any() and not stuck.all():
                x2, ssr2, more, evals2 = search(x[None, :], np.zeros(1, dtype=np.int64),
                                                (~stuck).astype(np.int64),
                                                np.zeros(k, dtype=np.int64))
                records, evals = np.concatenate([records, more]), evals + evals2
                if ssr2 < ssr:
                    x, ssr, winner = x2, ssr2, len(records) - 1
        if self._formula is None:  # a user's jac, checked at the estimate
            if self.jac is not None and math.isfinite(ssr):
                self._check_jac(design, self._natural(x))
        if not math.isfinite(ssr):
            # a function model receives every numeric column, NaN included (a formula's
            # columns are checked before): say so rather than blame the model's domain
            gaps = [] if not isinstance(design, pd.DataFrame) else \
                [c for c in design.columns if design[c].isna().any()]
            hint = f"; the data passed to it have missing values (NaN) in {gaps}" if gaps else ""
            raise DataError(f"the model is not finite at any of the {len(points)} screening "
                            "points of the parameter box on these data; check the formula's "
                            f"domain (e.g. log of a negative number) and the bounds{hint}")
        return NLSFitted(self, self._natural(x), float(ssr), records, int(evals), n, columns,
                         winner)

    def _starting_points(self, lo: np.ndarray, hi: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
        """The screening points and their groups, then the user's starts, a group each (the
        driver refines the best point of every group but the interior's)."""
        points, group = _screening_points(tuple(lo), tuple(hi), self.n_points, self.seed)
        if not self.start:
            return points, group
        logs = self.logscale.astype(bool)
        mine = np.array([[one[q] for q in self.params] for one in self.start])
        mine[:, logs] = np.log(mine[:, logs])
        # exp∘log may put a start on a bound a hair outside the box
        mine = np.clip(mine, lo, hi)
        ids = group.max() + 1 + np.arange(len(mine), dtype=np.int64)
        return np.ascontiguousarray(np.concatenate([points, mine])), np.concatenate([group, ids])

    def _function_residuals(self, x, args, want_jac):
        """Residuals and Jacobian of a function model (the interpreted callback)."""
        data, y, logscale = args
        on_log = logscale != 0
        theta = np.array(x, dtype=float)
        theta[on_log] = np.exp(x[on_log])  # only there: exp(1e6) of a linear one overflowed
        f = self._evaluate(data, theta)
        if f.shape != y.shape:
            raise DataError(f"the model function returned {f.shape[0]} predictions for "
                            f"{y.shape[0]} observations")
        if not want_jac:
            return f - y, np.empty((0, len(theta)))
        J = self._function_jacobian(data, theta, f)
        return f - y, J * np.where(logscale != 0, theta, 1.0)

    def _check_jac(self, data, theta: np.ndarray) -> None:
        """Refuse a ``jac`` that is not the model's derivative (compared with central
        differences at the estimate): the fitter trusts it, and a wrong one stops the search
        at a wrong point, silently (its SEs are wrong too)."""
        f = self._evaluate(data, theta)
        given = self._function_jacobian(data, theta, f)
        differenced = self._function_jacobian(data, theta, f, use_jac=False)
        err = np.abs(given - differenced).max(axis=0)
        scale = np.maximum(np.abs(given).max(axis=0), np.abs(differenced).max(axis=0))
        # differences are accurate to about 1e-10 relative (1e-5 one-sided, at a bound), less
        # the rounding of f over the step h (a large level with a small slope: y = 1e6 + ...)
        eps = np.finfo(float).eps
        rounding = 100 * eps * np.abs(f).max(initial=0.0) / (
            eps ** (1 / 3) * np.maximum(1.0, np.abs(theta)))
        bad = [q for q, e, s, r in zip(self.params, err, scale, rounding, strict=True)
               if not e <= 1e-3 * s + r + 1e-8]
        if bad:
            name = getattr(self.jac, "__qualname__", None) or repr(self.jac)
            named = dict(zip(self.params, np.round(theta, 6).tolist(), strict=True))
            k = list(self.params).index(bad[0])
            raise ConfigurationError(
                f"NLS: jac {name} is not the derivative of the model function for {bad} at the "
                f"estimate {named} (largest difference from finite differences {err[k]:.3g}, "
                f"scale {scale[k]:.3g}); fix jac, or pass jac=None to use finite differences")

    def _function_jacobian(self, data, theta: np.ndarray, f: np.ndarray,
                           use_jac: bool = True) -> np.ndarray:
        """``∂f/∂θ`` of a function model: ``jac`` or central differences (one-sided at bounds)."""
        if self.jac is not None and use_jac:
            J = np.asarray(self._call(self.jac, data, theta), dtype=float)
            if J.shape != (f.shape[0], len(theta)):
                raise DataError(f"jac returned shape {J.shape}, expected "
                                f"{(f.shape[0], len(theta))}")
            return J
        J = np.empty((f.shape[0], len(theta)))
        for k, q in enumerate(self.params):
            lo, hi = self.bounds[q]
            h = np.finfo(float).eps ** (1 / 3) * max(1.0, abs(theta[k]))
            up, down = theta.copy(), theta.copy()
            up[k], down[k] = min(theta[k] + h, hi), max(theta[k] - h, lo)
            f_up = self._evaluate(data, up) if up[k] > theta[k] else f
            f_down = self._evaluate(data, down) if down[k] < theta[k] else f
            J[:, k] = (f_up - f_down) / (up[k] - down[k])
        return J

    def _evaluate(self, data, theta: np.ndarray) -> np.ndarray:
        out = np.asarray(self._call(self.function, data, theta))
        # strings crashed in the conversion, None became one NaN and complex numbers lost their
        # imaginary part, silently
        if not (np.issubdtype(out.dtype, np.floating) or np.issubdtype(out.dtype, np.integer)
                or out.dtype == bool):
            name = getattr(self.function, "__qualname__", None) or repr(self.function)
            raise ModelFunctionError(f"NLS: the model function {name} returned {out.dtype} "
                                     "values; it must return real numbers, one per observation")
        return out.astype(float).reshape(-1)

    def _call(self, fn, data, theta: np.ndarray):
        """``fn(data, **params)``, or ``fn(data, theta)`` for a function whose signature does
        not name the parameters (two positional arguments: the data and the vector).

        An exception of ``fn`` becomes a :class:`ModelFunctionError` naming the function, its
        role and the parameters, with the original as ``__cause__``."""
        theta = np.asarray(theta, dtype=float)
        named = dict(zip(self.params, theta.tolist(), strict=True))
        # a fresh frame per call: a function that transforms a column in place,
        # data["x"] = np.log(data["x"]) or data.loc[:, "x"] *= 0.1, changed every later call;
        # shallow under pandas' copy-on-write (3.0 on), which copies only what is written
        if isinstance(data, pd.DataFrame):
            data = data.copy(deep=not _COPY_ON_WRITE)
        try:
            if _takes_names(fn, self.params):
                return fn(data, **named)
            return fn(data, theta.copy())
        except Exception as exc:  # KeyboardInterrupt and SystemExit pass through unwrapped
            role = "jac" if fn is self.jac else "model function"
            name = getattr(fn, "__qualname__", None) or repr(fn)
            raise ModelFunctionError(f"NLS: the {role} {name} raised {type(exc).__name__}: "
                                     f"{exc}, at parameters {named}") from exc

    def values(self, design, theta: np.ndarray, jacobian: bool = False):
        """Predictions of the model at parameters ``theta`` on its input, and optionally ``∂f/∂θ``.

        Parameters
        ----------
        design : ndarray or DataFrame
            The model's input, as in :meth:`fit_arrays`.
        theta : array_like
            Parameters, in :attr:`params` order.
        jacobian : bool
            Also return the ``(n, k)`` Jacobian (symbolic for a formula; ``jac`` or finite
            differences for a function model).

        Returns
        -------
        f : ndarray
            The ``n`` predictions.
        J : ndarray
            ``∂f/∂θ``, only with ``jacobian=True``.

        Examples
        --------
        At x = 1, ``f = a e^{-b}``, ``∂f/∂a = e^{-b}`` and ``∂f/∂b = -a e^{-b}``:

        >>> import numpy as np
        >>> model = NLS("y ~ a * exp(-b * x)", bounds={"a": (0, 10), "b": (0.01, 5)})
        >>> f, J = model.values(np.array([[0.0], [1.0]]), [2.0, 0.7], jacobian=True)
        >>> f.round(6), J[1].round(6)
        (array([2.      , 0.993171]), array([ 0.496585, -0.993171]))
        """
        theta = np.asarray(theta, dtype=float)
        if self._formula is not None:
            return compile_expression(self._formula).values(theta, design, jacobian)
        f = self._evaluate(design, theta)
        return (f, self._function_jacobian(design, theta, f)) if jacobian else f

    @classmethod
    def from_formula(cls, formula: str, data: pd.DataFrame, bounds=None, params=None,
                     **options) -> NLSEstimator:
        """Estimator on data: ``NLS.from_formula(formula, df, bounds=...).fit(cov_type=...)``.

        Parameters
        ----------
        formula : str
            ``"y ~ expression"`` in the data's columns and the parameters.
        data : DataFrame
            Holds the response and the formula's columns, without missing values.
        bounds : mapping of str to (low, high)
            Finite bounds of every parameter (required).
        params : sequence of str, optional
            Parameter names, in reporting order (default: the keys of ``bounds``).
        **options
            Other arguments of :class:`NLS` (``start``, ``scale``, ``n_points``, ``n_refine``,
            ``seed``, ``max_nfev``, the tolerances, ``label``).

        Returns
        -------
        NLSEstimator
            Its ``fit(cov_type=..., groups=...)`` gives :class:`NLSResults`.

        Examples
        --------
        >>> import numpy as np, pandas as pd
        >>> x = np.linspace(0, 3, 40)
        >>> df = pd.DataFrame({"x": x, "y": 2 * np.exp(-0.7 * x) + 0.01 * np.cos(9 * x)})
        >>> res = NLS.from_formula("y ~ a * exp(-b * x)", df,
        ...                        bounds={"a": (0, 10), "b": (0, 5)}).fit(cov_type="HC1")
        >>> res.params.round(3).to_dict()
        {'a': 2.001, 'b': 0.7}
        """
        known_keywords(options, keywords_of(cls, skip=("model",)), "NLS.from_formula")
        return NLSEstimator(cls(formula, params=params, bounds=bounds, **options), data)

    def __repr__(self) -> str:
        what = repr(self.formula) if self.formula is not None else \
            f"{getattr(self.function, '__module__', '?')}." \
            f"{getattr(self.function, '__qualname__', '?')}"
        extra = "" if self.jac is None else \
            f", jac={getattr(self.jac, '__module__', '?')}.{self.jac.__qualname__}"
        opts = ", ".join(f"{k}={getattr(self, k)!r}" for k in
                         ("start", "scale", "n_points", "n_refine", "seed", "max_nfev", "gtol",
                          "xtol", "ftol")
                         if k not in ("start", "scale") or getattr(self, k))
        return (f"NLS({what}, params={self.params!r}, bounds={self.bounds!r}{extra}, "
                f"response={self.response!r}, {opts})")


def _takes_names(fn, names: Sequence[str]) -> bool:
    """Whether ``fn`` accepts the parameters as keyword arguments."""
    try:
        sig = inspect.signature(fn).parameters.values()
    except (TypeError, ValueError):
        return True
    if any(p.kind is p.VAR_KEYWORD for p in sig):
        return True
    named = {p.name for p in sig if p.kind in (p.POSITIONAL_OR_KEYWORD, p.KEYWORD_ONLY)}
    return set(names) <= named


def _check_signature(fn, names: Sequence[str], role: str) -> None:
    """Refuse a function whose arguments cannot take the parameters ``names``.

    ``f(data, a)`` with ``params=["a", "b"]`` was called ``f(data, theta)``, the vector as
    ``a`` (numpy's "operands could not be broadcast together", from inside the fit), and
    ``f(data, a, b)`` with other names was "missing 1 required positional argument".
    """
    if _takes_names(fn, names):
        return
    sig = inspect.signature(fn)
    args = list(sig.parameters.values())
    named = [q for q in names if q in sig.parameters]
    required = [p.name for p in args[1:] if p.default is p.empty
                and p.kind in (p.POSITIONAL_ONLY, p.POSITIONAL_OR_KEYWORD, p.KEYWORD_ONLY)]
    if named or len(required) > 1:
        name = getattr(fn, "__qualname__", None) or repr(fn)
        raise ConfigurationError(
            f"NLS: the {role} {name}{sig} cannot take the parameters {list(names)}: it "
            f"names {named or required} but not {[q for q in names if q not in named]}; give "
            "params= its argument names after the data, or write it f(data, theta) with theta "
            "the vector in params order")


@functools.lru_cache(maxsize=64)
def _screening_points(lo: tuple, hi: tuple, n_points: int, seed: int
                      ) -> tuple[np.ndarray, np.ndarray]:
    """Scrambled Sobol points over the box, a quarter of them again on each face, as many again
    spread over the edges (k ≥ 3), and the corners; with a group id per point: 0 interior, then
    one per face, one per edge, and one for the corners."""
    lo_a, hi_a = np.array(lo), np.array(hi)
    p = len(lo)
    U = qmc.Sobol(p, scramble=True, seed=seed).random(1 << max(1, math.ceil(math.log2(n_points))))
    inner = lo_a + U[:n_points] * (hi_a - lo_a)
    blocks, groups = [inner], [np.zeros(len(inner), dtype=np.int64)]
    m = max(1, n_points // 4)
    for k in range(p):
        for j, bound in enumerate((lo_a[k], hi_a[k])):
            face = inner[:m].copy()
            face[:, k] = bound
            blocks.append(face)
            groups.append(np.full(m, 1 + 2 * k + j, dtype=np.int64))
    if p >= 3:
        # edges (two parameters on bounds), n_points in all, a group each: an optimum where two
        # bounds bind can sit in a rugged valley that neither face's best point leads to
        pairs = [(k, l) for k in range(p) for l in range(k + 1, p)]
        m = max(1, n_points // (4 * len(pairs)))
        for k, l in pairs:
            for bk in (lo_a[k], hi_a[k]):
                for bl in (lo_a[l], hi_a[l]):
                    edge = inner[:m].copy()
                    edge[:, k], edge[:, l] = bk, bl
                    blocks.append(edge)
                    groups.append(np.full(m, groups[-1][0] + 1, dtype=np.int64))
    if p <= 8:
        corners = np.array(np.meshgrid(*zip(lo, hi, strict=True), indexing="ij")).reshape(p, -1).T
        blocks.append(corners)
        groups.append(np.full(len(corners), groups[-1][0] + 1, dtype=np.int64))
    return np.ascontiguousarray(np.concatenate(blocks)), np.concatenate(groups)


class NLSFitted(Fitted):
    """A fitted NLS rule.

    Attributes
    ----------
    model : NLS
    theta : ndarray
        Estimates, in ``model.params`` order.
    params : dict
        ``{name: estimate}``.
    ssr : float
        Sum of squared residuals.
    info : dict
        JSON-friendly record: ``params``, ``ssr``, ``at_bound``, ``converged``, ``status``
        (the winning refinement's stopping rule), ``starts`` (one
        ``[start..., end..., ssr, evaluations, status]`` per refinement, natural scale),
        ``evaluations`` (residual evaluations, screening included), ``screened``,
        ``nobs`` and ``underdetermined`` (fewer observations than parameters).

    Parameters
    ----------
    model : NLS
        The model that was fitted.
    theta : ndarray
        The estimates.
    ssr : float
        Their sum of squared residuals.
    records : ndarray
        One row per refinement: start, end, SSR, evaluations and stopping rule (estimated
        scale).
    evaluations : int
        Residual evaluations of the whole fit.
    nobs : int
        Number of observations fitted.
    columns : sequence of str or None
        The training sample's columns (None: predict on DataFrames only).
    winner : int, optional
        The row of ``records`` that gave the estimates (default: the lowest SSR).

    Examples
    --------
    >>> import pandas as pd, restrictiveness as rx
    >>> df = pd.DataFrame({"x": [0.0, 1.0, 2.0, 3.0], "y": [1.0, 3.0, 5.0, 7.0]})
    >>> rule = rx.NLS("y ~ a + b * x", bounds={"a": (-5, 5), "b": (-5, 5)}).fit(df).fitted
    >>> {q: round(v, 6) for q, v in rule.params.items()}, rule.info["converged"]
    ({'a': 1.0, 'b': 2.0}, True)
    """

    def __init__(self, model: NLS, theta: np.ndarray, ssr: float, records: np.ndarray,
                 evaluations: int, nobs: int, columns: Sequence[str] | None,
                 winner: int | None = None) -> None:
        self.model, self.theta, self.ssr = model, np.asarray(theta, dtype=float), float(ssr)
        self.columns = None if columns is None else tuple(columns)
        self.params = dict(zip(model.params, self.theta.tolist(), strict=True))
        k = len(model.params)
        best = winner if winner is not None else \
            int(np.argmin(records[:, 2 * k])) if len(records) else 0
        status = int(records[best, 2 * k + 2]) if len(records) else 0
        starts = [[*model._natural(r[:k]).tolist(), *model._natural(r[k:2 * k]).tolist(),
                   float(r[2 * k]), int(r[2 * k + 1]), int(r[2 * k + 2])] for r in records]
        self.info = {
            "params": dict(self.params),
            "ssr": self.ssr,
            "at_bound": [q for q, v in self.params.items() if v in model.bounds[q]],
            "converged": status in CONVERGED,
            "status": STATUS[status],
            "starts": starts,
            "evaluations": evaluations,
            "screened": int(model._starting_points(*model._box())[0].shape[0]),
            "nobs": int(nobs),
            "underdetermined": nobs < k,
        }

    def predict(self, X) -> np.ndarray:
        """Predictions at covariates ``X`` (an array with the training sample's columns, or a
        DataFrame).

        Parameters
        ----------
        X : ndarray or DataFrame
            Covariates: an array whose columns are the training sample's, or a DataFrame
            with the model's columns.

        Returns
        -------
        ndarray
            One prediction per row.

        Examples
        --------
        >>> import pandas as pd, restrictiveness as rx
        >>> df = pd.DataFrame({"x": [0.0, 1.0, 2.0, 3.0], "y": [1.0, 3.0, 5.0, 7.0]})
        >>> rule = rx.NLS("y ~ a + b * x", bounds={"a": (-5, 5), "b": (-5, 5)}).fit(df).fitted
        >>> rule.predict(pd.DataFrame({"x": [4.0, 5.0]})).round(6)
        array([ 9., 11.])
        """
        if self.columns is None and not isinstance(X, pd.DataFrame):
            raise DataError("this rule was fitted without column names; predict on a DataFrame")
        return self.model.values(self.model._design(X, self.columns or ()), self.theta)

    def __repr__(self) -> str:
        est = ", ".join(f"{k}={v:.4g}" for k, v in self.params.items())
        return f"<{self.model.label} fit: {est}; ssr={self.ssr:.4g}>"


class NLSEstimator:
    """An :class:`NLS` model with data: ``fit(cov_type=..., groups=...)`` → :class:`NLSResults`.

    Parameters
    ----------
    model : NLS
    data : DataFrame
        Holds the response and the model's columns (rows with missing values are refused).

    Examples
    --------
    >>> import pandas as pd, restrictiveness as rx
    >>> df = pd.DataFrame({"x": [0.0, 1.0, 2.0, 3.0], "y": [1.0, 3.0, 5.0, 7.0]})
    >>> est = rx.NLS.from_formula("y ~ a + b * x", df, bounds={"a": (-5, 5), "b": (-5, 5)})
    >>> type(est).__name__, est.nobs
    ('NLSEstimator', 4)
    """

    def __init__(self, model: NLS, data: pd.DataFrame) -> None:
        if not isinstance(data, pd.DataFrame):
            raise DataError("NLS estimation takes a pandas DataFrame")
        if model.response is None:
            raise ConfigurationError("a function model needs response='column' for "
                                     "estimation on data")
        if model.response not in data.columns:
            raise FormulaError(f"the response {model.response!r} is not a column of the data; "
                               f"columns are {list(data.columns)}")
        if model._formula is not None:  # a missing column was a bare KeyError below
            model._formula.check_columns(list(data.columns))
        used = [model.response, *(model.variables or ())]
        repeated_columns(data, used, "NLS estimation")
        if data[used].isna().any().any():
            raise DataError(f"the data contain missing values in {used}; drop or impute them "
                            "first")
        for c in used:
            numeric_column(data[c], "NLS estimation")
        self.model, self.data = model, data
        self.endog = data[model.response].to_numpy(dtype=float)
        # a function model gets the other columns: with the response among them, f(data, a) =
        # a * data["y"] fitted it exactly (R² = 1), silently; formulas refuse it by name
        covariates = data.drop(columns=model.response) if model._formula is None else data
        self.design = model._design(covariates, list(covariates.columns))

    @property
    def nobs(self) -> int:
        """Number of observations."""
        return int(self.endog.shape[0])

    def fit(self, cov_type: Literal["nonrobust", "HC1", "cluster"] = "nonrobust",
            groups: str | np.ndarray | Sequence | None = None) -> NLSResults:
        """Estimate by least squares and compute standard errors.

        Parameters
        ----------
        cov_type : {"nonrobust", "HC1", "cluster"}
            See :mod:`restrictiveness.procedures.estimation`.
        groups : str or array_like, optional
            Cluster identifiers (a column name or one per observation) for ``"cluster"``; a
            :class:`pandas.Series` is aligned with the data's rows by index label, not position.

        Returns
        -------
        NLSResults
            Estimates, standard errors and the statsmodels-style summary.

        Examples
        --------
        >>> import pandas as pd, restrictiveness as rx
        >>> df = pd.DataFrame({"x": [0.0, 1.0, 2.0, 3.0], "y": [1.0, 3.0, 5.0, 7.0]})
        >>> est = rx.NLS.from_formula("y ~ a + b * x", df, bounds={"a": (-5, 5), "b": (-5, 5)})
        >>> est.fit(cov_type="HC1").params.round(6).tolist()
        [1.0, 2.0]
        """
        cov_type, codes = cluster_codes(cov_type, groups, self.nobs, self.data)
        k = len(self.model.params)
        if self.nobs <= k:
            raise DataError(f"estimation needs more observations ({self.nobs}) than parameters "
                            f"({k}) to compute standard errors")
        fitted = self.model.fit_arrays(self.design, self.endog)
        return NLSResults(self, fitted, cov_type, codes)


class NLSResults(LeastSquaresResults):
    """Results of an NLS estimation on data (:meth:`NLS.from_formula`).

    Inference as in :class:`~restrictiveness.procedures.estimation.LeastSquaresResults`:
    Student-t with N − k degrees of freedom (G − 1 with clusters).

    Parameters
    ----------
    model : NLSEstimator
        The model and data.
    fitted : NLSFitted
        The least-squares fit.
    cov_type : {"nonrobust", "HC1", "cluster"}
        Covariance of the estimates.
    codes : ndarray or None
        Cluster codes, one per observation (``"cluster"`` only).

    Attributes
    ----------
    model : NLSEstimator
    fitted : NLSFitted
        The fitted rule; ``fitted.info`` records the search.
    params, bse, tvalues, pvalues : Series
    converged : bool
        Whether the winning refinement met a convergence criterion.

    Examples
    --------
    >>> import numpy as np, pandas as pd
    >>> x = np.linspace(0, 3, 40)
    >>> df = pd.DataFrame({"x": x, "y": 2 * np.exp(-0.7 * x) + 0.01 * np.cos(9 * x)})
    >>> res = NLS.from_formula("y ~ a * exp(-b * x)", df,
    ...                        bounds={"a": (0, 10), "b": (0, 5)}).fit(cov_type="HC1")
    >>> res.params.round(3).tolist(), res.bse.round(4).tolist(), res.converged
    ([2.001, 0.7], [0.0034, 0.0019], True)
    """

    def __init__(self, model: NLSEstimator, fitted: NLSFitted, cov_type: str,
                 codes: np.ndarray | None) -> None:
        self.model, self.fitted = model, fitted
        nls = model.model
        f, J = nls.values(model.design, fitted.theta, jacobian=True)
        self._title = f"{nls.label} Estimation Results"
        self._set_fit(J, model.endog, f, nls.params, cov_type, codes, fitted.info["at_bound"])
        self.params = pd.Series(fitted.theta, index=list(nls.params), name="params")
        self.converged = bool(fitted.info["converged"])

    def predict(self, exog: pd.DataFrame | None = None) -> np.ndarray:
        """Predictions on new data, or the fitted values.

        Parameters
        ----------
        exog : DataFrame, optional
            New data with the model's columns (default: the fitted values).

        Returns
        -------
        ndarray
            One prediction per row.

        Examples
        --------
        >>> import numpy as np, pandas as pd
        >>> x = np.linspace(0, 3, 40)
        >>> df = pd.DataFrame({"x": x, "y": 2 * np.exp(-0.7 * x) + 0.01 * np.cos(9 * x)})
        >>> res = NLS.from_formula("y ~ a * exp(-b * x)", df,
        ...                        bounds={"a": (0, 10), "b": (0, 5)}).fit()
        >>> res.predict(pd.DataFrame({"x": [0.0, 1.0]})).round(4)
        array([2.0012, 0.9935])
        >>> bool(np.array_equal(res.predict(), res.fittedvalues))
        True
        """
        if exog is None:
            return self.fittedvalues
        return self.fitted.predict(exog)

    def _summary_model(self) -> list[tuple[str, str]]:
        nls = self.model.model
        return [("Model:", nls.label), ("Dep. Variable:", nls.response or ""),
                ("Method:", "Least Squares")]

    def _summary_notes(self) -> list[str]:
        nls, info = self.model.model, self.fitted.info
        what = nls.formula if nls.formula is not None else \
            f"function {getattr(nls.function, '__qualname__', '?')}"
        box = ", ".join(f"{q} in [{lo:g}, {hi:g}]" for q, (lo, hi) in nls.bounds.items())
        return [f"Model: {what}; bounds {box}.",
                f"Fit: {len(info['starts'])} refinements from {info['screened']} screening "
                f"points, {info['evaluations']} evaluations; "
                + ("converged" if self.converged else "NOT converged") + f" ({info['status']})."]
