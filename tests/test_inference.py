"""The ratio estimator, its delta-method SE and paired contrasts (SPEC §3)."""

from __future__ import annotations

import numpy as np
import pytest
import xarray as xr
from scipy import stats

import restrictiveness as rx
from restrictiveness.engine.inference import combination_estimate, normal_interval, ratio_estimate


def _delta_method(D, B):
    """Independent delta method: gradient of mean(D)/mean(B) and the sample covariance."""
    M = len(D)
    cov = np.cov(np.vstack([D, B]), ddof=1)
    grad = np.array([1 / B.mean(), -D.mean() / B.mean() ** 2])
    return D.mean() / B.mean(), np.sqrt(grad @ cov @ grad / M)


def test_se_equals_delta_method(rng):
    B = rng.gamma(2.0, 1.0, 200)
    D = 0.3 * B * rng.lognormal(0, 0.5, 200)
    r, se = ratio_estimate(D, B)
    r0, se0 = _delta_method(D, B)
    assert np.isclose(r, r0) and np.isclose(se, se0)


def test_contrast_se_uses_the_covariance(rng):
    B = rng.gamma(2.0, 1.0, 300)
    common = rng.lognormal(0, 0.5, 300)
    Da, Db = 0.3 * B * common, 0.25 * B * common * rng.lognormal(0, 0.05, 300)
    est, se = combination_estimate([1.0, -1.0], np.vstack([Da, Db]), B)
    # delta method for (mean Da - mean Db)/mean B with the 3x3 covariance
    cov = np.cov(np.vstack([Da, Db, B]), ddof=1)
    grad = np.array([1, -1, -(Da.mean() - Db.mean()) / B.mean()]) / B.mean()
    assert np.isclose(est, (Da.mean() - Db.mean()) / B.mean())
    assert np.isclose(se, np.sqrt(grad @ cov @ grad / 300))
    # positively correlated losses: the paired SE is far below the unpaired one
    _, se_a = ratio_estimate(Da, B)
    _, se_b = ratio_estimate(Db, B)
    assert se < 0.5 * np.hypot(se_a, se_b)


def test_rescaling_losses_leaves_estimate_and_se_unchanged(rng):
    B = rng.gamma(2.0, 1.0, 50)
    D = rng.gamma(1.0, 0.5, 50)
    r1, s1 = ratio_estimate(D, B)
    r2, s2 = ratio_estimate(7.5 * D, 7.5 * B)
    assert np.isclose(r1, r2) and np.isclose(s1, s2)


def test_ratio_estimate_by_hand_and_refuses_one_replication():
    # D = (1, 2, 6), B = (1, 1, 2): r = 3 / (4/3) = 9/4, psi = (D - r B) / (4/3)
    r, se = ratio_estimate(np.array([1.0, 2.0, 6.0]), np.array([1.0, 1.0, 2.0]))
    psi = (np.array([1.0, 2.0, 6.0]) - 2.25 * np.array([1.0, 1.0, 2.0])) * 0.75
    assert r == pytest.approx(2.25)
    assert se == pytest.approx(np.sqrt(((psi - psi.mean()) ** 2).sum() / 2 / 3), rel=1e-14)
    with pytest.raises(ValueError, match="at least two"):
        ratio_estimate(np.array([1.0]), np.array([1.0]))


@pytest.mark.parametrize("level", [0.8, 0.9, 0.95, 0.99])
def test_normal_interval_uses_the_two_sided_quantile(level):
    z = stats.norm.ppf(1 - (1 - level) / 2)
    lo, hi = normal_interval(np.array([1.0, -2.0]), np.array([0.5, 0.1]), level)
    np.testing.assert_allclose(lo, [1.0 - 0.5 * z, -2.0 - 0.1 * z], rtol=1e-14)
    np.testing.assert_allclose(hi, [1.0 + 0.5 * z, -2.0 + 0.1 * z], rtol=1e-14)
    # the coverage of the interval is the level
    assert stats.norm.cdf(z) - stats.norm.cdf(-z) == pytest.approx(level, rel=1e-12)


@pytest.fixture(scope="module")
def small_results():
    F = rx.EligibleSet(rx.Box(x=(0, 1)), rx.Increasing("x"), rx.Between(0, 1))
    return rx.Study(rx.MonotoneGP(F, n_eval=30), {"linear": rx.OLS("y ~ x"), "GP":
                    rx.GPRegression()}, rx.Constant(), n=[8], replications=6,
                    seed=3).run(progress=False)


