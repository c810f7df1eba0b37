"""Structural demand models as procedures: common-intercept logit, MNL, nested logit, mixed logit.

A market is an array ``(J, C)`` of product characteristics with named columns (by default
``("prices", "sugar", "mushy")`` in raw units); a sample of ``n`` markets is ``X (n, J, C)`` with
inside shares ``y (n, J)``. Every model's utility is linear in ``w_j``, the formula's design row of
product ``j`` (``(1, p_j, s_j, m_j)`` for the default formula), and the outside good's utility
is 0 (SPEC §7):

* :class:`Logit` — the baseline ``b_j = e^γ / (1 + J e^γ)`` for every product; its least-squares
  fit is the mean inside share and its elasticities are 0.
* :class:`MNL` — ``δ_j = w_jᵀβ``, ``S_j = e^{δ_j} / (1 + Σ_k e^{δ_k})``.
* :class:`NestedLogit` — two nests by a 0/1 column, ``ρ_0, ρ_1 ∈ [0, 0.99]``,
  ``D_m = Σ_{k∈m} exp(δ_k/(1−ρ_m))``,
  ``S_j = exp(δ_j/(1−ρ_{m_j})) D_{m_j}^{−ρ_{m_j}} / (1 + Σ_m D_m^{1−ρ_m})`` (an empty nest adds 0).
* :class:`MixedLogit` — ``b ~ N(β, LLᵀ)`` on the random terms, integrated over 512 antithetic
  nodes (256 scrambled-Sobol normals and their negatives, fixed seed).

All are fitted by bounded nonlinear least squares on the inside shares of the training markets
(``β ∈ [−50, 50]``, Cholesky diagonal ``[0, 100]``, off-diagonal ``[−100, 100]``) with analytic
Jacobians, from several starts, by the compiled bounded Levenberg–Marquardt of
:mod:`restrictiveness.shared._lsq_nb` (no Python per iteration; the mixed logit's steps in the
slow phase use the exact second-order term of its objective, computed with the Jacobian;
scipy's ``trf``/``dogbox`` remain
as ``method=`` references), with at most ``max_nfev = 400`` residual evaluations for the whole
fit (``budget="fit"``; Jacobian evaluations are not counted, as in scipy); the lowest objective
wins. Starts: the baseline (``β = (γ, 0, …)``) and the Berry log-share regression (OLS of
``log(s_j/s_0)`` on ``w_j``); NL adds the fitted MNL with ``ρ = (0, 0)`` and ``(0.5, 0.5)``; MXL
starts from the fitted MNL means with ``L = 0.5·I``, and with ``L = 1.0·I`` when that start
does not converge (out of budget, or stalled: status 7) or ends no lower than MNL
(``MixedLogit(starts="both")``: always; with antithetic
nodes ``L = 0`` is a stationary point, so the baseline and Berry starts, which have ``L = 0``,
lead to the MNL fit; that fit with ``L = 0`` stays a candidate, so MXL never fits worse than MNL),
and from the reflected Cholesky column when a diagonal ends at its bound 0 (:class:`MixedLogit`).

Each fitted model predicts shares (``predict(X) -> (m, J)``) and analytic price elasticities
(``elasticities(X) -> (m, J, J)``, ``E_jk = ∂ log s_j / ∂ log p_k``).
"""

from __future__ import annotations

import functools
from collections.abc import Sequence
from typing import Any

import numpy as np
import scipy.stats

from ..engine.protocol import Fitted, Procedure
from ..shared._lsq_nb import BOUND_RTOL, CONVERGED, ROOT
from ..shared.checks import is_whole, repeated, whole_number
from ..shared.exceptions import ConfigurationError, DataError, FormulaError
from ..shared.formula import check_study_columns, parse_formula
from ..shared.sample import Sample
from . import _logit_nb
from ._nested_nb import nl_dlog_ddelta, nl_parts, nl_resjac, nl_shares, solve_nl
from .estimation import DemandModel
from .fitting import FOLLOWUP_GAIN, Problem, Solution, check_options, solve
from .markets import MARKET_COLUMNS, _nest_index

__all__ = ["MARKET_COLUMNS", "DEFAULT_FORMULA", "PAPER_MXL", "Logit", "MNL", "NestedLogit",
           "MixedLogit",
           "DemandFit", "market_design", "check_markets", "check_shares"]

DEFAULT_FORMULA = "shares ~ prices + sugar + mushy"
BETA_BOUND = 50.0
CHOL_BOUND = 100.0
RHO_MAX = 0.99
NODE_SEED = 20260207   # the integration nodes are part of the model: fixed across fits
DEFAULT_BUDGET = "fit"
#: The Cholesky diagonal of a reflected MXL start (``MixedLogit(reflect=True)``).
REFLECT_DIAGONAL = 0.01
_BUDGET_CHOICE = """``max_nfev = 400`` residual evaluations for the whole fit (the two
    starts and any reflected start together, ``budget="fit"``), as SPEC §7 reads ("at most 400
    objective evaluations") and as an independent implementation that reproduces the paper
    counted. With the compiled optimiser the choice hardly matters: on the same 100 demand systems
    at n = 50, 100 and 200 (``python benchmarks/bench_demand_budget.py -M 100``), 400 per start
    and running to convergence reached the same objective in all 300 fits and every fit
    converged (median 124–130 evaluations, at most 625, with a reflected start; measured with
    both starts always, ``starts="both"``, the default then); 400 per fit
    ran out of evaluations in 4 of the 300 fits (a fit out of budget keeps the best point it
    reached), two of which ended above the optimum, by 0.13% and 0.90%. r̂ for shares, own- and
    cross-price elasticities agreed to every printed digit across the three.
    ``budget="start"`` (400 for each start) and ``"converge"`` remain as options."""
#: The paper's mixed-logit fit as SPEC §7 describes it: scipy's ``dogbox`` with the analytic
#: Jacobian, at most 400 residual evaluations for the two starts together, no reflected starts
#: (``MixedLogit(**PAPER_MXL)``; what ``replicate demand`` uses for Tables 3–4 by default).
PAPER_MXL: dict[str, Any] = {"method": "dogbox", "budget": "fit", "reflect": False,
                             "starts": "both"}
#: ``MixedLogit(starts=...)``: the second start only when needed (default), or always.
MXL_STARTS = ("adaptive", "both")
_STARTS_CHOICE = """The fit starts from the fitted MNL means with ``L = 0.5·I``; the second
    start of SPEC §7's example, ``L = 1.0·I``, runs (under the same budget) only when the first
    does not converge (ends out of budget, or stalls away from a stationary point, status 7)
    or ends no lower than the MNL objective (``starts="adaptive"``, the default; under
    ``budget="fit"`` a first start out of budget has used the whole fit's 400 evaluations, so
    there it cannot run after one); ``starts="both"`` always runs
    both, as SPEC §7's example reads. The objective is not convex in ``L``, so either start can
    end in the lower local minimum; with the exact second-order term in the optimiser's slow
    phase (:mod:`restrictiveness.shared._lsq_nb`) the first start, followed by the reflected
    starts, reaches the two-start optimum: on the first 50 prior samples of seed 0 at n = 100
    (``OPENBLAS_NUM_THREADS=1 python benchmarks/bench_mxl.py --samples 50``, load 1.0) the
    adaptive fit took a median 0.19 s of CPU against 0.33 s (90th percentile 0.34 s against
    0.49 s; median 43 evaluations against 80) and ended within 1.6e-11 of the two-start fit in
    all 50; below scipy's dogbox from both starts with 400 evaluations each in all 50 (by
    2e-8 to 15%; dogbox 2.7 s, 14.5× slower), at the MNL objective in none. With the secant
    estimate of that term (before), the adaptive fit ended above dogbox's in 3 of the 50 (by up
    to 7.7e-4), and running both starts did not remove them all. At n = 50 and 200
    (12 samples each, ``--samples 12 --n 50``) it ended above the two-start fit in 2 (by up to
    2.4e-4) and 1 (1.3e-4), above dogbox in none (median 0.12 s and 0.43 s against dogbox's
    1.4 s and 4.9 s)."""
