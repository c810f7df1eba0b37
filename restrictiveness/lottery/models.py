"""Economic models of certainty equivalents for binary lotteries: the RDU / CPT family (SPEC §6).

A binary lottery ``x = (z_hi, z_lo, p)`` pays ``z_hi`` with probability ``p`` and ``z_lo``
otherwise (prizes normalised to [0, 1]). Rank-dependent utility predicts its certainty equivalent

    f(x) = u⁻¹( w(p) u(z_hi) + (1 − w(p)) u(z_lo) ),

with a utility ``u`` (power ``z^α``; shifted power ``(z + s)^α`` as an extra) and a probability
weighting ``w`` (the two-parameter odds form ``δp^γ / (δp^γ + (1 − p)^γ)``; Prelec's
``exp(−δ(−log p)^γ)`` as an extra; ``w(p) = p`` for expected utility). Every model here is a
:class:`~restrictiveness.procedures.Procedure` fitted by bounded nonlinear least squares on the
training labels (grid → best grid-local minima → bounded Levenberg–Marquardt, in
:mod:`._rdu_nb`), and also a statsmodels-like estimator on real data through ``from_formula``.

Parameters not declared free are fixed at 1, the expected-value values (α = γ = δ = 1).
"""

from __future__ import annotations

import numbers
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass
from typing import Any, ClassVar, overload

import numpy as np
import pandas as pd

from ..engine.protocol import Fitted, Procedure
from ..shared.checks import is_positive, keywords_of, known_keywords, repeated, whole_number
from ..shared.exceptions import ConfigurationError, DataError
from ..shared.formula import check_study_columns, parse_formula
from ..shared.sample import Sample
from . import _rdu_nb
from .estimation import LotteryNLS, LotteryNLSResults
from .lotteries import lottery_columns, lottery_matrix, warn_outside_prizes

__all__ = [
    "PowerUtility",
    "ShiftedPowerUtility",
    "OddsWeighting",
    "PrelecWeighting",
    "LinearWeighting",
    "RDU",
    "CPT",
    "ExpectedUtility",
    "DisappointmentAversion",
    "ExpectedValue",
    "RDUFitted",
]

_ORDER = ("alpha", "gamma", "delta")  # internal parameter vector (α, γ, log δ)
_DEFAULT_BOUNDS = {"alpha": (0.01, 1.0), "gamma": (0.01, 1.0), "delta": (0.01, 30.0)}
# interior grid fractions of a bounded interval (the bounds themselves are grid points too)
_FRACTIONS = np.array([0.0, 0.05, 0.1, 0.2, 0.35, 0.5, 0.65, 0.8, 1.0])


# ---------------------------------------------------------------------------------------------
# components
# ---------------------------------------------------------------------------------------------

@dataclass(frozen=True)
class PowerUtility:
    """Power utility ``u(z) = z^α`` (α = 1: risk neutral).

    Examples
    --------
    >>> PowerUtility()
    PowerUtility()
    """

    parameters: ClassVar[tuple[str, ...]] = ("alpha",)
    name: ClassVar[str] = "power"

    @property
    def shift(self) -> float:
        """The utility shift ``s`` of ``(z + s)^α`` (0 here)."""
        return 0.0


@dataclass(frozen=True)
class ShiftedPowerUtility:
    """Shifted power utility ``u(z) = (z + s)^α`` with a fixed shift ``s > 0``.

    The shift keeps marginal utility finite at ``z = 0``; ``u⁻¹(U) = U^{1/α} − s``.

    Parameters
    ----------
    shift : float
        The shift ``s`` (positive, in prize units).

    Examples
    --------
    >>> ShiftedPowerUtility(0.05).shift
    0.05
    """

    shift: float = 0.05
    parameters: ClassVar[tuple[str, ...]] = ("alpha",)
    name: ClassVar[str] = "shifted power"

    def __post_init__(self) -> None:
        if not is_positive(self.shift):  # "0.1" was a TypeError from numpy, True a shift of 1
            raise ConfigurationError(f"shift must be a positive number, got {self.shift!r}")


@dataclass(frozen=True)
class OddsWeighting:
    """Two-parameter odds (linear-in-log-odds) weighting ``w(p) = δp^γ / (δp^γ + (1 − p)^γ)``.

    γ < 1 gives the inverse-S shape; δ < 1 pessimism (CEs lowered), δ > 1 optimism.

    Examples
    --------
    >>> OddsWeighting().parameters
    ('gamma', 'delta')
    """

    parameters: ClassVar[tuple[str, ...]] = ("gamma", "delta")
    name: ClassVar[str] = "odds"
    kind: ClassVar[int] = _rdu_nb.WEIGHT_ODDS


