"""Density-ratio sensitivity bounds (SPEC §4): known answers, brute force, the LP, invariances."""

from __future__ import annotations

import itertools
import time

import numpy as np
import pytest

from restrictiveness.engine.sensitivity import (
    bounds,
    bounds_lp,
    critical_gamma,
    format_critical,
    vertex_weights,
)
from restrictiveness.shared.exceptions import ConfigurationError, DataError


def _data(rng, m, ties=False, zeros_in_b=False):
    """Losses D_a, D_b, B; with ``ties`` on a coarse grid so many values coincide."""
    if ties:
        da, db = rng.integers(0, 4, m).astype(float), rng.integers(0, 4, m).astype(float)
        b = rng.integers(1, 3, m).astype(float)
    else:
        da, db, b = rng.exponential(size=(3, m))
    if zeros_in_b:
        b[rng.random(m) < 0.3] = 0.0
        b[0] = max(b[0], 0.5)
    return da, db, b


def _brute_force(a, b, gamma):
    """min and max of Σwa/Σwb over every vertex of W_{Γ,M}, built from the definition.

    A vertex has at least M − 1 box constraints active: k weights at Γ, the rest but one at
    1/Γ, and the one left fixed by mean(w) = 1 (kept when it lies in [1/Γ, Γ]).
    """
    m = a.size
    ratios = []
    for k in range(m):
        u = m - k * gamma - (m - k - 1) / gamma
        if not (1 / gamma - 1e-12 <= u <= gamma + 1e-12):
            continue
        for top in itertools.combinations(range(m), k):
            for j in set(range(m)) - set(top):
                w = np.full(m, 1 / gamma)
                w[list(top)] = gamma
                w[j] = u
                ratios.append((w @ a) / (w @ b))
    return min(ratios), max(ratios)


# ---------------------------------------------------------------------------- known answers


def test_gamma_one_is_point_estimate():
    rng = np.random.default_rng(0)
    for m in (1, 2, 7, 200):
        da, db, b = _data(rng, m)
        lo, hi = bounds(da, db, b, 1.0)
        est = (da - db).sum() / b.sum()
        np.testing.assert_allclose([lo, hi], [est, est], rtol=1e-12, atol=1e-15)


def test_bounds_bracket_the_estimate_to_the_bit():
    # Uniform weights are in every W_Γ: lower <= Δ̂ <= upper exactly, and Γ = 1 gives Δ̂ itself
    # (the vertex search's dot products summed in another order: both bounds were an ulp
    # above the mean ratio at Γ = 1 in most draws, and one of them on the wrong side of it
    # for Γ within a few ulps of 1)
    rng = np.random.default_rng(11)
    for m in (3, 40, 137, 1000):
        for _ in range(40):
            da, db, b = _data(rng, m)
            da = da * 10 ** rng.uniform(-3, 3)
            est = (da - db).mean() / b.mean()
            lo, hi = bounds(da, db, b, [1.0, np.nextafter(1.0, 2.0), 1.0 + 1e-15, 1.5])
            assert lo[0] == est == hi[0]
            assert (lo <= est).all() and (est <= hi).all()
            assert bounds(da, None, b, 1.0) == (da.mean() / b.mean(),) * 2


def test_vertex_weights_are_feasible_vertices():
    for m in (1, 2, 5, 8, 200):
        for g in (1.0, 1.01, 1.5, 2.0, 3.0, 7.0, m - 1.0 if m > 2 else 1.0):
            w = vertex_weights(g, m)
            assert w.mean() == pytest.approx(1.0, abs=1e-12)
            assert w.min() >= 1 / g - 1e-12 and w.max() <= g + 1e-12
            inside = (w > 1 / g + 1e-12) & (w < g - 1e-12)
            assert inside.sum() <= 1
            assert np.all(np.diff(w) <= 1e-15)


def test_single_procedure_constant_baseline_closed_form():
    # With B constant Δ(w) is linear in w: the max puts Γ on the largest losses.
    rng = np.random.default_rng(1)
    for m in (3, 10, 57):
        d = rng.exponential(size=m)
        for g in (1.3, 2.0, 3.0):
            k = int(np.floor(m / (g + 1)))
            u = m - k * g - (m - k - 1) / g
            desc = np.sort(d)[::-1]
            hi = (g * desc[:k].sum() + u * desc[k] + desc[k + 1 :].sum() / g) / (2.5 * m)
            asc = desc[::-1]
            lo = (g * asc[:k].sum() + u * asc[k] + asc[k + 1 :].sum() / g) / (2.5 * m)
            got = bounds(d, None, np.full(m, 2.5), g)
            np.testing.assert_allclose(got, (lo, hi), rtol=1e-12)