_PAPER_SETTING = """The package default converges to the least-squares optimum. The paper's
    Tables 3–4 most likely come from budget-limited fits: ``MixedLogit(**PAPER_MXL)`` (scipy's
    ``dogbox``, 400 evaluations for both starts together; the budget binds in every fit)
    reproduces them at n = 100 and the converged fit does not. On the CLI's draws at n = 100
    (M = 113, ``python benchmarks/bench_demand_paper_setting.py -n 100``), r̂ shares / own /
    cross: paper .140 / .310 / .416; budget-limited dogbox .154 / .278 / .395; converged
    .149 / .314 / .476 (from both starts, ``starts="both"``, the default then). The
    converged fit's objective is lower (by 3.4% in the median), but its price elasticities are
    further from the truth."""


# --------------------------------------------------------------------------- validation


def check_markets(X, columns: Sequence[str], name: str = "X", padded: bool = False) -> np.ndarray:
    """Validate a stack of markets ``(n, J, C)`` and return it as a float array.

    With ``padded=True`` (the logit-family models) markets may list fewer than ``J`` products:
    a market's absent products are rows of NaN in every column, after its products
    (:func:`present_products`); every market lists at least one product.

    Examples
    --------
    >>> check_markets(np.ones((2, 24, 3)), MARKET_COLUMNS).shape
    (2, 24, 3)
    """
    X = np.asarray(X, dtype=float)
    if X.ndim != 3 or X.shape[2] != len(columns):
        raise DataError(f"{name} must be markets of shape (n_markets, n_products, "
                        f"{len(columns)}) with columns {tuple(columns)}; got shape {X.shape}")
    if X.shape[0] == 0 or X.shape[1] == 0:
        raise DataError(f"{name} has no markets or no products (shape {X.shape})")
    if np.isfinite(X).all():
        return X
    if not padded:
        raise DataError(f"{name} contains NaN or infinite characteristics")
    absent = np.isnan(X).all(axis=2)
    if not np.isfinite(X[~absent]).all():
        raise DataError(f"{name} contains NaN or infinite characteristics (a product absent "
                        "from a market is a row of NaN in every column)")
    later = np.cumsum(~absent[:, ::-1], axis=1)[:, ::-1] > 0   # a present product follows
    if (absent & later).any():
        m = np.flatnonzero((absent & later).any(axis=1))[:5].tolist()
        raise DataError(f"{name}: the absent products of a market (rows of NaN) must come after "
                        f"its products; markets {m} have absent rows before present ones")
    if absent.all(axis=1).any():
        m = np.flatnonzero(absent.all(axis=1))[:5].tolist()
        raise DataError(f"{name}: markets {m} list no product (every row NaN)")
    return X


def present_products(X: np.ndarray) -> np.ndarray:
    """Which products of markets ``X (n, J, C)`` are present, ``(n, J)`` bool: markets with
    fewer products than ``J`` are padded with rows of NaN (:func:`check_markets`).

    Examples
    --------
    >>> X = np.ones((2, 3, 1)); X[1, 2] = np.nan
    >>> present_products(X).sum(axis=1).tolist()
    [3, 2]
    """
    return ~np.isnan(X).all(axis=2)


def check_shares(y, X: np.ndarray, name: str = "y") -> np.ndarray:
    """Validate inside shares ``(n, J)`` for markets ``X``: finite, nonnegative, sum below 1,
    and 0 for the absent products of padded markets.

    Examples
    --------
    >>> check_shares(np.full((2, 24), 0.02), np.ones((2, 24, 3))).shape
    (2, 24)
    """
    y = np.asarray(y, dtype=float)
    if y.shape != X.shape[:2]:
        raise DataError(f"{name} must hold inside shares of shape {X.shape[:2]} "
                        f"(markets × products); got shape {y.shape}")
    if not np.isfinite(y).all():
        raise DataError(f"{name} contains NaN or infinite shares")
    if (y < 0).any() or (y.sum(axis=1) >= 1).any():
        raise DataError(f"{name}: inside shares must be nonnegative and sum to less than 1 in "
                        "every market (the outside good has the rest)")
    if (y[~present_products(X)] != 0).any():
        raise DataError(f"{name}: the share of a product absent from its market (a row of NaN "
                        "in the markets) must be 0")
    return y


# --------------------------------------------------------------------------- design


class _Design:
    """The formula's design rows ``w_j`` of every product, ``(n, J, K)``, and their price
    derivative. Plain column selections skip patsy (the hot path of elasticity differences)."""

    def __init__(self, formula: str, X: np.ndarray, columns: Sequence[str],
                 price: str = "prices") -> None:
        self.formula, self.columns, self.price = formula, tuple(columns), price
        f = parse_formula(formula)
        missing = [c for c in f.covariates if c not in self.columns]
        if missing:
            raise FormulaError(f"formula {formula!r} names column(s) {missing} that the markets "
                               f"do not have; available columns: {list(self.columns)}")
        frame = self._frame(X[present_products(X)])    # absent products are no data
        D, self._build = f.design_builder(frame)
        self.names = f.column_names(frame)
        simple = all(nm == "Intercept" or nm in self.columns for nm in self.names)
        self._select = ([None if nm == "Intercept" else self.columns.index(nm)
                         for nm in self.names] if simple else None)

    def __getstate__(self):
        # plain column selections need no patsy builder (a closure, which cannot be pickled),
        # so fitted rules on such formulas travel between processes
        state = dict(self.__dict__)
        if self._select is not None:
            state["_build"] = None
        return state

    def _frame(self, X):
        import pandas as pd

        return pd.DataFrame(X.reshape(-1, X.shape[-1]), columns=list(self.columns))

    def __call__(self, X: np.ndarray) -> np.ndarray:
        """Design rows ``(n, J, K)``; rows of absent products (padded markets) are 0."""
        n, J, _ = X.shape
        absent = np.isnan(X[:, :, 0])
        if self._select is not None:
            W = np.empty((n, J, len(self._select)))
            for a, c in enumerate(self._select):
                W[:, :, a] = 1.0 if c is None else X[:, :, c]
            if absent.any():
                W[absent] = 0.0
            return W
        if not absent.any():
            return self._build(self._frame(X)).reshape(n, J, -1)
        rows = self._build(self._frame(X[~absent]))
        W = np.zeros((n, J, rows.shape[1]))
        W[~absent] = rows
        return W

    def price_derivative(self, X: np.ndarray) -> np.ndarray:
        """``∂w_j/∂p_j`` — exact for plain columns, central differences through patsy otherwise."""
        if self.price not in self.columns:
            raise FormulaError(f"elasticities need a price column {self.price!r}; the markets "
                               f"have columns {list(self.columns)}")
        if self._select is not None:
            dW = np.zeros(X.shape[:2] + (len(self._select),))
            for a, c in enumerate(self._select):
                if c is not None and self.columns[c] == self.price:
                    dW[:, :, a] = np.where(np.isnan(X[:, :, 0]), 0.0, 1.0)
            return dW
        k = self.columns.index(self.price)
        h = 1e-6 * np.maximum(1.0, np.abs(X[:, :, k]))
        Xp, Xm = X.copy(), X.copy()
        Xp[:, :, k] += h
        Xm[:, :, k] -= h
        dW = (self(Xp) - self(Xm)) / (2 * h[:, :, None])
        dW[np.isnan(X[:, :, 0])] = 0.0      # absent products (padded markets)
        return dW


