"""Structural demand models (SPEC §7): shares, analytic Jacobians and elasticities against finite
differences, parameter recovery from noise-free shares, the baseline, kernels against twins, and
the real-data estimators on pyblp's Nevo cereal data."""

from __future__ import annotations

import re

import numpy as np
import pandas as pd
import pytest
import scipy.stats

from restrictiveness.demand import _logit_nb as nb
from restrictiveness.demand.estimation import markets_from_frame
from restrictiveness.demand.fitting import FTOL, GTOL, XTOL
from restrictiveness.demand.models import (
    DEFAULT_FORMULA,
    MARKET_COLUMNS,
    MNL,
    DemandFit,
    Logit,
    MixedLogit,
    NestedLogit,
    _Design,
    _nest_index,
    _problem,
    _residual_jacobian,
    market_design,
)
from restrictiveness.shared._lsq_nb import BOUND_RTOL, CONVERGED, ROOT
from restrictiveness.shared.exceptions import ConfigurationError, DataError, FormulaError
from restrictiveness.shared.sample import Sample


def markets(n, J=24, seed=0, mushy=None):
    rng = np.random.default_rng(seed)
    m = rng.integers(0, 2, (n, J)).astype(float) if mushy is None else np.full((n, J), mushy)
    return np.stack([rng.uniform(0.05, 0.2, (n, J)), rng.uniform(0, 20, (n, J)), m], axis=2)


def design(X, formula=DEFAULT_FORMULA):
    return _Design(formula, X, MARKET_COLUMNS)


def mxl_fit(X, params, random=None, nodes=512):
    proc = MixedLogit(random=random, nodes=nodes)
    d = design(X)
    ex = proc._extra(d.names)
    extra = {k: ex[k] for k in ("K", "ridx", "lrow", "lcol", "z")}
    return DemandFit("MXL", np.asarray(params, float), proc.parameter_names(d.names), d,
                     MARKET_COLUMNS, extra=extra), ex


BETA = np.array([-3.0, -10.0, 0.05, 0.3])
NL_PARAMS = np.r_[BETA, 0.3, 0.6]
# L entries in np.tril_indices order over (Intercept, prices, sugar, mushy)
L_FULL = np.array([0.5, 0.2, 1.0, 0.0, 0.01, 0.04, 0.1, 0.0, 0.02, 0.4])


def fits(X):
    d = design(X)
    return {"MNL": DemandFit("MNL", BETA, d.names, d, MARKET_COLUMNS),
            "NL": DemandFit("NL", NL_PARAMS, d.names + ["r0", "r1"], d, MARKET_COLUMNS,
                            extra={"nest": "mushy"}),
            "MXL": mxl_fit(X, np.r_[BETA, L_FULL])[0]}


def fd_elasticities(fit, X, h=1e-5):
    """Symmetric log-price differences, as the study's discrepancy computes them."""
    n, J, _ = X.shape
    E = np.empty((n, J, J))
    for k in range(J):
        Xp, Xm = X.copy(), X.copy()
        Xp[:, k, 0] *= np.exp(h)
        Xm[:, k, 0] *= np.exp(-h)
        E[:, :, k] = (np.log(fit.predict(Xp)) - np.log(fit.predict(Xm))) / (2 * h)
    return E


# --------------------------------------------------------------------------- shares


@pytest.mark.parametrize("model", ["MNL", "NL", "MXL"])
def test_shares_positive_and_below_one(model):
    X = markets(5)
    s = fits(X)[model].predict(X)
    assert s.shape == (5, 24)
    assert (s > 0).all() and (s.sum(axis=1) < 1).all()


def test_mnl_shares_closed_form():
    X = markets(3)
    d = np.exp(design(X)(X) @ BETA)
    expect = d / (1 + d.sum(axis=1, keepdims=True))
    np.testing.assert_allclose(fits(X)["MNL"].predict(X), expect, rtol=1e-12)


def test_nl_shares_match_the_formula_and_reduce_to_mnl_at_rho_zero():
    X = markets(3)
    d = design(X)
    delta = d(X) @ BETA
    g = X[:, :, 2].astype(int)
    rho = NL_PARAMS[-2:]
    lam = 1 - rho[g]
    D = np.stack([np.where(g == m, np.exp(delta / (1 - rho[m])), 0).sum(1) for m in (0, 1)], 1)
    den = 1 + (D ** (1 - rho)).sum(axis=1)
    expect = np.exp(delta / lam) * np.take_along_axis(D, g, 1) ** (-rho[g]) / den[:, None]
    np.testing.assert_allclose(fits(X)["NL"].predict(X), expect, rtol=1e-12)
    nl0 = DemandFit("NL", np.r_[BETA, 0, 0], d.names + ["a", "b"], d, MARKET_COLUMNS,
                    extra={"nest": "mushy"})
    np.testing.assert_allclose(nl0.predict(X), fits(X)["MNL"].predict(X), rtol=1e-12)


def test_nl_empty_nest():
    X = markets(4, mushy=0.0)               # nest 1 empty everywhere
    d = design(X)
    nl = DemandFit("NL", NL_PARAMS, d.names + ["a", "b"], d, MARKET_COLUMNS,
                   extra={"nest": "mushy"})
    s = nl.predict(X)
    delta, lam = d(X) @ BETA, 1 - NL_PARAMS[-2]
    D = np.exp(delta / lam).sum(axis=1, keepdims=True)
    np.testing.assert_allclose(s, np.exp(delta / lam) * D ** (-NL_PARAMS[-2]) / (1 + D ** lam),
                               rtol=1e-12)
    # its elasticities and Jacobian are finite too
    assert np.isfinite(nl.elasticities(X)).all()
    jac = _residual_jacobian("NL", NL_PARAMS, d(X), s,
                             {"g": _nest_index(X, MARKET_COLUMNS, "mushy")})[1]
    assert np.isfinite(jac).all()
    assert np.all(jac[:, -1] == 0)          # ρ of the empty nest does not move any share


def test_mxl_with_zero_covariance_is_mnl():
    X = markets(4)
    mxl, _ = mxl_fit(X, np.r_[BETA, np.zeros(10)])
    np.testing.assert_allclose(mxl.predict(X), fits(X)["MNL"].predict(X), rtol=1e-12)
    np.testing.assert_allclose(mxl.elasticities(X), fits(X)["MNL"].elasticities(X),
                               rtol=1e-10, atol=1e-12)


def test_mxl_shares_match_direct_monte_carlo_average():
    X = markets(2)
    mxl, ex = mxl_fit(X, np.r_[BETA, L_FULL])
    L = np.zeros((4, 4))
    L[np.tril_indices(4)] = L_FULL
    z = np.concatenate([ex["z"], -ex["z"]])
    W = design(X)(X)
    expect = np.zeros((2, 24))
    for zr in z:                             # one consumer type at a time
        u = np.exp(W @ (BETA + L @ zr))
        expect += u / (1 + u.sum(axis=1, keepdims=True))
    np.testing.assert_allclose(mxl.predict(X), expect / len(z), rtol=1e-12)


# --------------------------------------------------------------------------- derivatives


@pytest.mark.parametrize("model", ["MNL", "NL", "MXL"])
def test_analytic_elasticities_match_finite_differences(model):
    X = markets(3)
    fit = fits(X)[model]
    E = fit.elasticities(X)
    np.testing.assert_allclose(E, fd_elasticities(fit, X), rtol=1e-5, atol=1e-8)
    assert (np.diagonal(E, axis1=1, axis2=2) < 0).all()   # own-price elasticities negative


