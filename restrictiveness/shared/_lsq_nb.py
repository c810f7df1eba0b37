"""Bounded nonlinear least squares: a compiled Levenberg–Marquardt around a residual callback.

Minimises ``½ Σ r_i(θ)²`` over the box ``lo ≤ θ ≤ hi`` (entries may be ``±inf``), moving only
the entries with ``free != 0``. The problem is a numba-jitted callback
``resjac(θ, data) -> (r, J)`` returning the residuals ``(m,)`` and their Jacobian ``(m, p)``;
``data`` is whatever the callback needs (a tuple of arrays). :func:`compile_lm` binds a callback
into the solver and compiles the whole loop, so an iteration runs no Python: each evaluation is
one call of the callback, and the linear algebra is on ``p × p`` matrices.

The method is an active-set projected Levenberg–Marquardt (Moré 1978's scaling and tests, with
Nielsen's damping update) whose model switches to a structured quasi-Newton Hessian when the
residuals are large (the NL2SOL idea; Dennis, Gay & Welsch 1981; Fletcher & Xu 1987):

* **model** — the objective's Hessian is ``JᵀJ + S`` with ``S = Σ r_i ∇²r_i``. Gauss–Newton
  drops ``S``, which is fast when the fit is close but converges only linearly, often with a
  rate near 1, when the residuals stay large (a misspecified model fitted to a pseudo-truth:
  mixed logit needed 300–3,000 evaluations). ``S`` is estimated from the Jacobians already
  computed by the Dennis–Gay–Welsch secant update (with NL2SOL's sizing factor), at no extra
  evaluation; a step uses ``JᵀJ + S`` when the previous accepted step reduced the objective by
  less than :data:`SWITCH` (20%), and ``JᵀJ`` otherwise. A problem that can compute ``S``
  exactly (``second_order`` of :func:`compile_lm`; the mixed logit's adds about half an
  evaluation) has it computed with the residuals at the trial points of steps that use it, and
  an accepted point's exact ``S`` replaces the secant estimate (which stays for the steps after
  a Gauss–Newton one): Newton's method in the fit's slow phase, where the secant estimate took
  many steps to learn a curvature that changes along the path (mixed logit: 40% fewer
  evaluations, and starts ending in lower minima). A step of ``JᵀJ + S`` that fails
  twice (no decrease, or the model not positive definite) is retried as Gauss–Newton at the
  same damping before the damping grows further (NL2SOL's switch on a failed step: otherwise a
  poor ``S`` on a small-residual fit was damped to nothing and stopped by "no decrease" far
  from the optimum, NIST's MGH17, MGH10 and Bennett5).
* **bounds** — a free entry on a bound whose gradient points outwards is *held*; the damped
  step of the others, ``(H + μD²) s = −g`` with ``H`` the model Hessian and ``g = Jᵀr`` over the
  moving set, is projected onto the box, so estimates land exactly on bounds. A start or iterate
  within rounding of a bound (``|θ − b| ≤ 1e-9·max(1, |b|)``, the margin a strictly feasible
  method such as scipy's ``trf`` leaves) is put *on* it, and a step that reaches a new bound is
  never taken as convergence: otherwise a step towards a bound a few ulps away is truncated to
  those ulps and the step test fires on a step that never happened (the stall this module was
  written to remove). An entry ``x`` with ``free == ROOT`` stands for ``θ = x² ≥ 0`` (no bound
  at ``x = 0``, so the solver can cross it) and is held while ``θ`` is within
  :data:`BOUND_RTOL` of 0 and the gradient pulls it there: the gradient test's cosine, invariant
  to the entry's scale, is the one in ``θ`` and stays large at an optimum on ``θ = 0``, where
  every mixed-logit start whose Cholesky diagonal went to 0 ended with a futile restart (8 of
  its 50–160 evaluations).
* **scaling** — ``D² = max`` over iterations of ``diag(JᵀJ)`` (MINPACK's ``mode=1``), so the
  steps are invariant to the parameters' units.
* **damping** — ``μ`` starts at 1e-3; an accepted step (strict decrease) multiplies it by
  ``max(1/3, 1 − (2ρ − 1)³)`` with ρ the ratio of actual to predicted reduction (not below
  :data:`MU_MIN`); a rejected one
  (or a model matrix that is not positive definite) by ``ν`` (2, doubling after each rejection).
* **convergence** — on the moving set: the largest cosine between the residual vector and a
  Jacobian column is at most ``gtol`` (MINPACK's gradient test; scale-free); or an accepted,
  lightly damped (``μ ≤ 1``) step that reached no new bound either moved θ by at most
  ``xtol (xtol + ‖θ‖)`` or changed the objective by at most ``ftol`` relative, with a predicted
  reduction as small (MINPACK's tests; the objective test holds on a step that fails too, as in
  MINPACK's ``lmder``: at an optimum to rounding, where a Newton step lands after its last real
  reduction, the damping otherwise grew for about ten more evaluations until "no decrease at
  any damping"). Those two tests, and "no decrease at any damping", also
  fire where steps are short because the scaling is stale: ``D²`` keeps the Jacobian of
  iterations where it was orders of magnitude larger (``a e^{bx}`` with ``x`` in the thousands
  from a large ``a``), so ``μD²`` damps every step to nothing far from the optimum (they
  reported convergence at up to 1e25 times the optimal objective, the residuals still along a
  Jacobian column). So such a stop counts only where the gradient cosine is at most
  :data:`STATIONARY`; elsewhere ``D²``, ``μ`` and the second-order term start afresh from the
  current point (at most :data:`MAX_RESTARTS` times). No decrease from there at a damping up to
  :data:`PROBE_MU`, or a stop with no gain since that restart, is an optimum to rounding (a
  degenerate one, where a Jacobian column vanishes: the mixed logit's at ``L = 0``) and keeps
  its status; one that gained in every restart is status 7.
* **budget** — at most ``max_nfev`` evaluations of the callback (the start included; each one
  also returns the Jacobian, since least-squares steps are accepted far more often than not).

Status codes (:data:`STATUS`): 0 the evaluation budget ran out; 1 gradient test; 2 objective
test; 3 step test; 4 exact fit; 5 nothing can move (no free entry, or every one held on a
bound); 6 no decrease at any damping (optimal to rounding); 7 stalled away from a stationary
point. Everything but 0 and 7 is convergence (:data:`CONVERGED`).

The NumPy twin of a compiled solver is the same source run as plain Python with a NumPy callback
(:func:`python_lm`), so the twin tests check compilation and the callback rather than a second
copy of the algorithm. numba caches each compiled solver on disk under its own ``name``.
"""