def market_design(formula: str, X: np.ndarray,
                  columns: Sequence[str] = MARKET_COLUMNS) -> tuple[np.ndarray, list[str]]:
    """Design array ``(n, J, K)`` of a formula on markets, with the design column names.

    Examples
    --------
    >>> W, names = market_design(DEFAULT_FORMULA, np.ones((2, 24, 3)))
    >>> W.shape, names
    ((2, 24, 4), ['Intercept', 'prices', 'sugar', 'mushy'])
    """
    X = check_markets(X, columns)
    d = _Design(formula, X, columns)
    return d(X), d.names


# --------------------------------------------------------------------------- share functions


def _mnl_shares(delta: np.ndarray) -> np.ndarray:
    top = np.maximum(delta.max(axis=1, keepdims=True), 0.0)
    e = np.exp(delta - top)
    return e / (np.exp(-top) + e.sum(axis=1, keepdims=True))


@functools.lru_cache(maxsize=16)
def _standard_nodes(dim: int, half: int, seed: int) -> np.ndarray:
    """``half`` scrambled-Sobol standard normals in ``dim`` dimensions (the ``+`` half)."""
    u = scipy.stats.qmc.Sobol(d=dim, scramble=True, seed=seed).random(half)
    z = scipy.stats.norm.ppf(u)
    z.setflags(write=False)
    return z


# --------------------------------------------------------------------------- fitted rule


class DemandFit(Fitted):
    """A fitted share function: ``predict(X) -> (m, J)`` and ``elasticities(X) -> (m, J, J)``.

    What every demand procedure's ``fit`` returns (built there, not by hand).

    Parameters
    ----------
    model : {"logit", "MNL", "NL", "MXL"}
        The share function.
    params : array_like
        Fitted parameters, in the order of ``names``.
    names : list of str
        Parameter names.
    design : object or None
        The formula's design (None for the common-intercept logit).
    columns : sequence of str
        The market columns, in order.
    extra : dict, optional
        What the share function needs besides ``params`` (the nest column, the MXL nodes).
    info : dict, optional
        The optimiser's record, added to ``info``.

    Attributes
    ----------
    model : {"logit", "MNL", "NL", "MXL"}
    params : ndarray
        Fitted parameters, named by ``names``.
    names : list of str
    info : dict
        ``params`` (name → value), ``cost`` (half the sum of squared residuals), ``nfev``,
        ``start`` (the winning start) and ``status`` of the optimiser.

    Examples
    --------
    An MNL fitted to its own shares; its own-price elasticity is ``β_p p_j (1 − s_j)``:

    >>> from restrictiveness import Sample
    >>> X = np.array([[[1.0, 2.0, 0.0], [1.5, 4.0, 1.0], [2.0, 6.0, 0.0]],
    ...               [[1.2, 2.0, 0.0], [1.1, 4.0, 1.0], [2.5, 6.0, 0.0]]])
    >>> e = np.exp(market_design("shares ~ prices", X)[0] @ [0.5, -2.0])
    >>> y = e / (1 + e.sum(axis=1, keepdims=True))
    >>> fit = MNL("shares ~ prices").fit(Sample(X, y, MARKET_COLUMNS, "shares"))
    >>> fit.names, np.round(fit.params, 6).tolist()
    (['Intercept', 'prices'], [0.5, -2.0])
    >>> bool(np.allclose(np.diagonal(fit.elasticities(X), axis1=1, axis2=2),
    ...                  -2.0 * X[..., 0] * (1 - y)))
    True
    """

    def __init__(self, model: str, params: np.ndarray, names: list[str], design: _Design | None,
                 columns: Sequence[str], extra: dict | None = None, info: dict | None = None):
        self.model, self.params, self.names = model, np.asarray(params, float), list(names)
        self.design, self.columns, self.extra = design, tuple(columns), dict(extra or {})
        if len(self.names) != len(self.params):
            raise ValueError(f"DemandFit: {len(self.params)} params but {len(self.names)} names")
        self.info = {"params": {k: float(v) for k, v in zip(self.names, self.params, strict=True)}}
        self.info.update(info or {})

    # shares --------------------------------------------------------------
    def predict(self, X: np.ndarray) -> np.ndarray:
        """Inside shares ``(m, J)`` of markets ``X (m, J, C)``.

        Parameters
        ----------
        X : array_like, shape (m, J, C)
            Markets in the fit's columns.

        Returns
        -------
        ndarray, shape (m, J)
            The inside shares; the outside good has the rest.

        Examples
        --------
        >>> from restrictiveness import Sample
        >>> X = np.ones((2, 24, 3)); y = np.full((2, 24), 0.02)
        >>> float(Logit().fit(Sample(X, y, MARKET_COLUMNS, "shares")).predict(X[:1]).sum())
        0.48
        """
        X = check_markets(X, self.columns, padded=self.model != "logit")
        return _share_function(self.model)(self.params, X, self.design, self.extra)

    def elasticities(self, X: np.ndarray) -> np.ndarray:
        """Analytic price elasticities ``E[m, j, k] = ∂ log s_j / ∂ log p_k``, ``(m, J, J)``.

        Parameters
        ----------
        X : array_like, shape (m, J, C)
            Markets in the fit's columns (with the price column ``prices``).

        Returns
        -------
        ndarray, shape (m, J, J)
            Row ``j``, column ``k``: the elasticity of product ``j``'s share with respect to
            product ``k``'s price (zero for the common-intercept logit).

        Examples
        --------
        An MNL with price coefficient β_p: ``E_jk = −β_p p_k s_k`` for ``k ≠ j``.

        >>> from restrictiveness import Sample
        >>> X = np.array([[[1.0, 2.0, 0.0], [1.5, 4.0, 1.0]], [[1.2, 2.0, 0.0], [1.1, 4.0, 1.0]],
        ...               [[0.9, 2.0, 0.0], [1.6, 4.0, 1.0]]])
        >>> e = np.exp(market_design("shares ~ prices", X)[0] @ [0.5, -2.0])
        >>> y = e / (1 + e.sum(axis=1, keepdims=True))
        >>> E = MNL("shares ~ prices").fit(Sample(X, y, MARKET_COLUMNS, "shares")).elasticities(X)
        >>> bool(np.allclose(E[:, 0, 1], 2.0 * X[:, 1, 0] * y[:, 1]))
        True
        """
        X = check_markets(X, self.columns, padded=self.model != "logit")
        if self.model == "logit":
            return np.zeros((X.shape[0], X.shape[1], X.shape[1]))
        return _elasticity_function(self.model)(self.params, X, self.design, self.extra)

    # estimation on data ----------------------------------------------------
    def jacobian(self, X: np.ndarray, y: np.ndarray) -> np.ndarray:
        """Jacobian of the flattened inside shares with respect to the parameters at the
        estimate, ``(m·J, len(params))`` (for standard errors).

        Parameters
        ----------
        X : array_like, shape (m, J, C)
            Markets in the fit's columns.
        y : array_like, shape (m, J)
            Their inside shares (the residuals' data; the Jacobian does not depend on them).

        Returns
        -------
        ndarray, shape (m·J, len(params))
            ``∂ s_j / ∂ θ`` for every market and product, markets first.

        Examples
        --------
        For an MNL, ``∂ s_j / ∂ β_0 = s_j s_0`` with ``s_0`` the outside share:

        >>> from restrictiveness import Sample
        >>> X = np.array([[[1.0, 2.0, 0.0], [1.5, 4.0, 1.0]], [[1.2, 2.0, 0.0], [1.1, 4.0, 1.0]],
        ...               [[0.9, 2.0, 0.0], [1.6, 4.0, 1.0]]])
        >>> e = np.exp(market_design("shares ~ prices", X)[0] @ [0.5, -2.0])
        >>> y = e / (1 + e.sum(axis=1, keepdims=True))
        >>> fit = MNL("shares ~ prices").fit(Sample(X, y, MARKET_COLUMNS, "shares"))
        >>> s0 = 1 - y.sum(axis=1, keepdims=True)
        >>> bool(np.allclose(fit.jacobian(X, y)[:, 0], (y * s0).ravel()))
        True
        """
        X = check_markets(X, self.columns, padded=True)
        assert self.design is not None  # only MNL, NL and MXL fits are estimated (DemandModel)
        extra = dict(self.extra)
        if self.model == "NL":
            extra["g"] = _nest_index(X, self.columns, self.extra["nest"])
        absent = _absent(X)
        return _residual_jacobian(self.model, self.params, self.design(X), y, extra,
                                  None if absent is None else ~absent)[1]

    def at_bounds(self, tol: float = 1e-8) -> list[str]:
        """Names of the parameters whose estimate sits on a bound (their SEs are not valid).

        Parameters
        ----------
        tol : float
            Distance from a bound that counts as on it.

        Returns
        -------
        list of str
            In the order of ``names``; ``L[a,a]`` counts within ``tol`` of 0 (the solver
            reaches that bound only in the limit: it fits ``η`` with ``L[a,a] = η²``).

        Examples
        --------
        >>> fit = DemandFit("NL", [0.0, -2.0, 0.99, 0.2], ["Intercept", "prices",
        ...                 "rho[mushy=0]", "rho[mushy=1]"], None, MARKET_COLUMNS)
        >>> fit.at_bounds()
        ['rho[mushy=0]']
        """
        names = []
        for name, v in zip(self.names, self.params, strict=True):
            if name.startswith("rho["):
                hit = v <= tol or v >= RHO_MAX - tol
            elif name.startswith("L["):
                row, col = name[2:-1].split(",")
                # the solver reaches L_aa = 0 only as η → 0 (2.3e-16 on the cereal data)
                hit = abs(abs(v) - CHOL_BOUND) < tol or (row == col and v <= tol)
            else:
                hit = abs(abs(v) - BETA_BOUND) < tol
            if hit:
                names.append(name)
        return names


