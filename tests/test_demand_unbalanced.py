"""Demand models on markets that list different numbers of products (pyblp-style product data):
estimates against an independent least-squares fit of the same objective, predictions and
elasticities against pyblp, standard errors against statsmodels, the padded kernels against
their NumPy twins and against each market fitted alone."""

from __future__ import annotations

import numpy as np
import pandas as pd
import pytest
import scipy.optimize

from restrictiveness.demand import _logit_nb as nb
from restrictiveness.demand import _nested_nb as nlnb
from restrictiveness.demand.models import (
    DEFAULT_FORMULA,
    MARKET_COLUMNS,
    MNL,
    DemandFit,
    Logit,
    MixedLogit,
    NestedLogit,
    _Design,
    _problem,
)
from restrictiveness.shared.exceptions import DataError
from restrictiveness.shared.sample import Sample

FORMULA = "shares ~ prices + sugar + mushy"


@pytest.fixture(scope="module")
def nevo():
    import pyblp
    return pd.read_csv(pyblp.data.NEVO_PRODUCTS_LOCATION)


@pytest.fixture(scope="module")
def dropped(nevo):
    """The cereal data with about a quarter of the products dropped at random in each market
    (markets of 12 to 23 products), rows in pyblp's order."""
    keep = np.random.default_rng(1).random(len(nevo)) > 0.25
    return nevo[keep].reset_index(drop=True)


def _long_shares(theta, df, nested):
    """Nested-logit inside shares on long data, written here from the formula (ρ = 0: MNL)."""
    W = np.c_[np.ones(len(df)), df[["prices", "sugar", "mushy"]].to_numpy()]
    beta, rho = (theta[:4], theta[4:]) if nested else (theta, np.zeros(2))
    g = df["mushy"].to_numpy().astype(int) if nested else np.zeros(len(df), int)
    market = pd.factorize(df["market_ids"])[0]
    lam = 1 - rho[g]
    eu = np.exp(W @ beta / lam)
    D = np.zeros((market.max() + 1, 2))
    np.add.at(D, (market, g), eu)
    inclusive = np.where(D > 0, D ** (1 - rho), 0.0).sum(axis=1)
    return eu * D[market, g] ** (-rho[g]) / (1 + inclusive[market])


def _reference_fit(df, nested):
    """scipy's trf from the Berry start, tolerances at 1e-15, finite-difference Jacobian."""
    W = np.c_[np.ones(len(df)), df[["prices", "sugar", "mushy"]].to_numpy()]
    s = df["shares"].to_numpy()
    s0 = 1 - df.groupby("market_ids")["shares"].transform("sum").to_numpy()
    berry = np.linalg.lstsq(W, np.log(s / s0), rcond=None)[0]
    x0 = np.r_[berry, 0.5, 0.5] if nested else berry
    lo = np.r_[np.full(4, -50.0), 0.0, 0.0][:len(x0)]
    hi = np.r_[np.full(4, 50.0), 0.99, 0.99][:len(x0)]
    r = scipy.optimize.least_squares(lambda t: _long_shares(t, df, nested) - s, x0,
                                     bounds=(lo, hi), method="trf", x_scale="jac",
                                     xtol=1e-15, ftol=1e-15, gtol=1e-15, jac="3-point")
    return r.x, 2 * r.cost


