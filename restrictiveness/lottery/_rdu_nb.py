"""Numba kernels of the rank-dependent-utility (RDU/CPT) least-squares fits, and their NumPy twins.

Model (SPEC §6): for a binary lottery ``x = (z_hi, z_lo, p)``,

    f(x) = u⁻¹( w(p) u(z_hi) + (1 − w(p)) u(z_lo) ),
    u(z) = (z + s)^α,   u⁻¹(U) = exp(log(U)/α) − s,

with a fixed utility shift ``s ≥ 0`` (``s = 0``: power utility) and a weighting function indexed
by ``t = ℓ + γ h(p)`` with ``ℓ = log δ``:

* ``WEIGHT_LINEAR`` — ``w(p) = p`` (γ and ℓ have no effect);
* ``WEIGHT_ODDS`` — ``w = δp^γ / (δp^γ + (1 − p)^γ) = σ(t)``, ``h = log(p / (1 − p))``;
* ``WEIGHT_PRELEC`` — ``w = exp(−δ(−log p)^γ) = exp(−e^t)``, ``h = log(−log p)``.

Every kernel takes the full parameter vector ``θ = (α, γ, ℓ)``; a ``free`` mask says which
entries the fit may move. Residuals are ``f − y``; Jacobians are analytic, with respect to
``(α, γ, ℓ)``. The certainty equivalent is computed as ``exp(log(U)/α)`` because α can be 0.01
(``U^{100}``); ``z^α`` with ``z + s = 0`` is 0 and ``U = 0`` (both prizes 0) gives ``f = −s``.

The fit (:func:`fit_rdu`) evaluates the sum of squared residuals on a coarse grid, starts a
bounded Levenberg–Marquardt refinement from the best few *grid-local* minima (points no worse
than their grid neighbours: CPT(α,δ) has genuine separate optima) and from the best grid point
on each face of the parameter box (optima on a bound can end a curved valley whose grid-local
minimum lies elsewhere), and keeps the best. The
refinement is the package's shared bounded Levenberg–Marquardt
(:mod:`restrictiveness.shared._lsq_nb`): a free parameter on a bound whose gradient points
outwards is held there exactly and the steps of the others are projected onto the box, so
estimates land exactly on bounds.

All validation happens in Python before the call (``models.py``); inputs are contiguous float64
(``free`` is an int64 mask).
"""

from __future__ import annotations

import math

import numpy as np

from ..shared._jit import cached_njit
from ..shared._lsq_nb import compile_lm, python_lm
from ..shared._twins import with_globals
from ..shared._vecmath import _FM, _exp, _log

__all__ = [
    "WEIGHT_LINEAR", "WEIGHT_ODDS", "WEIGHT_PRELEC",
    "rdu_values", "rdu_values_numpy",
    "grid_ssr", "grid_ssr_numpy",
    "refine", "refine_numpy",
    "fit_rdu", "fit_rdu_numpy",
]

WEIGHT_LINEAR, WEIGHT_ODDS, WEIGHT_PRELEC = 0, 1, 2


# ---------------------------------------------------------------------------------------------
# pointwise formulas (numba)
# ---------------------------------------------------------------------------------------------

@cached_njit()
def _weight(gamma, ell, p, kind):
    """``(w, 1 − w, ∂w/∂t, h(p))``; the complement is computed directly to avoid cancellation."""
    if kind == WEIGHT_LINEAR:
        return p, 1.0 - p, 0.0, 0.0
    if p <= 0.0:
        return 0.0, 1.0, 0.0, 0.0
    if p >= 1.0:
        return 1.0, 0.0, 0.0, 0.0
    if kind == WEIGHT_ODDS:
        h = math.log(p) - math.log1p(-p)
        t = ell + gamma * h
        if t >= 0.0:
            e = math.exp(-t)
            w, wc = 1.0 / (1.0 + e), e / (1.0 + e)
        else:
            e = math.exp(t)
            w, wc = e / (1.0 + e), 1.0 / (1.0 + e)
        return w, wc, w * wc, h
    # Prelec
    h = math.log(-math.log(p))
    e = math.exp(ell + gamma * h)
    w = math.exp(-e)
    return w, -math.expm1(-e), -e * w, h


@cached_njit()
def _utility(z, shift, alpha):
    """``((z + s)^α, log(z + s))``, with ``0^α = 0`` (its log is unused then)."""
    base = z + shift
    if base <= 0.0:
        return 0.0, 0.0
    lb = math.log(base)
    return math.exp(alpha * lb), lb


