"""Eligible sets you declare or derive from data: restrictions imposed or refused by the
evaluation distribution, and domains from a DataFrame."""

from __future__ import annotations

import re
from dataclasses import dataclass

import numpy as np
import pandas as pd
import pytest

import restrictiveness as rx
from restrictiveness.shared.exceptions import (
    ConfigurationError,
    ConstraintError,
    DataError,
    DomainError,
)


@dataclass(frozen=True)
class Concave(rx.Constraint):
    """Checkable, not imposable."""

    column: str

    def check(self, pred, X, columns):
        return np.ones(len(pred), dtype=bool)

    def describe(self):
        return f"f concave in {self.column}"


@dataclass(frozen=True)
class Floor(rx.Constraint):
    level: float

    def check(self, pred, X, columns):
        return pred >= self.level

    def project(self, values, X, columns):
        return np.maximum(values, self.level)


@dataclass(frozen=True)
class BadFloor(Floor):
    def project(self, values, X, columns):
        return values                    # claims to impose the floor, does not


def test_monotone_gp_refuses_a_constraint_it_cannot_impose():
    box = rx.Box(x=(0, 1))
    with pytest.raises(ConfigurationError, match=r"cannot impose Concave\(column='x'\)"):
        rx.MonotoneGP(rx.EligibleSet(box, rx.Increasing("x"), Concave("x")))
    with pytest.raises(ConfigurationError, match="cannot impose Simplex"):
        rx.MonotoneGP(rx.EligibleSet(box, rx.Simplex()))
    # the contract lives in the base class: a distribution that imposes nothing refuses all
    class Nothing(rx.EvaluationDistribution):
        pass
    with pytest.raises(ConfigurationError, match="it imposes nothing"):
        Nothing().check_constraints([rx.Between(0, 1)])
    Nothing().check_constraints([Floor(0.0)])          # projectable: accepted


def test_a_projectable_constraint_is_imposed_on_every_draw():
    F = rx.EligibleSet(rx.Box(x1=(0, 1), x2=(0, 1)), rx.Increasing("x1"), rx.Decreasing("x2"),
                       rx.Between(0, 1), Floor(0.4))
    prior = rx.MonotoneGP(F, n_eval=200)
    plain = rx.MonotoneGP(rx.EligibleSet(F.domain, rx.Increasing("x1"), rx.Decreasing("x2"),
                                         rx.Between(0, 1)), n_eval=200)
    for seed in range(3):
        truth = prior.draw([20, 40], np.random.default_rng(seed))
        ref = plain.draw([20, 40], np.random.default_rng(seed))
        for n in (20, 40):
            # the same draw, floored: the projection is applied after the link
            np.testing.assert_allclose(truth.eval_y(n), np.maximum(ref.eval_y(n), 0.4))
            np.testing.assert_allclose(truth.train_y(n), np.maximum(ref.train_y(n), 0.4))
    assert (truth.eval_y(40) == 0.4).any()             # the floor binds somewhere
    with pytest.raises(ConstraintError, match="project returned values that its check refuses"):
        rx.MonotoneGP(rx.EligibleSet(F.domain, BadFloor(0.4)), n_eval=50).draw(
            [10], np.random.default_rng(0))
    with pytest.raises(ConfigurationError, match="draws > 1"):
        prior.draw([20], np.random.default_rng(0), draws=2)


def test_finite_set_from_frame_is_the_empirical_distribution():
    rng = np.random.default_rng(1)
    df = pd.DataFrame({"a": rng.integers(0, 3, 500).astype(float),
                       "b": rng.integers(0, 2, 500).astype(float), "w": rng.uniform(0, 2, 500)})
    dom = rx.FiniteSet.from_frame(df, ["a", "b"])
    X, w = dom.evaluation_points(0, rng)
    assert len(X) == len(df[["a", "b"]].drop_duplicates()) == 6
    f = np.sin(X[:, 0]) + X[:, 1] ** 2
    assert w @ f == pytest.approx(np.mean(np.sin(df["a"]) + df["b"] ** 2), rel=1e-12)
    weighted = rx.FiniteSet.from_frame(df, ["a", "b"], weights="w")
    Xw, ww = weighted.evaluation_points(0, rng)
    target = np.average(np.sin(df["a"]) + df["b"] ** 2, weights=df["w"])
    assert ww @ (np.sin(Xw[:, 0]) + Xw[:, 1] ** 2) == pytest.approx(target, rel=1e-12)
    assert dom.columns == ("a", "b")
    with pytest.raises(DomainError, match="not in the data"):
        rx.FiniteSet.from_frame(df, ["a", "zz"])
    with pytest.raises(DomainError, match="nonnegative"):
        rx.FiniteSet.from_frame(df, ["a"], weights=-np.ones(len(df)))
    with pytest.raises(DomainError, match="missing"):
        rx.FiniteSet.from_frame(df.assign(a=np.nan), ["a"])


