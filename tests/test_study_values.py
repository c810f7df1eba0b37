"""The study runner against hand computations: which sample and which random stream each fit
gets, failures counted over K draws, and discrepancies with non-uniform evaluation weights."""

from __future__ import annotations

import time
import zlib

import numpy as np
import pytest

import restrictiveness as rx
from restrictiveness.eligible.truth import PseudoTruth
from restrictiveness.engine.protocol import FunctionRule
from restrictiveness.engine.study import procedure_rng, truth_rng
from restrictiveness.shared.random_state import global_state_seed

SEED, N, M, K = 7, 12, 3, 3


def _prior():
    F = rx.EligibleSet(rx.Box(x1=(0, 1), x2=(0, 1)), rx.Increasing("x1", "x2"), rx.Between(0, 1))
    return rx.MonotoneGP(F, n_eval=40)


class Spy(rx.Procedure):
    """Records what each fit receives (serial runs fit in this process) and fits OLS by hand;
    ``fail_later=k`` makes every fit but the first of each run of ``k`` fits raise."""

    def __init__(self, label, fail_later=0, draws=None, sleep=0.0):
        self.label, self.fail_later, self.sleep = label, fail_later, sleep
        if draws is not None:
            self.draws = draws
        self.calls: list[tuple[np.ndarray, np.ndarray, float]] = []

    def fit(self, sample, rng):
        self.calls.append((sample.X.copy(), sample.y.copy(), rng.random()))
        time.sleep(self.sleep)
        if self.fail_later and (len(self.calls) - 1) % self.fail_later:
            raise RuntimeError(f"call {len(self.calls)}")
        beta = _ols(sample.X, sample.y)
        return FunctionRule(lambda X: np.column_stack([np.ones(len(X)), X]) @ beta)


def _ols(X, y):
    return np.linalg.lstsq(np.column_stack([np.ones(len(X)), X]), y, rcond=None)[0]


def _truths(prior, draws=K):
    return [prior.draw([N], truth_rng(SEED, m), draws=draws) for m in range(M)]


def test_draw_k_trains_on_sample_k_with_its_own_stream_and_loss():
    prior = _prior()
    spies = {"a": Spy("a"), "b": Spy("b")}
    ds = rx.Study(prior, spies, rx.Constant(), n=[N], replications=M, seed=SEED,
                  draws=K).run(progress=False).dataset
    truths = _truths(prior)
    for label, spy in spies.items():
        assert len(spy.calls) == M * K
        for m in range(M):
            for k in range(K):
                X, y, u = spy.calls[m * K + k]
                sample = truths[m].sample(N, k)
                np.testing.assert_array_equal(X, sample.X)
                np.testing.assert_array_equal(y, sample.y)
                assert u == procedure_rng(SEED, m, label, N, k).random()
                # the loss of draw k: OLS on sample k, clipped to [0, 1], MSE on the evaluation set
                truth = truths[m]
                pred = np.clip(np.column_stack([np.ones(len(truth.eval_X)), truth.eval_X])
                               @ _ols(X, y), 0, 1)
                expected = truth.eval_weights @ (pred - truth.eval_y(N)) ** 2
                got = float(ds["loss"].sel(procedure=label, discrepancy="mse", n=N,
                                           replication=m, draw=k))
                assert got == pytest.approx(expected, rel=1e-10)
    # every fit has its own stream: replications, draws and labels all differ
    streams = [u for spy in spies.values() for _, _, u in spy.calls]
    assert len(set(streams)) == len(streams) == 2 * M * K
    # every replication has its own pseudo-truth and every draw its own sample
    firsts = {spies["a"].calls[i][1][0] for i in range(M * K)}
    assert len(firsts) == M * K


class GlobalSpy(Spy):
    """Draws one number from numpy's global random state in each fit, as user code that
    ignores its ``rng`` does, and records it; fits OLS by hand."""

    def __init__(self, label):
        super().__init__(label)
        self.drawn: list[float] = []

    def fit(self, sample, rng):
        self.drawn.append(np.random.uniform())  # noqa: NPY002
        return super().fit(sample, rng)