@pytest.mark.parametrize("cls", [MNL, NestedLogit])
def test_unbalanced_estimates_and_standard_errors_match_independent_computations(dropped, cls):
    # rx.demand refused these data ("every market must list the same number of products")
    import statsmodels.api as sm

    nested = cls is NestedLogit
    model = cls.from_formula(FORMULA, dropped)
    res = model.fit()
    assert res.nobs == len(dropped) and res.converged
    ref, ssr = _reference_fit(dropped, nested)
    assert res.ssr <= ssr * (1 + 1e-9)
    np.testing.assert_allclose(res.params, ref, rtol=2e-5, atol=1e-7)
    theta = res.params.to_numpy()
    s = dropped["shares"].to_numpy()
    np.testing.assert_allclose(res.fittedvalues, _long_shares(theta, dropped, nested),
                               rtol=1e-12)
    # standard errors: the linearised model on a finite-difference Jacobian of the shares
    e = s - _long_shares(theta, dropped, nested)
    step = 1e-6 * np.maximum(1, np.abs(theta))
    Jfd = np.column_stack([(_long_shares(theta + h, dropped, nested)
                            - _long_shares(theta - h, dropped, nested)) / (2 * h[p])
                           for p, h in enumerate(np.diag(step))])
    N, k = Jfd.shape
    codes = pd.factorize(dropped["market_ids"])[0]
    bread = np.linalg.inv(Jfd.T @ Jfd)
    scores = np.zeros((94, k))
    np.add.at(scores, codes, Jfd * e[:, None])
    hand = {"nonrobust": e @ e / (N - k) * bread,
            "HC1": N / (N - k) * bread @ (Jfd * e[:, None] ** 2).T @ Jfd @ bread,
            "cluster": 94 / 93 * (N - 1) / (N - k) * bread @ scores.T @ scores @ bread}
    for cov, V in hand.items():
        got = model.fit(cov_type=cov, groups="market_ids" if cov == "cluster" else None)
        np.testing.assert_allclose(got.bse, np.sqrt(np.diag(V)), rtol=1e-5)
    if not nested:
        # interior optimum (Jᵀe = 0): statsmodels' OLS of the residuals on the Jacobian agrees
        ols = sm.OLS(e, Jfd)
        np.testing.assert_allclose(res.bse, ols.fit().bse, rtol=1e-5)
        np.testing.assert_allclose(model.fit(cov_type="HC1").bse, ols.fit(cov_type="HC1").bse,
                                   rtol=1e-5)
        np.testing.assert_allclose(model.fit(cov_type="cluster", groups="market_ids").bse,
                                   ols.fit(cov_type="cluster", cov_kwds={"groups": codes}).bse,
                                   rtol=1e-5)
    else:
        assert res.at_bound == ["rho[mushy=0]"]     # where Jᵀe ≠ 0 and OLS would differ
    cl = model.fit(cov_type="cluster", groups="market_ids")
    assert cl.n_clusters == 94
    assert "Products per market:" in str(res.summary()) and "12 to 23" in str(res.summary())


def _products(df, nested):
    """pyblp's product data: a firm per product; nests by ``mushy`` for the nested logit."""
    products = df[["market_ids", "prices", "sugar", "mushy"]].assign(firm_ids=np.arange(len(df)))
    return products.assign(nesting_ids=df["mushy"].astype(int)) if nested else products


@pytest.mark.parametrize("cls", [MNL, NestedLogit])
def test_unbalanced_predictions_and_elasticities_match_pyblp(dropped, cls):
    # pyblp at our estimate, in its layout: a row per product, column k the k-th product of
    # the row's market, NaN past a smaller market's products
    import pyblp

    pyblp.options.verbose = False
    res = cls.from_formula(FORMULA, dropped).fit()
    theta = res.params.to_numpy()
    sim = pyblp.Simulation(pyblp.Formulation("1 + prices + sugar + mushy"),
                           _products(dropped, cls is NestedLogit), beta=theta[:4],
                           rho=theta[4:] if cls is NestedLogit else None,
                           xi=np.zeros(len(dropped)))
    theirs = sim.replace_endogenous(costs=np.zeros(len(dropped)),
                                    prices=dropped["prices"].to_numpy(),
                                    iteration=pyblp.Iteration("return"))
    np.testing.assert_allclose(res.predict(), theirs.product_data.shares.ravel(), rtol=1e-12)
    E, Ep = res.elasticities().to_numpy(), theirs.compute_elasticities()
    assert E.shape == Ep.shape == (len(dropped), 23)
    np.testing.assert_array_equal(np.isnan(E), np.isnan(Ep))
    np.testing.assert_allclose(E, Ep, rtol=1e-12, atol=1e-14)


