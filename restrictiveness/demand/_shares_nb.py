"""Choice probabilities of the random-utility demand prior, with price perturbations (SPEC §7).

A demand system is four Gaussian fields of ``D`` random Fourier features, packed in one array
``fields`` of shape ``(4, D, 9)`` in the order ``H_C, H_I, G_C, G_I``; the columns of a field are

``[ω_v, ω_s, ω_ν1, ω_ν2, ω_ν3, ω_ν4, b, W_0, W_1]``

so that the field at (standardised price argument ``v``, standardised sugar ``s``, mushy ``m``,
consumer type ``ν``) is ``Σ_d W_m[d] cos(ω_v[d] v + ω_s[d] s + ω_ν[d]·ν + b[d])``. The weights
already carry the feature scale, the mushy mixing and the grid standardisation, and
``scal = [l0, λ0, 1/c]`` holds the offsets, so that

``L = l0 + H_C + H_I``,  ``Λ = λ0 + G_C + G_I``,  ``a = softplus(Λ) / c``,
``V_j(ν) = L(s_j, m_j, ν) − ∫_0^{z_j} a(v, s_j, m_j, ν) dv``   (Gauss–Legendre, signed),
``g_j = mean_ν exp V_j / (1 + Σ_k exp V_k)``.

Why the compiled kernel is fast:

* the consumer type enters each feature only through ``β_d(ν) = ω_ν[d]·ν``, so with
  ``cos(α + β) = cos α cos β − sin α sin β`` the type-dependent field over all (product, node)
  rows and all types is one matrix product ``[W cos α, −W sin α] · [cos β; sin β]`` per market
  (``(J·Q) × 2D`` times ``2D × T``: 1536 × 128 times 128 × 512 at the paper's sizes), done by BLAS;
  with antithetic types (``−ν`` beside every ``ν``) ``cos β`` is even and ``sin β`` odd, so the
  two halves ``W cos α · cos β`` and ``W sin α · sin β`` over the first H = T/2 types give the
  field at both ``±ν``: two ``(J·Q) × D`` times ``D × H`` products, half the flops;
  the type-free parts (``H_C``, ``G_C``) are computed once per row;
* the products run a block of 64 rows (whole products, or whole perturbations) at a time, and the
  softplus-and-quadrature pass reads each block's output while it is in cache;
* the softplus and the feature cosines come from :mod:`restrictiveness.shared._vecmath`, in
  branch-free arithmetic that LLVM vectorises: about 5× (softplus) and 10× (sin/cos) faster than
  numba's scalar libm calls, which do not vectorise without Intel SVML; one softplus is a long
  chain of dependent operations, so the pass evaluates eight rows at once (independent chains),
  summed as two blocks of four so that the numbers are those of four rows at once;
* Gauss–Legendre nodes come in pairs ``±x``, so a product's feature sines and cosines at both
  nodes of a pair follow from one sine and cosine by angle addition (:func:`_node_rows`);
* :func:`_node_rows` is inlined into :func:`shares_nb` by numba: called, its fast-math code
  existed twice, and which copy ran depended on whether the kernel was compiled or loaded from
  the cache (one ulp apart, see :mod:`restrictiveness.shared._jit`); the other helpers, called,
  round alike in both copies (checked by ``tests/test_kernel_cache.py``) and compile faster so
  (a cold compile of the kernel takes 12 s of CPU; 19 s with every helper inlined);
* a price perturbation of product ``k`` changes only ``V_k``: its integral is split as
  ``∫_0^{z'} = ∫_0^{z} + ∫_z^{z'}`` with a short Gauss rule on the small piece (steps can be
  4e-5 near a hull edge, where differencing two 64-node integrals would lose digits), and the
  denominators are updated by ``− e^{V_k} + e^{V'_k}``.

:func:`shares_nb` returns, for every market, the base shares and the shares at the ``2 × J``
perturbed price vectors (product ``k``'s standardised price set to ``z_lo[k]`` or ``z_hi[k]``) in
one call. :func:`shares_numpy` is its plain-NumPy twin, written from the definition (explicit
cosine arguments, ``logaddexp``, full recomputation of every perturbed market): slow, and an
independent check of the algebra above. Inputs are validated by
:class:`restrictiveness.demand.prior.DemandSystem`; the kernels expect C-contiguous float64 arrays
and mushy values 0.0 or 1.0.
"""