def test_the_global_random_states_of_draw_k_are_keyed_by_draw_k():
    """Each fit runs on numpy's global state seeded from what it is, as its own stream: the
    replication, the label, n and the draw (SeedSequence(seed, spawn_key=(m, 1, crc32(label),
    n, k)), plus the global-state key). Keyed without the draw, the K fits of a replication
    drew the same numbers, so a procedure drawing its initial values from np.random got K
    copies of one start instead of K independent ones (the baseline too)."""
    spies = {"a": GlobalSpy("a"), "b": GlobalSpy("b")}
    baseline = GlobalSpy("baseline")
    rx.Study(_prior(), spies, baseline, n=[N], replications=M, seed=SEED,
             draws=K).run(progress=False)

    def expected(m, label, k):
        key = (m, 1, zlib.crc32(label.encode()), N, k)
        seed = global_state_seed(np.random.SeedSequence(SEED, spawn_key=key))
        return np.random.RandomState(seed).uniform()

    for label, spy in {**spies, "__baseline__": baseline}.items():
        assert spy.drawn == [expected(m, label, k) for m in range(M) for k in range(K)]
    drawn = [u for spy in (*spies.values(), baseline) for u in spy.drawn]
    assert len(set(drawn)) == len(drawn) == 3 * M * K


@pytest.mark.parametrize("fit_on", ["training", "evaluation"])
def test_failures_are_counted_over_the_k_draws(fit_on):
    """Draws 1..K-1 fail: ``failed`` counts K - 1 per replication, ``invalid`` counts every
    evaluation row of those draws, their losses are the baseline's, and the first error is
    kept. With ``fit_on="evaluation"`` there is a single fit (no draws to average)."""
    prior = _prior()
    k_fit = K if fit_on == "training" else 1
    spy = Spy("s", fail_later=k_fit)
    study = rx.Study(prior, {"s": spy}, rx.Constant(), n=[N], replications=M, seed=SEED,
                     draws=K, fit_on=fit_on)
    if fit_on == "training":
        with pytest.warns(rx.FailureWarning):
            ds = study.run(progress=False).dataset
    else:
        ds = study.run(progress=False).dataset
    assert len(spy.calls) == M * k_fit
    failed = ds["failed"].sel(procedure="s", n=N).values
    invalid = ds["invalid"].sel(procedure="s", n=N).values
    np.testing.assert_array_equal(failed, np.full(M, k_fit - 1))
    np.testing.assert_array_equal(invalid, np.full(M, (k_fit - 1) * prior.n_eval))
    loss = ds["loss"].sel(procedure="s", discrepancy="mse", n=N).values       # (M, K)
    base = ds["baseline_loss"].sel(discrepancy="mse", n=N).values
    np.testing.assert_array_equal(loss[:, 1:k_fit], base[:, 1:k_fit])
    assert np.isnan(loss[:, k_fit:]).all()
    if fit_on == "training":
        assert (loss[:, 0] != base[:, 0]).all()
        errors = ds["error"].sel(procedure="s", n=N).values
        assert list(errors) == [f"fit: RuntimeError: call {m * K + 2}" for m in range(M)]


def test_invalid_rows_are_counted_once_per_fit_over_every_draw():
    """A rule that predicts NaN wherever x1 > x2 gets the baseline's prediction on exactly those
    rows. ``invalid`` counts them once per fit, over every draw, however many discrepancies
    asked for them (two discrepancies, K draws: K times the bad rows; it was 2 K), the fit is
    not ``failed``, the first message is kept, and each loss is the hand MSE of the rule
    patched with the baseline."""
    prior = _prior()

    class Holes(rx.Procedure):
        def fit(self, sample, rng):
            beta = _ols(sample.X, sample.y)
            return FunctionRule(lambda X: np.where(
                X[:, 0] > X[:, 1], np.nan, np.column_stack([np.ones(len(X)), X]) @ beta))

    discs = [rx.MSE(), rx.MSE(name="mse_again")]
    with pytest.warns(rx.FailureWarning):
        ds = rx.Study(prior, {"h": Holes()}, rx.Constant(), discs, n=[N], replications=M,
                      seed=SEED, draws=K).run(progress=False).dataset
    h = ds.sel(procedure="h", n=N)
    np.testing.assert_array_equal(h["failed"].values, np.zeros(M))
    for m, truth in enumerate(_truths(prior)):
        bad = truth.eval_X[:, 0] > truth.eval_X[:, 1]
        assert 0 < bad.sum() < len(bad)
        assert int(h["invalid"].sel(replication=m)) == K * int(bad.sum())
        assert str(h["error"].sel(replication=m).values) == f"{bad.sum()} invalid prediction row(s)"
        for k in range(K):
            sample = truth.sample(N, k)
            pred = np.clip(np.column_stack([np.ones(len(truth.eval_X)), truth.eval_X])
                           @ _ols(sample.X, sample.y), 0, 1)
            pred[bad] = sample.y.mean()
            expected = truth.eval_weights @ (pred - truth.eval_y(N)) ** 2
            for d in ("mse", "mse_again"):
                got = float(h["loss"].sel(discrepancy=d, replication=m, draw=k))
                assert got == pytest.approx(expected, rel=1e-10)


