"""Random-coefficients (mixed) logit shares and their Jacobian over markets × antithetic nodes.

Consumer type ``r`` in market ``m`` has utility ``u_mrj = delta_mj + mu_mrj`` for product ``j``,
with ``mu_mrj = Σ_a nu_ra W_mj,ridx[a]``, and the outside good has utility 0, so
``s_mj = mean_r exp(u_mrj) / (1 + Σ_k exp(u_mrk))``. The nodes come in antithetic pairs: the
functions take the first half ``nu`` (``(H, Kr)``) and use ``+nu`` and ``-nu``, 2H nodes in all
(node ``H + h`` is ``-nu_h``). With the mean utility ``delta = W β`` and ``nu = z Lᵀ`` (``z`` the
standard-normal half nodes, ``L`` the lower-triangular Cholesky factor of the random coefficients'
covariance), the Jacobian is

``∂s_j/∂β_a = s_j W_ja − mean_r s_rj w̄_ra``, with ``w̄_ra = Σ_k s_rk W_ka``,
``∂s_j/∂L_ab = W_jc mean_r s_rj z_rb − mean_r s_rj w̄_rc z_rb``, with ``c = ridx[a]``.

Why it is fast: the pairing gives ``exp(δ_j − μ_hj) = exp(δ_j) / exp(μ_hj)``, so one exponential
serves two nodes, and those exponentials are taken by NumPy's SIMD ``exp`` on one contiguous
array (numba's scalar ``exp`` is ~5× slower without Intel SVML); the compiled kernels do the rest
in loops that run along the contiguous product axis. A market whose utilities could overflow
(``max|δ| + max|μ| ≥ 600``) takes max-shifted exponentials inside the kernel instead. Small matrix
products are loops, not BLAS calls: with inner dimensions of 4–24 a threaded BLAS is slower, and
badly so on a busy machine.

Every compiled kernel (``*_nb``) has a plain-NumPy twin (``*_numpy``); tests assert they agree.
Inputs are validated by the callers in :mod:`restrictiveness.demand.models`; the kernels expect
C-contiguous float64 arrays and int64 index arrays.
"""

from __future__ import annotations

import numba
import numpy as np

__all__ = ["random_utilities_nb", "random_utilities_numpy", "node_probabilities_nb",
           "node_probabilities_numpy", "mean_probabilities_nb", "mean_probabilities_numpy",
           "safe_markets",
           "probability_jacobian_nb", "probability_jacobian_numpy", "mxl_shares",
           "mxl_shares_numpy", "mxl_probabilities", "mxl_jacobian", "mxl_jacobian_numpy"]

# |utility| below this bound can neither overflow exp (e^600 ≈ 1e260) nor underflow to zero.
_SAFE = 600.0


# --------------------------------------------------------------------------- utilities


@numba.njit(cache=True, fastmath=True)
def random_utilities_nb(WrT, nu):
    """Taste-shock utilities ``mu (n, H, J)`` from ``WrT (n, Kr, J)`` and half nodes ``nu (H, Kr)``.

    ``WrT`` holds the random-coefficient columns of the design, transposed so that the product
    axis is contiguous.
    """
    n, kr, J = WrT.shape
    H = nu.shape[0]
    out = np.zeros((n, H, J))
    for m in range(n):
        for h in range(H):
            row = out[m, h]
            for a in range(kr):
                v = nu[h, a]
                w = WrT[m, a]
                for j in range(J):
                    row[j] += v * w[j]
    return out


def random_utilities_numpy(WrT: np.ndarray, nu: np.ndarray) -> np.ndarray:
    """NumPy twin of :func:`random_utilities_nb`."""
    return np.einsum("maj,ha->mhj", WrT, nu)


# --------------------------------------------------------------------------- probabilities


@numba.njit(cache=True, fastmath=True)
def _shifted_pair(d, mu_h, sp, sm):
    """Probabilities of the node pair (+nu_h, −nu_h) with max-shifted exponentials (any size)."""
    J = d.shape[0]
    mp = 0.0   # the outside good's utility 0 enters the max
    mm = 0.0
    for j in range(J):
        mp = max(mp, d[j] + mu_h[j])
        mm = max(mm, d[j] - mu_h[j])
    tp = np.exp(-mp)
    tm = np.exp(-mm)
    for j in range(J):
        sp[j] = np.exp(d[j] + mu_h[j] - mp)
        sm[j] = np.exp(d[j] - mu_h[j] - mm)
        tp += sp[j]
        tm += sm[j]
    for j in range(J):
        sp[j] /= tp
        sm[j] /= tm