@pytest.mark.parametrize("model", ["MNL", "NL", "MXL"])
def test_analytic_jacobians_match_finite_differences(model):
    X = markets(3)
    d = design(X)
    W = np.ascontiguousarray(d(X))
    y = np.full((3, 24), 0.01)
    if model == "MNL":
        theta, extra = BETA, {}
    elif model == "NL":
        theta, extra = NL_PARAMS, {"g": _nest_index(X, MARKET_COLUMNS, "mushy")}
    else:
        theta, extra = np.r_[BETA, L_FULL], mxl_fit(X, np.r_[BETA, L_FULL])[1]
    r, jac = _residual_jacobian(model, theta, W, y, extra)
    np.testing.assert_allclose(r, (fits(X)[model].predict(X) - y).ravel(), rtol=1e-12,
                               atol=1e-15)
    fd = np.empty_like(jac)
    for p in range(len(theta)):
        h = 1e-6 * max(1.0, abs(theta[p]))
        e = np.zeros_like(theta)
        e[p] = h
        fd[:, p] = (_residual_jacobian(model, theta + e, W, y, extra)[0]
                    - _residual_jacobian(model, theta - e, W, y, extra)[0]) / (2 * h)
    np.testing.assert_allclose(jac, fd, rtol=1e-5, atol=1e-9)


def test_mxl_jacobian_kept_from_the_residuals_belongs_to_the_point_asked_for():
    """For scipy's methods the residual call computes the Jacobian too; a later ``jac`` call
    must get the one of its own point, whether or not the last residual call was at it."""
    from restrictiveness.demand.fitting import _ScipyObjective

    X = markets(3)
    W = np.ascontiguousarray(design(X)(X))
    theta, extra = np.r_[BETA, L_FULL], mxl_fit(X, np.r_[BETA, L_FULL])[1]
    other = theta + 0.05
    prob = _problem("MXL", W, np.full((3, 24), 0.01), extra)
    res = _ScipyObjective(prob, theta)
    fresh_theta = _ScipyObjective(prob, theta).jac(theta)
    fresh_other = _ScipyObjective(prob, theta).jac(other)
    assert not np.allclose(fresh_theta, fresh_other)
    res.fun(theta)
    np.testing.assert_array_equal(res.jac(theta), fresh_theta)   # kept
    np.testing.assert_array_equal(res.jac(other), fresh_other)   # recomputed
    res.fun(other)
    np.testing.assert_array_equal(res.jac(theta), fresh_theta)
    assert res.nfev == 2


def test_elasticities_through_a_patsy_formula_use_the_chain_rule():
    X = markets(2)
    d = design(X, "shares ~ np.log(prices) + sugar")
    assert d._select is None                 # the patsy path, not plain columns
    fit = DemandFit("MNL", np.array([-3.0, -2.0, 0.05]), d.names, d, MARKET_COLUMNS)
    np.testing.assert_allclose(fit.elasticities(X), fd_elasticities(fit, X), rtol=1e-5,
                               atol=1e-8)


# --------------------------------------------------------------------------- fitting


def sample(X, y):
    return Sample(X, y, MARKET_COLUMNS, "shares")


def test_logit_baseline_is_the_mean_inside_share():
    X = markets(6)
    y = fits(X)["MNL"].predict(X)
    fit = Logit().fit(sample(X, y), np.random.default_rng(0))
    b = fit.predict(X)
    assert np.all(b == b[0, 0])
    assert b[0, 0] == pytest.approx(y.mean(), rel=1e-12)
    assert not fit.elasticities(X).any()
    # the mean is the least-squares constant: moving it raises the objective
    for eps in (-1e-4, 1e-4):
        assert ((y - b - eps) ** 2).sum() > ((y - b) ** 2).sum()


def test_mnl_recovers_parameters_exactly():
    X = markets(20, seed=1)
    y = fits(X)["MNL"].predict(X)
    fit = MNL().fit(sample(X, y), np.random.default_rng(0))
    np.testing.assert_allclose(fit.params, BETA, rtol=1e-6, atol=1e-8)
    assert fit.info["cost"] < 1e-20


def test_nl_recovers_nesting_parameters():
    X = markets(20, seed=2)
    y = fits(X)["NL"].predict(X)
    fit = NestedLogit().fit(sample(X, y), np.random.default_rng(0))
    np.testing.assert_allclose(fit.params[-2:], NL_PARAMS[-2:], atol=1e-4)
    np.testing.assert_allclose(fit.params[:4], BETA, rtol=1e-3, atol=1e-4)


def test_nl_fits_with_an_empty_nest_in_some_markets():
    X = np.concatenate([markets(6, seed=3), markets(4, seed=4, mushy=0.0)])
    y = fits(X)["NL"].predict(X)
    fit = NestedLogit().fit(sample(X, y), np.random.default_rng(0))
    assert np.isfinite(fit.params).all()
    np.testing.assert_allclose(fit.predict(X), y, atol=1e-6)


def test_mxl_recovers_means_and_diagonal_cholesky():
    X = markets(30, seed=5)
    truth, _ = mxl_fit(X, np.r_[BETA, 0.8, 0.0, 0.08], random=["Intercept", "sugar"])
    y = truth.predict(X)
    fit = MixedLogit(random=["Intercept", "sugar"]).fit(sample(X, y), np.random.default_rng(0))
    assert fit.names[-3:] == ["L[Intercept,Intercept]", "L[sugar,Intercept]", "L[sugar,sugar]"]
    np.testing.assert_allclose(fit.params[:4], BETA, rtol=0.05, atol=0.05)
    np.testing.assert_allclose(fit.params[[4, 6]], [0.8, 0.08], rtol=0.1)
    assert abs(fit.params[5]) < 0.05
    np.testing.assert_allclose(fit.predict(X), y, atol=1e-5)


def test_fitted_info_is_json_serialisable():
    import json

    X = markets(8, seed=6)
    y = fits(X)["NL"].predict(X)
    for proc in (Logit(), MNL(), NestedLogit()):
        json.dumps(proc.fit(sample(X, y), np.random.default_rng(0)).info)


def test_procedures_and_fitted_rules_are_picklable():
    import pickle

    for proc in (Logit(), MNL(), NestedLogit(), MixedLogit(random=["sugar"])):
        assert pickle.loads(pickle.dumps(proc)).label == proc.label
    X = markets(3)
    for fit in fits(X).values():
        np.testing.assert_array_equal(pickle.loads(pickle.dumps(fit)).predict(X),
                                      fit.predict(X))


# --------------------------------------------------------------------------- bad inputs


