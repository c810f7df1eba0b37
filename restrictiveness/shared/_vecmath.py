"""Elementary functions in branch-free arithmetic that LLVM vectorises.

numba compiles ``np.exp``, ``np.log``, ``np.log1p``, ``np.sin`` and ``np.cos`` to scalar libm
calls, which do not vectorise without Intel's SVML (absent here). The functions below are written
instead as Cody–Waite range reductions, polynomials and exponent bitcasts, so a loop over them
compiles to SIMD code: about 5× (softplus) and 10× (sin/cos) faster than the libm calls inside the
demand kernels, about 3× (log and exp) in the RDU grid. Each has a documented error bound, an
array front end (``*_nb``) and a NumPy twin (``*_numpy``) that tests compare it with.

The ``_``-prefixed scalar versions are meant to be inlined into other kernels
(:mod:`restrictiveness.demand._shares_nb`, :mod:`restrictiveness.demand._logit_nb`,
:mod:`restrictiveness.lottery._rdu_nb`). numba's on-disk cache keys a kernel on its own source
file only, but every kernel here and in those modules is compiled with
:func:`~restrictiveness.shared._jit.cached_njit`, whose cache names carry a digest of all the
package's kernel modules: an edit here recompiles the kernels that inline these functions.
"""

from __future__ import annotations

import numba
import numpy as np
from llvmlite import ir
from numba import types
from numba.extending import intrinsic

from ._jit import cached_njit

__all__ = ["exp_nb", "exp_numpy", "exp_pair_nb", "exp_pair_numpy", "log_nb", "log_numpy",
           "softplus_nb", "softplus_numpy", "sincos_nb", "sincos_numpy"]

# No reassociation: the Cody–Waite reduction below relies on the order of its subtractions.
_FM = {"nnan", "ninf", "nsz", "contract", "arcp"}

_LN2HI = 6.93147180369123816490e-01
_LN2LO = 1.90821492927058770002e-10
_INVLN2 = 1.44269504088896338700e00
_LN2 = 6.93147180559945309417e-01
_TWO_OVER_PI = 6.36619772367581382433e-01
_PIO2_1 = 1.57079632673412561417e00  # π/2 in three parts (fdlibm)
_PIO2_2 = 6.07710050630396597660e-11
_PIO2_3 = 2.02226624871116645580e-21
_SHIFTER = 6755399441055744.0  # 1.5 · 2^52
_SHIFTER_BITS = 0x4338000000000000  # its bit pattern: 1.5 · 2^52 + n has the bits of this + n
_SQRT_HALF_HI = 0x3FE6A09E00000000  # the high word of √2/2: mantissas at or above start a binade
_TINY = 2.2250738585072014e-308  # smallest normal float64
_TWO54 = 18014398509481984.0


# numba.config sets its options from the environment at import time, unseen by mypy
if numba.config.DISABLE_JIT:  # type: ignore[attr-defined]  # pragma: no cover - pure Python

    def _f64_from_bits(bits):
        return np.int64(bits).view(np.float64)

    def _bits_from_f64(x):
        return np.float64(x).view(np.int64)

else:

    @intrinsic
    def _f64_from_bits(typingctx, bits):
        """Reinterpret an int64 as a float64 (an LLVM bitcast, which vectorises)."""
        sig = types.float64(types.int64)

        def codegen(context, builder, signature, args):
            return builder.bitcast(args[0], ir.DoubleType())

        return sig, codegen

    @intrinsic
    def _bits_from_f64(typingctx, x):
        """Reinterpret a float64 as an int64 (an LLVM bitcast, which vectorises)."""
        sig = types.int64(types.float64)

        def codegen(context, builder, signature, args):
            return builder.bitcast(args[0], ir.IntType(64))

        return sig, codegen