@cached_njit()
def rdu_values(theta: np.ndarray, X: np.ndarray, shift: float,
               kind: int) -> tuple[np.ndarray, np.ndarray]:
    """Certainty equivalents ``f`` (n,) and their Jacobian (n, 3) with respect to ``(α, γ, ℓ)``."""
    alpha, gamma, ell = theta[0], theta[1], theta[2]
    n = X.shape[0]
    f = np.empty(n)
    J = np.zeros((n, 3))
    for i in range(n):
        w, wc, dwdt, h = _weight(gamma, ell, X[i, 2], kind)
        a, la = _utility(X[i, 0], shift, alpha)
        b, lb = _utility(X[i, 1], shift, alpha)
        U = w * a + wc * b
        if U <= 0.0:  # both utilities 0: the CE is the (zero) prize whatever the parameters
            f[i] = -shift
            continue
        logU = math.log(U)
        F = math.exp(logU / alpha)
        f[i] = F - shift
        dUda = w * a * la + wc * b * lb
        J[i, 0] = F * (dUda / (alpha * U) - logU / (alpha * alpha))
        dFdw = F / (alpha * U) * (a - b)
        J[i, 1] = dFdw * dwdt * h
        J[i, 2] = dFdw * dwdt
    return f, J


@cached_njit(error_model="numpy", fastmath=_FM)
def grid_ssr(X: np.ndarray, y: np.ndarray, alphas: np.ndarray, gammas: np.ndarray,
             ells: np.ndarray, shift: float, kind: int) -> np.ndarray:
    """Sum of squared residuals on the grid ``alphas × gammas × ells`` (shape (na, ng, nl)).

    The weights are laid out row by row (one row of the ``ng·nl`` weighting parameters per
    lottery), so the inner loop runs over the weighting grid with the lottery's utilities fixed:
    each grid point's sum accumulates lottery by lottery (in the same order as a plain loop), with
    no reduction inside the loop, and the vectorisable ``_log``/``_exp`` make it SIMD code (libm's
    ``log``/``exp`` are scalar calls without Intel SVML: 0.3–0.6× the NumPy twin).
    """
    n = X.shape[0]
    na, ng, nl = alphas.shape[0], gammas.shape[0], ells.shape[0]
    nw = ng * nl
    W = np.empty((n, nw))
    Wc = np.empty((n, nw))
    for i in range(n):
        p = X[i, 2]
        if kind == WEIGHT_LINEAR or p <= 0.0 or p >= 1.0:  # no dependence on (γ, ℓ)
            w, wc, _, _ = _weight(0.0, 0.0, p, kind)
            W[i, :] = w
            Wc[i, :] = wc
            continue
        # as _weight, with h(p) computed once per lottery rather than once per grid point
        if kind == WEIGHT_ODDS:
            h = math.log(p) - math.log1p(-p)
            for j in range(ng):
                for k in range(nl):
                    t = ells[k] + gammas[j] * h
                    e = _exp(-abs(t))
                    d = 1.0 / (1.0 + e)
                    W[i, j * nl + k] = d if t >= 0.0 else e * d
                    Wc[i, j * nl + k] = e * d if t >= 0.0 else d
        else:
            h = math.log(-math.log(p))
            for j in range(ng):
                for k in range(nl):
                    e = math.exp(ells[k] + gammas[j] * h)
                    W[i, j * nl + k] = math.exp(-e)
                    Wc[i, j * nl + k] = -math.expm1(-e)
    out = np.zeros((na, nw))
    for m in range(na):
        inv = 1.0 / alphas[m]
        acc = out[m]
        for i in range(n):
            a = _utility(X[i, 0], shift, alphas[m])[0]
            b = _utility(X[i, 1], shift, alphas[m])[0]
            yi = y[i]
            w_row = W[i]
            wc_row = Wc[i]
            for q in range(nw):
                U = w_row[q] * a + wc_row[q] * b
                pos = U > 0.0
                f = _exp(_log(U if pos else 1.0) * inv)
                r = (f if pos else 0.0) - shift - yi
                acc[q] += r * r
    return out.reshape((na, ng, nl))


# ---------------------------------------------------------------------------------------------
# NumPy twins of the formulas (tests and benchmarks)
# ---------------------------------------------------------------------------------------------

