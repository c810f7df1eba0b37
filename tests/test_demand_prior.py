"""Tests of the demand application's data, market distribution, random-utility prior and
elasticity discrepancies (SPEC §7)."""

from __future__ import annotations

import numpy as np
import pytest
import threadpoolctl
from scipy import stats

import restrictiveness.demand.prior as prior_module
from restrictiveness.datasets.cereal import load_cereal
from restrictiveness.demand._shares_nb import (
    _field_numpy,
    _node_rows,
    _subtract_integral,
    shares_nb,
    shares_numpy,
)
from restrictiveness.demand.elasticities import (
    CrossElasticityMSE,
    OwnElasticityMSE,
    SharesMSE,
    rule_elasticities,
)
from restrictiveness.demand.markets import (
    ConvexPolygon,
    MarketDistribution,
    elasticities_from_shares,
    perturbed_markets,
)
from restrictiveness.demand.prior import DemandPrior, DemandSystem, _grid_field
from restrictiveness.eligible.kernels import Matern32
from restrictiveness.eligible.truth import PseudoTruth
from restrictiveness.shared.exceptions import ConfigurationError, DataError, DomainError


@pytest.fixture(scope="module")
def market():
    return MarketDistribution()


@pytest.fixture(scope="module")
def prior(market):
    # Fewer consumer types than the paper's 512 keeps the tests fast; everything else is SPEC §7.
    return DemandPrior(market, n_types=64, n_eval=4, n_train=20)


@pytest.fixture(scope="module")
def truth(prior):
    return prior.draw([10, 20], np.random.default_rng(7))


# --- data ----------------------------------------------------------------------------------------

def test_cereal_data_shape_and_peer_copy():
    df = load_cereal()
    counts = (df.market_ids.nunique(), df.city_ids.nunique(), df.product_ids.nunique())
    assert counts == (94, 47, 24)
    assert len(df) == 2256
    import pandas as pd
    import pyblp

    ref = pd.read_csv(pyblp.data.NEVO_PRODUCTS_LOCATION)
    for col in ("shares", "prices", "sugar", "mushy"):
        np.testing.assert_array_equal(df[col].to_numpy(), ref[col].to_numpy(dtype=float))


def test_calibration_length_scale_statistics(market):
    # SPEC §7: median nonzero within-product price change 0.643, median sugar change 1.209.
    df = load_cereal()
    zp, zs = market.standardize(df[["prices", "sugar", "mushy"]].to_numpy())
    changes = []
    for pid in df.product_ids.unique():
        v = zp[(df.product_ids == pid).to_numpy()]
        changes.append(np.abs(v[:, None] - v[None, :])[np.triu_indices(len(v), 1)])
    changes = np.concatenate(changes)
    assert np.median(changes[changes > 0]) == pytest.approx(0.643, abs=5e-4)
    sugar = np.array([zs[(df.product_ids == p).to_numpy()][0] for p in df.product_ids.unique()])
    d = np.abs(sugar[:, None] - sugar[None, :])[np.triu_indices(24, 1)]
    assert np.median(d[d > 0]) == pytest.approx(1.209, abs=1e-3)


# --- market distribution -------------------------------------------------------------------------

def test_triangle_sampling_is_uniform():
    tri = ConvexPolygon(np.array([[0.0, 0.0], [2.0, 0.0], [0.0, 1.0], [0.5, 0.25]]))
    assert tri.area == pytest.approx(1.0)
    xy = tri.sample(20000, np.random.default_rng(3))
    # Barycentric coordinates of a uniform point: the weight of vertex (0, 0) is Beta(2, 1)
    # on [0, 1] reversed, i.e. 1 - w0 has CDF x^2; x/2 marginal has CDF 1 - (1 - x)^2.
    w0 = 1.0 - xy[:, 0] / 2.0 - xy[:, 1]
    assert stats.kstest(1.0 - w0, lambda x: x**2).pvalue > 1e-3
    assert stats.kstest(xy[:, 0] / 2.0, lambda x: 1 - (1 - x) ** 2).pvalue > 1e-3