def test_bad_inputs_raise_clear_errors():
    X = markets(3)
    y = fits(X)["MNL"].predict(X)
    rng = np.random.default_rng(0)
    with pytest.raises(FormulaError, match="mushy"):
        MNL().fit(Sample(X[:, :, :2], y, ("prices", "sugar"), "shares"), rng)
    with pytest.raises(DataError, match="markets of shape"):
        MNL().fit(Sample(X[0], y[0], MARKET_COLUMNS, "shares"), rng)
    Xn = X.copy()
    Xn[0, 0, 1] = np.nan
    with pytest.raises(DataError, match="NaN"):
        MNL().fit(sample(Xn, y), rng)
    yn = y.copy()
    yn[1, 2] = np.nan
    with pytest.raises(DataError, match="NaN"):
        NestedLogit().fit(sample(X, yn), rng)
    with pytest.raises(DataError, match="sum to less than 1"):
        Logit().fit(sample(X, np.full((3, 24), 0.05)), rng)
    with pytest.raises(ConfigurationError, match="uses no covariates.*MNL"):
        Logit("shares ~ prices")
    with pytest.raises(DataError, match="inside shares of shape"):
        MNL().fit(Sample(X, y[:, :5], MARKET_COLUMNS, "shares"), rng)
    fit = MNL().fit(sample(X, y), rng)
    with pytest.raises(DataError, match="markets of shape"):
        fit.predict(X[:, :, :2])
    with pytest.raises(DataError, match="NaN"):
        fit.predict(Xn)
    with pytest.raises(FormulaError, match="colour"):
        MNL("shares ~ colour").fit(sample(X, y), rng)
    with pytest.raises(FormulaError, match="random terms"):
        MixedLogit(random=["colour"]).fit(sample(X, y), rng)
    Xb = X.copy()
    Xb[0, 0, 2] = 2.0
    with pytest.raises(DataError, match="nest column"):
        NestedLogit().fit(sample(Xb, y), rng)
    with pytest.raises(ValueError, match="nodes"):
        MixedLogit(nodes=7)


# --------------------------------------------------------------------------- kernels


def kernel_inputs(n=7, scale=1.0, seed=0):
    rng = np.random.default_rng(seed)
    X = markets(n, seed=seed)
    W = np.ascontiguousarray(market_design(DEFAULT_FORMULA, X)[0])
    delta = np.ascontiguousarray(W @ BETA)
    ridx = np.array([0, 2, 3], dtype=np.int64)
    z = rng.standard_normal((16, 3))
    L = scale * np.array([[0.5, 0, 0], [0.02, 0.05, 0], [0.3, 0, 0.7]])
    lrow, lcol = (a.astype(np.int64) for a in np.tril_indices(3))
    return delta, W, ridx, np.ascontiguousarray(z @ L.T), z, lrow, lcol


@pytest.mark.parametrize("scale", [1.0, 400.0, "mixed"])
def test_kernels_match_numpy_twins(scale):
    # 400: utilities overflow exp, so every market takes the shifted path; "mixed": market 0
    # does and the others take the paired exponentials
    delta, W, ridx, nu, z, lrow, lcol = kernel_inputs(scale=1.0 if scale == "mixed" else scale)
    if scale == "mixed":
        delta[0] += 700.0
    Wr = np.ascontiguousarray(W[:, :, ridx])
    nuT = np.ascontiguousarray(nu.T)
    S = np.full(Wr.shape[:2] + (2 * nuT.shape[1],), np.nan)   # every entry must be written
    full = np.full(len(delta), delta.shape[1], dtype=np.int64)   # every market lists all J
    s = nb.node_probabilities_nb(delta, Wr, nuT, full, S)
    S2, s2 = nb.node_probabilities_numpy(delta, Wr, nuT, full)
    assert np.isfinite(S).all()
    np.testing.assert_allclose(S, S2, rtol=1e-11, atol=1e-300)
    np.testing.assert_allclose(s, s2, rtol=1e-11)
    np.testing.assert_allclose(nb.mean_probabilities_nb(delta, Wr, nuT, full), s2, rtol=1e-11)
    np.testing.assert_allclose(nb.mxl_shares(delta, W, ridx, nu),
                               nb.mxl_shares_numpy(delta, W, ridx, nu), rtol=1e-11)
    sh, jac = nb.mxl_jacobian(delta, W, ridx, nu, z, lrow, lcol)
    sh2, jac2 = nb.mxl_jacobian_numpy(delta, W, ridx, nu, z, lrow, lcol)
    np.testing.assert_allclose(sh, sh2, rtol=1e-11)
    np.testing.assert_allclose(jac, jac2, rtol=1e-9, atol=1e-13)
    S3, s3 = nb.mxl_probabilities(delta, W, ridx, nu)
    np.testing.assert_array_equal(S3, S)
    np.testing.assert_allclose(sh, s3, rtol=1e-14)   # the same sums, by BLAS
    # the second-order term: from its Kronecker form (compiled) and from the definition
    y = np.random.default_rng(1).uniform(0.0, 0.1, delta.shape)
    args = nb._jacobian_args(delta, W, ridx, nu, z, lrow, lcol, None)
    sh4, jac4, second = nb.shares_jacobian_second_nb(*args, y)
    sh5, jac5, second5 = nb.shares_jacobian_second_numpy(*args, y)
    np.testing.assert_allclose(sh4, sh2, rtol=1e-11)
    np.testing.assert_allclose(jac4, jac2, rtol=1e-9, atol=1e-13)
    np.testing.assert_allclose(jac5, jac2, rtol=1e-9, atol=1e-13)
    assert np.abs(second).max() > 1e-3
    np.testing.assert_allclose(second, second5, rtol=1e-9, atol=1e-12 * np.abs(second5).max())


@pytest.mark.parametrize("formula, random", [
    (DEFAULT_FORMULA, None),                    # the intercept and a dummy repeat columns
    ("shares ~ 0 + prices + sugar", ["sugar"]),  # no column repeats; one random term
])
def test_the_second_order_term_is_the_hessian_less_gauss_newton(formula, random):
    """``JᵀJ + S`` from the compiled callback in the solver's coordinates (Cholesky diagonals
    ``L_aa = η_a²``) equals the Hessian of ``½ Σ r²`` by central differences of its gradient
    ``Jᵀr``: a known answer for the Kronecker form, the distinct product columns and the chain
    rule through η."""
    X = markets(6, J=5, seed=3)
    W = np.ascontiguousarray(market_design(formula, X)[0])
    names = market_design(formula, X)[1]
    proc = MixedLogit(formula, random=random, nodes=32)
    ex = proc._extra(list(names))
    y = np.random.default_rng(2).uniform(0.02, 0.2, W.shape[:2])
    prob = _problem("MXL", W, y, ex)
    K, nL = W.shape[2], len(ex["lrow"])
    rng = np.random.default_rng(4)
    eta = np.r_[np.linspace(-0.3, 0.2, K) / np.abs(W).reshape(-1, K).max(axis=0),
                rng.uniform(-0.6, 0.6, nL)]

    def gradient(e):
        r, J = nb.mxl_resjac_root(e, prob.data)
        return J.T @ r

    r, J, second = nb.mxl_resjac_root_second(eta, prob.data)
    r0, J0 = nb.mxl_resjac_root(eta, prob.data)
    np.testing.assert_allclose(r, r0, rtol=1e-13, atol=1e-17)
    np.testing.assert_allclose(J, J0, rtol=1e-12, atol=1e-16)
    fd = np.empty((K + nL, K + nL))
    for i in range(K + nL):
        h = 1e-5 * max(1.0, abs(eta[i]))
        up, down = eta.copy(), eta.copy()
        up[i] += h
        down[i] -= h
        fd[:, i] = (gradient(up) - gradient(down)) / (2 * h)
    hessian = J.T @ J + second
    assert np.abs(second).max() > 0.05 * np.abs(hessian).max()     # S is not negligible here
    np.testing.assert_allclose(hessian, fd, rtol=1e-6, atol=1e-8 * np.abs(fd).max())
    twin = nb.mxl_resjac_root_second_numpy(eta, prob.data)
    np.testing.assert_allclose(twin[2], second, rtol=1e-9, atol=1e-12 * np.abs(second).max())