def test_finite_set_from_frame_without_replacement_subsamples_the_rows():
    """With replace=False the merged rows were drawn at most once: from x = [0, 1, 1, 2] a
    subsample of the four rows was refused ('3 points') and the pair (1, 1), a subsample of
    probability 1/6, never came. Evaluation is the same empirical P_X either way."""
    df = pd.DataFrame({"x": [0.0, 1.0, 1.0, 2.0]})
    dom = rx.FiniteSet.from_frame(df, ["x"], replace=False)
    assert sorted(dom.sample(4, np.random.default_rng(0)).ravel().tolist()) == [0, 1, 1, 2]
    with pytest.raises(DomainError, match="n=5 distinct locations from a finite set of 4"):
        dom.sample(5, np.random.default_rng(0))
    pairs = [sorted(dom.sample(2, np.random.default_rng(seed)).ravel().tolist())
             for seed in range(3000)]
    share = np.mean([p == [1.0, 1.0] for p in pairs])
    assert abs(share - 1 / 6) < 5 * np.sqrt(1 / 6 * 5 / 6 / 3000)  # 0.169 now, 0 before
    X, w = dom.evaluation_points(0, np.random.default_rng(0))
    assert w @ X[:, 0] ** 2 == pytest.approx(np.mean(df["x"] ** 2), rel=1e-12)
    merged = rx.FiniteSet.from_frame(df, ["x"])  # with replacement: one point per location
    assert merged.points.ravel().tolist() == [0, 1, 2] and merged.weights.tolist() == [
        0.25, 0.5, 0.25]


def test_box_from_frame_spans_the_data():
    df = pd.DataFrame({"x": [1.0, 3.0, 2.0], "y": [-1.0, 0.0, 1.0], "c": [5.0, 5.0, 5.0]})
    box = rx.Box.from_frame(df, ["x", "y"], pad=0.25, where=["x + y <= 10"])
    np.testing.assert_allclose(box.lower, [0.5, -1.5])
    np.testing.assert_allclose(box.upper, [3.5, 1.5])
    assert box.columns == ("x", "y") and len(box.where) == 1
    assert rx.Box.from_frame(df, ["x"]).upper.tolist() == [3.0]
    with pytest.raises(DomainError, match=r"\['c'\] are constant"):
        rx.Box.from_frame(df, ["x", "c"])
    with pytest.raises(DomainError, match="pad"):
        rx.Box.from_frame(df, ["x"], pad=-1)


def test_a_convex_hull_samples_as_the_box_cut_by_its_facets():
    """The hull of the unit triangle's corners (and an interior point) is the unit square cut by
    x + y <= 1: the same Sobol points, kept by the same rule, so the same locations bit for bit;
    and the uniform distribution on it (mean the centroid, a quarter of the points below
    x + y = 1/2, whose triangle has a quarter of the area)."""
    tri = rx.ConvexHull(np.array([[0, 0], [1, 0], [0, 1], [0.2, 0.3]]), columns=("x", "y"))
    assert tri.volume == 0.5 and sorted(map(tuple, tri.vertices)) == [(0, 0), (0, 1), (1, 0)]
    X = tri.sample(4096, np.random.default_rng(3))
    box = rx.Box(x=(0, 1), y=(0, 1), where=["x + y <= 1"])
    np.testing.assert_array_equal(X, box.sample(4096, np.random.default_rng(3)))
    np.testing.assert_allclose(X.mean(axis=0), [1 / 3, 1 / 3], atol=1e-3)
    assert abs((X.sum(axis=1) <= 0.5).mean() - 0.25) < 2e-3
    np.testing.assert_array_equal(tri.sample(7, np.random.default_rng(3)), X[:7])  # nested


def test_a_convex_hull_is_the_set_qhulls_triangulation_covers():
    """Against scipy's Delaunay triangulation of the same points (a peer), on points of very
    different scales and far from the origin; the data's own points are inside, to rounding."""
    from scipy.spatial import Delaunay

    rng = np.random.default_rng(1)
    P = rng.normal(size=(200, 3)) * [1e3, 1.0, 1e-3] + [1e6, 0.0, 5.0]
    hull = rx.ConvexHull(P, ["a", "b", "c"])
    assert hull.admissible(P).all()
    R = hull.lower + rng.random((20000, 3)) * (hull.upper - hull.lower)
    inside = Delaunay(P).find_simplex(R) >= 0
    np.testing.assert_array_equal(hull.admissible(R), inside)
    box_volume = np.prod(hull.upper - hull.lower)
    assert abs(inside.mean() - hull.volume / box_volume) < 0.01
    assert hull.admissible(hull.sample(500, rng)).all()