@dataclass(frozen=True)
class PrelecWeighting:
    """Two-parameter Prelec weighting ``w(p) = exp(−δ(−log p)^γ)`` (γ = δ = 1: ``w(p) = p``).

    Examples
    --------
    >>> PrelecWeighting().name
    'prelec'
    """

    parameters: ClassVar[tuple[str, ...]] = ("gamma", "delta")
    name: ClassVar[str] = "prelec"
    kind: ClassVar[int] = _rdu_nb.WEIGHT_PRELEC


@dataclass(frozen=True)
class LinearWeighting:
    """No probability weighting, ``w(p) = p`` (expected utility).

    Examples
    --------
    >>> LinearWeighting().parameters
    ()
    """

    parameters: ClassVar[tuple[str, ...]] = ()
    name: ClassVar[str] = "linear"
    kind: ClassVar[int] = _rdu_nb.WEIGHT_LINEAR


# ---------------------------------------------------------------------------------------------
# fitted rule
# ---------------------------------------------------------------------------------------------

class RDUFitted(Fitted):
    """A fitted RDU-family rule.

    Attributes
    ----------
    params : dict
        Estimates of the free parameters on their reported scale (e.g. δ, or η for DA).
    theta : ndarray
        The full internal vector ``(α, γ, log δ)`` (fixed entries included).
    ssr : float
        Sum of squared residuals at the estimate.
    info : dict
        JSON-serialisable record: ``params``, ``ssr``, ``at_bound`` (free parameters on a
        bound) and ``starts`` (one ``[α, γ, δ, ssr]`` per refinement).
    """

    def __init__(self, model: RDU, theta: np.ndarray, ssr: float, starts: np.ndarray,
                 columns: Sequence[str] | None, names: Sequence[str]) -> None:
        self.model, self.theta, self.ssr = model, np.asarray(theta, dtype=float), float(ssr)
        self.columns = None if columns is None else tuple(columns)
        self.names = tuple(names)
        self.params = model._reported(self.theta)
        self.info = {
            "params": {k: float(v) for k, v in self.params.items()},
            "ssr": self.ssr,
            "at_bound": model._at_bound(self.theta),
            "starts": [[float(r[0]), float(r[1]), float(np.exp(r[2])), float(r[3])]
                       for r in np.asarray(starts)],
        }

    def predict(self, X: np.ndarray) -> np.ndarray:
        """Certainty equivalents at lotteries ``X`` (rows; columns as in the training sample)."""
        Z = lottery_matrix(X, self.columns, self.names, self.model.utility.shift)
        return _rdu_nb.rdu_values(self.theta, Z, self.model.utility.shift,
                                  self.model.weighting.kind)[0]

    def __repr__(self) -> str:
        est = ", ".join(f"{k}={v:.4g}" for k, v in self.params.items())
        return f"<{self.model.label} fit: {est}; ssr={self.ssr:.4g}>"


# ---------------------------------------------------------------------------------------------
# procedures
# ---------------------------------------------------------------------------------------------

def _real(value: object) -> bool:
    """A real number, not a bool or a string (bounds and grid values)."""
    return isinstance(value, numbers.Real) and not isinstance(value, bool)


def _names(free: object) -> tuple[str, ...]:
    """The parameter names ``free`` lists; a string, a non-iterable or a name given twice is
    refused (a repeat was dropped silently, ``3`` was a bare TypeError)."""
    if isinstance(free, str) or not isinstance(free, Iterable):
        raise ConfigurationError(f"free must be a sequence of parameter names such as "
                                 f"('alpha',), got {free!r}")
    names = tuple(free)
    twice = sorted(repeated(names))
    if twice:
        raise ConfigurationError(f"free names {twice} more than once")
    return names


