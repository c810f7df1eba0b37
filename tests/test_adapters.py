"""Black-box adapters: scikit-learn peers, log-share regression, FLAML AutoML, reproducibility."""

from __future__ import annotations

import sys
import time

import numpy as np
import pandas as pd
import pytest
from scipy.spatial.distance import cdist, pdist

import restrictiveness as rx
from restrictiveness.demand.learners import GridGP, LogShareRegressor, logit_shares
from restrictiveness.procedures.learners import AutoML, SklearnRegressor, seed_estimator
from restrictiveness.shared.exceptions import DataError

COLS = ("prices", "sugar", "mushy")


def _logit_markets(n, rng, J=24, fixed_effects=True):
    """Plain logit with product fixed effects: log(s_j/s_0) = xi_j - 2 p_j + 0.1 sugar_j."""
    X = np.stack([rng.uniform(1, 3, (n, J)), rng.uniform(0, 15, (n, J)),
                  rng.integers(0, 2, (n, J)).astype(float)], axis=-1)
    xi = np.linspace(-1.0, 1.0, J) if fixed_effects else np.zeros(J)
    v = xi - 2.0 * X[..., 0] + 0.1 * X[..., 1] + 0.3 * X[..., 2]
    e = np.exp(v)
    return X, e / (1 + e.sum(axis=1, keepdims=True))


def _valid_shares(s):
    return bool(np.isfinite(s).all() and (s > 0).all() and (s.sum(axis=1) < 1).all())


# ------------------------------------------------------------------ scikit-learn peers


def test_sklearn_gp_reproduces_builtin_gp_regression_in_a_lottery_study():
    """GaussianProcessRegressor with the paper's fixed kernel, through SklearnRegressor and the
    failure protocol's clipping, gives the built-in GP regression's losses on the same draws."""
    from sklearn import gaussian_process as gp
    from sklearn.gaussian_process import kernels
    kernel = kernels.ConstantKernel(10.0, "fixed") * kernels.Matern(
        length_scale=1.0, nu=1.5, length_scale_bounds="fixed")
    sk = SklearnRegressor(gp.GaussianProcessRegressor(kernel=kernel, optimizer=None, alpha=1e-12),
                          "ce ~ z_hi + z_lo + p", label="sklearn GP")
    study = rx.lottery.study(procedures={"GP regression": rx.lottery.gp_regression(),
                                         "sklearn GP": sk},
                             n=[20, 50], replications=3, n_eval=150, seed=4)
    res = study.run(progress=False)
    loss = res.dataset["loss"].sel(discrepancy="mse")
    ours = loss.sel(procedure="GP regression").values
    theirs = loss.sel(procedure="sklearn GP").values
    assert int(res.dataset["failed"].sum()) == 0
    np.testing.assert_allclose(theirs, ours, rtol=1e-6)
    base = res.dataset["baseline_loss"].sel(discrepancy="mse").values
    assert not np.allclose(ours, base)  # the comparison is not between two baselines


def test_sklearn_regressor_random_state_from_the_rng():
    from sklearn import ensemble
    rng = np.random.default_rng(0)
    X = rng.random((60, 2))
    s = rx.Sample(X, np.sin(4 * X[:, 0]) + X[:, 1], ("a", "b"))
    proc = SklearnRegressor(ensemble.RandomForestRegressor(n_estimators=8, max_features=1))
    Xq = rng.random((30, 2))
    p1 = proc.fit(s, np.random.default_rng(5)).predict(Xq)
    p2 = proc.fit(s, np.random.default_rng(5)).predict(Xq)
    p3 = proc.fit(s, np.random.default_rng(6)).predict(Xq)
    np.testing.assert_array_equal(p1, p2)
    assert not np.allclose(p1, p3)
    assert proc.estimator.random_state is None  # the template is cloned, never mutated


def test_sklearn_pipeline_and_meta_estimator_seeds_come_from_the_study():
    """The seeds of a pipeline's steps and of a meta-estimator's inner estimator are drawn from
    the study's stream: a rerun and an n_jobs=2 run give the same numbers, another seed other
    numbers (the top-level random_state alone left them on the global random state)."""
    from sklearn.compose import TransformedTargetRegressor
    from sklearn.ensemble import RandomForestRegressor
    from sklearn.pipeline import make_pipeline
    from sklearn.preprocessing import StandardScaler
    from sklearn.tree import DecisionTreeRegressor
    F = rx.EligibleSet(rx.Box(x1=(0, 1), x2=(0, 1)), rx.Increasing("x1", "x2"),
                       rx.Between(0, 1))
    procs = {"pipeline": SklearnRegressor(make_pipeline(
                 StandardScaler(), RandomForestRegressor(n_estimators=3, max_features=1))),
             "target": SklearnRegressor(TransformedTargetRegressor(
                 regressor=DecisionTreeRegressor(splitter="random")))}

    def losses(seed, n_jobs=1):
        study = rx.Study(rx.MonotoneGP(F, n_eval=40), procs, baseline=rx.Constant(),
                         n=[12], replications=2, seed=seed)
        return study.run(progress=False, n_jobs=n_jobs).dataset["loss"].values

    first = losses(0)
    np.testing.assert_array_equal(first, losses(0))
    np.testing.assert_array_equal(first, losses(0, n_jobs=2))
    assert not np.allclose(first, losses(1))
    # the template keeps its unset seeds
    assert procs["pipeline"].estimator.get_params()["randomforestregressor__random_state"] \
        is None