@pytest.mark.parametrize("level", [0.9, 0.95])
def test_estimates_and_contrast_intervals_use_exact_quantiles(small_results, level):
    z = stats.norm.ppf(0.5 + level / 2)
    est = small_results.estimates(level)
    np.testing.assert_allclose(est["lower"], est["estimate"] - z * est["se"], rtol=1e-13)
    np.testing.assert_allclose(est["upper"], est["estimate"] + z * est["se"], rtol=1e-13)
    c = small_results.contrast("linear", "GP", level=level)
    np.testing.assert_allclose(c["upper"] - c["lower"], 2 * z * c["se"], rtol=1e-13)


def _draws_results(rng):
    """Results of a synthetic study with two discrepancies, two n, 40 replications and three
    training draws, procedure ``b`` having run only two of them (NaN-padded)."""
    Dn, N, M, K = 2, 2, 40, 3
    B = rng.gamma(2.0, 1.0, (Dn, N, M, K))
    loss = np.stack([0.3 * B * rng.lognormal(0, 0.3, B.shape),
                     0.6 * B * rng.lognormal(0, 0.3, B.shape)])
    loss[1, ..., 2] = np.nan
    loss[:, 1] *= 5.0                      # the second discrepancy differs from the first
    ds = xr.Dataset(
        {"loss": (("procedure", "discrepancy", "n", "replication", "draw"), loss),
         "baseline_loss": (("discrepancy", "n", "replication", "draw"), B)},
        coords={"procedure": ["a", "b"], "discrepancy": ["mse", "kl"], "n": [10, 20],
                "replication": np.arange(M), "draw": np.arange(K)})
    return rx.Results(ds), loss, B


def test_losses_average_every_draw_of_the_procedures_and_the_baseline(rng):
    res, loss, B = _draws_results(rng)
    D, Bm = res.losses()
    np.testing.assert_allclose(D.transpose("procedure", "discrepancy", "n", "replication"),
                               np.nanmean(loss, axis=-1), rtol=1e-14)
    np.testing.assert_allclose(Bm.transpose("discrepancy", "n", "replication"), B.mean(axis=-1),
                               rtol=1e-14)
    r = np.nanmean(loss, axis=-1).mean(axis=-1) / B.mean(axis=(-2, -1))
    np.testing.assert_allclose(res.restrictiveness.transpose("procedure", "discrepancy", "n"), r,
                               rtol=1e-13)


def test_combination_and_contrast_equal_the_delta_method_by_hand(rng):
    """Σ c_j r̂_j with its SE from the 3 × 3 covariance of (D_a, D_b, B) over replications; the
    default discrepancy is the first."""
    res, loss, B = _draws_results(rng)
    Da, Db = np.nanmean(loss[0, 0], axis=-1), np.nanmean(loss[1, 0], axis=-1)   # (N, M)
    Bm = B[0].mean(axis=-1)
    c = np.array([0.5, 2.0])
    comb = res.combination({"a": c[0], "b": c[1]})
    contrast = res.contrast("a", "b")
    for i, n in enumerate([10, 20]):
        for w, table in ((c, comb), (np.array([1.0, -1.0]), contrast)):
            est = (w[0] * Da[i].mean() + w[1] * Db[i].mean()) / Bm[i].mean()
            cov = np.cov(np.vstack([Da[i], Db[i], Bm[i]]), ddof=1)
            grad = np.r_[w, -est] / Bm[i].mean()
            assert table.loc[n, "estimate"] == pytest.approx(est, rel=1e-12)
            assert table.loc[n, "se"] == pytest.approx(np.sqrt(grad @ cov @ grad / 40), rel=1e-10)
    other = res.contrast("a", "b", discrepancy="kl")
    assert not np.allclose(other["estimate"], contrast["estimate"])
    assert contrast.equals(res.contrast("a", "b", discrepancy="mse"))


def test_results_with_repeated_labels_are_refused(rng):
    # two rows labelled "a": r̂ printed both, contrast and sensitivity failed inside pandas
    res, _, _ = _draws_results(rng)
    with pytest.raises(rx.DataError, match=r"procedure labels repeat: \['a'\]"):
        rx.Results(res.dataset.assign_coords(procedure=["a", "a"]))


def test_results_with_negative_losses_are_refused(rng):
    # r̂ and its se were computed from a negative loss as from any other (the sensitivity
    # bounds refused a negative baseline loss only); −1e-12 is rounding and stays accepted
    res, loss, B = _draws_results(rng)
    ds = res.dataset
    for name, arr in (("loss", loss), ("baseline_loss", B)):
        bad = arr.copy()
        bad.flat[5] = -0.5
        with pytest.raises(rx.DataError, match=f"{name} has 1 negative values"):
            rx.Results(ds.assign({name: ds[name].copy(data=bad)}))
    tiny = B.copy()
    tiny.flat[5] = -1e-12
    rx.Results(ds.assign(baseline_loss=ds["baseline_loss"].copy(data=tiny)))