def test_polygon_sampling_chi_square_on_grid():
    # A square split into two triangles: counts on a 5 x 5 grid are uniform.
    square = ConvexPolygon(np.array([[0.0, 0.0], [1.0, 0.0], [1.0, 1.0], [0.0, 1.0]]))
    xy = square.sample(25000, np.random.default_rng(4))
    counts, _, _ = np.histogram2d(xy[:, 0], xy[:, 1], bins=5, range=[[0, 1], [0, 1]])
    assert stats.chisquare(counts.ravel()).pvalue > 1e-3


def test_markets_inside_hull_and_mushy_share(market):
    X = market.sample(200, np.random.default_rng(5))
    assert X.shape == (200, 24, 3)
    for status in (0, 1):
        sel = X[..., 2] == status
        assert market.hulls[status].contains(X[sel][:, :2], tol=1e-12).all()
    k = int((X[..., 2] == 1).sum())
    assert stats.binomtest(k, X[..., 2].size, 1 / 3).pvalue > 1e-3
    # nested: the first markets of a longer draw are the shorter draw
    np.testing.assert_array_equal(market.sample(3, np.random.default_rng(1)),
                                  market.sample(5, np.random.default_rng(1))[:3])


def test_price_interval_endpoints_on_hull_boundary(market):
    rng = np.random.default_rng(6)
    for status in (0, 1):
        hull = market.hulls[status]
        s = rng.uniform(hull.vertices[:, 1].min(), hull.vertices[:, 1].max(), 50)
        lo, hi = market.price_interval(s, np.full(50, float(status)))
        for p in (lo, hi):
            slack = np.c_[p, s] @ hull.equations[:, :2].T + hull.equations[:, 2]
            np.testing.assert_allclose(slack.max(axis=1), 0.0, atol=1e-12)
        # brute force: prices on a fine grid are in the hull exactly inside [lo, hi]
        grid = np.linspace(0.03, 0.25, 2001)
        for si, li, ui in zip(s[:10], lo[:10], hi[:10], strict=True):
            inside = hull.contains(np.c_[grid, np.full_like(grid, si)], tol=0.0)
            np.testing.assert_array_equal(inside, (grid >= li) & (grid <= ui))


def test_log_price_steps_keep_prices_in_hull(market):
    X = market.sample(20, np.random.default_rng(8))
    h = market.log_price_steps(X)
    assert (h > 0).all() and (h <= 0.01).all()
    P = perturbed_markets(X, h)
    for status in (0, 1):
        pts = P[..., 2] == status
        assert market.hulls[status].contains(P[pts][:, :2], tol=1e-12).all()
    with pytest.raises(DomainError, match="inside the hull"):
        market.log_price_steps(X * np.array([10.0, 1.0, 1.0]))
    # a price on the hull's edge has no two-sided step (h = 0 gave NaN elasticities)
    lo, hi = market.price_interval(X[..., 1], X[..., 2])
    for edge in (lo, hi):
        Xe = X.copy()
        Xe[3, 5, 0] = edge[3, 5]
        with pytest.raises(DomainError, match="boundary"):
            market.log_price_steps(Xe)


def test_market_and_prior_sizes_must_be_whole_numbers(market, prior):
    # int() took 2.5 markets as 2, a sample size of 2.5 as 2 and 1.5 draws as 1, silently
    rng = np.random.default_rng(0)
    for bad in (2.5, None, "3", True):
        with pytest.raises(DomainError, match=f"n_markets must be a nonnegative whole number, "
                                              f"got {bad!r}"):
            market.sample(bad, rng)
    assert market.sample(np.int64(2), rng).shape == market.sample(2.0, rng).shape == (2, 24, 3)
    with pytest.raises(ConfigurationError, match=r"ns must be positive whole sample sizes, "
                                                 r"got \[10, 2.5\]"):
        prior.draw([10, 2.5], rng)
    with pytest.raises(ConfigurationError, match="draws must be a whole number >= 1, got 1.5"):
        prior.draw([10], rng, draws=1.5)
    truth = prior.draw([np.int64(5), 10.0], rng, draws=2)
    assert [len(X) for X in truth.train_locations] == [20, 20]
    with pytest.raises(ConfigurationError,
                       match=r"must be a MarketDistribution \(the calibrated P_X\), got str"):
        DemandPrior(market="cereal")