# ---------------------------------------------------------------------------- brute force, LP


@pytest.mark.parametrize("ties", [False, True])
def test_brute_force_small_m(ties):
    rng = np.random.default_rng(2 + ties)
    gammas = np.array([1.0, 1.2, 5 / 3, 2.0, 3.0, 4.5])  # 5/3, 3: M/(Γ+1) integer for some M
    for seed in range(60):
        m = 1 + seed % 8
        da, db, b = _data(rng, m, ties=ties, zeros_in_b=seed % 3 == 0)
        lo, hi = bounds(da, db, b, gammas)
        for i, g in enumerate(gammas):
            blo, bhi = _brute_force(da - db, b, g)
            assert lo[i] == pytest.approx(blo, rel=1e-10, abs=1e-12)
            assert hi[i] == pytest.approx(bhi, rel=1e-10, abs=1e-12)
    # negative differences dominate for some seeds: check they occurred
    assert (da - db < 0).any() or ties


def test_random_feasible_weights_stay_inside():
    rng = np.random.default_rng(4)
    m, g = 30, 2.0
    da, db, b = _data(rng, m)
    lo, hi = bounds(da, db, b, g)
    # random feasible points: convex combinations of random vertices
    base = vertex_weights(g, m)
    for _ in range(200):
        ws = np.stack([base[rng.permutation(m)] for _ in range(3)])
        w = rng.dirichlet(np.ones(3)) @ ws
        r = (w @ (da - db)) / (w @ b)
        assert lo - 1e-12 <= r <= hi + 1e-12


def test_lp_agreement_m50():
    rng = np.random.default_rng(5)
    gammas = np.array([1.0, 1.1, 1.5, 2.0, 3.0])
    for seed in range(6):
        da, db, b = _data(rng, 50, ties=seed == 5, zeros_in_b=seed == 4)
        lo, hi = bounds(da, db, b, gammas)
        llo, lhi = bounds_lp(da, db, b, gammas)
        np.testing.assert_allclose(lo, llo, rtol=1e-7, atol=1e-9)
        np.testing.assert_allclose(hi, lhi, rtol=1e-7, atol=1e-9)


# ---------------------------------------------------------------------------- invariances


def test_bounds_widen_monotonically_in_gamma():
    rng = np.random.default_rng(6)
    gammas = np.linspace(1, 6, 80)
    for ties in (False, True):
        da, db, b = _data(rng, 40, ties=ties)
        lo, hi = bounds(da, db, b, gammas)
        assert np.all(np.diff(hi) >= -1e-12)
        assert np.all(np.diff(lo) <= 1e-12)
        assert np.all(lo <= hi)
        assert hi[-1] > hi[0] and lo[-1] < lo[0]


def test_scale_and_permutation_invariance():
    rng = np.random.default_rng(7)
    da, db, b = _data(rng, 25)
    gammas = np.array([1.0, 1.7, 2.0, 3.0])
    ref = np.array(bounds(da, db, b, gammas))
    for c in (1e-6, 3.7, 1e5):
        np.testing.assert_allclose(bounds(c * da, c * db, c * b, gammas), ref, rtol=1e-11)
    p = rng.permutation(25)
    np.testing.assert_allclose(bounds(da[p], db[p], b[p], gammas), ref, rtol=1e-11)


def test_swapping_procedures_negates_and_swaps():
    rng = np.random.default_rng(8)
    da, db, b = _data(rng, 33)
    gammas = np.array([1.0, 1.4, 2.0, 3.0])
    lo, hi = bounds(da, db, b, gammas)
    lo2, hi2 = bounds(db, da, b, gammas)
    np.testing.assert_allclose(lo2, -hi, rtol=1e-12)
    np.testing.assert_allclose(hi2, -lo, rtol=1e-12)


def test_single_procedure_brackets_ratio():
    rng = np.random.default_rng(9)
    d, _, b = _data(rng, 40)
    r = d.sum() / b.sum()
    lo, hi = bounds(d, None, b, [1.5, 2.0, 3.0])
    assert np.all(lo < r) and np.all(r < hi) and np.all(lo > 0)
    np.testing.assert_array_equal(
        np.array(bounds(d, np.zeros(40), b, [1.5, 2.0, 3.0])), np.array((lo, hi))
    )