def test_noise_free_unbalanced_shares_give_back_their_parameters(dropped):
    # shares pyblp computes at known parameters on the unbalanced markets: our least squares
    # and pyblp's logit (linear in log(s_j / s_0)) both recover them
    import pyblp

    pyblp.options.verbose = False
    beta = [-2.0, -9.0, 0.04, 0.1]
    for rho in (None, [0.3, 0.6]):
        products = _products(dropped, rho is not None)
        sim = pyblp.Simulation(pyblp.Formulation("1 + prices + sugar + mushy"), products,
                               beta=beta, rho=rho, xi=np.zeros(len(dropped)))
        shares = sim.replace_endogenous(costs=np.zeros(len(dropped)),
                                        prices=dropped["prices"].to_numpy(),
                                        iteration=pyblp.Iteration("return")
                                        ).product_data.shares.ravel()
        data = dropped.assign(shares=shares)
        cls = NestedLogit if rho else MNL
        res = cls.from_formula(FORMULA, data).fit()
        np.testing.assert_allclose(res.params, np.r_[beta, rho or []], rtol=1e-6, atol=1e-8)
    pb = pyblp.Problem(pyblp.Formulation("1 + prices + sugar + mushy"),
                       products.assign(shares=shares, demand_instruments0=dropped["prices"]))
    # the last simulation was the nested one: pyblp's nested logit, rho fixed at the truth
    fixed = pb.solve(rho=[0.3, 0.6], rho_bounds=([0.3, 0.6], [0.3, 0.6]), method="1s")
    np.testing.assert_allclose(fixed.beta.ravel(), beta, rtol=1e-8)


def test_mixed_logit_on_unbalanced_markets_matches_pyblp(dropped):
    """pyblp's random-coefficients shares and elasticities at the same δ, Cholesky root and
    nodes, on the unbalanced cereal markets; the estimate converges."""
    import pyblp

    pyblp.options.verbose = False
    proc = MixedLogit(FORMULA, random=["Intercept", "sugar"], nodes=32)
    res = proc.from_formula(FORMULA, dropped, random=["Intercept", "sugar"], nodes=32).fit()
    assert res.converged and res.nobs == len(dropped)
    theta = np.r_[res.params.to_numpy()[:4], 0.6, 0.02, 0.05]
    fit = DemandFit("MXL", theta, res.fitted.names, res.fitted.design, res.fitted.columns,
                    extra=res.fitted.extra)
    X = res.model.X
    ours = fit.predict(X)
    present = ~np.isnan(X[:, :, 0])
    products = dropped[["market_ids", "prices", "sugar", "mushy"]].copy()
    order = products.sort_values("market_ids", kind="stable").index
    products = products.loc[order].reset_index(drop=True)
    products["shares"] = ours[present]
    for k in range(4):
        products[f"demand_instruments{k}"] = np.random.default_rng(k).standard_normal(
            len(products))
    zf = np.concatenate([fit.extra["z"], -fit.extra["z"]])
    ids = np.unique(products["market_ids"])
    agents = pd.DataFrame({"market_ids": np.repeat(ids, len(zf)), "weights": 1 / len(zf),
                           "nodes0": np.tile(zf[:, 0], len(ids)),
                           "nodes1": np.tile(zf[:, 1], len(ids))})
    problem = pyblp.Problem((pyblp.Formulation("1 + prices + sugar + mushy"),
                             pyblp.Formulation("1 + sugar")), products, agent_data=agents)
    results = problem.solve(sigma=np.array([[0.6, 0.0], [0.02, 0.05]]),
                            optimization=pyblp.Optimization("return"), method="1s")
    delta = res.fitted.design(X) @ theta[:4]
    np.testing.assert_allclose(results.delta.ravel(), delta[present], atol=1e-9)
    np.testing.assert_allclose(results.compute_shares(delta=delta[present].reshape(-1, 1)).ravel(),
                               ours[present], rtol=1e-11)
    E = fit.elasticities(X)
    Ep = results.compute_elasticities()
    sizes = present.sum(axis=1)
    ours_long = np.full((len(products), 23), np.nan)
    ours_long[:] = E[present][:, :23]
    np.testing.assert_array_equal(np.isnan(ours_long), np.isnan(Ep))
    np.testing.assert_allclose(ours_long, Ep, rtol=1e-9, atol=1e-12)
    assert sizes.min() == 12


def _padded(seed=0, n=6, J=7):
    """Markets of 7 products, the later ones with fewer (rows of NaN after them)."""
    rng = np.random.default_rng(seed)
    X = np.stack([rng.uniform(0.05, 0.2, (n, J)), rng.uniform(0, 20, (n, J)),
                  rng.integers(0, 2, (n, J)).astype(float)], axis=2)
    sizes = np.array([J, J - 1, 3, 1, J, 2])[:n]
    for m, k in enumerate(sizes):
        X[m, k:] = np.nan
    return X, sizes


