"""Sensitivity of restrictiveness comparisons to the evaluation distribution (SPEC §4).

The M pseudo-truths of a study are reweighted by density ratios ``w`` in

    W_{Γ,M} = { w ∈ R^M : mean(w) = 1,  1/Γ ≤ w_m ≤ Γ },   Γ ≥ 1,

and the paired difference Δ(w) = Σ w_m (D_am − D_bm) / Σ w_m B_m is bounded below and above over
W_{Γ,M} (App. C.1 of the paper). A single procedure's restrictiveness is the same program with
D_b = 0. The functions here are pure array functions: they take per-replication losses, already
averaged within each pseudo-truth (S.1.6), and know nothing of studies or results objects.

Algorithm. Δ(w) is linear-fractional and W_{Γ,M} is a box cut by one hyperplane, so the optimum
is at a vertex of W_{Γ,M}: ``k = floor(M / (Γ + 1))`` weights at Γ, one weight at the value
``u`` that makes the mean one, and the rest at 1/Γ. For the maximum, Dinkelbach's method solves
``max_w Σ w_m (a_m − λ b_m)`` exactly for a given λ by sorting ``a − λ b`` (the largest k units
get Γ, the next gets u) and sets λ to the ratio at the maximiser; λ increases strictly until no
vertex improves on it, which certifies optimality, so the answer is the exact optimum of the
program up to rounding (no step size, no tolerance). All Γ values are solved together, one sort of
an (len(Γ), M) array per iteration. :func:`bounds_lp` solves the same program through the
Charnes–Cooper linear program and serves as the reference in tests and benchmarks.
"""

from __future__ import annotations

import numpy as np
from numpy.typing import ArrayLike

from ..shared.exceptions import ConfigurationError, DataError, RestrictivenessError

__all__ = ["bounds", "bounds_lp", "critical_gamma", "format_critical", "vertex_weights"]


# ---------------------------------------------------------------------------- validation


def _losses(x: ArrayLike, name: str) -> np.ndarray:
    """Per-replication losses as a finite float vector; (M, K) inputs are averaged over K."""
    arr = np.asarray(x, dtype=float)
    if arr.ndim == 2:
        # Within-function averaging (S.1.6): procedures may have fewer draws, NaN-padded.
        empty = np.isnan(arr).all(axis=1)
        if empty.any():
            raise DataError(
                f"{name} has replications with no finite draw (rows "
                f"{np.flatnonzero(empty)[:5].tolist()}); every replication needs "
                "at least one loss"
            )
        arr = np.nanmean(arr, axis=1)
    elif arr.ndim != 1:
        raise DataError(
            f"{name} must be 1-D (replications) or 2-D (replications × draws); "
            f"got shape {arr.shape}"
        )
    if arr.size == 0:
        raise DataError(f"{name} is empty; at least one replication is needed")
    if not np.isfinite(arr).all():
        raise DataError(
            f"{name} contains NaN or inf at replications "
            f"{np.flatnonzero(~np.isfinite(arr))[:5].tolist()}; drop or repair them"
        )
    return arr


def _inputs(
    numerator_a: ArrayLike, numerator_b: ArrayLike | None, denominator: ArrayLike
) -> tuple[np.ndarray, np.ndarray]:
    """Differences a = D_a − D_b and baseline b, validated."""
    da = _losses(numerator_a, "numerator_a")
    b = _losses(denominator, "denominator")
    if da.shape != b.shape:
        raise DataError(f"numerator_a has {da.size} replications but denominator has {b.size}")
    if numerator_b is None:
        a = da
    else:
        db = _losses(numerator_b, "numerator_b")
        if db.shape != b.shape:
            raise DataError(f"numerator_b has {db.size} replications but denominator has {b.size}")
        a = da - db
    if (b < 0).any():
        raise DataError(
            "denominator must be nonnegative (it is a baseline loss); negative at "
            f"replications {np.flatnonzero(b < 0)[:5].tolist()}"
        )
    if not (b > 0).any():
        raise DataError("denominator is zero in every replication; the ratio is undefined")
    return a, b


def _gammas(gamma: ArrayLike, name: str = "gamma") -> tuple[np.ndarray, bool]:
    """Γ values as a float vector, and whether the input was a scalar."""
    if np.asarray(gamma).dtype.kind not in "iuf":  # "2" and True were read as 2.0 and 1.0
        raise ConfigurationError(f"{name} must be a number or numbers; got {gamma!r}")
    g = np.asarray(gamma, dtype=float)
    if g.size == 0:  # gave an empty table
        raise ConfigurationError(f"{name} is empty; give at least one value >= 1")
    if g.ndim > 1:
        raise ConfigurationError(f"{name} must be a scalar or 1-D array; got shape {g.shape}")
    if not np.isfinite(g).all():
        raise ConfigurationError(f"{name} must be finite; got {g}")
    if (g < 1).any():
        raise ConfigurationError(
            f"{name} must be >= 1 (Γ = 1 is uniform weights); got "
            f"{g[g < 1][:5].tolist() if g.ndim else float(g)}"
        )
    return np.atleast_1d(g), g.ndim == 0