def test_within_function_averaging_with_nan_padding():
    rng = np.random.default_rng(10)
    m = 20
    da = rng.exponential(size=(m, 5))
    db = rng.exponential(size=(m, 3))
    db[::4, 1:] = np.nan  # fewer draws for some replications
    b = rng.exponential(size=(m, 5)) + 1
    got = bounds(da, db, b, [1.0, 2.0])
    want = bounds(da.mean(1), np.nanmean(db, 1), b.mean(1), [1.0, 2.0])
    np.testing.assert_allclose(got, want, rtol=1e-14)


def test_scalar_and_vector_gamma_shapes():
    rng = np.random.default_rng(11)
    da, db, b = _data(rng, 10)
    lo, hi = bounds(da, db, b, 2.0)
    assert isinstance(lo, float) and isinstance(hi, float)
    lo2, hi2 = bounds(da, db, b, [2.0])
    assert lo2.shape == (1,) and lo2[0] == lo and hi2[0] == hi


def test_speed_m200_50_gammas():
    rng = np.random.default_rng(12)
    da, db, b = _data(rng, 200)
    gammas = np.linspace(1, 3, 50)
    bounds(da, db, b, gammas)
    t0 = time.perf_counter()
    bounds(da, db, b, gammas)
    assert time.perf_counter() - t0 < 1.0


# ---------------------------------------------------------------------------- critical Γ


def test_critical_gamma_one_when_not_positive():
    rng = np.random.default_rng(13)
    da, _, b = _data(rng, 30)
    assert critical_gamma(da, da, b) == 1.0  # Δ̂ = 0
    assert critical_gamma(da, da + 0.1, b) == 1.0


def test_critical_gamma_inf_when_positive_through_max():
    rng = np.random.default_rng(14)
    da, _, b = _data(rng, 30)
    assert critical_gamma(da + 0.5, da, b) == np.inf  # a beats b on every pseudo-truth
    lo, _ = bounds(da + 0.5, da, b, 3.0)
    assert lo > 0


def test_critical_gamma_brackets_the_crossing():
    rng = np.random.default_rng(15)
    found = 0
    for _ in range(200):
        da, db, b = _data(rng, 40)
        db = db + rng.uniform(-0.6, 0.0)  # push many comparisons into 1 < Γ* < 3
        g = critical_gamma(da, db, b)
        if not (1.0 < g < np.inf):
            lo3, _ = bounds(da, db, b, 3.0)
            lo1, _ = bounds(da, db, b, 1.0)
            assert (g == 1.0 and lo1 <= 0) or (g == np.inf and lo3 > 0)
            continue
        found += 1
        assert 1.0 < g <= 3.0
        lo = bounds(da, db, b, [max(g - 2e-3, 1.0), g, g + 2e-3])[0]
        assert lo[0] > 0 >= lo[2]
        assert lo[1] <= 1e-12
    assert found >= 20


def test_critical_gamma_tolerance_and_range():
    rng = np.random.default_rng(16)
    for _ in range(100):
        da, db, b = _data(rng, 40)
        db = db + rng.uniform(-0.6, 0.0)
        if 1.0 < critical_gamma(da, db, b, gamma_max=10.0) < np.inf:
            break
    g = critical_gamma(da, db, b, gamma_max=10.0, tol=1e-9)
    lo = bounds(da, db, b, [g - 1e-8, g])[0]
    assert lo[0] > 0 >= lo[1]
    assert abs(critical_gamma(da, db, b, gamma_max=10.0) - g) <= 1e-3
    # the crossing does not depend on the (positive) baseline
    assert critical_gamma(da, db, 3 * b + 1, gamma_max=10.0, tol=1e-9) == pytest.approx(g, abs=2e-9)


def test_critical_gamma_is_exact_closed_form():
    # a = D_a − D_b sorted is (−0.5, −0.2, 0.5, 1.0); for 1 < Γ < 3 the minimising vertex has
    # k = floor(4 / (Γ + 1)) = 1 weight at Γ on −0.5, u = 4 − Γ − 2/Γ on −0.2 and 1/Γ on the
    # rest, so Γ · min Σ w a = −0.3 Γ² − 0.8 Γ + 1.9 and Γ* is that quadratic's positive root.
    # A bracket of 1e-3 gave 1.515625, printed "1.516" against the exact "1.515".
    exact = (-0.8 + np.sqrt(0.64 + 4 * 0.3 * 1.9)) / (2 * 0.3)
    got = critical_gamma([1.0, 2.0, 3.0, 4.0], [1.2, 1.0, 2.5, 4.5], np.ones(4))
    assert abs(got - exact) <= 1e-11
    assert format_critical(got) == "1.515"