class _GlobalDraws:
    """A regressor that draws from numpy's and Python's global random states in fit and
    predict, as some third-party estimators do."""

    def get_params(self, deep=True):
        return {}

    def set_params(self, **params):
        return self

    def fit(self, X, y):
        import random
        self.level_ = float(np.mean(y)) + 0.1 * np.random.rand() + 0.1 * random.random()  # noqa: NPY002
        return self

    def predict(self, X):
        return self.level_ + 0.01 * np.random.rand(len(X))  # noqa: NPY002


def test_an_estimator_on_the_global_random_state_is_reproducible_at_any_worker_count():
    """np.random.rand in an estimator's fit gave other numbers on a rerun of the same study
    (the global state carried on from fit to fit) and with n_jobs=2 (each worker its own):
    seeded per fit from the fit's stream, the numbers are the same, and the caller's own global
    state is left as it was."""
    import random
    F = rx.EligibleSet(rx.Box(x1=(0, 1), x2=(0, 1)), rx.Increasing("x1", "x2"),
                       rx.Between(0, 1))

    def losses(seed, n_jobs=1):
        study = rx.Study(rx.MonotoneGP(F, n_eval=40), {"draws": SklearnRegressor(_GlobalDraws())},
                         baseline=rx.Constant(), n=[12], replications=3, seed=seed)
        return study.run(progress=False, n_jobs=n_jobs).dataset["loss"].values

    np.random.seed(123)  # noqa: NPY002
    random.seed(123)
    first = losses(0)
    # the caller's own states, untouched by the run's fits
    assert np.random.rand() == np.random.RandomState(123).rand()  # noqa: NPY002
    assert random.random() == random.Random(123).random()
    np.testing.assert_array_equal(first, losses(0))
    np.testing.assert_array_equal(first, losses(0, n_jobs=2))
    assert not np.allclose(first, losses(1))
    # the log-share regressor's fits and predictions alike
    X, y = _logit_markets(30, np.random.default_rng(6), J=3)
    s = rx.Sample(X, y, COLS, "shares")
    fits = [LogShareRegressor(_GlobalDraws()).fit(s, np.random.default_rng(r)) for r in (1, 1, 2)]
    np.testing.assert_array_equal(fits[0].predict(X), fits[1].predict(X))
    np.testing.assert_array_equal(fits[0].predict(X), fits[0].predict(X))
    assert not np.allclose(fits[0].predict(X), fits[2].predict(X))


def test_seeded_fits_overlapping_on_threads_keep_their_own_draws():
    """On a dask worker with several threads, fits overlap: one drew from the other's seed
    (0.873 for the draw 0.076 of its own) and the caller was left with a fit's state."""
    import threading
    import time

    from restrictiveness.procedures.learners import global_seed
    from restrictiveness.shared.random_state import seeded_globals

    alone = {}
    for seed in (7, 8):
        with seeded_globals(seed):
            alone[seed] = np.random.rand()  # noqa: NPY002
    np.random.seed(123)  # noqa: NPY002
    got, first_in = {}, threading.Event()

    def fit(seed, wait):
        with seeded_globals(seed):
            first_in.set()
            time.sleep(wait)
            got[seed] = np.random.rand()  # noqa: NPY002

    # the first draws while the second, come in after it, is still inside (if it could be)
    first = threading.Thread(target=fit, args=(7, 0.3))
    first.start()
    first_in.wait()
    second = threading.Thread(target=fit, args=(8, 0.6))
    second.start()
    first.join()
    second.join()
    assert got == alone
    assert np.random.rand() == np.random.RandomState(123).rand()  # noqa: NPY002
    # a Generator on a legacy bit generator has no seed sequence to spawn from (TypeError)
    legacy = np.random.Generator(np.random.RandomState(0)._bit_generator)
    assert global_seed(legacy) == np.random.Generator(
        np.random.RandomState(0)._bit_generator).integers(2**32)