def _price(X, design):
    p = X[:, :, design.columns.index(design.price)]
    return np.where(np.isnan(p), 0.0, p)        # absent products (padded markets) have none


def _absent(X: np.ndarray) -> np.ndarray | None:
    """Absent products of padded markets ``(n, J)``, or None when every market is full."""
    absent = np.isnan(X[:, :, 0])
    return absent if absent.any() else None


def _nan_absent(E: np.ndarray, X: np.ndarray) -> np.ndarray:
    """Elasticities with the rows and columns of absent products NaN (there is no price to
    change and no share to respond)."""
    absent = _absent(X)
    if absent is not None:
        E[absent[:, :, None] | absent[:, None, :]] = np.nan
    return E


def _logit_predict(params, X, design, extra):
    e = np.exp(params[0])
    return np.full(X.shape[:2], e / (1 + X.shape[1] * e))


def _mnl_predict(params, X, design, extra):
    delta = design(X) @ params
    absent = _absent(X)
    if absent is not None:
        delta[absent] = -np.inf         # never chosen: share 0
    return _mnl_shares(delta)


def _mnl_elasticities(params, X, design, extra):
    s = _mnl_predict(params, X, design, extra)
    g = design.price_derivative(X) @ params * _price(X, design)     # ∂δ_k/∂log p_k
    J = s.shape[1]
    return _nan_absent((np.eye(J)[None] - s[:, None, :]) * g[:, None, :], X)


def _nl_split(params, extra):
    return params[:-2], params[-2:]


def _nl_predict(params, X, design, extra):
    beta, rho = _nl_split(params, extra)
    return nl_shares(design(X) @ beta, _nest_index(X, design.columns, extra["nest"]), rho)


def _nl_elasticities(params, X, design, extra):
    beta, rho = _nl_split(params, extra)
    g = _nest_index(X, design.columns, extra["nest"])
    logs, u, lam, logD, cond, _ = nl_parts(design(X) @ beta, g, rho)
    dd = nl_dlog_ddelta(np.exp(logs), g, rho, cond)
    return _nan_absent(dd * (design.price_derivative(X) @ beta * _price(X, design))[:, None, :],
                       X)


def _mxl_unpack(params, extra):
    K, kr = extra["K"], len(extra["ridx"])
    L = np.zeros((kr, kr))
    L[extra["lrow"], extra["lcol"]] = params[K:]
    return params[:K], L


def _mxl_predict(params, X, design, extra):
    beta, L = _mxl_unpack(params, extra)
    W = design(X)
    nu = extra["z"] @ L.T
    return _logit_nb.mxl_shares(W @ beta, W, extra["ridx"], nu, _counts(X))


def _mxl_elasticities(params, X, design, extra, block: int = 128):
    if X.shape[0] > block:   # bounds memory: the node arrays are (markets, J, 512)
        return np.concatenate([_mxl_elasticities(params, X[i:i + block], design, extra)
                               for i in range(0, X.shape[0], block)])
    beta, L = _mxl_unpack(params, extra)
    W = design(X)
    ridx = extra["ridx"]
    nu = extra["z"] @ L.T                                     # (H, Kr)
    S, s = _logit_nb.mxl_probabilities(W @ beta, W, ridx, nu, _counts(X))  # (m,J,R), (m,J)
    dW = design.price_derivative(X)
    p = _price(X, design)
    nodes = np.concatenate([nu, -nu])                         # (R, Kr)
    # ∂u_kr/∂log p_k = p_k (dw_k·β + dw_k[ridx]·ν_r)
    G = p[:, :, None] * ((dW @ beta)[:, :, None]
                         + np.einsum("mka,ra->mkr", dW[:, :, ridx], nodes))
    R = S.shape[2]
    SG = S * G
    cross = -np.einsum("mjr,mkr->mjk", S, SG) / R
    J = s.shape[1]
    idx = np.arange(J)
    cross[:, idx, idx] += SG.mean(axis=2)
    if _absent(X) is None:
        return cross / s[:, :, None]
    with np.errstate(divide="ignore", invalid="ignore"):     # absent rows: 0 / 0
        return _nan_absent(cross / s[:, :, None], X)


def _counts(X: np.ndarray) -> np.ndarray:
    """Products of each market (its first rows; the rest pad it), int64 ``(n,)``."""
    return (~np.isnan(X[:, :, 0])).sum(axis=1).astype(np.int64)


def _share_function(model):
    return {"logit": _logit_predict, "MNL": _mnl_predict, "NL": _nl_predict,
            "MXL": _mxl_predict}[model]


def _elasticity_function(model):
    return {"MNL": _mnl_elasticities, "NL": _nl_elasticities, "MXL": _mxl_elasticities}[model]


# --------------------------------------------------------------------------- problems


