"""Property-based tests (hypothesis) of the core's invariants: r̂ and its SE under a rescaled
discrepancy, antisymmetric contrasts, sensitivity bounds monotone and nested in Γ, a monotone
projection on every ordered pair, and clustered SEs with one observation per cluster."""

from __future__ import annotations

import numpy as np
import pandas as pd
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from hypothesis.extra.numpy import arrays

import restrictiveness as rx
from restrictiveness.eligible.projection import count_violations, monotone_project, ordered_pairs
from restrictiveness.engine.inference import combination_estimate, ratio_estimate
from restrictiveness.engine.sensitivity import bounds

#: deadline=None: the first example compiles numba kernels
FAST = settings(max_examples=30, deadline=None, database=None)


def _losses(m_min=3, m_max=12):
    return st.integers(m_min, m_max).flatmap(lambda m: st.tuples(*[
        arrays(np.float64, m, elements=st.floats(0.01, 10.0)) for _ in range(3)]))


@FAST
@given(_losses(), st.floats(1e-3, 1e3))
def test_restrictiveness_is_invariant_to_rescaling_the_discrepancy(losses, c):
    D, _, B = losses
    r1, se1 = ratio_estimate(D, B)
    r2, se2 = ratio_estimate(c * D, c * B)
    assert r2 == pytest.approx(r1, rel=1e-10)
    assert se2 == pytest.approx(se1, rel=1e-8, abs=1e-12)


@FAST
@given(_losses())
def test_contrasts_are_antisymmetric(losses):
    Da, Db, B = losses
    ab, se_ab = combination_estimate([1.0, -1.0], np.vstack([Da, Db]), B)
    ba, se_ba = combination_estimate([1.0, -1.0], np.vstack([Db, Da]), B)
    assert ab == pytest.approx(-ba, rel=1e-12, abs=1e-14)
    assert se_ab == pytest.approx(se_ba, rel=1e-10, abs=1e-14)
    assert ab == pytest.approx(ratio_estimate(Da, B)[0] - ratio_estimate(Db, B)[0],
                               rel=1e-10, abs=1e-12)


@FAST
@given(_losses(), st.lists(st.floats(1.0, 5.0), min_size=2, max_size=5))
def test_sensitivity_bounds_are_monotone_and_nested_in_gamma(losses, gammas):
    Da, Db, B = losses
    grid = np.sort(np.asarray(gammas))
    lo, hi = bounds(Da, Db, B, grid)
    point = (Da - Db).sum() / B.sum()
    tol = 1e-9 * (1 + abs(point))
    assert (lo <= point + tol).all() and (hi >= point - tol).all()   # contain Γ = 1
    assert (np.diff(lo) <= tol).all() and (np.diff(hi) >= -tol).all()  # nested as Γ grows


@FAST
@given(st.integers(2, 9).flatmap(lambda n: st.tuples(
    arrays(np.float64, (n, 2), elements=st.sampled_from([0.0, 0.5, 1.0])),
    arrays(np.float64, n, elements=st.floats(-5, 5)))),
    st.sampled_from([(1, 1), (1, -1), (1, 0), (-1, 0)]),
    st.sampled_from(["increasing", "decreasing"]))
def test_projection_is_monotone_on_every_ordered_pair(Xg, sign, direction):
    X, g = Xg  # coarse grids: many ties and ordered pairs
    pairs = ordered_pairs(X, np.array(sign))
    out, _ = monotone_project(g, pairs, direction, tol=0.0, max_sweeps=500)
    i, j = pairs
    s = 1.0 if direction == "increasing" else -1.0
    assert (s * out[i] <= s * out[j] + 1e-6).all()
    assert count_violations(s * out, pairs, tol=1e-6) == 0
    # pairwise averaging keeps the total
    assert out.sum() == pytest.approx(g.sum(), abs=1e-9)


@settings(max_examples=15, deadline=None, database=None)
@given(st.integers(0, 10_000))
def test_clustered_se_with_one_observation_per_cluster_is_the_hc1_se(seed):
    """With G = N singleton clusters the cluster formula is G/(G−1)·(N−1)/(N−k)·meat
    = N/(N−k)·meat: the HC1 covariance."""
    rng = np.random.default_rng(seed)
    df = pd.DataFrame({"x": rng.random(25)})
    df["y"] = 0.5 + df["x"] + 0.2 * rng.standard_normal(25)
    df["id"] = np.arange(25)
    est = rx.NLS.from_formula("y ~ a + b * x", df, bounds={"a": (-10, 10), "b": (-10, 10)})
    np.testing.assert_allclose(est.fit("cluster", groups="id").bse, est.fit("HC1").bse,
                               rtol=1e-10)