def test_sklearn_regressor_on_markets_names_the_market_learner():
    """Markets of products reached the regressor ("Found array with dim 3"), and a study of the
    demand prior failed every fit with it; the error now says what to use instead."""
    from sklearn.linear_model import LinearRegression
    X, y = _logit_markets(6, np.random.default_rng(0), J=3)
    markets = rx.Sample(X, y, COLS, "shares")
    for formula in (None, "shares ~ prices + sugar"):
        with pytest.raises(DataError, match=r"SklearnRegressor: needs a table sample, covariates X "
                                            r"\(n, d\) and one response y \(n,\); got X of shape "
                                            r"\(6, 3, 3\) and y of shape \(6, 3\)\. For markets of "
                                            r"products use restrictiveness\.demand\.learners\."
                                            r"LogShareRegressor\(<regressor>\)"):
            SklearnRegressor(LinearRegression(), formula).fit(markets, np.random.default_rng(0))
    rule = LogShareRegressor(LinearRegression()).fit(markets, np.random.default_rng(0))
    assert _valid_shares(rule.predict(X))


def test_a_search_with_a_shuffling_splitter_is_seeded_from_the_study():
    """GridSearchCV(cv=KFold(shuffle=True)): the splitter is a parameter, not an estimator, so
    its seed was no parameter to set and the folds came from the global random state (a rerun
    of the same study gave other numbers)."""
    from sklearn.base import clone
    from sklearn.model_selection import GridSearchCV, KFold
    from sklearn.tree import DecisionTreeRegressor
    search = GridSearchCV(DecisionTreeRegressor(random_state=0), {"max_depth": [1, 2, 3]},
                          cv=KFold(3, shuffle=True))
    seeded = []
    for seed in (1, 1, 2):
        est = clone(search)
        seed_estimator(est, np.random.default_rng(seed))
        seeded.append(est.cv.random_state)
    assert isinstance(seeded[0], int) and seeded[0] == seeded[1] != seeded[2]
    assert search.cv.random_state is None  # the template's splitter is not touched
    unshuffled = clone(GridSearchCV(DecisionTreeRegressor(), {"max_depth": [1]}, cv=KFold(3)))
    seed_estimator(unshuffled, np.random.default_rng(1))
    assert unshuffled.cv.random_state is None  # KFold refuses a seed without shuffling
    F = rx.EligibleSet(rx.Box(x1=(0, 1), x2=(0, 1)), rx.Increasing("x1", "x2"),
                       rx.Between(0, 1))

    def losses():
        study = rx.Study(rx.MonotoneGP(F, n_eval=20), {"search": SklearnRegressor(search)},
                         baseline=rx.Constant(), n=[12], replications=3)
        return study.run(progress=False).dataset["loss"].values

    np.testing.assert_array_equal(losses(), losses())


def test_a_classifier_is_refused_where_a_regressor_is_expected():
    """A classifier fails on every real-valued response, so a study ran to its end with every
    fit failed; it is refused when the procedure is made, in a pipeline too."""
    from sklearn.dummy import DummyRegressor
    from sklearn.linear_model import LogisticRegression
    from sklearn.neighbors import KNeighborsClassifier
    from sklearn.pipeline import make_pipeline
    from sklearn.preprocessing import StandardScaler
    for est in (LogisticRegression(), make_pipeline(StandardScaler(), KNeighborsClassifier())):
        with pytest.raises(rx.ConfigurationError, match="is a classifier; it needs a regressor"):
            SklearnRegressor(est)
        with pytest.raises(rx.ConfigurationError, match="is a classifier"):
            LogShareRegressor(est)

    class Plain:  # scikit-learn-style without scikit-learn's tags: accepted
        def fit(self, X, y):
            self.mean = float(np.mean(y))
            return self

        def predict(self, X):
            return np.full(len(X), self.mean)

    s = rx.Sample(np.zeros((3, 1)), np.array([1.0, 2.0, 6.0]), ("x",))
    for est in (Plain(), DummyRegressor()):
        np.testing.assert_array_equal(
            SklearnRegressor(est).fit(s).predict(np.zeros((2, 1))), [3.0, 3.0])


# ------------------------------------------------------------------ GridGP


def test_gridgp_multi_output_equals_separate_fits():
    rng = np.random.default_rng(1)
    X = rng.standard_normal((40, 5))
    Y = np.column_stack([np.sin(X[:, 0]), X[:, 1] ** 2, 0.01 * X[:, 2], np.cos(3 * X[:, 3])])
    Xq = rng.standard_normal((15, 5))
    joint = GridGP().fit(X, Y)
    for c in range(Y.shape[1]):
        single = GridGP().fit(X, Y[:, c])
        assert single.lengthscale_[0] == joint.lengthscale_[c]
        assert single.nugget_[0] == joint.nugget_[c]
        np.testing.assert_allclose(single.predict(Xq), joint.predict(Xq)[:, c], rtol=1e-10,
                                   atol=1e-12)
    assert joint.predict(Xq).shape == (15, 4) and single.predict(Xq).shape == (15,)