def _problem(model: str, W: np.ndarray, y: np.ndarray, extra: dict,
             present: np.ndarray | None = None) -> Problem:
    """The least-squares problem of a model on markets ``W (n, J, K)`` with shares ``y``:
    MNL is the nested-logit problem with ``ρ`` held at 0 (one nest). ``present`` (n, J) marks
    the products of padded markets (default: all; for NL the nests ``extra["g"]`` say it)."""
    W = np.ascontiguousarray(W, dtype=float)
    y = np.ascontiguousarray(y, dtype=float)
    K = W.shape[2]
    beta_lo, beta_hi = np.full(K, -BETA_BOUND), np.full(K, BETA_BOUND)
    if model in ("MNL", "NL"):
        if model == "NL":
            g = np.ascontiguousarray(extra["g"], dtype=np.int64)
        elif present is None:
            g = np.zeros(W.shape[:2], dtype=np.int64)
        else:                                   # −1: absent
            g = np.where(present, 0, -1).astype(np.int64)
        free = np.r_[np.ones(K, np.int64), np.full(2, int(model == "NL"), np.int64)]
        return Problem(nl_resjac, solve_nl, (W, g, y), np.r_[beta_lo, 0.0, 0.0],
                       np.r_[beta_hi, RHO_MAX, RHO_MAX], free)
    ridx = np.asarray(extra["ridx"], dtype=np.int64)
    lrow = np.asarray(extra["lrow"], dtype=np.int64)
    lcol = np.asarray(extra["lcol"], dtype=np.int64)
    diag = lrow == lcol
    nprod = (np.full(W.shape[0], W.shape[1], dtype=np.int64) if present is None
             else present.sum(axis=1).astype(np.int64))
    data = (W, np.ascontiguousarray(W[:, :, ridx]), y, ridx,
            np.ascontiguousarray(np.asarray(extra["z"], dtype=float).T), lrow, lcol, nprod)
    d = K + np.flatnonzero(diag)
    lo = np.r_[beta_lo, np.where(diag, 0.0, -CHOL_BOUND)]
    hi = np.r_[beta_hi, np.full(len(diag), CHOL_BOUND)]
    x_lo, x_hi = lo.copy(), hi.copy()
    x_lo[d], x_hi[d] = -np.sqrt(CHOL_BOUND), np.sqrt(CHOL_BOUND)

    def encode(theta):          # the compiled solver sees η with L_aa = η_a²
        x = np.array(theta, dtype=float)
        x[d] = np.sqrt(np.maximum(x[d], 0.0))
        return x

    def decode(x):
        theta = np.array(x, dtype=float)
        theta[d] = x[d] ** 2
        return theta

    free = np.ones(K + len(diag), dtype=np.int64)
    free[d] = ROOT              # held near η_a = 0 as on the bound L_aa = 0
    return Problem(_logit_nb.mxl_resjac, _logit_nb.solve_mxl, data, lo, hi, free, encode,
                   decode, x_lo, x_hi)


def _residual_jacobian(model: str, theta: np.ndarray, W: np.ndarray, y: np.ndarray,
                       extra: dict, present: np.ndarray | None = None
                       ) -> tuple[np.ndarray, np.ndarray]:
    """Residuals and Jacobian ``(n·J, len(θ))`` of a model at ``θ`` (MNL: in β only)."""
    prob = _problem(model, W, y, extra, present)
    if model == "MNL":
        r, J = prob.resjac(np.r_[theta, 0.0, 0.0], prob.data)
        return r, J[:, :len(theta)]
    return prob.resjac(np.asarray(theta, dtype=float), prob.data)


def _reflections(theta: np.ndarray, problem: Problem, K: int, lrow: np.ndarray,
                 lcol: np.ndarray) -> list[tuple[str, np.ndarray]]:
    """Follow-up MXL starts from an estimate ``(β, L)``: for each Cholesky diagonal ``L_aa`` at
    its bound 0 (to rounding), the estimate with that column's lower entries changed in sign
    (the same covariance), if the objective decreases in ``L_aa`` there; it starts at
    ``L_aa = 0.01``. Checking the slope costs one evaluation per such diagonal."""
    out = []
    for q in np.flatnonzero(lrow == lcol):
        if theta[K + q] > BOUND_RTOL:
            continue
        x0 = np.array(theta, dtype=float)
        below = np.flatnonzero((lcol == lcol[q]) & (lrow > lrow[q]))
        if not below.size:
            continue
        x0[K + below] *= -1.0
        x0[K + q] = 0.0
        r, jac = problem.resjac(x0, problem.data)
        if float(jac[:, K + q] @ r) < 0.0:
            x0[K + q] = REFLECT_DIAGONAL
            out.append((f"reflect[{lcol[q]}]", x0))
    return out


# --------------------------------------------------------------------------- procedures


class _DemandProcedure(Procedure):
    """Shared plumbing: validation, design, optimiser options, the baseline and Berry starts."""

    model = ""

    def __init__(self, formula: str = DEFAULT_FORMULA, max_nfev: int | None = None,
                 method: str = "lm", budget: str = DEFAULT_BUDGET) -> None:
        parse_formula(formula)
        check_options(budget, max_nfev, method)
        self.formula, self.max_nfev, self.method, self.budget = formula, max_nfev, method, budget

    @classmethod
    def from_formula(cls, formula: str, data, market_ids: str = "market_ids", **kwargs):
        """An estimator on long product data (one row per product and market).

        Parameters
        ----------
        formula : str
            ``"shares ~ prices + sugar + mushy"``: the shares on the left, utility terms right.
        data : DataFrame
            Product data with a ``market_ids`` column; markets may list different numbers of
            products.
        market_ids : str
            The market column.
        **kwargs
            Options of the model (``nest=``, ``random=``, ``budget=``, ``max_nfev=`` ...).

        Returns
        -------
        DemandModel
            Call ``.fit()`` for ``params``, ``bse`` and ``summary()``.

        Examples
        --------
        >>> from restrictiveness.datasets import load_cereal
        >>> df = load_cereal()     # Nevo's cereal data: 94 markets × 24 products
        >>> MNL.from_formula("shares ~ prices + sugar + mushy", df).fit().params.round(3)
        Intercept   -2.524
        prices      -8.964
        sugar        0.035
        mushy        0.085
        Name: params, dtype: float64
        """
        return DemandModel.from_formula(cls, formula, data, market_ids, **kwargs)

    def validate(self, columns: Sequence[str], response: str) -> None:
        """Check the formula (and the model's other column names) against a study's before any
        fit.

        Without this a name the study lacks failed every fit and left only the baseline's
        predictions (r̂ = 1, with a warning).

        Parameters
        ----------
        columns : sequence of str
            The study's market columns.
        response : str
            The study's response name.

        Raises
        ------
        FormulaError
            The formula names a column or response the study does not have.

        Examples
        --------
        >>> MNL("shares ~ prices + sugar").validate(["prices", "sugar", "mushy"], "shares")
        >>> MNL("shares ~ price").validate(["prices", "sugar", "mushy"], "shares")
        ... # doctest: +ELLIPSIS, +NORMALIZE_WHITESPACE
        Traceback (most recent call last):
        ...
        restrictiveness.shared.exceptions.FormulaError: formula 'shares ~ price' names column(s) ...
        """
        check_study_columns(self.formula, columns, response, covariates=False)

    def _prepare(self, sample: Sample):
        """Markets, shares, design, design rows, columns, and which products are present
        (None when every market lists all ``J``)."""
        columns = _market_columns(sample, type(self).__name__)
        X = check_markets(sample.X, columns, "sample.X", padded=True)
        y = check_shares(sample.y, X, "sample.y")
        parse_formula(self.formula).check_response(sample.response)
        design = _Design(self.formula, X, columns)
        absent = _absent(X)
        return X, y, design, design(X), columns, None if absent is None else ~absent

    def _solve(self, problem: Problem, starts, followups=None, enough=None) -> Solution:
        return solve(problem, starts, self.budget, check_options(self.budget, self.max_nfev,
                                                                 self.method), self.method,
                     followups, enough)

    @staticmethod
    def _baseline_beta(W, y, names, present=None):
        # the common share b of the mean market's J̄ products (J̄ b is the mean inside share)
        b = float(y.mean()) if present is None else float(y[present].mean())
        J = W.shape[1] if present is None else present.sum() / len(present)
        beta = np.zeros(W.shape[2])
        if "Intercept" in names:
            beta[names.index("Intercept")] = np.log(b / (1 - J * b))
        return beta

    @staticmethod
    def _berry_beta(W, y):
        s0 = 1 - y.sum(axis=1, keepdims=True)
        ok = y > 0
        lhs = np.log(np.where(ok, y, 1.0) / s0)[ok]
        beta, *_ = np.linalg.lstsq(W[ok], lhs, rcond=None)
        return beta

    def _mnl(self, W, y, names, present=None) -> Solution:
        """The MNL fit (β with ρ = 0) from the baseline and Berry starts."""
        starts = [("baseline", np.r_[self._baseline_beta(W, y, names, present), 0.0, 0.0]),
                  ("berry", np.r_[self._berry_beta(W, y), 0.0, 0.0])]
        sol = self._solve(_problem("MNL", W, y, {}, present), starts)
        sol.x = sol.x[:W.shape[2]]
        return sol