def test_a_convex_hull_from_data_with_further_inequalities_and_one_column():
    df = pd.DataFrame({"a": [0.0, 2.0, 0.0, 0.5, 1.0], "b": [0.0, 0.0, 2.0, 0.5, 1.0]})
    hull = rx.ConvexHull.from_frame(df, ["a", "b"], where=["a <= b"])
    assert hull.volume == 2.0  # the triangle; where cuts the sample, not the hull
    X = hull.sample(200, np.random.default_rng(0))
    assert (X[:, 0] <= X[:, 1] + 1e-12).all() and (X.sum(axis=1) <= 2 + 1e-12).all()
    line = rx.ConvexHull(np.array([[3.0], [1.0], [2.0]]), ["z"])
    assert line.volume == 2.0
    assert line.admissible(np.array([[0.9], [1.0], [3.0], [3.1]])).tolist() == [
        False, True, True, False]


def test_a_convex_hull_refuses_what_has_no_volume_or_is_not_data():
    flat = pd.DataFrame({"a": [0.0, 1.0, 2.0], "b": [1.0, 3.0, 5.0]})  # b = 2a + 1
    with pytest.raises(DomainError, match="hyperplane"):
        rx.ConvexHull.from_frame(flat, ["a", "b"])
    with pytest.raises(DomainError, match=r"\['c'\] are constant"):
        rx.ConvexHull.from_frame(flat.assign(c=1.0), ["a", "c"])
    with pytest.raises(DomainError, match="missing"):
        rx.ConvexHull.from_frame(flat.assign(a=[0.0, np.nan, 1.0]), ["a", "b"])
    with pytest.raises(DomainError, match="not in the data"):
        rx.ConvexHull.from_frame(flat, ["a", "zz"])
    with pytest.raises(DomainError, match="finite"):
        rx.ConvexHull(np.array([[0.0, 0.0], [1.0, np.inf], [0.0, 1.0]]), ["a", "b"])
    with pytest.raises(DomainError, match=r"shape \(k, 2\)"):
        rx.ConvexHull(np.zeros((4, 3)), ["a", "b"])
    with pytest.raises(DomainError, match="distinct names"):
        rx.ConvexHull(np.eye(3), ["a", "a", "b"])
    with pytest.raises(DomainError, match="distinct names"):
        rx.ConvexHull(np.eye(3), [0, 1, 2])
    with pytest.raises(DomainError, match=r"fewer than 4"):  # 3 points in 3 columns
        rx.ConvexHull(np.eye(3), np.array(["a", "b", "c"]))
    named = rx.ConvexHull(np.array([[0, 0], [1, 0], [0, 1]]), np.array(["a", "b"]))
    assert named.columns == ("a", "b") and type(named.columns[0]) is str
    with pytest.raises(DomainError, match="not a domain column"):
        rx.ConvexHull(np.eye(3), ["a", "b", "c"], where=["a <= d"])


def test_a_convex_hull_is_identified_by_its_points_and_survives_pickling():
    """Checkpoints compare reprs: two hulls of different points must not share one."""
    import pickle

    a = rx.ConvexHull(np.array([[0, 0], [1, 0], [0, 1]]), ["x", "y"])
    b = rx.ConvexHull(np.array([[0, 0], [2, 0], [0, 1]]), ["x", "y"])
    assert repr(a) != repr(b) and repr(a) == repr(
        rx.ConvexHull(np.array([[0, 0], [1, 0], [0, 1]]), ["x", "y"]))
    c = pickle.loads(pickle.dumps(a))
    np.testing.assert_array_equal(c.sample(9, np.random.default_rng(0)),
                                  a.sample(9, np.random.default_rng(0)))


def test_a_study_on_the_convex_hull_of_data_equals_one_on_the_same_box_cut():
    """A study needs nothing Box-specific: on the hull of the triangle's corners it gives the
    same r̂ as on the box cut by the triangle's hypotenuse."""
    def run(domain):
        F = rx.EligibleSet(domain, rx.Increasing("u"), rx.Decreasing("v"), rx.Between(0, 1))
        return rx.Study(rx.MonotoneGP(F), {"OLS": rx.OLS("y ~ u + v")}, rx.Constant(),
                        n=[15], replications=3, seed=2).run().restrictiveness.values

    hull = rx.ConvexHull(np.array([[0, 0], [1, 0], [0, 1]]), ["u", "v"])
    r = run(hull)
    np.testing.assert_array_equal(r, run(rx.Box(u=(0, 1), v=(0, 1), where=["u + v <= 1"])))
    assert 0 < r.item() < 1