def test_gridgp_choice_maximises_sklearn_marginal_likelihood_and_matches_its_mean():
    """The profiled likelihood picks the grid point where scikit-learn's log marginal likelihood
    (signal variance at its maximiser) is highest; the posterior means agree."""
    from sklearn import gaussian_process as gp
    from sklearn.gaussian_process import kernels
    rng = np.random.default_rng(2)
    X = rng.standard_normal((35, 3))
    y = np.sin(2 * X[:, 0]) + 0.5 * X[:, 1] + 0.05 * rng.standard_normal(35)
    fit = GridGP().fit(X, y)
    yc = y - y.mean()
    best, choice = -np.inf, None
    median = np.median(pdist(X))
    for scale in fit.scales:
        ls = scale * median
        for lam in fit.nuggets:
            K = rx.Matern52(lengthscale=ls)(X) + lam * np.eye(len(X))
            s2 = yc @ np.linalg.solve(K, yc) / len(X)  # closed-form maximiser
            k = kernels.ConstantKernel(s2, "fixed") * kernels.Matern(ls, "fixed", nu=2.5)
            model = gp.GaussianProcessRegressor(k, alpha=lam * s2, optimizer=None).fit(X, yc)
            lml = model.log_marginal_likelihood_value_
            if lml > best:
                best, choice, peer = lml, (ls, lam), model
    assert (fit.lengthscale_[0], fit.nugget_[0]) == choice
    Xq = rng.standard_normal((10, 3))
    np.testing.assert_allclose(fit.predict(Xq), y.mean() + peer.predict(Xq), rtol=1e-7)


def test_gridgp_focus_choice_maximises_anisotropic_sklearn_likelihood():
    """With focus features, d_eta is an anisotropic distance (length scale l on the focus,
    l / eta on the rest): the chosen (eta, l, lambda) maximises scikit-learn's likelihood."""
    from sklearn import gaussian_process as gp
    from sklearn.gaussian_process import kernels
    rng = np.random.default_rng(8)
    X = rng.standard_normal((30, 4))
    y = np.sin(2 * X[:, 0]) + X[:, 1] + 0.3 * X[:, 2] * X[:, 3]
    fit = GridGP(relevance=(0.25, 0.5, 1.0), scales=(0.5, 1.0, 2.0)).fit(X, y, focus=[1, 0])
    yc = y - y.mean()
    best, choice = -np.inf, None
    for eta in fit.relevance:
        weights = np.array([1.0, 1.0, eta, eta])
        median = np.median(pdist(X * weights))
        for scale in fit.scales:
            ls = scale * median
            for lam in fit.nuggets:
                k = kernels.Matern(ls / weights, "fixed", nu=2.5)
                s2 = yc @ np.linalg.solve(k(X) + lam * np.eye(len(X)), yc) / len(X)
                model = gp.GaussianProcessRegressor(kernels.ConstantKernel(s2, "fixed") * k,
                                                    alpha=lam * s2, optimizer=None).fit(X, yc)
                if model.log_marginal_likelihood_value_ > best:
                    best, choice, peer = model.log_marginal_likelihood_value_, (eta, lam), model
    assert (fit.relevance_[0], fit.nugget_[0]) == choice
    Xq = rng.standard_normal((10, 4))
    np.testing.assert_allclose(fit.predict(Xq), y.mean() + peer.predict(Xq), rtol=1e-7)


def test_gridgp_full_relevance_focus_is_the_plain_fit():
    rng = np.random.default_rng(9)
    X = rng.standard_normal((25, 6))
    y = np.cos(X[:, 0]) + X[:, 4]
    Xq = rng.standard_normal((7, 6))
    plain = GridGP().fit(X, y).predict(Xq)
    split = GridGP(relevance=(1.0,)).fit(X, y, focus=[0, 1, 2]).predict(Xq)
    np.testing.assert_allclose(split, plain, rtol=1e-9, atol=1e-11)


def test_gridgp_precomputed_distances_change_nothing():
    rng = np.random.default_rng(10)
    X = rng.standard_normal((30, 9))
    y = np.sin(X[:, 3]) + 0.2 * X[:, 0]
    Xq = rng.standard_normal((12, 9))
    a = GridGP().fit(X, y, focus=[3, 4, 5])
    b = GridGP().fit(X, y, focus=[3, 4, 5], sq_distances=cdist(X, X, "sqeuclidean"))
    assert (a.relevance_, a.lengthscale_, a.nugget_) == (b.relevance_, b.lengthscale_, b.nugget_)
    np.testing.assert_allclose(b.predict(Xq, sq_distances=cdist(Xq, X, "sqeuclidean")),
                               a.predict(Xq), rtol=1e-9, atol=1e-12)


