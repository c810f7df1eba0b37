"""Random-coefficients (mixed) logit shares and their Jacobian over markets × antithetic nodes.

Consumer type ``r`` in market ``m`` has utility ``u_mjr = delta_mj + mu_mjr`` for product ``j``,
with ``mu_mjr = Σ_a W_mj,ridx[a] nu_ra``, and the outside good has utility 0, so
``s_mj = mean_r exp(u_mjr) / (1 + Σ_k exp(u_mkr))``. Arrays put the node axis last (contiguous):
every loop of the kernels runs along it, which is what lets LLVM vectorise them. The nodes come
in antithetic pairs: the functions take the first half ``nu`` (``(H, Kr)``) and use ``+nu`` and
``-nu``, 2H nodes in all (node ``H + h`` is ``-nu_h``). With the mean utility ``delta = W β`` and
``nu = z Lᵀ`` (``z`` the standard-normal half nodes, ``L`` the lower-triangular Cholesky factor of
the random coefficients' covariance), the Jacobian is

``∂s_j/∂β_a = s_j W_ja − mean_r s_jr w̄_ar``, with ``w̄_ar = Σ_k s_kr W_ka``,
``∂s_j/∂L_ab = W_jc mean_r s_jr z_br − mean_r s_jr w̄_cr z_br``, with ``c = ridx[a]``.

Why it is fast: the pairing gives ``exp(δ_j − μ_jh) = exp(δ_j) / exp(μ_jh)``, so one exponential
serves two nodes, and those exponentials are taken by NumPy's SIMD ``exp`` on one contiguous
array (numba's scalar ``exp`` is ~5× slower without Intel SVML); the compiled kernels do the rest
in loops along the contiguous node axis. A market whose utilities could overflow
(``max|δ| + max|μ| ≥ 600``) takes max-shifted exponentials inside the kernel instead. Small matrix
products are loops, not BLAS calls: with inner dimensions of 4–24 a threaded BLAS is slower, and
badly so on a busy machine.

Every compiled kernel (``*_nb``) has a plain-NumPy twin (``*_numpy``); tests assert they agree.
Inputs are validated by the callers in :mod:`restrictiveness.demand.models`; the kernels expect
C-contiguous float64 arrays and int64 index arrays.
"""

from __future__ import annotations

import threading

import numba
import numpy as np

__all__ = ["random_utilities_nb", "random_utilities_numpy", "node_probabilities_nb",
           "node_probabilities_numpy", "mean_probabilities_nb", "mean_probabilities_numpy",
           "safe_markets", "probability_jacobian_nb", "probability_jacobian_numpy", "mxl_shares",
           "mxl_shares_numpy", "mxl_probabilities", "Workspace", "mxl_jacobian",
           "mxl_jacobian_numpy"]

# |utility| below this bound can neither overflow exp (e^600 ≈ 1e260) nor underflow to zero.
_SAFE = 600.0
# markets × products × nodes per block of the share front end (4 MB work arrays, reused): bounds
# the memory of big predictions (an elasticity check predicts ~5,000 markets at once)
_BLOCK_ELEMENTS = 500_000


# --------------------------------------------------------------------------- utilities


@numba.njit(cache=True, fastmath=True)
def random_utilities_nb(Wr, nuT, out):
    """Taste-shock utilities ``mu (n, J, H)`` from ``Wr (n, J, Kr)`` and ``nuT = nuᵀ (Kr, H)``,
    written to ``out`` and returned.

    ``Wr`` holds the random-coefficient columns of the design; the node axis is contiguous.
    """
    n, J, kr = Wr.shape
    H = nuT.shape[1]
    for m in range(n):
        for j in range(J):
            row = out[m, j]
            for h in range(H):
                row[h] = 0.0
            for a in range(kr):
                w = Wr[m, j, a]
                v = nuT[a]
                for h in range(H):
                    row[h] += w * v[h]
    return out


def random_utilities_numpy(Wr: np.ndarray, nuT: np.ndarray) -> np.ndarray:
    """NumPy twin of :func:`random_utilities_nb`."""
    return np.einsum("mja,ah->mjh", Wr, nuT)


def safe_markets(delta: np.ndarray, Wr: np.ndarray, nuT: np.ndarray) -> np.ndarray:
    """Markets where a cheap bound guarantees ``max|δ| + max|μ| < 600`` (boolean ``(n,)``).

    ``|μ_jh| ≤ Σ_a max_j |W_ja| · max_h |nu_ha|`` costs ``n·J·Kr`` operations instead of a scan
    over every node; markets that fail it take the max-shifted path.
    """
    bound = np.abs(Wr).max(axis=1) @ np.abs(nuT).max(axis=1)
    return np.ascontiguousarray(np.abs(delta).max(axis=1) + bound < _SAFE)