def test_prior_shape_options_are_numbers_or_refused_by_name(market):
    # lengthscales="abc" was a bare TypeError and mushy_correlation="0.5" was read as 0.5
    small = {"n_types": 16, "n_reference_types": 16}
    for bad in ("abc", None, (0.66, 1.25), (0.66, float("nan"), 1.0), (0.66, "1.25", 1.0)):
        with pytest.raises(ConfigurationError, match=r"lengthscales must be three positive "
                                                     r"numbers \(price, sugar, consumer type\)"):
            DemandPrior(market, lengthscales=bad, **small)
    for bad in ("0.5", True, 1.0, float("nan")):
        with pytest.raises(ConfigurationError, match=r"mushy_correlation must be a number in "
                                                     r"\(-1, 1\), got"):
            DemandPrior(market, mushy_correlation=bad, **small)
    prior = DemandPrior(market, lengthscales=np.array([0.5, 1.0, 2.0]),
                        mushy_correlation=np.float64(-0.25), **small)
    assert prior.lengthscales == (0.5, 1.0, 2.0) and prior.mushy_correlation == -0.25


def test_a_checkpoint_on_other_calibration_data_is_not_resumed(tmp_path):
    # MarketDistribution's repr named n_products and p_mushy only, so a study on other
    # calibration data (here prices in cents) resumed a checkpoint of the shipped data's and
    # mixed replications of two demand distributions without a word
    import restrictiveness as rx

    cents = load_cereal()
    cents["prices"] *= 100
    shuffled = load_cereal().sample(frac=1, random_state=0)
    assert repr(MarketDistribution(shuffled)) == repr(MarketDistribution()) == (
        "MarketDistribution(n_products=24, p_mushy=0.3333333333333333)")
    assert repr(MarketDistribution(cents)).startswith(
        "MarketDistribution(data=<2256 rows, sha256 ")

    def study(market):
        prior = DemandPrior(market, n_types=16, n_reference_types=16, n_eval=2, n_train=5)
        return rx.demand.study({"MNL": rx.demand.MNL()}, n=[5], replications=2, prior=prior)

    study(MarketDistribution()).run(progress=False, checkpoint=tmp_path / "ck")
    with pytest.raises(rx.CheckpointError, match=r"evaluation: .* in the checkpoint, "
                                                 r".*data=<2256 rows, sha256 "):
        study(MarketDistribution(cents)).run(progress=False, checkpoint=tmp_path / "ck")
    study(MarketDistribution(shuffled)).run(progress=False, checkpoint=tmp_path / "ck")


def test_rule_elasticities_refuse_steps_that_cannot_difference():
    # a zero step (a price on its hull's edge, bypassing log_price_steps) gave NaN elasticities
    class Logit:   # utility −2 p: E_jj = −2 p_j (1 − s_j), E_jk = 2 p_k s_k
        def predict(self, X):
            e = np.exp(-2 * X[..., 0])
            return e / (1 + e.sum(axis=-1, keepdims=True))

    X = np.array([[[1.0, 0.0, 0.0], [2.0, 0.0, 0.0]]])
    for h in ([[0.01, 0.0]], [[np.nan, 0.01]], [[0.01, 0.01, 0.01]]):
        with pytest.raises(DomainError, match="h must hold positive finite log-price steps"):
            rule_elasticities(Logit(), X, np.array(h))
    s = Logit().predict(X)[0]
    E = rule_elasticities(Logit(), X, np.full((1, 2), 1e-5))[0]
    np.testing.assert_allclose(E, [[-2 * (1 - s[0]), 2 * 2 * s[1]], [2 * s[0], -4 * (1 - s[1])]],
                               rtol=1e-8)


def test_a_missing_price_or_sugar_is_named_not_put_on_the_hull_boundary(market):
    X = market.sample(2, np.random.default_rng(0))
    for column in (0, 1):
        Xn = X.copy()
        Xn[1, 4, column] = np.nan
        with pytest.raises(DomainError, match="missing or infinite values"):
            market.log_price_steps(Xn)