class _LotteryProcedure(Procedure):
    """A procedure that reads the three lottery columns its formula names (by default the
    columns ``z_hi``, ``z_lo`` and ``p``)."""

    formula: str | None = None

    def validate(self, columns: Sequence[str], response: str) -> None:
        """Check the lottery columns (and a formula's response) against a study's before any fit.

        Without this a name the study lacks failed every fit and left only the baseline's
        predictions (r̂ = 1, with a warning).

        Parameters
        ----------
        columns : sequence of str
            The study's covariate names.
        response : str
            The study's response name.

        Raises
        ------
        FormulaError
            A column the model reads, or the formula's response, is not the study's.

        Examples
        --------
        >>> CPT().validate(["z_hi", "z_lo", "p"], "ce")  # passes silently
        >>> CPT(formula="ce ~ z_hi + z_lo + prob").validate(["z_hi", "z_lo", "p"], "ce")
        ... # doctest: +ELLIPSIS, +NORMALIZE_WHITESPACE
        Traceback (most recent call last):
        ...
        restrictiveness.shared.exceptions.FormulaError: formula 'ce ~ z_hi + z_lo + prob' names ...
        """
        check_study_columns(self.formula, columns, response, uses=lottery_columns(self.formula))


class RDU(_LotteryProcedure):
    """Rank-dependent utility with pluggable utility and probability weighting, fitted by NLS.

    The fit minimises the sum of squared residuals over the free parameters within their bounds:
    a coarse grid (bounds included), bounded Levenberg–Marquardt from the ``n_starts`` best
    grid-local minima and from the best grid point on each face of the parameter box (analytic
    Jacobian, exact active bounds), keep the best. δ is searched on the log scale.

    Parameters
    ----------
    utility : PowerUtility or ShiftedPowerUtility
        Utility over prizes.
    weighting : OddsWeighting, PrelecWeighting or LinearWeighting
        Probability weighting.
    free : sequence of str, optional
        Parameters to estimate, among the utility's and weighting's (default: all of them);
        the others are fixed at 1.
    bounds : mapping, optional
        ``{name: (low, high)}`` overriding the defaults α, γ ∈ [0.01, 1], δ ∈ [0.01, 30]
        for free parameters (bounds or a grid for a parameter fixed at 1 are refused); α and δ
        must stay positive and γ nonnegative.
    formula : str, optional
        Selects the covariates playing ``(z_hi, z_lo, p)`` in a study's samples, in order
        (default: the columns named ``z_hi``, ``z_lo``, ``p``); a column named like one role in
        another's position (``"ce ~ z_lo + z_hi + p"``) is refused.
    n_starts : int
        Number of grid-local minima refined (the best grid point of each face of the parameter
        box is refined as well).
    grid : mapping, optional
        ``{name: values}`` overriding the coarse grid of a free parameter (natural scale).
    label : str, optional
        Name in results.

    Examples
    --------
    >>> import numpy as np
    >>> from restrictiveness import Sample
    >>> X = np.array([[1.0, 0.0, 0.5], [0.5, 0.1, 0.2], [0.8, 0.2, 0.9], [0.3, 0.3, 0.4]])
    >>> m = RDU(weighting=PrelecWeighting(), free=("alpha", "gamma"))
    >>> y = 0.5 * X[:, 0] + 0.5 * X[:, 1]
    >>> fit = m.fit(Sample(X, y, ("z_hi", "z_lo", "p"), "ce"), np.random.default_rng(0))
    >>> sorted(fit.params)
    ['alpha', 'gamma']
    """

    _reported_names: ClassVar[dict[str, str]] = {}

    def __init__(self, utility: PowerUtility | ShiftedPowerUtility | None = None,
                 weighting: OddsWeighting | PrelecWeighting | LinearWeighting | None = None,
                 free: Sequence[str] | None = None,
                 bounds: Mapping[str, tuple[float, float]] | None = None,
                 formula: str | None = None, n_starts: int = 4,
                 grid: Mapping[str, Sequence[float]] | None = None,
                 label: str | None = None) -> None:
        self.utility = utility if utility is not None else PowerUtility()
        self.weighting = weighting if weighting is not None else OddsWeighting()
        if not isinstance(self.utility, PowerUtility | ShiftedPowerUtility) or not isinstance(
                self.weighting, OddsWeighting | PrelecWeighting | LinearWeighting):
            raise ConfigurationError(
                f"utility must be rx.lottery.PowerUtility() or ShiftedPowerUtility(...) and "
                f"weighting OddsWeighting(), PrelecWeighting() or LinearWeighting(); got "
                f"{self.utility!r} and {self.weighting!r}")
        # the kernel computes the three weightings by their codes (any other code was Prelec's
        # formula) and the parameters (α, γ, δ) only (another name was dropped from free)
        base = next(c for c in (OddsWeighting, PrelecWeighting, LinearWeighting)
                    if isinstance(self.weighting, c))
        for part, kind, parameters in (
                (self.weighting, base.kind, base.parameters),
                (self.utility, getattr(self.utility, "kind", None), ("alpha",))):
            if getattr(part, "kind", None) != kind or part.parameters != parameters:
                raise ConfigurationError(
                    f"{type(part).__name__} changes its base class's formula code or parameters "
                    f"(to {getattr(part, 'kind', None)!r}, {part.parameters!r}); the kernel "
                    "computes only the built-in utilities and weightings, so it would fit "
                    "another model")
        known = self.utility.parameters + self.weighting.parameters
        if free is None:
            free = known
        free = _names(free)
        unknown = [q for q in free if q not in known]
        if unknown:
            raise ConfigurationError(f"free names unknown parameter(s) {unknown}; this model has "
                                     f"{list(known)}")
        self.free = tuple(q for q in _ORDER if q in free)  # canonical order
        self.bounds = dict(_DEFAULT_BOUNDS)
        for q, pair in dict(bounds or {}).items():
            if q not in _ORDER:
                raise ConfigurationError(f"bounds names unknown parameter {q!r}")
            self._check_free(q, "bounds")
            values = tuple(pair) if isinstance(pair, Iterable) and not isinstance(pair, str) \
                else ()
            if len(values) != 2 or not all(_real(v) for v in values):
                # 0.5 or ("0", "1") were TypeErrors, (True, 2) the bounds (1, 2)
                raise ConfigurationError(f"bounds for {q!r} must be a pair (low, high) of "
                                         f"numbers, got {pair!r}")
            lo, hi = values
            if not (np.isfinite(lo) and np.isfinite(hi) and lo < hi):
                raise ConfigurationError(f"bounds for {q!r} must be finite with low < high")
            if q in ("alpha", "delta") and lo <= 0:
                raise ConfigurationError(f"bounds for {q!r} must be positive")
            if q == "gamma" and lo < 0:  # γ < 0 makes w(p) decrease in p: no weighting
                raise ConfigurationError(f"bounds for 'gamma' must be nonnegative (γ < 0 makes "
                                         f"the probability weighting decrease in p), got {pair!r}")
            self.bounds[q] = (float(lo), float(hi))
        lottery_columns(formula)  # validates
        self.formula = formula
        self.n_starts = whole_number(n_starts, "n_starts", minimum=1)  # int() took 2.5 as 2
        self.grid = {}
        for q, vals in dict(grid or {}).items():
            if q in _ORDER:
                self._check_free(q, "grid")
            if (q not in _ORDER or isinstance(vals, str) or not isinstance(vals, Iterable)
                    or not all(_real(v) and np.isfinite(v) for v in vals)):
                # a NaN passed the range check below and left the fit at ssr = inf
                raise ConfigurationError(f"grid for {q!r} must be finite numbers within its "
                                         f"bounds, got {vals!r}")
            self.grid[q] = tuple(float(v) for v in vals)
            lo, hi = self.bounds[q]
            if not self.grid[q] or min(self.grid[q]) < lo or max(self.grid[q]) > hi:
                raise ConfigurationError(f"grid for {self._reported_label(q)!r} must be "
                                         f"nonempty values within its bounds "
                                         f"{self._reported_bounds(q)}")
        if label is not None:
            self.label = label
        elif type(self) is RDU:
            self.label = (f"RDU({self.utility.name}, {self.weighting.name}; "
                          f"{','.join(self.free)})")

    def _check_free(self, q: str, option: str) -> None:
        """Refuse an option for a parameter the fit does not move (it was ignored silently)."""
        if q not in self.free:
            raise ConfigurationError(
                f"{option} for {self._reported_label(q)!r}, which this model fixes at 1 (its "
                f"free parameters: {list(self.param_names)}); it would be ignored")

    # -- kernel inputs ------------------------------------------------------------------------
    def _kernel_setup(self):
        lo = np.array([self.bounds["alpha"][0], self.bounds["gamma"][0],
                       np.log(self.bounds["delta"][0])])
        hi = np.array([self.bounds["alpha"][1], self.bounds["gamma"][1],
                       np.log(self.bounds["delta"][1])])
        free = np.array([q in self.free for q in _ORDER], dtype=np.int64)
        grids = []
        for a, q in enumerate(_ORDER):
            if not free[a]:
                grids.append(np.zeros(1) if q == "delta" else np.ones(1))
            elif q in self.grid:
                v = np.asarray(self.grid[q], dtype=float)
                grids.append(np.log(v) if q == "delta" else v)
            else:
                grids.append(lo[a] + (hi[a] - lo[a]) * _FRACTIONS
                             if q != "delta" else np.linspace(lo[a], hi[a], 11))
        return lo, hi, free, [np.ascontiguousarray(g, dtype=float) for g in grids]

    def _names(self) -> tuple[str, str, str]:
        return lottery_columns(self.formula)

    # -- reporting scale ----------------------------------------------------------------------
    def _reported(self, theta: np.ndarray) -> dict[str, float]:
        """Free parameters on their reported scale (δ = exp(log δ))."""
        natural = {"alpha": theta[0], "gamma": theta[1], "delta": self._delta(theta[2])}
        return {q: float(natural[q]) for q in self.free}

    def _delta(self, ell: float) -> float:
        """δ from log δ, exactly the bound when log δ sits on it (exp∘log may miss by an ulp)."""
        lo, hi = self.bounds["delta"]
        if ell <= np.log(lo):
            return lo
        return hi if ell >= np.log(hi) else float(np.exp(ell))

    def _reported_jacobian(self, theta: np.ndarray) -> np.ndarray:
        """``∂(reported)/∂(internal free)``: diagonal, δ for log δ."""
        d = {"alpha": 1.0, "gamma": 1.0, "delta": float(np.exp(theta[2]))}
        return np.diag([d[q] for q in self.free])

    def _at_bound(self, theta: np.ndarray) -> list[str]:
        lo, hi, free, _ = self._kernel_setup()
        return [self._reported_label(q) for a, q in enumerate(_ORDER)
                if free[a] and (theta[a] <= lo[a] or theta[a] >= hi[a])]

    def _reported_label(self, q: str) -> str:
        return self._reported_names.get(q, q)

    def _reported_bounds(self, q: str) -> str:
        """The bounds of ``q`` on its reported scale, for messages."""
        return "[{:g}, {:g}]".format(*self.bounds[q])

    @property
    def param_names(self) -> tuple[str, ...]:
        """Names of the estimated parameters, in reporting order."""
        return tuple(self._reported_label(q) for q in self.free)

    # -- fitting ------------------------------------------------------------------------------
    def fit_arrays(self, X: np.ndarray, y: np.ndarray,
                   columns: Sequence[str] | None = None,
                   rows: pd.Index | None = None) -> RDUFitted:
        """Least-squares fit to lotteries ``X`` and certainty equivalents ``y``.

        Parameters
        ----------
        X : ndarray
            ``(n, 3)`` lotteries ``(z_hi, z_lo, p)``, or named columns with ``columns``.
        y : ndarray
            ``(n,)`` certainty equivalents.
        columns : sequence of str, optional
            Names of the columns of ``X``.
        rows : Index, optional
            Labels of the rows, for errors and warnings (default: positions).

        Returns
        -------
        RDUFitted

        Warns
        -----
        UserWarning
            Certainty equivalents outside their lottery's prizes, which no model predicts
            (:func:`~restrictiveness.lottery.lotteries.warn_outside_prizes`).

        Examples
        --------
        >>> import numpy as np
        >>> X = np.array([[1.0, 0.0, 0.5], [0.6, 0.2, 0.3], [0.9, 0.1, 0.8]])
        >>> y = CPT(free=("alpha",)).fit_arrays(X, X[:, 2] * X[:, 0] + (1 - X[:, 2]) * X[:, 1])
        >>> round(y.params["alpha"], 6)
        1.0
        """
        names = self._names()
        Z = lottery_matrix(X, columns, names, self.utility.shift, rows)
        y = np.ascontiguousarray(y, dtype=float)
        if y.shape != (Z.shape[0],):
            raise DataError(f"y must have shape ({Z.shape[0]},), got {y.shape}")
        if not np.isfinite(y).all():
            raise DataError("y contains NaN or infinite values")
        if Z.shape[0] == 0:
            raise DataError("cannot fit to an empty sample")
        warn_outside_prizes(Z, y, rows)
        lo, hi, free, grids = self._kernel_setup()
        theta, ssr, starts = _rdu_nb.fit_rdu(Z, y, grids[0], grids[1], grids[2], lo, hi, free,
                                             float(self.utility.shift), self.weighting.kind,
                                             self.n_starts, 200, 1e-10)
        return RDUFitted(self, theta, ssr, starts, columns, names)

    # A Sample gives the fitted rule of the procedure protocol, a DataFrame estimation results.
    @overload
    def fit(self, sample: Sample, rng: np.random.Generator | None = None,
            **estimation: Any) -> RDUFitted: ...

    @overload
    def fit(self, sample: pd.DataFrame, rng: np.random.Generator | None = None,
            **estimation: Any) -> LotteryNLSResults: ...

    def fit(self, sample: Sample | pd.DataFrame, rng: np.random.Generator | None = None,
            **estimation: Any) -> RDUFitted | LotteryNLSResults:
        """Fit to a training sample (a procedure in studies), or estimate on a DataFrame.

        Parameters
        ----------
        sample : Sample or DataFrame
            A study's training sample; or data, which gives
            ``LotteryNLS.from_formula(formula, data, self).fit(**estimation)`` (the formula
            defaults to ``"ce ~ z_hi + z_lo + p"``).
        rng : Generator, optional
            Unused: the fit is deterministic.
        **estimation
            ``cov_type`` and ``groups`` for estimation on a DataFrame.

        Returns
        -------
        RDUFitted or LotteryNLSResults
            The fitted rule (a Sample), or estimation results with standard errors (a
            DataFrame).

        Examples
        --------
        Expected value is CPT with α = γ = δ = 1, so CPT(α) fitted to expected values finds
        α = 1:

        >>> import numpy as np, pandas as pd
        >>> from restrictiveness import Sample
        >>> X = np.array([[1.0, 0.0, 0.5], [0.5, 0.1, 0.2], [0.8, 0.2, 0.9], [0.3, 0.3, 0.4]])
        >>> ev = X[:, 1] + (X[:, 0] - X[:, 1]) * X[:, 2]
        >>> fit = CPT(free=("alpha",)).fit(Sample(X, ev, ("z_hi", "z_lo", "p"), "ce"))
        >>> {k: round(v, 6) for k, v in fit.params.items()}
        {'alpha': 1.0}
        >>> df = pd.DataFrame({"ce": [0.4, 0.2, 0.7, 0.3], "z_hi": [1.0, 0.5, 0.9, 0.6],
        ...                    "z_lo": [0.0, 0.1, 0.2, 0.1], "p": [0.5, 0.3, 0.8, 0.4]})
        >>> res = CPT(free=("alpha",)).fit(df, cov_type="HC1")
        >>> type(res).__name__, res.params.round(3).to_dict()
        ('LotteryNLSResults', {'alpha': 0.752})
        """
        if isinstance(sample, pd.DataFrame):
            known_keywords(estimation, keywords_of(LotteryNLS.fit, skip=("self",)),
                           f"{type(self).__name__}.fit")
            formula = self.formula or "ce ~ z_hi + z_lo + p"
            return LotteryNLS.from_formula(formula, sample, self).fit(**estimation)
        if estimation:
            raise ConfigurationError(f"{sorted(estimation)} apply to estimation on a DataFrame")
        if self.formula is not None:
            parse_formula(self.formula).check_response(sample.response)
        return self.fit_arrays(sample.X, sample.y, sample.columns)

    @classmethod
    def from_formula(cls, formula: str, data: pd.DataFrame, **kwargs) -> LotteryNLS:
        """Estimator on real data: ``CPT.from_formula("ce ~ z_hi + z_lo + p", df).fit()``.

        Parameters
        ----------
        formula : str
            ``"response ~ z_hi + z_lo + p"``: the three covariates play ``(z_hi, z_lo, p)``, in
            order.
        data : DataFrame
            The responses and lotteries.
        **kwargs
            Passed to the model's constructor (e.g. ``free=("alpha", "delta")``).

        Returns
        -------
        LotteryNLS
            The estimator; ``fit()`` gives :class:`LotteryNLSResults`.

        Examples
        --------
        >>> import pandas as pd
        >>> df = pd.DataFrame({"ce": [0.4, 0.2, 0.7, 0.3], "z_hi": [1.0, 0.5, 0.9, 0.6],
        ...                    "z_lo": [0.0, 0.1, 0.2, 0.1], "p": [0.5, 0.3, 0.8, 0.4]})
        >>> res = CPT.from_formula("ce ~ z_hi + z_lo + p", df, free=("alpha",)).fit()
        >>> list(res.params.index)
        ['alpha']
        """
        return LotteryNLS.from_formula(formula, data, cls(**kwargs))