@numba.njit(cache=True, fastmath=True)
def mean_probabilities_nb(delta, mu, emu, fast):
    """Inside shares ``(n, J)``: choice probabilities averaged over the 2H antithetic nodes.

    Parameters
    ----------
    delta : ndarray, shape (n, J)
        Mean utilities.
    mu : ndarray, shape (n, H, J)
        Taste-shock utilities at the first half of the nodes (the other half is ``-mu``).
    emu : ndarray, shape (n, H, J)
        ``exp(mu)`` (read only in markets flagged ``fast``).
    fast : ndarray of bool, shape (n,)
        Markets where ``max|δ| + max|μ| < 600``, so ``exp(δ ± μ)`` can neither overflow nor
        underflow and one exponential serves a node pair (:func:`safe_markets`).
    """
    n, H, J = mu.shape
    out = np.zeros((n, J))
    ed = np.empty(J)
    sp = np.empty(J)
    sm = np.empty(J)
    for m in range(n):
        d = delta[m]
        if fast[m]:
            for j in range(J):
                ed[j] = np.exp(d[j])
            for h in range(H):
                e = emu[m, h]
                tp = 1.0
                tm = 1.0
                for j in range(J):
                    a = ed[j] * e[j]
                    b = ed[j] / e[j]
                    sp[j] = a
                    sm[j] = b
                    tp += a
                    tm += b
                ip = 1.0 / tp
                im = 1.0 / tm
                for j in range(J):
                    out[m, j] += sp[j] * ip + sm[j] * im
        else:
            for h in range(H):
                _shifted_pair(d, mu[m, h], sp, sm)
                for j in range(J):
                    out[m, j] += sp[j] + sm[j]
    return out * (0.5 / H)


@numba.njit(cache=True, fastmath=True)
def node_probabilities_nb(delta, mu, emu, fast):
    """Choice probabilities at every node, ``(n, 2H, J)`` (nodes ``+nu`` first, then ``-nu``),
    and their mean over nodes, the inside shares ``(n, J)``.

    Arguments as in :func:`mean_probabilities_nb`.
    """
    n, H, J = mu.shape
    out = np.empty((n, 2 * H, J))
    mean = np.zeros((n, J))
    ed = np.empty(J)
    for m in range(n):
        d = delta[m]
        if fast[m]:
            for j in range(J):
                ed[j] = np.exp(d[j])
            for h in range(H):
                e = emu[m, h]
                sp = out[m, h]
                sm = out[m, H + h]
                tp = 1.0
                tm = 1.0
                for j in range(J):
                    a = ed[j] * e[j]
                    b = ed[j] / e[j]
                    sp[j] = a
                    sm[j] = b
                    tp += a
                    tm += b
                ip = 1.0 / tp
                im = 1.0 / tm
                for j in range(J):
                    sp[j] *= ip
                    sm[j] *= im
                    mean[m, j] += sp[j] + sm[j]
        else:
            for h in range(H):
                _shifted_pair(d, mu[m, h], out[m, h], out[m, H + h])
                for j in range(J):
                    mean[m, j] += out[m, h, j] + out[m, H + h, j]
    return out, mean * (0.5 / H)


def safe_markets(delta: np.ndarray, WrT: np.ndarray, nu: np.ndarray) -> np.ndarray:
    """Markets where a cheap bound guarantees ``max|δ| + max|μ| < 600`` (boolean ``(n,)``).

    ``|μ_hj| ≤ Σ_a max_h |nu_ha| · max_j |W_ja|``: the bound costs ``n·J·Kr`` operations instead
    of a scan over every node.
    """
    bound = np.abs(WrT).max(axis=2) @ np.abs(nu).max(axis=0)
    return np.ascontiguousarray(np.abs(delta).max(axis=1) + bound < _SAFE)