def test_gridgp_rejects_bad_input():
    with pytest.raises(DataError, match="NaN"):
        GridGP().fit(np.array([[0.0], [np.nan]]), np.zeros(2))
    with pytest.raises(ValueError, match="kernel"):
        GridGP(kernel="cosine").fit(np.zeros((2, 1)), np.zeros(2))


# ------------------------------------------------------------------ LogShareRegressor


def test_logit_shares_known_answer_and_valid_at_extremes():
    s = np.array([[0.1, 0.2, 0.3]])
    np.testing.assert_allclose(logit_shares(np.log(s / 0.4)), s, rtol=1e-13)
    wild = logit_shares(np.array([[1e6, -1e6, 0.0], [-1e300, -1e300, -1e300], [800, 800, 800]]))
    assert _valid_shares(wild)


def test_logshare_linear_regressor_recovers_a_fixed_effects_logit():
    """Log share ratios of a logit with product fixed effects are linear in the product's own
    characteristics: a linear regressor per product recovers the shares exactly."""
    from sklearn import linear_model as linear
    rng = np.random.default_rng(3)
    X, y = _logit_markets(120, rng)
    Xq, yq = _logit_markets(50, rng)
    proc = LogShareRegressor(linear.LinearRegression())
    rule = proc.fit(rx.Sample(X, y, COLS, "shares"), rng)
    pred = rule.predict(Xq)
    assert proc.label == "log-share LinearRegression"
    assert pred.shape == yq.shape and _valid_shares(pred)
    assert ((pred - yq) ** 2).mean() < 1e-20
    baseline = ((y.mean() - yq) ** 2).mean()
    assert baseline > 1e-5  # the truth is far from constant shares


def test_logshare_default_gp_is_valid_and_beats_constant_shares():
    rng = np.random.default_rng(4)
    X, y = _logit_markets(75, rng)
    Xq, yq = _logit_markets(60, rng)
    rule = LogShareRegressor().fit(rx.Sample(X, y, COLS, "shares"), rng)
    pred = rule.predict(Xq)
    assert _valid_shares(pred) and pred.shape == yq.shape
    gp_mse = ((pred - yq) ** 2).mean()
    baseline = ((y.mean() - yq) ** 2).mean()
    assert gp_mse < 0.5 * baseline
    assert len(rule.info["lengthscale"]) == 24 and rule.info["features"] == 72
    # extrapolating far outside the training markets still gives valid shares
    assert _valid_shares(rule.predict(Xq * 50))


def test_logshare_relevance_follows_the_truth():
    """Own characteristics only (a logit) -> the likelihood sets the other products' relevance
    to 0 and the fit is nearly exact; a neighbour's price in the utility -> relevance > 0."""
    rng = np.random.default_rng(12)
    X, y = _logit_markets(75, rng)
    Xq, yq = _logit_markets(60, rng)
    rule = LogShareRegressor().fit(rx.Sample(X, y, COLS, "shares"), rng)
    assert rule.info["relevance"] == [0.0] * 24
    assert ((rule.predict(Xq) - yq) ** 2).mean() < 1e-3 * ((y.mean() - yq) ** 2).mean()

    def neighbour(n):
        Xn, _ = _logit_markets(n, rng)
        v = -2.0 * Xn[..., 0] + 0.1 * Xn[..., 1] + 1.5 * np.roll(Xn[..., 0], -1, axis=1)
        e = np.exp(v)
        return Xn, e / (1 + e.sum(axis=1, keepdims=True))

    X, y = neighbour(75)
    rule = LogShareRegressor().fit(rx.Sample(X, y, COLS, "shares"), rng)
    assert min(rule.info["relevance"]) > 0


def test_logshare_standardisation_makes_fits_unit_invariant():
    """Rescaling a characteristic (e.g. prices in cents) leaves the fitted shares unchanged;
    constant characteristics are harmless."""
    rng = np.random.default_rng(5)
    X, y = _logit_markets(40, rng, J=6)
    X[..., 2] = 1.0  # a constant column
    Xq, _ = _logit_markets(10, rng, J=6)
    Xq[..., 2] = 1.0
    a = LogShareRegressor().fit(rx.Sample(X, y, COLS, "shares"), rng).predict(Xq)
    unit = np.array([100.0, 1.0, 1.0])
    b = LogShareRegressor().fit(rx.Sample(X * unit, y, COLS, "shares"), rng).predict(Xq * unit)
    np.testing.assert_allclose(a, b, rtol=1e-8)


def _forest():
    from sklearn.ensemble import RandomForestRegressor
    return RandomForestRegressor(n_estimators=5)


def _forest_in_a_pipeline():
    from sklearn.pipeline import make_pipeline
    from sklearn.preprocessing import StandardScaler
    return make_pipeline(StandardScaler(), _forest())