def test_a_study_on_an_eligible_set_derived_from_data():
    """A FiniteSet's training draws repeat its support points. Ordered both ways, repeats made
    both projections tie them alike, so the blend weight was ½ and (1 − w) g₊ − w g₋ cancelled
    the truths to 0.5 ± 5e-7 (a constant; r̂ a ratio of rounding noise). Now each location has
    one value: truths vary, increase in x1 within every group of x2, and r̂ is a number."""
    rng = np.random.default_rng(2)
    df = pd.DataFrame({"x1": rng.uniform(0, 1, 80), "x2": rng.integers(0, 3, 80).astype(float)})
    F = rx.EligibleSet(rx.FiniteSet.from_frame(df, ["x1", "x2"]), rx.Increasing("x1"),
                       rx.Between(0, 1))
    truth = rx.MonotoneGP(F).draw([30], np.random.default_rng(0))
    y, X = truth.eval_y(30), truth.eval_X
    assert y.std() > 0.1
    for g in range(3):
        inside = X[:, 1] == g
        assert np.all(np.diff(y[inside][np.argsort(X[inside, 0])]) >= -1e-9)
    # a training point repeating a support point carries that point's value
    Xt, yt = truth.train_locations[0][:30], truth.train_y(30)
    at = [np.flatnonzero((X == x).all(axis=1))[0] for x in Xt]
    np.testing.assert_array_equal(yt, y[at])
    res = rx.quick_check("y ~ x1 + x2", rx.MonotoneGP(F), n=[30], replications=4,
                         progress=False)
    assert res.dataset.sizes["replication"] == 4
    assert np.isfinite(res.restrictiveness).all()


def test_monotone_gp_blend_of_the_two_projections_by_hand():
    """g = (1, 0, 2) on x = 0, 1, 2 (increasing). Row-major pairs (0,1), (0,2), (1,2):
    increasing sweep gives g₊ = (½, ½, 2), ‖g₊ − g‖² = ½; decreasing sweep gives
    (1, 0, 2) -> (3/2, 0, 3/2) -> g₋ = (3/2, 3/4, 3/4), ‖g₋ − g‖² = 19/8. So
    w = ½ / (½ + 19/8) = 4/23 and g̃ = (19/23) g₊ − (4/23) g₋ = (3.5, 6.5, 35) / 23."""
    prior = rx.MonotoneGP(rx.EligibleSet(rx.Box(x=(0, 2)), rx.Increasing("x")))
    X = np.array([[0.0], [1.0], [2.0]])
    g_tilde, violations = prior.project(np.array([1.0, 0.0, 2.0]), X, np.random.default_rng(0))
    np.testing.assert_allclose(g_tilde, np.array([3.5, 6.5, 35.0]) / 23, rtol=1e-12)
    assert violations == 0
    # an already increasing g is its own increasing projection: w = 0 leaves it unchanged
    g = np.array([0.0, 1.0, 3.0])
    np.testing.assert_array_equal(prior.project(g, X, np.random.default_rng(0))[0], g)


def test_projection_gives_a_repeated_location_one_value():
    """g = (0, 2, 0.2) at x = (0, 1, 0): one value per location, the mean 0.1 of the repeat's
    latent draws; (0.1, 2) is already increasing, so e₊ = 0, w = 0 and g̃ = (0.1, 2, 0.1) by
    hand. Before, the repeat was a pair ordered both ways, e₊ = 0.02 > 0 and the decreasing
    projection leaked into the blend."""
    prior = rx.MonotoneGP(rx.EligibleSet(rx.Box(x=(0, 1)), rx.Increasing("x")))
    g_tilde, violations = prior.project(np.array([0.0, 2.0, 0.2]),
                                        np.array([[0.0], [1.0], [0.0]]), np.random.default_rng(0))
    np.testing.assert_allclose(g_tilde, [0.1, 2.0, 0.1], rtol=0, atol=1e-15)
    assert violations == 0
    # without repeats nothing changes: the same as projecting the distinct points directly
    g = np.array([0.3, -0.5, 1.2, 0.1])
    X = np.array([[0.2], [0.9], [0.5], [0.1]])
    single = prior.project(g, X, np.random.default_rng(0))[0]
    np.testing.assert_array_equal(prior.project(np.r_[g, g[2]], np.r_[X, X[2:3]],
                                                np.random.default_rng(0))[0], np.r_[single,
                                                                                    single[2]])