# --------------------------------------------------------------------------- probabilities


@numba.njit(cache=True, fastmath=True)
def _fast_market(d, emu_m, ed, tp, tm, out_m):
    """Node probabilities ``out_m (J, 2H)`` of one market with one exp per node pair.

    Pass 1 writes ``e^{δ_j ± μ_jh}`` and sums them per node; pass 2 normalises in place while
    the market's block (J × 2H doubles, ~100 kB) is still in cache.
    """
    J, H = emu_m.shape
    for j in range(J):
        ed[j] = np.exp(d[j])
    for h in range(H):
        tp[h] = 1.0
        tm[h] = 1.0
    for j in range(J):
        e = emu_m[j]
        oj = out_m[j]
        c = ed[j]
        for h in range(H):
            a = c * e[h]
            b = c / e[h]
            oj[h] = a
            oj[H + h] = b
            tp[h] += a
            tm[h] += b
    for h in range(H):
        tp[h] = 1.0 / tp[h]
        tm[h] = 1.0 / tm[h]
    for j in range(J):
        oj = out_m[j]
        for h in range(H):
            oj[h] *= tp[h]
            oj[H + h] *= tm[h]


@numba.njit(cache=True, fastmath=True)
def _shifted_market(d, mu_m, out_m):
    """Node probabilities ``out_m (J, 2H)`` of one market with max-shifted exponentials."""
    J, H = mu_m.shape
    for h in range(H):
        mp = 0.0   # the outside good's utility 0 enters the max
        mm = 0.0
        for j in range(J):
            mp = max(mp, d[j] + mu_m[j, h])
            mm = max(mm, d[j] - mu_m[j, h])
        tp = np.exp(-mp)
        tm = np.exp(-mm)
        for j in range(J):
            a = np.exp(d[j] + mu_m[j, h] - mp)
            b = np.exp(d[j] - mu_m[j, h] - mm)
            out_m[j, h] = a
            out_m[j, H + h] = b
            tp += a
            tm += b
        for j in range(J):
            out_m[j, h] /= tp
            out_m[j, H + h] /= tm


@numba.njit(cache=True, fastmath=True)
def mean_probabilities_nb(delta, mu, emu, fast):
    """Inside shares ``(n, J)``: choice probabilities averaged over the 2H antithetic nodes.

    Parameters
    ----------
    delta : ndarray, shape (n, J)
        Mean utilities.
    mu : ndarray, shape (n, J, H)
        Taste-shock utilities at the first half of the nodes (the other half is ``-mu``).
    emu : ndarray, shape (n, J, H)
        ``exp(mu)`` (read only in markets flagged ``fast``).
    fast : ndarray of bool, shape (n,)
        Markets where ``max|δ| + max|μ| < 600``, so ``exp(δ ± μ)`` can neither overflow nor
        underflow and one exponential serves a node pair (:func:`safe_markets`).
    """
    n, J, H = mu.shape
    out = np.zeros((n, J))
    ed = np.empty(J)
    tp = np.empty(H)
    tm = np.empty(H)
    tmp = np.empty((J, 2 * H))
    for m in range(n):
        if fast[m]:
            _fast_market(delta[m], emu[m], ed, tp, tm, tmp)
        else:
            _shifted_market(delta[m], mu[m], tmp)
        for j in range(J):
            acc = 0.0
            for r in range(2 * H):
                acc += tmp[j, r]
            out[m, j] = acc
    return out * (0.5 / H)


@numba.njit(cache=True, fastmath=True)
def node_probabilities_nb(delta, mu, emu, fast, out):
    """Choice probabilities at every node, written to ``out (n, J, 2H)`` (nodes ``+nu`` first,
    then ``-nu``); returns their mean over nodes, the inside shares ``(n, J)``.

    Other arguments as in :func:`mean_probabilities_nb`.
    """
    n, J, H = mu.shape
    mean = np.zeros((n, J))
    ed = np.empty(J)
    tp = np.empty(H)
    tm = np.empty(H)
    for m in range(n):
        o = out[m]
        if fast[m]:
            _fast_market(delta[m], emu[m], ed, tp, tm, o)
        else:
            _shifted_market(delta[m], mu[m], o)
        for j in range(J):
            acc = 0.0
            oj = o[j]
            for r in range(2 * H):
                acc += oj[r]
            mean[m, j] = acc
    return mean * (0.5 / H)


