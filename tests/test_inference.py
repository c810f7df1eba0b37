"""The ratio estimator, its delta-method SE and paired contrasts (SPEC §3)."""

from __future__ import annotations

import numpy as np

from restrictiveness.engine.inference import combination_estimate, ratio_estimate


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