class CPT(RDU):
    """Cumulative prospect theory for gains: power utility and odds weighting (SPEC §6).

    ``f(x) = u⁻¹(w(p) u(z_hi) + (1 − w(p)) u(z_lo))``, ``u(z) = z^α``,
    ``w(p) = δp^γ / (δp^γ + (1 − p)^γ)``; α, γ ∈ [0.01, 1], δ ∈ [0.01, 30]; parameters not in
    ``free`` are fixed at 1. The seven classes of the paper are the nonempty subsets of
    ``("alpha", "gamma", "delta")``, labelled e.g. ``CPT(alpha,delta)``.

    Parameters
    ----------
    free : sequence of str
        Nonempty subset of ``("alpha", "gamma", "delta")``.
    **options
        ``formula``, ``n_starts``, ``grid``, ``label`` as in :class:`RDU`.

    Examples
    --------
    >>> import numpy as np
    >>> X = np.array([[1.0, 0.0, 0.5], [0.6, 0.2, 0.3], [0.9, 0.1, 0.8], [0.5, 0.0, 0.1]])
    >>> y = 0.9 * X[:, 0]  # any labels
    >>> CPT(free=("gamma", "delta")).label
    'CPT(gamma,delta)'
    >>> sorted(CPT().fit_arrays(X, y).params)
    ['alpha', 'delta', 'gamma']
    """

    def __init__(self, free: Sequence[str] = ("alpha", "gamma", "delta"), **options) -> None:
        if "utility" in options or "weighting" in options or "bounds" in options:
            raise ConfigurationError("CPT fixes utility, weighting and bounds; use RDU to "
                                     "change them")
        if not _names(free):
            raise ConfigurationError("free must be a nonempty sequence drawn from "
                                     "('alpha', 'gamma', 'delta'); ExpectedValue is the model "
                                     "with none")
        known_keywords(options, keywords_of(RDU, skip=("utility", "weighting", "free", "bounds")),
                       "CPT")
        super().__init__(PowerUtility(), OddsWeighting(), free=free, **options)
        if "label" not in options or options["label"] is None:
            self.label = f"CPT({','.join(self.free)})"


