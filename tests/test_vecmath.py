"""The vectorisable elementary functions against NumPy's libm-backed twins."""

from __future__ import annotations

import numpy as np

from restrictiveness.shared._vecmath import (
    exp_nb,
    exp_numpy,
    log_nb,
    log_numpy,
    sincos_nb,
    sincos_numpy,
    softplus_nb,
    softplus_numpy,
)


def test_exp_twins_agree_to_the_last_bits():
    x = np.concatenate([np.linspace(-700, 700, 200001),
                        np.random.default_rng(0).normal(0, 3, 10000),
                        np.log(2) * np.arange(-20, 21) / 2])   # reduction boundaries
    np.testing.assert_allclose(exp_nb(x), exp_numpy(x), rtol=4e-16, atol=0)


def test_exp_clamps_outside_its_range_without_overflow():
    x = np.array([-1e6, -750.0, 750.0, 1e6])
    out = exp_nb(x)
    assert np.all(np.isfinite(out))
    np.testing.assert_allclose(out, np.exp([-700.0, -700.0, 700.0, 700.0]), rtol=4e-16)
    np.testing.assert_allclose(out, exp_numpy(x), rtol=4e-16)


def test_log_twins_agree_within_one_ulp_and_on_special_values():
    rng = np.random.default_rng(0)
    tiny = np.finfo(float).tiny
    x = np.concatenate([np.exp(rng.uniform(-744, 709.7, 200000)),   # subnormal to near max
                        rng.uniform(0.5, 2.0, 100000),                  # log near 0
                        1.0 + rng.normal(0, 1e-6, 10000),
                        np.sqrt(0.5) * (1 + np.arange(-50, 51) * 2e-16),  # reduction boundary
                        2.0 ** np.arange(-1074, 1024),                 # every binade, exact k
                        [5e-324, tiny * (1 - 2e-16), tiny, np.finfo(float).max, 1.0]])
    ours, numpy_ = log_nb(x), log_numpy(x)
    assert np.all(np.isfinite(ours))
    ulps = np.abs(ours - numpy_) / np.spacing(np.maximum(np.abs(numpy_), tiny))
    assert ulps.max() <= 1.0   # fdlibm's bound; np.log may round the other way
    special = np.array([0.0, -0.0, np.inf, -np.inf, np.nan, -1.0, -5e-324, -np.finfo(float).max])
    np.testing.assert_array_equal(log_nb(special), log_numpy(special))   # -inf, inf, nan


def test_softplus_twins_agree():
    x = np.concatenate([np.linspace(-60, 60, 20001), np.random.default_rng(0).normal(0, 5, 1000)])
    np.testing.assert_allclose(softplus_nb(x), softplus_numpy(x), rtol=0, atol=1e-15)
    x = np.linspace(-700, 40, 100001)  # relative accuracy where softplus is tiny
    np.testing.assert_allclose(softplus_nb(x), softplus_numpy(x), rtol=2e-15)


def test_sincos_twins_agree():
    x = np.concatenate([np.linspace(-1e4, 1e4, 200001),
                        np.random.default_rng(1).normal(0, 50, 10000),
                        np.arange(-8, 9) * np.pi / 4])
    for a, b in zip(sincos_nb(x), sincos_numpy(x), strict=True):
        np.testing.assert_allclose(a, b, rtol=0, atol=2e-16)