from __future__ import annotations

import numpy as np

from restrictiveness.shared._jit import cached_njit
from restrictiveness.shared._vecmath import _FM, _exp, _sincos, _softplus

__all__ = ["shares_nb", "shares_numpy", "FIELD_COLUMNS", "matmul_flops"]

#: Column names of one field's parameter block.
FIELD_COLUMNS = ("omega_v", "omega_s", "omega_nu1", "omega_nu2", "omega_nu3", "omega_nu4", "b",
                 "w0", "w1")

# Rows of the price-sensitivity field per matrix product: its two (rows × T/2) outputs (256 kB
# at the paper's sizes) stay in the per-core L2 cache until the softplus pass reads them. The
# pass is compute-bound, so this is no faster than one product over all J·Q rows (measured
# within noise, 64 to 384 rows alike), but it needs a 24th of the scratch memory.
_BLOCK_ROWS = 64


@cached_njit()
def _type_matrices(nu_half, fields, f):
    """``cos β`` and ``sin β`` of field ``f`` at the first half of the types, each ``(D, H)``,
    ``β_d(ν_t) = ω_ν[d]·ν_t``; at ``−ν_t`` the cosines are equal and the sines change sign."""
    D = fields.shape[1]
    H = nu_half.shape[0]
    cb = np.empty((D, H))
    sb = np.empty((D, H))
    for d in range(D):
        for t in range(H):
            a = 0.0
            for c in range(4):
                a += fields[f, d, 2 + c] * nu_half[t, c]
            cb[d, t] = np.cos(a)
            sb[d, t] = np.sin(a)
    return cb, sb


@cached_njit(error_model="numpy", fastmath=_FM)
def _row(P, fc, fi, v, s, m, left_c, left_s, row, tmp):
    """Fill ``left_c[row]``, ``left_s[row]`` with the type-dependent field's ``W cos α`` and
    ``W sin α`` at (v, s, m) and return the type-free field at the same point. ``P`` is
    ``fields`` transposed to ``(4, 9, D)`` so the feature loop runs over contiguous memory and
    vectorises."""
    D = P.shape[2]
    wcol = 7 + m
    for d in range(D):
        a = P[fc, 0, d] * v + P[fc, 1, d] * s + P[fc, 6, d]
        tmp[d] = P[fc, wcol, d] * _sincos(a)[1]
        a = P[fi, 0, d] * v + P[fi, 1, d] * s + P[fi, 6, d]
        sn, cs = _sincos(a)
        w = P[fi, wcol, d]
        left_c[row, d] = w * cs
        left_s[row, d] = w * sn
    const = 0.0
    for d in range(D):
        const += tmp[d]
    return const