def _gamma_max(value: ArrayLike) -> float:
    """The end Γ_max of the critical-value search: one number >= 1."""
    if np.ndim(value) != 0:  # [2, 3] was a bare "too many values to unpack"
        raise ConfigurationError(f"gamma_max must be one number >= 1, the end of the Γ* search; "
                                 f"got {value!r} (bounds over a grid of Γ: sensitivity(gamma=...))")
    (g,), _ = _gammas(value, "gamma_max")
    return float(g)


# ---------------------------------------------------------------------------- vertices


def vertex_weights(gamma: ArrayLike, m: int) -> np.ndarray:
    """Weights of a vertex of W_{Γ,M} in decreasing order: k at Γ, one at u, the rest at 1/Γ.

    Every vertex of W_{Γ,M} is a permutation of this vector, with ``k = floor(M / (Γ + 1))``
    (the mean constraint leaves a share 1/(Γ + 1) of the units at the upper bound).

    Parameters
    ----------
    gamma : float or array_like
        Γ ≥ 1, a scalar or a 1-D array of G values.
    m : int
        Number of replications M ≥ 1.

    Returns
    -------
    ndarray
        Shape ``(M,)`` for scalar Γ, ``(G, M)`` otherwise; each row has mean one.

    Examples
    --------
    >>> vertex_weights(2.0, 4)
    array([2. , 1. , 0.5, 0.5])
    """
    g, scalar = _gammas(gamma)
    if int(m) != m or m < 1:
        raise ConfigurationError(f"m must be a positive integer; got {m}")
    m = int(m)
    s = m / (g + 1.0)
    k = np.minimum(np.floor(s), m - 1).astype(np.intp)
    lo, hi = 1.0 / g, g
    # The one free weight closes the mean constraint; clipping only absorbs rounding.
    u = np.clip(m - k * hi - (m - k - 1) * lo, lo, hi)
    rank = np.arange(m)
    w = np.where(rank[None, :] < k[:, None], hi[:, None], lo[:, None])
    w[np.arange(g.size), k] = u
    return w[0] if scalar else w


# ---------------------------------------------------------------------------- exact bounds


def _max_ratio(a: np.ndarray, b: np.ndarray, w_rank: np.ndarray) -> np.ndarray:
    """Max over the vertices (rows of ``w_rank``, permuted freely) of Σ w a / Σ w b (Dinkelbach)."""
    g, m = w_rank.shape
    # Start at uniform weights (computed like every other ratio, so Γ = 1 is reproduced).
    lam = (np.ones((1, m)) @ a) / (np.ones((1, m)) @ b)
    lam = np.repeat(lam, g)
    todo = np.arange(g)
    # Each pass strictly increases λ on the rows kept, over a finite set of vertices.
    for _ in range(10 * m + 100):
        c = a[None, :] - lam[todo, None] * b[None, :]
        order = np.argsort(-c, axis=1, kind="stable")
        w = np.empty((todo.size, m))
        np.put_along_axis(w, order, w_rank[todo], axis=1)
        new = (w @ a) / (w @ b)
        better = new > lam[todo]
        lam[todo[better]] = new[better]
        todo = todo[better]
        if todo.size == 0:
            return lam
    raise RestrictivenessError(
        "sensitivity bounds did not converge; please report this input"
    )  # pragma: no cover - finite-vertex guarantee