def test_padded_markets_predict_as_each_market_alone():
    X, sizes = _padded()
    d = _Design(DEFAULT_FORMULA, X, MARKET_COLUMNS)
    proc = MixedLogit(nodes=16)
    ex = proc._extra(d.names)
    L = np.array([0.5, 0.2, 1.0, 0.0, 0.01, 0.04, 0.1, 0.0, 0.02, 0.4])
    beta = np.array([-1.0, -10.0, 0.05, 0.3])
    fits = [DemandFit("MNL", beta, d.names, d, MARKET_COLUMNS),
            DemandFit("NL", np.r_[beta, 0.3, 0.6], d.names + ["r0", "r1"], d, MARKET_COLUMNS,
                      extra={"nest": "mushy"}),
            DemandFit("MXL", np.r_[beta, L], proc.parameter_names(d.names), d, MARKET_COLUMNS,
                      extra={k: ex[k] for k in ("K", "ridx", "lrow", "lcol", "z")})]
    for fit in fits:
        s, E = fit.predict(X), fit.elasticities(X)
        for m, k in enumerate(sizes):
            alone = X[m:m + 1, :k]
            np.testing.assert_allclose(s[m, :k], fit.predict(alone)[0], rtol=1e-13)
            assert (s[m, k:] == 0).all()
            np.testing.assert_allclose(E[m, :k, :k], fit.elasticities(alone)[0], rtol=1e-12,
                                       atol=1e-14)
            assert np.isnan(E[m, k:]).all() and np.isnan(E[m, :, k:]).all()


def test_padded_kernels_match_their_numpy_twins_and_zero_the_absent_rows():
    X, sizes = _padded(3)
    d = _Design(DEFAULT_FORMULA, X, MARKET_COLUMNS)
    W = d(X)
    present = ~np.isnan(X[:, :, 0])
    y = np.where(present, 0.04, 0.0)
    # nested logit (and MNL, one nest): g = −1 marks the absent products
    g = np.where(present, np.nan_to_num(X[:, :, 2]), -1).astype(np.int64)
    theta = np.array([-1.0, -10.0, 0.05, 0.3, 0.3, 0.6])
    r, jac = nlnb.nl_resjac(theta, (W, g, y))
    r2, jac2 = nlnb.nl_resjac_numpy(theta, (W, g, y))
    np.testing.assert_allclose(r, r2, rtol=1e-12, atol=1e-16)
    np.testing.assert_allclose(jac, jac2, rtol=1e-11, atol=1e-15)
    assert (r[~present.ravel()] == 0).all() and (jac[~present.ravel()] == 0).all()
    # mixed logit: every kernel and its twin, with the products counted per market
    proc = MixedLogit(nodes=16)
    ex = proc._extra(d.names)
    prob = _problem("MXL", W, y, ex, present)
    th = np.r_[theta[:4], np.linspace(0.1, 1.0, 10)]
    a, b = nb.mxl_resjac(th, prob.data), nb.mxl_resjac_numpy(th, prob.data)
    np.testing.assert_allclose(a[0], b[0], rtol=1e-11, atol=1e-16)
    np.testing.assert_allclose(a[1], b[1], rtol=1e-9, atol=1e-14)
    assert (a[0][~present.ravel()] == 0).all() and (a[1][~present.ravel()] == 0).all()
    a2, b2 = nb.mxl_resjac_second(th, prob.data), nb.mxl_resjac_second_numpy(th, prob.data)
    np.testing.assert_allclose(a2[0], a[0], rtol=1e-11, atol=1e-16)
    np.testing.assert_allclose(a2[1], a[1], rtol=1e-9, atol=1e-14)
    np.testing.assert_allclose(a2[2], b2[2], rtol=1e-9, atol=1e-12 * np.abs(b2[2]).max())
    delta = W @ th[:4]
    nu = ex["z"] @ np.tril(np.ones((4, 4)) * 0.3).T
    ridx = ex["ridx"]
    np.testing.assert_allclose(nb.mxl_shares(delta, W, ridx, nu, sizes),
                               nb.mxl_shares_numpy(delta, W, ridx, nu, sizes), rtol=1e-11)
    S, s = nb.mxl_probabilities(delta, W, ridx, nu, sizes)
    assert (S[~present] == 0).all() and (s[~present] == 0).all()
    sh, jc = nb.mxl_jacobian(delta, W, ridx, nu, ex["z"], ex["lrow"], ex["lcol"], sizes)
    sh2, jc2 = nb.mxl_jacobian_numpy(delta, W, ridx, nu, ex["z"], ex["lrow"], ex["lcol"], sizes)
    np.testing.assert_allclose(sh, sh2, rtol=1e-11)
    np.testing.assert_allclose(jc, jc2, rtol=1e-9, atol=1e-14)


