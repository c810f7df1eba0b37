"""Two-nest logit shares and the least-squares residuals and Jacobian of their fit (numba), with
their NumPy twins. Multinomial logit is the case ``ρ = 0``.

Product ``j`` of a market is in nest ``g_j ∈ {0, 1}``; with ``λ_m = 1 − ρ_m``,
``u_j = δ_j / λ_{g_j}``, ``D_m = Σ_{k∈m} e^{u_k}`` (an empty nest contributes nothing),

``s_j = e^{u_j} D_{g_j}^{−ρ_{g_j}} / (1 + Σ_m D_m^{λ_m})``,

and, with the within-nest shares ``s_{j|m} = e^{u_j}/D_m`` and the nest shares
``s_m = D_m^{λ_m} / (1 + Σ_m D_m^{λ_m})``,

``∂ log s_j/∂δ_k = [j = k]/λ_{g_j} − (ρ_{g_j}/λ_{g_j}) [g_j = g_k] s_{k|g_j} − s_k``,
``∂ log s_j/∂ρ_m = [g_j = m](u_j/λ_m − log D_m − ρ_m ū_m/λ_m) − s_m (ū_m − log D_m)``,
``ū_m = Σ_{k∈m} s_{k|m} u_k``.

At ``ρ = 0`` these are the multinomial logit's shares and derivatives whatever the nests, so the
MNL fit is this fit with ``ρ`` held at 0. A product with ``g_j = −1`` is absent (it pads a market
with fewer products): it is in no nest, its share is 0 and its residual and Jacobian row are 0.
Logarithms of the sums are taken after shifting by their maxima, so no utility overflows.
:func:`nl_resjac` is the callback of the compiled least-squares solver :data:`solve_nl`
(:mod:`restrictiveness.shared._lsq_nb`);
:func:`nl_resjac_numpy` is its vectorised NumPy twin and :func:`nl_parts` the NumPy formulas the
fitted models predict with.
"""

from __future__ import annotations

import math

import numpy as np

from ..shared._jit import cached_njit
from ..shared._lsq_nb import compile_lm

__all__ = ["nl_parts", "nl_shares", "nl_dlog_ddelta", "nl_resjac", "nl_resjac_numpy",
           "solve_nl"]


# --------------------------------------------------------------------------- NumPy formulas


def nl_parts(delta: np.ndarray, g: np.ndarray, rho: np.ndarray):
    """Log shares and the pieces of their derivatives, for markets ``(n, J)``: ``(log s, u, λ,
    log D (n, 2), s_{j|g_j} (n, J), s_m (n, 2))``."""
    lam = 1.0 - rho                                     # (2,)
    absent = g < 0
    u = delta / lam[g]                                  # δ_j / (1 − ρ_{m_j})
    logD = np.empty((delta.shape[0], 2))
    for m in (0, 1):
        um = np.where(g == m, u, -np.inf)
        top = um.max(axis=1)
        safe = np.where(np.isfinite(top), top, 0.0)
        with np.errstate(divide="ignore"):
            logD[:, m] = safe + np.log(np.exp(um - safe[:, None]).sum(axis=1))
    t = lam[None, :] * logD                             # log D_m^{1−ρ_m}; −inf when empty
    logden = np.logaddexp(0.0, np.logaddexp(t[:, 0], t[:, 1]))
    logD_j = np.take_along_axis(logD, np.where(absent, 0, g), axis=1)
    with np.errstate(invalid="ignore"):     # an absent product's (replaced below) in an empty nest
        logs = u - rho[g] * logD_j - logden[:, None]
        cond = np.exp(u - logD_j)                       # s_{j|m_j}
    nest_share = np.exp(t - logden[:, None])            # s_m, 0 for an empty nest
    if absent.any():
        logs, cond = np.where(absent, -np.inf, logs), np.where(absent, 0.0, cond)
    return logs, u, lam, logD, cond, nest_share


def nl_shares(delta: np.ndarray, g: np.ndarray, rho: np.ndarray) -> np.ndarray:
    """Inside shares ``(n, J)`` of the two-nest logit."""
    return np.exp(nl_parts(delta, g, rho)[0])


def nl_dlog_ddelta(s, g, rho, cond):
    """``∂ log s_j / ∂ δ_k`` (n, J, J) for the two-nest logit."""
    J = s.shape[1]
    lam = 1.0 - rho
    same = g[:, :, None] == g[:, None, :]
    r = (rho / lam)[g][:, :, None]
    return (np.eye(J)[None] / lam[g][:, :, None] - r * same * cond[:, None, :]
            - s[:, None, :])


