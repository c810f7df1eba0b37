"""The vectorisable elementary functions against NumPy's libm-backed twins."""

from __future__ import annotations

import numpy as np

from restrictiveness.shared._vecmath import (
    exp_nb,
    exp_numpy,
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