class Logit(Procedure):
    """Common-intercept logit baseline: every product gets ``b = e^γ / (1 + J e^γ)``.

    Its least-squares fit to inside shares is the mean inside share (closed form); its
    elasticities are 0.

    Parameters
    ----------
    formula : None
        Must be left unset: the common intercept depends on no covariate, and a formula given
        here would be ignored, so it is refused.

    Raises
    ------
    ConfigurationError
        When a formula is given.

    Examples
    --------
    >>> import numpy as np
    >>> from restrictiveness import Sample
    >>> X = np.ones((2, 24, 3)); y = np.full((2, 24), 0.02)
    >>> fit = Logit().fit(Sample(X, y, MARKET_COLUMNS, "shares"), np.random.default_rng(0))
    >>> float(fit.predict(X)[0, 0])
    0.02
    """

    label = "logit"

    def __init__(self, formula: None = None) -> None:
        if formula is not None:
            raise ConfigurationError(f"Logit is the common-intercept baseline and uses no "
                                     f"covariates, so formula {formula!r} would be ignored; use "
                                     f"MNL({formula!r}) for a logit in those covariates")
        self.formula = None

    def fit(self, sample: Sample, rng: np.random.Generator | None = None) -> DemandFit:
        """The least-squares common intercept: ``b`` is the mean inside share.

        Parameters
        ----------
        sample : Sample
            Markets ``X (m, J, C)`` in the formula's columns and inside shares ``y (m, J)``.
        rng : Generator, optional
            Unused: the fit is deterministic.

        Returns
        -------
        DemandFit
            Parameter ``gamma = log(b / (1 − J b))``; ``info`` holds ``b`` and the cost (half
            the sum of squared residuals).

        Examples
        --------
        >>> import numpy as np
        >>> from restrictiveness import Sample
        >>> y = np.array([[0.1, 0.3], [0.2, 0.2]])
        >>> fit = Logit().fit(Sample(np.ones((2, 2, 3)), y, MARKET_COLUMNS, "shares"))
        >>> fit.info["b"], bool(np.isclose(fit.params[0], np.log(0.2 / (1 - 2 * 0.2))))
        (0.2, True)
        """
        columns = _market_columns(sample, "Logit")
        X = check_markets(sample.X, columns, "sample.X", padded=True)
        if _absent(X) is not None:
            raise DataError("Logit is the common-intercept baseline of SPEC §7's studies, whose "
                            "markets all list the same products; these markets list different "
                            "numbers (rows of NaN)")
        y = check_shares(sample.y, X, "sample.y")
        b = float(y.mean())
        gamma = np.log(b / (1 - X.shape[1] * b)) if b > 0 else -np.inf
        return DemandFit("logit", np.array([gamma]), ["gamma"], None, columns,
                         info={"b": b, "cost": float(0.5 * ((y - b) ** 2).sum())})


def _market_columns(sample: Sample, who: str) -> tuple[str, ...]:
    """The columns of a market sample; anything else is refused (a DataFrame was an
    AttributeError)."""
    if not isinstance(sample, Sample):
        raise DataError(f"{who}.fit takes a market Sample (rx.demand.market_sample(frame)); "
                        f"to estimate on a DataFrame use {who}.from_formula(formula, "
                        f"frame).fit(); got {type(sample).__name__}")
    return tuple(sample.columns)


_OPTIONS_DOC = """budget : {"fit", "start", "converge"}
        How the ``max_nfev`` residual evaluations are counted: for the model's starts together
        (the default), for each start, or not at all (run every start to convergence); see
        :mod:`restrictiveness.demand.fitting`.
    max_nfev : int, optional
        The evaluation budget (default 400, SPEC §7); not with ``budget="converge"``.
    method : {"lm", "trf", "dogbox"}
        The compiled bounded Levenberg–Marquardt (default) or scipy's ``least_squares`` method
        (slower references)."""


class MNL(_DemandProcedure):
    __doc__ = """Multinomial logit ``δ_j = w_jᵀβ`` fitted by least squares on inside shares.

    Parameters
    ----------
    formula : str
        Utility formula over the market columns (intercept unless removed with ``- 1``).
    """ + _OPTIONS_DOC + """

    Examples
    --------
    >>> import numpy as np
    >>> from restrictiveness import Sample
    >>> rng = np.random.default_rng(0)
    >>> X = np.stack([rng.uniform(.05, .2, (30, 24)), rng.uniform(0, 20, (30, 24)),
    ...               rng.integers(0, 2, (30, 24))], axis=2)
    >>> W, names = market_design(DEFAULT_FORMULA, X)
    >>> e = np.exp(W @ [-3., -10., .05, .3])
    >>> y = e / (1 + e.sum(axis=1, keepdims=True))
    >>> fit = MNL().fit(Sample(X, y, MARKET_COLUMNS, "shares"), rng)
    >>> np.round(fit.params, 3)
    array([ -3.  , -10.  ,   0.05,   0.3 ])
    """

    label = "MNL"
    model = "MNL"

    def fit(self, sample: Sample, rng: np.random.Generator | None = None) -> DemandFit:
        """Least squares on the inside shares from the baseline and Berry starts.

        Parameters
        ----------
        sample : Sample
            Markets ``X (m, J, C)`` in the formula's columns and inside shares ``y (m, J)``.
        rng : Generator, optional
            Unused: the fit is deterministic.

        Returns
        -------
        DemandFit
            Parameters named by the design columns; ``info`` records the optimiser's cost,
            evaluations, winning start and status.

        Examples
        --------
        Shares of an MNL with β = (−1, −10, 0.05, 0.3) are fitted exactly:

        >>> import numpy as np
        >>> from restrictiveness import Sample
        >>> rng = np.random.default_rng(0)
        >>> X = np.stack([rng.uniform(.05, .2, (10, 4)), rng.uniform(0, 20, (10, 4)),
        ...               np.tile([0., 0., 1., 1.], (10, 1))], axis=2)
        >>> e = np.exp(market_design(DEFAULT_FORMULA, X)[0] @ [-1., -10., .05, .3])
        >>> sample = Sample(X, e / (1 + e.sum(axis=1, keepdims=True)), MARKET_COLUMNS, "shares")
        >>> fit = MNL().fit(sample)
        >>> fit.names, np.round(fit.params, 6).tolist()
        (['Intercept', 'prices', 'sugar', 'mushy'], [-1.0, -10.0, 0.05, 0.3])
        """
        X, y, design, W, columns, present = self._prepare(sample)
        sol = self._mnl(W, y, design.names, present)
        return DemandFit("MNL", sol.x, design.names, design, columns, info=sol.info())