def test_distinct_product_columns_are_found_as_by_brute_force():
    """The second-order term sums each distinct column among ``W_a`` and ``W_a W_b`` once; which
    ones coincide (over the present products only) equals a brute-force comparison."""
    X = markets(5, J=6, seed=1)
    W = np.ascontiguousarray(market_design(DEFAULT_FORMULA, X)[0])
    W[:, :, 2] = W[:, :, 1]                      # sugar made equal to price
    nprod = np.array([6, 6, 4, 6, 5], dtype=np.int64)
    W[2, 4:, 2] = 99.0                           # ... except on absent products
    W[0, :, 3] = W[0, :, 1]                      # mushy equal to price in the first market only
    K = W.shape[2]
    ca = np.r_[np.arange(K), [a for a in range(K) for b in range(a, K)]].astype(np.int64)
    cb = np.r_[np.full(K, -1), [b for a in range(K) for b in range(a, K)]].astype(np.int64)
    col, first, nd = nb._distinct_columns(W, nprod, ca, cb)
    present = np.arange(6)[None, :] < nprod[:, None]
    values = [np.where(present, W[:, :, a] if b < 0 else W[:, :, a] * W[:, :, b], 0.0)
              for a, b in zip(ca, cb, strict=True)]
    for i in range(len(ca)):
        same = [k for k in range(len(ca)) if np.array_equal(values[i], values[k])]
        assert first[col[i]] == same[0]         # mapped to the first column equal to it
    assert nd == len({values[i].tobytes() for i in range(len(ca))})
    # Intercept, price (= sugar), mushy (= Intercept·mushy), price², price·mushy, mushy²
    assert nd == 6


def test_paired_and_shifted_exponentials_both_match_the_twin_at_the_switch():
    """Markets just below the safe bound on max|δ| + max|μ| take the paired exponentials,
    markets just above it the shifted ones; both must match the twin there, where e^{δ+μ}
    approaches the largest values the paired path allows."""
    delta, W, ridx, nu, z, lrow, lcol = kernel_inputs()
    Wr, nuT = np.ascontiguousarray(W[:, :, ridx]), np.ascontiguousarray(nu.T)
    wmu = np.abs(Wr).max(axis=1) @ np.abs(nuT).max(axis=1)   # the kernel's bound on max|μ|
    full = np.full(len(delta), delta.shape[1], dtype=np.int64)
    for edge in (599.0, 601.0):
        # every δ near +edge − wmu (all positive), so max|δ| + wmu = edge exactly
        d = np.ascontiguousarray(delta - delta.max(axis=1, keepdims=True)
                                 + (edge - wmu)[:, None])
        np.testing.assert_allclose(np.abs(d).max(axis=1) + wmu, edge)
        s = nb.mean_probabilities_nb(d, Wr, nuT, full)
        assert np.isfinite(s).all()
        np.testing.assert_allclose(s, nb.mean_probabilities_numpy(d, Wr, nuT, full), rtol=1e-11)


def test_the_overflow_bound_adds_the_random_terms():
    """max|μ| is bounded by the *sum* over random terms of max|W| max|ν|: two terms of 375 each
    reach utilities of 750, beyond the paired exponentials' range, so the market must take the
    shifted path (the largest term alone, 375, would wrongly allow the paired one, where e^750
    clamps to e^700 and the two leading products tie)."""
    Wr = np.ascontiguousarray(np.array([[[1.0, 1.0], [1.0, 0.95], [0.0, 0.0]]]))
    nuT = np.ascontiguousarray(np.array([[375.0, 1.0], [375.0, -1.0]]))
    delta, three = np.zeros((1, 3)), np.array([3])
    s = nb.mean_probabilities_nb(delta, Wr, nuT, three)
    np.testing.assert_allclose(s, nb.mean_probabilities_numpy(delta, Wr, nuT, three), rtol=1e-11)
    # node +ν_0: utilities (750, 731.25, 0), the first product takes everything; node −ν_0 and
    # the small node pair spread the rest
    S, _ = nb.node_probabilities_numpy(delta, Wr, nuT, three)
    assert S[0, 0, 0] == pytest.approx(1.0, abs=1e-8) and S[0, 1, 0] < 1e-8


# --------------------------------------------------------------------------- real data


@pytest.fixture(scope="module")
def nevo():
    import pyblp
    return pd.read_csv(pyblp.data.NEVO_PRODUCTS_LOCATION)


def test_estimators_on_nevo_data(nevo):
    res = MNL.from_formula("shares ~ prices + sugar + mushy", nevo).fit()
    assert list(res.params.index) == ["Intercept", "prices", "sugar", "mushy"]
    assert res.nobs == 94 * 24
    X, y = res.model.X, res.model.y
    r = (res.fitted.predict(X) - y).ravel()
    th = res.params.to_numpy()
    d = design(X)
    # at a least-squares optimum a Gauss-Newton step cannot lower the objective materially
    Jm = res._jacobian
    step = -np.linalg.solve(Jm.T @ Jm, Jm.T @ r)
    moved = DemandFit("MNL", th + step, d.names, d, MARKET_COLUMNS).predict(X)
    assert ((moved - y) ** 2).sum() > (r ** 2).sum() * (1 - 1e-6)
    # classical NLS standard errors from a finite-difference Jacobian
    Jfd = np.empty((y.size, 4))
    for p in range(4):
        e = np.zeros(4)
        e[p] = 1e-6 * max(1, abs(th[p]))
        Jfd[:, p] = ((DemandFit("MNL", th + e, d.names, d, MARKET_COLUMNS).predict(X)
                      - DemandFit("MNL", th - e, d.names, d, MARKET_COLUMNS).predict(X))
                     .ravel() / (2 * e[p]))
    s2 = (r ** 2).sum() / (y.size - 4)
    np.testing.assert_allclose(res.bse, np.sqrt(np.diag(s2 * np.linalg.inv(Jfd.T @ Jfd))),
                               rtol=1e-4)
    # t inference with N - k degrees of freedom: two-sided p-values and t quantiles
    t, df = res.params / res.bse, y.size - 4
    assert res.df_inference == df
    np.testing.assert_allclose(res.pvalues, 2 * scipy.stats.t.sf(np.abs(t), df), rtol=1e-12)
    for alpha in (0.1, 0.01):
        q = scipy.stats.t.ppf(1 - alpha / 2, df)
        np.testing.assert_allclose(res.conf_int(alpha)["upper"], res.params + q * res.bse)
        np.testing.assert_allclose(res.conf_int(alpha)["lower"], res.params - q * res.bse)
    text = str(res.summary())
    assert "Multinomial logit" in text and "prices" in text and "std err" in text
    nl = NestedLogit.from_formula("shares ~ prices + sugar + mushy", nevo).fit()
    assert nl.ssr <= res.ssr + 1e-10         # NL nests MNL (ρ = 0) and starts from it
    assert "rho[mushy=1]" in nl.params.index