def test_market_errors_name_the_argument(market, truth):
    with pytest.raises(DomainError, match="same shape"):
        market.price_interval([1.0, 2.0], [0.0])
    with pytest.raises(DomainError, match="mushy"):
        market.price_interval([1.0], [0.5])
    with pytest.raises(DomainError, match="n_markets must be a nonnegative whole number, got -1"):
        market.sample(-1, np.random.default_rng(0))
    with pytest.raises(DomainError, match=r"shape \(n, 24, 3\)"):
        truth.system.shares(np.ones((2, 23, 3)))
    with pytest.raises(DomainError, match="h must be finite"):
        truth.system.perturbed_shares(truth.eval_X, np.ones(3))


def test_market_distribution_refuses_calibrations_and_options_it_cannot_honour():
    cereal = load_cereal()
    # prices that are not positive: elasticities are differences in log price, and such
    # markets failed only once a study ran (a BaselineError from log_price_steps)
    for prices in (cereal["prices"] - 0.1, cereal["prices"].where(cereal.index != 0, 0.0)):
        with pytest.raises(DataError, match="prices must be positive"):
            MarketDistribution(cereal.assign(prices=prices))
    # text prices were parsed as numbers
    with pytest.raises(DataError, match="column 'prices' is not numeric"):
        MarketDistribution(cereal.assign(prices=cereal["prices"].astype(str)))
    # n_products = 2.5 drew markets of 2 products, and the string "0.5" was a probability
    with pytest.raises(ConfigurationError, match="n_products must be a whole number >= 1, "
                                                 "got 2.5"):
        MarketDistribution(n_products=2.5)
    with pytest.raises(ConfigurationError, match="p_mushy must lie in \\(0, 1\\), got '0.5'"):
        MarketDistribution(p_mushy="0.5")
    # an array was an AttributeError; a flat hull scipy's multi-line QhullError; a missing
    # mushy status a message about point shapes
    with pytest.raises(DataError, match="must be a DataFrame"):
        MarketDistribution(cereal[["prices", "sugar", "mushy"]].to_numpy())
    with pytest.raises(DomainError, match="collinear"):
        MarketDistribution(cereal.assign(sugar=1.0))
    with pytest.raises(DataError, match="fewer than 3 products with mushy = 1"):
        MarketDistribution(cereal[cereal["mushy"] == 0])
    assert MarketDistribution(n_products=24.0).n_products == 24


# --- kernel ---------------------------------------------------------------------------------------

def test_kernel_matches_numpy_twin(prior, truth):
    system = truth.system
    X = truth.eval_X[:2]
    zp, zs = prior.market.standardize(X)
    m = np.ascontiguousarray(X[..., 2])
    h = prior.market.log_price_steps(X)
    z_lo = (X[..., 0] * np.exp(-h) - prior.market.price_mean) / prior.market.price_sd
    z_hi = (X[..., 0] * np.exp(h) - prior.market.price_mean) / prior.market.price_sd
    scal = system.scal - np.array([np.log(24), 0, 0])
    args = (zp, zs, m, z_lo, z_hi, system.fields, scal, system.nu_half, system.gx, system.gw,
            system.sx, system.sw, True)
    b1, p1 = shares_nb(*args)
    b2, p2 = shares_numpy(*args)
    np.testing.assert_allclose(b1, b2, rtol=1e-12)
    np.testing.assert_allclose(p1, p2, rtol=1e-12)
    # and the elasticities built from them (steps as small as 1e-4 amplify differences)
    E1 = elasticities_from_shares(p1[:, 0], p1[:, 1], h)
    E2 = elasticities_from_shares(p2[:, 0], p2[:, 1], h)
    np.testing.assert_allclose(E1, E2, rtol=1e-8, atol=1e-10)


def test_kernel_matches_twin_with_odd_rules_and_partial_blocks(market):
    # 7 and 3 nodes: a middle node without a mirror, and 64-row blocks that split the products
    # (9 per block) and the perturbations (21 per block) with a shorter last block.
    prior = DemandPrior(market, n_types=16, n_nodes=7, n_short_nodes=3, n_eval=2, n_train=2)
    truth = prior.draw([2], np.random.default_rng(5))
    twin = DemandPrior(market, n_types=16, n_nodes=7, n_short_nodes=3,
                       engine="numpy").draw_system(np.random.default_rng(0))
    twin.fields, twin.scal = truth.system.fields, truth.system.scal
    X, h = truth.eval_X, truth.log_price_steps
    for a, b in zip(truth.system.perturbed_shares(X, h), twin.perturbed_shares(X, h),
                    strict=True):
        np.testing.assert_allclose(a, b, rtol=1e-12)