@pytest.mark.parametrize("proc", [MNL(), NestedLogit(), MixedLogit(random=["prices"],
                                                                   nodes=16)])
def test_padding_every_market_changes_no_fit(proc):
    # the same markets with two absent rows appended to each fit to the same estimate, to the
    # solver's stopping precision: the two fits' sums run over 7 and 9 rows (other BLAS blocks),
    # so their paths differ by rounding (1.1e-9 relative in an intercept since the LM retries a
    # failed secant step as Gauss-Newton); a padding row counted would move them by far more.
    # MXL's optimum here is L = 0, a stationary point (antithetic nodes) where the objective is
    # quadratic in L: an objective converged to ftol = 1e-10 places L only to about 1e-6 (the
    # padded fit stops at L = 7e-7, the same objective to 2e-16)
    rng = np.random.default_rng(5)
    X = np.stack([rng.uniform(0.05, 0.2, (20, 7)), rng.uniform(0, 20, (20, 7)),
                  rng.integers(0, 2, (20, 7)).astype(float)], axis=2)
    d = _Design(DEFAULT_FORMULA, X, MARKET_COLUMNS)
    e = np.exp(d(X) @ [-1.0, -10.0, 0.05, 0.3])
    y = e / (1 + e.sum(axis=1, keepdims=True)) * np.exp(
        np.random.default_rng(0).normal(0, 0.1, e.shape))
    Xp = np.concatenate([X, np.full((20, 2, 3), np.nan)], axis=1)
    yp = np.concatenate([y, np.zeros((20, 2))], axis=1)
    a = proc.fit(Sample(X, y, MARKET_COLUMNS, "shares"))
    b = proc.fit(Sample(Xp, yp, MARKET_COLUMNS, "shares"))
    assert b.info["cost"] == pytest.approx(a.info["cost"], rel=1e-13)
    chol = 4 if proc.model == "MXL" else len(a.params)        # MXL's L after β
    np.testing.assert_allclose(b.params[:chol], a.params[:chol], rtol=1e-8, atol=1e-12)
    np.testing.assert_allclose(b.params[chol:], a.params[chol:], atol=1e-6)
    np.testing.assert_allclose(b.predict(Xp)[:, :7], a.predict(X), rtol=1e-8)


def test_padded_markets_that_cannot_be_read_are_refused():
    X, _ = _padded()
    y = np.where(np.isnan(X[:, :, 0]), 0.0, 0.05)
    bad = X.copy()
    bad[0, 2, 1] = np.nan              # one characteristic missing: not an absent product
    with pytest.raises(DataError, match="NaN or infinite characteristics"):
        MNL().fit(Sample(bad, y, MARKET_COLUMNS, "shares"))
    early = X.copy()
    early[0, 1] = np.nan               # an absent row before present ones
    with pytest.raises(DataError, match=r"must come after its products; markets \[0\]"):
        MNL().fit(Sample(early, np.where(np.isnan(early[:, :, 0]), 0, y), MARKET_COLUMNS,
                         "shares"))
    empty = X.copy()
    empty[2] = np.nan
    with pytest.raises(DataError, match=r"markets \[2\] list no product"):
        MNL().fit(Sample(empty, np.where(np.isnan(empty[:, :, 0]), 0, y), MARKET_COLUMNS,
                         "shares"))
    with pytest.raises(DataError, match="absent from its market .* must be 0"):
        MNL().fit(Sample(X, np.full(y.shape, 0.05), MARKET_COLUMNS, "shares"))
    with pytest.raises(DataError, match="Logit is the common-intercept baseline"):
        Logit().fit(Sample(X, y, MARKET_COLUMNS, "shares"))