@pytest.mark.parametrize("regressor", [_forest, _forest_in_a_pipeline])
def test_logshare_user_regressor_seeded_from_rng(regressor):
    # a pipeline's steps were not seeded: its forest ran on the global random state
    X, y = _logit_markets(40, np.random.default_rng(6), J=4)
    s = rx.Sample(X, y, COLS, "shares")
    proc = LogShareRegressor(regressor())
    p1 = proc.fit(s, np.random.default_rng(1)).predict(X[:5])
    p2 = proc.fit(s, np.random.default_rng(1)).predict(X[:5])
    p3 = proc.fit(s, np.random.default_rng(2)).predict(X[:5])
    np.testing.assert_array_equal(p1, p2)
    assert not np.allclose(p1, p3)


def test_logshare_regressors_that_change_their_inputs_do_not_change_the_others():
    """The product regressors shared one feature array: a regressor that overwrote its input
    (as transformers with copy=False do) gave every later product's regressor other
    features, at fit and at prediction."""
    from sklearn.base import BaseEstimator, RegressorMixin
    from sklearn.linear_model import LinearRegression

    class Overwrites(BaseEstimator, RegressorMixin):
        def fit(self, X, y):
            self.model_ = LinearRegression().fit(X, y)
            X[:], y[:] = 0.0, 0.0
            return self

        def predict(self, X):
            p = self.model_.predict(X)
            X[:] = 0.0
            return p

    X, y = _logit_markets(40, np.random.default_rng(6), J=3)
    s = rx.Sample(X, y, COLS, "shares")
    ours = LogShareRegressor(Overwrites()).fit(s, np.random.default_rng(1)).predict(X[:5])
    plain = LogShareRegressor(LinearRegression()).fit(s, np.random.default_rng(1)).predict(X[:5])
    np.testing.assert_allclose(ours, plain, rtol=1e-12)
    np.testing.assert_allclose(plain, y[:5], rtol=1e-8)  # the logit is linear in these features


def test_logshare_rejects_bad_samples_and_queries():
    rng = np.random.default_rng(7)
    X, y = _logit_markets(10, rng, J=3)
    y0 = y.copy()
    y0[0, 0] = 0.0
    with pytest.raises(DataError, match="sample.y"):
        LogShareRegressor().fit(rx.Sample(X, y0, COLS, "shares"), rng)
    with pytest.raises(DataError, match="sample.X"):
        LogShareRegressor().fit(rx.Sample(X[:, :, 0], y, ("p1", "p2", "p3"), "shares"), rng)
    rule = LogShareRegressor().fit(rx.Sample(X, y, COLS, "shares"), rng)
    with pytest.raises(DataError, match="shape"):
        rule.predict(X[:, :2])
    with pytest.raises(TypeError, match="fit"):
        LogShareRegressor(object())
    # a class for an instance: labelled "log-share ABCMeta", and every fit of a study failed
    # with "get_params() missing 1 required positional argument: 'self'"
    from sklearn.linear_model import LinearRegression
    for cls in (LinearRegression, GridGP):
        with pytest.raises(rx.ConfigurationError, match=rf"regressor must be an instance, e\.g\. "
                                                     rf"{cls.__name__}\(\), not the class"):
            LogShareRegressor(cls)


def test_logshare_in_a_demand_study_with_the_failure_protocol():
    """Runs in the study runner on the demand prior: no failures, losses below the baseline's."""
    from restrictiveness.demand.prior import DemandPrior

    prior = DemandPrior(n_types=32, n_reference_types=16, n_train=60, n_eval=20)
    from restrictiveness.demand.models import Logit

    res = rx.Study(prior, {"log-share GP": LogShareRegressor()}, baseline=Logit(), n=[60],
                   replications=2, seed=1).run(progress=False)
    assert int(res.dataset["failed"].sum()) == 0 and int(res.dataset["invalid"].sum()) == 0
    r = float(res.restrictiveness.sel(procedure="log-share GP", n=60).squeeze())
    assert 0 < r < 1


# ------------------------------------------------------------------ AutoML (FLAML)


@pytest.fixture
def flaml():
    # in the test extra (flaml with lightgbm and the CPU build of xgboost): never skipped
    import flaml as module

    assert hasattr(module, "AutoML"), "flaml.automl is unusable: pip install -e '.[test]'"
    return module


def _tiny_sample(n=40, seed=0):
    X = np.random.default_rng(seed).random((n, 2))
    return rx.Sample(X, np.sin(3 * X[:, 0]) + X[:, 1], ("a", "b"), "y")


