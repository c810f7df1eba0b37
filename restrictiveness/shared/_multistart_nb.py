"""Multistart bounded least squares: screen many points, refine the best distinct ones.

The global search of the nonlinear-formula models (:class:`restrictiveness.NLS`), compiled:

1. every screening point is evaluated (residuals only) and its sum of squares recorded; a
   point of group 0 whose model is linear in some entries (``linear`` nonzero: the residuals are
   ``A(θ_N) θ_L − b(θ_N)`` in them) is first *projected*: those entries are replaced by their
   least-squares values given the others (variable projection, Golub & Pereyra 1973; one
   Gauss–Newton step on them, exact for a linear block, then clipped to the box), so the
   screening searches the nonlinear entries only (each projected point costs an evaluation
   with the Jacobian and one without);
2. refinements start from the ``n_refine`` best points of group 0 that lie at least
   ``min_dist`` apart (Euclidean distance in box-width units, so one basin does not take every
   start), then from the best point of every other group (one group per face of the box, per
   edge, the corners: the caller decides), skipping points already chosen; points whose sum of
   squares is not finite are never chosen;
3. each refinement is the package's bounded Levenberg–Marquardt
   (:mod:`restrictiveness.shared._lsq_nb`), and the best one wins (the first on ties).

The model is a *first-class* numba function ``fun(x, args, want_jac) -> (r, J)`` passed at run
time (``want_jac=False`` may return a Jacobian with no rows: screening needs residuals only).
:func:`multistart_for` compiles the driver once per callback *type* and caches it on disk, so a
model generated at run time (a formula) compiles only its own small callback, not the solver.
The solver reaches the callback through a trampoline, :func:`_call`, bound into it with
:func:`~restrictiveness.shared._lsq_nb.compile_lm`.

:func:`multistart_numpy` is the NumPy twin (the same source, interpreted, around a Python
callback and the solver's own twin).
"""

from __future__ import annotations

import functools
import math
import warnings

import numba
import numpy as np

from ._jit import cached_njit
from ._lsq_nb import compile_lm, python_lm
from ._twins import with_globals

__all__ = ["multistart_for", "multistart_numpy", "RECORD"]

#: Layout of a refinement record, after the ``2p`` start and end coordinates.
RECORD = ("ssr", "nfev", "status", "optimality")


def _call(theta, data):
    """Trampoline: the solver's callback is the first-class function carried in ``data``."""
    fun, args = data
    return fun(theta, args, True)


def _project(fun, args, x, lo, hi, linear):
    """Replace the entries of ``x`` the model is linear in (``linear``: 1 on the linear scale,
    2 searched on the log scale, ``θ = e^x``) by their least-squares values given the others,
    clipped to the box (in place); False, ``x`` untouched, where the residuals or Jacobian are
    not finite."""
    r, J = fun(x.copy(), args, True)
    m = r.shape[0]
    kl = 0
    for a in range(x.shape[0]):
        if linear[a] != 0:
            kl += 1
    A = np.empty((m, kl))
    theta = np.empty(kl)
    q = 0
    for a in range(x.shape[0]):
        if linear[a] != 0:
            theta[q] = math.exp(x[a]) if linear[a] == 2 else x[a]
            for i in range(m):
                # the Jacobian of θ = e^x is the natural one times θ
                A[i, q] = J[i, a] / theta[q] if linear[a] == 2 else J[i, a]
            q += 1
    for i in range(m):
        if not math.isfinite(r[i]):
            return False
        for q in range(kl):
            if not math.isfinite(A[i, q]):
                return False
    # the residuals are affine in θ_L: θ_L + δ with A δ ≈ −r minimises them exactly; the
    # singular values below 1e-12 of the largest are cut (exponentials with close rates)
    delta = np.linalg.lstsq(A, -r, 1e-12)[0]
    q = 0
    for a in range(x.shape[0]):
        if linear[a] != 0:
            v = theta[q] + delta[q]
            if linear[a] == 2:
                v = math.log(min(max(v, math.exp(lo[a])), math.exp(hi[a])))
            x[a] = min(max(v, lo[a]), hi[a])
            q += 1
    return True