class Holes(rx.Procedure):
    """OLS by hand whose rule predicts NaN wherever x1 > x2."""

    def fit(self, sample, rng):
        beta = _ols(sample.X, sample.y)
        return FunctionRule(lambda X: np.where(
            X[:, 0] > X[:, 1], np.nan, np.column_stack([np.ones(len(X)), X]) @ beta),
            info={"params": {"intercept": float(beta[0])}})


class IOMean(rx.Procedure):
    """The sample mean, fitted on the run's threads under ``concurrency`` (as language-model
    procedures are) without asking any server."""

    io_bound = True

    def fit(self, sample, rng):
        value = float(sample.y.mean())
        return FunctionRule(lambda X: np.full(len(X), value))


def test_the_rows_fitted_beside_the_threads_keep_their_counts_and_messages():
    """With ``concurrency``, the I/O-bound procedures' fits run on threads and the others
    through the usual backend, whose records are merged row by row: every variable of those
    rows (losses, failed fits, replaced rows, first errors, fit records, times) is the serial
    run's. Here 'fails' fails draws 1 and 2 of each replication (2 failed fits and 2 x 40
    replaced rows a replication) and 'holes' replaces the rows where x1 > x2 in each of its K
    fits."""
    prior = _prior()

    def run(**options):
        procs = {"io": IOMean(), "holes": Holes(), "fails": Spy("fails", fail_later=K,
                                                                  sleep=0.01)}
        with pytest.warns(rx.FailureWarning):
            return rx.Study(prior, procs, rx.Constant(), n=[N], replications=M, seed=SEED,
                            draws=K).run(progress=False, **options).dataset

    serial, threaded = run(), run(concurrency=2)
    for name in ("loss", "baseline_loss", "failed", "invalid", "error", "fit_info"):
        np.testing.assert_array_equal(threaded[name].values, serial[name].values, err_msg=name)
    bad = np.array([int((t.eval_X[:, 0] > t.eval_X[:, 1]).sum()) for t in _truths(prior)])
    at = threaded.sel(n=N)
    np.testing.assert_array_equal(at["failed"].sel(procedure=["io", "holes", "fails"]).values,
                                  [[0] * M, [0] * M, [K - 1] * M])
    np.testing.assert_array_equal(at["invalid"].sel(procedure=["io", "holes", "fails"]).values,
                                  [[0] * M, K * bad, [(K - 1) * prior.n_eval] * M])
    assert at["error"].sel(procedure="holes").values.tolist() == [
        f"{b} invalid prediction row(s)" for b in bad]
    assert at["error"].sel(procedure="fails").values.tolist() == [
        f"fit: RuntimeError: call {m * K + 2}" for m in range(M)]
    assert all('"intercept"' in text for text in at["fit_info"].sel(procedure="holes").values)
    # the mean time of a fit of 'fails', which sleeps 0.01 s in each
    assert (at["seconds"].sel(procedure="fails").values >= 0.01).all()


@pytest.mark.parametrize("own", [1, 2, 3])
def test_a_procedure_with_fewer_draws_averages_over_its_own(own):
    """A procedure with ``draws = own`` < K fits the first ``own`` samples (NaN beyond); its
    r̂ averages its losses over those draws and the baseline's over all K."""
    prior = _prior()
    spy = Spy("s", draws=own)
    res = rx.Study(prior, {"s": spy, "all": Spy("all")}, rx.Constant(), n=[N], replications=M,
                   seed=SEED, draws=K).run(progress=False)
    assert len(spy.calls) == M * own
    loss = res.dataset["loss"].sel(procedure="s", discrepancy="mse", n=N).values
    assert np.isnan(loss[:, own:]).all()
    hand = np.empty((M, own))
    for m, truth in enumerate(_truths(prior)):
        for k in range(own):
            s = truth.sample(N, k)
            pred = np.clip(np.column_stack([np.ones(len(truth.eval_X)), truth.eval_X])
                           @ _ols(s.X, s.y), 0, 1)
            hand[m, k] = truth.eval_weights @ (pred - truth.eval_y(N)) ** 2
    np.testing.assert_allclose(loss[:, :own], hand, rtol=1e-10)
    B = res.dataset["baseline_loss"].sel(discrepancy="mse", n=N).values.mean(axis=1)
    r = float(res.restrictiveness.sel(procedure="s", discrepancy="mse", n=N))
    assert r == pytest.approx(hand.mean(axis=1).mean() / B.mean(), rel=1e-10)


