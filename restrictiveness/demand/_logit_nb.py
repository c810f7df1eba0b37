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

Why it is fast: the kernels work one market at a time, so a market's utilities and node
probabilities (J × 2H doubles, ~100 kB) stay in cache from the utilities to the shares and the
Jacobian instead of streaming ~10 MB arrays through memory between NumPy passes. Exponentials
come from :mod:`restrictiveness.shared._vecmath`, which vectorises (numba's ``np.exp`` is a
scalar libm call without Intel SVML): where no utility can overflow,
``e^{δ ± μ} = e^δ e^{±μ}`` with both signs from one range reduction; elsewhere every node's
utilities are shifted by their maximum (the outside good's 0 included). Per market the
Jacobian's node sums are one matrix product ``S_m Bᵀ`` (``J × 2H`` times
``2H × (1 + K + Kr + nL)``), with ``B`` stacking a row of ones, ``w̄``, the nodes ``±z`` and the
products ``w̄_c ∘ (±z_b)``, computed in register blocks (:func:`_dot_nt`; faster than BLAS at
these small sizes).

The optimiser's Newton steps use the second-order term of the least-squares objective,
``Σ_mj e_mj ∇²s_mj`` with ``e = s − y`` (:func:`shares_jacobian_second_nb`): utilities are
linear in θ, so it factors as ``mean_r M_r ⊗ (1, z_r)(1, z_r)ᵀ`` with a ``K × K`` matrix per node
that is summed over markets in the same pass as the Jacobian (about half an evaluation more)
and contracted with the nodes once.