from __future__ import annotations

import hashlib
import inspect
import math
import types
from pathlib import Path

import numba
import numpy as np

from ._jit import cached_njit, kernel_digest
from .exceptions import ConfigurationError

__all__ = ["compile_lm", "python_lm", "STATUS", "CONVERGED", "BOUND_RTOL", "ROOT"]

#: Meaning of the status codes the solvers return.
STATUS = {0: "evaluation budget exhausted", 1: "gradient test (gtol)",
          2: "objective test (ftol)", 3: "step test (xtol)", 4: "exact fit",
          5: "every free parameter held on a bound", 6: "no decrease at any damping",
          7: "stalled away from a stationary point"}
#: The status codes that are convergence (0 and 7 are not).
CONVERGED = frozenset({1, 2, 3, 4, 5, 6})
#: Largest residual–column cosine (the gradient test's measure) at which a stop by the step,
#: objective or no-decrease test is convergence; stops there measured at most 3e-8, stops away
#: from a stationary point at least 2e-2 (11 badly scaled problems × 60 starts).
STATIONARY = 1e-4
#: Fresh starts of the scaling and damping a solve may make after such a stop, and the
#: relative gain since the last one that makes another stop away from a stationary point a
#: stall rather than an optimum to rounding.
MAX_RESTARTS, RESTART_GAIN = 3, 1e-9
#: Damping (relative to the restarted scaling) beyond which steps after a restart that all
#: failed make the stop an optimum to rounding.
PROBE_MU = 1e4

#: A parameter this close to a bound (relative to ``max(1, |bound|)``) is on it.
BOUND_RTOL = 1e-9
#: ``free`` code of an entry ``x`` that is the root of a nonnegative parameter ``θ = x²`` (the
#: mixed logit's Cholesky diagonals): held near ``x = 0`` like an entry on a bound.
ROOT = 2
#: Initial damping, relative to the scaling D².
MU0 = 1e-3
#: Smallest damping. Without it, about 650 accepted steps in a row (a slow fit with a large
#: max_nfev) underflowed μ to 0, and a rejection then never raised it (0·ν; NaN once ν
#: overflowed): an endless loop. Not larger: with a stale scaling D² (up to 1e22·diag JᵀJ, module
#: notes) a floor of 1e-20 damped steps and stalled fits.
MU_MIN = 1e-300
#: Relative reduction below which the next step uses the second-order term (Fletcher–Xu).
SWITCH = 0.2