def node_probabilities_numpy(delta: np.ndarray,
                             mu: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """NumPy twin of :func:`node_probabilities_nb` (needs no ``emu``)."""
    U = delta[:, :, None] + np.concatenate([mu, -mu], axis=2)
    top = np.maximum(U.max(axis=1, keepdims=True), 0.0)
    E = np.exp(U - top)
    S = E / (np.exp(-top) + E.sum(axis=1, keepdims=True))
    return S, S.mean(axis=2)


def mean_probabilities_numpy(delta: np.ndarray, mu: np.ndarray) -> np.ndarray:
    """NumPy twin of :func:`mean_probabilities_nb`."""
    return node_probabilities_numpy(delta, mu)[1]


# --------------------------------------------------------------------------- Jacobian


@numba.njit(cache=True, fastmath=True)
def probability_jacobian_nb(S, W, ridx, zT, lrow, lcol):
    """Shares and their (β, L) Jacobian from node probabilities ``S (n, J, 2H)``.

    Parameters
    ----------
    S : ndarray, shape (n, J, 2H)
        Node probabilities (:func:`node_probabilities_nb`); node ``H + h`` is ``-z_h``.
    W : ndarray, shape (n, J, K)
        Design.
    ridx : ndarray of int64, shape (Kr,)
        Design columns with random coefficients.
    zT : ndarray, shape (Kr, H)
        Standard-normal half nodes, transposed.
    lrow, lcol : ndarray of int64, shape (nL,)
        Positions (a, b) of the free Cholesky entries among the random terms.

    Returns
    -------
    shares : ndarray, shape (n, J)
    jac : ndarray, shape (n, J, K + nL)

    Notes
    -----
    Every sum runs along the contiguous node axis, so the dot products vectorise (~2× faster
    than accumulating along the short product axis). The L-part folds each antithetic pair:
    ``Σ_r s_jr z_br = Σ_h (s_jh − s_j,H+h) z_bh`` and
    ``Σ_r s_jr w̄_cr z_br = Σ_h (s_jh w̄_ch − s_j,H+h w̄_c,H+h) z_bh``, which cuts its work by
    ~40%.
    """
    n, J, R = S.shape
    K = W.shape[2]
    kr, H = zT.shape
    nL = lrow.shape[0]
    shares = np.empty((n, J))
    jac = np.empty((n, J, K + nL))
    wbar = np.empty((K, R))
    D = np.empty((kr, H))
    dz = np.empty(H)
    az = np.empty(kr)
    inv = 1.0 / R
    for m in range(n):
        Sm = S[m]
        for a in range(K):
            wa = wbar[a]
            for r in range(R):
                wa[r] = 0.0
            for k in range(J):
                w = W[m, k, a]
                sk = Sm[k]
                for r in range(R):
                    wa[r] += w * sk[r]
        for j in range(J):
            sj = Sm[j]
            t = 0.0
            for r in range(R):
                t += sj[r]
            t *= inv
            shares[m, j] = t
            for a in range(K):
                wa = wbar[a]
                acc = 0.0
                for r in range(R):
                    acc += sj[r] * wa[r]
                jac[m, j, a] = t * W[m, j, a] - acc * inv
            for h in range(H):
                dz[h] = sj[h] - sj[H + h]
            for b in range(kr):
                zb = zT[b]
                acc = 0.0
                for h in range(H):
                    acc += dz[h] * zb[h]
                az[b] = acc
            for c in range(kr):
                wc = wbar[ridx[c]]
                Dc = D[c]
                for h in range(H):
                    Dc[h] = sj[h] * wc[h] - sj[H + h] * wc[H + h]
            for q in range(nL):
                zb = zT[lcol[q]]
                Dc = D[lrow[q]]
                acc = 0.0
                for h in range(H):
                    acc += Dc[h] * zb[h]
                jac[m, j, K + q] = (W[m, j, ridx[lrow[q]]] * az[lcol[q]] - acc) * inv
    return shares, jac


def probability_jacobian_numpy(S: np.ndarray, W: np.ndarray, ridx: np.ndarray, zT: np.ndarray,
                               lrow: np.ndarray,
                               lcol: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """NumPy twin of :func:`probability_jacobian_nb`, written from the definition
    ``∂s_j/∂θ = mean_r s_jr (∂u_jr/∂θ − Σ_k s_kr ∂u_kr/∂θ)``."""
    zf = np.concatenate([zT, -zT], axis=1)                            # (Kr, R)
    wbar = np.einsum("mkr,mka->mra", S, W)                            # (n, R, K)
    A = S[:, :, :, None] * (W[:, :, None, :] - wbar[:, None, :, :])   # (n, J, R, K)
    jl = np.einsum("mjrq,qr->mjq", A[:, :, :, ridx[lrow]], zf[lcol]) / S.shape[2]
    return S.mean(axis=2), np.concatenate([A.mean(axis=2), jl], axis=2)


# --------------------------------------------------------------------------- front ends


def _exp(mu: np.ndarray, out: np.ndarray | None = None) -> np.ndarray:
    with np.errstate(over="ignore"):   # markets that overflow take the kernel's shifted path
        return np.exp(mu, out=out)


class Workspace:
    """Reusable buffers for repeated MXL evaluations on the same markets (a least-squares fit).

    Allocating the ~10 MB node arrays afresh on every call costs page faults that, in a fit,
    took longer than the arithmetic; a fit keeps one workspace instead.

    Examples
    --------
    >>> Workspace(100, 24, 256).S.shape
    (100, 24, 512)
    """

    def __init__(self, n: int, J: int, H: int) -> None:
        self.mu = np.empty((n, J, H))
        self.emu = np.empty((n, J, H))
        self.S = np.empty((n, J, 2 * H))

    def fits(self, n: int, J: int, H: int) -> bool:
        return self.mu.shape == (n, J, H)


_LOCAL = threading.local()


def _share_buffers(block: int, J: int, H: int) -> tuple[np.ndarray, np.ndarray]:
    """Work arrays of the share front end, kept per thread and reused across calls.

    Fresh multi-megabyte arrays are mmapped and page-faulted on every call, which doubled the
    cost of a share evaluation; reusing them removes that (per thread, so threads never share).
    """
    buf = getattr(_LOCAL, "shares", None)
    if buf is None or buf[0].shape != (block, J, H):
        buf = (np.empty((block, J, H)), np.empty((block, J, H)))
        _LOCAL.shares = buf
    return buf


def _prepare(delta, W, ridx, nu):
    delta = np.ascontiguousarray(delta, dtype=float)
    Wr = np.ascontiguousarray(W[:, :, np.asarray(ridx)], dtype=float)
    nuT = np.ascontiguousarray(np.asarray(nu, dtype=float).T)
    return delta, Wr, nuT


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
    delta, Wr, nuT = _prepare(delta, W, ridx, nu)
    n, J, _ = Wr.shape
    out = np.empty((n, J))
    block = max(1, min(n, _BLOCK_ELEMENTS // max(1, J * nuT.shape[1])))
    mu, emu = _share_buffers(block, J, nuT.shape[1])
    fast = safe_markets(delta, Wr, nuT)
    for lo in range(0, n, block):
        hi = min(n, lo + block)
        m = random_utilities_nb(Wr[lo:hi], nuT, mu[: hi - lo])
        out[lo:hi] = mean_probabilities_nb(delta[lo:hi], m, _exp(m, emu[: hi - lo]),
                                           fast[lo:hi])
    return out


def mxl_shares_numpy(delta: np.ndarray, W: np.ndarray, ridx: np.ndarray,
                     nu: np.ndarray) -> np.ndarray:
    """NumPy twin of :func:`mxl_shares`."""
    delta, Wr, nuT = _prepare(delta, W, ridx, nu)
    return mean_probabilities_numpy(delta, random_utilities_numpy(Wr, nuT))


def mxl_probabilities(delta: np.ndarray, W: np.ndarray, ridx: np.ndarray, nu: np.ndarray,
                      work: Workspace | None = None) -> tuple[np.ndarray, np.ndarray]:
    """Choice probabilities at all 2H nodes ``(n, J, 2H)`` and the shares ``(n, J)`` (compiled).

    Arguments as in :func:`mxl_shares`; ``work`` supplies the buffers (the returned node array
    is then ``work.S``, overwritten by the next call).
    """
    delta, Wr, nuT = _prepare(delta, W, ridx, nu)
    n, J, _ = Wr.shape
    H = nuT.shape[1]
    if work is None or not work.fits(n, J, H):
        work = Workspace(n, J, H)
    mu = random_utilities_nb(Wr, nuT, work.mu)
    emu = _exp(mu, work.emu)
    shares = node_probabilities_nb(delta, mu, emu, safe_markets(delta, Wr, nuT), work.S)
    return work.S, shares


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
    return probability_jacobian_nb(S, np.ascontiguousarray(W, dtype=float),
                                   np.asarray(ridx, dtype=np.int64),
                                   np.ascontiguousarray(np.asarray(z, dtype=float).T),
                                   np.asarray(lrow, dtype=np.int64),
                                   np.asarray(lcol, dtype=np.int64))


def mxl_jacobian_numpy(delta: np.ndarray, W: np.ndarray, ridx: np.ndarray, nu: np.ndarray,
                       z: np.ndarray, lrow: np.ndarray,
                       lcol: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """NumPy twin of :func:`mxl_jacobian`."""
    delta, Wr, nuT = _prepare(delta, W, ridx, nu)
    S, _ = node_probabilities_numpy(delta, random_utilities_numpy(Wr, nuT))
    return probability_jacobian_numpy(S, W, np.asarray(ridx), np.asarray(z, dtype=float).T,
                                      lrow, lcol)