def test_a_summary_of_a_dataset_without_the_study_records_names_what_it_lacks(rng):
    """Results take any Dataset with loss and baseline_loss; summary() then failed with a bare
    KeyError 'configuration' (or "No variable named 'error'") from deep inside."""
    res, loss, B = _draws_results(rng)
    with pytest.raises(rx.DataError, match="no 'configuration' attribute"):
        res.summary()
    ds = res.dataset.assign_attrs(configuration='{"evaluation": "hand-made"}')
    with pytest.raises(rx.DataError, match=r"records of failed fits \['failed', 'invalid', "
                                           r"'error'\]"):
        rx.Results(ds).summary()
    zeros = xr.zeros_like(ds["loss"].isel(discrepancy=0, draw=0), dtype=np.int64)
    full = rx.Results(ds.assign(failed=zeros, invalid=zeros,
                                error=xr.full_like(zeros, "", dtype=object)))
    r = np.nanmean(loss[0, 0, 0], axis=-1).mean() / B[0, 0].mean()
    assert full.summary().tables[1][1][1].data.startswith(f"{r:.3f} (")


def test_estimates_keep_the_studys_order_of_discrepancies_as_the_summary_does(rng):
    """estimates() (and the command line's --table csv) sorted the discrepancies alphabetically
    (the demand's shares, own, cross came out cross, own, shares) while the summary's tables
    follow the study."""
    from restrictiveness.cli.options import estimates_table

    res, loss, B = _draws_results(rng)                      # discrepancies ["mse", "kl"]
    zeros = xr.zeros_like(res.dataset["loss"].isel(discrepancy=0, draw=0), dtype=np.int64)
    recorded = rx.Results(res.dataset.assign(failed=zeros, invalid=zeros,
                                             error=xr.full_like(zeros, "", dtype=object)))
    r = np.nanmean(loss, axis=-1).mean(axis=-1) / B.mean(axis=(-2, -1))  # (P, D, N)
    for table in (res.estimates(), estimates_table(recorded)):
        assert table.index.tolist() == [(d, p, n) for d in ("mse", "kl") for p in ("a", "b")
                                        for n in (10, 20)]
        np.testing.assert_allclose(table["estimate"].to_numpy(),
                                   r.transpose(1, 0, 2).ravel(), rtol=1e-13)


def test_timings_are_the_median_fit_and_the_total_of_every_draws_fits(rng):
    """``seconds`` holds each record's mean fit time: ``median_seconds`` is their median over
    replications (not the mean, which one slow replication drags), ``total_seconds`` their sum
    weighted by the draws each record ran (procedure ``b`` ran 2 of the 3)."""
    res, _, _ = _draws_results(rng)
    m = np.arange(40)
    seconds = np.array([[(p + 1) * m ** 2 / 100 + i for i in range(2)] for p in range(2)])
    timed = rx.Results(res.dataset.assign(seconds=(("procedure", "n", "replication"), seconds)))
    t = timed.timings()
    # the median of 0, 1, 4, ..., 39**2 is (19**2 + 20**2) / 2 = 380.5 (the mean is 513.5);
    # their sum is 20540
    assert t.index.tolist() == [("a", 10), ("a", 20), ("b", 10), ("b", 20)]
    np.testing.assert_allclose(t["median_seconds"], [3.805, 4.805, 7.61, 8.61], rtol=1e-13)
    np.testing.assert_allclose(t["total_seconds"], [3 * 205.4, 3 * (205.4 + 40),
                                                    2 * 410.8, 2 * (410.8 + 40)], rtol=1e-13)


def test_failures_count_fits_over_draws_and_name_the_first_error_of_any_replication(rng):
    """``failures()`` by procedure and n: the failed fits summed over replications, the fits
    run (replications × the draws each ran: 3 for ``a``, 2 for ``b``) and the first error in
    replication order, wherever it occurred (replications 0 to 2 had none)."""
    res, _, _ = _draws_results(rng)
    error = np.full((2, 2, 40), "", dtype=object)
    error[0, 1, 3], error[0, 1, 7] = "fit: ValueError: late", "fit: ValueError: later"
    failed = (error != "").astype(np.int64)
    invalid = np.zeros((2, 2, 40), dtype=np.int64)
    invalid[1, 0, 39] = 5
    pnm = ("procedure", "n", "replication")
    f = rx.Results(res.dataset.assign(failed=(pnm, failed), invalid=(pnm, invalid),
                                      error=(pnm, error))).failures()
    assert f.index.tolist() == [("a", 10), ("a", 20), ("b", 10), ("b", 20)]
    assert f["failed"].tolist() == [0, 2, 0, 0]
    assert f["fits"].tolist() == [120, 120, 80, 80]
    assert f["invalid_rows"].tolist() == [0, 0, 5, 0]
    assert f["first_error"].tolist() == ["", "fit: ValueError: late", "", ""]