def _snap(x, lo, hi, free):
    """Clip the free entries of ``x`` to the box and put those within rounding of a bound on
    it (in place); returns whether any entry is on a bound."""
    on = False
    for a in range(x.shape[0]):
        if free[a] == 0:
            continue
        v = min(max(x[a], lo[a]), hi[a])
        if v - lo[a] <= BOUND_RTOL * max(1.0, abs(lo[a])):
            v = lo[a]
            on = True
        elif hi[a] - v <= BOUND_RTOL * max(1.0, abs(hi[a])):
            v = hi[a]
            on = True
        x[a] = v
    return on


def _sum_squares(r):
    s = 0.0
    for i in range(r.shape[0]):
        s += r[i] * r[i]
    return s if math.isfinite(s) else math.inf


def resjac(theta, data):  # pragma: no cover - every bound copy of the solver replaces it
    """The callback global that :func:`compile_lm` and :func:`python_lm` bind."""
    raise NotImplementedError("bind a callback with compile_lm or python_lm")


#: Whether the bound problem gives the exact second-order term (``second_order``); a global of
#: each bound copy of the solver, like ``resjac``.
EXACT = False
#: ``second_order(θ, data) -> (r, J, S)``, bound with ``EXACT`` (None without).
second_order = None


def _lm_impl(x0, lo, hi, free, data, max_nfev, gtol, xtol, ftol):
    """Bounded Levenberg–Marquardt from ``x0`` (module docstring).

    Returns ``(x, cost, nfev, status, optimality)``: the estimate, ``½ Σ r²`` there, the
    callback evaluations used, the status code and the largest residual–column cosine over the
    entries free to move at the estimate (0 when none is).
    """
    p = x0.shape[0]
    x = x0.copy()
    _snap(x, lo, hi, free)
    r, J = resjac(x, data)
    nfev = 1
    ssr = _sum_squares(r)
    g = np.dot(J.T, r)
    G = np.dot(J.T, J)
    S = np.zeros((p, p))          # secant estimate of Σ r_i ∇²r_i
    second = False                # model Hessian G + S instead of G
    d2 = np.zeros(p)
    idx = np.zeros(p, dtype=np.int64)
    H = np.zeros((p, p))
    M = np.zeros((p, p))
    s = np.zeros(p)
    xn = np.empty(p)
    dx = np.empty(p)
    mu, nu = MU0, 2.0
    status = 0
    restarts = 0
    restart_ssr = math.inf
    probing = False               # the lightly damped steps after a restart (see below)
    probed = 0                    # the status of the stop that restart questioned
    while math.isfinite(ssr):     # a non-finite start has nowhere to go
        if ssr == 0.0:
            status = 4
            break
        k = _moving(x, lo, hi, free, g, idx)
        for q in range(k):
            d2[idx[q]] = max(d2[idx[q]], G[idx[q], idx[q]])
        if k == 0:
            status = 5
            break
        if _optimality(G, g, ssr, idx, k) <= gtol:
            status = 1
            break
        if nfev >= max_nfev:
            break
        for a in range(p):
            for c in range(p):
                H[a, c] = G[a, c] + S[a, c] if second else G[a, c]
        dmax = 0.0
        for q in range(k):
            dmax = max(dmax, d2[idx[q]])
        floor = 1e-12 * dmax + 1e-300
        accepted = False
        while not accepted:
            # damped model equations on the moving set, (H + μD²) s = −g, by Cholesky (a
            # failure, possible when H = G + S is indefinite, means more damping)
            for q in range(k):
                for c in range(k):
                    M[q, c] = H[idx[q], idx[c]]
                M[q, q] += mu * max(d2[idx[q]], floor)
            if _cholesky_solve(M, g, idx, k, s):
                for a in range(p):
                    xn[a] = x[a]
                for q in range(k):
                    xn[idx[q]] = x[idx[q]] + s[q]
                _snap(xn, lo, hi, free)
                # a bound reached by this step (rather than one the point already sat on)
                newly = False
                step = 0.0
                xnorm = 0.0
                for a in range(p):
                    dx[a] = xn[a] - x[a]
                    step += dx[a] * dx[a]
                    xnorm += x[a] * x[a]
                    if dx[a] != 0.0 and (xn[a] == lo[a] or xn[a] == hi[a]):
                        newly = True
                if step > 0.0:
                    # the model's second-order term at the trial point: exact where the
                    # problem gives it and the next model will likely use it (numba drops
                    # this branch when it does not: EXACT is a compile-time constant)
                    if EXACT and second:
                        rn, Jn, Sn = second_order(xn, data)
                        exact = True
                    else:
                        rn, Jn = resjac(xn, data)
                        Sn = S
                        exact = False
                    nfev += 1
                    ssrn = _sum_squares(rn)
                    # reduction the model predicted along the projected step
                    pred = 0.0
                    for a in range(p):
                        pred -= 2.0 * g[a] * dx[a]
                        for c in range(p):
                            pred -= dx[a] * H[a, c] * dx[c]
                    actual = ssr - ssrn
                    rho = actual / pred if pred > 0.0 else 0.0
                    # convergence tests only on steps near the model's minimiser: a heavily
                    # damped step is short because of μ, not because θ has converged
                    near = mu <= 1.0 and not newly
                    # MINPACK's objective test, on a failed step too (as lmder's): one that
                    # fails by rounding at the optimum, where a Newton step with the exact
                    # second-order term lands after its last real reduction (otherwise the
                    # damping grew for about ten more evaluations, to status 6)
                    small_f = (abs(actual) <= ftol * ssr and 0.0 < pred <= ftol * ssr
                               and rho <= 2.0)
                    if ssrn < ssr:
                        small_x = math.sqrt(step) <= xtol * (xtol + math.sqrt(xnorm))
                        gn = np.dot(Jn.T, rn)
                        if exact:
                            S[:, :] = Sn
                        else:
                            _secant_update(S, dx, gn - g, gn - np.dot(J.T, rn))
                        # Gauss–Newton while it makes fast progress; a slow reduction means
                        # large residuals, where the second-order term matters (Fletcher–Xu)
                        second = actual < SWITCH * ssr
                        x[:] = xn
                        r, J, ssr, g = rn, Jn, ssrn, gn
                        G = np.dot(J.T, J)
                        mu = max(mu * max(1.0 / 3.0, 1.0 - (2.0 * rho - 1.0) ** 3), MU_MIN)
                        nu = 2.0
                        accepted = True
                        probing = False
                        if near and small_f:
                            status = 2
                        elif near and small_x:
                            status = 3
                        continue
                    if near and small_f:
                        status = 2
                        break
                    if nfev >= max_nfev:
                        break
            if second and nu > 2.0:
                # the step of the model with S failed twice (no decrease, or the model
                # indefinite): retry it as Gauss–Newton at the same damping before damping
                # more, as NL2SOL switches models on a failed step. Kept, S stalled
                # small-residual fits far from the optimum (NIST's MGH17, Bennett5: no decrease
                # at any damping). Not after the first failure: on the mixed logit's large
                # residuals that cost 4% more evaluations (median) and a fit its budget
                # (1 of 50 samples at n = 100, 9.0e-3 above scipy's dogbox)
                second = False
                for a in range(p):
                    for c in range(p):
                        H[a, c] = G[a, c]
                continue
            if probing and mu >= PROBE_MU:
                # the lightly damped steps after a restart failed as well: no decrease even on
                # the current Jacobian's scale, so the stop was an optimum to rounding after all
                status = probed
                break
            mu *= nu
            nu *= 2.0
            if mu > 1e20:
                status = 6
                break
        if status == 2 or status == 3 or status == 6:
            # the step and objective tests (and no decrease) also fire where steps are short
            # for another reason than an optimum: a scaling D² kept from iterations where the
            # Jacobian was orders of magnitude larger damps every step to nothing. Away from a
            # stationary point the scaling and damping start afresh; no decrease then at
            # μ ≤ PROBE_MU, or a stop with no gain since, is an optimum to rounding (a
            # degenerate one: a Jacobian column vanishing there, as the mixed logit's at
            # L = 0), and a stop after a gain in every restart is not convergence
            k = _moving(x, lo, hi, free, g, idx)
            if (k > 0 and _optimality(G, g, ssr, idx, k) > STATIONARY
                    and ssr < restart_ssr * (1.0 - RESTART_GAIN)):
                if restarts < MAX_RESTARTS and nfev < max_nfev:
                    restarts += 1
                    restart_ssr = ssr
                    probing, probed = True, status
                    for a in range(p):
                        d2[a] = 0.0
                        for c in range(p):
                            S[a, c] = 0.0
                    second = False
                    mu, nu = MU0, 2.0
                    status = 0
                    continue
                status = 7
        if status != 0 or not accepted:
            break
    opt = 0.0
    if math.isfinite(ssr) and ssr > 0.0:
        k = _moving(x, lo, hi, free, g, idx)
        opt = _optimality(G, g, ssr, idx, k)
    return x, 0.5 * ssr, nfev, status, opt