Every compiled kernel (``*_nb``) has a plain-NumPy twin (``*_numpy``); tests assert they agree.
Inputs are validated by the callers in :mod:`restrictiveness.demand.models`; the kernels expect
C-contiguous float64 arrays and int64 index arrays.
"""

from __future__ import annotations

import numpy as np

from restrictiveness.shared._jit import cached_njit
from restrictiveness.shared._lsq_nb import compile_lm
from restrictiveness.shared._vecmath import _FM, _exp, _exp_pair

# Markets with max|δ| + max|μ| below this take unshifted exponentials: e^600 ≈ 4e260 leaves
# room for the sum over products, and 2^{±n} stays a normal number.
_SAFE = 600.0

__all__ = ["node_probabilities_nb", "node_probabilities_numpy", "mean_probabilities_nb",
           "mean_probabilities_numpy", "shares_jacobian_nb", "shares_jacobian_numpy",
           "mxl_shares", "mxl_shares_numpy", "mxl_probabilities", "mxl_jacobian",
           "mxl_jacobian_numpy", "mxl_resjac", "mxl_resjac_numpy", "mxl_resjac_root",
           "mxl_resjac_root_numpy", "shares_jacobian_second_nb", "shares_jacobian_second_numpy",
           "mxl_resjac_second", "mxl_resjac_second_numpy", "mxl_resjac_root_second",
           "mxl_resjac_root_second_numpy", "solve_mxl"]


# --------------------------------------------------------------------------- one market


@cached_njit(error_model="numpy", fastmath=_FM)
def _market_probabilities(d, Wr_m, nuT, numax, mu, den, out_m, J):
    """Choice probabilities of one market's first ``J`` products (the market's own; rows after
    them pad a market with fewer products and are not touched) at all 2H nodes, written to
    ``out_m (J, 2H)``.

    ``d (J,)`` are the mean utilities, ``Wr_m (J, Kr)`` the random-coefficient columns, ``nuT
    (Kr, H)`` the half nodes and ``numax (Kr,)`` their largest absolute values; ``mu (J, H)``
    and ``den (2H,)`` are scratch. Compiled without reassociation (the range reduction of the
    exponentials needs its order of operations) and called, not inlined, by the kernels below,
    which keep their own fast-math flags.

    When ``max|δ| + max|μ| < 600`` (bounded cheaply through ``numax``) no exponential can
    overflow or underflow, and ``e^{δ_j ± μ_jh} = e^{δ_j} e^{±μ_jh}`` with both signs from one
    :func:`~restrictiveness.shared._vecmath._exp_pair`; otherwise every node's utilities are shifted
    by their maximum (the outside good's 0 included).
    """
    kr = Wr_m.shape[1]
    H = nuT.shape[1]
    bound = 0.0
    for a in range(kr):
        wmax = 0.0
        for j in range(J):
            wmax = max(wmax, abs(Wr_m[j, a]))
        bound += wmax * numax[a]
    dmax = 0.0
    for j in range(J):
        dmax = max(dmax, abs(d[j]))
    safe = dmax + bound < _SAFE
    for j in range(J):
        row = mu[j]
        for h in range(H):
            row[h] = 0.0
        for a in range(kr):
            w = Wr_m[j, a]
            v = nuT[a]
            for h in range(H):
                row[h] += w * v[h]
    if safe:
        for r in range(2 * H):
            den[r] = 1.0   # the outside good
        for j in range(J):
            row = mu[j]
            oj = out_m[j]
            c = _exp(d[j])
            for h in range(H):
                ep, em = _exp_pair(row[h])
                a = c * ep
                b = c * em
                oj[h] = a
                oj[H + h] = b
                den[h] += a
                den[H + h] += b
    else:
        for h in range(H):
            tp = 0.0   # the outside good's utility enters the maximum
            tm = 0.0
            for j in range(J):
                tp = max(tp, d[j] + mu[j, h])
                tm = max(tm, d[j] - mu[j, h])
            a_sum = _exp(-tp)
            b_sum = _exp(-tm)
            for j in range(J):
                a = _exp(d[j] + mu[j, h] - tp)
                b = _exp(d[j] - mu[j, h] - tm)
                out_m[j, h] = a
                out_m[j, H + h] = b
                a_sum += a
                b_sum += b
            den[h] = a_sum
            den[H + h] = b_sum
    for r in range(2 * H):
        den[r] = 1.0 / den[r]
    for j in range(J):
        oj = out_m[j]
        for r in range(2 * H):
            oj[r] *= den[r]


@cached_njit()
def _abs_max_rows(nuT):
    out = np.zeros(nuT.shape[0])
    for a in range(nuT.shape[0]):
        for h in range(nuT.shape[1]):
            out[a] = max(out[a], abs(nuT[a, h]))
    return out


# --------------------------------------------------------------------------- shares


@cached_njit(fastmath=True)
def _market_shares(d, Wr_m, nuT, numax, mu, den, probs_m, shares_m, J):
    """Node probabilities of one market into ``probs_m (J, 2H)`` and their means over nodes
    into ``shares_m (J,)``; the other arguments as in :func:`_market_probabilities`. Rows from
    ``J`` on (absent products) get 0."""
    _market_probabilities(d, Wr_m, nuT, numax, mu, den, probs_m, J)
    R = probs_m.shape[1]
    inv = 1.0 / R
    for j in range(J, probs_m.shape[0]):
        shares_m[j] = 0.0
        for r in range(R):
            probs_m[j, r] = 0.0
    for j in range(J):
        acc = 0.0
        pj = probs_m[j]
        for r in range(R):
            acc += pj[r]
        shares_m[j] = acc * inv


@cached_njit(fastmath=True)
def mean_probabilities_nb(delta, Wr, nuT, nprod):
    """Inside shares ``(n, J)``: choice probabilities averaged over the 2H antithetic nodes.

    Parameters
    ----------
    delta : ndarray, shape (n, J)
        Mean utilities.
    Wr : ndarray, shape (n, J, Kr)
        The design columns with random coefficients.
    nuT : ndarray, shape (Kr, H)
        The first half of the taste-shock nodes, transposed (the other half is ``-nu``).
    nprod : ndarray of int64, shape (n,)
        Products of each market: the first ``nprod[m]`` rows of market ``m`` (the others pad
        markets with fewer products than ``J`` and get share 0).
    """
    n, J, _ = Wr.shape
    H = nuT.shape[1]
    shares = np.empty((n, J))
    numax = _abs_max_rows(nuT)
    mu, den, probs = np.empty((J, H)), np.empty(2 * H), np.empty((J, 2 * H))
    for m in range(n):
        _market_shares(delta[m], Wr[m], nuT, numax, mu, den, probs, shares[m], nprod[m])
    return shares


@cached_njit(fastmath=True)
def node_probabilities_nb(delta, Wr, nuT, nprod, out):
    """Choice probabilities at every node, written to ``out (n, J, 2H)`` (nodes ``+nu`` first,
    then ``-nu``); returns their mean over nodes, the inside shares ``(n, J)``.

    Other arguments as in :func:`mean_probabilities_nb`.
    """
    n, J, _ = Wr.shape
    H = nuT.shape[1]
    shares = np.empty((n, J))
    numax = _abs_max_rows(nuT)
    mu, den = np.empty((J, H)), np.empty(2 * H)
    for m in range(n):
        _market_shares(delta[m], Wr[m], nuT, numax, mu, den, out[m], shares[m], nprod[m])
    return shares


def node_probabilities_numpy(delta: np.ndarray, Wr: np.ndarray, nuT: np.ndarray,
                             nprod: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """NumPy twin of :func:`node_probabilities_nb`: ``(S (n, J, 2H), shares (n, J))``."""
    mu = np.einsum("mja,ah->mjh", Wr, nuT)
    U = delta[:, :, None] + np.concatenate([mu, -mu], axis=2)
    absent = np.arange(delta.shape[1])[None, :] >= np.asarray(nprod)[:, None]
    U[absent] = -np.inf                         # an absent product is never chosen
    top = np.maximum(U.max(axis=1, keepdims=True), 0.0)
    E = np.exp(U - top)
    S = E / (np.exp(-top) + E.sum(axis=1, keepdims=True))
    return S, S.mean(axis=2)


def mean_probabilities_numpy(delta: np.ndarray, Wr: np.ndarray, nuT: np.ndarray,
                             nprod: np.ndarray) -> np.ndarray:
    """NumPy twin of :func:`mean_probabilities_nb`."""
    return node_probabilities_numpy(delta, Wr, nuT, nprod)[1]


# --------------------------------------------------------------------------- Jacobian


@cached_njit(fastmath=True)
def _dot_nt(A, B, out, nj):
    """``out = A Bᵀ`` for the first ``nj`` rows of row-major ``A (J, R)`` and ``B (Q, R)``, in
    blocks of 4 rows of A and 2 of B: 8 running sums share each load, which beats BLAS at these
    small sizes (24 × 512 times 512 × 19 per market: ~1.6× on Zen 3)."""
    R = A.shape[1]
    nq = B.shape[0]
    j = 0
    while j + 3 < nj:
        a0, a1, a2, a3 = A[j], A[j + 1], A[j + 2], A[j + 3]
        q = 0
        while q + 1 < nq:
            b0, b1 = B[q], B[q + 1]
            c00 = c10 = c20 = c30 = c01 = c11 = c21 = c31 = 0.0
            for r in range(R):
                x, y = b0[r], b1[r]
                c00 += a0[r] * x
                c10 += a1[r] * x
                c20 += a2[r] * x
                c30 += a3[r] * x
                c01 += a0[r] * y
                c11 += a1[r] * y
                c21 += a2[r] * y
                c31 += a3[r] * y
            out[j, q], out[j + 1, q], out[j + 2, q], out[j + 3, q] = c00, c10, c20, c30
            out[j, q + 1], out[j + 1, q + 1] = c01, c11
            out[j + 2, q + 1], out[j + 3, q + 1] = c21, c31
            q += 2
        if q < nq:
            b0 = B[q]
            c00 = c10 = c20 = c30 = 0.0
            for r in range(R):
                x = b0[r]
                c00 += a0[r] * x
                c10 += a1[r] * x
                c20 += a2[r] * x
                c30 += a3[r] * x
            out[j, q], out[j + 1, q], out[j + 2, q], out[j + 3, q] = c00, c10, c20, c30
        j += 4
    while j < nj:
        for q in range(nq):
            acc = 0.0
            for r in range(R):
                acc += A[j, r] * B[q, r]
            out[j, q] = acc
        j += 1


@cached_njit(fastmath=True, inline="always")
def _market_jacobian(d, Wr_m, Wm, nuT, numax, ridx, lrow, lcol, Jm, mu, den, Sm, B, P, shares_m,
                     jac_m):
    """One market's node probabilities (into ``Sm (J, 2H)``), shares ``(J,)`` and Jacobian rows
    ``(J, K + nL)``; rows from ``Jm`` on (absent products) get 0. ``B`` holds the node-sum rows
    ``1 | w̄ (K) | ±z (Kr) | w̄_c ∘ ±z_b (nL)`` with the constant ones already set; this fills
    ``w̄`` (left in ``B[1:1 + K]`` for :func:`_market_second_order`) and the products. ``d``,
    ``Wr_m``, ``Wm`` are the market's mean utilities and design; ``mu``, ``den``, ``P`` scratch."""
    K = Wm.shape[1]
    kr = Wr_m.shape[1]
    nL = lrow.shape[0]
    R = Sm.shape[1]
    J = Sm.shape[0]
    zr, pr = 1 + K, 1 + K + kr
    _market_probabilities(d, Wr_m, nuT, numax, mu, den, Sm, Jm)
    for a in range(K):                                   # w̄ = Wmᵀ S_m
        wa = B[1 + a]
        for r in range(R):
            wa[r] = 0.0
        for j in range(Jm):
            c = Wm[j, a]
            sj = Sm[j]
            for r in range(R):
                wa[r] += c * sj[r]
    for q in range(nL):
        wc = B[1 + ridx[lrow[q]]]
        zb = B[zr + lcol[q]]
        out = B[pr + q]
        for r in range(R):
            out[r] = wc[r] * zb[r]
    _dot_nt(Sm, B, P, Jm)                                # every node sum at once: (J, rows)
    inv = 1.0 / R
    for j in range(Jm, J):                               # absent products
        shares_m[j] = 0.0
        for a in range(K + nL):
            jac_m[j, a] = 0.0
    for j in range(Jm):
        t = P[j, 0] * inv
        shares_m[j] = t
        for a in range(K):
            jac_m[j, a] = t * Wm[j, a] - P[j, 1 + a] * inv
        for q in range(nL):
            jac_m[j, K + q] = (Wm[j, ridx[lrow[q]]] * P[j, zr + lcol[q]] - P[j, pr + q]) * inv


@cached_njit()
def _node_rows(zT, K, nL):
    """The node-sum rows of :func:`_market_jacobian` with their constant entries set: a row of
    ones and the nodes ``±z`` (``zT (Kr, H)``); the others are filled per market."""
    kr, H = zT.shape
    B = np.empty((1 + K + kr + nL, 2 * H))
    B[0] = 1.0
    for b in range(kr):
        for h in range(H):
            B[1 + K + b, h] = zT[b, h]
            B[1 + K + b, H + h] = -zT[b, h]
    return B


@cached_njit(fastmath=True)
def shares_jacobian_nb(delta, Wr, nuT, W, ridx, zT, lrow, lcol, nprod):
    """Shares and their (β, L) Jacobian, one market at a time.

    Parameters
    ----------
    delta, Wr, nuT
        As in :func:`mean_probabilities_nb`.
    W : ndarray, shape (n, J, K)
        Design.
    ridx : ndarray of int64, shape (Kr,)
        Design columns with random coefficients.
    zT : ndarray, shape (Kr, H)
        Standard-normal half nodes, transposed (``nuT = L zT``).
    lrow, lcol : ndarray of int64, shape (nL,)
        Positions (a, b) of the free Cholesky entries among the random terms.
    nprod : ndarray of int64, shape (n,)
        Products of each market, as in :func:`mean_probabilities_nb`.

    Returns
    -------
    shares : ndarray, shape (n, J)
    jac : ndarray, shape (n, J, K + nL)
        Rows of absent products are 0.
    """
    n, J, kr = Wr.shape
    H = nuT.shape[1]
    K = W.shape[2]
    nL = lrow.shape[0]
    shares = np.empty((n, J))
    jac = np.empty((n, J, K + nL))
    mu = np.empty((J, H))
    numax = _abs_max_rows(nuT)
    den = np.empty(2 * H)
    Sm = np.empty((J, 2 * H))
    B = _node_rows(zT, K, nL)
    P = np.empty((J, B.shape[0]))
    for m in range(n):
        _market_jacobian(delta[m], Wr[m], W[m], nuT, numax, ridx, lrow, lcol, nprod[m], mu, den,
                         Sm, B, P, shares[m], jac[m])
    return shares, jac


@cached_njit()
def _column_value(Wm, j, a, b):
    """Column ``W_a`` (``b < 0``) or ``W_a W_b`` of the design at product ``j``."""
    return Wm[j, a] if b < 0 else Wm[j, a] * Wm[j, b]


@cached_njit()
def _distinct_columns(W, nprod, ca, cb):
    """Which of the columns ``(ca[i], cb[i])`` (:func:`_column_value`) are equal over every
    present product: returns ``col (ncand,)``, the index of each among the distinct ones (those
    first seen), and their number. The intercept makes ``1·W_b = W_b``, a dummy ``m·m = m``."""
    nc = ca.shape[0]
    col = np.empty(nc, dtype=np.int64)
    first = np.empty(nc, dtype=np.int64)       # candidate index of each distinct column
    ndist = 0
    for i in range(nc):
        col[i] = -1
        for d in range(ndist):
            k = first[d]
            same = True
            for m in range(W.shape[0]):
                for j in range(nprod[m]):
                    if (_column_value(W[m], j, ca[i], cb[i])
                            != _column_value(W[m], j, ca[k], cb[k])):
                        same = False
                        break
                if not same:
                    break
            if same:
                col[i] = d
                break
        if col[i] < 0:
            first[ndist] = i
            col[i] = ndist
            ndist += 1
    return col, first[:ndist], ndist


@cached_njit(fastmath=True, inline="always")
def _market_second_order(Sm, B, Wm, shares_m, y_m, Jm, ca, cb, col, first, C, Wt, rho, O,
                         Macc):
    """Add one market's part of the second-order term to ``Macc (npair, 2H)``: at node ``r``,
    ``M_r[a, b] = Σ_j w_jr (W_ja − w̄_ar)(W_jb − w̄_br)`` over the pairs ``a ≤ b``, with
    ``w_jr = s_jr (e_j − ρ_r)``, ``e_j = s_j − y_j`` the residual and ``ρ_r = Σ_j e_j s_jr``.
    Expanded, ``M_r = Σ_j w_jr W_ja W_jb − ŵ_ar w̄_br − w̄_ar ŵ_br`` with ``ŵ = Wᵀ w`` (the
    outside good's term, and that of ``Σ_j w_jr = ρ_r s_0r``, cancel). The sums over products
    are one matrix product ``Cᵀ w`` over the distinct columns among ``W_a`` (candidates
    ``0 … K−1``) and ``W_a W_b`` (the pairs after them; ``ca``, ``cb``, ``col``, ``first`` from
    :func:`_distinct_columns`). ``Sm`` and ``B`` (with ``w̄``) as :func:`_market_jacobian`
    left them; ``C (J, ·)``, ``Wt (J, 2H)``, ``rho (2H,)`` and ``O (·, 2H)`` are scratch."""
    K = Wm.shape[1]
    R = Sm.shape[1]
    nd = first.shape[0]
    for r in range(R):
        rho[r] = 0.0
    for j in range(Jm):
        e = shares_m[j] - y_m[j]
        sj = Sm[j]
        for r in range(R):
            rho[r] += e * sj[r]
    for j in range(Jm):
        e = shares_m[j] - y_m[j]
        sj = Sm[j]
        wj = Wt[j]
        for r in range(R):
            wj[r] = sj[r] * (e - rho[r])
        for d in range(nd):
            C[j, d] = _column_value(Wm, j, ca[first[d]], cb[first[d]])
    np.dot(C[:Jm].T, Wt[:Jm], O)
    for t in range(Macc.shape[0]):
        a, b = ca[K + t], cb[K + t]
        wa, wb, ha, hb = B[1 + a], B[1 + b], O[col[a]], O[col[b]]
        u = O[col[K + t]]
        acc = Macc[t]
        for r in range(R):
            acc[r] += u[r] - ha[r] * wb[r] - wa[r] * hb[r]


@cached_njit()
def _contract_nodes(Macc, B, pair, ia, ic):
    """The second-order term in θ from the node sums: ``S[i, k] = mean_r M_r[a_i, a_k]
    v_r[c_i] v_r[c_k]`` with ``M_r`` the rows ``pair[a, b]`` of ``Macc`` and ``v_r`` the rows
    ``c`` of ``B`` (entry ``i`` of θ is design column ``ia[i]`` times node factor ``ic[i]``)."""
    p = ia.shape[0]
    R = Macc.shape[1]
    second = np.empty((p, p))
    for i in range(p):
        for k in range(i, p):
            mt = Macc[pair[ia[i], ia[k]]]
            vi, vk = B[ic[i]], B[ic[k]]
            acc = 0.0
            for r in range(R):
                acc += mt[r] * vi[r] * vk[r]
            second[i, k] = second[k, i] = acc / R
    return second


# Without reassociation (unlike shares_jacobian_nb): numba links a copy of this kernel into
# its caller, and with fastmath=True that copy rounded differently from the kernel's own (by
# 2e-15), so a fit depended on whether the caller was compiled in the process or loaded from
# the disk cache (tests/test_kernel_cache.py). As fast: its loops vectorise without it.
@cached_njit(fastmath=_FM)
def shares_jacobian_second_nb(delta, Wr, nuT, W, ridx, zT, lrow, lcol, nprod, y):
    """:func:`shares_jacobian_nb` and the second-order term of the least-squares objective,
    ``Σ_mj e_mj ∇²s_mj`` in ``θ = (β, L)`` with ``e = s − y`` the residuals.

    With utilities linear in θ, ``∂u_jr/∂θ = x_jr`` (``W_j`` for β, ``W_jc z_br`` for
    ``L_ab``), ``∇²s_jr = s_jr (d_jr d_jrᵀ − Σ_k s_kr d_kr d_krᵀ)`` with ``d_jr = x_jr − x̄_r``,
    ``x̄_r = Σ_k s_kr x_kr``, the sum over every good (the outside good's ``x`` is 0). Since
    ``x_jr − x̄_r = (W_j − w̄_r) ⊗ (1, z_r)`` on the entries θ has, the term is
    ``mean_r M_r ⊗ v_r v_rᵀ`` with ``v_r = (1, z_r)`` and ``M_r`` the ``K × K`` matrix of
    :func:`_market_second_order`. The nodes are common to all markets, so ``M_r`` is summed over
    markets first and contracted with ``v_r v_rᵀ`` once.

    Parameters
    ----------
    delta, Wr, nuT, W, ridx, zT, lrow, lcol, nprod
        As in :func:`shares_jacobian_nb`.
    y : ndarray, shape (n, J)
        The shares fitted (0 for absent products).

    Returns
    -------
    shares : ndarray, shape (n, J)
    jac : ndarray, shape (n, J, K + nL)
    second : ndarray, shape (K + nL, K + nL)
    """
    n, J, kr = Wr.shape
    H = nuT.shape[1]
    R = 2 * H
    K = W.shape[2]
    nL = lrow.shape[0]
    p = K + nL
    npair = K * (K + 1) // 2
    # candidate columns: W_a, then W_a W_b for a ≤ b
    ca = np.empty(K + npair, dtype=np.int64)
    cb = np.full(K + npair, -1, dtype=np.int64)
    pair = np.empty((K, K), dtype=np.int64)
    for a in range(K):
        ca[a] = a
    t = 0
    for a in range(K):
        for b in range(a, K):
            ca[K + t], cb[K + t] = a, b
            pair[a, b] = pair[b, a] = t
            t += 1
    col, first, nd = _distinct_columns(W, nprod, ca, cb)
    shares = np.empty((n, J))
    jac = np.empty((n, J, p))
    mu = np.empty((J, H))
    numax = _abs_max_rows(nuT)
    den = np.empty(R)
    Sm = np.empty((J, R))
    B = _node_rows(zT, K, nL)
    P = np.empty((J, B.shape[0]))
    C = np.empty((J, nd))
    Wt = np.empty((J, R))
    rho = np.empty(R)
    O = np.empty((nd, R))
    Macc = np.zeros((npair, R))
    for m in range(n):
        Jm = nprod[m]
        _market_jacobian(delta[m], Wr[m], W[m], nuT, numax, ridx, lrow, lcol, Jm, mu, den, Sm,
                         B, P, shares[m], jac[m])
        if Jm > 0:
            _market_second_order(Sm, B, W[m], shares[m], y[m], Jm, ca, cb, col, first, C, Wt,
                                 rho, O, Macc)
    # θ entry i is (design column ia, node-factor row ic of B): β_a is (a, the ones), L_ab is
    # (ridx[a], z_b)
    ia = np.empty(p, dtype=np.int64)
    ic = np.empty(p, dtype=np.int64)
    for a in range(K):
        ia[a], ic[a] = a, 0
    for q in range(nL):
        ia[K + q], ic[K + q] = ridx[lrow[q]], 1 + K + lcol[q]     # rows of B: 1, then ±z
    return shares, jac, _contract_nodes(Macc, B, pair, ia, ic)


def shares_jacobian_second_numpy(delta: np.ndarray, Wr: np.ndarray, nuT: np.ndarray,
                                 W: np.ndarray, ridx: np.ndarray, zT: np.ndarray,
                                 lrow: np.ndarray, lcol: np.ndarray, nprod: np.ndarray,
                                 y: np.ndarray) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """NumPy twin of :func:`shares_jacobian_second_nb`, from the definition
    ``Σ_mj e_mj mean_r s_jr (d_jr d_jrᵀ − Σ_k s_kr d_kr d_krᵀ)`` on the full vectors
    ``x_jr = ∂u_jr/∂θ`` (no Kronecker factorisation; the outside good a product with x = 0)."""
    S, shares = node_probabilities_numpy(delta, Wr, nuT, nprod)            # (n, J, R)
    zf = np.concatenate([zT, -zT], axis=1)                                # (Kr, R)
    R = S.shape[2]
    x = np.concatenate([np.broadcast_to(W[:, :, None, :], W.shape[:2] + (R, W.shape[2])),
                        W[:, :, None, ridx[lrow]] * zf[lcol].T[None, None]], axis=3)
    xbar = np.einsum("mjr,mjrp->mrp", S, x)                               # (n, R, p)
    d = x - xbar[:, None]
    s0 = 1.0 - S.sum(axis=1)                                              # outside good
    C = (np.einsum("mjr,mjrp,mjrq->mrpq", S, d, d)
         + np.einsum("mr,mrp,mrq->mrpq", s0, xbar, xbar))
    e = shares - y
    hess = (np.einsum("mj,mjr,mjrp,mjrq->pq", e, S, d, d)
            - np.einsum("mj,mjr,mrpq->pq", e, S, C)) / R
    return shares, (S[..., None] * d).mean(axis=2), hess


def shares_jacobian_numpy(delta: np.ndarray, Wr: np.ndarray, nuT: np.ndarray, W: np.ndarray,
                          ridx: np.ndarray, zT: np.ndarray, lrow: np.ndarray,
                          lcol: np.ndarray, nprod: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """NumPy twin of :func:`shares_jacobian_nb`, written from the definition
    ``∂s_j/∂θ = mean_r s_jr (∂u_jr/∂θ − Σ_k s_kr ∂u_kr/∂θ)``."""
    S, shares = node_probabilities_numpy(delta, Wr, nuT, nprod)
    zf = np.concatenate([zT, -zT], axis=1)                            # (Kr, R)
    wbar = np.einsum("mkr,mka->mra", S, W)                            # (n, R, K)
    A = S[:, :, :, None] * (W[:, :, None, :] - wbar[:, None, :, :])   # (n, J, R, K)
    jl = np.einsum("mjrq,qr->mjq", A[:, :, :, ridx[lrow]], zf[lcol]) / S.shape[2]
    return shares, np.concatenate([A.mean(axis=2), jl], axis=2)


# --------------------------------------------------------------------------- front ends


def _prepare(delta, W, ridx, nu, nprod=None):
    delta = np.ascontiguousarray(delta, dtype=float)
    Wr = np.ascontiguousarray(W[:, :, np.asarray(ridx)], dtype=float)
    nuT = np.ascontiguousarray(np.asarray(nu, dtype=float).T)
    return delta, Wr, nuT, _counts(nprod, delta.shape)


def _counts(nprod, shape) -> np.ndarray:
    """Products of each market (int64): every row of every market by default."""
    if nprod is None:
        return np.full(shape[0], shape[1], dtype=np.int64)
    return np.ascontiguousarray(nprod, dtype=np.int64)


def mxl_shares(delta: np.ndarray, W: np.ndarray, ridx: np.ndarray, nu: np.ndarray,
               nprod: np.ndarray | None = None) -> np.ndarray:
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
    nprod : ndarray of int, shape (n,), optional
        Products of each market, its first rows (default: all ``J``); the other rows pad
        markets with fewer products and get share 0.

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
    return mean_probabilities_nb(*_prepare(delta, W, ridx, nu, nprod))


def mxl_shares_numpy(delta: np.ndarray, W: np.ndarray, ridx: np.ndarray,
                     nu: np.ndarray, nprod: np.ndarray | None = None) -> np.ndarray:
    """NumPy twin of :func:`mxl_shares`."""
    return mean_probabilities_numpy(*_prepare(delta, W, ridx, nu, nprod))


def mxl_probabilities(delta: np.ndarray, W: np.ndarray, ridx: np.ndarray,
                      nu: np.ndarray, nprod: np.ndarray | None = None
                      ) -> tuple[np.ndarray, np.ndarray]:
    """Choice probabilities at all 2H nodes ``(n, J, 2H)`` and the shares ``(n, J)`` (compiled).

    Arguments as in :func:`mxl_shares`. The node array takes ``n · J · 2H`` doubles: callers
    with many markets pass them in blocks.
    """
    delta, Wr, nuT, nprod = _prepare(delta, W, ridx, nu, nprod)
    S = np.empty(Wr.shape[:2] + (2 * nuT.shape[1],))
    return S, node_probabilities_nb(delta, Wr, nuT, nprod, S)


def _jacobian_args(delta, W, ridx, nu, z, lrow, lcol, nprod):
    delta, Wr, nuT, nprod = _prepare(delta, W, ridx, nu, nprod)
    return (delta, Wr, nuT, np.ascontiguousarray(W, dtype=float),
            np.asarray(ridx, dtype=np.int64), np.ascontiguousarray(np.asarray(z, dtype=float).T),
            np.asarray(lrow, dtype=np.int64), np.asarray(lcol, dtype=np.int64), nprod)


def mxl_jacobian(delta: np.ndarray, W: np.ndarray, ridx: np.ndarray, nu: np.ndarray,
                 z: np.ndarray, lrow: np.ndarray, lcol: np.ndarray,
                 nprod: np.ndarray | None = None) -> tuple[np.ndarray, np.ndarray]:
    """Mixed-logit shares and their Jacobian in (β, L) with the compiled kernels.

    Parameters
    ----------
    delta, W, ridx, nu
        As in :func:`mxl_shares`.
    z : ndarray, shape (H, Kr)
        The standard-normal half nodes (``nu = z Lᵀ``).
    lrow, lcol : ndarray of int64, shape (nL,)
        Positions (a, b) of the free entries of ``L`` (rows and columns among the random terms).

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
    return shares_jacobian_nb(*_jacobian_args(delta, W, ridx, nu, z, lrow, lcol, nprod))


def mxl_jacobian_numpy(delta: np.ndarray, W: np.ndarray, ridx: np.ndarray, nu: np.ndarray,
                       z: np.ndarray, lrow: np.ndarray, lcol: np.ndarray,
                       nprod: np.ndarray | None = None) -> tuple[np.ndarray, np.ndarray]:
    """NumPy twin of :func:`mxl_jacobian`."""
    return shares_jacobian_numpy(*_jacobian_args(delta, W, ridx, nu, z, lrow, lcol, nprod))


# --------------------------------------------------------------------------- least squares


@cached_njit()
def _mean_utility_and_nodes(theta, W, zT, lrow, lcol, kr):
    """``δ = W β`` ``(n, J)`` and ``νᵀ = L zᵀ`` ``(Kr, H)`` from ``θ = (β, L[lrow, lcol])``."""
    n, J, K = W.shape
    delta = np.empty((n, J))
    for m in range(n):
        for j in range(J):
            acc = 0.0
            for a in range(K):
                acc += W[m, j, a] * theta[a]
            delta[m, j] = acc
    nuT = np.zeros((kr, zT.shape[1]))
    for q in range(lrow.shape[0]):
        nuT[lrow[q]] += theta[K + q] * zT[lcol[q]]
    return delta, nuT


@cached_njit()
def _residuals(shares, y):
    """``s − y`` flattened market by market."""
    n, J = shares.shape
    r = np.empty(n * J)
    for m in range(n):
        for j in range(J):
            r[m * J + j] = shares[m, j] - y[m, j]
    return r


@cached_njit()
def mxl_resjac(theta, data):
    """Residuals ``s(θ) − y`` (flattened, ``n·J``) and their Jacobian ``(n·J, K + nL)`` in
    ``θ = (β, L[lrow, lcol])``.

    ``data = (W, Wr, y, ridx, zT, lrow, lcol, nprod)``: the design ``(n, J, K)``, its random
    columns ``(n, J, Kr)``, the inside shares ``(n, J)``, the random columns' indices, the
    standard-normal half nodes transposed ``(Kr, H)``, the free Cholesky entries' positions and
    the products of each market (as in :func:`shares_jacobian_nb`; every array C-contiguous;
    an absent product's share in ``y`` is 0, so its residual and Jacobian row are 0).
    """
    W, Wr, y, ridx, zT, lrow, lcol, nprod = data
    delta, nuT = _mean_utility_and_nodes(theta, W, zT, lrow, lcol, ridx.shape[0])
    shares, jac = shares_jacobian_nb(delta, Wr, nuT, W, ridx, zT, lrow, lcol, nprod)
    return _residuals(shares, y), jac.reshape(-1, jac.shape[2])


@cached_njit()
def mxl_resjac_second(theta, data):
    """:func:`mxl_resjac` and the objective's second-order term ``Σ_i r_i ∇²r_i`` in θ
    ``(K + nL, K + nL)`` (:func:`shares_jacobian_second_nb`)."""
    W, Wr, y, ridx, zT, lrow, lcol, nprod = data
    delta, nuT = _mean_utility_and_nodes(theta, W, zT, lrow, lcol, ridx.shape[0])
    shares, jac, second = shares_jacobian_second_nb(delta, Wr, nuT, W, ridx, zT, lrow, lcol,
                                                    nprod, y)
    return _residuals(shares, y), jac.reshape(-1, jac.shape[2]), second


def mxl_resjac_numpy(theta: np.ndarray, data: tuple) -> tuple[np.ndarray, np.ndarray]:
    """NumPy twin of :func:`mxl_resjac`."""
    W, Wr, y, ridx, zT, lrow, lcol, nprod = data
    K = W.shape[2]
    L = np.zeros((len(ridx), len(ridx)))
    L[lrow, lcol] = theta[K:]
    shares, jac = shares_jacobian_numpy(W @ theta[:K], Wr, L @ zT, W, ridx, zT, lrow, lcol,
                                        nprod)
    return (shares - y).ravel(), jac.reshape(-1, jac.shape[2])


def mxl_resjac_second_numpy(theta: np.ndarray, data: tuple
                            ) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """NumPy twin of :func:`mxl_resjac_second`."""
    W, Wr, y, ridx, zT, lrow, lcol, nprod = data
    K = W.shape[2]
    L = np.zeros((len(ridx), len(ridx)))
    L[lrow, lcol] = theta[K:]
    shares, jac, second = shares_jacobian_second_numpy(W @ theta[:K], Wr, L @ zT, W, ridx, zT,
                                                       lrow, lcol, nprod, y)
    return (shares - y).ravel(), jac.reshape(-1, jac.shape[2]), second


@cached_njit()
def _diagonals(data):
    """Positions in θ of the Cholesky diagonals (the entries ``L_aa = η_a²``)."""
    K, lrow, lcol = data[0].shape[2], data[5], data[6]
    return K + np.flatnonzero(lrow == lcol)


@cached_njit()
def _squared(eta, diag):
    theta = eta.copy()
    for i in diag:
        theta[i] = eta[i] * eta[i]
    return theta


@cached_njit()
def mxl_resjac_root(eta, data):
    """:func:`mxl_resjac` with every Cholesky diagonal ``L_aa = η_a²`` (the callback of
    :data:`solve_mxl`): the box ``0 ≤ L_aa ≤ 100`` becomes ``|η_a| ≤ 10`` with no bound at 0, where
    a projected step would hold ``L_aa`` at a near-stationary point (the objective is nearly
    even in the sign of a Cholesky column)."""
    diag = _diagonals(data)
    r, jac = mxl_resjac(_squared(eta, diag), data)
    for i in diag:
        jac[:, i] *= 2.0 * eta[i]
    return r, jac


@cached_njit()
def mxl_resjac_root_second(eta, data):
    """:func:`mxl_resjac_root` and the second-order term in η (the exact term of
    :data:`solve_mxl`): with ``θ_i = η_i²`` the chain rule scales row and column ``i`` of the
    term in θ by ``2η_i`` and adds ``2 ∂f/∂θ_i = 2 (Jᵀr)_i`` to its diagonal entry."""
    diag = _diagonals(data)
    r, jac, second = mxl_resjac_second(_squared(eta, diag), data)
    for i in diag:
        g = 0.0
        for row in range(r.shape[0]):
            g += jac[row, i] * r[row]
        jac[:, i] *= 2.0 * eta[i]
        second[i, :] *= 2.0 * eta[i]
        second[:, i] *= 2.0 * eta[i]
        second[i, i] += 2.0 * g
    return r, jac, second


def _root_numpy(eta, data):
    """θ from η, and the positions of the Cholesky diagonals."""
    d = data[0].shape[2] + np.flatnonzero(data[5] == data[6])
    theta = np.array(eta, dtype=float)
    theta[d] = eta[d] ** 2
    return theta, d


def mxl_resjac_root_numpy(eta: np.ndarray, data: tuple) -> tuple[np.ndarray, np.ndarray]:
    """NumPy twin of :func:`mxl_resjac_root`."""
    theta, d = _root_numpy(eta, data)
    r, jac = mxl_resjac_numpy(theta, data)
    jac[:, d] *= 2.0 * eta[d]
    return r, jac


def mxl_resjac_root_second_numpy(eta: np.ndarray, data: tuple
                                 ) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """NumPy twin of :func:`mxl_resjac_root_second`."""
    theta, d = _root_numpy(eta, data)
    r, jac, second = mxl_resjac_second_numpy(theta, data)
    scale = np.ones(len(eta))
    scale[d] = 2.0 * eta[d]
    second = scale[:, None] * second * scale[None, :]
    second[d, d] += 2.0 * (jac.T @ r)[d]
    return r, jac * scale, second


#: The compiled bounded LM on the mixed-logit residuals, in (β, L) with root diagonals.
solve_mxl = compile_lm(mxl_resjac_root, "demand_mixed_logit",
                       second_order=mxl_resjac_root_second)