def test_per_row_results_follow_the_rows_of_the_data(nevo):
    # pyblp's cereal rows list C65Q1 before C01Q2; fittedvalues, resid and endog came grouped
    # by sorted market, so df["resid"] = res.resid put other rows' residuals (up to 0.43 off)
    res = MNL.from_formula("shares ~ prices + sugar + mushy", nevo).fit()
    np.testing.assert_array_equal(res.endog, nevo["shares"].to_numpy())
    b = res.params
    e = np.exp(b["Intercept"] + b["prices"] * nevo["prices"] + b["sugar"] * nevo["sugar"]
               + b["mushy"] * nevo["mushy"])
    hand = e / (1 + e.groupby(nevo["market_ids"]).transform("sum"))
    np.testing.assert_allclose(res.fittedvalues, hand, rtol=1e-12)
    np.testing.assert_allclose(res.resid, nevo["shares"] - hand, rtol=1e-10, atol=1e-15)
    # model.y follows the sorted markets
    first = res.model.markets[1]
    np.testing.assert_array_equal(res.model.y[1], nevo["shares"][nevo["market_ids"] == first])
    assert round(float(res.bse["prices"]), 4) == 1.0028   # the covariance is unchanged


def test_results_predict_and_elasticities_take_and_give_long_product_data(nevo):
    # predict() gave an unlabelled (94, 24) array by sorted market (row 1 was C01Q2, the data's
    # second market is C03Q1), took only arrays in the model's column order (the formula's, so
    # "shares ~ sugar + prices" wanted sugar first) and failed on a DataFrame with "could not
    # convert string to float"; the results had no elasticities
    res = MNL.from_formula("shares ~ prices + sugar + mushy", nevo).fit()
    b = res.params

    def mnl(frame):
        e = np.exp(b["Intercept"] + b["prices"] * frame["prices"] + b["sugar"] * frame["sugar"]
                   + b["mushy"] * frame["mushy"])
        return e / (1 + e.groupby(frame["market_ids"]).transform("sum"))

    s = res.predict()
    assert s.index.equals(nevo.index) and s.name == "shares"
    np.testing.assert_allclose(s, mnl(nevo), rtol=1e-12)
    np.testing.assert_array_equal(s, res.fittedvalues)
    # new data: rows shuffled across markets, columns in another order, labels of its own,
    # prices 10% higher
    new = nevo.sample(frac=1.0, random_state=5)[["mushy", "sugar", "prices", "market_ids"]]
    new = new.assign(prices=1.1 * new["prices"]).set_axis([f"r{i}" for i in range(len(new))])
    got = res.predict(new)
    assert got.index.equals(new.index)
    np.testing.assert_allclose(got, mnl(new), rtol=1e-12)
    # MNL elasticities by hand, E[i, k] = β_p p_k ([i is the k-th] − s_k), on the new rows
    E = res.elasticities(new)
    assert E.index.equals(new.index) and E.shape == (len(new), 24)
    sh, p = mnl(new).to_numpy(), new["prices"].to_numpy()
    for m in ("C01Q1", "C65Q2"):
        rows = np.flatnonzero(new["market_ids"].to_numpy() == m)   # its products, in row order
        hand = b["prices"] * p[rows][None, :] * (np.eye(24) - sh[rows][None, :])
        np.testing.assert_allclose(E.to_numpy()[rows], hand, rtol=1e-12, atol=1e-15)
    # markets as an array (last axis in res.model.columns): arrays back, as statsmodels does
    X = np.stack([new.loc[new["market_ids"] == m, list(res.model.columns)].to_numpy()
                  for m in ("C01Q1", "C65Q2")])
    by_market = mnl(new).groupby(new["market_ids"])
    np.testing.assert_allclose(res.predict(X), np.stack([by_market.get_group(m).to_numpy()
                                                         for m in ("C01Q1", "C65Q2")]),
                               rtol=1e-12)
    first = np.flatnonzero(new["market_ids"].to_numpy() == "C01Q1")
    np.testing.assert_allclose(res.elasticities(X)[0], E.to_numpy()[first], rtol=1e-12)
    with pytest.raises(DataError, match=r"markets as an array \(m, J, C\)"):
        res.predict([[1.0, 2.0, 0.0]])
    with pytest.raises(DataError, match=r"columns \('prices', 'sugar', 'mushy'\); got shape"):
        res.predict(X[:, :, :2])
    with pytest.raises(DataError, match="prices must be positive"):
        res.elasticities(nevo.assign(prices=nevo["prices"] - nevo["prices"].mean()))


def test_nested_logit_results_elasticities_match_pyblp(nevo):
    # pyblp's nested logit at our estimate, in its layout (row: a product; column k: the k-th
    # product of the row's market), on the cereal data in pyblp's row order
    import pyblp

    pyblp.options.verbose = False
    res = NestedLogit.from_formula("shares ~ prices + sugar + mushy", nevo).fit()
    products = nevo[["market_ids", "prices", "sugar", "mushy"]].assign(
        firm_ids=np.arange(len(nevo)), nesting_ids=nevo["mushy"].astype(int))
    sim = pyblp.Simulation(pyblp.Formulation("1 + prices + sugar + mushy"), products,
                           beta=res.params.to_numpy()[:4], rho=res.params.to_numpy()[4:],
                           xi=np.zeros(len(nevo)))
    theirs = sim.replace_endogenous(costs=np.zeros(len(nevo)), prices=nevo["prices"].to_numpy(),
                                    iteration=pyblp.Iteration("return"))
    np.testing.assert_allclose(res.predict(), theirs.product_data.shares.ravel(), rtol=1e-12)
    np.testing.assert_allclose(res.elasticities(), theirs.compute_elasticities(), rtol=1e-12,
                               atol=1e-14)


def test_robust_standard_errors_are_the_sandwich_of_the_share_jacobian(nevo):
    # DemandModel.fit took no cov_type: no robust or market-clustered standard errors, although
    # the shares of a market share its outside good. Checked against a finite-difference
    # sandwich written here and statsmodels' OLS of the residuals on that Jacobian, on rows
    # shuffled across markets (clusters and residuals must pair by row)
    import statsmodels.api as sm

    df = nevo.sample(frac=1.0, random_state=3).reset_index(drop=True)
    model = MNL.from_formula("shares ~ prices + sugar + mushy", df)
    W = np.c_[np.ones(len(df)), df[["prices", "sugar", "mushy"]].to_numpy()]
    codes = pd.factorize(df["market_ids"])[0]

    def shares(b):
        e = np.exp(W @ b)
        return e / (1 + np.bincount(codes, e)[codes])

    res = model.fit(cov_type="cluster", groups="market_ids")
    b = res.params.to_numpy()
    Jfd = np.column_stack([(shares(b + h) - shares(b - h)) / (2e-6)
                           for h in 1e-6 * np.eye(4)])
    e = df["shares"].to_numpy() - shares(b)
    N, k, G = len(df), 4, 94
    bread = np.linalg.inv(Jfd.T @ Jfd)
    scores = np.zeros((G, k))
    np.add.at(scores, codes, Jfd * e[:, None])
    V = G / (G - 1) * (N - 1) / (N - k) * bread @ scores.T @ scores @ bread
    np.testing.assert_allclose(res.bse, np.sqrt(np.diag(V)), rtol=1e-5)
    assert res.n_clusters == 94 and res.df_inference == 93
    ols = sm.OLS(e, Jfd).fit(cov_type="cluster", cov_kwds={"groups": codes})
    np.testing.assert_allclose(res.bse, ols.bse, rtol=1e-5)
    hc1 = model.fit(cov_type="HC1")
    np.testing.assert_allclose(hc1.bse, sm.OLS(e, Jfd).fit(cov_type="HC1").bse, rtol=1e-5)
    # one cluster identifier per row, in the data's row order, is the same as the column
    by_city = model.fit(cov_type="cluster", groups=df["city_ids"].to_numpy())
    np.testing.assert_allclose(
        by_city.bse, sm.OLS(e, Jfd).fit(cov_type="cluster",
                                        cov_kwds={"groups": df["city_ids"].to_numpy()}).bse,
        rtol=1e-5)
    assert by_city.n_clusters == 47 and "Clustered" in str(by_city.summary())
    np.testing.assert_allclose(res.params, model.fit().params, rtol=0, atol=0)
    with pytest.raises(ConfigurationError, match="cov_type must be one of"):
        model.fit(cov_type="HC3")
    with pytest.raises(ConfigurationError, match="groups is required"):
        model.fit(cov_type="cluster")