def test_perturbed_path_matches_full_recomputation(truth):
    # The split integral ∫_0^z + ∫_z^z' must agree with a fresh 64-node integral to ∫_0^z'.
    X = truth.eval_X[:2]
    h = truth.market.log_price_steps(X)
    base, minus, plus = truth.system.perturbed_shares(X, h)
    P = perturbed_markets(X, h)
    full = truth.system.shares(P.reshape(-1, 24, 3)).reshape(2, 2, 24, 24)
    np.testing.assert_allclose(minus, full[:, 0], rtol=1e-11)
    np.testing.assert_allclose(plus, full[:, 1], rtol=1e-11)
    np.testing.assert_allclose(base, truth.system.shares(X), rtol=1e-14)


def test_demand_system_rejects_nodes_that_are_not_pairs(prior, truth):
    sys_ = truth.system
    x, w = np.polynomial.legendre.leggauss(8)
    with pytest.raises(ConfigurationError, match="short_nodes must be antisymmetric"):
        DemandSystem(sys_.fields, sys_.scal, prior.market, sys_.nu, (sys_.gx, sys_.gw),
                     (x + 1e-3, w))


def test_node_rows_match_the_fields_at_every_node(truth):
    # Angle addition over the node pairs ±x (and the middle node of an odd rule) against the
    # fields evaluated at each node from the definition.
    fields = truth.system.fields
    P = np.ascontiguousarray(fields.transpose(0, 2, 1))
    D = fields.shape[1]
    for Q in (64, 7):
        x = np.polynomial.legendre.leggauss(Q)[0]
        for mid, half, s, m in ((0.4, 0.4, -0.3, 0), (-1.2, -2e-4, 1.1, 1)):
            left_c, left_s, const = np.zeros((Q + 2, D)), np.zeros((Q + 2, D)), np.zeros(Q + 2)
            _node_rows(P, mid, half, s, m, x, left_c, left_s, const, 2, np.empty((4, D)),
                       np.empty(D), np.empty(D))
            v = mid + half * x
            alpha = v[:, None] * fields[3, :, 0] + s * fields[3, :, 1] + fields[3, :, 6]
            w = fields[3, :, 7 + m]
            # a few ulps of the argument (computed as A ± B here, as v·ω_v + ... there)
            tol = 4e-16 * np.abs(w).max() * (1 + np.abs(alpha).max())
            np.testing.assert_allclose(left_c[2:], w * np.cos(alpha), rtol=0, atol=tol)
            np.testing.assert_allclose(left_s[2:], w * np.sin(alpha), rtol=0, atol=tol)
            alpha = v[:, None] * fields[2, :, 0] + s * fields[2, :, 1] + fields[2, :, 6]
            np.testing.assert_allclose(const[2:], _field_numpy(fields[2], v, s, m, None), rtol=0,
                                       atol=4e-16 * np.abs(fields[2, :, 7 + m]).sum()
                                       * (1 + np.abs(alpha).max()))
            assert not left_c[:2].any() and not const[:2].any()  # rows before row0 untouched


def test_softplus_pass_matches_numpy_for_any_row_count():
    # Eight rows per pass, then four, then one at a time: the count need not divide by eight.
    rng = np.random.default_rng(3)
    lam_c, lam_s = rng.normal(0, 4, (2, 15, 10))
    const, weight = rng.normal(size=15), rng.uniform(size=15)
    for rows0, nrows in ((0, 13), (2, 12), (0, 8), (1, 7), (2, 3), (0, 0)):
        start = rng.normal(size=20)
        out = start.copy()
        _subtract_integral(lam_c, lam_s, rows0, nrows, const, weight, out)
        sl = slice(rows0, rows0 + nrows)
        lam = const[sl, None] + lam_c[sl]
        expected = start - np.concatenate([weight[sl] @ np.logaddexp(0.0, lam - lam_s[sl]),
                                           weight[sl] @ np.logaddexp(0.0, lam + lam_s[sl])])
        np.testing.assert_allclose(out, expected, rtol=1e-14, atol=1e-14)


