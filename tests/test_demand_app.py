"""The demand application's ready-made configuration: study and completeness plumbing."""

from __future__ import annotations

import numpy as np
import pytest

import restrictiveness as rx


def test_market_sample_aligns_products_across_markets():
    data = rx.datasets.load_cereal()
    shuffled = data.sample(frac=1.0, random_state=0)
    s = rx.demand.market_sample(shuffled)
    assert s.X.shape == (94, 24, 3) and s.y.shape == (94, 24)
    # sugar and mushy are product characteristics: constant down each product position
    assert (np.ptp(s.X[:, :, 1], axis=0) == 0).all() and (np.ptp(s.X[:, :, 2], axis=0) == 0).all()
    first = data[data["market_ids"] == sorted(data["market_ids"].unique())[0]]
    np.testing.assert_allclose(np.sort(s.y[0]), np.sort(first["shares"].to_numpy()))


def test_market_sample_refuses_markets_whose_positions_are_not_one_product():
    # a position is a product for the per-product procedures (the log-share benchmark); markets
    # listing other products, or one product twice, were paired by rank without a word
    data = rx.datasets.load_cereal()
    first, second = sorted(data["market_ids"].unique())[:2]
    renamed = data.copy()
    row = renamed.index[renamed["market_ids"] == second][0]
    renamed.loc[row, "product_ids"] = "F9B99"
    with pytest.raises(rx.DataError, match=rf"every market must list the same products; "
                                           rf"market\(s\) \['{second}'\] differ from market "
                                           rf"'{first}'"):
        rx.demand.market_sample(renamed)
    doubled = data.copy()
    doubled.loc[row, "product_ids"] = doubled["product_ids"].iloc[row + 1]
    with pytest.raises(rx.DataError, match=rf"market\(s\) \['{second}'\] list a product id "
                                           "more than once"):
        rx.demand.market_sample(doubled)
    with pytest.raises(rx.DataError, match="every market must list the same products"):
        rx.demand.completeness(renamed, {"MNL": rx.demand.MNL()}, folds=2, repeats=1)


def test_market_sample_refuses_markets_with_fewer_products_by_name():
    # since the demand models take unbalanced markets, the product data are padded before
    # market_sample compares positions: a market missing a product was a bare "ValueError:
    # cannot reshape array" (here and in rx.demand.completeness)
    data = rx.datasets.load_cereal()
    first, second = sorted(data["market_ids"].unique())[:2]
    short = data.drop(index=data.index[data["market_ids"] == second][0])
    with pytest.raises(rx.DataError, match=rf"every market must list the same products; "
                                           rf"market\(s\) \['{second}'\] list 23 products, "
                                           rf"market '{first}' 24"):
        rx.demand.market_sample(short)
    with pytest.raises(rx.DataError, match="every market must list the same products"):
        rx.demand.completeness(short, {"MNL": rx.demand.MNL()}, folds=2, repeats=1)


def test_market_and_product_ids_of_mixed_types_are_refused_by_name():
    # a market id 1 beside '1' (a column read partly as text) was a bare TypeError from sorting
    data = rx.datasets.load_cereal()
    first = data["market_ids"].iloc[0]
    for column, value in (("market_ids", 7), ("product_ids", 7)):
        mixed = data.astype({column: object})
        mixed.loc[mixed["market_ids"] == first, column] = value
        with pytest.raises(rx.DataError, match=rf"'{column}' mixes types \(int, str\)"):
            rx.demand.market_sample(mixed)
    mixed = data.astype({"market_ids": object})
    mixed.loc[mixed["market_ids"] == first, "market_ids"] = 7
    with pytest.raises(rx.DataError, match="'market_ids' mixes types"):
        rx.demand.MNL.from_formula("shares ~ prices + sugar + mushy", mixed).fit()