def test_monotonicity_that_orders_no_pair_of_points_is_refused():
    """Points are ordered only when they agree in every unconstrained column (SPEC §6): on a
    continuous (x1, x2) domain, Increasing("x1") alone orders no pair and imposed nothing."""
    with pytest.raises(ConstraintError, match=r"the monotonicity in \['x1'\] orders no two of "
                                              r"2000 distinct points .* \['x2'\]"):
        rx.MonotoneGP(rx.EligibleSet(rx.Box(x1=(0, 1), x2=(0, 1)), rx.Increasing("x1")))
    rng = np.random.default_rng(0)
    df = pd.DataFrame({"x1": rng.uniform(0, 1, 50), "x2": rng.uniform(0, 1, 50)})
    with pytest.raises(ConstraintError, match=r"orders no two of 50 distinct points"):
        rx.MonotoneGP(rx.EligibleSet(rx.FiniteSet.from_frame(df, ["x1", "x2"]),
                                     rx.Decreasing("x1")))
    # a shared value of x2 is enough, and constraining x2 too orders the continuous box
    df.loc[1, "x2"] = df.loc[0, "x2"]
    rx.MonotoneGP(rx.EligibleSet(rx.FiniteSet.from_frame(df, ["x1", "x2"]), rx.Decreasing("x1")))
    rx.MonotoneGP(rx.EligibleSet(rx.Box(x1=(0, 1), x2=(0, 1)), rx.Increasing("x1"),
                                 rx.Increasing("x2")))


@dataclass(frozen=True)
class _Projected(rx.Constraint):
    """An imposable restriction whose projection is given (checks pass by construction)."""

    move: object

    def check(self, pred, X, columns):
        return np.ones(len(pred), dtype=bool)

    def project(self, values, X, columns):
        return self.move(values, X)

    def describe(self):
        return "projected"


@pytest.mark.parametrize("move, constraints, broken", [
    # a cap that falls with x: the truths decreased where Increasing('x') holds
    (lambda v, X: np.minimum(v, 1 - X[:, 0]), (rx.Increasing("x"),), "broke the monotonicity"),
    # a floor above the range: every truth was 2.0, outside Between(0, 1)
    (lambda v, X: np.maximum(v, 2.0), (rx.Increasing("x"), rx.Between(0, 1)), "outside Between"),
    (lambda v, X: v * np.nan, (rx.Increasing("x"),), "not finite"),
])
def test_a_projection_that_undoes_the_eligible_set_is_refused(move, constraints, broken):
    """The draws satisfied the projection's own check but no longer the other constraints,
    silently: the pseudo-truths were not in the eligible set."""
    F = rx.EligibleSet(rx.Box(x=(0, 1)), *constraints, _Projected(move))
    with pytest.raises(ConstraintError, match=broken):
        rx.MonotoneGP(F, n_eval=40).draw([15], np.random.default_rng(5))


def test_a_projection_that_keeps_the_eligible_set_is_imposed():
    F = rx.EligibleSet(rx.Box(x=(0, 1)), rx.Increasing("x"), rx.Between(0, 1),
                       _Projected(lambda v, X: np.maximum(v, 0.4)))
    truth = rx.MonotoneGP(F, n_eval=40).draw([15], np.random.default_rng(5))
    y = truth.eval_y(15)[np.argsort(truth.eval_X[:, 0])]
    assert y.min() == 0.4 and (np.diff(y) >= 0).all() and y.max() < 1


@pytest.mark.parametrize("make", [rx.Box.from_frame, rx.FiniteSet.from_frame])
def test_from_frame_refuses_columns_it_would_misread(make):
    """Strings that look like numbers and a categorical's categories were read as numbers; a
    column named twice made a Box of fewer dimensions; a repeated data column crashed."""
    df = pd.DataFrame({"u": [1.0, 3.0, 2.0], "v": [0.0, 1.0, 5.0]})
    assert make(df, ["u", "v"]).columns == ("u", "v")
    for bad in (df.u.astype(str), pd.Series(pd.Categorical(df.u))):
        with pytest.raises(DomainError, match="column 'u' is not numeric"):
            make(df.assign(u=bad), ["u", "v"])
    with pytest.raises(DomainError, match=r"\['u'\] occur more than once"):
        make(df, ["u", "v", "u"])
    with pytest.raises(DomainError, match=r"\['u'\] occur more than once"):
        make(pd.concat([df, df[["u"]]], axis=1), ["u", "v"])