def test_automl_runs_within_budget_and_is_reproducible(flaml):
    s = _tiny_sample()
    proc = AutoML(max_iter=4, estimator_list=["rf", "extra_tree"])
    Xq = np.random.default_rng(9).random((25, 2))
    start = time.perf_counter()
    r1 = proc.fit(s, np.random.default_rng(3))
    elapsed = time.perf_counter() - start
    r2 = proc.fit(s, np.random.default_rng(3))
    p1, p2 = r1.predict(Xq), r2.predict(Xq)
    np.testing.assert_array_equal(p1, p2)
    assert r1.info == r2.info and r1.info["best_estimator"] in ("rf", "extra_tree")
    assert p1.shape == (25,) and np.isfinite(p1).all()
    assert elapsed < 60
    # it learned something: better than the mean on fresh points
    truth = np.sin(3 * Xq[:, 0]) + Xq[:, 1]
    assert ((p1 - truth) ** 2).mean() < 0.5 * ((s.y.mean() - truth) ** 2).mean()
    # a time budget caps a long iteration budget
    start = time.perf_counter()
    AutoML(time_budget=2, max_iter=10_000, estimator_list=["rf"]).fit(
        s, np.random.default_rng(4))
    assert time.perf_counter() - start < 20


def test_automl_leaves_the_callers_random_states_as_they_were(flaml):
    """FLAML seeds Python's random in its search: the caller's state was left changed."""
    import random
    s = _tiny_sample()
    np.random.seed(11)  # noqa: NPY002
    random.seed(11)
    rule = AutoML(max_iter=2, estimator_list=["rf"]).fit(s, np.random.default_rng(3))
    rule.predict(s.X)
    assert random.random() == random.Random(11).random()
    assert np.random.rand() == np.random.RandomState(11).rand()  # noqa: NPY002


def test_automl_formula_and_market_samples(flaml):
    s = _tiny_sample()
    proc = AutoML(max_iter=2, estimator_list=["rf"], formula="y ~ a")
    with pytest.raises(rx.FormulaError):
        proc.validate(("b",), "y")
    pred = proc.fit(s, np.random.default_rng(0)).predict(s.X)
    assert pred.shape == (40,)
    X, y = _logit_markets(5, np.random.default_rng(0), J=3)
    with pytest.raises(DataError, match="LogShareRegressor"):
        AutoML(max_iter=1).fit(rx.Sample(X, y, COLS, "shares"), np.random.default_rng(0))


def test_automl_that_fits_no_model_fails_by_name(flaml):
    """On 6 observations FLAML's search ends without a model, and its predict then returned a
    single NaN for any query."""
    s = _tiny_sample(n=6)
    with pytest.raises(DataError, match=r"AutoML: FLAML's search ended without a fitted model "
                                        r"\(no trial of 3 succeeded\) on 6 observations"):
        AutoML(max_iter=3, estimator_list=["rf"]).fit(s, np.random.default_rng(1))


def test_automl_without_flaml_names_the_extra(monkeypatch):
    monkeypatch.setitem(sys.modules, "flaml", None)  # makes `import flaml` raise ImportError
    with pytest.raises(ImportError, match=r"restrictiveness\[automl\]"):
        AutoML(max_iter=1).fit(_tiny_sample(), np.random.default_rng(0))
    # refused before any fit: a study ran to its end with every fit failed (r̂ = 1)
    with pytest.raises(ImportError, match=r"restrictiveness\[automl\]"):
        rx.lottery.study({"automl": AutoML(max_iter=1)}, n=[10], replications=2)
    data = pd.DataFrame({"participant": [1, 1, 2, 2], "lottery": [1, 2, 1, 2],
                         "z_hi": [0.4, 0.8] * 2, "z_lo": [0.0, 0.2] * 2, "p": [0.5, 0.5] * 2,
                         "ce": [0.15, 0.45, 0.2, 0.5]})
    with pytest.raises(ImportError, match=r"restrictiveness\[automl\]"):
        rx.lottery.completeness(data, {"automl": AutoML(max_iter=1)}, folds=2)


def test_automl_argument_checks():
    with pytest.raises(ValueError, match="max_iter"):
        AutoML(max_iter=0)
    with pytest.raises(ValueError, match="time_budget"):
        AutoML(time_budget=0)