def test_critical_gamma_ends_and_is_exact_far_out():
    # a = (−1e-6, 1): the lower bound is (1 + 1e-6)/Γ − 2e-6, so Γ* = (1 + 1e-6) / 2e-6 =
    # 500000.5; an absolute 1e-12 bracket cannot be reached there (floats are 6e-11 apart)
    # and the bisection never ended
    import threading
    got = []
    search = threading.Thread(target=lambda: got.append(critical_gamma(
        [0.0, 1.0], [1e-6, 0.0], np.ones(2), gamma_max=1e6)), daemon=True)
    search.start()
    search.join(timeout=20)
    assert got, "critical_gamma did not end"
    assert got[0] == pytest.approx(500000.5, rel=1e-11)


def test_format_critical():
    assert format_critical(np.inf) == "> 3"
    assert format_critical(np.inf, gamma_max=5.0) == "> 5"
    assert format_critical(1.0) == "1"
    assert format_critical(2.41) == "2.410"
    assert format_critical(2.9504) == "2.950"
    with pytest.raises(ConfigurationError, match="value"):
        format_critical(float("nan"))


# ---------------------------------------------------------------------------- bad input


def test_bad_input_names_the_argument():
    d, b = np.ones(5), np.ones(5)
    with pytest.raises(DataError, match="denominator must be nonnegative"):
        bounds(d, None, -b)
    with pytest.raises(DataError, match="denominator is zero"):
        bounds(d, None, 0 * b)
    with pytest.raises(DataError, match="numerator_a has 4 replications"):
        bounds(np.ones(4), None, b)
    with pytest.raises(DataError, match="numerator_b has 6"):
        bounds(d, np.ones(6), b)
    for name, args in (
        ("numerator_a", ([np.nan, 1, 1, 1, 1], d, b)),
        ("numerator_b", (d, [1, 1, np.inf, 1, 1], b)),
        ("denominator", (d, d, [1, 1, 1, 1, np.nan])),
    ):
        with pytest.raises(DataError, match=f"{name} contains NaN"):
            bounds(*args)
    with pytest.raises(DataError, match="numerator_a has replications with no finite draw"):
        bounds(np.array([[1.0, np.nan], [np.nan, np.nan]]), None, np.ones(2))
    with pytest.raises(DataError, match="denominator must be 1-D"):
        bounds(d, None, np.ones((5, 1, 1)))
    with pytest.raises(DataError, match="numerator_a is empty"):
        bounds([], None, [])
    with pytest.raises(ConfigurationError, match="gamma must be >= 1"):
        bounds(d, None, b, 0.5)
    with pytest.raises(ConfigurationError, match="gamma must be >= 1"):
        bounds(d, None, b, [1.0, 0.9])
    with pytest.raises(ConfigurationError, match="gamma must be finite"):
        bounds(d, None, b, np.nan)
    with pytest.raises(ConfigurationError, match="gamma must be a scalar or 1-D"):
        bounds(d, None, b, np.ones((2, 2)))
    with pytest.raises(ConfigurationError, match="gamma must be >= 1"):
        bounds_lp(d, None, b, 0.5)
    # an empty grid gave empty bounds; "2" and True were read as Γ = 2 and Γ = 1
    with pytest.raises(ConfigurationError, match="gamma is empty"):
        bounds(d, None, b, [])
    for gamma in ("2", True, ["2"]):
        with pytest.raises(ConfigurationError, match="gamma must be a number or numbers"):
            bounds(d, None, b, gamma)
    with pytest.raises(ConfigurationError, match="gamma_max must be a number"):
        critical_gamma(d, None, b, gamma_max="3")
    assert bounds(d, None, b, [2])[0][0] == bounds(d, None, b, np.float32(2.0))[0]
    with pytest.raises(ConfigurationError, match="gamma_max must be >= 1"):
        critical_gamma(d, None, b, gamma_max=0.5)
    with pytest.raises(ConfigurationError, match="tol must be positive"):
        critical_gamma(d, None, b, tol=0.0)
    with pytest.raises(DataError, match="denominator must be nonnegative"):
        critical_gamma(d, None, -b)
    with pytest.raises(ConfigurationError, match="m must be a positive integer"):
        vertex_weights(2.0, 0)
    assert issubclass(DataError, ValueError) and issubclass(ConfigurationError, ValueError)