class ExpectedUtility(RDU):
    """Expected utility: ``w(p) = p`` and a utility curvature α ∈ [0.01, 1].

    With power utility it predicts exactly as ``CPT(alpha)``; with a shifted power utility
    it is the shifted model.

    Parameters
    ----------
    utility : PowerUtility or ShiftedPowerUtility
        Utility over prizes.
    **options
        ``formula``, ``n_starts``, ``grid``, ``bounds``, ``label`` as in :class:`RDU`.

    Examples
    --------
    >>> ExpectedUtility().label
    'EU'
    """

    def __init__(self, utility: PowerUtility | ShiftedPowerUtility | None = None,
                 **options) -> None:
        known_keywords(options, keywords_of(RDU, skip=("utility", "weighting", "free")),
                       "ExpectedUtility")
        options.setdefault("label", "EU")
        super().__init__(utility, LinearWeighting(), free=("alpha",), **options)


class DisappointmentAversion(RDU):
    """Gul's disappointment aversion, as the reparameterisation of CPT it is for binary lotteries.

    For binary lotteries DA(α, η) ≡ CPT(α, δ) and DA(η) ≡ CPT(δ) (γ = 1) with
    ``δ = 1 / (1 + η)``; η ∈ [−29/30, 99] corresponds to δ ∈ [0.01, 30]. The fit is the CPT
    fit; ``params`` report η.

    Parameters
    ----------
    free : sequence of str
        ``("alpha", "eta")`` or ``("eta",)`` (``("alpha",)`` is expected utility).
    **options
        ``formula``, ``n_starts``, ``grid``, ``label`` as in :class:`RDU`.

    Examples
    --------
    >>> DisappointmentAversion().label
    'DA(alpha,eta)'
    >>> DisappointmentAversion(free=("eta",)).param_names
    ('eta',)
    """

    _reported_names: ClassVar[dict[str, str]] = {"delta": "eta"}

    def __init__(self, free: Sequence[str] = ("alpha", "eta"), **options) -> None:
        free = _names(free)
        if not free or any(q not in ("alpha", "eta") for q in free):
            raise ConfigurationError(f"free must be a nonempty subset of ('alpha', 'eta'), "
                                     f"got {free!r}")
        for key in ("utility", "weighting", "bounds"):
            if key in options:
                raise ConfigurationError(f"DisappointmentAversion fixes {key}")
        known_keywords(options, keywords_of(RDU, skip=("utility", "weighting", "free", "bounds")),
                       "DisappointmentAversion")
        if "grid" in options and options["grid"] is not None and "eta" in options["grid"]:
            grid = dict(options["grid"])
            etas = grid.pop("eta")
            if any(not e > -1 for e in etas):
                raise ConfigurationError("grid for 'eta' must have values above -1")
            grid["delta"] = [_delta_of_eta(e) for e in etas]
            options["grid"] = grid
        cpt_free = tuple("delta" if q == "eta" else q for q in free)
        super().__init__(PowerUtility(), OddsWeighting(), free=cpt_free, **options)
        if options.get("label") is None:
            self.label = "DA(" + ",".join(q for q in ("alpha", "eta") if q in free) + ")"

    def _reported_bounds(self, q: str) -> str:
        if q != "delta":
            return super()._reported_bounds(q)
        lo, hi = self.bounds["delta"]
        return f"[{1.0 / hi - 1.0:g}, {1.0 / lo - 1.0:g}]"  # η = 1/δ − 1 reverses them

    def _reported(self, theta):
        natural = {"alpha": theta[0], "delta": 1.0 / self._delta(theta[2]) - 1.0}  # η
        return {self._reported_label(q): float(natural[q]) for q in self.free}

    def _reported_jacobian(self, theta):
        d = {"alpha": 1.0, "delta": -float(np.exp(-theta[2]))}  # dη/d log δ = −1/δ
        return np.diag([d[q] for q in self.free])