class NestedLogit(_DemandProcedure):
    __doc__ = """Two-level nested logit with nests by a 0/1 column and nesting parameters in
    [0, 0.99].

    Starts: the baseline and Berry β with ``ρ = (0.5, 0.5)``, and the fitted MNL with
    ``ρ = (0, 0)`` and ``(0.5, 0.5)``.

    Parameters
    ----------
    formula : str
        Utility formula, as for :class:`MNL`.
    nest : str
        Market column whose 0/1 value names each product's nest (default ``"mushy"``).
    """ + _OPTIONS_DOC + """

    Examples
    --------
    >>> NestedLogit(nest="mushy").label
    'NL'
    """

    label = "NL"
    model = "NL"

    def __init__(self, formula: str = DEFAULT_FORMULA, nest: str = "mushy",
                 max_nfev: int | None = None, method: str = "lm",
                 budget: str = DEFAULT_BUDGET) -> None:
        super().__init__(formula, max_nfev, method, budget)
        self.nest = nest

    def validate(self, columns: Sequence[str], response: str) -> None:
        """As :meth:`MNL.validate`, and the nest column must be one of the study's.

        Parameters
        ----------
        columns : sequence of str
            The study's market columns.
        response : str
            The study's response name.

        Raises
        ------
        FormulaError
            A name the study lacks, the nest column's included.

        Examples
        --------
        >>> NestedLogit(nest="sugar").validate(["prices", "sugar", "mushy"], "shares")
        >>> NestedLogit(nest="mushi").validate(["prices", "sugar", "mushy"], "shares")
        ... # doctest: +ELLIPSIS, +NORMALIZE_WHITESPACE
        Traceback (most recent call last):
        ...
        restrictiveness.shared.exceptions.FormulaError: nest column 'mushi' is not a column ...
        """
        super().validate(columns, response)
        if self.nest not in columns:
            raise FormulaError(f"nest column {self.nest!r} is not a column of the study; its "
                               f"columns are {list(columns)}")

    def fit(self, sample: Sample, rng: np.random.Generator | None = None) -> DemandFit:
        """Least squares on the inside shares from the starts above.

        Parameters
        ----------
        sample : Sample
            Markets ``X (m, J, C)`` in the formula's columns and inside shares ``y (m, J)``.
        rng : Generator, optional
            Unused: the fit is deterministic.

        Returns
        -------
        DemandFit
            Parameters β, then ``rho[<nest>=0]`` and ``rho[<nest>=1]``.

        Examples
        --------
        Shares of an MNL are a nested logit with ρ = 0 in both nests:

        >>> import numpy as np
        >>> from restrictiveness import Sample
        >>> rng = np.random.default_rng(0)
        >>> X = np.stack([rng.uniform(.05, .2, (10, 4)), rng.uniform(0, 20, (10, 4)),
        ...               np.tile([0., 0., 1., 1.], (10, 1))], axis=2)
        >>> e = np.exp(market_design(DEFAULT_FORMULA, X)[0] @ [-1., -10., .05, .3])
        >>> sample = Sample(X, e / (1 + e.sum(axis=1, keepdims=True)), MARKET_COLUMNS, "shares")
        >>> fit = NestedLogit(nest="mushy").fit(sample)
        >>> fit.names[-2:], np.round(fit.params, 6).tolist()
        (['rho[mushy=0]', 'rho[mushy=1]'], [-1.0, -10.0, 0.05, 0.3, 0.0, 0.0])
        """
        X, y, design, W, columns, present = self._prepare(sample)
        if self.nest not in columns:
            raise FormulaError(f"nest column {self.nest!r} is not among the market columns "
                               f"{list(columns)}")
        g = _nest_index(X, columns, self.nest)      # −1: absent
        mnl = self._mnl(W, y, design.names, present)
        half = np.array([0.5, 0.5])
        starts = [("baseline", np.r_[self._baseline_beta(W, y, design.names, present), half]),
                  ("berry", np.r_[self._berry_beta(W, y), half]),
                  ("MNL", np.r_[mnl.x, 0.0, 0.0]),
                  ("MNL+rho", np.r_[mnl.x, half])]
        sol = self._solve(_problem("NL", W, y, {"g": g}), starts)
        names = design.names + [f"rho[{self.nest}=0]", f"rho[{self.nest}=1]"]
        info = sol.info()
        info["mnl_nfev"] = mnl.nfev
        return DemandFit("NL", sol.x, names, design, columns, extra={"nest": self.nest},
                         info=info)