def nl_resjac_numpy(theta: np.ndarray, data: tuple) -> tuple[np.ndarray, np.ndarray]:
    """NumPy twin of :func:`nl_resjac`, from the formulas of the module docstring."""
    W, g, y = data
    n, J, K = W.shape
    beta, rho = theta[:K], theta[K:]
    present = g >= 0
    logs, u, lam, logD, cond, ns = nl_parts(W @ beta, g, rho)
    s = np.exp(logs)
    dd = nl_dlog_ddelta(s, g, rho, cond)                # (n, J, J)
    jb = s[:, :, None] * np.einsum("mjk,mka->mja", dd, W)
    jr = np.empty((n, J, 2))
    for m in (0, 1):
        inm = g == m
        ubar = np.where(inm, cond * u, 0.0).sum(axis=1)          # Σ_{k∈m} s_{k|m} u_k
        with np.errstate(invalid="ignore"):
            outer = np.where(ns[:, m] > 0, ns[:, m] * (ubar - logD[:, m]), 0.0)
        own = np.where(inm, u / lam[m] - logD[:, [m]] - rho[m] * ubar[:, None] / lam[m], 0.0)
        jr[:, :, m] = s * (own - outer[:, None])
    jac = np.concatenate([jb, jr], axis=2)
    jac[~present] = 0.0
    return np.where(present, s - y, 0.0).ravel(), jac.reshape(n * J, K + 2)


# --------------------------------------------------------------------------- compiled


@cached_njit()
def nl_resjac(theta, data):
    """Residuals ``s(θ) − y`` (flattened, ``n·J``) and their Jacobian ``(n·J, K + 2)`` in
    ``θ = (β, ρ_0, ρ_1)``.

    ``data = (W, g, y)``: the design ``(n, J, K)`` (C-contiguous float64), the nest of every
    product ``(n, J)`` (int64, 0 or 1; −1 for an absent product, whose residual and Jacobian row
    are 0) and the inside shares ``(n, J)``.
    """
    W, g, y = data
    n, J, K = W.shape
    P = K + 2
    r = np.empty(n * J)
    jac = np.zeros((n * J, P))
    lam = np.empty(2)
    rho = np.empty(2)
    for m in range(2):
        rho[m] = theta[K + m]
        lam[m] = 1.0 - rho[m]
    u = np.empty(J)
    s = np.empty(J)
    cond = np.empty(J)
    logD = np.empty(2)
    ns = np.empty(2)
    ubar = np.empty(2)
    cbar = np.empty((2, K))     # Σ_{k∈m} s_{k|m} W_k
    sbar = np.empty(K)          # Σ_k s_k W_k
    for i in range(n):
        Wi = W[i]
        top = np.full(2, -np.inf)
        for j in range(J):
            if g[i, j] < 0:
                continue
            d = 0.0
            for a in range(K):
                d += Wi[j, a] * theta[a]
            u[j] = d / lam[g[i, j]]
            top[g[i, j]] = max(top[g[i, j]], u[j])
        for m in range(2):
            if top[m] == -np.inf:
                logD[m] = -np.inf
                continue
            acc = 0.0
            for j in range(J):
                if g[i, j] == m:
                    acc += math.exp(u[j] - top[m])
            logD[m] = top[m] + math.log(acc)
        # log(1 + Σ_m D_m^{λ_m}), shifted by the largest term (the outside good's 0 included)
        tmax = 0.0
        for m in range(2):
            if logD[m] > -np.inf:
                tmax = max(tmax, lam[m] * logD[m])
        acc = math.exp(-tmax)
        for m in range(2):
            if logD[m] > -np.inf:
                acc += math.exp(lam[m] * logD[m] - tmax)
        logden = tmax + math.log(acc)
        for m in range(2):
            ns[m] = math.exp(lam[m] * logD[m] - logden) if logD[m] > -np.inf else 0.0
            ubar[m] = 0.0
            for a in range(K):
                cbar[m, a] = 0.0
        for a in range(K):
            sbar[a] = 0.0
        for j in range(J):
            m = g[i, j]
            if m < 0:
                continue
            s[j] = math.exp(u[j] - rho[m] * logD[m] - logden)
            cond[j] = math.exp(u[j] - logD[m])
            ubar[m] += cond[j] * u[j]
            for a in range(K):
                cbar[m, a] += cond[j] * Wi[j, a]
                sbar[a] += s[j] * Wi[j, a]
        for j in range(J):
            m = g[i, j]
            row = i * J + j
            if m < 0:           # absent: its Jacobian row stays 0
                r[row] = 0.0
                continue
            r[row] = s[j] - y[i, j]
            c = rho[m] / lam[m]
            for a in range(K):
                jac[row, a] = s[j] * (Wi[j, a] / lam[m] - c * cbar[m, a] - sbar[a])
            for q in range(2):
                own = 0.0
                if q == m:
                    own = u[j] / lam[q] - logD[q] - rho[q] * ubar[q] / lam[q]
                outer = ns[q] * (ubar[q] - logD[q]) if ns[q] > 0.0 else 0.0
                jac[row, K + q] = s[j] * (own - outer)
    return r, jac


#: The compiled bounded LM on the nested-logit (and, with ρ held at 0, MNL) residuals.
solve_nl = compile_lm(nl_resjac, "demand_nested_logit")
