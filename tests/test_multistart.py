"""The multistart driver (restrictiveness.shared._multistart_nb) on the shared bounded LM:
the better of two separated optima, distinct starts, face groups, its NumPy twin, and a driver
compiled once for first-class callbacks."""

from __future__ import annotations

import math

import numba
import numpy as np
import pytest

from restrictiveness.shared._multistart_nb import multistart_for, multistart_numpy

F8 = numba.float64
ARGS = numba.types.Tuple((F8[::1], F8[::1]))
CALLBACK = numba.types.FunctionType(
    numba.types.Tuple((F8[::1], F8[:, ::1]))(F8[::1], ARGS, numba.boolean))


def _decay(x, args, want_jac):
    """``a exp(−k t) − y``; the Jacobian only when asked."""
    t, y = args
    e = np.exp(-x[1] * t)
    J = np.empty((t.shape[0] if want_jac else 0, 2))
    if want_jac:
        J[:, 0] = e
        J[:, 1] = -x[0] * t * e
    return x[0] * e - y, J


DECAY = numba.njit(CALLBACK.signature)(_decay)


def _decay_scaled(x, args, want_jac):
    """The same model written another way (a second callback of the same type)."""
    t, y = args
    r, J = DECAY(x, args, want_jac)
    return 2.0 * r, 2.0 * J
TOL = (500, 1e-12, 1e-12, 1e-14)   # max_nfev, gtol, xtol, ftol
NONE = np.zeros(2, dtype=np.int64)  # no entry projected (linear)


def _grid(lo, hi, k=9):
    g = [np.linspace(a, b, k) for a, b in zip(lo, hi, strict=True)]
    return np.ascontiguousarray(np.stack(np.meshgrid(*g, indexing="ij"), -1).reshape(-1, len(lo)))


def _problem():
    # one decay fitted to a damped oscillation: separated basins in (a, k)
    t = np.linspace(0, 6, 80)
    y = 1.0 * np.exp(-0.3 * t) + 1.5 * np.exp(-3.0 * t) * np.cos(2 * t)
    lo, hi = np.array([0.0, 0.0]), np.array([4.0, 6.0])
    P = _grid(lo, hi)
    group = np.zeros(len(P), dtype=np.int64)
    group[P[:, 1] == hi[1]] = 1                        # one face as its own group
    return (t, y), P, group, lo, hi


def test_finds_the_best_optimum_from_distinct_starts_and_matches_its_twin():
    args, P, group, lo, hi = _problem()
    free = np.ones(2, dtype=np.int64)
    driver = multistart_for(CALLBACK)
    x, ssr, rec, evals = driver(DECAY, args, P, group, lo, hi, free, NONE, 3, 0.2, *TOL)
    x2, ssr2, rec2, evals2 = multistart_numpy(_decay, args, P, group, lo, hi, free, NONE, 3, 0.2,
                                              *TOL)
    assert ssr == pytest.approx(ssr2, rel=1e-12)
    np.testing.assert_array_equal(rec[:, :2], rec2[:, :2])       # the same starts, same order
    np.testing.assert_allclose(rec[:, 2:4], rec2[:, 2:4], atol=1e-8)
    # no single start from a coarse sweep of the box does better
    best_single = min(multistart_numpy(_decay, args, p[None].copy(), np.zeros(1, np.int64), lo,
                                       hi, free, NONE, 1, 0.0, *TOL)[1] for p in P[::5])
    assert ssr <= best_single * (1 + 1e-10)
    assert len(rec) == 4 and rec[-1, 1] == hi[1]              # 3 distinct + the face's best
    starts = rec[:3, :2]
    d = np.sqrt((((starts[:, None] - starts[None]) / (hi - lo)) ** 2).sum(-1))
    assert d[np.triu_indices(3, 1)].min() >= 0.2
    assert evals == len(P) + rec[:, 5].sum()                  # screening + every refinement
    assert ssr == rec[:, 4].min()


def test_points_where_the_model_is_not_finite_are_never_started_from():
    t = np.linspace(0.1, 2, 20)
    args = (t, np.sqrt(t))
    P = np.array([[1.0, np.nan], [1.0, 0.5], [np.inf, 1.0]])
    x, ssr, rec, _ = multistart_numpy(_decay, args, P, np.zeros(3, np.int64), np.zeros(2),
                                      np.array([5.0, 5.0]), np.ones(2, np.int64), NONE, 4, 0.0,
                                      *TOL)
    assert len(rec) == 1 and rec[0, 1] == 0.5 and np.isfinite(ssr)