def test_from_frame_weights_series_is_aligned_by_label():
    """A Series of weights was taken by position, so weights from a reordered frame went to
    the wrong rows; a text column of weights crashed."""
    df = pd.DataFrame({"u": [1.0, 2.0, 3.0]}, index=[10, 11, 12])
    w = pd.Series([1.0, 2.0, 7.0], index=[12, 11, 10])   # u = 1 has weight 7
    dom = rx.FiniteSet.from_frame(df, ["u"], weights=w)
    assert dom.points.ravel().tolist() == [1.0, 2.0, 3.0]
    np.testing.assert_allclose(dom.weights, [0.7, 0.2, 0.1], rtol=1e-15)
    with pytest.raises(DataError, match="lacks 1 of the data's row labels"):
        rx.FiniteSet.from_frame(df, ["u"], weights=w.iloc[:2])
    with pytest.raises(DomainError, match="column 'w' is not numeric"):
        rx.FiniteSet.from_frame(df.assign(w=["1", "2", "3"]), ["u"], weights="w")


def test_a_range_bound_in_a_decreasing_column_is_refused():
    """The link lo + (hi - lo) expit(g) put a rising bound on a rule that must fall:
    Decreasing('x') with Between(0, 'x') drew truths increasing in x in 20 of 20 draws,
    while the violations diagnostic (counted on the latent g) said 0."""
    box = rx.Box(x=(1, 2))
    for between in (rx.Between(0, "x"), rx.Between("x", 5)):
        with pytest.raises(ConfigurationError, match=r"cannot impose Between.* with "
                                                     r"Decreasing\('x'\)"):
            rx.MonotoneGP(rx.EligibleSet(box, rx.Decreasing("x"), between))
    # a bound in an increasing column moves with the order: the draws stay monotone, between
    # their bounds
    prior = rx.MonotoneGP(rx.EligibleSet(box, rx.Increasing("x"), rx.Between(0, "x")),
                          n_eval=200)
    for seed in range(10):
        truth = prior.draw([20], np.random.default_rng(seed))
        x = truth.eval_X[:, 0]
        y = truth.eval_y(20)[np.argsort(x)]
        assert (np.diff(y) >= -1e-12).all()
        assert ((0 < y) & (y < np.sort(x))).all()


def test_further_draws_on_a_finite_domain_are_the_truth_at_its_support_points():
    """Training draws of a FiniteSet repeat its support points, which are also the evaluation
    points: the interpolation matrix was singular, so every K > 1 draw on a finite domain
    raised LinAlgError. The labels of draws k >= 1 are the truth at those points."""
    F = rx.EligibleSet(rx.FiniteSet(np.linspace(0, 1, 6)[:, None], ("x",)), rx.Increasing("x"),
                       rx.Between(0, 1))
    truth = rx.MonotoneGP(F).draw([10], np.random.default_rng(0), draws=3)
    at = {x: y for x, y in zip(truth.eval_X[:, 0].tolist(), truth.eval_y(10), strict=True)}
    for k in range(3):
        expected = [at[x] for x in truth.train_X(10, k)[:, 0].tolist()]
        np.testing.assert_allclose(truth.train_y(10, k), expected, rtol=0, atol=1e-12)
    res = rx.Study(rx.MonotoneGP(F), {"linear": rx.OLS("y ~ x")}, baseline=rx.Constant(),
                   n=[10], replications=4, draws=2).run(progress=False)
    assert np.isfinite(res.restrictiveness.values).all()


def test_finite_set_sizes_it_cannot_draw_are_refused_by_name():
    """Points of weight 0 are never drawn: without replacement, n above the points of positive
    weight was numpy's bare 'Fewer non-zero entries in p than size' (in a study too); 2.5 and
    -1 were numpy's TypeError and 'negative dimensions'."""
    dom = rx.FiniteSet(np.array([[0.0], [1.0], [2.0]]), ("x",), weights=np.array([0, 1, 1.0]),
                       replace=False)
    assert sorted(dom.sample(2, np.random.default_rng(0)).ravel().tolist()) == [1.0, 2.0]
    with pytest.raises(DomainError, match=r"n=3 distinct locations from a finite set of 3 "
                                          r"points, 2 of positive weight; lower n"):
        dom.sample(3, np.random.default_rng(0))
    for size in (2.5, -1, True):
        with pytest.raises(DomainError, match="size must be a whole number >= 0"):
            dom.sample(size, np.random.default_rng(0))


def test_a_linear_inequality_dividing_by_zero_is_refused_by_name():
    with pytest.raises(DomainError, match=r"'x/0 <= 1' divides by zero"):
        rx.Box(x=(0, 1), where=["x/0 <= 1"])
    assert rx.LinearInequality.parse("+x <= 1/2").rhs == 0.5   # unary plus reads as written