def _moving(x, lo, hi, free, g, idx):
    """Write the entries free to move (free and not held on a bound by an outward gradient)
    to ``idx``; returns their count. A :data:`ROOT` entry ``x`` of ``θ = x² ≥ 0`` is on that
    bound when ``θ ≤`` :data:`BOUND_RTOL`, and held there when the gradient pulls it to 0
    (``x g ≥ 0``: ``∂f/∂θ = g / 2x ≥ 0``)."""
    k = 0
    for a in range(x.shape[0]):
        if free[a] == 0:
            continue
        if (x[a] <= lo[a] and g[a] > 0.0) or (x[a] >= hi[a] and g[a] < 0.0):
            continue
        if free[a] == ROOT and x[a] * x[a] <= BOUND_RTOL and x[a] * g[a] >= 0.0:
            continue
        idx[k] = a
        k += 1
    return k


def _optimality(G, g, ssr, idx, k):
    """Largest cosine between the residuals and a moving Jacobian column (MINPACK's gtol)."""
    opt = 0.0
    for q in range(k):
        a = idx[q]
        scale = G[a, a] * ssr  # 0 at an exact fit (ssr = 0): a ZeroDivisionError in numba
        if scale > 0.0:
            opt = max(opt, abs(g[a]) / math.sqrt(scale))
    return opt