def test_softplus_pass_sums_in_blocks_of_four_whatever_the_pass_length():
    # A pass of eight rows subtracts its two sums of four in turn: the same bits as passes of
    # four rows (the demand truth's numbers did not move when the pass grew to eight rows).
    rng = np.random.default_rng(4)
    lam_c, lam_s = rng.normal(0, 4, (2, 13, 16))
    const, weight = rng.normal(size=13), rng.uniform(size=13)
    start = rng.normal(size=32)
    whole, pieces = start.copy(), start.copy()
    _subtract_integral(lam_c, lam_s, 0, 13, const, weight, whole)
    for rows0, nrows in ((0, 4), (4, 4), (8, 4), (12, 1)):
        _subtract_integral(lam_c, lam_s, rows0, nrows, const, weight, pieces)
    assert np.array_equal(whole, pieces)


# --- prior ---------------------------------------------------------------------------------------

def test_shares_positive_and_sum_below_one(truth):
    for y in (truth.train_y(20), truth.eval_y(20)):
        assert (y > 0).all()
        assert (y.sum(axis=1) < 1).all()
    np.testing.assert_allclose(truth.evaluate(truth.train_X(5), 5), truth.train_y(5))


def test_truth_elasticities_signs(truth):
    E = truth.elasticities(20)
    J = E.shape[-1]
    own = E[:, np.arange(J), np.arange(J)]
    cross = E[:, ~np.eye(J, dtype=bool)]
    assert (own < 0).all()
    assert (cross > 0).all()


def test_utility_decreases_in_own_price_for_both_signs(prior, truth):
    # a > 0 everywhere, so the signed integral makes V_j strictly decreasing in z^p_j.
    X = prior.market.sample(1, np.random.default_rng(11))
    prices = np.linspace(*prior.market.price_interval(X[0, :1, 1], X[0, :1, 2]), 9)[1:-1, 0]
    Xs = np.repeat(X, len(prices), axis=0)
    Xs[:, 0, 0] = prices
    s = truth.system.shares(Xs)
    assert (np.diff(s[:, 0]) < 0).all()
    assert (np.diff(s[:, 1:], axis=0) > 0).all()
    assert (prior.market.standardize(Xs)[0][:, 0] < 0).any()
    assert (prior.market.standardize(Xs)[0][:, 0] > 0).any()


def test_field_standardisation_on_reference_grid(prior, truth):
    L, lam = truth.system.latent_fields(prior.grid_zp, prior.grid_zs, prior.grid_mushy,
                                        prior.reference_types)
    assert L.shape == (2256, 128)
    for f in (L, lam):
        assert f.mean() == pytest.approx(0.0, abs=1e-12)
        assert f.std() == pytest.approx(1.0, rel=1e-12)
    a = truth.system.price_sensitivity(prior.grid_zp, prior.grid_zs, prior.grid_mushy,
                                       prior.reference_types)
    assert a.mean() == pytest.approx(1.0, rel=1e-12)
    # the parts are standardised separately, so a type-free field alone is not the whole
    c_only = _grid_field(truth.system.fields[0], np.zeros(2256), prior.grid_zs,
                         prior.grid_mushy, None)
    assert c_only.std() < 1.0