def test_procedure_draws_are_capped_by_the_study_and_time_is_averaged():
    prior = _prior()
    spy = Spy("s", draws=5, sleep=0.05)
    ds = rx.Study(prior, {"s": spy}, rx.Constant(), n=[N], replications=2, seed=SEED,
                  draws=2).run(progress=False).dataset
    assert len(spy.calls) == 2 * 2
    seconds = ds["seconds"].sel(procedure="s", n=N).values
    assert (seconds >= 0.05).all() and (seconds < 0.1).all()  # mean over 2 fits, not the sum


def test_total_fit_time_counts_every_training_draw():
    """``timings()["total_seconds"]`` summed the per-replication means, a K-th of the time of
    K draws (the CLI printed 355.8 s of fits for a K = 20 run whose fits took ~2 h)."""
    prior = _prior()
    study = rx.Study(prior, {"all": Spy("all", sleep=0.05), "one": Spy("one", draws=1,
                                                                        sleep=0.05)},
                     rx.Constant(), n=[N], replications=2, seed=SEED, draws=3)
    res = study.run(progress=False)
    t = res.timings()
    seconds = res.dataset["seconds"].sel(n=N)
    # 2 replications x 3 draws of 'all', x 1 draw of 'one'
    for label, draws in (("all", 3), ("one", 1)):
        total = t.loc[(label, N), "total_seconds"]
        assert total == pytest.approx(draws * float(seconds.sel(procedure=label).sum()))
        assert total >= 2 * draws * 0.05


def test_the_baseline_is_repaired_before_it_is_scored():
    """A baseline predicting 5 everywhere is clipped to the bound 1: its loss is E[(1 - f)²]."""
    prior = _prior()

    class Five(rx.Procedure):
        def fit(self, sample, rng):
            return FunctionRule(lambda X: np.full(len(X), 5.0))

    ds = rx.Study(prior, {"s": Spy("s")}, Five(), n=[N], replications=2,
                  seed=SEED).run(progress=False).dataset
    for m, truth in enumerate(_truths(prior, draws=1)[:2]):
        expected = truth.eval_weights @ (1.0 - truth.eval_y(N)) ** 2
        got = float(ds["baseline_loss"].sel(discrepancy="mse", n=N, replication=m))
        assert got == pytest.approx(expected, rel=1e-12)


class _Truth(PseudoTruth):
    def __init__(self, y, weights):
        super().__init__([np.zeros((1, 1))], np.arange(len(y), dtype=float)[:, None], weights,
                         ("x",), "y")
        self._y = y

    def eval_y(self, n):
        return self._y


def test_weighted_mse_and_kl_against_a_hand_computation():
    w = np.array([0.5, 0.3, 0.2])
    # inside shares of 2 products in 3 markets (outside share 1 - sum appended by KL)
    p = np.array([[0.2, 0.3], [0.1, 0.6], [0.25, 0.25]])
    q = np.array([[0.3, 0.3], [0.2, 0.4], [0.25, 0.5]])
    truth, rule = _Truth(p, w), FunctionRule(lambda X: q)
    mse = sum(w[i] * np.mean((q[i] - p[i]) ** 2) for i in range(3))
    assert rx.MSE()(rule, truth, 1) == pytest.approx(mse, rel=1e-14)

    def full(s):
        return [*s, 1 - sum(s)]

    kl = sum(w[i] * sum(a * np.log(a / b) for a, b in zip(full(p[i]), full(q[i]), strict=True))
             for i in range(3))
    assert rx.KL()(rule, truth, 1) == pytest.approx(kl, rel=1e-12)
    kl_inside = sum(w[i] * sum(a * np.log(a / b) for a, b in zip(p[i], q[i], strict=True))
                    for i in range(3))
    assert rx.KL(outside=False)(rule, truth, 1) == pytest.approx(kl_inside, rel=1e-12)
    # "no" (or any text) was read as True, the default: the outside share appended silently
    assert rx.KL(outside=np.False_)(rule, truth, 1) == pytest.approx(kl_inside, rel=1e-12)
    for text in ("no", "False", 0):
        with pytest.raises(rx.ConfigurationError, match="outside must be True or False"):
            rx.KL(outside=text)