def _cholesky_solve(M, g, idx, k, s):
    """Solve ``M[:k, :k] s = −g[idx]`` by Cholesky in place; False if M is not positive
    definite."""
    for q in range(k):
        v = M[q, q]
        for c in range(q):
            v -= M[q, c] * M[q, c]
        if not v > 0.0:
            return False
        M[q, q] = math.sqrt(v)
        for c in range(q + 1, k):
            v2 = M[c, q]
            for e in range(q):
                v2 -= M[c, e] * M[q, e]
            M[c, q] = v2 / M[q, q]
    for q in range(k):
        v = -g[idx[q]]
        for c in range(q):
            v -= M[q, c] * s[c]
        s[q] = v / M[q, q]
    for q in range(k - 1, -1, -1):
        v = s[q]
        for c in range(q + 1, k):
            v -= M[c, q] * s[c]
        s[q] = v / M[q, q]
    return True


def _secant_update(S, dx, y, ysharp):
    """Dennis–Gay–Welsch update of the second-order term ``S`` in place (NL2SOL), with
    ``y`` the change of the gradient and ``y# = (J_new − J_old)ᵀ r_new`` over the step ``dx``;
    ``S`` is first shrunk by ``min(1, |dxᵀy#| / |dxᵀ S dx|)``. Skipped without curvature
    (``dxᵀy ≤ 0``)."""
    p = dx.shape[0]
    sy = 0.0
    ssh = 0.0
    sSs = 0.0
    for a in range(p):
        sy += dx[a] * y[a]
        ssh += dx[a] * ysharp[a]
        for c in range(p):
            sSs += dx[a] * S[a, c] * dx[c]
    # sy² underflows to 0 for a vanishing step (an exact fit reached, e.g. every CE at a zero
    # low prize): a ZeroDivisionError in numba below, and no curvature to learn anyway
    if not sy > 0.0 or not sy * sy > 0.0:
        return
    tau = min(1.0, abs(ssh) / abs(sSs)) if sSs != 0.0 else 1.0
    v = np.empty(p)
    for a in range(p):
        acc = 0.0
        for c in range(p):
            S[a, c] *= tau
            acc += S[a, c] * dx[c]
        v[a] = ysharp[a] - acc
    vs = 0.0
    for a in range(p):
        vs += v[a] * dx[a]
    for a in range(p):
        for c in range(p):
            S[a, c] += (v[a] * y[c] + y[a] * v[c]) / sy - vs * y[a] * y[c] / (sy * sy)


#: name -> the callback it was compiled with (names key numba's on-disk cache)
_REGISTRY: dict[str, str] = {}


def _source_digest(*callbacks) -> str:
    """Digest of the package's kernel modules and the callbacks': numba keys a cached function on
    its own file only, so the cache name carries them all (an edited callback gets a fresh
    entry)."""
    h = hashlib.sha256(kernel_digest(Path(__file__).resolve().parents[1]).encode())
    for callback in callbacks:
        if callback is None:
            continue
        try:
            h.update(Path(inspect.getfile(getattr(callback, "py_func", callback))).read_bytes())
        except (TypeError, OSError):      # a callback without a source file is not cached
            pass
    return h.hexdigest()[:16]