def test_random_fourier_features_approximate_matern32(prior):
    # Average f(u) f(u') over many independent draws of the G_I field (inputs v, sugar, ν) and
    # compare with B_mm' (1 + √3 r) exp(−√3 r). Points differ in several coordinates at once,
    # where independent per-coordinate chi-square draws would give a different kernel.
    ls = np.array([0.66, 1.25, 1, 1, 1, 1])
    u0 = np.zeros(6)
    shifts = np.array([[0.3, 0.6, 0.4, 0, 0, 0], [0.5, 0.0, 0.7, 0.5, 0, 0],
                       [0.0, 1.0, 0.5, 0.5, 0.5, 0.5], [0.0, 0, 0, 0, 0, 0]])
    draws = 3000
    prods = np.zeros((len(shifts), 2))
    for r in range(draws):
        p = prior._draw_fields(np.random.default_rng(1000 + r))[3]
        f0 = _grid_field(p, u0[:1], u0[1:2], np.zeros(1), u0[None, 2:])
        for i, sft in enumerate(shifts):
            u = u0 + sft
            for m in (0, 1):
                f1 = _grid_field(p, u[:1], u[1:2], np.full(1, float(m)), u[None, 2:])
                prods[i, m] += f0[0, 0] * f1[0, 0] / draws
    k = Matern32(lengthscale=tuple(ls))(u0[None], u0 + shifts)[0]
    np.testing.assert_allclose(prods[:, 0], k, atol=0.07)
    np.testing.assert_allclose(prods[:, 1], 0.5 * k, atol=0.07)


def test_draw_nested_and_independent_training_sets(prior):
    t = prior.draw([5, 30], np.random.default_rng(2), draws=2)
    assert t.draws == 2 and t.train_locations[0].shape == (30, 24, 3)
    np.testing.assert_array_equal(t.sample(5, 1).X, t.train_locations[1][:5])
    assert not np.array_equal(t.train_locations[0], t.train_locations[1])
    assert t.eval_X.shape == (prior.n_eval, 24, 3)
    np.testing.assert_allclose(t.train_y(5, 1), t.evaluate(t.train_X(5, 1), 5))
    with pytest.raises(ConfigurationError, match="ns"):
        prior.draw([0], np.random.default_rng(0))
    with pytest.raises(ConfigurationError, match="n_types"):
        DemandPrior(n_types=63)


def test_systems_are_reproducible(prior):
    a = prior.draw_system(np.random.default_rng(5))
    b = prior.draw_system(np.random.default_rng(5))
    np.testing.assert_array_equal(a.fields, b.fields)
    X = prior.market.sample(2, np.random.default_rng(0))
    np.testing.assert_array_equal(a.shares(X), b.shares(X))


# --- discrepancies -------------------------------------------------------------------------------

def test_finite_differences_match_analytic_logit(market):
    beta_price, beta_sugar = -25.0, 0.2

    class Logit:
        def predict(self, X):
            e = np.exp(beta_price * X[..., 0] + beta_sugar * X[..., 1])
            return e / (1 + e.sum(axis=-1, keepdims=True))

    X = market.sample(4, np.random.default_rng(9))
    s = Logit().predict(X)
    p = X[..., 0]
    # d log s_j / d log p_k = beta_p p_k (1{j=k} - s_k)
    exact = beta_price * p[:, None, :] * (np.eye(24)[None] - s[:, None, :])
    # tiny steps: agreement to the O(h^2) truncation error
    E = rule_elasticities(Logit(), X, np.full(p.shape, 1e-4))
    np.testing.assert_allclose(E, exact, rtol=1e-6, atol=1e-12)
    # the design's steps (h <= 0.01): still within the central-difference error bound
    E = rule_elasticities(Logit(), X, market.log_price_steps(X))
    np.testing.assert_allclose(E, exact, rtol=2e-3, atol=1e-8)


def test_truth_predictor_has_zero_loss(truth):
    class TruthRule:
        def predict(self, X):
            return truth.evaluate(X, 20)

    class Constant:
        def predict(self, X):
            return np.full(X.shape[:2], truth.eval_y(20).mean())

    discrepancies = (SharesMSE(), OwnElasticityMSE(), CrossElasticityMSE())
    for d in discrepancies:
        base = d(Constant(), truth, 20)
        assert base > 1e-6
        assert d(TruthRule(), truth, 20) <= 1e-16 * max(base, 1.0)