def test_finite_set_weights_reach_the_discrepancy():
    """FiniteSet(weights=...) weighs the evaluation points: the MSE of a constant rule is the
    weighted mean of its squared errors (uniform weights would give another number)."""
    points = np.array([[0.0], [0.5], [1.0]])
    domain = rx.FiniteSet(points, ("x",), weights=np.array([1.0, 2.0, 7.0]))
    prior = rx.MonotoneGP(rx.EligibleSet(domain, rx.Increasing("x")), jitter=1e-6)
    truth = prior.draw([2], np.random.default_rng(0))
    np.testing.assert_allclose(truth.eval_weights, [0.1, 0.2, 0.7])
    rule = FunctionRule(lambda X: np.full(len(X), 0.25))
    err = (0.25 - truth.eval_y(2)) ** 2
    assert rx.MSE()(rule, truth, 2) == pytest.approx(0.1 * err[0] + 0.2 * err[1] + 0.7 * err[2],
                                                     rel=1e-12)
    assert abs(err.mean() - (0.1 * err[0] + 0.2 * err[1] + 0.7 * err[2])) > 1e-6


def test_predictions_shaped_otherwise_than_the_truth_are_refused_not_broadcast():
    """A column of predictions (m, 1) against truths (m,) was broadcast to an (m, m) table: the
    truth itself returned as a column had MSE 0.5 (not 0), and a study whose baseline and
    procedure both returned columns reported r̂ = 1.76 for OLS (0.19 in the right shape)."""
    w = np.array([0.5, 0.5])
    truth = _Truth(np.array([0.0, 1.0]), w)
    assert rx.MSE()(FunctionRule(lambda X: np.array([0.0, 1.0])), truth, 1) == 0.0
    with pytest.raises(ValueError, match=r"mse: predictions have shape \(2, 1\), the truth "
                                         r"\(2,\)"):
        rx.MSE()(FunctionRule(lambda X: np.array([[0.0], [1.0]])), truth, 1)
    shares = _Truth(np.array([[0.2, 0.3], [0.1, 0.6]]), w)
    assert rx.KL()(FunctionRule(lambda X: np.array([[0.2, 0.3], [0.1, 0.6]])), shares, 1) == 0.0
    with pytest.raises(ValueError, match=r"kl: predictions have shape \(2, 2, 1\)"):
        rx.KL()(FunctionRule(lambda X: np.array([[[0.2], [0.3]], [[0.1], [0.6]]])), shares, 1)

    class Column(rx.Procedure):
        def __init__(self, procedure):
            self.procedure = procedure

        def fit(self, sample, rng):
            rule = self.procedure.fit(sample, rng)
            return FunctionRule(lambda X: rule.predict(X)[:, None])

    study = rx.Study(_prior(), {"linear": Column(rx.OLS("y ~ x1 + x2"))}, Column(rx.Constant()),
                     n=[N], replications=M, seed=SEED)
    with pytest.raises(rx.BaselineError, match=r"mse: predictions have shape \(40, 1\), the "
                                               r"truth \(40,\)"):
        study.run(progress=False)


def test_a_discrepancy_that_is_not_one_number_or_raises_is_named():
    """A discrepancy returning text "0.5" was read as the loss 0.5 (r̂ = 1 for any procedure);
    one returning an array, or with a bug of its own, was reported as the baseline failing
    ("setting an array element with a sequence", "NameError"), naming no discrepancy."""
    class Text(rx.Discrepancy):
        name = "text"

        def __call__(self, rule, truth, n):
            return "0.5"

    class Rows(rx.Discrepancy):
        name = "rows"

        def __call__(self, rule, truth, n):
            return (rule.predict(truth.eval_X) - truth.eval_y(n)) ** 2

    class Buggy(rx.Discrepancy):
        name = "buggy"

        def __call__(self, rule, truth, n):
            raise NameError("name 'undefined' is not defined")

    def run(discrepancy):
        return rx.Study(_prior(), {"linear": rx.OLS("y ~ x1 + x2")}, rx.Constant(),
                        discrepancies=[rx.MSE(), discrepancy], n=[N], replications=2,
                        seed=SEED).run(progress=False)

    with pytest.raises(rx.ConfigurationError, match=r"discrepancy 'text' returned '0\.5'; a "
                                                    r"discrepancy returns one real number"):
        run(Text())
    with pytest.raises(rx.ConfigurationError, match=r"discrepancy 'rows' returned array\(\["):
        run(Rows())
    with pytest.raises(rx.BaselineError, match=r"n=12, while discrepancy 'buggy' scored its "
                                               r"predictions: NameError"):
        run(Buggy())
    # a number of any real type is a loss: the r̂ of a discrepancy returning MSE as numpy
    # types equals MSE's

    class Typed(rx.Discrepancy):
        name = "typed"

        def __call__(self, rule, truth, n):
            return np.array(rx.MSE()(rule, truth, n))  # a 0-d array

    res = run(Typed())
    np.testing.assert_array_equal(res.dataset["loss"].sel(discrepancy="typed"),
                                  res.dataset["loss"].sel(discrepancy="mse"))