def _delta_of_eta(eta: float) -> float:
    """δ = 1 / (1 + η), exactly on a bound of δ where η is on its bound: the documented
    η = −29/30 gives 1 / (1 − 29/30) = 30.000000000000007 in floating point, beyond δ ≤ 30."""
    delta = 1.0 / (1.0 + eta)
    for bound in _DEFAULT_BOUNDS["delta"]:
        if abs(delta - bound) <= 1e-12 * bound:
            return bound
    return delta


#: The expected value needs no utility of a prize, so it takes losses too (``lottery_matrix``'s
#: ``shift``: prizes may go down to -inf); the utility models cannot (z^α of a loss).
_ANY_PRIZE = float("inf")


class _EVRule(Fitted):
    def __init__(self, columns, names):
        self.columns, self.names = columns, names
        self.info = {"params": {}}

    def predict(self, X):
        Z = lottery_matrix(X, self.columns, self.names, _ANY_PRIZE)
        return Z[:, 2] * Z[:, 0] + (1.0 - Z[:, 2]) * Z[:, 1]


class ExpectedValue(_LotteryProcedure):
    """The expected value ``p z_hi + (1 − p) z_lo``: no parameters; the lottery baseline.
    Unlike the utility models it takes losses (negative prizes) too.

    Parameters
    ----------
    formula : str, optional
        Selects the covariates playing ``(z_hi, z_lo, p)``, in order.

    Examples
    --------
    >>> import numpy as np
    >>> from restrictiveness import Sample
    >>> X = np.array([[1.0, 0.0, 0.25]])
    >>> ExpectedValue().fit(Sample(X, [0.3], ("z_hi", "z_lo", "p")), None).predict(X)
    array([0.25])
    """

    label = "EV"

    def __init__(self, formula: str | None = None) -> None:
        lottery_columns(formula)  # validates
        self.formula = formula

    def fit(self, sample: Sample | pd.DataFrame, rng: np.random.Generator | None = None
            ) -> Fitted:
        """The expected-value rule (nothing to estimate); validates the sample's or the
        DataFrame's lottery columns.

        Parameters
        ----------
        sample : Sample or DataFrame
            A study's training sample, or data with the formula's lottery columns.
        rng : Generator, optional
            Unused: there is nothing to fit.

        Returns
        -------
        Fitted
            ``predict(X)``: the expected value of each lottery of ``X`` (an array in the
            sample's columns, or a DataFrame).

        Examples
        --------
        >>> import pandas as pd
        >>> df = pd.DataFrame({"hi": [1.0, 0.5], "lo": [0.0, 0.1], "prob": [0.25, 0.5]})
        >>> ExpectedValue("ce ~ hi + lo + prob").fit(df).predict(df)
        array([0.25, 0.3 ])
        """
        names = lottery_columns(self.formula)
        if isinstance(sample, pd.DataFrame):
            lottery_matrix(sample, None, names, _ANY_PRIZE)
            return _EVRule(None, names)
        # validate now, not at predict time
        lottery_matrix(sample.X, sample.columns, names, _ANY_PRIZE)
        return _EVRule(tuple(sample.columns), names)