def _weight_numpy(gamma, ell, p, kind):
    p = np.asarray(p, dtype=float)
    if kind == WEIGHT_LINEAR:
        return p, 1.0 - p, np.zeros_like(p), np.zeros_like(p)
    inside = (p > 0) & (p < 1)
    q = np.where(inside, p, 0.5)
    if kind == WEIGHT_ODDS:
        h = np.log(q) - np.log1p(-q)
        t = ell + gamma * h
        w = 0.5 * (1.0 + np.tanh(0.5 * t))      # σ(t), written without overflow
        wc = 0.5 * (1.0 - np.tanh(0.5 * t))
        dwdt = w * wc
    else:
        h = np.log(-np.log(q))
        e = np.exp(ell + gamma * h)
        w, wc, dwdt = np.exp(-e), -np.expm1(-e), -e * np.exp(-e)
    w = np.where(inside, w, (p >= 1).astype(float))
    wc = np.where(inside, wc, (p <= 0).astype(float))
    return w, wc, np.where(inside, dwdt, 0.0), np.where(inside, h, 0.0)


def _utility_numpy(z, shift, alpha):
    base = np.asarray(z, dtype=float) + shift
    pos = base > 0
    lb = np.log(np.where(pos, base, 1.0))
    return np.where(pos, np.exp(alpha * lb), 0.0), lb


def rdu_values_numpy(theta: np.ndarray, X: np.ndarray, shift: float,
                     kind: int) -> tuple[np.ndarray, np.ndarray]:
    """Vectorised NumPy twin of :func:`rdu_values`."""
    alpha, gamma, ell = float(theta[0]), float(theta[1]), float(theta[2])
    w, wc, dwdt, h = _weight_numpy(gamma, ell, X[:, 2], kind)
    a, la = _utility_numpy(X[:, 0], shift, alpha)
    b, lb = _utility_numpy(X[:, 1], shift, alpha)
    U = w * a + wc * b
    pos = U > 0
    Us = np.where(pos, U, 1.0)
    logU = np.log(Us)
    F = np.exp(logU / alpha)
    f = np.where(pos, F - shift, -shift)
    dFdw = F / (alpha * Us) * (a - b)
    J = np.stack([F * ((w * a * la + wc * b * lb) / (alpha * Us) - logU / alpha**2),
                  dFdw * dwdt * h, dFdw * dwdt], axis=1)
    return f, np.where(pos[:, None], J, 0.0)


def grid_ssr_numpy(X: np.ndarray, y: np.ndarray, alphas: np.ndarray, gammas: np.ndarray,
                   ells: np.ndarray, shift: float, kind: int) -> np.ndarray:
    """Broadcast NumPy twin of :func:`grid_ssr`."""
    w, wc, _, _ = _weight_numpy(gammas[:, None, None], ells[None, :, None], X[None, None, :, 2],
                                kind)
    w = np.broadcast_to(w, (len(gammas), len(ells), len(X)))
    wc = np.broadcast_to(wc, w.shape)
    a = _utility_numpy(X[None, :, 0], shift, alphas[:, None])[0]
    b = _utility_numpy(X[None, :, 1], shift, alphas[:, None])[0]
    U = w[None] * a[:, None, None] + wc[None] * b[:, None, None]
    with np.errstate(divide="ignore"):
        f = np.exp(np.log(U) / alphas[:, None, None, None]) - shift
    return ((f - y) ** 2).sum(axis=-1)


# ---------------------------------------------------------------------------------------------
# the refinement (the shared bounded LM on this model's residuals) and the multi-start fit,
# written once for both twins: the NumPy twins run the same source with the NumPy formulas bound
# in place of the compiled ones, so the twin tests check compilation and the formulas rather
# than a second copy of the algorithm
# ---------------------------------------------------------------------------------------------

@cached_njit()
def _residuals(theta, data):
    """Residuals ``f − y`` and their Jacobian: the callback of the shared bounded LM."""
    X, y, shift, kind = data
    f, J = rdu_values(theta, X, shift, kind)
    return f - y, J


def _residuals_numpy(theta, data):
    X, y, shift, kind = data
    f, J = rdu_values_numpy(theta, X, shift, kind)
    return f - y, J


solve = compile_lm(_residuals, "rdu_least_squares")
solve_numpy = python_lm(_residuals_numpy, "rdu_least_squares_numpy")