@cached_njit(error_model="numpy", fastmath=_FM, inline="always")
def _exp_pair(x):
    # (e^x, e^-x) for the price of about one exponential. Cody–Waite reduction x = n ln2 + r
    # with |r| <= ln2/2; e^{±r} = E ± r O, where E and O are the even and odd parts, degree-5
    # polynomials in r² (Chebyshev fits of cosh √s and sinh √s / √s on s <= (ln2/2)², made with
    # mpmath.chebyfit at 50 digits: errors < 2e-17 after rounding the coefficients, where the
    # Taylor polynomial of degree 11 would err by 6e-15); 2^{±n} are exponent bitcasts.
    # x is clamped to [-700, 700], where both powers stay normal numbers: callers keep their
    # arguments inside (or accept the clamp).
    x = min(max(x, -700.0), 700.0)
    # n = nearest integer to x/ln2 by adding 1.5·2^52, which leaves n in the low mantissa bits:
    # an integer read by bitcast, where a float-to-int64 conversion has no AVX2 instruction and
    # would be done lane by lane
    kd = x * _INVLN2 + _SHIFTER
    n = kd - _SHIFTER
    r = (x - n * _LN2HI) - n * _LN2LO
    r2 = r * r
    e = 2.763265472252779e-07
    e = e * r2 + 2.4801485441561313e-05
    e = e * r2 + 0.0013888888952352863
    e = e * r2 + 0.04166666666648795
    e = e * r2 + 0.5000000000000019
    e = e * r2 + 1.0
    o = 2.5110049204818658e-08
    o = o * r2 + 2.755724088722987e-06
    o = o * r2 + 0.00019841269890076403
    o = o * r2 + 0.008333333333319589
    o = o * r2 + 0.1666666666666668
    o = (o * r2 + 1.0) * r
    k = _bits_from_f64(kd) - _SHIFTER_BITS
    return ((e + o) * _f64_from_bits((1023 + k) << 52),
            (e - o) * _f64_from_bits((1023 - k) << 52))


@cached_njit(error_model="numpy", fastmath=_FM, inline="always")
def _exp(x):
    # the first half of the pair; once inlined, the unused e^-x is dead code that LLVM drops
    return _exp_pair(x)[0]


@cached_njit(error_model="numpy", fastmath=_FM)
def exp_nb(x: np.ndarray) -> np.ndarray:
    """``exp(x)`` elementwise on a 1-D float64 array (relative error < 4e-16 for
    ``|x| <= 700``; arguments beyond are clamped to ±700), in vectorisable arithmetic.

    Examples
    --------
    >>> import numpy as np
    >>> bool(np.allclose(exp_nb(np.array([-3.0, 0.0, 2.5])), np.exp([-3.0, 0.0, 2.5])))
    True
    """
    out = np.empty_like(x)
    for i in range(x.shape[0]):
        out[i] = _exp(x[i])
    return out


def exp_numpy(x: np.ndarray) -> np.ndarray:
    """NumPy twin of :func:`exp_nb` (with the same clamp)."""
    return np.exp(np.clip(x, -700.0, 700.0))