class MixedLogit(_DemandProcedure):
    __doc__ = """Random-coefficients logit ``b ~ N(β, LLᵀ)`` on 512 antithetic scrambled-Sobol
    nodes.

    Starts (SPEC §7): the fitted MNL means with ``L = 0.5·I`` and, when needed, ``L = 1.0·I``
    (``starts`` below). With antithetic nodes ``L = 0`` is a stationary point, so the baseline
    and Berry starts (``L = 0``) lead to the MNL fit; that fit with ``L = 0`` stays a candidate,
    so MXL never fits worse than the MNL it nests. The MNL stage has its own budget of the same
    kind.

    Starts: """ + _STARTS_CHOICE + """

    Budget: """ + _BUDGET_CHOICE + """

    The paper's setting: """ + _PAPER_SETTING + """

    Parameters
    ----------
    formula : str
        Utility formula, as for :class:`MNL`.
    random : sequence of str, optional
        Design columns with random coefficients, each named once (default: all, e.g.
        ``Intercept, prices, sugar, mushy``); ``L`` is their full lower-triangular Cholesky
        factor.
    nodes : int
        Number of integration nodes (even: half Sobol normals, half their negatives).
    max_nfev : int, optional
        The evaluation budget (default 400, SPEC §7); not with ``budget="converge"``.
    method : {"lm", "trf", "dogbox"}
        The compiled bounded Levenberg–Marquardt (default) or scipy's ``least_squares`` method
        (slower references).
    seed : int
        Seed of the scrambled Sobol nodes (fixed across fits).
    reflect : bool
        When the best estimate has a Cholesky diagonal ``L_aa`` at its bound 0, fit again from
        the reflected column (entries below the diagonal changed in sign, ``L_aa = 0.01``) and
        keep what is lower (default). ``L_aa ≥ 0`` only fixes the sign of a column of ``L``,
        which ``Σ = LLᵀ`` does not see; but at ``L_aa = 0`` it pins the column's sign, and the
        point can be a minimum only because the better direction (the other sign, where the
        objective is the same up to simulation error) is cut off: on 60 prior samples at
        n = 100 the fit ended 6e-2 and 1.5e-4 above dogbox's in two such cases, and below it
        from the reflected start. The reflected starts count against the budget (the
        slope check that screens them, one evaluation per diagonal at 0, does not).
    budget : {"fit", "start", "converge"}
        How ``max_nfev`` is counted: for the starts together (the default), for each
        start, or not at all (run the starts to convergence); see
        :mod:`restrictiveness.demand.fitting`.
    starts : {"adaptive", "both"}
        Run the second start (``L = 1.0·I``) only when the first (``L = 0.5·I``) does not
        converge (out of budget, or stalled) or ends no lower than the MNL objective
        (default), or always (SPEC §7's example;
        the fit before this option).

    Examples
    --------
    >>> MixedLogit(random=["prices", "sugar"]).label
    'MXL'
    """

    label = "MXL"
    model = "MXL"

    def __init__(self, formula: str = DEFAULT_FORMULA, random: Sequence[str] | None = None,
                 nodes: int = 512, max_nfev: int | None = None, method: str = "lm",
                 seed: int = NODE_SEED, budget: str = DEFAULT_BUDGET,
                 reflect: bool = True, starts: str = "adaptive") -> None:
        super().__init__(formula, max_nfev, method, budget)
        if starts not in MXL_STARTS:
            raise ConfigurationError(f"starts must be one of {MXL_STARTS} (the second start only "
                                     f"when the first does not converge or ends at the MNL "
                                     f"objective, or always), got {starts!r}")
        self.starts = starts
        if not isinstance(reflect, bool | np.bool_):  # bool("no") is True
            raise ConfigurationError(f"reflect must be True or False, got {reflect!r}")
        self.reflect = bool(reflect)
        if not is_whole(nodes) or nodes < 2 or nodes % 2:  # None was a TypeError
            raise ConfigurationError(f"nodes must be an even number ≥ 2 (antithetic pairs), "
                                     f"got {nodes!r}")
        whole_number(seed, "seed", minimum=0)  # -1 failed inside numpy at the first fit
        if isinstance(random, str):
            random = [random]
        self.random = None if random is None else tuple(random)
        if self.random is not None:
            twice = sorted(repeated(self.random))
            if twice:  # a 2-D coefficient on one column: three L entries all named alike
                raise ConfigurationError(f"random names {twice} more than once")
            if not self.random:  # was "random terms [] are not design columns" at the fit
                raise ConfigurationError("random must name at least one design column (MNL is "
                                         "the mixed logit without random coefficients)")
        self.nodes, self.seed = int(nodes), int(seed)

    def validate(self, columns: Sequence[str], response: str) -> None:
        """As :meth:`MNL.validate`, and ``random`` must name design columns of the formula
        (checked here when the formula's terms are bare column names, whose design columns do
        not depend on the data; otherwise at the fit).

        Parameters
        ----------
        columns : sequence of str
            The study's market columns.
        response : str
            The study's response name.

        Raises
        ------
        FormulaError
            A name the study lacks, or a random term that is not a design column.

        Examples
        --------
        >>> MixedLogit(random=["prices"]).validate(["prices", "sugar", "mushy"], "shares")
        >>> MixedLogit(random=["price"]).validate(["prices", "sugar", "mushy"], "shares")
        ... # doctest: +ELLIPSIS, +NORMALIZE_WHITESPACE
        Traceback (most recent call last):
        ...
        restrictiveness.shared.exceptions.FormulaError: random terms ['price'] are not ...
        choose among ['Intercept', 'prices', 'sugar', 'mushy']
        """
        super().validate(columns, response)
        formula = parse_formula(self.formula)
        if formula.plain:
            import pandas as pd

            self._extra(formula.column_names(pd.DataFrame({c: [0.0, 1.0] for c in columns})))

    def _extra(self, names: list[str]) -> dict:
        random = names if self.random is None else list(self.random)
        unknown = [t for t in random if t not in names]
        if unknown or not random:
            raise FormulaError(f"random terms {unknown or random} are not design columns of "
                               f"{self.formula!r}; choose among {names}")
        ridx = np.array([names.index(t) for t in random], dtype=np.int64)
        lrow, lcol = np.tril_indices(len(ridx))
        return {"K": len(names), "ridx": ridx, "lrow": lrow.astype(np.int64),
                "lcol": lcol.astype(np.int64), "random": random,
                "z": _standard_nodes(len(ridx), self.nodes // 2, self.seed)}

    def parameter_names(self, names: list[str]) -> list[str]:
        """Names of (β, L): ``L[a,b]`` is row ``a``, column ``b`` of the Cholesky factor.

        Parameters
        ----------
        names : list of str
            The design columns (β's names).

        Returns
        -------
        list of str
            ``names``, then the lower triangle of ``L`` row by row over the random terms.

        Examples
        --------
        >>> MixedLogit(random=["prices", "sugar"]).parameter_names(["Intercept", "prices", "sugar"])
        ['Intercept', 'prices', 'sugar', 'L[prices,prices]', 'L[sugar,prices]', 'L[sugar,sugar]']
        """
        ex = self._extra(names)
        rnd = ex["random"]
        return list(names) + [f"L[{rnd[a]},{rnd[b]}]" for a, b in
                              zip(ex["lrow"], ex["lcol"], strict=True)]

    def fit(self, sample: Sample, rng: np.random.Generator | None = None) -> DemandFit:
        """The MNL fit, then least squares in (β, L) from the starts above.

        Parameters
        ----------
        sample : Sample
            Markets ``X (m, J, C)`` in the formula's columns and inside shares ``y (m, J)``.
        rng : Generator, optional
            Unused: the fit is deterministic.

        Returns
        -------
        DemandFit
            Parameters named by :meth:`parameter_names`; ``info`` adds the random terms and
            the MNL stage's parameters, cost and evaluations.

        Examples
        --------
        Shares of an MNL are a mixed logit with ``L = 0``:

        >>> import numpy as np
        >>> from restrictiveness import Sample
        >>> rng = np.random.default_rng(0)
        >>> X = np.stack([rng.uniform(.05, .2, (10, 4)), rng.uniform(0, 20, (10, 4)),
        ...               np.tile([0., 0., 1., 1.], (10, 1))], axis=2)
        >>> e = np.exp(market_design(DEFAULT_FORMULA, X)[0] @ [-1., -10., .05, .3])
        >>> sample = Sample(X, e / (1 + e.sum(axis=1, keepdims=True)), MARKET_COLUMNS, "shares")
        >>> fit = MixedLogit(random=["prices"], nodes=16).fit(sample)
        >>> fit.names[-1], np.round(fit.params, 6).tolist()
        ('L[prices,prices]', [-1.0, -10.0, 0.05, 0.3, 0.0])
        """
        X, y, design, W, columns, present = self._prepare(sample)
        ex = self._extra(design.names)
        mnl = self._mnl(W, y, design.names, present)
        diag = ex["lrow"] == ex["lcol"]
        starts = [(f"MNL+{c}I", np.r_[mnl.x, np.where(diag, c, 0.0)]) for c in (0.5, 1.0)]
        problem = _problem("MXL", W, y, ex, present)
        reflect = (functools.partial(_reflections, problem=problem, K=ex["K"], lrow=ex["lrow"],
                                     lcol=ex["lcol"]) if self.reflect else None)
        enough = None
        if self.starts == "adaptive":
            def enough(cost: float, status: int) -> bool:
                # the first start converged strictly below MNL: the second is not needed
                return status in CONVERGED and cost < mnl.cost * (1 - FOLLOWUP_GAIN)
        sol = self._solve(problem, starts, reflect, enough)
        info = sol.info()
        if mnl.cost < sol.cost:
            # the baseline and Berry starts have L = 0, a stationary point in L, and lead to the
            # MNL fit: it stays a candidate, so the MXL fit is never worse than the MNL it nests
            sol.x = np.r_[mnl.x, np.zeros(len(diag))]
            info.update(cost=float(mnl.cost), start="MNL (L = 0)", status=mnl.status)
        extra = {k: ex[k] for k in ("K", "ridx", "lrow", "lcol", "z")}
        info["random"] = list(ex["random"])
        info["mnl_params"] = mnl.x.tolist()
        info["mnl_cost"] = float(mnl.cost)
        info["mnl_nfev"] = mnl.nfev
        return DemandFit("MXL", sol.x, self.parameter_names(design.names), design, columns,
                         extra=extra, info=info)