def test_the_driver_is_compiled_once_per_callback_type():
    driver = multistart_for(CALLBACK)
    assert multistart_for(CALLBACK) is driver and len(driver.overloads) == 1
    other = numba.njit(CALLBACK.signature)(_decay_scaled)
    t = np.linspace(0, 4, 30)
    lo, hi = np.zeros(2), np.array([3.0, 3.0])
    P = _grid(lo, hi, 5)
    for fun in (DECAY, other):
        x, *_ = driver(fun, (t, 1.5 * np.exp(-0.4 * t)), P, np.zeros(len(P), dtype=np.int64),
                       lo, hi, np.ones(2, dtype=np.int64), NONE, 2, 0.1, *TOL)
        np.testing.assert_allclose(x, [1.5, 0.4], rtol=1e-9)
    assert len(driver.overloads) == 1                         # no recompilation per callback


def _decay_log(x, args, want_jac):
    """``a exp(−k t) − y`` with ``a = e^{x₀}`` (a linear parameter searched on the log scale)."""
    r, J = DECAY(np.array([math.exp(x[0]), x[1]]), args, want_jac)
    if want_jac:
        J[:, 0] *= math.exp(x[0])
    return r, J


DECAY_LOG = numba.njit(CALLBACK.signature)(_decay_log)


@pytest.mark.parametrize("log", [False, True], ids=["linear", "log"])
def test_screening_points_are_projected_on_the_linear_parameter(log):
    # a e^{−kt} is linear in a: a screening point (a₀, k) of group 0 is screened at
    # â(k) = Σ y e^{−kt} / Σ e^{−2kt}, the least-squares amplitude given k, clipped to the box
    # (a's bound 2.1 cuts it at k = 2), whatever a₀; the refinement starts from the best
    # projected point. A face point (group 1) is screened as it is.
    t = np.linspace(0, 4, 30)
    y = 1.5 * np.exp(-0.4 * t) + 0.05 * np.cos(5 * t)
    lo, hi = np.array([0.1, 0.0]), np.array([2.1, 3.0])
    P = np.array([[0.2, 0.1], [0.8, 0.5], [0.3, 0.9], [0.5, 2.0], [0.15, 0.3], [1.2, 0.35]])
    group = np.array([0, 0, 0, 0, 0, 1], dtype=np.int64)
    e = np.exp(-np.outer(P[:, 1], t))
    a_hat = np.clip((e @ y) / (e * e).sum(1), lo[0], hi[0])
    assert a_hat[3] == hi[0] and lo[0] < a_hat.min() and (a_hat < hi[0]).sum() == 5
    ssr = ((a_hat[:, None] * e - y) ** 2).sum(1)
    best = int(np.argmin(ssr[:5]))
    assert P[best, 0] != 1.0   # a₀ = 1 would hide a step taken in log a (the same there)
    expected = np.array([a_hat[best], P[best, 1]])
    fun, twin, linear = (DECAY_LOG, _decay_log, 2) if log else (DECAY, _decay, 1)
    if log:
        P[:, 0], lo[0], hi[0], expected[0] = np.log(P[:, 0]), math.log(lo[0]), math.log(hi[0]), \
            math.log(expected[0])
    linear = np.array([linear, 0], dtype=np.int64)
    free = np.ones(2, dtype=np.int64)
    driver = multistart_for(CALLBACK)
    x, _, rec, evals = driver(fun, (t, y), P, group, lo, hi, free, linear, 1, 0.0, *TOL)
    x2, _, rec2, _ = multistart_numpy(twin, (t, y), P, group, lo, hi, free, linear, 1, 0.0,
                                      *TOL)
    np.testing.assert_allclose(rec[0, :2], expected, rtol=1e-12)
    np.testing.assert_allclose(rec2[0, :2], expected, rtol=1e-12)
    np.testing.assert_array_equal(rec[1, :2], P[5])               # the face's point as it was
    assert len(rec) == 2 and evals == len(P) + 5 + rec[:, 5].sum()  # one projection per point
    assert P[0, 0] == (math.log(0.2) if log else 0.2)             # the caller's points untouched