def test_a_nest_column_other_than_0_1_is_refused_when_the_model_is_built(nevo):
    # nests coded 1/2, or three nests, built an estimator and failed only at fit() with "must be
    # 0 or 1", naming neither the values found nor what to do
    for values, shown in (((nevo["mushy"] + 1).to_numpy(), "2 distinct value(s): 1, 2"),
                          ((nevo["sugar"] // 6).to_numpy(), "4 distinct value(s): 0, 1, 2, 3")):
        df = nevo.assign(segment=values)
        pattern = rf"'segment' must be 0 or 1 .*{re.escape(shown)}\. Recode"
        with pytest.raises(DataError, match=pattern):
            NestedLogit.from_formula("shares ~ prices + sugar", df, nest="segment")
    # 0/1 coded as floats or integers is two nests
    ok = NestedLogit.from_formula("shares ~ prices", nevo.assign(seg=nevo["mushy"].astype(int)),
                                  nest="seg")
    assert ok.columns == ("prices", "seg")


def test_a_product_listed_twice_in_a_market_is_refused(nevo):
    # a repeated row (or product id) in a market was read as another product: the estimates
    # moved (MNL price coefficient -8.964 -> -8.973) without a word
    repeated = pd.concat([nevo.iloc[:23], nevo.iloc[[0]], nevo.iloc[24:]]).reset_index(drop=True)
    first = (nevo.loc[0, "market_ids"], nevo.loc[0, "product_ids"])
    with pytest.raises(DataError, match=rf"product id more than once .*{re.escape(repr([first]))}"):
        MNL.from_formula("shares ~ prices + sugar + mushy", repeated)
    # without product ids the rows are taken as distinct products
    res = MNL.from_formula("shares ~ prices", repeated.drop(columns="product_ids")).fit()
    assert res.nobs == len(nevo)


def test_a_fit_that_ran_out_of_evaluations_says_so(nevo):
    # MixedLogit(**PAPER_MXL) ends on its budget on the cereal data (objective 0.70420 against
    # 0.70182 converged); the summary presented it like an optimum, standard errors included
    formula = "shares ~ prices + sugar + mushy"
    short = MNL.from_formula(formula, nevo, max_nfev=3).fit()
    assert short.converged is False and short.fitted.info["status"] == 0
    assert ("(3 residual evaluations, best start baseline); NOT converged (evaluation budget "
            "exhausted): the estimate is the best point reached, not an optimum, and the "
            "standard errors assume one.") in str(short.summary())
    full = MNL.from_formula(formula, nevo).fit()
    assert full.converged is True and full.fitted.info["status"] > 0
    assert "; converged (" in str(full.summary()) and "NOT converged" not in str(full.summary())
    assert full.ssr < short.ssr


def test_estimator_refuses_shares_and_values_it_cannot_use(nevo):
    # (markets of different sizes are estimated: tests/test_demand_unbalanced.py)
    # the refusals of a market's shares name the market, and of missing values the columns and
    # rows (they said "sample.y: inside shares must be nonnegative and sum to less than 1 in
    # every market" and "data contain missing values (NaN) in the columns the model uses")
    odd = nevo["market_ids"].isin(["C04Q1", "C07Q2"])
    with pytest.raises(DataError, match="but market 'C04Q1' sums to 1.00288, market 'C07Q2' "
                                        "sums to 1.04314$"):
        MNL.from_formula("shares ~ prices", nevo.assign(shares=np.where(
            odd, 1.5 * nevo["shares"], nevo["shares"])))
    with pytest.raises(DataError, match="'shares' holds negative shares: market 'C01Q1' has a "
                                        "share of -0.01$"):
        MNL.from_formula("shares ~ prices", nevo.assign(shares=np.where(
            nevo.index == 3, -0.01, nevo["shares"])))
    gaps = nevo.copy()
    gaps.loc[[7, 9], "prices"] = np.nan
    gaps.loc[3, "shares"] = np.nan
    with pytest.raises(DataError, match=r"NaN\) in the columns the model uses: 'prices' \(2 "
                                        r"rows\), 'shares' \(1 row\); first rows \[3, 7, 9\]$"):
        MNL.from_formula("shares ~ prices", gaps)
    with pytest.raises(FormulaError, match="lack column"):
        MNL.from_formula("shares ~ colour", nevo)
    with pytest.raises(DataError, match="data have no rows"):  # was "from nan to nan"
        MNL.from_formula("shares ~ prices", nevo.iloc[:0]).fit()


def test_estimator_refuses_columns_that_are_not_numbers(nevo):
    # text was parsed as numbers and a complex column cut to its real part (a numpy
    # ComplexWarning at most), where NLS and the lottery estimators refuse both; a column given
    # twice was a bare reshape ValueError
    base = MNL.from_formula("shares ~ prices + sugar", nevo).fit().params
    for bad, column, dtype in ((nevo.assign(prices=nevo["prices"].astype(str)), "prices",
                                "str|object"),
                               (nevo.assign(shares=nevo["shares"] + 0j), "shares", "complex128"),
                               (nevo.assign(sugar=pd.Categorical(nevo["sugar"])), "sugar",
                                "category")):
        with pytest.raises(DataError, match=f"demand data: column '{column}' is not numeric "
                                            f"\\(dtype ({dtype})\\)"):
            MNL.from_formula("shares ~ prices + sugar", bad)
    with pytest.raises(DataError, match=r"column\(s\) \['prices'\] more than once"):
        MNL.from_formula("shares ~ prices + sugar",
                         pd.concat([nevo, nevo[["prices"]] * 2], axis=1))
    # numbers in any real dtype stay accepted, with the same estimates
    as_f32 = MNL.from_formula("shares ~ prices + sugar",
                              nevo.astype({"sugar": np.float32})).fit().params
    np.testing.assert_allclose(as_f32, base, rtol=1e-6)


def long_frame(X, y):
    """Markets ``(n, J, 3)`` and shares ``(n, J)`` as long product data, one row per product."""
    n, J, _ = X.shape
    return pd.DataFrame({"market_ids": np.repeat(np.arange(n), J), "prices": X[:, :, 0].ravel(),
                         "sugar": X[:, :, 1].ravel(), "mushy": X[:, :, 2].ravel(),
                         "shares": y.ravel()})


def test_markets_are_grouped_from_rows_in_any_order():
    """Rows of interleaved markets are grouped by market, in the order the rows list them."""
    df = pd.DataFrame({"market_ids": [2, 1, 2, 1], "prices": [5.0, 1.0, 6.0, 2.0],
                       "shares": [0.5, 0.1, 0.3, 0.2]})
    X, y, ids = markets_from_frame(df, ["prices"], "shares")
    np.testing.assert_array_equal(X[:, :, 0], [[1.0, 2.0], [5.0, 6.0]])
    np.testing.assert_array_equal(y, [[0.1, 0.2], [0.5, 0.3]])
    np.testing.assert_array_equal(ids, [1, 2])


def test_nested_logit_estimate_on_its_bound_is_flagged():
    """Shares from a nested logit with rho = 0 in one nest, perturbed by 5% noise: least squares
    puts that rho on its bound 0 exactly, and the results name it and say so in the summary."""
    X = markets(8, seed=5)
    y = DemandFit("NL", np.r_[BETA, 0.0, 0.6], design(X).names + ["r0", "r1"], design(X),
                  MARKET_COLUMNS, extra={"nest": "mushy"}).predict(X)
    y = y * np.exp(0.05 * np.random.default_rng(1).standard_normal(y.shape))
    res = NestedLogit.from_formula("shares ~ prices + sugar + mushy", long_frame(X, y)).fit()
    assert res.params["rho[mushy=0]"] == 0.0 and 0.5 < res.params["rho[mushy=1]"] < 0.7
    assert res.at_bound == ["rho[mushy=0]"]
    assert "On a bound: rho[mushy=0]" in str(res.summary())


def test_at_bounds_names_exactly_the_parameters_on_a_bound():
    """β at ±50, ρ at 0 or 0.99, a Cholesky entry at ±100 and a diagonal (not an off-diagonal)
    Cholesky entry at 0 are on their bounds; everything else is interior."""
    names = ["Intercept", "prices", "rho[m=0]", "rho[m=1]", "L[a,a]", "L[b,a]", "L[b,b]",
             "L[c,c]"]
    fit = DemandFit("MXL", [-50.0, -49.0, 0.99, 0.5, 0.0, 0.0, 100.0, 0.3], names, None,
                    MARKET_COLUMNS)
    assert fit.at_bounds() == ["Intercept", "rho[m=0]", "L[a,a]", "L[b,b]"]
    fit = DemandFit("MXL", [50.0, 1.0, 0.0, 0.98, 0.1, -100.0, 0.2, 1e-3], names, None,
                    MARKET_COLUMNS)
    assert fit.at_bounds() == ["Intercept", "rho[m=0]", "L[b,a]"]
    # a diagonal the solver drove to 0 in the limit (L = η², η → 0) is on its bound too; only
    # an exact 0 counted, so such an estimate's standard error was presented as valid
    fit = DemandFit("MXL", [1.0, 1.0, 0.5, 0.5, 2.3e-16, 0.5, 1e-9, 2e-8], names, None,
                    MARKET_COLUMNS)
    assert fit.at_bounds() == ["L[a,a]", "L[b,b]"]


def test_a_mixed_logit_variance_driven_to_zero_is_flagged_on_its_bound(nevo):
    # on the cereal data with random prices and sugar, L[sugar,sugar] goes to 0 (the solver holds
    # it within BOUND_RTOL, at 4.4e-12), where the objective still rises with it (J'(s - y) =
    # +4.8e-4 against <= 4e-10 for the others): an estimate on its bound, whose standard error
    # (2.1) the summary presented as valid
    res = MixedLogit.from_formula("shares ~ prices + sugar + mushy", nevo,
                                  random=["prices", "sugar"]).fit()
    assert 0 <= res.params["L[sugar,sugar]"] <= BOUND_RTOL
    assert res.at_bound == ["L[sugar,sugar]"]
    assert "On a bound: L[sugar,sugar]" in str(res.summary())


def test_a_cholesky_diagonal_at_zero_ends_the_fit_without_a_futile_restart(nevo):
    """The solver sees ``L_aa = η_a²`` and holds η_a near 0 like a parameter on its bound: with
    every entry plainly free, the scale-free gradient test reads the cosine in ``L_aa`` (large at
    an optimum on ``L_aa = 0``), so the fit restarted its scaling after converging and spent 8
    more evaluations reaching the same objective."""
    model = MixedLogit.from_formula("shares ~ prices + sugar + mushy", nevo,
                                    random=["prices", "sugar"])
    proc = model.procedure
    X, y, d, W, _, present = proc._prepare(Sample(model.X, model.y, model.columns,
                                                  model.response))
    ex = proc._extra(d.names)
    prob = _problem("MXL", W, y, ex, present)
    diag = ex["lrow"] == ex["lcol"]
    assert (prob.free[4:][diag] == ROOT).all() and (prob.free[4:][~diag] == 1).all()
    x0 = prob.encode(np.r_[proc._mnl(W, y, d.names, present).x, np.where(diag, 0.5, 0.0)])
    args = (prob.x_lo, prob.x_hi)
    held = prob.solver(x0, *args, prob.free, prob.data, 400, GTOL, XTOL, FTOL)
    plain = prob.solver(x0, *args, np.ones_like(prob.free), prob.data, 400, GTOL, XTOL, FTOL)
    assert held[3] in CONVERGED and plain[3] in CONVERGED
    assert held[1] == pytest.approx(plain[1], rel=1e-12)
    assert prob.decode(held[0])[-1] <= BOUND_RTOL            # L[sugar,sugar], held at 0
    assert held[2] <= plain[2] - 5


def test_mxl_box_in_the_solver_coordinates_maps_onto_the_parameter_box():
    """The compiled MXL solver works in η with ``L_aa = η_a²``: its box on η,
    ``[−√100, √100]``, decodes to the Cholesky diagonal's ``[0, 100]``, and every other entry
    keeps its box."""
    X = markets(3)
    fit, ex = mxl_fit(X, np.r_[BETA, L_FULL], nodes=8)
    prob = _problem("MXL", design(X)(X), fits(X)["MNL"].predict(X), ex)
    diag = np.r_[np.zeros(4, bool), ex["lrow"] == ex["lcol"]]
    np.testing.assert_array_equal(prob.decode(prob.x_hi), prob.hi)
    np.testing.assert_array_equal(prob.decode(prob.x_lo)[~diag], prob.lo[~diag])
    np.testing.assert_array_equal(prob.decode(prob.x_lo)[diag], 100.0)
    assert (prob.lo[diag] == 0).all() and (prob.hi[diag] == 100).all()


def test_shares_must_leave_the_outside_good_a_positive_share():
    X = markets(2, J=2)
    with pytest.raises(DataError, match="sum to less than 1"):
        MNL().fit(sample(X, np.array([[0.25, 0.25], [0.5, 0.5]])))


def test_mxl_shares_match_pyblp():
    """pyblp's random-coefficients shares at the same δ, Cholesky root and nodes."""
    import pyblp
    pyblp.options.verbose = False
    n, J = 3, 24
    X = markets(n, seed=7)
    mxl, ex = mxl_fit(X, np.r_[BETA, 0.6, 0.02, 0.05], random=["Intercept", "sugar"], nodes=32)
    ours = mxl.predict(X)
    delta = design(X)(X) @ BETA
    zf = np.concatenate([ex["z"], -ex["z"]])
    products = pd.DataFrame({"market_ids": np.repeat(np.arange(n), J),
                             "prices": X[:, :, 0].ravel(), "sugar": X[:, :, 1].ravel(),
                             "mushy": X[:, :, 2].ravel(), "shares": ours.ravel()})
    for k in range(4):
        products[f"demand_instruments{k}"] = np.random.default_rng(k).standard_normal(n * J)
    agents = pd.DataFrame({"market_ids": np.repeat(np.arange(n), len(zf)),
                           "weights": 1 / len(zf), "nodes0": np.tile(zf[:, 0], n),
                           "nodes1": np.tile(zf[:, 1], n)})
    problem = pyblp.Problem((pyblp.Formulation("1 + prices + sugar + mushy"),
                             pyblp.Formulation("1 + sugar")), products, agent_data=agents)
    sigma = np.array([[0.6, 0.0], [0.02, 0.05]])   # our L: utility shocks L z, Σ = LLᵀ
    results = problem.solve(sigma=sigma, optimization=pyblp.Optimization("return"),
                            method="1s")
    # pyblp inverts our shares back to our mean utilities ...
    np.testing.assert_allclose(results.delta.ravel(), delta.ravel(), atol=1e-9)
    # ... and its shares at our δ are ours
    theirs = results.compute_shares(delta=delta.reshape(-1, 1)).reshape(n, J)
    np.testing.assert_allclose(theirs, ours, rtol=1e-12)


def test_mxl_elasticities_in_blocks_equal_one_pass():
    X = markets(9, seed=8)
    mxl, _ = mxl_fit(X, np.r_[BETA, L_FULL])
    E = mxl.elasticities(X)
    from restrictiveness.demand import models

    np.testing.assert_allclose(models._mxl_elasticities(mxl.params, X, mxl.design, mxl.extra,
                                                        block=4), E, rtol=1e-13)


def test_nl_is_stable_at_the_largest_nesting_parameter():
    X = markets(4, seed=9)
    d = design(X)
    beta = np.array([5.0, -50.0, 0.5, 2.0])   # δ/(1−ρ) reaches several hundred at ρ = 0.99
    nl = DemandFit("NL", np.r_[beta, 0.99, 0.99], d.names + ["a", "b"], d, MARKET_COLUMNS,
                   extra={"nest": "mushy"})
    s = nl.predict(X)
    assert np.isfinite(s).all() and (s >= 0).all() and (s.sum(axis=1) < 1 + 1e-12).all()
    assert np.isfinite(nl.elasticities(X)).all()


def test_mixed_logit_estimator_summary(nevo):
    res = MixedLogit.from_formula("shares ~ prices + sugar + mushy", nevo, random=["sugar"],
                                  nodes=64, max_nfev=15).fit()
    assert list(res.params.index[-1:]) == ["L[sugar,sugar]"]
    resid = res.fitted.predict(res.model.X) - res.model.y
    assert res.ssr == pytest.approx(float((resid ** 2).sum()), rel=1e-10)
    # never worse than the MNL it nests (L = 0 stays a candidate)
    mnl = MNL.from_formula("shares ~ prices + sugar + mushy", nevo).fit()
    assert res.ssr <= mnl.ssr + 1e-10
    # here the fit keeps MNL's estimate: at L = 0 the antithetic nodes make L's Jacobian column
    # zero, so L is not identified and its standard error is NaN (with a warning), not 0
    assert res.fitted.info["start"] == "MNL (L = 0)" and res.params["L[sugar,sugar]"] == 0.0
    with pytest.warns(RuntimeWarning, match=r"\['L\[sugar,sugar\]'\] are not identified"):
        text = res.summary().as_text()
    assert np.isnan(res.bse["L[sugar,sugar]"])
    # β's standard errors are MNL's, with one more parameter in the residual degrees of freedom
    dof = np.sqrt((res.nobs - 4) / (res.nobs - 5))
    np.testing.assert_allclose(res.bse.iloc[:4], mnl.bse * dof, rtol=1e-6)
    assert "Mixed logit" in text and "64 antithetic Sobol nodes" in text


def test_mxl_keeps_the_mnl_fit_as_a_candidate():
    X = markets(10, seed=10)
    y = fits(X)["MNL"].predict(X)              # MNL data: any L > 0 fits worse
    fit = MixedLogit(random=["sugar"], nodes=64, max_nfev=2, budget="start").fit(sample(X, y),
                                                                              None)
    assert fit.info["start"] == "MNL (L = 0)"
    np.testing.assert_allclose(fit.params, np.r_[BETA, 0.0], rtol=1e-6, atol=1e-8)
    np.testing.assert_allclose(fit.predict(X), y, atol=1e-12)


def test_demand_helpers_refuse_inputs_they_cannot_use():
    import restrictiveness as rx

    frame = rx.datasets.load_cereal()
    # a DataFrame given to fit was an AttributeError ('no attribute X')
    with pytest.raises(DataError, match=r"MNL.fit takes a market Sample .*MNL.from_formula"):
        MNL().fit(frame)
    with pytest.raises(DataError, match=r"Logit.fit takes a market Sample .*got DataFrame"):
        Logit().fit(frame)
    # missing columns were a bare KeyError, None an AttributeError
    with pytest.raises(DataError, match=r"completeness: the data lack column\(s\) "
                                        r"\['market_ids'\]"):
        rx.demand.completeness(frame.drop(columns="market_ids"))
    with pytest.raises(DataError, match=r"lack column\(s\) \['sugar'\]"):
        rx.demand.market_sample(frame.drop(columns="sugar"))
    with pytest.raises(DataError, match="market_sample takes a DataFrame .*got NoneType"):
        rx.demand.market_sample(None)
    with pytest.raises(ConfigurationError, match="procedures must be a mapping"):
        rx.demand.study(procedures=[MNL()])
    with pytest.raises(DataError, match="demand estimation takes a DataFrame .*got NoneType"):
        MNL.from_formula("shares ~ prices", None)
    # a bare ValueError/TypeError, a numpy error at the first fit, bool("no") before
    with pytest.raises(ConfigurationError, match=r"nodes must be an even number .*got None"):
        MixedLogit(nodes=None)
    with pytest.raises(ConfigurationError, match="seed must be a whole number >= 0, got -1"):
        MixedLogit(seed=-1)
    with pytest.raises(ConfigurationError, match="reflect must be True or False, got 'no'"):
        MixedLogit(reflect="no")


def test_mixed_logit_refuses_random_terms_named_twice_or_none(nevo):
    # a term named twice fitted a two-dimensional coefficient on one column: three Cholesky
    # entries all labelled L[prices,prices], not identified apart, and reported as estimates
    with pytest.raises(ConfigurationError, match=r"random names \['prices'\] more than once"):
        MixedLogit(random=["prices", "sugar", "prices"])
    with pytest.raises(ConfigurationError, match=r"random names \['prices'\] more than once"):
        MixedLogit.from_formula("shares ~ prices + sugar", nevo, random=["prices", "prices"])
    # no term at all was refused only at the fit, as "random terms [] are not design columns"
    with pytest.raises(ConfigurationError, match="random must name at least one design column"):
        MixedLogit(random=[])
    assert MixedLogit(random="prices").random == ("prices",)


def test_a_study_refuses_demand_names_it_lacks_before_any_fit():
    # each used to fail every fit silently into the baseline (r̂ = 1, a warning)
    import restrictiveness as rx

    bad = {"MNL": (MNL("shares ~ price + sugar"), r"\['price'\]"),
           "NL": (NestedLogit(nest="mushi"), "nest column 'mushi'"),
           "MXL": (MixedLogit(random=["price"]), r"random terms \['price'\]")}
    for label, (model, message) in bad.items():
        with pytest.raises(FormulaError, match=message):
            rx.demand.study(procedures={label: model}, n=[10], replications=2)
    # the right names pass, and a formula with transforms leaves its random terms to the fit
    rx.demand.study(procedures={"NL": NestedLogit("shares ~ prices", nest="mushy"),
                                "MXL": MixedLogit(random=["prices", "Intercept"]),
                                "MXL2": MixedLogit("shares ~ np.log(prices)",
                                                   random=["np.log(prices)"])},
                    n=[10], replications=2)