def test_a_truth_without_monotonicity_has_one_value_per_location():
    """A FiniteSet's training draws repeat its support points; without a monotone column the
    latent draws at a repeated point (which differ by the jitter) were kept apart, so a training
    label differed from the truth at the same point by up to 1% of the truths' sd: the
    'noise-free' sample was not the truth, and memorising it had a positive loss."""
    F = rx.EligibleSet(rx.FiniteSet(np.linspace(0, 1, 5)[:, None], ("x",)), rx.Between(0, 1))
    prior = rx.MonotoneGP(F)
    for seed in range(3):
        truth = prior.draw([20], np.random.default_rng(seed))
        at = {x: y for x, y in zip(truth.eval_X[:, 0].tolist(), truth.eval_y(20), strict=True)}
        expected = [at[x] for x in truth.train_X(20)[:, 0].tolist()]
        np.testing.assert_array_equal(truth.train_y(20), expected)


def test_monotone_gp_draw_refuses_a_number_of_draws_that_is_not_whole():
    """draw(draws=1.5) and draw(draws=True) were read as one draw, silently."""
    prior = rx.MonotoneGP(rx.EligibleSet(rx.Box(x=(0, 1)), rx.Increasing("x")), n_eval=10)
    for draws in (1.5, True, 0):
        with pytest.raises(ConfigurationError, match=r"draws must be a whole number >= 1"):
            prior.draw([5], np.random.default_rng(0), draws=draws)
    assert prior.draw([5], np.random.default_rng(0), draws=2.0).draws == 2


def test_box_sampling_leaves_the_process_warning_filters_alone(monkeypatch):
    """Box.sample silenced scipy's Sobol balance warning with catch_warnings, which swaps the
    process's filters: a fit on another thread (Study(concurrency=N)) took them for the
    caller's and restored them for good. Batches doubling the points drawn never warn."""
    import warnings

    changes = []
    monkeypatch.setattr(warnings, "_filters_mutated", lambda: changes.append(1))
    box = rx.Box(x=(0, 1), y=(0, 1), where=["x + y <= 0.3"])  # admits 4.5%: several batches
    with warnings.catch_warnings():
        warnings.simplefilter("error")  # a Sobol balance warning would raise
        changes.clear()
        X = box.sample(200, np.random.default_rng(0))
        assert changes == []
    assert X.shape == (200, 2) and (X.sum(axis=1) <= 0.3).all()


@pytest.mark.parametrize("kernel", [rx.Matern32(variance=10.0), rx.Matern52(variance=10.0),
                                    rx.SquaredExponential(variance=10.0)])
def test_interpolation_is_exact_at_the_union_and_survives_a_singular_kernel(kernel):
    """``interpolate`` is documented exact at the union's points: on a line, K (230 points,
    length scale 1) has condition number 7e14 (Matérn-3/2) to 1e19 (squared exponential), and
    the solve reproduced the truth to 6e-6 and 6e-4 only, while the squared exponential's
    factorisation failed, so a K > 1 study on this eligible set stopped with LinAlgError."""
    F = rx.EligibleSet(rx.Box(x=(0, 1)), rx.Increasing("x"), rx.Between(0, 1))
    prior = rx.MonotoneGP(F, kernel=kernel, n_eval=200)
    truth = prior.draw([30], np.random.default_rng(2), draws=2)
    X = np.concatenate([truth.train_X(30), truth.eval_X])
    y = np.concatenate([truth.train_y(30), truth.eval_y(30)])
    np.testing.assert_array_equal(truth.interpolate(X, 30), y)
    # a point of the union among new ones keeps its value
    assert truth.interpolate(np.array([[0.0], [X[7, 0]], [1.0]]), 30)[1] == y[7]
    # the further draw's labels: a monotone truth's values near its neighbours on the union
    Xn, yn = truth.train_X(30, 1)[:, 0], truth.train_y(30, 1)
    order = np.argsort(X[:, 0])
    near = np.interp(Xn, X[order, 0], y[order])
    assert np.abs(yn - near).max() < 0.05
    res = rx.Study(prior, {"linear": rx.OLS("y ~ x")}, baseline=rx.Constant(), n=[30],
                   replications=3, draws=2).run(progress=False)
    assert np.isfinite(res.restrictiveness.values).all()