def node_probabilities_numpy(delta: np.ndarray,
                             mu: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """NumPy twin of :func:`node_probabilities_nb` (needs no ``emu``)."""
    U = delta[:, None, :] + np.concatenate([mu, -mu], axis=1)
    top = np.maximum(U.max(axis=2, keepdims=True), 0.0)
    E = np.exp(U - top)
    S = E / (np.exp(-top) + E.sum(axis=2, keepdims=True))
    return S, S.mean(axis=1)


def mean_probabilities_numpy(delta: np.ndarray, mu: np.ndarray) -> np.ndarray:
    """NumPy twin of :func:`mean_probabilities_nb`."""
    return node_probabilities_numpy(delta, mu)[1]


# --------------------------------------------------------------------------- Jacobian


@numba.njit(cache=True, fastmath=True)
def probability_jacobian_nb(S, W, WT, ridx, z, lrow, lcol):
    """Shares and their (β, L) Jacobian from node probabilities ``S (n, 2H, J)``.

    Parameters
    ----------
    S : ndarray, shape (n, 2H, J)
        Node probabilities (:func:`node_probabilities_nb`).
    W : ndarray, shape (n, J, K)
        Design; ``WT`` is the same transposed, ``(n, K, J)``.
    ridx : ndarray of int64, shape (Kr,)
        Design columns with random coefficients.
    z : ndarray, shape (H, Kr)
        Standard-normal half nodes (node ``H + h`` is ``-z_h``).
    lrow, lcol : ndarray of int64, shape (nL,)
        Positions (a, b) of the free Cholesky entries among the random terms.

    Returns
    -------
    shares : ndarray, shape (n, J)
    jac : ndarray, shape (n, J, K + nL)
    """
    n, R, J = S.shape
    K = W.shape[2]
    H = z.shape[0]
    nL = lrow.shape[0]
    shares = np.empty((n, J))
    jac = np.empty((n, J, K + nL))
    wbar = np.empty(K)
    acc_b = np.empty((K, J))
    acc_z = np.empty((z.shape[1], J))
    acc_q = np.empty((nL, J))
    tot = np.empty(J)
    inv = 1.0 / R
    for m in range(n):
        Sm = S[m]
        WTm = WT[m]
        acc_b[:] = 0.0
        acc_z[:] = 0.0
        acc_q[:] = 0.0
        tot[:] = 0.0
        for r in range(R):
            s = Sm[r]
            h = r if r < H else r - H
            sign = 1.0 if r < H else -1.0
            for a in range(K):
                t = 0.0
                for k in range(J):
                    t += s[k] * WTm[a, k]
                wbar[a] = t
            for j in range(J):
                tot[j] += s[j]
            for a in range(K):
                c = wbar[a]
                for j in range(J):
                    acc_b[a, j] += s[j] * c
            for b in range(z.shape[1]):
                c = sign * z[h, b]
                for j in range(J):
                    acc_z[b, j] += s[j] * c
            for q in range(nL):
                c = sign * z[h, lcol[q]] * wbar[ridx[lrow[q]]]
                for j in range(J):
                    acc_q[q, j] += s[j] * c
        for j in range(J):
            sj = tot[j] * inv
            shares[m, j] = sj
            for a in range(K):
                jac[m, j, a] = sj * WTm[a, j] - acc_b[a, j] * inv
            for q in range(nL):
                jac[m, j, K + q] = (WTm[ridx[lrow[q]], j] * acc_z[lcol[q], j]
                                    - acc_q[q, j]) * inv
    return shares, jac


def probability_jacobian_numpy(S: np.ndarray, W: np.ndarray, ridx: np.ndarray, z: np.ndarray,
                               lrow: np.ndarray,
                               lcol: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """NumPy twin of :func:`probability_jacobian_nb`, written from the definition
    ``∂s_j/∂θ = mean_r s_rj (∂u_rj/∂θ − Σ_k s_rk ∂u_rk/∂θ)``."""
    zfull = np.concatenate([z, -z])                                   # (R, Kr)
    wbar = np.einsum("mrk,mka->mra", S, W)                            # (n, R, K)
    A = S[:, :, :, None] * (W[:, None, :, :] - wbar[:, :, None, :])   # (n, R, J, K)
    jl = np.einsum("mrjq,rq->mjq", A[:, :, :, ridx[lrow]], zfull[:, lcol]) / S.shape[1]
    return S.mean(axis=1), np.concatenate([A.mean(axis=1), jl], axis=2)


# --------------------------------------------------------------------------- front ends


def _exp(mu: np.ndarray) -> np.ndarray:
    with np.errstate(over="ignore"):   # markets that overflow take the kernel's shifted path
        return np.exp(mu)


def _transposed(W: np.ndarray, cols: np.ndarray) -> np.ndarray:
    return np.ascontiguousarray(W[:, :, cols].transpose(0, 2, 1))


def mxl_shares(delta: np.ndarray, W: np.ndarray, ridx: np.ndarray, nu: np.ndarray) -> np.ndarray:
    """Mixed-logit inside shares ``(n, J)`` with the compiled kernels.

    Parameters
    ----------
    delta : ndarray, shape (n, J)
        Mean utilities ``W β``.
    W : ndarray, shape (n, J, K)
        Product characteristics (design columns).
    ridx : ndarray of int64, shape (Kr,)
        Columns of ``W`` with random coefficients.
    nu : ndarray, shape (H, Kr)
        Half of the antithetic taste-shock nodes (``z Lᵀ``); ``-nu`` is the other half.

    Returns
    -------
    ndarray, shape (n, J)

    Examples
    --------
    >>> import numpy as np
    >>> W = np.ones((1, 2, 1)); nu = np.zeros((4, 1))
    >>> mxl_shares(np.zeros((1, 2)), W, np.array([0]), nu).round(4)
    array([[0.3333, 0.3333]])
    """
    delta = np.ascontiguousarray(delta, dtype=float)
    nu = np.ascontiguousarray(nu, dtype=float)
    WrT = _transposed(W, ridx)
    mu = random_utilities_nb(WrT, nu)
    return mean_probabilities_nb(delta, mu, _exp(mu), safe_markets(delta, WrT, nu))


def mxl_shares_numpy(delta: np.ndarray, W: np.ndarray, ridx: np.ndarray,
                     nu: np.ndarray) -> np.ndarray:
    """NumPy twin of :func:`mxl_shares`."""
    return mean_probabilities_numpy(delta, random_utilities_numpy(_transposed(W, ridx), nu))


def mxl_probabilities(delta: np.ndarray, W: np.ndarray, ridx: np.ndarray,
                      nu: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """Choice probabilities at all 2H nodes ``(n, 2H, J)`` and the shares ``(n, J)`` (compiled).

    Arguments as in :func:`mxl_shares`.
    """
    delta = np.ascontiguousarray(delta, dtype=float)
    nu = np.ascontiguousarray(nu, dtype=float)
    WrT = _transposed(W, ridx)
    mu = random_utilities_nb(WrT, nu)
    return node_probabilities_nb(delta, mu, _exp(mu), safe_markets(delta, WrT, nu))


def mxl_jacobian(delta: np.ndarray, W: np.ndarray, ridx: np.ndarray, nu: np.ndarray,
                 z: np.ndarray, lrow: np.ndarray, lcol: np.ndarray,
                 S: np.ndarray | None = None) -> tuple[np.ndarray, np.ndarray]:
    """Mixed-logit shares and their Jacobian in (β, L) with the compiled kernels.

    Parameters
    ----------
    delta, W, ridx, nu
        As in :func:`mxl_shares`.
    z : ndarray, shape (H, Kr)
        The standard-normal half nodes (``nu = z Lᵀ``).
    lrow, lcol : ndarray of int64, shape (nL,)
        Positions (a, b) of the free entries of ``L`` (rows and columns among the random terms).
    S : ndarray, optional
        Node probabilities already computed at these parameters (:func:`mxl_probabilities`).

    Returns
    -------
    shares : ndarray, shape (n, J)
    jac : ndarray, shape (n, J, K + nL)
        ``∂s_mj/∂β`` in the first K columns, then ``∂s_mj/∂L_ab`` in the order of (lrow, lcol).

    Examples
    --------
    >>> import numpy as np
    >>> W = np.ones((1, 2, 1)); z = np.ones((4, 1))
    >>> s, jac = mxl_jacobian(np.zeros((1, 2)), W, np.array([0]), 0 * z, z,
    ...                       np.array([0]), np.array([0]))
    >>> jac.shape
    (1, 2, 2)
    """
    if S is None:
        S, _ = mxl_probabilities(delta, W, ridx, nu)
    K = W.shape[2]
    WT = _transposed(W, np.arange(K))
    return probability_jacobian_nb(S, np.ascontiguousarray(W, dtype=float), WT,
                                   np.asarray(ridx, dtype=np.int64),
                                   np.ascontiguousarray(z, dtype=float),
                                   np.asarray(lrow, dtype=np.int64),
                                   np.asarray(lcol, dtype=np.int64))


def mxl_jacobian_numpy(delta: np.ndarray, W: np.ndarray, ridx: np.ndarray, nu: np.ndarray,
                       z: np.ndarray, lrow: np.ndarray,
                       lcol: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """NumPy twin of :func:`mxl_jacobian`."""
    S, _ = node_probabilities_numpy(delta, random_utilities_numpy(_transposed(W, ridx), nu))
    return probability_jacobian_numpy(S, W, ridx, z, lrow, lcol)