def _bind(resjac, name: str, compiled: bool, exact=None):
    """A copy of the solver source whose global ``resjac`` is the given callback, and
    ``second_order`` the exact one if any (and whose helpers are compiled or plain Python
    alike)."""
    env = dict(_lm_impl.__globals__)
    env["resjac"] = resjac
    env["second_order"] = exact
    env["EXACT"] = exact is not None
    if not compiled:
        for helper in _HELPERS:
            env[helper.__name__] = helper
    func = types.FunctionType(_lm_impl.__code__, env, name, _lm_impl.__defaults__)
    # numba names the cache files after the qualified name: one per bound callback
    func.__qualname__ = name
    func.__doc__ = _lm_impl.__doc__
    return func


def compile_lm(resjac, name: str, cache: bool = True, second_order=None):
    """The bounded LM bound to a jitted callback and compiled (cached on disk as ``name``).

    Parameters
    ----------
    resjac : numba dispatcher
        ``resjac(θ, data) -> (r, J)``: residuals ``(m,)`` and Jacobian ``(m, p)`` at ``θ``.
    name : str
        A name unique in the package: the solver's cache entry is filed under it (with a digest
        of this module's and the callback module's source, so editing either recompiles).
    cache : bool
        Cache the compiled solver on disk (for callbacks defined in the package; an ad-hoc
        callback, e.g. in a test, should not be cached: numba keys the entry on this module's
        source only).
    second_order : numba dispatcher, optional
        ``second_order(θ, data) -> (r, J, S)``: the same and the exact second-order term
        ``S = Σ_i r_i ∇²r_i`` ``(p, p)``. Given, the model uses it in place of the secant
        estimate where it uses the term at all (module docstring), and the solver calls it
        instead of ``resjac`` at the trial points of those steps.

    Returns
    -------
    callable
        ``solve(x0, lo, hi, free, data, max_nfev, gtol, xtol, ftol) -> (x, cost, nfev, status,
        optimality)`` with ``x0, lo, hi`` float64 ``(p,)``, ``free`` int64 ``(p,)`` (nonzero:
        the entry may move; :data:`ROOT`: it is the root of a nonnegative parameter),
        ``max_nfev`` an int ≥ 1 and the tolerances floats (module docstring).

    Examples
    --------
    >>> import numba, numpy as np
    >>> @numba.njit
    ... def line(theta, data):
    ...     t, y = data
    ...     return theta[0] + theta[1] * t - y, np.stack((np.ones_like(t), t), axis=1)
    >>> solve = compile_lm(line, "doctest_line", cache=False)
    >>> t = np.arange(5.0)
    >>> x, cost, nfev, status, opt = solve(np.zeros(2), np.array([-9., 0.5]),
    ...     np.array([9., 9.]), np.ones(2, np.int64), (t, 1 + 0.2 * t), 100, 1e-10, 1e-10, 1e-10)
    >>> np.round(x, 6).tolist(), status > 0    # the slope is held on its lower bound 0.5
    ([0.4, 0.5], True)
    """
    if not name.isidentifier():
        raise ConfigurationError(f"compile_lm: name must be an identifier, got {name!r}")
    origin = " + ".join(f"{getattr(f, '__module__', '?')}.{getattr(f, '__qualname__', f)}"
                        for f in (resjac, second_order) if f is not None)
    if _REGISTRY.setdefault(name, origin) != origin:
        raise ConfigurationError(f"compile_lm: name {name!r} is already bound to "
                                 f"{_REGISTRY[name]}; choose another (it keys the disk cache)")
    digest = _source_digest(resjac, second_order)
    return numba.njit(cache=cache)(_bind(resjac, f"{name}_{digest}", True, second_order))


def python_lm(resjac, name: str = "lm_numpy", second_order=None):
    """The same solver as plain Python around Python callbacks (the NumPy twin).

    Same arguments and returns as the function :func:`compile_lm` makes.
    """
    return _bind(resjac, name, False, second_order)


_HELPERS = (_snap, _sum_squares, _moving, _optimality, _cholesky_solve, _secant_update)
(_snap, _sum_squares, _moving, _optimality, _cholesky_solve,
 _secant_update) = (cached_njit()(f) for f in _HELPERS)
