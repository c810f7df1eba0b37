"""The monotone projection kernel against its NumPy twin, and its defining properties."""

from __future__ import annotations

import itertools

import numpy as np
import pytest

from restrictiveness.eligible._projection_nb import (
    ordered_pairs_numpy,
    sweep_project,
    sweep_project_numpy,
)
from restrictiveness.eligible.projection import count_violations, monotone_project, ordered_pairs


def _brute_pairs(X, sign):
    out = []
    for i, j in itertools.product(range(len(X)), repeat=2):
        if i == j:
            continue
        ok = all((s > 0 and X[i, k] <= X[j, k]) or (s < 0 and X[i, k] >= X[j, k])
                 or (s == 0 and X[i, k] == X[j, k]) for k, s in enumerate(sign))
        if ok:
            out.append((i, j))
    return out


@pytest.mark.parametrize("sign", [(1, 1, 1), (1, -1, 0), (-1, 1, 1)])
def test_ordered_pairs_brute_force(sign, rng):
    X = rng.integers(0, 3, size=(12, 3)).astype(float)  # ties and equal coordinates
    i, j = ordered_pairs(X, np.array(sign))
    assert list(zip(i.tolist(), j.tolist(), strict=True)) == _brute_pairs(X, sign)
    i2, j2 = ordered_pairs_numpy(X, np.array(sign))
    np.testing.assert_array_equal(i, i2)
    np.testing.assert_array_equal(j, j2)


@pytest.mark.parametrize("sign", [(1, 1, 1), (1, -1, 0), (0, 0, -1), (-1, -1, -1)])
def test_ordered_pairs_kernel_matches_its_twin_on_ties_at_odd_sizes(sign, rng):
    for n in (1, 2, 3, 7, 301):   # vector loops with and without remainders
        X = rng.integers(0, 4, size=(n, 3)).astype(float)
        X[rng.random(n) < 0.2, 1] = -0.0   # -0.0 == 0.0 in every direction
        i, j = ordered_pairs(X, np.array(sign))
        i2, j2 = ordered_pairs_numpy(X, np.array(sign))
        np.testing.assert_array_equal(i, i2)
        np.testing.assert_array_equal(j, j2)
        if n <= 7:
            assert list(zip(i.tolist(), j.tolist(), strict=True)) == _brute_pairs(X, sign)


def test_ordered_pairs_none_and_a_nan_point_ordered_with_nothing():
    antichain = np.array([[0.0, 3.0], [1.0, 2.0], [2.0, 1.0]])
    for X in (np.empty((0, 2)), antichain[:1], antichain):
        i, j = ordered_pairs(X, np.array([1, 1]))
        assert i.tolist() == [] and j.tolist() == []
    # a NaN compares false both ways, so the point is neither below nor above any other (as in
    # the twin; the pair-by-pair kernel had ordered it with every point)
    X = np.array([[0.0, 0.0], [np.nan, 1.0], [1.0, 1.0], [1.0, np.nan]])
    for sign in ([1, 1], [-1, 0]):
        i, j = ordered_pairs(X, np.array(sign))
        i2, j2 = ordered_pairs_numpy(X, np.array(sign))
        assert list(zip(i.tolist(), j.tolist(), strict=True)) == (
            [(0, 2)] if sign == [1, 1] else [])
        np.testing.assert_array_equal(i, i2)
        np.testing.assert_array_equal(j, j2)


@pytest.mark.parametrize("seed", range(5))
@pytest.mark.parametrize("direction", ["increasing", "decreasing"])
def test_kernel_matches_numpy_twin_exactly(seed, direction):
    rng = np.random.default_rng(seed)
    X = rng.random((150, 3))
    g = 3 * rng.standard_normal(150)
    pairs = ordered_pairs(X, np.ones(3))
    sign = 1.0 if direction == "increasing" else -1.0
    a, sa = sweep_project(g, *pairs, sign, 1e-6, 50)
    b, sb = sweep_project_numpy(g, *pairs, sign, 1e-6, 50)
    assert sa == sb
    np.testing.assert_array_equal(a, b)


def test_result_is_monotone_and_monotone_input_is_unchanged(rng):
    X = rng.random((300, 3))
    pairs = ordered_pairs(X, np.ones(3))
    g = rng.standard_normal(300) * 3
    up, sweeps = monotone_project(g, pairs, "increasing")
    assert sweeps < 50 and count_violations(up, pairs) == 0
    down, _ = monotone_project(g, pairs, "decreasing")
    assert count_violations(-down, pairs) == 0
    mono = X.sum(axis=1)
    same, sweeps = monotone_project(mono, pairs)
    assert sweeps == 1
    np.testing.assert_array_equal(same, mono)


def test_tiny_cases_by_hand():
    X = np.array([[0.0], [1.0], [2.0]])
    pairs = ordered_pairs(X, np.array([1]))
    # Row-major pairs (0,1), (0,2), (1,2) on g = (3, 1, 0), updated in place:
    # (0,1): 3 > 1 -> (2, 2, 0); (0,2): 2 > 0 -> (1, 2, 1); (1,2): 2 > 1 -> (1, 1.5, 1.5).
    # The second sweep changes nothing. (The L2 projection would be (4/3, 4/3, 4/3): the
    # pairwise-averaging sweep is a different, order-dependent map.)
    out, sweeps = monotone_project(np.array([3.0, 1.0, 0.0]), pairs, tol=1e-12)
    np.testing.assert_array_equal(out, [1.0, 1.5, 1.5])
    assert sweeps == 2


def test_sweep_order_matters_and_random_order_is_reproducible(rng):
    X = rng.random((200, 3))
    pairs = ordered_pairs(X, np.ones(3))
    g = rng.standard_normal(200) * 3
    a, _ = monotone_project(g, pairs, order="random", rng=np.random.default_rng(1))
    b, _ = monotone_project(g, pairs, order="random", rng=np.random.default_rng(1))
    c, _ = monotone_project(g, pairs)
    np.testing.assert_array_equal(a, b)
    assert count_violations(a, pairs) == 0
    assert not np.allclose(a, c)
    with pytest.raises(ValueError, match="needs an rng"):
        monotone_project(g, pairs, order="random")