def _refine_impl(theta0, lo, hi, free, X, y, shift, kind, maxit, tol):
    """Bounded Levenberg–Marquardt from ``theta0``: returns ``(θ, ssr, evaluations)``.

    Only entries with ``free != 0`` move, within ``[lo, hi]``; ``tol`` is the gradient
    tolerance (cosine between the residual and a Jacobian column, as MINPACK's ``gtol``) and
    ``2·maxit`` the evaluation budget. The iteration is the package's shared solver
    (:mod:`restrictiveness.shared._lsq_nb`), run to tight step and objective tolerances.
    """
    x, cost, nfev, _, _ = solve(theta0, lo, hi, free, (X, y, shift, kind), 2 * maxit, tol,
                                1e-13, 1e-15)
    return x, 2.0 * cost, nfev


def _fit_impl(X, y, alphas, gammas, ells, lo, hi, free, shift, kind, n_starts, maxit, tol):
    """Grid plus multi-start bounded LM: returns ``(θ, ssr, starts)``.

    Refinements start from the ``n_starts`` best grid-local minima and from the best grid point
    of each face of the box (a free parameter at one of its bounds). ``starts`` has one row
    ``(α, γ, ℓ, ssr, evaluations)`` per refinement, best grid-local minimum first.
    """
    S = grid_ssr(X, y, alphas, gammas, ells, shift, kind)
    na, ng, nl = S.shape
    # grid points no worse than any of their (up to 26) neighbours
    cand = np.empty(na * ng * nl)
    pos = np.empty((na * ng * nl, 3), dtype=np.int64)
    m = 0
    for a in range(na):
        for b in range(ng):
            for c in range(nl):
                v = S[a, b, c]
                local = True
                for da in range(-1, 2):
                    for db in range(-1, 2):
                        for dc in range(-1, 2):
                            aa, bb, cc = a + da, b + db, c + dc
                            if 0 <= aa < na and 0 <= bb < ng and 0 <= cc < nl:
                                if S[aa, bb, cc] < v:
                                    local = False
                if local:
                    cand[m] = v
                    pos[m, 0], pos[m, 1], pos[m, 2] = a, b, c
                    m += 1
    order = np.argsort(cand[:m])
    chosen = np.empty((min(n_starts, m) + 6, 3), dtype=np.int64)
    nc = 0
    for q in range(min(n_starts, m)):
        chosen[nc, :] = pos[order[q]]
        nc += 1
    # plus the best grid point of each face of the box: an optimum on a bound (α = 1 in most
    # CPT(α) fits) can end a curved valley whose only grid-local minimum lies elsewhere
    for d in range(3):
        size = na if d == 0 else (ng if d == 1 else nl)
        if size == 1:
            continue
        for end in (0, size - 1):
            a0, a1 = (end, end + 1) if d == 0 else (0, na)
            b0, b1 = (end, end + 1) if d == 1 else (0, ng)
            c0, c1 = (end, end + 1) if d == 2 else (0, nl)
            v, fa, fb, fc = np.inf, a0, b0, c0
            for a in range(a0, a1):
                for b in range(b0, b1):
                    for c in range(c0, c1):
                        if S[a, b, c] < v:
                            v, fa, fb, fc = S[a, b, c], a, b, c
            new = True
            for q in range(nc):
                if chosen[q, 0] == fa and chosen[q, 1] == fb and chosen[q, 2] == fc:
                    new = False
            if new:
                chosen[nc, 0], chosen[nc, 1], chosen[nc, 2] = fa, fb, fc
                nc += 1
    starts = np.empty((nc, 5))
    best = np.empty(3)
    best_ssr = np.inf
    theta0 = np.empty(3)
    for q in range(nc):
        theta0[0] = alphas[chosen[q, 0]]
        theta0[1] = gammas[chosen[q, 1]]
        theta0[2] = ells[chosen[q, 2]]
        x, ssr, it = refine(theta0, lo, hi, free, X, y, shift, kind, maxit, tol)
        starts[q, 0], starts[q, 1], starts[q, 2] = x[0], x[1], x[2]
        starts[q, 3], starts[q, 4] = ssr, it
        if ssr < best_ssr:
            best_ssr = ssr
            best[:] = x
    return best, best_ssr, starts


refine = cached_njit()(_refine_impl)
fit_rdu = cached_njit()(_fit_impl)
refine_numpy = with_globals(_refine_impl, solve=solve_numpy)
fit_rdu_numpy = with_globals(_fit_impl, grid_ssr=grid_ssr_numpy, refine=refine_numpy)