@cached_njit(error_model="numpy", fastmath=_FM)
def exp_pair_nb(x: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """``(exp(x), exp(-x))`` elementwise on a 1-D float64 array, sharing one range reduction
    (relative errors < 4e-16 for ``|x| <= 700``; arguments beyond are clamped to ±700).

    Examples
    --------
    >>> import numpy as np
    >>> p, m = exp_pair_nb(np.array([-2.0, 0.5]))
    >>> bool(np.allclose(p, np.exp([-2.0, 0.5])) and np.allclose(m, np.exp([2.0, -0.5])))
    True
    """
    p = np.empty_like(x)
    m = np.empty_like(x)
    for i in range(x.shape[0]):
        p[i], m[i] = _exp_pair(x[i])
    return p, m


def exp_pair_numpy(x: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """NumPy twin of :func:`exp_pair_nb`."""
    x = np.clip(x, -700.0, 700.0)
    return np.exp(x), np.exp(-x)


@cached_njit(error_model="numpy", fastmath=_FM, inline="always")
def _log(x):
    # fdlibm's log (e_log.c, error < 1 ulp) without its branches: x = 2^k m with m in
    # [√2/2, √2) read from the bits (subnormals first scaled by 2^54), f = m − 1,
    # s = f/(2 + f), log(1 + f) = f − f²/2 + s (f²/2 + R(s²)) with fdlibm's degree-7 R, and
    # k ln2 added in two parts; k becomes a float by the shifter bitcast (no lane-by-lane
    # conversion). The special cases are selects at the end: a caller compiled with
    # nnan/ninf (whose arguments are positive and finite) lets LLVM drop them.
    sub = x < _TINY
    xs = x * _TWO54 if sub else x
    bits = _bits_from_f64(xs) + (0x3FF0000000000000 - _SQRT_HALF_HI)
    k = (bits >> 52) - (1077 if sub else 1023)
    m = _f64_from_bits((bits & 0x000FFFFFFFFFFFFF) + _SQRT_HALF_HI)
    dk = _f64_from_bits(k + _SHIFTER_BITS) - _SHIFTER
    f = m - 1.0
    hfsq = 0.5 * f * f
    s = f / (2.0 + f)
    z = s * s
    w = z * z
    t1 = w * (3.999999999940941908e-01 + w * (2.222219843214978396e-01
                                              + w * 1.531383769920937332e-01))
    t2 = z * (6.666666666666735130e-01 + w * (2.857142874366239149e-01
                                              + w * (1.818357216161805012e-01
                                                     + w * 1.479819860511658591e-01)))
    r = s * (hfsq + (t1 + t2)) + dk * _LN2LO - hfsq + f + dk * _LN2HI
    r = np.inf if x == np.inf else r
    r = -np.inf if x == 0.0 else r
    return r if x >= 0.0 else np.nan  # negative or nan


# log_nb keeps NaN and infinities (np.log's special values), so no nnan/ninf here
_FM_IEEE = _FM - {"nnan", "ninf"}


@cached_njit(error_model="numpy", fastmath=_FM_IEEE)
def log_nb(x: np.ndarray) -> np.ndarray:
    """``log(x)`` elementwise on a 1-D float64 array (error < 1 ulp; subnormals, 0, inf, NaN and
    negative arguments as :func:`numpy.log`: ``-inf``, ``inf``, NaN), in vectorisable arithmetic.

    Examples
    --------
    >>> import numpy as np
    >>> bool(np.allclose(log_nb(np.array([0.5, 1.0, 1e-310])), np.log([0.5, 1.0, 1e-310])))
    True
    """
    out = np.empty_like(x)
    for i in range(x.shape[0]):
        out[i] = _log(x[i])
    return out


def log_numpy(x: np.ndarray) -> np.ndarray:
    """NumPy twin of :func:`log_nb`."""
    with np.errstate(divide="ignore", invalid="ignore"):
        return np.log(x)


@cached_njit(error_model="numpy", fastmath=_FM, inline="always")
def _softplus(x):
    # softplus(x) = max(x, 0) + log1p(t), t = exp(-|x|) in (0, 1]. Below e^-700 the log1p term
    # is negligible, so the clamp inside _exp costs nothing.
    t = _exp(-abs(x))
    # log1p(t) = k log 2 + 2 atanh(u), u = (t - k) / (2 + t + k), k = 1 when t > √2 - 1, so
    # |u| <= 0.1716; atanh(u)/u is a degree-7 polynomial in u² (Chebyshev fit made as for exp,
    # error < 3e-18; the Taylor series needs degree 10). Short polynomials matter here: the
    # softplus is one chain of dependent operations, and the demand kernel's time is its latency.
    k = 1.0 if t > 0.41421356237309503 else 0.0
    u = (t - k) / (2.0 + t + k)
    u2 = u * u
    q = 0.0740501240085185
    q = q * u2 + 0.07656249038956962
    q = q * u2 + 0.09091816401590137
    q = q * u2 + 0.1111109851803912
    q = q * u2 + 0.14285714380417466
    q = q * u2 + 0.19999999999650742
    q = q * u2 + 0.33333333333333826
    q = q * u2 + 1.0
    return max(x, 0.0) + (k * _LN2 + 2.0 * u * q)


@cached_njit(error_model="numpy", fastmath=_FM)
def softplus_nb(x: np.ndarray) -> np.ndarray:
    """``log(1 + exp(x))`` elementwise on a 1-D float64 array (relative error < 1e-15 for
    ``x > -700``, absolute error below 1e-300 beyond).

    Examples
    --------
    >>> import numpy as np
    >>> bool(np.allclose(softplus_nb(np.array([-1.0, 0.0, 3.0])), np.logaddexp(0, [-1, 0, 3])))
    True
    """
    out = np.empty_like(x)
    for i in range(x.shape[0]):
        out[i] = _softplus(x[i])
    return out


def softplus_numpy(x: np.ndarray) -> np.ndarray:
    """NumPy twin of :func:`softplus_nb`."""
    return np.logaddexp(0.0, x)


def sincos_numpy(x: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """NumPy twin of :func:`sincos_nb`."""
    return np.sin(x), np.cos(x)


@cached_njit(error_model="numpy", fastmath=_FM, inline="always")
def _sincos(x):
    # Cody–Waite reduction by π/2 (three-part constant, exact products for |x| < 2^20 π/2),
    # Taylor polynomials on |r| <= π/4 (errors < 1e-17) and a branch-free quadrant select, so
    # LLVM vectorises it (scalar np.sin/np.cos do not vectorise without Intel SVML).
    k = np.floor(x * _TWO_OVER_PI + 0.5)
    r = ((x - k * _PIO2_1) - k * _PIO2_2) - k * _PIO2_3
    r2 = r * r
    sn = 1.0 / 355687428096000.0
    sn = sn * r2 - 1.0 / 1307674368000.0
    sn = sn * r2 + 1.0 / 6227020800.0
    sn = sn * r2 - 1.0 / 39916800.0
    sn = sn * r2 + 1.0 / 362880.0
    sn = sn * r2 - 1.0 / 5040.0
    sn = sn * r2 + 1.0 / 120.0
    sn = sn * r2 - 1.0 / 6.0
    sn = r + r * r2 * sn
    cs = 1.0 / 6402373705728000.0
    cs = cs * r2 - 1.0 / 20922789888000.0
    cs = cs * r2 + 1.0 / 87178291200.0
    cs = cs * r2 - 1.0 / 479001600.0
    cs = cs * r2 + 1.0 / 3628800.0
    cs = cs * r2 - 1.0 / 40320.0
    cs = cs * r2 + 1.0 / 720.0
    cs = cs * r2 - 1.0 / 24.0
    cs = cs * r2 + 0.5
    cs = 1.0 - r2 * cs
    q = k - 4.0 * np.floor(k * 0.25)
    odd = (q == 1.0) | (q == 3.0)
    s_out = cs if odd else sn
    c_out = sn if odd else cs
    s_out = -s_out if q >= 2.0 else s_out
    c_out = -c_out if (q == 1.0) | (q == 2.0) else c_out
    return s_out, c_out


@cached_njit(error_model="numpy", fastmath=_FM)
def sincos_nb(x: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """``(sin x, cos x)`` elementwise on a 1-D float64 array (absolute error < 2e-16 for
    ``|x| < 1e5``), in vectorisable arithmetic.

    Examples
    --------
    >>> import numpy as np
    >>> s, c = sincos_nb(np.array([0.0, 1.0, 100.0]))
    >>> bool(np.allclose(s, np.sin([0, 1, 100])) and np.allclose(c, np.cos([0, 1, 100])))
    True
    """
    s = np.empty_like(x)
    c = np.empty_like(x)
    for i in range(x.shape[0]):
        s[i], c[i] = _sincos(x[i])
    return s, c