def test_one_product_markets_refuse_cross_price_elasticities_and_keep_the_rest():
    from restrictiveness.demand.markets import MarketDistribution
    from restrictiveness.demand.prior import DemandPrior

    prior = DemandPrior(market=MarketDistribution(n_products=1), n_types=16,
                        n_reference_types=16, n_eval=4, n_train=10)
    # the mean over no cross-price entries was NaN, reported as the baseline's non-finite loss
    # (with advice about KL)
    with pytest.raises(rx.ConfigurationError, match="cross: cross-price elasticities need at "
                                                    "least two products per market; these "
                                                    "markets have 1"):
        rx.demand.study({"MNL": rx.demand.MNL()}, n=[10], replications=2, prior=prior).run(
            progress=False)
    res = rx.Study(prior, {"MNL": rx.demand.MNL()}, baseline=rx.demand.Logit(),
                   discrepancies=(rx.demand.SharesMSE(), rx.demand.OwnElasticityMSE()), n=[10],
                   replications=2).run(progress=False)
    # the baseline's own-price loss is the mean squared true own elasticity, one per market
    truth = prior.draw([10], np.random.default_rng(0))
    assert rx.demand.OwnElasticityMSE().scale(truth, 10) == pytest.approx(
        float(np.mean(truth.elasticities(10)[:, 0, 0] ** 2)))
    assert np.isfinite(res.estimates()["estimate"]).all()


def test_small_demand_study_runs_with_three_discrepancies():
    prior = rx.demand.DemandPrior(n_types=32, n_reference_types=32, n_eval=4, n_train=30)
    res = rx.demand.study({"MNL": rx.demand.MNL()}, n=[30], replications=2, prior=prior).run(
        progress=False)
    assert res.discrepancies == ["shares", "own", "cross"]
    r = res.restrictiveness.sel(procedure="MNL", n=30)
    assert np.isfinite(r).all() and (r > 0).all()
    assert res.dataset.attrs["baseline"] == "logit"


def test_a_benchmark_that_fails_a_fold_is_an_error_not_the_baseline_in_its_place():
    # One zero cereal share: the log-share benchmark cannot fit the fold holding it and took the
    # baseline's predictions there, which shrank κ's denominator; MNL's κ went from 0.21 to 0.49
    # (folds=2, repeats=1), with a FailureWarning only
    data = rx.datasets.load_cereal()
    fine = rx.demand.completeness(data, {"MNL": rx.demand.MNL()}, folds=2, repeats=1)
    assert fine.kappa["MNL"] == pytest.approx(0.212, abs=5e-4)
    data.loc[3, "shares"] = 0.0
    with pytest.raises(rx.BaselineError, match=r"the benchmark 'log-share GP' failed in "
                                               r"repetition 0, fold \d: DataError: .*1 share\(s\) "
                                               r"are zero; κ is relative to the benchmark"):
        rx.demand.completeness(data, {"MNL": rx.demand.MNL()}, folds=2, repeats=1)


def test_cereal_completeness_plumbing():
    res = rx.demand.completeness(procedures={"MNL": rx.demand.MNL()}, folds=2, repeats=1,
                                 seed=1)
    assert res.kappa["logit"] == 0.0 and res.kappa["log-share GP"] == 1.0
    assert np.isfinite(res.kappa["MNL"]) and res.kappa_se["MNL"] > 0


def test_a_market_with_a_replaced_perturbation_gets_zero_elasticities():
    """Failure protocol for elasticities: if any of a market's 2J perturbed predictions is
    invalid, the market gets the baseline's elasticities (zero), not a mix of rows."""
    from restrictiveness.demand.elasticities import rule_elasticities
    from restrictiveness.eligible.constraints import Simplex
    from restrictiveness.engine.failures import GuardedRule
    from restrictiveness.engine.protocol import FunctionRule

    J = 3
    X = np.tile(np.array([[1.0, 0, 0], [2.0, 0, 0], [1.5, 0, 1]]), (2, 1, 1))  # 2 markets

    def logit(P):
        e = np.exp(-2 * P[..., 0])
        return e / (1 + e.sum(axis=-1, keepdims=True))

    calls = {"n": 0}

    def flaky(P):  # NaN in one perturbed copy of the second market only
        out = logit(P)
        out[2 * J + 1] = np.nan
        calls["n"] += 1
        return out

    base = FunctionRule(lambda P: np.full(P.shape[:2], 0.1))
    guard = GuardedRule(FunctionRule(flaky), base, [Simplex()], ("prices", "sugar", "mushy"))
    E = rule_elasticities(guard, X, np.full((2, J), 1e-3))
    assert calls["n"] == 1 and guard.replaced == 1
    assert np.abs(E[1]).max() == 0.0
    assert (np.diag(E[0]) < 0).all()