@cached_njit(error_model="numpy", fastmath=_FM, inline="always")
def _node_rows(P, mid, half, s, m, x, left_c, left_s, const, row0, trig, tmp_p, tmp_m):
    """Rows ``row0 ... row0 + Q − 1`` of the price-sensitivity fields at the nodes
    ``v_q = mid + half x_q`` of a rule with antisymmetric nodes (``x[Q−1−q] = −x[q]``, as
    Gauss–Legendre's): ``left_c``, ``left_s`` get ``G_I``'s ``W cos α`` and ``W sin α`` and
    ``const`` the type-free ``G_C``. With ``α = A ± B``, ``A`` the argument at ``mid`` and
    ``B = ω_v half x_q``, the angle-addition formulas give both nodes of a pair from one sine and
    cosine of ``B``: half the sines and cosines of :func:`_row` at each node."""
    D = P.shape[2]
    Q = x.shape[0]
    wcol = 7 + m
    for d in range(D):
        sn, cs = _sincos(P[2, 0, d] * mid + P[2, 1, d] * s + P[2, 6, d])
        trig[0, d] = P[2, wcol, d] * cs
        trig[1, d] = P[2, wcol, d] * sn
        sn, cs = _sincos(P[3, 0, d] * mid + P[3, 1, d] * s + P[3, 6, d])
        trig[2, d] = P[3, wcol, d] * cs
        trig[3, d] = P[3, wcol, d] * sn
    for q in range((Q + 1) // 2):
        lo = row0 + q
        hi = row0 + Q - 1 - q  # the mirror node (lo itself at the middle of an odd rule)
        for d in range(D):
            sb, cb = _sincos(P[2, 0, d] * half * x[q])
            tmp_p[d] = trig[0, d] * cb - trig[1, d] * sb
            tmp_m[d] = trig[0, d] * cb + trig[1, d] * sb
            sb, cb = _sincos(P[3, 0, d] * half * x[q])
            left_c[lo, d] = trig[2, d] * cb - trig[3, d] * sb
            left_s[lo, d] = trig[3, d] * cb + trig[2, d] * sb
            left_c[hi, d] = trig[2, d] * cb + trig[3, d] * sb
            left_s[hi, d] = trig[3, d] * cb - trig[2, d] * sb
        # the sums apart from the loop above, which vectorises only without a reduction
        acc_p = 0.0
        acc_m = 0.0
        for d in range(D):
            acc_p += tmp_p[d]
            acc_m += tmp_m[d]
        const[lo] = acc_p
        const[hi] = acc_m


@cached_njit(error_model="numpy", fastmath=_FM)
def _subtract_integral(lam_c, lam_s, rows0, nrows, const, weight, out):
    """``out[t] -= Σ_r weight[r] softplus(Λ_r(ν_t))`` over rows ``rows0 ...``, where
    ``Λ_r(±ν_t) = const[r] + lam_c[r, t] ∓ lam_s[r, t]`` for the H type pairs (``out`` has 2H
    entries: ``+ν`` first, then ``−ν``)."""
    H = lam_c.shape[1]
    plus = out[:H]
    minus = out[H:]
    end = rows0 + nrows
    r = rows0
    # One softplus is a chain of ~60 dependent operations, too long for the out-of-order window
    # to overlap successive iterations: independent chains keep the FMA pipes busier. Eight rows
    # per pass, subtracted as two sums of four in turn, then a pass of four if four remain: the
    # same operations in the same order for any number of rows as four rows per pass, which
    # took 1.50 ns per softplus against 1.29 (and 5.0 against 3.6 ns for one row against four,
    # measured with the Taylor polynomials). Two loops: one store stream each, which LLVM
    # vectorises.
    while r + 8 <= end:
        c0, c1, c2, c3 = const[r], const[r + 1], const[r + 2], const[r + 3]
        c4, c5, c6, c7 = const[r + 4], const[r + 5], const[r + 6], const[r + 7]
        w0, w1, w2, w3 = weight[r], weight[r + 1], weight[r + 2], weight[r + 3]
        w4, w5, w6, w7 = weight[r + 4], weight[r + 5], weight[r + 6], weight[r + 7]
        for t in range(H):
            first = ((w0 * _softplus(lam_c[r, t] + c0 - lam_s[r, t])
                      + w1 * _softplus(lam_c[r + 1, t] + c1 - lam_s[r + 1, t]))
                     + (w2 * _softplus(lam_c[r + 2, t] + c2 - lam_s[r + 2, t])
                        + w3 * _softplus(lam_c[r + 3, t] + c3 - lam_s[r + 3, t])))
            second = ((w4 * _softplus(lam_c[r + 4, t] + c4 - lam_s[r + 4, t])
                       + w5 * _softplus(lam_c[r + 5, t] + c5 - lam_s[r + 5, t]))
                      + (w6 * _softplus(lam_c[r + 6, t] + c6 - lam_s[r + 6, t])
                         + w7 * _softplus(lam_c[r + 7, t] + c7 - lam_s[r + 7, t])))
            plus[t] = (plus[t] - first) - second
        for t in range(H):
            first = ((w0 * _softplus(lam_c[r, t] + c0 + lam_s[r, t])
                      + w1 * _softplus(lam_c[r + 1, t] + c1 + lam_s[r + 1, t]))
                     + (w2 * _softplus(lam_c[r + 2, t] + c2 + lam_s[r + 2, t])
                        + w3 * _softplus(lam_c[r + 3, t] + c3 + lam_s[r + 3, t])))
            second = ((w4 * _softplus(lam_c[r + 4, t] + c4 + lam_s[r + 4, t])
                       + w5 * _softplus(lam_c[r + 5, t] + c5 + lam_s[r + 5, t]))
                      + (w6 * _softplus(lam_c[r + 6, t] + c6 + lam_s[r + 6, t])
                         + w7 * _softplus(lam_c[r + 7, t] + c7 + lam_s[r + 7, t])))
            minus[t] = (minus[t] - first) - second
        r += 8
    if r + 4 <= end:
        c0, c1, c2, c3 = const[r], const[r + 1], const[r + 2], const[r + 3]
        w0, w1, w2, w3 = weight[r], weight[r + 1], weight[r + 2], weight[r + 3]
        for t in range(H):
            plus[t] -= ((w0 * _softplus(lam_c[r, t] + c0 - lam_s[r, t])
                         + w1 * _softplus(lam_c[r + 1, t] + c1 - lam_s[r + 1, t]))
                        + (w2 * _softplus(lam_c[r + 2, t] + c2 - lam_s[r + 2, t])
                           + w3 * _softplus(lam_c[r + 3, t] + c3 - lam_s[r + 3, t])))
        for t in range(H):
            minus[t] -= ((w0 * _softplus(lam_c[r, t] + c0 + lam_s[r, t])
                          + w1 * _softplus(lam_c[r + 1, t] + c1 + lam_s[r + 1, t]))
                         + (w2 * _softplus(lam_c[r + 2, t] + c2 + lam_s[r + 2, t])
                            + w3 * _softplus(lam_c[r + 3, t] + c3 + lam_s[r + 3, t])))
        r += 4
    while r < end:
        c = const[r]
        w = weight[r]
        for t in range(H):
            plus[t] -= w * _softplus(lam_c[r, t] + c - lam_s[r, t])
        for t in range(H):
            minus[t] -= w * _softplus(lam_c[r, t] + c + lam_s[r, t])
        r += 1


@cached_njit(error_model="numpy", fastmath=_FM)
def shares_nb(zp: np.ndarray, zs: np.ndarray, mushy: np.ndarray, z_lo: np.ndarray,
              z_hi: np.ndarray, fields: np.ndarray, scal: np.ndarray, nu_half: np.ndarray,
              gx: np.ndarray, gw: np.ndarray, sx: np.ndarray, sw: np.ndarray,
              perturb: bool) -> tuple[np.ndarray, np.ndarray]:
    """Inside shares of ``n`` markets and, with ``perturb``, at every price perturbation.

    Parameters
    ----------
    zp, zs, mushy : ndarray, shape (n, J)
        Standardised price, standardised sugar and mushy (0.0/1.0) of each product.
    z_lo, z_hi : ndarray, shape (n, J)
        Standardised prices of product ``k`` in its lowered and raised perturbation.
    fields : ndarray, shape (4, D, 9)
        Field parameters (module docstring).
    scal : ndarray, shape (3,)
        ``[l0, λ0, 1/c]``.
    nu_half : ndarray, shape (H, 4)
        First half of the antithetic consumer types; the shares average over the 2H types
        ``+nu_half`` and ``−nu_half`` with equal weights.
    gx, gw : ndarray, shape (Q,)
        Gauss–Legendre rule on [-1, 1] for ``∫_0^z`` (its nodes antisymmetric,
        ``gx[Q−1−q] = −gx[q]``, as :func:`numpy.polynomial.legendre.leggauss` gives them).
    sx, sw : ndarray, shape (S,)
        Short Gauss–Legendre rule on [-1, 1] for the perturbation piece ``∫_z^{z'}`` (nodes
        antisymmetric too).
    perturb : bool
        Whether to compute the perturbed shares.

    Returns
    -------
    base : ndarray, shape (n, J)
    perturbed : ndarray, shape (n, 2, J, J) (``(0, 2, J, J)`` without ``perturb``)
        ``perturbed[i, 0, k, j]`` is product ``j``'s share in market ``i`` with ``p_k`` lowered,
        ``perturbed[i, 1, k, j]`` with it raised.
    """
    n, J = zp.shape
    D = fields.shape[1]
    H = nu_half.shape[0]
    T = 2 * H
    Q = gx.shape[0]
    S = sx.shape[0]
    l0, lam0, inv_c = scal[0], scal[1], scal[2]
    inv_T = 1.0 / T
    cH, sH = _type_matrices(nu_half, fields, 1)
    cG, sG = _type_matrices(nu_half, fields, 3)
    P = np.ascontiguousarray(fields.transpose(0, 2, 1))
    tmp = np.empty(D)
    tmp_m = np.empty(D)
    trig = np.empty((4, D))
    base = np.empty((n, J))
    pert = np.empty((n if perturb else 0, 2, J, J))
    leftLc = np.empty((J, D))
    leftLs = np.empty((J, D))
    constL = np.empty(J)
    Lc = np.empty((J, H))
    Ls = np.empty((J, H))
    # The price-sensitivity field is computed a block of rows at a time (whole products, or
    # whole perturbations) so that the product's output is still in cache when the softplus
    # pass reads it.
    pb = max(1, _BLOCK_ROWS // Q)  # products per block
    gb = max(1, _BLOCK_ROWS // S)  # perturbations per block
    nrow = max(pb * Q, gb * S)
    left_c = np.empty((nrow, D))
    left_s = np.empty((nrow, D))
    const = np.empty(nrow)
    wt = np.empty(nrow)
    lam_c = np.empty((nrow, H))
    lam_s = np.empty((nrow, H))
    V = np.empty((J, T))
    E = np.empty((J, T))
    den = np.empty(T)
    vk = np.empty(T)
    ek = np.empty(T)
    inv = np.empty(T)
    inv_g = np.empty((2 * J, T))
    tmp_t = np.empty(T)
    own = np.empty(2 * J)
    shares_g = np.empty((J, 2 * J))
    shares_b = np.empty(J)
    for i in range(n):
        # Utility levels L = l0 + H_C + H_I: two (J x D)(D x H) products.
        for j in range(J):
            constL[j] = l0 + _row(P, 0, 1, 0.0, zs[i, j], int(mushy[i, j]), leftLc, leftLs, j,
                                  tmp)
        np.dot(leftLc, cH, Lc)
        np.dot(leftLs, sH, Ls)
        for j in range(J):
            for t in range(H):
                V[j, t] = constL[j] + Lc[j, t] - Ls[j, t]
                V[j, H + t] = constL[j] + Lc[j, t] + Ls[j, t]
        # Price-sensitivity field at every (product, node): two (pb Q x D)(D x H) products per
        # block of pb products, each followed by its products' integrals.
        for j0 in range(0, J, pb):
            j1 = min(J, j0 + pb)
            for j in range(j0, j1):
                half = 0.5 * zp[i, j]
                r0 = (j - j0) * Q
                _node_rows(P, half, half, zs[i, j], int(mushy[i, j]), gx, left_c, left_s, const,
                           r0, trig, tmp, tmp_m)
                for q in range(Q):
                    const[r0 + q] += lam0
                    wt[r0 + q] = half * gw[q] * inv_c
            rows = (j1 - j0) * Q
            np.dot(left_c[:rows], cG, lam_c[:rows])
            np.dot(left_s[:rows], sG, lam_s[:rows])
            for j in range(j0, j1):
                _subtract_integral(lam_c, lam_s, (j - j0) * Q, Q, const, wt, V[j])
        for t in range(T):
            den[t] = 1.0
        for j in range(J):
            for t in range(T):
                E[j, t] = _exp(V[j, t])
                den[t] += E[j, t]
        for t in range(T):
            inv[t] = 1.0 / den[t]
        np.dot(E, inv, shares_b)
        for j in range(J):
            base[i, j] = shares_b[j] * inv_T
        if not perturb:
            continue
        # The small pieces ∫_z^{z'} of the 2J perturbations (index g = sgn J + k), gb at a
        # time: two (gb S x D)(D x H) products per block.
        for g0 in range(0, 2 * J, gb):
            g1 = min(2 * J, g0 + gb)
            for g in range(g0, g1):
                k = g % J
                z0 = zp[i, k]
                z1 = z_lo[i, k] if g < J else z_hi[i, k]
                half = 0.5 * (z1 - z0)
                r0 = (g - g0) * S
                _node_rows(P, z0 + half, half, zs[i, k], int(mushy[i, k]), sx, left_c, left_s,
                           const, r0, trig, tmp, tmp_m)
                for q in range(S):
                    const[r0 + q] += lam0
                    wt[r0 + q] = half * sw[q] * inv_c
            rows = (g1 - g0) * S
            np.dot(left_c[:rows], cG, lam_c[:rows])
            np.dot(left_s[:rows], sG, lam_s[:rows])
            for g in range(g0, g1):
                k = g % J
                for t in range(T):
                    vk[t] = V[k, t]
                _subtract_integral(lam_c, lam_s, (g - g0) * S, S, const, wt, vk)
                for t in range(T):
                    ek[t] = _exp(vk[t])
                    inv_g[g, t] = 1.0 / (den[t] - E[k, t] + ek[t])
                    tmp_t[t] = ek[t] * inv_g[g, t]
                own[g] = 0.0
                for t in range(T):
                    own[g] += tmp_t[t]
        # Every product's share in every perturbed market, E · inv_gᵀ, by BLAS: the type sums
        # as scalar loops were one dependent chain of T additions per share. The perturbed
        # product's own entry is then replaced by its share from e^{V'_k}.
        np.dot(E, inv_g.T, shares_g)
        for g in range(2 * J):
            k = g % J
            for j in range(J):
                pert[i, g // J, k, j] = (own[g] if j == k else shares_g[j, g]) * inv_T
    return base, pert


def _field_numpy(p: np.ndarray, v, s: float, m: int, nu: np.ndarray | None) -> np.ndarray:
    """One field from its definition: ``Σ_d W_m[d] cos(ω_v v + ω_s s + ω_ν·ν + b)``; ``v`` is an
    array of shape (Q,) (or a scalar), ``nu`` (T, 4) or None; result shape (Q, T) or (Q,)."""
    v = np.atleast_1d(np.asarray(v, dtype=float))
    arg = v[:, None] * p[:, 0] + s * p[:, 1] + p[:, 6]  # (Q, D)
    if nu is not None:
        arg = arg[:, None, :] + (nu @ p[:, 2:6].T)[None, :, :]  # (Q, T, D)
    return np.cos(arg) @ p[:, 7 + m]


def shares_numpy(zp, zs, mushy, z_lo, z_hi, fields, scal, nu_half, gx, gw, sx, sw, perturb):
    """Plain-NumPy twin of :func:`shares_nb` (same arguments and returns), from the definition."""
    nu = np.concatenate([nu_half, -nu_half])
    n, J = zp.shape
    T = nu.shape[0]
    l0, lam0, inv_c = scal
    base = np.empty((n, J))
    pert = np.empty((n if perturb else 0, 2, J, J))

    def integral(lo, hi, s, m, x, w):
        v = lo + 0.5 * (hi - lo) * (x + 1.0)
        lam = lam0 + _field_numpy(fields[2], v, s, m, None)[:, None] + _field_numpy(
            fields[3], v, s, m, nu)
        return 0.5 * (hi - lo) * inv_c * (w @ np.logaddexp(0.0, lam))  # (T,)

    def shares(V):
        e = np.exp(V)
        return (e / (1.0 + e.sum(axis=0))).mean(axis=1)

    for i in range(n):
        V = np.empty((J, T))
        for j in range(J):
            s, m = zs[i, j], int(mushy[i, j])
            V[j] = (l0 + _field_numpy(fields[0], 0.0, s, m, None)[0]
                    + _field_numpy(fields[1], 0.0, s, m, nu)[0]
                    - integral(0.0, zp[i, j], s, m, gx, gw))
        base[i] = shares(V)
        if perturb:
            for sgn, target in enumerate((z_lo, z_hi)):
                for k in range(J):
                    Vp = V.copy()
                    Vp[k] -= integral(zp[i, k], target[i, k], zs[i, k], int(mushy[i, k]), sx, sw)
                    pert[i, sgn, k] = shares(Vp)
    return base, pert


def matmul_flops(n_markets: int, J: int, D: int, T: int, Q: int, S: int, perturb: bool) -> float:
    """Floating-point operations of the kernel's matrix products (2 per multiply–add), the simple
    count benchmarks report GFLOP/s against: ``2 · rows · D · T`` (two ``D × T/2`` products per
    row with antithetic types).

    Examples
    --------
    >>> round(matmul_flops(1, 24, 64, 512, 64, 8, False) / 1e9, 3)
    0.102
    """
    rows = J + J * Q + (2 * J * S if perturb else 0)
    return 2.0 * n_markets * rows * D * T