def test_unknown_flaml_learners_are_refused_at_construction(flaml, monkeypatch):
    """A misspelt learner ("lgbmx"), a classifier ("svc") or a Spark learner was accepted and
    failed every fit of a study; refused at construction by FLAML's registry, or without FLAML
    by the known list."""
    for names in (["lgbmx"], ["rf", "svc"], ["lgbm_spark"], ["lrl1"]):
        with pytest.raises(ValueError, match=rf"estimator_list names \['{names[-1]}'\], which are "
                                             r"not FLAML regression learners; FLAML's are \["
                                             r"'catboost', 'enet', 'extra_tree'"):
            AutoML(estimator_list=names)
    assert AutoML(estimator_list=["rf", "lgbm"]).estimator_list == ["rf", "lgbm"]
    # the known list is FLAML's own regression learners
    from flaml.automl.task.factory import task_factory

    from restrictiveness.procedures.learners import FLAML_REGRESSION_LEARNERS
    registry = task_factory("regression").estimators
    assert set(FLAML_REGRESSION_LEARNERS) <= set(registry)
    monkeypatch.setitem(sys.modules, "flaml.automl.task.factory", None)  # FLAML absent
    with pytest.raises(ValueError, match=r"names \['lgbmx'\]"):
        AutoML(estimator_list=["lgbmx"])
    AutoML(estimator_list=["xgboost"])


def test_procedures_pickle_and_fitted_rules_survive_a_round_trip():
    """Studies ship procedures to worker processes; fitted GridGP rules pickle too."""
    import pickle

    rng = np.random.default_rng(11)
    X, y = _logit_markets(20, rng, J=3)
    for proc in (AutoML(max_iter=3, estimator_list=["rf"]), LogShareRegressor(),
                 LogShareRegressor(GridGP(kernel="matern32"), label="m32")):
        clone = pickle.loads(pickle.dumps(proc))
        assert repr(clone) == repr(proc) and clone.label == proc.label
    rule = LogShareRegressor().fit(rx.Sample(X, y, COLS, "shares"), rng)
    again = pickle.loads(pickle.dumps(rule))
    np.testing.assert_array_equal(again.predict(X), rule.predict(X))


def test_a_bare_estimator_given_as_a_procedure_is_refused_naming_the_adapter():
    """A scikit-learn estimator has a fit, so it passed for a procedure: every fit of a study
    failed ("float() argument must be ... not 'Sample'") and r̂ repeated the baseline's (1)."""
    from sklearn.linear_model import LinearRegression
    from sklearn.pipeline import make_pipeline
    from sklearn.preprocessing import StandardScaler

    data = pd.DataFrame({"participant": [1, 1, 2, 2], "lottery": [1, 2, 1, 2],
                         "z_hi": [0.4, 0.8] * 2, "z_lo": [0.0, 0.2] * 2, "p": [0.5, 0.5] * 2,
                         "ce": [0.15, 0.45, 0.2, 0.5]})
    for est in (LinearRegression(), make_pipeline(StandardScaler(), LinearRegression()),
                GridGP()):
        msg = r"is a scikit-learn-style estimator with fit\(X, y\) .*wrap it, e\.g\. " \
              r"rx\.SklearnRegressor\("
        with pytest.raises(rx.ConfigurationError, match=r"procedures\['ols'\] " + msg):
            rx.lottery.study({"ols": est}, n=[10], replications=2)
        with pytest.raises(rx.ConfigurationError, match="baseline " + msg):
            rx.lottery.study(n=[10], replications=2, baseline=est)
        with pytest.raises(rx.ConfigurationError, match=r"procedures\['ols'\] " + msg):
            rx.lottery.completeness(data, {"ols": est}, folds=2)
        with pytest.raises(rx.ConfigurationError, match="benchmark " + msg):
            rx.lottery.completeness(data, {}, folds=2, benchmark=est)

    class EVProcedure:  # duck-typed, fit(sample, rng), with a predict of its own: accepted
        label = "ev"

        def fit(self, sample, rng):
            return rx.FunctionRule(self.predict)

        def predict(self, X):
            return X[:, 2] * X[:, 0] + (1 - X[:, 2]) * X[:, 1]

    res = rx.lottery.study({"ev": EVProcedure()}, n=[10], replications=2,
                           n_eval=20).run(progress=False)
    assert res.restrictiveness.sel(procedure="ev").item() == 1.0   # it is the baseline


def test_gp_regression_on_a_singular_kernel_matrix_names_the_noise():
    """A squared exponential on 100 points of a line is singular to rounding: the fit raised
    numpy's bare LinAlgError ("7-th leading minor ... not positive definite"), which a study
    reported as every fit's error; the noise the message suggests fits."""
    X = np.linspace(0, 1, 100)[:, None]
    sample = rx.Sample(X, np.sin(X[:, 0]), ("x",))
    kernel = rx.SquaredExponential(variance=2.0)
    with pytest.raises(rx.DataError, match=r"the kernel matrix of the 100 training points is not "
                       r"numerically positive definite with noise=0\.0 .*give a noise variance "
                       r"of about 1e-8 times the kernel's \(2e-08\)"):
        rx.GPRegression(kernel=kernel).fit(sample)
    rule = rx.GPRegression(kernel=kernel, noise=2e-8).fit(sample)
    assert np.abs(rule.predict(X) - np.sin(X[:, 0])).max() < 1e-4