def test_a_market_with_invalid_shares_at_its_own_prices_gets_zero_elasticities():
    """SPEC §7: invalid share predictions get the fitted baseline's shares and elasticities. A
    rule invalid at a market's own prices but valid at every perturbed copy (so the share loss
    uses the baseline's shares there) must not keep its finite differences in that market."""
    from restrictiveness.demand.elasticities import rule_elasticities
    from restrictiveness.eligible.constraints import Simplex
    from restrictiveness.engine.failures import GuardedRule
    from restrictiveness.engine.protocol import FunctionRule

    X = np.stack([np.array([[1.0, 0, 0], [2.0, 0, 0], [1.5, 0, 1]]),
                  np.array([[1.2, 0, 0], [1.8, 0, 0], [1.4, 0, 1]])])

    def logit(P):
        e = np.exp(-2 * P[..., 0])
        return e / (1 + e.sum(axis=-1, keepdims=True))

    def invalid_at_market_1(P):   # NaN exactly at the second market's own prices
        out = logit(P)
        out[(P[..., 0] == X[1, :, 0]).all(axis=1)] = np.nan
        return out

    e = np.exp(-2 * X[0, :, 0])
    s = e / (1 + e.sum())
    exact = -2 * X[0, None, :, 0] * (np.eye(3) - s[None, :])   # E_jk = β p_k (1{j=k} − s_k)
    base = FunctionRule(lambda P: np.full(P.shape[:2], 0.1))
    for rule in (FunctionRule(invalid_at_market_1),
                 GuardedRule(FunctionRule(invalid_at_market_1), base, [Simplex()],
                             ("prices", "sugar", "mushy"))):
        E = rule_elasticities(rule, X, np.full((2, 3), 1e-5))
        assert np.abs(E[1]).max() == 0.0
        np.testing.assert_allclose(E[0], exact, rtol=1e-8)


def test_baseline_elasticity_loss_is_the_mean_squared_true_elasticity():
    prior = rx.demand.DemandPrior(n_types=32, n_reference_types=32, n_eval=4, n_train=20)
    truth = prior.draw([20], np.random.default_rng(3))
    base = rx.demand.Logit().fit(truth.sample(20), np.random.default_rng(0))
    E = truth.elasticities(20)
    J = E.shape[1]
    own = np.diagonal(E, axis1=1, axis2=2)
    cross = E[:, ~np.eye(J, dtype=bool)]
    assert np.isclose(rx.demand.OwnElasticityMSE()(base, truth, 20), np.mean(own**2))
    assert np.isclose(rx.demand.CrossElasticityMSE()(base, truth, 20), np.mean(cross**2))