def bounds(
    numerator_a: ArrayLike,
    numerator_b: ArrayLike | None,
    denominator: ArrayLike,
    gamma: ArrayLike = 2.0,
) -> tuple[np.ndarray | float, np.ndarray | float]:
    """Lower and upper bounds of a reweighted restrictiveness difference over W_{Γ,M}.

    Computes ``min`` and ``max`` over ``w ∈ W_{Γ,M} = {mean(w) = 1, 1/Γ ≤ w_m ≤ Γ}`` of

        Δ(w) = Σ_m w_m (D_am − D_bm) / Σ_m w_m B_m,

    exactly (see the module docstring for the algorithm), for every Γ at once.

    Parameters
    ----------
    numerator_a : array_like
        Losses D_a of procedure a, shape ``(M,)``, or ``(M, K)`` for K training draws per
        pseudo-truth: 2-D inputs are averaged over axis 1 with ``nanmean`` (within-function
        averaging, S.1.6), so procedures with fewer draws can be NaN-padded.
    numerator_b : array_like or None
        Losses D_b of procedure b, same rules; ``None`` (or zeros) bounds procedure a's own
        restrictiveness D̄_a / B̄.
    denominator : array_like
        Baseline losses B, nonnegative and not all zero, same rules.
    gamma : float or array_like, default 2.0
        Γ ≥ 1, a scalar or a 1-D grid. Γ = 1 gives the point estimate Σ(D_a − D_b) / ΣB.

    Returns
    -------
    lower, upper : float or ndarray
        Floats for scalar ``gamma``, arrays of ``len(gamma)`` otherwise.

    Raises
    ------
    DataError
        Losses with NaN/inf (after averaging), mismatched replications, or a negative or
        all-zero denominator.
    ConfigurationError
        ``gamma`` below one, non-finite or not 1-D.

    Examples
    --------
    >>> import numpy as np
    >>> da, db, b = np.array([1.0, 2.0, 3.0, 4.0]), np.array([0.5, 1.0, 1.0, 3.0]), np.ones(4)
    >>> lo, hi = bounds(da, db, b, gamma=1.0)
    >>> float(lo), float(hi)
    (1.125, 1.125)
    >>> lo, hi = bounds(da, db, b, gamma=[1.5, 2.0])
    >>> lo, hi
    (array([0.97916667, 0.875     ]), array([1.29166667, 1.4375    ]))
    """
    a, b = _inputs(numerator_a, numerator_b, denominator)
    g, scalar = _gammas(gamma)
    w_rank = vertex_weights(g, a.size)
    # Uniform weights lie in every W_Γ, so the bounds bracket Δ̂; computed from means, as
    # Results computes the estimate, it is Γ = 1's answer to the bit (the dot products of the
    # vertex search summed in another order and could land an ulp above the estimate).
    est = a.mean() / b.mean()
    upper = np.maximum(_max_ratio(a, b, w_rank), est)
    lower = np.minimum(-_max_ratio(-a, b, w_rank), est)
    lower[g == 1.0] = upper[g == 1.0] = est
    if scalar:
        return float(lower[0]), float(upper[0])
    return lower, upper


def bounds_lp(
    numerator_a: ArrayLike,
    numerator_b: ArrayLike | None,
    denominator: ArrayLike,
    gamma: ArrayLike = 2.0,
) -> tuple[np.ndarray | float, np.ndarray | float]:
    """The bounds of :func:`bounds` by the Charnes–Cooper linear program (reference solver).

    With ``t = ΣB / Σ w_m B_m`` and ``v = t w`` the program becomes the LP
    ``max / min aᵀv`` subject to ``Bᵀv = ΣB``, ``Σ v = M t``, ``t/Γ ≤ v_m ≤ Γ t``, ``t ≥ 0``,
    solved by HiGHS (``scipy.optimize.linprog(method="highs")``), two LPs per Γ. Slower than
    :func:`bounds` by orders of magnitude; kept to check it.

    Parameters
    ----------
    numerator_a, numerator_b, denominator, gamma
        As in :func:`bounds`.

    Returns
    -------
    lower, upper : float or ndarray
        As in :func:`bounds`.

    Examples
    --------
    >>> import numpy as np
    >>> lo, hi = bounds_lp([1.0, 2.0, 3.0, 4.0], [0.5, 1.0, 1.0, 3.0], np.ones(4), gamma=2.0)
    >>> lo, hi
    (0.875, 1.4375)
    """
    from scipy.optimize import linprog

    a, b = _inputs(numerator_a, numerator_b, denominator)
    g, scalar = _gammas(gamma)
    # Ratios are scale free; a unit-mean baseline keeps the LP well scaled (v ≈ w, t ≈ 1).
    scale = b.mean()
    a, b = a / scale, b / scale
    m = a.size
    eye = np.eye(m)
    a_eq = np.zeros((2, m + 1))
    a_eq[0, :m] = b
    a_eq[1, :m], a_eq[1, m] = 1.0, -m
    b_eq = np.array([b.sum(), 0.0])
    var_bounds = [(None, None)] * m + [(0.0, None)]
    opts = {"primal_feasibility_tolerance": 1e-10, "dual_feasibility_tolerance": 1e-10}
    lower, upper = np.empty(g.size), np.empty(g.size)
    for i, gi in enumerate(g):
        # v_m − Γ t ≤ 0 and t/Γ − v_m ≤ 0
        a_ub = np.block([[eye, -gi * np.ones((m, 1))], [-eye, np.ones((m, 1)) / gi]])
        b_ub = np.zeros(2 * m)
        for sign, out in ((1.0, lower), (-1.0, upper)):
            res = linprog(
                np.append(sign * a, 0.0),
                A_ub=a_ub,
                b_ub=b_ub,
                A_eq=a_eq,
                b_eq=b_eq,
                bounds=var_bounds,
                method="highs",
                options=opts,
            )
            if res.status != 0:  # pragma: no cover - the program is always feasible, bounded
                raise RestrictivenessError(f"linprog failed at gamma={gi}: {res.message}")
            v = res.x[:m]
            out[i] = (a @ v) / (b @ v)
    if scalar:
        return float(lower[0]), float(upper[0])
    return lower, upper


