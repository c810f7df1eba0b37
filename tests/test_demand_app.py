"""The demand application's ready-made configuration: study and completeness plumbing."""

from __future__ import annotations

import numpy as np

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


def test_small_demand_study_runs_with_three_discrepancies():
    prior = rx.demand.DemandPrior(n_types=32, n_reference_types=32, n_eval=4, n_train=30)
    res = rx.demand.study({"MNL": rx.demand.MNL()}, n=[30], replications=2, prior=prior).run(
        progress=False)
    assert res.discrepancies == ["shares", "own", "cross"]
    r = res.restrictiveness.sel(procedure="MNL", n=30)
    assert np.isfinite(r).all() and (r > 0).all()
    assert res.dataset.attrs["baseline"] == "logit"


def test_cereal_completeness_plumbing():
    res = rx.demand.completeness(procedures={"MNL": rx.demand.MNL()}, folds=2, repeats=1,
                                 seed=1)
    assert res.kappa["logit"] == 0.0 and res.kappa["log-share GP"] == 1.0
    assert np.isfinite(res.kappa["MNL"]) and res.kappa_se["MNL"] > 0