def test_a_market_with_a_zero_share_gets_zero_elasticities():
    """A share of 0 at a perturbed price has no log: the market gets the baseline's elasticities
    (zero), the others their finite differences (here plain logit's closed form)."""
    from restrictiveness.demand.elasticities import rule_elasticities

    X = np.tile(np.array([[1.0, 0, 0], [2.0, 0, 0], [1.5, 0, 1]]), (2, 1, 1))

    class Logit:
        def predict(self, P):
            e = np.exp(-2 * P[..., 0])
            s = e / (1 + e.sum(axis=-1, keepdims=True))
            s[len(P) // 2 + 1, 0] = 0.0           # second market, one perturbed copy
            return s

    E = rule_elasticities(Logit(), X, np.full((2, 3), 1e-5))
    assert np.abs(E[1]).max() == 0.0
    e = np.exp(-2 * X[0, :, 0])
    s = e / (1 + e.sum())
    exact = -2 * X[0, None, :, 0] * (np.eye(3) - s[None, :])   # E_jk = β p_k (1{j=k} − s_k)
    np.testing.assert_allclose(E[0], exact, rtol=1e-8)


def test_demand_discrepancies_are_weighted_means_over_markets():
    """Shares, own- and cross-price MSE by hand on two markets weighted 3:1: a rule predicting
    constant shares has zero elasticities, so its own (cross) loss is the weighted mean over
    markets of the mean squared true own (cross) elasticity."""
    from restrictiveness.demand.elasticities import (
        CrossElasticityMSE,
        OwnElasticityMSE,
        SharesMSE,
    )

    J = 3
    rng = np.random.default_rng(0)
    E_true = rng.standard_normal((2, J, J))
    y = np.array([[0.1, 0.2, 0.3], [0.3, 0.3, 0.2]])

    class Truth:
        eval_X = np.tile(np.array([[1.0, 0, 0], [2.0, 0, 0], [1.5, 0, 1]]), (2, 1, 1))
        eval_weights = np.array([0.75, 0.25])
        log_price_steps = np.full((2, J), 1e-3)

        def eval_y(self, n):
            return y

        def elasticities(self, n):
            return E_true

    class Constant:
        def predict(self, X):
            return np.full(X.shape[:2], 0.2)

    w, off = Truth.eval_weights, ~np.eye(J, dtype=bool)
    shares = w @ ((0.2 - y) ** 2).mean(axis=1)
    own = w @ (np.diagonal(E_true, axis1=1, axis2=2) ** 2).mean(axis=1)
    cross = w @ (E_true[:, off] ** 2).mean(axis=1)
    assert SharesMSE()(Constant(), Truth(), 10) == pytest.approx(shares, rel=1e-14)
    assert OwnElasticityMSE()(Constant(), Truth(), 10) == pytest.approx(own, rel=1e-14)
    assert CrossElasticityMSE()(Constant(), Truth(), 10) == pytest.approx(cross, rel=1e-14)


class _Counted(rx.Procedure):
    """MNL whose rules count their predict calls (and may fail at the ``fail_at``-th)."""

    def __init__(self, calls: list, fail_at: int | None = None) -> None:
        self.calls, self.fail_at = calls, fail_at

    def fit(self, sample, rng):
        from restrictiveness.engine.protocol import FunctionRule
        fitted, calls, fail_at = rx.demand.MNL().fit(sample, rng), self.calls, self.fail_at
        calls.append(0)

        def predict(X):
            calls[-1] += 1
            if calls[-1] == fail_at:
                raise RuntimeError("the elasticity pass fails")
            return fitted.predict(X)

        return FunctionRule(predict)


def test_own_and_cross_price_losses_share_one_elasticity_pass():
    # 2J + 1 predictions per market, once per fit (a mixed logit's took 0.13 s, twice);
    # the losses are the MNL's own
    prior = rx.demand.DemandPrior(n_types=32, n_reference_types=32, n_eval=4, n_train=30)
    calls: list = []
    res = rx.demand.study({"MNL": rx.demand.MNL(), "counted": _Counted(calls)}, n=[30],
                          replications=2, prior=prior).run(progress=False)
    assert calls == [2, 2]     # the shares, then one pass for both elasticity losses
    loss = res.dataset["loss"]
    np.testing.assert_array_equal(loss.sel(procedure="counted"), loss.sel(procedure="MNL"))


def test_a_rule_failing_in_its_elasticity_pass_gets_the_baseline_in_every_loss():
    prior = rx.demand.DemandPrior(n_types=32, n_reference_types=32, n_eval=4, n_train=30)
    calls: list = []
    with pytest.warns(rx.FailureWarning, match="the elasticity pass fails"):
        ds = rx.demand.study({"failing": _Counted(calls, fail_at=2)}, n=[30], replications=2,
                             prior=prior).run(progress=False).dataset
    np.testing.assert_array_equal(ds["loss"].sel(procedure="failing", drop=True).values,
                                  ds["baseline_loss"].values)
    assert int(ds["failed"].sum()) == 2


def test_a_nested_logit_on_a_column_that_is_not_0_1_is_refused_before_the_run():
    # NestedLogit(nest="sugar") passed validate (the study has a "sugar" column): every fit
    # failed with "must be 0 or 1" and the NL rows repeated the baseline's (r̂ = 1), with a
    # warning only after the run; completeness likewise in every fold
    with pytest.raises(rx.ConfigurationError, match=r"procedures\['NL'\]: NestedLogit\(nest="
                                                    r"'sugar'\) needs a 0/1 column, and the "
                                                    r"demand prior's markets have one, 'mushy'"):
        rx.demand.study(procedures={"NL": rx.demand.NestedLogit(nest="sugar")}, n=[20],
                        replications=2)
    data = rx.datasets.load_cereal()
    with pytest.raises(rx.DataError, match=r"procedures\['NL'\]: NestedLogit\(nest='mushy'\) "
                                           r"needs a 0/1 column, but the data's 'mushy' holds "
                                           r"2\.0: every fit would fail"):
        rx.demand.completeness(data.assign(mushy=data["mushy"] + 1), folds=2, repeats=1)
    st = rx.demand.study(procedures={"NL": rx.demand.NestedLogit()}, n=[20], replications=2)
    assert st.procedures["NL"].nest == "mushy"