def test_elasticity_cache_and_generic_truth(truth):
    # a PseudoTruth without the kernel path: elasticities from `evaluate`, memoised on it
    class Generic(PseudoTruth):
        market = truth.market

        def eval_y(self, n):
            return truth.eval_y(n)

        def evaluate(self, X, n):
            calls.append(len(X))
            return truth.evaluate(X, n)

    calls: list[int] = []
    g = Generic(truth.train_locations, truth.eval_X, None, truth.columns, truth.response)
    rule = type("R", (), {"predict": lambda self, X: truth.evaluate(X, 20)})()
    own = OwnElasticityMSE()(rule, g, 20)
    CrossElasticityMSE()(rule, g, 20)
    assert len(calls) == 1  # truth's elasticities computed once for both discrepancies
    assert own <= 1e-20
    assert truth.elasticities(20) is truth.elasticities(10)


def test_truth_runs_each_market_once_and_matches_direct_paths(prior, monkeypatch):
    # issue 15: the evaluation shares come from the elasticities' pass (not a second base pass)
    # and training shares extend by prefix; both bit for bit as the direct kernel calls
    truth = prior.draw([20], np.random.default_rng(3))
    rows: list[tuple[int, bool]] = []
    run = truth.system._run

    def spy(zp, *args):
        rows.append((len(zp), args[-1]))
        return run(zp, *args)

    monkeypatch.setattr(truth.system, "_run", spy)
    y_eval, y5, y20 = truth.eval_y(20), truth.train_y(5), truth.train_y(20)
    E = truth.elasticities(20)
    assert truth.train_y(12) is not None and truth.eval_y(10) is y_eval
    assert rows == [(4, True), (5, False), (15, False)]   # nothing computed twice
    monkeypatch.undo()
    X = truth.train_locations[0]
    np.testing.assert_array_equal(y20, truth.system.shares(X))
    np.testing.assert_array_equal(y5, y20[:5])
    np.testing.assert_array_equal(y_eval, truth.system.shares(truth.eval_X))
    base, minus, plus = truth.system.perturbed_shares(truth.eval_X, truth.log_price_steps)
    np.testing.assert_array_equal(E, elasticities_from_shares(minus, plus,
                                                              truth.log_price_steps))


def test_share_kernel_runs_on_one_blas_thread(truth, monkeypatch):
    # a threaded BLAS in the kernel's loop of products waits for busy cores (74 s instead of
    # 0.9 s for 100 markets beside another job), so the truth limits BLAS to one thread even
    # when the caller allows more, and restores the caller's limit afterwards
    seen: list[int] = []
    kernel = prior_module.shares_nb

    def spy(*args):
        seen.extend(p["num_threads"] for p in threadpoolctl.threadpool_info()
                    if p["user_api"] == "blas")
        return kernel(*args)

    monkeypatch.setattr(prior_module, "shares_nb", spy)
    with threadpoolctl.threadpool_limits(2, user_api="blas"):
        truth.system.shares(truth.eval_X[:1])
        after = [p["num_threads"] for p in threadpoolctl.threadpool_info()
                 if p["user_api"] == "blas"]
    assert seen and set(seen) == {1}
    assert set(after) == {2}


@pytest.mark.slow
def test_mnl_restrictiveness_matches_paper():
    # SPEC §7, Table 3 (n = 100): MNL .183 / .299 / .267 (paper SEs ≈ .009 / .011 / .009).
    # An independent check of the prior and the discrepancies; 9-15 minutes on a shared machine.
    from restrictiveness.demand.models import MNL, Logit

    prior = DemandPrior()
    discs = (SharesMSE(), OwnElasticityMSE(), CrossElasticityMSE())
    M, n = 100, 100
    D, B = np.zeros((M, 3)), np.zeros((M, 3))
    for m, ss in enumerate(np.random.SeedSequence(456).spawn(M)):
        rng = np.random.default_rng(ss)
        truth = prior.draw([n], rng)
        sample = truth.sample(n)
        fit, base = MNL().fit(sample, rng), Logit().fit(sample, rng)
        D[m] = [d(fit, truth, n) for d in discs]
        B[m] = [d(base, truth, n) for d in discs]
    r = D.mean(axis=0) / B.mean(axis=0)
    se = ((D - r * B) / B.mean(axis=0)).std(axis=0, ddof=1) / np.sqrt(M)
    paper, paper_se = np.array([0.183, 0.299, 0.267]), np.array([0.009, 0.011, 0.009])
    assert (np.abs(r - paper) <= 3 * np.sqrt(se**2 + paper_se**2)).all(), (r, se)