# ---------------------------------------------------------------------------- critical Γ


def _min_weighted_sum(a_sorted: np.ndarray, gamma: float) -> float:
    """min over W_{Γ,M} of Σ w_m a_m, for ``a`` sorted ascending (Γ on the smallest units)."""
    return float(vertex_weights(gamma, a_sorted.size) @ a_sorted)


def critical_gamma(
    numerator_a: ArrayLike,
    numerator_b: ArrayLike | None,
    denominator: ArrayLike,
    gamma_max: float = 3.0,
    tol: float = 1e-12,
) -> float:
    """Smallest Γ at which the lower bound of :func:`bounds` is ≤ 0 (the critical value Γ*).

    The lower bound is nonincreasing in Γ (the sets W_{Γ,M} grow), and, the denominator being
    positive, it is ≤ 0 exactly when ``min_{w ∈ W_Γ} Σ w_m (D_am − D_bm) ≤ 0`` — a sorted
    weighted sum, cheap to evaluate — so Γ* is found by bisection on that sign.

    Parameters
    ----------
    numerator_a, numerator_b, denominator
        As in :func:`bounds` (2-D inputs are averaged over draws).
    gamma_max : float, default 3.0
        End of the search range.
    tol : float, default 1e-12
        Width of the final bisection bracket relative to Γ. The default makes Γ* exact to
        rounding, so a table's three decimals are Γ*'s own (a bracket of 1e-3 printed 1.516
        for 1.5147).

    Returns
    -------
    float
        ``1.0`` when Δ̂ ≤ 0 already at uniform weights; ``inf`` when the lower bound stays
        positive through ``gamma_max``; otherwise the upper end Γ* of a bracket of width ≤ ``tol``
        with lower(Γ*) ≤ 0 < lower(Γ* − tol).

    Examples
    --------
    >>> import numpy as np
    >>> b = np.ones(4)
    >>> critical_gamma([1.0, 2.0, 3.0, 4.0], [0.5, 1.0, 1.0, 3.0], b)
    inf
    >>> round(critical_gamma([1.0, 2.0, 3.0, 4.0], [1.2, 1.0, 2.5, 4.5], b), 9)
    1.514667915
    >>> critical_gamma([1.0, 2.0, 3.0, 4.0], [1.2, 1.0, 4.5, 4.5], b)
    1.0
    """
    a, _ = _inputs(numerator_a, numerator_b, denominator)
    gmax = _gamma_max(gamma_max)
    if not (np.isfinite(tol) and tol > 0):
        raise ConfigurationError(f"tol must be positive and finite; got {tol}")
    a_sorted = np.sort(a)
    if _min_weighted_sum(a_sorted, 1.0) <= 0:
        return 1.0
    if _min_weighted_sum(a_sorted, gmax) > 0:
        return float("inf")
    lo, hi = 1.0, gmax  # sign > 0 at lo, <= 0 at hi
    # the bracket relative to Γ (and no narrower than the floats between lo and hi): an
    # absolute 1e-12 cannot be reached once Γ* >= 8192, where neighbouring floats are further
    # apart, and the search never ended
    while hi - lo > tol * hi:
        mid = 0.5 * (lo + hi)
        if not lo < mid < hi:
            break
        if _min_weighted_sum(a_sorted, mid) > 0:
            lo = mid
        else:
            hi = mid
    return float(hi)


def format_critical(value: float, gamma_max: float = 3.0) -> str:
    """Print a critical value as in the paper's tables: ``"> 3"``, ``"1"`` or ``"2.410"``.

    Parameters
    ----------
    value : float
        Output of :func:`critical_gamma`.
    gamma_max : float, default 3.0
        The search limit used; values above it (``inf``) print as ``"> gamma_max"``.

    Returns
    -------
    str

    Examples
    --------
    >>> format_critical(float("inf")), format_critical(1.0), format_critical(2.41)
    ('> 3', '1', '2.410')
    """
    if np.isnan(value):
        raise ConfigurationError("value is NaN; expected a critical Γ from critical_gamma")
    if value > gamma_max:
        return f"> {gamma_max:g}"
    if value == 1.0:
        return "1"
    return f"{value:.3f}"