def test_a_procedure_constraint_naming_a_column_the_study_lacks_is_refused_up_front():
    """GPRegression(constraints=[Between(0, "w")]) in a study without w: every fit failed at
    prediction, and the study reported r̂ = 1.000 (the baseline's) with a warning."""
    F = rx.EligibleSet(rx.Box(x1=(0, 1), x2=(0, 1)), rx.Increasing("x1", "x2"), rx.Between(0, 1))
    prior = rx.MonotoneGP(F, n_eval=50)
    gp = rx.GPRegression("y ~ x1", constraints=[rx.Between(0, "w")])
    with pytest.raises(ConfigurationError, match=r"GPRegression constraint Between\(lower=0, "
                       r"upper='w'\) cannot apply to this study: constraint bound 'w' is not a "
                       r"covariate; covariates are \['x1', 'x2'\]"):
        rx.Study(prior, {"gp": gp}, rx.Constant(), n=[10], replications=2)
    # a bound in a column the formula leaves out is honoured: predictions clipped at x2
    clipped = rx.GPRegression("y ~ x1", constraints=[rx.Between(0, "x2")])
    free = rx.GPRegression("y ~ x1")
    X = np.random.default_rng(0).uniform(size=(12, 2))
    sample = rx.Sample(X, X[:, 0] + 0.5, ("x1", "x2"))
    Xp = np.array([[0.5, 0.1], [0.5, 0.9], [0.2, 2.0]])
    unclipped = free.fit(sample).predict(Xp)
    np.testing.assert_array_equal(clipped.fit(sample).predict(Xp),
                                  np.clip(unclipped, 0, Xp[:, 1]))
    assert unclipped[0] > 0.1  # the clip binds there


def test_a_gp_kernel_with_the_wrong_number_of_length_scales_is_refused_up_front():
    """Three length scales for the two covariates of "y ~ x1 + x2": every fit failed and the
    study reported r̂ = 1.000 (the baseline's) after running all its replications."""
    F = rx.EligibleSet(rx.Box(x1=(0, 1), x2=(0, 1)), rx.Increasing("x1", "x2"), rx.Between(0, 1))
    prior = rx.MonotoneGP(F, n_eval=50)
    three = rx.Matern32(lengthscale=(1.0, 2.0, 3.0))
    for formula in ("y ~ x1 + x2", None):
        with pytest.raises(ConfigurationError, match=re.escape(
                f"GPRegression({formula!r}): Matern32: lengthscale has 3 values for 2 "
                "covariates")):
            rx.Study(prior, {"gp": rx.GPRegression(formula, kernel=three)}, rx.Constant(),
                     n=[10], replications=2)
    # one per covariate is the GP on the scaled coordinates: the same as a scalar length scale
    # on the covariates divided by their length scales
    X = np.random.default_rng(1).uniform(size=(15, 2))
    y = np.sin(3 * X[:, 0]) + X[:, 1]
    per = rx.GPRegression("y ~ x1 + x2", kernel=rx.Matern32(lengthscale=(0.5, 2.0)))
    scaled = rx.GPRegression("y ~ x1 + x2", kernel=rx.Matern32(lengthscale=1.0))
    Xp = np.random.default_rng(2).uniform(size=(5, 2))
    np.testing.assert_allclose(per.fit(rx.Sample(X, y, ("x1", "x2"))).predict(Xp),
                               scaled.fit(rx.Sample(X / [0.5, 2.0], y, ("x1", "x2")))
                               .predict(Xp / [0.5, 2.0]), rtol=1e-9)


@pytest.mark.parametrize("domain, kernel", [
    (rx.FiniteSet(np.linspace(0, 1, 6)[:, None], ("x",)), rx.Matern32(variance=10.0)),
    (rx.Box(x=(0, 1)), rx.SquaredExponential(variance=2.0)),
])
def test_a_covariance_that_is_not_positive_definite_names_the_jitter(domain, kernel):
    """jitter=0 on a FiniteSet (its draws repeat points) or with a squared exponential was
    numpy's bare LinAlgError "leading minor of the array is not positive definite", from
    inside a study; the jitter the message suggests draws an eligible truth."""
    F = rx.EligibleSet(domain, rx.Increasing("x"), rx.Between(0, 1))
    with pytest.raises(ConfigurationError, match=re.escape(
            f"is not numerically positive definite with jitter=0.0 ({kernel!r}") + r".*give a "
            f"jitter of about 1e-5 times the variance \\({1e-5 * kernel.variance:.3g}\\)"):
        rx.MonotoneGP(F, kernel=kernel, jitter=0.0, n_eval=200).draw([10],
                                                                     np.random.default_rng(0))
    truth = rx.MonotoneGP(F, kernel=kernel, jitter=1e-5 * kernel.variance, n_eval=200).draw(
        [10], np.random.default_rng(0))
    x, y = truth.eval_X[:, 0], truth.eval_y(10)
    assert (np.diff(y[np.argsort(x)]) >= -1e-12).all() and ((0 < y) & (y < 1)).all()
    assert y.std() > 0.01  # a truth, not a constant
