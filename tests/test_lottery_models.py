"""Tests of the RDU / CPT family (SPEC §6): formulas, kernels, fits, estimator and summary."""

from __future__ import annotations

import json
import pickle
import warnings

import numpy as np
import pandas as pd
import pytest
import scipy.optimize
import statsmodels.api as sm

from restrictiveness.lottery import _rdu_nb as K
from restrictiveness.lottery.estimation import LotteryNLS
from restrictiveness.lottery.models import (
    CPT,
    RDU,
    DisappointmentAversion,
    ExpectedUtility,
    ExpectedValue,
    LinearWeighting,
    PrelecWeighting,
    ShiftedPowerUtility,
)
from restrictiveness.shared.exceptions import ConfigurationError, DataError, FormulaError
from restrictiveness.shared.sample import Sample

COLUMNS = ("z_hi", "z_lo", "p")
CLASSES = [("alpha", "gamma", "delta"), ("gamma", "delta"), ("alpha", "delta"), ("delta",),
           ("alpha", "gamma"), ("gamma",), ("alpha",)]
KINDS = [K.WEIGHT_LINEAR, K.WEIGHT_ODDS, K.WEIGHT_PRELEC]


def lotteries(rng, n):
    """Lotteries from the paper's domain (SPEC §6), with a few z_lo = 0."""
    zh = rng.uniform(1 / 15, 1, 3 * n)
    zl = rng.uniform(0, 1 / 3, 3 * n)
    p = rng.uniform(0.05, 0.95, 3 * n)
    X = np.c_[zh, zl, p][zh >= zl][:n]
    X[: n // 10, 1] = 0.0
    return np.ascontiguousarray(X)


def cpt(X, alpha=1.0, gamma=1.0, delta=1.0):
    return K.rdu_values(np.array([alpha, gamma, np.log(delta)]), X, 0.0, K.WEIGHT_ODDS)[0]


def monotone_truth(rng, X):
    """A random smooth CE function inside the prize interval, nondecreasing in each covariate."""
    c = np.abs(rng.normal(0, 2, 4))
    g = (rng.normal() + 3 * c[1] * X[:, 0] + 3 * c[2] * X[:, 1] + 4 * c[3] * (X[:, 2] - 0.5)
         + 0.5 * np.tanh(6 * (X[:, 2] - rng.uniform(0.2, 0.8))))
    return X[:, 1] + (X[:, 0] - X[:, 1]) / (1 + np.exp(-g))


# ---------------------------------------------------------------------------------------------
# formulas
# ---------------------------------------------------------------------------------------------

@pytest.mark.parametrize(("x", "theta", "expected"), [
    ((1.0, 0.0, 0.5), (0.5, 1.0, 1.0), 0.25),            # U = 0.5, f = 0.5²
    ((0.64, 0.16, 0.5), (0.5, 1.0, 1.0), 0.36),          # U = (0.8 + 0.4)/2 = 0.6
    ((0.9, 0.3, 0.5), (1.0, 0.5, 2.0), 0.7),             # w = 2/3
    ((0.9, 0.3, 0.2), (1.0, 1.0, 1.0), 0.42),            # expected value
    ((1.0, 0.0, 0.5), (0.01, 1.0, 1.0), 0.5**100),       # α = 0.01: f = w^(1/α) z_hi
    ((0.0, 0.0, 0.3), (0.3, 0.5, 2.0), 0.0),             # U = 0: both prizes 0
    ((0.5, 0.5, 0.3), (0.2, 0.3, 7.0), 0.5),             # degenerate lottery
])
def test_cpt_formula_hand_computed(x, theta, expected):
    X = np.array([x])
    got = cpt(X, *theta)
    np.testing.assert_allclose(got, [expected], rtol=1e-12, atol=1e-300)
    np.testing.assert_allclose(K.rdu_values_numpy(np.array([theta[0], theta[1],
                                                            np.log(theta[2])]), X, 0.0,
                                                  K.WEIGHT_ODDS)[0], [expected], rtol=1e-12)


def test_odds_weighting_matches_definition():
    p = np.linspace(0.01, 0.99, 50)
    X = np.c_[np.ones(50), np.zeros(50), p]          # α = 1, z = (1, 0): f = w(p)
    for gamma, delta in [(0.3, 0.5), (1.0, 30.0), (0.01, 0.01)]:
        w = delta * p**gamma / (delta * p**gamma + (1 - p) ** gamma)
        np.testing.assert_allclose(cpt(X, 1.0, gamma, delta), w, rtol=1e-13)


def test_prelec_and_shifted_power_hand_computed():
    # Prelec at p = 1/e: w = exp(−δ) whatever γ; δ = log 2 gives 1/2
    X = np.array([[1.0, 0.0, np.exp(-1.0)]])
    for gamma in (0.2, 1.0):
        f = K.rdu_values(np.array([1.0, gamma, np.log(np.log(2.0))]), X, 0.0, K.WEIGHT_PRELEC)[0]
        np.testing.assert_allclose(f, [0.5], rtol=1e-13)
    # shifted power, s = 1/4, α = 1/2, linear weighting: U = (1 + 0.5)/2, f = 0.75² − 0.25
    X = np.array([[0.75, 0.0, 0.5]])
    f = K.rdu_values(np.array([0.5, 1.0, 0.0]), X, 0.25, K.WEIGHT_LINEAR)[0]
    np.testing.assert_allclose(f, [0.3125], rtol=1e-13)
    X = lotteries(np.random.default_rng(0), 30)
    y = K.rdu_values(np.array([0.37, 1.0, 0.0]), X, 0.25, K.WEIGHT_LINEAR)[0]
    fit = ExpectedUtility(ShiftedPowerUtility(0.25)).fit_arrays(X, y)
    assert fit.params["alpha"] == pytest.approx(0.37, rel=1e-8) and fit.ssr < 1e-25


def test_expected_value_baseline_is_exact():
    rng = np.random.default_rng(0)
    X = lotteries(rng, 30)
    s = Sample(X[:, [2, 0, 1]], np.zeros(30), ("p", "z_hi", "z_lo"), "ce")
    rule = ExpectedValue().fit(s, rng)
    np.testing.assert_array_equal(rule.predict(s.X), X[:, 2] * X[:, 0] + (1 - X[:, 2]) * X[:, 1])
    assert ExpectedValue.label == "EV"


@pytest.mark.parametrize("theta", [(0.01, 0.01, 0.01), (0.01, 1.0, 30.0), (1.0, 0.01, 30.0),
                                   (0.5, 0.5, 1.0)])
def test_boundary_lotteries_and_parameters_are_finite(theta):
    p = np.array([0.0, 1e-300, 1e-12, 0.5, 1 - 1e-12, 1.0])
    X = np.ascontiguousarray(np.c_[np.full(6, 0.7), np.zeros(6), p])
    for kind in KINDS:
        f, J = K.rdu_values(np.array([theta[0], theta[1], np.log(theta[2])]), X, 0.0, kind)
        assert np.isfinite(f).all() and np.isfinite(J).all()
        assert ((f >= 0) & (f <= 0.7 + 1e-12)).all()
    assert cpt(X[:1], *theta)[0] == 0.0          # p = 0: the low prize
    assert cpt(X[-1:], *theta)[0] == pytest.approx(0.7, rel=1e-14)


# ---------------------------------------------------------------------------------------------
# kernels: analytic Jacobian and NumPy twins
# ---------------------------------------------------------------------------------------------

@pytest.mark.parametrize("kind", KINDS)
@pytest.mark.parametrize("shift", [0.0, 0.1])
@pytest.mark.parametrize("theta", [(0.6, 0.5, np.log(2.0)), (0.01, 0.01, np.log(30.0)),
                                   (1.0, 1.0, np.log(0.01)), (0.05, 0.9, 0.0)])
def test_jacobian_matches_finite_differences(kind, shift, theta):
    X = lotteries(np.random.default_rng(1), 40)
    theta = np.array(theta)
    _, J = K.rdu_values(theta, X, shift, kind)
    h = 1e-4 * np.maximum(np.abs(theta), 0.01)

    def f(t):
        return K.rdu_values_numpy(t, X, shift, kind)[0]

    for a in range(3):
        e = np.zeros(3)
        e[a] = h[a]
        # five-point central difference: truncation O(h⁴), so a step large enough that the
        # rounding of exp(log(U)/α) at α = 0.01 does not swamp it
        fd = (-f(theta + 2 * e) + 8 * f(theta + e) - 8 * f(theta - e) + f(theta - 2 * e)) / (
            12 * h[a])
        # exp(log(U)/α) carries a relative rounding error ~1e-14 when α = 0.01
        rounding = 1e-13 * np.abs(f(theta)).max() / h[a]
        np.testing.assert_allclose(J[:, a], fd, rtol=1e-6, atol=rounding + 1e-12)


def test_jacobian_at_small_alpha_matches_high_precision_derivatives():
    import mpmath as mp
    mp.mp.dps = 40
    X = lotteries(np.random.default_rng(1), 12)
    theta = np.array([0.01, 0.3, np.log(30.0)])
    _, J = K.rdu_values(theta, X, 0.0, K.WEIGHT_ODDS)

    def ce(i, alpha, gamma, ell):
        zh, zl, p = (mp.mpf(float(v)) for v in X[i])
        w = mp.exp(ell) * p**gamma / (mp.exp(ell) * p**gamma + (1 - p) ** gamma)
        return (w * zh**alpha + (1 - w) * (zl**alpha if zl > 0 else 0)) ** (1 / alpha)

    t = [mp.mpf(float(v)) for v in theta]
    for i in range(len(X)):
        exact = [mp.diff(lambda v, i=i: ce(i, v, t[1], t[2]), t[0]),
                 mp.diff(lambda v, i=i: ce(i, t[0], v, t[2]), t[1]),
                 mp.diff(lambda v, i=i: ce(i, t[0], t[1], v), t[2])]
        np.testing.assert_allclose(J[i], [float(v) for v in exact], rtol=1e-9, atol=1e-300)


@pytest.mark.parametrize("kind", KINDS)
@pytest.mark.parametrize("shift", [0.0, 0.2])
def test_numba_kernels_match_numpy_twins(kind, shift):
    rng = np.random.default_rng(2)
    X = lotteries(rng, 60)
    for theta in ([0.6, 0.4, 0.3], [0.01, 0.01, np.log(30.0)], [1.0, 1.0, 0.0]):
        theta = np.array(theta)
        f, J = K.rdu_values(theta, X, shift, kind)
        f2, J2 = K.rdu_values_numpy(theta, X, shift, kind)
        np.testing.assert_allclose(f, f2, rtol=1e-13, atol=1e-300)
        # the α column cancels two terms of size F log(U)/α²: an ulp of log U (U ≈ 1) differs
        # between libms by ~1e-16/α² (1e-12 at α = 0.01)
        np.testing.assert_allclose(J, J2, rtol=1e-8, atol=1e-15 / theta[0] ** 2)
    y = monotone_truth(rng, X)
    grids = (np.array([0.01, 0.3, 1.0]), np.array([0.01, 0.5, 1.0]), np.linspace(-4.6, 3.4, 5))
    np.testing.assert_allclose(K.grid_ssr(X, y, *grids, shift, kind),
                               K.grid_ssr_numpy(X, y, *grids, shift, kind), rtol=1e-12)
    lo, hi = np.array([0.01, 0.01, np.log(0.01)]), np.array([1.0, 1.0, np.log(30.0)])
    free = np.array([1, 1, 1])
    x1, s1, _ = K.refine(np.array([0.5, 0.5, 0.0]), lo, hi, free, X, y, shift, kind, 200, 1e-10)
    x2, s2, _ = K.refine_numpy(np.array([0.5, 0.5, 0.0]), lo, hi, free, X, y, shift, kind, 200,
                               1e-10)
    np.testing.assert_allclose(x1, x2, rtol=1e-6, atol=1e-8)
    assert s1 == pytest.approx(s2, rel=1e-9)
    b1 = K.fit_rdu(X, y, *grids, lo, hi, free, shift, kind, 3, 200, 1e-10)
    b2 = K.fit_rdu_numpy(X, y, *grids, lo, hi, free, shift, kind, 3, 200, 1e-10)
    assert b1[1] == pytest.approx(b2[1], rel=1e-9)
    np.testing.assert_allclose(b1[0], b2[0], rtol=1e-6, atol=1e-8)


# ---------------------------------------------------------------------------------------------
# fits: recovery, nesting, bounds, global optimum
# ---------------------------------------------------------------------------------------------

@pytest.mark.parametrize("kind", KINDS)
def test_grid_ssr_by_hand_with_a_lottery_of_two_zero_prizes(kind):
    # (0, 0, p) has U = 0 and CE 0 whatever the parameters; (1, 0, 1/2) has CE w(1/2)^{1/α},
    # with w(1/2) = 1/2 at γ = 1, δ = 1 for every weight (Prelec: exp(−log 2))
    X = np.array([[0.0, 0.0, 0.5], [1.0, 0.0, 0.5]])
    y = np.array([0.1, 0.4])
    S = K.grid_ssr(X, y, np.array([1.0, 0.5]), np.array([1.0]), np.array([0.0]), 0.0, kind)
    np.testing.assert_allclose(S[:, 0, 0], [0.1**2 + 0.1**2, 0.1**2 + 0.15**2], rtol=1e-14)
    np.testing.assert_allclose(S, K.grid_ssr_numpy(X, y, np.array([1.0, 0.5]), np.array([1.0]),
                                                   np.array([0.0]), 0.0, kind), rtol=1e-14)


def test_seven_labels():
    assert [CPT(free=c).label for c in CLASSES] == [
        "CPT(alpha,gamma,delta)", "CPT(gamma,delta)", "CPT(alpha,delta)", "CPT(delta)",
        "CPT(alpha,gamma)", "CPT(gamma)", "CPT(alpha)"]
    assert CPT(free=("delta", "alpha")).label == "CPT(alpha,delta)"   # canonical order
    assert ExpectedUtility().label == "EU"
    assert DisappointmentAversion(free=("eta",)).label == "DA(eta)"


@pytest.mark.parametrize("truth", [
    {"alpha": 0.7, "gamma": 0.6, "delta": 0.8},      # interior
    {"alpha": 1.0, "gamma": 0.6, "delta": 0.8},      # α on its upper bound
    {"alpha": 0.5, "gamma": 0.7, "delta": 30.0},     # δ on its upper bound
    {"alpha": 0.6, "gamma": 0.01, "delta": 1.5},     # γ on its lower bound
    {"alpha": 0.3, "gamma": 1.0, "delta": 0.01},     # γ upper, δ lower
])
def test_full_model_recovers_parameters_from_noise_free_data(truth):
    X = lotteries(np.random.default_rng(3), 100)
    fit = CPT().fit_arrays(X, cpt(X, **truth))
    assert fit.ssr < 1e-20
    for q, v in truth.items():
        assert fit.params[q] == pytest.approx(v, rel=1e-6, abs=1e-7)


@pytest.mark.parametrize("free", CLASSES)
def test_each_submodel_nests_in_the_full_model(free):
    rng = np.random.default_rng(abs(hash(free)) % 2**32)
    X = lotteries(rng, 80)
    truth = {"alpha": rng.uniform(0.2, 1), "gamma": rng.uniform(0.2, 1),
             "delta": np.exp(rng.uniform(-2, 2))}
    truth = {q: (v if q in free else 1.0) for q, v in truth.items()}
    y = cpt(X, **truth)
    sub = CPT(free=free).fit_arrays(X, y)
    full = CPT().fit_arrays(X, y)
    assert sub.ssr < 1e-20 and full.ssr < 1e-20
    for q in free:
        assert sub.params[q] == pytest.approx(truth[q], rel=1e-6)
        assert full.params[q] == pytest.approx(truth[q], rel=1e-6)
    for q in ("alpha", "gamma", "delta"):
        assert full.params[q] == pytest.approx(truth[q], rel=1e-6)
    # and the full model is never worse than the submodel on any labels
    z = monotone_truth(rng, X)
    assert CPT().fit_arrays(X, z).ssr <= CPT(free=free).fit_arrays(X, z).ssr * (1 + 1e-12)


def test_estimates_land_exactly_on_bounds():
    X = lotteries(np.random.default_rng(4), 100)
    # risk-seeking labels (α > 1 would fit) pin α at exactly 1
    fit = CPT(free=("alpha",)).fit_arrays(X, cpt(X, alpha=1.0) + 0.02 * X[:, 0] * (1 - X[:, 2]))
    assert fit.params["alpha"] == 1.0 and fit.info["at_bound"] == ["alpha"]
    # expected values: α = 1 exactly, a perfect fit
    fit = CPT(free=("alpha",)).fit_arrays(X, X[:, 2] * X[:, 0] + (1 - X[:, 2]) * X[:, 1])
    assert fit.params["alpha"] == 1.0 and fit.ssr < 1e-25
    # optimism beyond δ = 30 pins δ at exactly 30
    fit = CPT(free=("alpha", "delta")).fit_arrays(X, cpt(X, alpha=0.8, delta=80.0))
    assert fit.params["delta"] == 30.0 and "delta" in fit.info["at_bound"]
    # γ below its bound pins γ at exactly 0.01
    fit = CPT(free=("gamma", "delta")).fit_arrays(X, cpt(X, gamma=0.001, delta=2.0))
    assert fit.params["gamma"] == 0.01


def test_an_exact_fit_at_the_lower_bounds_with_z_lo_zero():
    # every parameter at its lower bound and z_lo = 0: CEs of about 1e-200, fitted exactly
    # (ssr = 0), which divided by zero in the solver's convergence test (ZeroDivisionError)
    X = lotteries(np.random.default_rng(5), 60)
    X[:, 1] = 0.0
    y = cpt(X, 0.01, 0.01, 0.01)
    assert 0.0 < y.max() < 1e-150
    fit = CPT().fit_arrays(X, y)
    assert fit.params == {"alpha": 0.01, "gamma": 0.01, "delta": 0.01} and fit.ssr == 0.0
    fit = CPT(free=("alpha", "delta")).fit_arrays(X, np.zeros(len(X)))  # all CEs zero
    assert fit.params == {"alpha": 0.01, "delta": 0.01}


def test_zero_certainty_equivalents_at_a_zero_low_prize_fit_without_error():
    # CE 0 for lotteries with z_lo = 0 and p up to 0.95: the fit runs to an exact fit through
    # ever smaller steps, whose curvature dxᵀy squared underflowed to 0 in the secant update
    # (ZeroDivisionError from numba in CPT, CPT(alpha,gamma) and Prelec RDU fits)
    X = np.array([[0.5, 0.0, 0.95], [0.77, 0.0, 0.05], [0.32, 0.0, 0.6]])
    for model in (CPT(), CPT(free=("alpha", "gamma")), RDU(weighting=PrelecWeighting())):
        fit = model.fit_arrays(X, np.zeros(3))
        # the lowest CEs the bounds allow: 0.5^100 z_hi ≈ 1e-30 with δ = 1, exactly 0 in ssr
        # when δ is free too
        assert 0.0 <= fit.ssr < 1e-59 and (np.abs(fit.predict(X)) < 1e-29).all()
    assert CPT().fit_arrays(X, np.zeros(3)).params == {"alpha": 0.01, "gamma": 0.01,
                                                      "delta": 0.01}


def test_disappointment_aversion_is_cpt_reparameterised():
    rng = np.random.default_rng(5)
    X = lotteries(rng, 100)
    for _ in range(3):
        y = monotone_truth(rng, X)
        for da_free, cpt_free in [(("alpha", "eta"), ("alpha", "delta")), (("eta",), ("delta",))]:
            da = DisappointmentAversion(free=da_free).fit_arrays(X, y)
            cp = CPT(free=cpt_free).fit_arrays(X, y)
            assert da.ssr == pytest.approx(cp.ssr, rel=1e-10)
            np.testing.assert_allclose(da.predict(X), cp.predict(X), rtol=1e-8, atol=1e-12)
            assert da.params["eta"] == pytest.approx(1 / cp.params["delta"] - 1, rel=1e-6,
                                                     abs=1e-9)
            assert -29 / 30 - 1e-12 <= da.params["eta"] <= 99 + 1e-9


def test_expected_utility_is_cpt_alpha():
    rng = np.random.default_rng(6)
    X = lotteries(rng, 60)
    y = monotone_truth(rng, X)
    eu, ca = ExpectedUtility().fit_arrays(X, y), CPT(free=("alpha",)).fit_arrays(X, y)
    assert eu.params["alpha"] == pytest.approx(ca.params["alpha"], rel=1e-8)
    assert eu.ssr == pytest.approx(ca.ssr, rel=1e-10)


def _scipy_best(model, X, y, rng, starts):
    """Smallest SSR of scipy's bounded least_squares (trf) from random starts."""
    lo, hi, free, _ = model._kernel_setup()
    idx = np.flatnonzero(free)
    base = np.array([1.0, 1.0, 0.0])

    def theta(v):
        t = base.copy()
        t[idx] = v
        return t

    best = np.inf
    for _ in range(starts):
        r = scipy.optimize.least_squares(
            lambda v: K.rdu_values(theta(v), X, 0.0, K.WEIGHT_ODDS)[0] - y,
            rng.uniform(lo[idx], hi[idx]),
            jac=lambda v: K.rdu_values(theta(v), X, 0.0, K.WEIGHT_ODDS)[1][:, idx],
            bounds=(lo[idx], hi[idx]), method="trf", xtol=1e-14, ftol=1e-14, gtol=1e-14)
        best = min(best, 2 * r.cost)
    return best


def _assert_global_optima(free, seed, samples, starts):
    """Our fit is never worse than scipy's best from ``starts`` random starts."""
    rng = np.random.default_rng(seed)
    model = CPT(free=free)
    for _ in range(samples):
        X = lotteries(rng, 100)
        y = monotone_truth(rng, X)
        assert model.fit_arrays(X, y).ssr <= _scipy_best(model, X, y, rng, starts) * (1 + 1e-8)


@pytest.mark.parametrize("free", [("alpha", "gamma", "delta"), ("alpha", "delta")])
def test_fit_is_global_optimum_against_scipy_multistart(free):
    _assert_global_optima(free, seed=7, samples=20, starts=12)


def test_optimum_at_the_end_of_a_curved_valley_is_found():
    # found by the slow brute-force check: the CPT(α,δ) optimum (α = 1, δ ≈ 19.6) ends a curved
    # valley whose only grid-local minimum is a worse local optimum on δ = 30 (α ≈ 0.54)
    rng = np.random.default_rng(8)
    lotteries(rng, 100)
    monotone_truth(rng, np.zeros((100, 3)))
    rng.uniform(size=60)
    X = lotteries(rng, 100)
    y = monotone_truth(rng, X)
    model = CPT(free=("alpha", "delta"))
    lo, hi, free, _ = model._kernel_setup()
    local = K.refine(np.array([0.5, 1.0, np.log(30.0)]), lo, hi, free, X, y, 0.0,
                     K.WEIGHT_ODDS, 200, 1e-10)
    best = K.refine(np.array([1.0, 1.0, np.log(20.0)]), lo, hi, free, X, y, 0.0,
                    K.WEIGHT_ODDS, 200, 1e-10)
    assert local[1] > best[1] * (1 + 1e-3)           # two genuine optima
    fit = model.fit_arrays(X, y)
    assert fit.ssr == pytest.approx(best[1], rel=1e-12) and fit.params["alpha"] == 1.0


@pytest.mark.slow
@pytest.mark.parametrize("free", CLASSES)
def test_fit_is_global_optimum_against_scipy_multistart_all_classes(free):
    _assert_global_optima(free, seed=8, samples=100, starts=30)


def test_procedure_protocol():
    rng = np.random.default_rng(9)
    X = lotteries(rng, 50)
    y = monotone_truth(rng, X)
    perm = [2, 0, 1]
    s = Sample(X[:, perm], y, tuple(COLUMNS[i] for i in perm), "ce")
    model = pickle.loads(pickle.dumps(CPT(free=("alpha", "delta"))))
    rule = model.fit(s, rng)
    direct = CPT(free=("alpha", "delta")).fit_arrays(X, y)
    np.testing.assert_allclose(rule.predict(s.X), direct.predict(X), rtol=1e-12)
    info = json.loads(json.dumps(rule.info))
    assert set(info["params"]) == {"alpha", "delta"} and info["ssr"] == pytest.approx(rule.ssr)
    # a formula maps other names onto (z_hi, z_lo, p), in order
    s2 = Sample(X, y, ("hi", "lo", "prob"), "ce")
    rule2 = CPT(free=("alpha", "delta"), formula="ce ~ hi + lo + prob").fit(s2, rng)
    assert rule2.params == pytest.approx(direct.params)
    with pytest.raises(FormulaError, match="z_hi"):
        CPT().fit(s2, rng)


def test_prelec_rdu_recovers_parameters():
    X = lotteries(np.random.default_rng(10), 100)
    y = K.rdu_values(np.array([0.8, 0.5, np.log(1.3)]), X, 0.0, K.WEIGHT_PRELEC)[0]
    fit = RDU(weighting=PrelecWeighting()).fit_arrays(X, y)
    assert fit.params == pytest.approx({"alpha": 0.8, "gamma": 0.5, "delta": 1.3}, rel=1e-6)
    assert RDU(weighting=LinearWeighting()).param_names == ("alpha",)


def test_delta_on_its_lower_bound_is_the_bound_exactly():
    """Pessimism beyond δ = 0.01 pins log δ at log 0.01, and δ is reported as 0.01 exactly
    (``exp(log 0.01)`` is 0.010000000000000002) and flagged as on its bound."""
    X = lotteries(np.random.default_rng(4), 100)
    fit = CPT(free=("alpha", "delta")).fit_arrays(X, cpt(X, alpha=0.8, delta=1e-3))
    assert fit.params["delta"] == 0.01 and "delta" in fit.info["at_bound"]


def test_bounds_and_grids_are_checked_at_both_ends():
    for q in ("alpha", "delta"):
        with pytest.raises(ConfigurationError, match=f"bounds for '{q}' must be positive"):
            RDU(bounds={q: (0.0, 1.0)})
    RDU(bounds={"gamma": (0.0, 1.0)})          # γ = 0 is a valid bound
    # a negative γ bound was accepted and fitted: w(p) decreasing in p, no weighting function
    for weighting in (None, PrelecWeighting()):
        with pytest.raises(ConfigurationError, match=r"bounds for 'gamma' must be nonnegative "
                                                     r"\(γ < 0 makes the probability"):
            RDU(weighting=weighting, bounds={"gamma": (-0.5, 1.0)})
    with pytest.raises(ConfigurationError, match="bounds for 'gamma' must be nonnegative"):
        RDU(bounds={"gamma": (-1e-12, 1.0)})
    with pytest.raises(ConfigurationError, match="grid for 'alpha' must be nonempty values "
                                                 "within its"):
        CPT(grid={"alpha": [0.5, 1.5]})
    CPT(grid={"alpha": [0.01, 1.0]})           # the bounds themselves are in range


def test_a_weighting_code_or_parameter_the_kernel_lacks_is_refused():
    from restrictiveness.lottery.models import OddsWeighting, PowerUtility

    class Coded(OddsWeighting):  # code 3 was computed as Prelec's weighting, without a word
        kind = 3

    class Extra(OddsWeighting):  # "beta" in free was dropped: the model fitted (alpha,)
        parameters = ("gamma", "delta", "beta")

    class Curved(PowerUtility):
        parameters = ("alpha", "beta")

    for part, code in ((Coded(), "3"), (Extra(), "1")):
        with pytest.raises(ConfigurationError, match=rf"{type(part).__name__} changes its base "
                                                     rf"class's formula code or parameters \(to "
                                                     rf"{code}, "):
            RDU(weighting=part, free=("alpha", "gamma"))
    with pytest.raises(ConfigurationError, match=r"Curved changes .* \(to None, \('alpha', 'beta'"):
        RDU(utility=Curved())

    class Renamed(PrelecWeighting):  # a subclass that keeps the formula is the formula
        name = "mine"

    X, y = np.array([[1.0, 0.0, 0.5], [0.6, 0.2, 0.3], [0.9, 0.1, 0.8]]), np.array([0.4, 0.3, 0.6])
    mine = RDU(weighting=Renamed(), free=("gamma",)).fit_arrays(X, y)
    assert mine.params == RDU(weighting=PrelecWeighting(), free=("gamma",)).fit_arrays(X, y).params


def test_bounds_and_grids_the_fit_would_ignore_or_misread_are_refused():
    X = np.array([[1.0, 0.0, 0.5], [0.6, 0.2, 0.3], [0.9, 0.1, 0.8], [0.5, 0.0, 0.1]])
    y = np.array([0.4, 0.3, 0.6, 0.1])
    # a NaN grid value passed the range check and the fit returned arbitrary estimates with
    # ssr = inf
    with pytest.raises(ConfigurationError, match=r"grid for 'alpha' must be finite numbers"):
        CPT(grid={"alpha": [np.nan, 0.5]})
    # a grid or bounds for a parameter the model fixes at 1 were dropped without a word
    for make in (lambda: CPT(free=("alpha",), grid={"gamma": [0.5]}),
                 lambda: RDU(free=("alpha",), bounds={"gamma": (0.5, 1.0)}),
                 lambda: ExpectedUtility(bounds={"delta": (0.5, 2.0)}),
                 lambda: RDU(weighting=LinearWeighting(), bounds={"delta": (0.5, 2.0)})):
        with pytest.raises(ConfigurationError, match="which this model fixes at 1"):
            make()
    # an η grid beyond δ's bounds (η = 200 is δ < 0.01) was reported as a grid for 'delta'
    with pytest.raises(ConfigurationError, match="grid for 'eta' must be nonempty values "
                                                 "within its bounds"):
        DisappointmentAversion(grid={"eta": [0.0, 200.0]})
    with pytest.raises(ConfigurationError, match=r"grid for 'alpha', which this model fixes "
                                                 r"at 1 \(its free parameters: \['eta'\]\)"):
        DisappointmentAversion(free=("eta",), grid={"alpha": [0.5]})
    # a bound that is not a pair of numbers: (True, 2) was read as (1, 2), the rest TypeErrors
    for pair in ((True, 2.0), ("0.1", "1"), 0.5, (0.1, 0.5, 1.0)):
        with pytest.raises(ConfigurationError, match=r"bounds for 'alpha' must be a pair"):
            RDU(bounds={"alpha": pair})
    # what stays accepted: any pair of numbers, and the fit honours it
    fit = RDU(bounds={"alpha": np.array([0.1, 0.5])}).fit_arrays(X, y)
    assert 0.1 <= fit.params["alpha"] <= 0.5
    assert ExpectedUtility(bounds={"alpha": (0.1, 2.0)}).bounds["alpha"] == (0.1, 2.0)


def test_invalid_arguments_raise_named_errors():
    with pytest.raises(ConfigurationError, match="free"):
        CPT(free=("alpha", "beta"))
    with pytest.raises(ConfigurationError, match="free"):
        CPT(free=())
    with pytest.raises(ConfigurationError, match="free"):
        CPT(free="alpha")
    with pytest.raises(ConfigurationError, match="free"):
        DisappointmentAversion(free=("delta",))
    # a repeated name was dropped, a fractional n_starts truncated, a number a bare TypeError
    for model, free in ((CPT, ("alpha", "alpha")), (DisappointmentAversion, ("eta", "eta")),
                        (RDU, ["gamma", "delta", "gamma"])):
        with pytest.raises(ConfigurationError, match=r"free names \['(alpha|eta|gamma)'\] more"):
            model(free=free)
    for free in (3, None):
        with pytest.raises(ConfigurationError, match="free must be a sequence"):
            CPT(free=free)
    with pytest.raises(ConfigurationError, match="n_starts must be a whole number >= 1, got 2.5"):
        CPT(n_starts=2.5)
    assert CPT(n_starts=3.0).n_starts == 3 and RDU(free=None).free == ("alpha", "gamma", "delta")
    with pytest.raises(ConfigurationError, match="eta"):
        DisappointmentAversion(grid={"eta": [-1.0, 0.0]})
    with pytest.raises(ConfigurationError, match="bounds"):
        RDU(bounds={"alpha": (1.0, 0.5)})
    with pytest.raises(ConfigurationError, match="grid"):
        CPT(grid={"alpha": [0.0, 0.5]})
    for shift in (-1.0, "0.1", True):  # "0.1" was numpy's TypeError, True a shift of 1
        with pytest.raises(ConfigurationError, match=f"shift must be a positive number, got "
                                                     f"{shift!r}"):
            ShiftedPowerUtility(shift)
    X = np.array([[1.0, 0.0, 0.5], [0.5, 0.1, 0.2]])
    with pytest.raises(DataError, match="NaN"):
        CPT().fit_arrays(X, np.array([0.3, np.nan]))
    with pytest.raises(DataError, match="probabilities"):
        CPT().fit_arrays(np.array([[1.0, 0.0, 1.5]]), np.array([0.3]))
    with pytest.raises(DataError, match="below 0"):
        CPT().fit_arrays(np.array([[1.0, -0.1, 0.5]]), np.array([0.3]))


# ---------------------------------------------------------------------------------------------
# estimator on data: formula, standard errors, summary
# ---------------------------------------------------------------------------------------------

def _data(seed=11, n=300, clusters=30):
    rng = np.random.default_rng(seed)
    X = lotteries(rng, n)
    ce = cpt(X, 0.7, 0.6, 0.8) + 0.03 * rng.standard_normal(len(X))
    return pd.DataFrame({"ce": ce, "z_hi": X[:, 0], "z_lo": X[:, 1], "p": X[:, 2],
                         "id": rng.integers(0, clusters, len(X))})


def test_formula_fit_matches_direct_call():
    df = _data()
    res = CPT.from_formula("ce ~ z_hi + z_lo + p", df, free=("alpha", "gamma")).fit()
    direct = CPT(free=("alpha", "gamma")).fit_arrays(df[["z_hi", "z_lo", "p"]].to_numpy(),
                                                    df["ce"].to_numpy())
    assert res.params.to_dict() == pytest.approx(direct.params, rel=1e-12)
    assert res.ssr == pytest.approx(direct.ssr, rel=1e-12) and res.nobs == len(df)
    # columns are taken by role from the formula, not by position in the frame
    renamed = df.rename(columns={"z_hi": "hi", "z_lo": "lo", "p": "prob"})[
        ["prob", "ce", "lo", "hi"]]
    res2 = CPT.from_formula("ce ~ hi + lo + prob", renamed, free=("alpha", "gamma")).fit()
    assert res2.params.to_numpy() == pytest.approx(res.params.to_numpy(), rel=1e-12)
    with pytest.raises(FormulaError, match="missing_col"):
        CPT.from_formula("ce ~ z_hi + missing_col + p", df)
    with pytest.raises(FormulaError, match="three"):
        CPT.from_formula("ce ~ z_hi + p", df)


def test_standard_errors_match_statsmodels_on_the_linearised_problem():
    df = _data()
    model = CPT(free=("alpha", "gamma"))   # reported scale = internal scale
    X = df[["z_hi", "z_lo", "p"]].to_numpy()
    fit = model.fit_arrays(X, df["ce"].to_numpy())
    assert fit.info["at_bound"] == []
    f, J = K.rdu_values(fit.theta, np.ascontiguousarray(X), 0.0, K.WEIGHT_ODDS)
    e = df["ce"].to_numpy() - f
    lin = sm.OLS(e, J[:, :2])       # at an interior optimum the OLS fit of e on J is ~0
    nls = LotteryNLS.from_formula("ce ~ z_hi + z_lo + p", df, model)
    np.testing.assert_allclose(nls.fit().bse, lin.fit().bse, rtol=1e-6)
    # singleton clusters: HC1 (G/(G−1)·(N−1)/(N−k) = N/(N−k))
    np.testing.assert_allclose(nls.fit("cluster", groups=np.arange(len(df))).bse,
                               lin.fit(cov_type="HC1").bse, rtol=1e-6)
    # real clusters, with the same small-sample factor as statsmodels
    res = nls.fit("cluster", groups="id")
    np.testing.assert_allclose(res.bse, lin.fit(cov_type="cluster",
                                                cov_kwds={"groups": df["id"].to_numpy()}).bse,
                               rtol=1e-6)
    assert res.n_clusters == df["id"].nunique() and res.df_inference == res.n_clusters - 1


def test_delta_method_for_delta_and_eta():
    df = _data(seed=12)
    X = np.ascontiguousarray(df[["z_hi", "z_lo", "p"]].to_numpy())
    res = CPT.from_formula("ce ~ z_hi + z_lo + p", df).fit()
    d = res.params["delta"]
    _, J = K.rdu_values(res.fitted.theta, X, 0.0, K.WEIGHT_ODDS)
    Jn = J * np.array([1.0, 1.0, 1.0 / d])          # ∂f/∂δ = ∂f/∂log δ / δ
    V = res.ssr / (len(df) - 3) * np.linalg.inv(Jn.T @ Jn)
    np.testing.assert_allclose(res.bse, np.sqrt(np.diag(V)), rtol=1e-8)
    da = DisappointmentAversion.from_formula("ce ~ z_hi + z_lo + p", df).fit()
    cp = CPT.from_formula("ce ~ z_hi + z_lo + p", df, free=("alpha", "delta")).fit()
    # η = 1/δ − 1: se(η) = se(δ)/δ²
    assert da.bse["eta"] == pytest.approx(cp.bse["delta"] / cp.params["delta"] ** 2, rel=1e-6)
    assert da.bse["alpha"] == pytest.approx(cp.bse["alpha"], rel=1e-6)
    ci = res.conf_int(0.1)
    assert (ci["lower"] < res.params).all() and (res.params < ci["upper"]).all()
    np.testing.assert_allclose(res.tvalues, res.params / res.bse)


def test_summary_exports():
    df = _data(seed=13)
    res = CPT.from_formula("ce ~ z_hi + z_lo + p", df, free=("alpha", "delta")).fit(
        cov_type="cluster", groups="id")
    smry = res.summary()
    text = smry.as_text()
    for token in ("CPT(alpha,delta)", "alpha", "delta", "Clustered", "No. Clusters", "gamma"):
        assert token in text
    assert "\\begin{tabular}" in smry.as_latex() and "<table" in smry.as_html()
    with pytest.raises(ConfigurationError, match="groups"):
        CPT.from_formula("ce ~ z_hi + z_lo + p", df).fit(cov_type="cluster")
    with pytest.raises(ConfigurationError, match="cov_type"):
        CPT.from_formula("ce ~ z_hi + z_lo + p", df).fit(cov_type="robust")


def test_estimation_refuses_no_more_observations_than_parameters():
    """Three lotteries for CPT's three parameters gave NaN for every standard error and
    "Df Residuals: 0" with no word of why; NLS refuses that, and so does the lottery estimator."""
    df = pd.DataFrame({"ce": [0.3, 0.5, 0.2, 0.6], "z_hi": [1.0, 0.8, 0.5, 0.9],
                       "z_lo": [0.0, 0.1, 0.1, 0.2], "p": [0.5, 0.6, 0.3, 0.7]})
    for data, free in ((df.iloc[:3], ("alpha", "gamma", "delta")), (df.iloc[:1], ("alpha",))):
        with pytest.raises(DataError, match=rf"more observations \({len(data)}\) than "
                                            rf"parameters \({len(free)}\)"):
            CPT.from_formula("ce ~ z_hi + z_lo + p", data, free=free).fit()
        with pytest.raises(DataError, match="more observations"):
            CPT(free=free).fit(data, cov_type="HC1")
    # one more observation than parameters: s² = SSR / 1 and se = sqrt(s² / ΣJ²), by hand
    res = CPT.from_formula("ce ~ z_hi + z_lo + p", df.iloc[:2], free=("alpha",)).fit()
    a, X = res.params["alpha"], df[["z_hi", "z_lo", "p"]].to_numpy()[:2]
    U = X[:, 2] * X[:, 0] ** a + (1 - X[:, 2]) * X[:, 1] ** a
    ce = U ** (1 / a)
    with np.errstate(divide="ignore", invalid="ignore"):
        dU = X[:, 2] * np.log(X[:, 0]) * X[:, 0] ** a + (1 - X[:, 2]) * np.where(
            X[:, 1] > 0, np.log(X[:, 1]) * X[:, 1] ** a, 0.0)
    J = ce * (dU / (a * U) - np.log(U) / a ** 2)     # d/dα of exp(log U / α)
    ssr = float(((df["ce"].to_numpy()[:2] - ce) ** 2).sum())
    assert res.df_resid == 1
    assert res.bse["alpha"] == pytest.approx(np.sqrt(ssr / (J @ J)), rel=1e-6)


def test_estimation_results_predict_where_the_shifted_utility_was_estimated():
    """A shifted power utility admits prizes down to -shift; the results' predict refused the
    very lotteries the estimate was fitted on ("prizes must be nonnegative")."""
    s = 0.05
    df = pd.DataFrame({"ce": [0.3, 0.5, 0.0, 0.6, 0.2], "z_hi": [1.0, 0.8, 0.1, 0.9, 0.5],
                       "z_lo": [0.0, 0.1, -0.02, 0.2, -0.01], "p": [0.5, 0.6, 0.5, 0.5, 0.4]})
    res = RDU(utility=ShiftedPowerUtility(s), free=("alpha",)).fit(df)
    a = res.params["alpha"]
    zh, zl, p = df["z_hi"].to_numpy(), df["z_lo"].to_numpy(), df["p"].to_numpy()
    hand = (p * (zh + s) ** a + (1 - p) * (zl + s) ** a) ** (1 / a) - s
    np.testing.assert_allclose(res.predict(), hand, rtol=1e-12)
    np.testing.assert_allclose(res.predict(df), hand, rtol=1e-12)
    np.testing.assert_allclose(res.predict(df[["z_hi", "z_lo", "p"]].to_numpy()), hand,
                               rtol=1e-12)
    with pytest.raises(DataError, match=r"below -0.05 in 1 row"):   # below -shift: refused
        res.predict([[0.5, -0.06, 0.5]])


def test_a_study_names_the_baseline_it_was_given():
    """A baseline passed to the applications' studies was named by the default's name: a CPT
    baseline was summarised as "Baseline: EV = CPT(...)", and the demand study's as logit."""
    import restrictiveness as rx

    gp = {"GP regression": rx.lottery.gp_regression()}
    assert rx.lottery.study(gp).baseline_label == "EV"
    st = rx.lottery.study(gp, n=[10], replications=2, n_eval=20,
                          baseline=CPT(free=("alpha",)))
    assert st.baseline_label == "CPT(alpha)"
    res = st.run(progress=False)
    assert "Baseline: CPT(alpha) = CPT(" in res.summary().as_text()
    assert res.dataset.attrs["baseline"] == "CPT(alpha)"
    assert json.loads(res.dataset.attrs["configuration"])["baseline"] == {
        "CPT(alpha)": repr(CPT(free=("alpha",)))}
    # the label taken by a procedure (Table 1 has CPT(alpha)): "baseline", as completeness says
    assert rx.lottery.study(baseline=CPT(free=("alpha",))).baseline_label == "baseline"
    assert rx.demand.study(n=(50,), replications=2).baseline_label == "logit"
    mnl = rx.demand.study({"NL": rx.demand.NestedLogit(nest="mushy")}, n=(50,),
                          replications=2, baseline=rx.demand.MNL())
    assert mnl.baseline_label == "MNL"
    assert rx.demand.study(n=(50,), replications=2,
                           baseline=rx.demand.MNL()).baseline_label == "baseline"


def test_lottery_helpers_refuse_inputs_they_cannot_use():
    import restrictiveness as rx

    # a list of procedures was a bare TypeError from dict()
    with pytest.raises(ConfigurationError, match=r"procedures must be a mapping \{label: "
                                                 r"procedure\}.*got list"):
        rx.lottery.study(procedures=[rx.lottery.CPT()])
    with pytest.raises(ConfigurationError, match="procedures must be a mapping"):
        rx.lottery.completeness(pd.DataFrame(), [rx.lottery.CPT()])
    # None for the data or the path was a TypeError from pathlib
    with pytest.raises(DataError, match="or the path of ch03_data.csv; got NoneType"):
        rx.lottery.completeness(None)
    with pytest.raises(DataError, match="got None"):
        rx.datasets.load_bruhin(None)
    # swapped prizes were fitted silently, rank-dependent weights on the wrong prize
    df = pd.DataFrame({"z_hi": [1.0, 0.8, 0.6, 0.9], "z_lo": [0.0, 0.9, 0.2, 0.0],
                       "p": [0.5, 0.3, 0.7, 0.2], "ce": [0.5, 0.8, 0.4, 0.2]})
    with pytest.raises(DataError, match=r"the low prize 'z_lo' above the high prize 'z_hi' .* in "
                                        r"1 row\(s\) \(index \[1\]\)"):
        rx.lottery.CPT().fit(df)
    # an IndexError, an AttributeError and bool("no") before
    rule = rx.lottery.CPT().fit(Sample(df[["z_hi", "z_lo", "p"]].iloc[[0, 2, 3]].to_numpy(),
                                       df["ce"].iloc[[0, 2, 3]].to_numpy(), ("z_hi", "z_lo", "p")))
    with pytest.raises(DataError, match=r"have 2 columns for the 3 names"):
        rule.predict(np.ones((2, 2)))
    with pytest.raises(ConfigurationError, match="utility must be rx.lottery.PowerUtility"):
        rx.lottery.RDU(utility="power")
    with pytest.raises(DataError, match="gains_only must be True or False, got 'no'"):
        rx.datasets.load_bruhin("ch03_data.csv", gains_only="no")


def test_lottery_frames_are_read_by_their_own_columns_only():
    df = pd.DataFrame({"z_hi": [1.0, 0.6, 0.9, 0.5], "z_lo": [0.0, 0.2, 0.1, 0.0],
                       "p": [0.5, 0.3, 0.8, 0.1], "ce": [0.4, 0.3, 0.6, 0.1]})
    ev = df["p"] * df["z_hi"] + (1 - df["p"]) * df["z_lo"]
    named = df.assign(name=["ann", "bob", "cy", "di"])
    # another column of text made the whole frame's float conversion fail (a bare ValueError)
    np.testing.assert_array_equal(ExpectedValue().fit(named).predict(named), ev)
    rule = CPT(free=("alpha",)).fit(Sample(df[list(COLUMNS)].to_numpy(), df["ce"].to_numpy(),
                                           COLUMNS))
    np.testing.assert_array_equal(rule.predict(named[["name", "p", "z_lo", "z_hi"]]),
                                  rule.predict(df[list(COLUMNS)].to_numpy()))
    res = CPT(free=("alpha",)).fit(df)
    np.testing.assert_array_equal(res.predict(named), res.fittedvalues)
    # a column named twice: the first was read, silently
    twice = pd.concat([df, df[["p"]] * 0.5], axis=1)
    with pytest.raises(DataError, match=r"column\(s\) \['p'\] more than once"):
        rule.predict(twice)
    # text, complex or missing lottery columns: numbers read from strings, the imaginary part
    # dropped, or a KeyError from the estimation results
    for bad, dtype in ((df.assign(p=df["p"].astype(str)), "str|object"),
                       (df.assign(z_hi=df["z_hi"].astype(complex)), "complex128")):
        with pytest.raises(DataError, match=f"column '(p|z_hi)' is not numeric \\(dtype "
                                            f"({dtype})\\)"):
            ExpectedValue().fit(bad)
        with pytest.raises(DataError, match="is not numeric"):
            res.predict(bad)
    with pytest.raises(FormulaError, match=r"need column\(s\) \['p'\]"):
        res.predict(df.drop(columns="p"))


def test_estimation_and_completeness_refuse_lottery_columns_that_are_not_numbers():
    import restrictiveness as rx

    df = pd.DataFrame({"participant": [1, 1, 2, 2, 3], "lottery": [1, 2, 3, 4, 5],
                       "z_hi": [1.0, 0.6, 0.9, 0.5, 0.7], "z_lo": [0.0, 0.2, 0.1, 0.0, 0.3],
                       "p": [0.5, 0.3, 0.8, 0.1, 0.6], "ce": [0.4, 0.3, 0.6, 0.1, 0.45]})
    # text was parsed as numbers, a categorical read as its categories' values and a complex
    # column cut to its real part (NLS estimation refuses all three; these read them)
    for bad, dtype in ((df.assign(p=df["p"].astype(str)), "str|object"),
                       (df.assign(p=pd.Categorical(df["p"].astype(str))), "category"),
                       (df.assign(ce=df["ce"] + 1e-3j), "complex128")):
        with pytest.raises(DataError, match=f"column '(p|ce)' is not numeric \\(dtype "
                                            f"({dtype})\\)"):
            CPT.from_formula("ce ~ z_hi + z_lo + p", bad, free=("alpha",))
        with pytest.raises(DataError, match="TableSample: column '(p|ce)' is not numeric"):
            rx.lottery.completeness(bad, {"EU": ExpectedUtility()}, folds=2)
    # a column given twice was an AttributeError, and its first copy was read in completeness
    twice = pd.concat([df, df[["p"]] * 0.5], axis=1)
    with pytest.raises(DataError, match=r"column\(s\) \['p'\] more than once"):
        CPT.from_formula("ce ~ z_hi + z_lo + p", twice, free=("alpha",))
    with pytest.raises(DataError, match=r"column\(s\) \['p'\] more than once"):
        rx.lottery.completeness(twice, {"EU": ExpectedUtility()}, folds=2)
    # numbers (and booleans) stay accepted and give the same estimate whatever their dtype
    as_float = CPT.from_formula("ce ~ z_hi + z_lo + p", df, free=("alpha",)).fit().params
    as_f32 = CPT.from_formula("ce ~ z_hi + z_lo + p", df.astype({"p": np.float32}),
                              free=("alpha",)).fit().params
    assert as_f32["alpha"] == pytest.approx(as_float["alpha"], rel=1e-6)


def test_a_study_refuses_lottery_columns_it_lacks_before_any_fit():
    # a misspelt column used to fail every fit silently into the baseline (r̂ = 1, a warning)
    import restrictiveness as rx

    fits = []

    class Counted(CPT):
        def fit(self, sample, rng=None, **estimation):
            fits.append(1)
            return super().fit(sample, rng, **estimation)

    for model in (Counted(formula="ce ~ z_hi + z_lo + prob"),
                  Counted(formula="y ~ z_hi + z_lo + p"), ExpectedValue("ce ~ z_hi + lo + p")):
        with pytest.raises(FormulaError, match=r"\['(prob|y|lo)'\]"):
            rx.lottery.study(procedures={"m": model}, n=[10], replications=2)
    assert fits == []
    # a model without a formula reads z_hi, z_lo, p: a study with other names is refused too
    prior = rx.MonotoneGP(rx.EligibleSet(rx.Box(hi=(0.5, 1), lo=(0, 0.4), prob=(0.1, 0.9)),
                                         rx.Increasing("hi", "lo", "prob"),
                                         rx.Between("lo", "hi")))
    with pytest.raises(FormulaError, match=r"reads column\(s\) \['z_hi', 'z_lo', 'p'\]"):
        rx.Study(prior, {"m": CPT()}, rx.Constant(), n=[10], replications=2)
    study = rx.Study(prior, {"m": CPT(formula="y ~ hi + lo + prob")}, rx.Constant(), n=[10],
                     replications=2)
    assert study.run(progress=False).failures()["failed"].sum() == 0


def test_a_lottery_formula_with_its_roles_out_of_order_is_refused_up_front():
    """The covariates play (z_hi, z_lo, p) by position. A column named like one role in
    another's position was taken at its position: in a study every fit failed (r̂ = 1, a
    warning, 3 of 3 fits), and on data where the high prize always exceeds the probability
    "ce ~ z_hi + p + z_lo" fitted the probabilities as the low prize, silently."""
    import restrictiveness as rx

    df = pd.DataFrame({"z_hi": [1.0, 0.9, 0.95, 0.8, 1.0], "z_lo": [0.1, 0.3, 0.2, 0.0, 0.4],
                       "p": [0.5, 0.3, 0.8, 0.1, 0.6], "ce": [0.45, 0.4, 0.7, 0.1, 0.7]})
    for formula, misplaced in (("ce ~ z_lo + z_hi + p", "'z_lo' in the position of 'z_hi', "
                                                        "'z_hi' in the position of 'z_lo'"),
                               ("ce ~ z_hi + p + z_lo", "'p' in the position of 'z_lo', "
                                                        "'z_lo' in the position of 'p'")):
        for build in (lambda f: CPT(formula=f), ExpectedValue,
                      lambda f: CPT.from_formula(f, df), lambda f: RDU(formula=f),
                      lambda f: DisappointmentAversion(formula=f)):
            with pytest.raises(FormulaError, match=f"puts {misplaced}: .* by position; .*, "
                                                   "'ce ~ z_hi \\+ z_lo \\+ p'"):
                build(formula)
    # a role's name in another position among other names: no full formula to suggest
    with pytest.raises(FormulaError, match=r"puts 'p' in the position of 'z_lo': .* in that "
                                           r"order$"):
        CPT(formula="ce ~ hi + p + prob")
    # names of other columns keep their positional roles, and the canonical order its meaning
    other = df.rename(columns={"z_hi": "hi", "z_lo": "lo", "p": "prob"})
    ours = CPT.from_formula("ce ~ hi + lo + prob", other, free=("alpha",)).fit().params
    assert ours["alpha"] == CPT.from_formula("ce ~ z_hi + z_lo + p", df,
                                             free=("alpha",)).fit().params["alpha"]
    with pytest.raises(FormulaError, match="by position"):  # before any fit
        rx.lottery.study({"m": CPT(free=("alpha",), formula="ce ~ z_lo + z_hi + p")},
                         n=[20], replications=3, n_eval=100)


def test_expected_value_takes_losses_the_utility_models_refuse():
    """The expected value of a lottery with a negative prize is well defined; it was refused
    ("below 0 (the models are for gains)") as the power utility's z^α must be."""
    X = np.array([[10.0, -20.0, 0.25], [0.0, -5.0, 0.5], [-1.0, -3.0, 0.9]])
    sample = Sample(X, np.array([-12.5, -2.5, -1.2]), ("z_hi", "z_lo", "p"), "ce")
    rule = ExpectedValue().fit(sample)
    np.testing.assert_allclose(rule.predict(X), [2.5 - 15.0, -2.5, -0.9 - 0.3], rtol=1e-15)
    frame = pd.DataFrame(X, columns=["hi", "lo", "prob"], index=list("abc"))
    np.testing.assert_allclose(ExpectedValue("ce ~ hi + lo + prob").fit(frame).predict(frame),
                               [-12.5, -2.5, -1.2], rtol=1e-15)
    for model in (CPT(), ExpectedUtility(), DisappointmentAversion()):
        with pytest.raises(DataError, match=r"below 0 .* in 3 row\(s\)"):
            model.fit(sample)
    shifted = RDU(ShiftedPowerUtility(25.0), free=("alpha",))   # prizes down to -25
    assert shifted.fit(sample).params["alpha"] == pytest.approx(1.0, abs=1e-6)  # the EVs


def test_certainty_equivalents_outside_the_prizes_are_fitted_with_a_warning_naming_them():
    """No model of the package predicts a certainty equivalent outside its lottery's prizes;
    such responses (none in Bruhin et al.'s data; a swapped column or other units elsewhere)
    were fitted without a word. The fit goes on (the subject may have chosen so) and a warning
    names how many and which rows, by the data's labels; a response equal to a prize is in."""
    df = pd.DataFrame({"hi": [1.0, 0.9, 0.95, 0.8, 1.0, 0.7], "lo": [0.1, 0.3, 0.2, 0.0, 0.4, 0.1],
                       "prob": [0.5, 0.3, 0.8, 0.1, 0.6, 0.2],
                       "ce": [1.0, 0.3, 0.7, 0.1, 0.7, 0.2]}, index=range(10, 16))
    f = "ce ~ hi + lo + prob"
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        CPT.from_formula(f, df, free=("alpha",)).fit()   # ce at a prize (rows 10, 11) is in
    bad = df.assign(ce=[1.2, 0.3, 0.7, -0.1, 0.7, 0.2])
    with pytest.warns(UserWarning, match=r"^2 of 6 certainty equivalents lie outside their "
                                         r"lottery's prizes \[z_lo, z_hi\]: 2 row\(s\) "
                                         r"\(index \[10, 13\]\)") as caught:
        res = CPT.from_formula(f, bad, free=("alpha",)).fit()
    assert len(caught) == 1 and np.isfinite(res.params["alpha"])
    X = bad[["hi", "lo", "prob"]].to_numpy()
    for fit in (lambda: CPT(free=("alpha",)).fit_arrays(X, bad["ce"].to_numpy()),
                lambda: CPT(free=("alpha",)).fit(Sample(X, bad["ce"].to_numpy(),
                                                        ("z_hi", "z_lo", "p"), "ce"))):
        with pytest.warns(UserWarning, match=r"2 of 6 .*: 2 row\(s\) \(rows \[0, 3\]\)"):
            fit()


def test_lottery_data_errors_name_the_rows_and_columns():
    """Bad lotteries are refused naming the rows by the data's labels (what df.loc finds) and
    the columns by the formula's names: the messages named no row (probabilities, prizes below
    0) or the first row's position (row 1 of a subset whose labels start at 10), and the roles
    (z_lo, z_hi) rather than the columns the formula names."""
    df = pd.DataFrame({"hi": [1.0, 0.9, 0.95, 0.8, 1.0, 0.7], "lo": [0.1, 0.3, 0.2, 0.0, 0.4, 0.1],
                       "prob": [0.5, 0.3, 0.8, 0.1, 0.6, 0.2],
                       "ce": [0.45, 0.4, 0.7, 0.1, 0.7, 0.2]}, index=range(10, 16))
    f = "ce ~ hi + lo + prob"
    cases = (("prob", [12, 14], 1.5, r"probabilities 'prob' \(p\) outside \[0, 1\] in 2 row\(s\) "
                                     r"\(index \[12, 14\]\)"),
             ("lo", [11], 0.95, r"the low prize 'lo' \(z_lo\) above the high prize 'hi' \(z_hi\) "
                                r".* in 1 row\(s\) \(index \[11\]\)"),
             ("lo", [15], -0.2, r"prizes 'hi' \(z_hi\) or 'lo' \(z_lo\) below 0 .* in 1 row\(s\) "
                                r"\(index \[15\]\)"))
    for column, rows, value, message in cases:
        bad = df.copy()
        bad.loc[rows, column] = value
        with pytest.raises(DataError, match=message):
            CPT.from_formula(f, bad, free=("alpha",))
        if value < 0:  # a loss has an expected value (0.2 * 0.7 + 0.8 * -0.2), not a z^α
            assert ExpectedValue(f).fit(bad).predict(bad)[-1] == pytest.approx(-0.02, abs=1e-15)
            continue
        with pytest.raises(DataError, match=message):
            ExpectedValue(f).fit(bad)
    nan = df.copy()
    nan.loc[[11, 13], ["ce", "lo"]] = np.nan, np.nan
    nan.loc[14, "ce"] = np.nan
    with pytest.raises(DataError, match=r"missing values \(NaN\) in column\(s\) \['ce', 'lo'\] "
                                        r"in 3 row\(s\) \(index \[11, 13, 14\]\)"):
        CPT.from_formula(f, nan, free=("alpha",))
    # an array has no labels: positions, and the roles' names
    X = df[["hi", "lo", "prob"]].to_numpy(copy=True)
    X[[0, 1, 2, 3, 4, 5], 2] = 2.0
    with pytest.raises(DataError, match=r"probabilities 'p' outside \[0, 1\] in 6 row\(s\) "
                                        r"\(rows \[0, 1, 2, 3, 4, \.\.\.\]\)"):
        CPT(free=("alpha",)).fit_arrays(X, df["ce"].to_numpy())
    with pytest.raises(ConfigurationError, match="names must be the response and the three"):
        LotteryNLS(df["ce"], X, CPT(), names=("ce", "hi", "lo"))   # was accepted as it was
    res = CPT.from_formula(f, df, free=("alpha",)).fit()   # and predict on new data
    with pytest.raises(DataError, match=r"'prob' \(p\) outside \[0, 1\] in 1 row\(s\) "
                                        r"\(index \['b'\]\)"):
        res.predict(df.iloc[:2].set_axis(["a", "b"]).assign(prob=[0.5, -0.1]))


def test_the_fitted_rule_of_an_estimate_reads_new_data_by_the_formula_columns():
    """``res.fitted`` ("the fitted rule: predict at new lotteries") read a DataFrame by the
    model's default columns z_hi, z_lo, p: after ``CPT.from_formula("y ~ hi + lo + prob")`` it
    refused the very data it was estimated on, asking for columns they never had."""
    df = pd.DataFrame({"hi": [1.0, 0.6, 0.9, 0.5, 0.8], "lo": [0.0, 0.2, 0.1, 0.0, 0.3],
                       "prob": [0.5, 0.3, 0.8, 0.1, 0.6], "y": [0.45, 0.3, 0.7, 0.12, 0.5]},
                      index=list("abcde"))
    res = CPT.from_formula("y ~ hi + lo + prob", df, free=("alpha",)).fit()
    a = res.params["alpha"]
    hand = (df["prob"] * df["hi"] ** a + (1 - df["prob"]) * df["lo"] ** a) ** (1 / a)
    np.testing.assert_allclose(res.fitted.predict(df), hand, rtol=1e-12)
    np.testing.assert_allclose(res.fitted.predict(df[["prob", "lo", "hi"]]), hand, rtol=1e-12)
    np.testing.assert_allclose(res.fitted.predict(df[["hi", "lo", "prob"]].to_numpy()), hand,
                               rtol=1e-12)
    np.testing.assert_array_equal(res.fitted.predict(df), res.predict(df))


def test_disappointment_aversion_takes_a_grid_on_the_bounds_of_eta():
    """η ∈ [−29/30, 99] is δ ∈ [0.01, 30], but 1 / (1 − 29/30) is 30.000000000000007 in floating
    point, so a grid holding the documented lower bound of η was refused as beyond its bounds
    (which the message did not state)."""
    da = DisappointmentAversion(grid={"eta": [-29 / 30, 0.0, 99.0]})
    assert da.grid["delta"] == (30.0, 1.0, 0.01)
    X = lotteries(np.random.default_rng(3), 40)
    # optimistic (δ = 30 at the bound, η = −29/30) labels: the grid's bound point is a start
    y = CPT(free=("alpha", "delta")).fit_arrays(X, X[:, 0]).params
    fit = da.fit_arrays(X, X[:, 0])
    assert fit.params["eta"] == 1 / y["delta"] - 1 == 1 / 30 - 1
    with pytest.raises(ConfigurationError, match=r"grid for 'eta' must be nonempty values "
                                                 r"within its bounds \[-0.966667, 99\]"):
        DisappointmentAversion(grid={"eta": [0.0, 200.0]})
    with pytest.raises(ConfigurationError, match=r"within its bounds \[0.01, 1\]"):
        CPT(grid={"alpha": [0.0, 0.5]})


def test_parameters_the_data_barely_inform_get_no_small_standard_error():
    """One lottery with 0 < p < 1 among sure ones: α and δ cannot be told apart. Rounding gives
    the Jacobian a second singular value of 3e-13 (of 0.14), which the identification check
    kept and pinv(JᵀJ) dropped, so α and δ got standard errors of 0.12 and 0.26 that the data
    do not carry. statsmodels' OLS of the residuals on the same Jacobian gives 4e10 and 2e10."""
    df = pd.DataFrame({"z_hi": [1.0, 0.6, 0.9, 0.5, 0.8], "z_lo": [0.0, 0.2, 0.1, 0.0, 0.3],
                       "p": [0.0, 1.0, 0.0, 1.0, 0.5], "ce": [0.01, 0.55, 0.1, 0.5, 0.5]})
    res = CPT().fit(df)
    with pytest.warns(RuntimeWarning, match=r"\['gamma'\] are not identified"):
        assert np.isnan(res.bse["gamma"])
    assert res.bse["alpha"] > 1e9 and res.bse["delta"] > 1e9