def _multistart_impl(fun, args, points, group, lo, hi, free, linear, n_refine, min_dist,
                     max_nfev, gtol, xtol, ftol):
    """Screen ``points`` (those of group 0 projected on the entries ``linear`` marks), refine the
    best distinct ones, keep the best (module docstring).

    Returns ``(x, ssr, records, evaluations)``: the best refined point and its sum of squares;
    one record per refinement ``[start (p), end (p), ssr, nfev, status, optimality]`` in the
    order refined (a projected start as projected); and the residual evaluations spent in all
    (screening included).
    """
    S, p = points.shape
    points = points.copy()        # the caller's (cached) points stay as they are
    project = False
    for a in range(p):
        if linear[a] != 0:
            project = True
    evaluations = S
    sse = np.empty(S)
    for s in range(S):
        if project and group[s] == 0:
            x = points[s].copy()
            evaluations += 1
            if _project(fun, args, x, lo, hi, linear):
                points[s] = x
        r, _ = fun(points[s].copy(), args, False)
        v = 0.0
        for i in range(r.shape[0]):
            v += r[i] * r[i]
        sse[s] = v if math.isfinite(v) else np.inf
    order = np.argsort(sse)
    width = np.empty(p)
    for a in range(p):
        width[a] = hi[a] - lo[a] if hi[a] > lo[a] else 1.0
    chosen = np.empty(S, dtype=np.int64)
    nc = 0
    for q in range(S):
        s = order[q]
        if nc >= n_refine or not sse[s] < np.inf:
            break
        if group[s] != 0:
            continue
        far = True
        for c in range(nc):
            d = 0.0
            for a in range(p):
                d += ((points[s, a] - points[chosen[c], a]) / width[a]) ** 2
            if math.sqrt(d) < min_dist:
                far = False
                break
        if far:
            chosen[nc] = s
            nc += 1
    n_groups = 0
    for s in range(S):
        n_groups = max(n_groups, group[s] + 1)
    for gi in range(1, n_groups):
        for q in range(S):
            s = order[q]
            if not sse[s] < np.inf:
                break
            if group[s] != gi:
                continue
            new = True
            for c in range(nc):
                same = True
                for a in range(p):
                    if points[s, a] != points[chosen[c], a]:
                        same = False
                if same:
                    new = False
            if new:
                chosen[nc] = s
                nc += 1
            break
    records = np.empty((nc, 2 * p + 4))
    best = np.empty(p)
    best_ssr = np.inf
    data = (fun, args)
    for c in range(nc):
        x0 = points[chosen[c]].copy()
        x, cost, nfev, status, opt = solve(x0, lo, hi, free, data, max_nfev, gtol, xtol, ftol)
        evaluations += nfev
        for a in range(p):
            records[c, a] = x0[a]
            records[c, p + a] = x[a]
        records[c, 2 * p] = 2.0 * cost
        records[c, 2 * p + 1] = nfev
        records[c, 2 * p + 2] = status
        records[c, 2 * p + 3] = opt
        if 2.0 * cost < best_ssr:
            best_ssr = 2.0 * cost
            best[:] = x
    return best, best_ssr, records, evaluations


solve = compile_lm(cached_njit()(_call), "multistart_callback")
_project_numpy = _project
_project = cached_njit()(_project)
#: NumPy twin: the driver's source around the solver's twin (pass a Python callback).
multistart_numpy = with_globals(_multistart_impl, solve=python_lm(_call, "multistart_numpy"),
                                _project=_project_numpy)


@functools.cache
def multistart_for(callback: numba.types.FunctionType):
    """The multistart driver compiled once, and cached on disk, for callbacks of one type.

    Parameters
    ----------
    callback : numba.types.FunctionType
        ``FunctionType(Tuple((r, J))(x, args, bool))``, with ``x, r`` float64 ``(p,)``/``(n,)``
        C arrays and ``J`` a float64 C matrix; any jitted function of that signature can then be
        passed without recompiling.

    Returns
    -------
    callable
        ``driver(fun, args, points, group, lo, hi, free, linear, n_refine, min_dist, max_nfev,
        gtol, xtol, ftol) -> (x, ssr, records, evaluations)`` with ``points`` float64
        ``(S, p)``, ``group`` int64 ``(S,)``, ``lo, hi`` float64 ``(p,)``, ``free`` and
        ``linear`` int64 ``(p,)`` (``linear``: 0, or the entries the model is linear in, 1 on
        the linear scale and 2 on the log scale; all 0 screens without projection).
    """
    args_type = callback.signature.args[1]
    f8, i8 = numba.float64, numba.int64
    sig = (callback, args_type, f8[:, ::1], i8[::1], f8[::1], f8[::1], i8[::1], i8[::1], i8, f8,
           i8, f8, f8, f8)
    with warnings.catch_warnings():  # numba calls first-class functions "experimental"
        warnings.simplefilter("ignore", numba.NumbaExperimentalFeatureWarning)
        return cached_njit([sig])(_multistart_impl)
