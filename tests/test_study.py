"""The study runner and results: known answers, invariances, failures, reproducibility."""

from __future__ import annotations

import os
import signal
import sys
import time
import warnings

import numpy as np
import pandas as pd
import pytest
import xarray as xr
from pandas.testing import assert_frame_equal

import restrictiveness as rx
from restrictiveness.engine.protocol import FunctionRule
from restrictiveness.engine.study import truth_rng


def _finite_gp(points=25, seed=3):
    rng = np.random.default_rng(seed)
    support = rng.random((points, 2))
    domain = rx.FiniteSet(support, ("x1", "x2"))
    kernel = rx.Matern32(variance=1.0, lengthscale=0.5)
    prior = rx.MonotoneGP(rx.EligibleSet(domain), kernel=kernel, jitter=1e-4)
    return prior, support, kernel


def _projection_residual_trace(X, K):
    P = X @ np.linalg.pinv(X)
    return np.trace((np.eye(len(K)) - P) @ K)


def test_known_answer_linear_projection_of_a_gp():
    """E[D]/E[B] = tr((I - P_X) K) / tr((I - P_1) K) for OLS and the constant fitted on the
    evaluation set of a finite domain with uniform weights (model restrictiveness, Def. 1)."""
    prior, support, kernel = _finite_gp()
    K = kernel(support) + 1e-4 * np.eye(len(support))
    X = np.column_stack([np.ones(len(support)), support])
    expected = _projection_residual_trace(X, K) / _projection_residual_trace(X[:, :1], K)
    study = rx.Study(prior, {"linear": rx.OLS("y ~ x1 + x2")}, baseline=rx.Constant(), n=[5],
                     replications=2000, seed=11, fit_on="evaluation")
    res = study.run(progress=False)
    r = float(res.restrictiveness.sel(procedure="linear", n=5, discrepancy="mse"))
    se = float(res.se.sel(procedure="linear", n=5, discrepancy="mse"))
    assert abs(r - expected) < 4 * se
    assert se < 0.05 * expected  # the check has power


def test_model_restrictiveness_on_unequal_weights_is_refused():
    """fit_on="evaluation" fitted procedures to the evaluation points unweighted while the MSE
    weighted them: on weights (0.7, 0.1, 0.1, 0.1) a linear model's r̂ was 0.387, Def. 1's min
    over the weighted MSE 0.344. Repeated rows (equal weights) give Def. 1's answer."""
    x = np.array([0.0, 1.0, 2.0, 3.0])
    weighted = rx.MonotoneGP(rx.EligibleSet(rx.FiniteSet(x[:, None], ("x",),
                                                         weights=[0.7, 0.1, 0.1, 0.1])))
    study = rx.Study(weighted, {"linear": rx.OLS("y ~ x")}, baseline=rx.Constant(), n=[4],
                     replications=3, fit_on="evaluation")
    with pytest.raises(rx.ConfigurationError, match=r"fit_on='evaluation' .* weights them "
                                                 r"unequally \(0.1 to 0.7\)"):
        study.run(progress=False)
    # the same distribution over rows: 0 seven times, then 1, 2, 3; weighted least squares by
    # hand on the support gives the same D and B
    rows = pd.DataFrame({"x": [0.0] * 7 + [1.0, 2.0, 3.0]})
    repeated = rx.MonotoneGP(rx.EligibleSet(rx.FiniteSet.from_frame(rows, ["x"], replace=False),
                                            rx.Increasing("x")))  # one value per location
    res = rx.Study(repeated, {"linear": rx.OLS("y ~ x")}, baseline=rx.Constant(), n=[4],
                   replications=3, fit_on="evaluation").run(progress=False)
    w, Xd = np.array([0.7, 0.1, 0.1, 0.1]), np.column_stack([np.ones(4), x])
    D = B = 0.0
    for m in range(3):
        truth = repeated.draw([4], truth_rng(0, m))
        y = truth.eval_y(4)[6:]                          # one value per support point
        assert (truth.eval_y(4)[:7] == y[0]).all()
        beta = np.linalg.lstsq(Xd * np.sqrt(w)[:, None], y * np.sqrt(w), rcond=None)[0]
        D += w @ (y - Xd @ beta) ** 2
        B += w @ (y - w @ y) ** 2
    np.testing.assert_allclose(float(res.restrictiveness.sel(procedure="linear").squeeze()),
                               D / B, rtol=1e-9)


class Lookup(rx.Procedure):
    """Memorises the sample: returns the truth at its own points."""

    label = "lookup"

    def fit(self, sample, rng):
        table = {tuple(x): y for x, y in zip(sample.X, sample.y, strict=True)}
        return FunctionRule(lambda X: np.array([table[tuple(x)] for x in X]))


class ScaledMSE(rx.MSE):
    def __init__(self, factor):
        super().__init__(name=f"mse x{factor}")
        self.factor = factor

    def __call__(self, rule, truth, n):
        return self.factor * super().__call__(rule, truth, n)


def _lottery_like():
    F = rx.EligibleSet(rx.Box(x1=(0, 1), x2=(0, 1)), rx.Increasing("x1", "x2"), rx.Between(0, 1))
    return rx.MonotoneGP(F, n_eval=150)


def test_truth_returning_procedure_has_zero_restrictiveness_and_scale_invariance():
    prior = _lottery_like()
    study = rx.Study(prior, {"lookup": Lookup(), "linear": rx.OLS("y ~ x1 + x2")}, rx.Constant(),
                     discrepancies=[rx.MSE(), ScaledMSE(7.0)], n=[20], replications=8,
                     fit_on="evaluation")
    res = study.run(progress=False)
    r = res.restrictiveness
    assert float(r.sel(procedure="lookup", discrepancy="mse", n=20)) == 0.0
    np.testing.assert_allclose(r.sel(discrepancy="mse").values,
                               r.sel(discrepancy="mse x7.0").values, rtol=1e-12)


def test_pseudo_truth_is_eligible_and_crn_across_n():
    prior = _lottery_like()
    truth = prior.draw([20, 40], np.random.default_rng(5))
    for n in (20, 40):
        y = truth.eval_y(n)
        assert ((y >= 0) & (y <= 1)).all()
        assert truth.diagnostics(n)["violations"] == 0
        assert rx.Increasing("x1", "x2").violations(y, truth.eval_X, ("x1", "x2")) == 0
    np.testing.assert_array_equal(truth.train_X(20), truth.train_X(40)[:20])  # nested


@pytest.mark.parametrize("order", ["row-major", "random"])
def test_truth_at_n_does_not_depend_on_the_other_sizes(order):
    """Adding a smaller n leaves the truth at the others bit for bit (the Cholesky of the
    largest union is unchanged). With the random sweep order, each n's visiting order was the
    k-th child of the order stream, k its position in ns: adding n=5 moved the truth at n=10
    by 0.007."""
    F = rx.EligibleSet(rx.Box(x1=(0, 1), x2=(0, 1)), rx.Increasing("x1", "x2"), rx.Between(0, 1))
    prior = rx.MonotoneGP(F, n_eval=60, order=order)
    two = prior.draw([10, 20], np.random.default_rng(1))
    three = prior.draw([5, 10, 20], np.random.default_rng(1))
    for n in (10, 20):
        np.testing.assert_array_equal(three.eval_y(n), two.eval_y(n))
        np.testing.assert_array_equal(three.train_y(n), two.train_y(n))


def test_interpolated_draws_reproduce_the_truth_and_stay_in_bounds():
    prior = _lottery_like()
    truth = prior.draw([30], np.random.default_rng(2), draws=3)
    X_union = np.concatenate([truth.train_X(30), truth.eval_X])
    np.testing.assert_allclose(truth.interpolate(X_union, 30),
                               np.concatenate([truth.train_y(30), truth.eval_y(30)]), atol=1e-6)
    y2 = truth.train_y(30, draw=2)
    assert y2.shape == (30,) and ((y2 > 0) & (y2 < 1)).all()
    assert not np.allclose(truth.train_X(30, 2), truth.train_X(30, 0))


class Broken(rx.Procedure):
    def __init__(self, mode):
        self.mode = mode

    def fit(self, sample, rng):
        if self.mode == "raise":
            raise RuntimeError("boom")
        if self.mode == "nan":
            return FunctionRule(lambda X: np.full(len(X), np.nan))
        if self.mode == "shape":
            return FunctionRule(lambda X: np.zeros((len(X), 2)))
        if self.mode == "outside":  # out of bounds: clipped, not a failure
            return FunctionRule(lambda X: np.full(len(X), 5.0))
        raise AssertionError


def test_failure_protocol_uses_the_baseline_and_counts():
    prior = _lottery_like()
    procs = {m: Broken(m) for m in ("raise", "nan", "shape", "outside")}
    study = rx.Study(prior, procs, rx.Constant(), n=[10, 20], replications=4)
    with pytest.warns(rx.FailureWarning, match="failed"):
        res = study.run(progress=False)
    ds = res.dataset
    base = ds["baseline_loss"].sel(discrepancy="mse")
    for m in ("raise", "nan", "shape"):
        xr.testing.assert_equal(ds["loss"].sel(procedure=m, discrepancy="mse", drop=True),
                                base.drop_vars("discrepancy"))
    assert int(ds["failed"].sel(procedure="raise").sum()) == 8
    assert int(ds["failed"].sel(procedure="nan").sum()) == 0
    assert int(ds["invalid"].sel(procedure="nan").sum()) == 8 * 150
    assert int(ds["failed"].sel(procedure="shape").sum()) == 8
    assert "RuntimeError: boom" in str(ds["error"].sel(procedure="raise").values[0, 0])
    assert int(ds["failed"].sel(procedure="outside").sum()) == 0
    assert int(ds["invalid"].sel(procedure="outside").sum()) == 0
    # clipped to the upper bound 1: loss is E[(1 - f)^2] > 0 and finite
    outside = ds["loss"].sel(procedure="outside")
    assert np.isfinite(outside).all() and (outside > 0).all()
    assert res.failures().loc[("raise", 10), "failed"] == 4
    text = res.summary().as_text()
    assert "raise: failed in 8 of 8 fits" in text and "first error: fit: RuntimeError: boom" in text
    assert text.count("failed ") >= 4  # the raise and shape rows show "failed", not 1.000


class Exits(rx.Procedure):
    """Calls ``sys.exit`` in its fit at n = 20, or in its rule's predict: a stray ``exit()``,
    or a library that exits on bad input."""

    def __init__(self, where, code=0, io_bound=False):
        self.where, self.code, self.io_bound = where, code, io_bound

    def fit(self, sample, rng):
        if self.where == "fit" and len(sample.y) == 20:
            sys.exit(self.code)

        def predict(X):
            if self.where == "predict":
                sys.exit(self.code)
            return np.full(len(X), 0.5)

        return FunctionRule(predict)


@pytest.mark.parametrize("run", [{}, {"n_jobs": 2}, {"fit_timeout": 60}, {"concurrency": 2}],
                         ids=["serial", "pool", "fit_timeout", "threads"])
def test_a_procedure_calling_sys_exit_fails_its_fit_instead_of_ending_the_study(run):
    """Left to propagate, the SystemExit ended the study (and the user's script) with exit
    status 0 and nothing printed, whatever the backend."""
    io_bound = "concurrency" in run
    procs = {"fit": Exits("fit", io_bound=io_bound), "predict": Exits("predict", 3, io_bound),
             "fine": Exits("nowhere", io_bound=io_bound)}
    study = rx.Study(_lottery_like(), procs, rx.Constant(), n=[10, 20], replications=2)
    with pytest.warns(rx.FailureWarning):
        ds = study.run(progress=False, **run).dataset
    failed = ds["failed"].sum("replication")
    assert failed.sel(procedure="fit").values.tolist() == [0, 2]
    assert failed.sel(procedure="predict").values.tolist() == [2, 2]
    assert failed.sel(procedure="fine").values.tolist() == [0, 0]
    assert str(ds["error"].sel(procedure="fit", n=20).values[0]) == \
        "fit: SystemExit: sys.exit(0) was called"
    assert str(ds["error"].sel(procedure="predict", n=10).values[0]) == \
        "predict: SystemExit: sys.exit(3) was called"
    base = ds["baseline_loss"].sel(n=20, drop=True)
    xr.testing.assert_equal(ds["loss"].sel(procedure="fit", n=20, drop=True), base)


class Meddler(rx.Procedure):
    """Changes process state in its fit or in its rule (numpy's error state, the warning
    filters, the working directory); predicts 0.5."""

    def __init__(self, what, where, elsewhere=None):
        self.what, self.where, self.elsewhere = what, where, elsewhere

    def meddle(self):
        if self.what == "seterr":
            np.seterr(all="raise")
        elif self.what == "warnings":
            warnings.simplefilter("error")
        else:
            os.chdir(self.elsewhere)

    def fit(self, sample, rng):
        if self.where == "fit":
            self.meddle()

        def predict(X):
            if self.where == "predict":
                self.meddle()
            return np.full(len(X), 0.5)

        return FunctionRule(predict)


class Sensitive(rx.Procedure):
    """The training mean, after a division by zero and a warning (inf and a warning under
    numpy's and Python's defaults), in the directory the study started in."""

    def __init__(self, directory):
        self.directory = directory

    def fit(self, sample, rng):
        with warnings.catch_warnings():
            warnings.simplefilter("ignore", RuntimeWarning)
            np.array([1.0]) / np.array([0.0])
        warnings.warn("a note", UserWarning, stacklevel=2)
        if os.getcwd() != self.directory:
            raise RuntimeError(f"in {os.getcwd()}")
        mean = float(np.mean(sample.y))
        return FunctionRule(lambda X: np.full(len(X), mean))


@pytest.mark.parametrize("what", ["seterr", "warnings", "chdir"])
@pytest.mark.parametrize("where", ["fit", "predict"])
@pytest.mark.parametrize("n_jobs", [1, 2])
def test_a_procedure_changing_process_state_changes_no_other_procedure(what, where, n_jobs,
                                                                       tmp_path):
    """After np.seterr(all="raise"), warnings.simplefilter("error") or os.chdir in one
    procedure, a later procedure of the process raised and failed its fit: its losses depended
    on which procedures ran before it. The caller's state is as it was after the run."""
    here = os.getcwd()

    def losses(procs):
        study = rx.Study(_lottery_like(), procs, rx.Constant(), n=[10], replications=2)
        with warnings.catch_warnings():
            warnings.simplefilter("ignore", UserWarning)
            filters = list(warnings.filters)
            ds = study.run(progress=False, n_jobs=n_jobs).dataset
            assert warnings.filters == filters
        return ds

    alone = losses({"sensitive": Sensitive(here)})
    both = losses({"meddler": Meddler(what, where, str(tmp_path)), "sensitive": Sensitive(here)})
    assert int(both["failed"].sum()) == 0
    assert np.geterr()["divide"] == "warn" and os.getcwd() == here
    np.testing.assert_array_equal(both["loss"].sel(procedure="sensitive").values,
                                  alone["loss"].sel(procedure="sensitive").values)


def test_fits_on_threads_leave_the_callers_filters_and_directory_as_they_were(tmp_path):
    """Fits on threads share the process's filters and directory while they run (Python
    keeps one set per process); once the run ends, the caller's are back."""
    here = os.getcwd()
    procs = {"warnings": Meddler("warnings", "fit"), "chdir": Meddler("chdir", "predict",
                                                                      str(tmp_path))}
    for procedure in procs.values():
        procedure.io_bound = True
    study = rx.Study(_lottery_like(), procs, rx.Constant(), n=[10, 20], replications=4)
    with warnings.catch_warnings():
        filters = list(warnings.filters)
        study.run(progress=False, concurrency=3)
        assert warnings.filters == filters
    assert os.getcwd() == here


class SignalledDuringFit(rx.Procedure):
    """Sends its own process SIGTERM in its fit, as a batch scheduler would during one."""

    def fit(self, sample, rng):
        os.kill(os.getpid(), signal.SIGTERM)
        time.sleep(5)
        return FunctionRule(lambda X: np.full(len(X), 0.5))


def test_a_scripts_own_signal_handler_exiting_during_a_fit_stops_the_study():
    """signal.signal(SIGTERM, lambda *a: sys.exit(143)) in a user's script: the SystemExit its
    handler raised inside a fit was recorded as the fit's failure, and the study ran on past
    the scheduler's termination."""
    previous = signal.signal(signal.SIGTERM, lambda signum, frame: sys.exit(143))
    try:
        study = rx.Study(_lottery_like(), {"fit": SignalledDuringFit()}, rx.Constant(), n=[10],
                         replications=2)
        with pytest.raises(SystemExit) as stopped:
            study.run(progress=False)
        assert stopped.value.code == 143
    finally:
        signal.signal(signal.SIGTERM, previous)


def test_a_forked_child_restores_the_state_between_its_own_user_calls():
    """A fork while another thread was inside a user call (a fit on a thread) left the child
    counting that call as running for ever: nothing was restored between the child's fits."""
    from forking import held_by_another_thread

    from restrictiveness.engine.failures import user_code

    with held_by_another_thread(user_code(), release_after=30):
        pid = os.fork()
        if pid == 0:  # the child: one fit that sets an "error" filter, then a check
            code = 1
            try:
                with warnings.catch_warnings():
                    with user_code():
                        warnings.simplefilter("error")
                    code = 0 if warnings.filters[0][0] != "error" else 3
            finally:
                os._exit(code)
        assert os.waitstatus_to_exitcode(os.waitpid(pid, 0)[1]) == 0


class InterruptTurnedIntoTypeError(rx.MonotoneGP):
    """Replication 1's draw is interrupted, and C code turns the KeyboardInterrupt into another
    error, as numpy comparing structured arrays does ("Cannot compare structured arrays")."""

    def draw(self, ns, rng, draws=1):
        if self.calls == 1:
            from restrictiveness.engine.failures import note_interrupt
            note_interrupt()  # what the command line's SIGINT handler does
            raise TypeError("Cannot compare structured arrays unless they have a common dtype")
        self.calls += 1
        return super().draw(ns, rng, draws=draws)


def test_an_interrupt_turned_into_another_error_still_stops_the_study_as_one(tmp_path):
    """The CLI's Ctrl-C test ended once in 25 runs with "unexpected TypeError ... (a bug:
    please report it)" and status 1: the interrupt arrived while numpy compared structured
    arrays, which replaced it with a TypeError."""
    from restrictiveness.engine.failures import is_interrupt, note_interrupt

    F = rx.EligibleSet(rx.Box(x1=(0, 1), x2=(0, 1)), rx.Increasing("x1", "x2"), rx.Between(0, 1))
    prior = InterruptTurnedIntoTypeError(F, n_eval=50)
    prior.calls = 0
    study = rx.Study(prior, {"c": rx.Constant()}, rx.Constant(), n=[10], replications=3)
    try:
        with pytest.raises(rx.StudyInterrupted, match=r"1 of 3 replications finished"):
            study.run(progress=False, checkpoint=tmp_path / "ck")
    finally:
        note_interrupt(False)
    assert not is_interrupt(TypeError("an error of its own"))  # the note is gone
    assert list((tmp_path / "ck" / ".claims").iterdir()) == []


class ExitingBaseline(rx.Constant):
    def fit(self, sample, rng):
        sys.exit("no data")


class ExitingPrior(rx.MonotoneGP):
    def draw(self, *args, **kwargs):
        sys.exit(2)


@pytest.mark.parametrize("n_jobs", [1, 2])
def test_sys_exit_in_a_baseline_or_a_pseudo_truth_draw_is_an_error_naming_it(n_jobs):
    """Neither has a fallback: the study stops with an error instead of a quiet exit."""
    study = rx.Study(_lottery_like(), {"c": rx.Constant()}, ExitingBaseline(), n=[10],
                     replications=2)
    with pytest.raises(rx.BaselineError, match=r"failed in replication \d, n=10: "
                                               r"SystemExit: sys.exit\('no data'\) was called"):
        study.run(progress=False, n_jobs=n_jobs)
    F = rx.EligibleSet(rx.Box(x1=(0, 1), x2=(0, 1)), rx.Increasing("x1", "x2"), rx.Between(0, 1))
    study = rx.Study(ExitingPrior(F, n_eval=50), {"c": rx.Constant()}, rx.Constant(), n=[10],
                     replications=2)
    with pytest.raises(rx.ExecutionError, match=r"called sys.exit\(2\) while drawing "
                                                r"replication \d's pseudo-truth"):
        study.run(progress=False, n_jobs=n_jobs)


class Vandal(rx.Procedure):
    """Writes into every array it is given: the training sample's X and y when fitted, the
    locations when predicting (an in-place standardisation gone wrong); predicts 0.5."""

    label = "vandal"

    def fit(self, sample, rng):
        sample.X[...] = 0.0
        sample.y[...] = 0.0

        def predict(X):
            X[...] = -1.0
            return np.full(len(X), 0.5)

        return FunctionRule(predict)


class Half(rx.Procedure):
    """The rule 0.5, touching nothing."""

    def fit(self, sample, rng):
        return FunctionRule(lambda X: np.full(len(X), 0.5))


def test_a_sample_copy_keeps_a_subclass_and_its_own_fields():
    from dataclasses import dataclass

    from restrictiveness.shared.sample import Sample

    @dataclass(frozen=True, eq=False)
    class Weighted(Sample):
        weights: np.ndarray = None

    s = Weighted(np.zeros((2, 1)), np.ones(2), ("x",), weights=np.array([1.0, 3.0]))
    c = s.copy()
    c.weights[0] = 9.0
    assert type(c) is Weighted and s.weights.tolist() == [1.0, 3.0]
    assert c.columns == ("x",) and not np.shares_memory(s.X, c.X)


@pytest.mark.parametrize("where", ["procedure", "baseline"])
def test_a_procedure_writing_into_its_inputs_changes_no_other_numbers(where):
    # the replication's procedures share one sample and one set of evaluation locations
    # (common random numbers); a procedure that wrote into them changed every later one's
    # fit and loss without a word (a linear model's loss went from 0.0025 to 0.28)
    prior = _lottery_like()

    def run(first, baseline):
        procs = {"first": first, "linear": rx.OLS("y ~ x1 + x2"), "last": Half()}
        return rx.Study(prior, procs, baseline, n=[15, 30], replications=3,
                        seed=4).run(progress=False).dataset
    clean = run(Half(), Half())
    vandal = run(Vandal(), Half()) if where == "procedure" else run(Half(), Vandal())
    xr.testing.assert_identical(clean["loss"], vandal["loss"])
    xr.testing.assert_identical(clean["baseline_loss"], vandal["baseline_loss"])
    assert int(vandal["failed"].sum()) == 0 and int(vandal["invalid"].sum()) == 0


def test_serial_and_parallel_runs_are_identical_and_netcdf_round_trip(tmp_path):
    prior = _lottery_like()
    study = rx.Study(prior, {"linear": rx.OLS("y ~ x1 + x2"), "GP": rx.GPRegression()},
                     rx.Constant(), n=[10, 30], replications=6, seed=4)
    serial = study.run(progress=False).dataset
    parallel = study.run(n_jobs=2, progress=False).dataset
    timing = ["seconds", "baseline_seconds"]
    xr.testing.assert_identical(serial.drop_vars(timing).drop_attrs(),
                                parallel.drop_vars(timing).drop_attrs())
    path = tmp_path / "res.nc"
    rx.Results(serial).to_netcdf(path)
    xr.testing.assert_identical(rx.load(path).dataset, serial)


def test_a_seed_results_cannot_store_is_refused_before_the_run(tmp_path):
    """Seeds above 2**63 - 1 ran to the end, then to_netcdf failed on the 'seed' attribute
    (netCDF4's TypeError: illegal data type for attribute); the largest storable seed round
    trips."""
    F = rx.EligibleSet(rx.Box(x=(0, 1)), rx.Increasing("x"), rx.Between(0, 1))
    prior = rx.MonotoneGP(F, n_eval=20)
    for seed in (2**63, 2**70):
        with pytest.raises(rx.ConfigurationError, match=r"seed must be at most 2\*\*63 - 1"):
            rx.Study(prior, {"linear": rx.OLS("y ~ x")}, rx.Constant(), n=[5], seed=seed)
    study = rx.Study(prior, {"linear": rx.OLS("y ~ x")}, rx.Constant(), n=[5], replications=2,
                     seed=2**63 - 1)
    res = study.run(progress=False)
    res.to_netcdf(tmp_path / "res.nc")
    back = rx.load(tmp_path / "res.nc")
    assert int(back.dataset.attrs["seed"]) == back.configuration["seed"] == 2**63 - 1
    xr.testing.assert_identical(back.dataset, res.dataset)


class Noisy(rx.Procedure):
    """Uses its random stream: predictions are the mean label plus one uniform draw."""

    def fit(self, sample, rng):
        shift = rng.random()
        return FunctionRule(lambda X: np.full(len(X), sample.y.mean() + 0.1 * shift))


def test_seeds_do_not_depend_on_other_procedures_or_their_order():
    prior = _lottery_like()
    one = rx.Study(prior, {"noisy": Noisy()}, rx.Constant(), n=[10], replications=3)
    two = rx.Study(prior, {"linear": rx.OLS("y ~ x1"), "other": Noisy(), "noisy": Noisy()},
                   rx.Constant(), n=[10], replications=3)
    a = one.run(progress=False).dataset["loss"].sel(procedure="noisy")
    ds = two.run(progress=False, n_jobs=2).dataset["loss"]
    xr.testing.assert_equal(a, ds.sel(procedure="noisy"))
    # different labels get different streams
    assert not np.allclose(ds.sel(procedure="other"), ds.sel(procedure="noisy"))


def test_common_random_numbers_across_n_in_the_latent_draw():
    """Without monotonicity constraints the projection is the identity, so the latent values
    at the evaluation points and at shared training points must coincide across n."""
    F = rx.EligibleSet(rx.Box(x1=(0, 1), x2=(0, 1)))
    truth = rx.MonotoneGP(F, n_eval=60).draw([20, 40], np.random.default_rng(1))
    np.testing.assert_array_equal(truth.eval_y(20), truth.eval_y(40))
    np.testing.assert_array_equal(truth.train_y(20), truth.train_y(40)[:20])


class FailsOnSecondCall(rx.Procedure):
    def fit(self, sample, rng):
        calls = {"n": 0}

        def predict(X):
            calls["n"] += 1
            if calls["n"] > 1:
                raise RuntimeError("second call")
            return np.full(len(X), 0.5)

        return FunctionRule(predict)


def test_a_rule_failing_midway_uses_the_baseline_for_every_discrepancy():
    prior = _lottery_like()
    study = rx.Study(prior, {"flaky": FailsOnSecondCall()}, rx.Constant(),
                     discrepancies=[rx.MSE("a"), rx.MSE("b")], n=[10], replications=2)
    with pytest.warns(rx.FailureWarning):
        ds = study.run(progress=False).dataset
    xr.testing.assert_equal(ds["loss"].sel(procedure="flaky", drop=True), ds["baseline_loss"])
    assert int(ds["failed"].sum()) == 2


def test_a_baseline_with_non_finite_predictions_is_an_error():
    prior = _lottery_like()

    class NonFinite(rx.Procedure):
        def __init__(self, value):
            self.value = value

        def fit(self, sample, rng):
            return FunctionRule(lambda X: np.full(len(X), self.value))

    # ±inf too: clipped to Between(0, 1)'s bound, it had scored as an eligible baseline
    for value in (np.nan, np.inf, -np.inf):
        study = rx.Study(prior, {"GP": rx.GPRegression()}, NonFinite(value), n=[10],
                         replications=2)
        with pytest.raises(rx.BaselineError, match="non-finite"):
            study.run(progress=False)


def test_summary_contrast_and_estimates():
    prior = _lottery_like()
    res = rx.Study(prior, {"linear": rx.OLS("y ~ x1 + x2"), "GP": rx.GPRegression()},
                   rx.Constant(), n=[10, 30], replications=10).run(progress=False)
    text = res.summary().as_text()
    assert "n=10" in text and "GP" in text and "discrepancy: mse" in text
    assert "\\begin{tabular}" in res.summary().as_latex()
    c = res.contrast("linear", "GP")
    r = res.restrictiveness.sel(discrepancy="mse")
    np.testing.assert_allclose(c["estimate"].values,
                               (r.sel(procedure="linear") - r.sel(procedure="GP")).values)
    est = res.estimates()
    assert (est["lower"] < est["estimate"]).all() and (est["estimate"] < est["upper"]).all()
    with pytest.raises(rx.ConfigurationError, match="'nope' not in"):
        res.contrast("nope", "GP")
    # the baseline is no procedure row: say so rather than only listing the procedures
    with pytest.raises(rx.ConfigurationError, match="'baseline' is the baseline: its r̂ is 1"):
        res.contrast("GP", "baseline")


def test_bad_input_messages():
    prior = _lottery_like()
    with pytest.raises(rx.FormulaError, match=r"\['x9'\]"):
        rx.Study(prior, {"bad": rx.OLS("y ~ x1 + x9")}, rx.Constant(), n=[10])
    with pytest.raises(rx.ConfigurationError, match="positive integers"):
        rx.Study(prior, {"GP": rx.GPRegression()}, rx.Constant(), n=[0])
    with pytest.raises(rx.ConfigurationError, match="share labels"):
        rx.Study(prior, [rx.OLS("y ~ x1"), rx.OLS("y ~ x1 + x2")], rx.Constant(), n=[10])
    with pytest.raises(rx.ConfigurationError, match="at least 2"):
        rx.Study(prior, {"GP": rx.GPRegression()}, rx.Constant(), n=[5], replications=1)
    small = rx.MonotoneGP(rx.EligibleSet(rx.FiniteSet(np.eye(3), ("a", "b", "c"),
                                                       replace=False)))
    study = rx.Study(small, {"GP": rx.GPRegression()}, rx.Constant(), n=[5], replications=2)
    with pytest.raises(rx.DomainError, match="cannot draw n=5 distinct"):
        study.run(progress=False)
    with pytest.raises(rx.BaselineError, match="baseline"):
        rx.Study(prior, {"GP": rx.GPRegression()}, Broken("raise"), n=[5],
                 replications=2).run(progress=False)


class Counting(rx.OLS):
    fits = 0

    def fit(self, sample, rng):
        Counting.fits += 1
        return super().fit(sample, rng)


def test_checkpoint_resumes_without_recomputing_and_matches_an_uninterrupted_run(tmp_path):
    prior = _lottery_like()

    def study(seed=4):
        return rx.Study(prior, {"linear": Counting("y ~ x1 + x2")}, rx.Constant(), n=[10],
                        replications=5, seed=seed)

    full = study().run(progress=False).dataset
    ck = tmp_path / "ck"
    study().run(progress=False, replications=[0, 3], checkpoint=ck)  # a run killed midway
    assert len(list(ck.glob("replication-*.npz"))) == 2
    Counting.fits = 0
    resumed = study().run(progress=False, checkpoint=ck).dataset
    assert Counting.fits == 3  # replications 0 and 3 were loaded, not refitted
    timing = ["seconds", "baseline_seconds"]
    xr.testing.assert_identical(full.drop_vars(timing).drop_attrs(),
                                resumed.drop_vars(timing).drop_attrs())
    parallel = study().run(n_jobs=2, progress=False, checkpoint=tmp_path / "ck2").dataset
    xr.testing.assert_identical(full.drop_vars(timing).drop_attrs(),
                                parallel.drop_vars(timing).drop_attrs())
    with pytest.raises(rx.CheckpointError, match="different study configuration"):
        study(seed=5).run(progress=False, checkpoint=ck)


def test_dask_backend_gives_identical_results():
    prior = _lottery_like()
    study = rx.Study(prior, {"GP": rx.GPRegression()}, rx.Constant(), n=[10], replications=3,
                     seed=2)
    timing = ["seconds", "baseline_seconds"]
    serial = study.run(progress=False).dataset.drop_vars(timing).drop_attrs()
    dask = study.run(backend="dask", n_jobs=2, progress=False).dataset
    xr.testing.assert_identical(serial, dask.drop_vars(timing).drop_attrs())


def test_a_local_dask_cluster_does_not_warn_that_port_8787_is_taken():
    """The study's own cluster served its scheduler's HTTP routes on dask's default port,
    8787: with another cluster on the machine (a second study, a notebook's dashboard, a
    parallel test run) every run warned "Port 8787 is already in use. Perhaps you already
    have a cluster running?", which fails a run under warnings-as-errors. It now takes a free
    port of the loopback interface."""
    import socket

    study = rx.Study(_lottery_like(), {"linear": rx.OLS("y ~ x1 + x2")}, rx.Constant(),
                     n=[10], replications=2, seed=2)
    taken = socket.socket()
    try:
        taken.bind(("127.0.0.1", 8787))
        taken.listen()
    except OSError:
        pass  # in use already, which is the case at hand
    try:
        with warnings.catch_warnings(record=True) as log:
            warnings.simplefilter("always")
            study.run(backend="dask", n_jobs=1, progress=False)
    finally:
        taken.close()
    assert [str(w.message) for w in log if "already in use" in str(w.message)] == []


def test_profile_plot_draws_one_line_per_procedure():
    import matplotlib

    matplotlib.use("Agg")
    prior = _lottery_like()
    res = rx.Study(prior, {"linear": rx.OLS("y ~ x1 + x2"), "GP": rx.GPRegression()},
                   rx.Constant(), n=[10, 30], replications=3).run(progress=False)
    ax = res.plot_profile()
    # one line per procedure, then the baseline's r = 1 reference
    assert [line.get_label() for line in ax.lines][:2] == ["linear", "GP"]
    assert ax.lines[2].get_label().startswith("baseline, r = 1")
    np.testing.assert_allclose(ax.lines[1].get_ydata(),
                               res.restrictiveness.sel(procedure="GP", discrepancy="mse"))


@pytest.mark.parametrize(("option", "value", "message"), [
    ("n", [10.5], r"n must be positive integers, got \[10.5\]"),
    ("n", [True], r"n must be positive integers, got \[True\]"),
    # a repeated size was dropped without a word (the profile had one column fewer)
    ("n", [20, 10, 10, 20], r"n lists the sample size\(s\) \[10, 20\] more than once"),
    ("replications", None, "replications must be a whole number, got None"),
    ("replications", 2.5, "replications must be a whole number, got 2.5"),
    ("seed", -1, "seed must be a whole number >= 0, got -1"),
    ("seed", None, "seed must be a whole number >= 0, got None"),
    ("seed", 1.5, "seed must be a whole number >= 0, got 1.5"),
    ("draws", 2.5, "draws must be a whole number >= 1, got 2.5"),
    ("draws", None, "draws must be a whole number >= 1, got None"),
    ("discrepancies", "mse", "discrepancies must be a sequence of Discrepancy objects"),
])
def test_study_options_that_int_would_truncate_are_refused(option, value, message):
    # int() would silently turn 10.5 into 10, True into 1, and None into a bare TypeError;
    # a negative seed used to pass here and fail inside numpy when the study ran
    with pytest.raises(rx.ConfigurationError, match=message):
        rx.Study(_lottery_like(), {"GP": rx.GPRegression()}, rx.Constant(),
                 **{"n": [10], "replications": 3, option: value})


def test_study_refuses_non_string_labels_and_a_non_distribution():
    prior = _lottery_like()
    with pytest.raises(rx.ConfigurationError, match="labels must be non-empty strings, got 1"):
        rx.Study(prior, {1: rx.OLS("y ~ x1")}, rx.Constant(), n=[10])
    with pytest.raises(rx.ConfigurationError, match="labels must be non-empty strings, got ''"):
        rx.Study(prior, {"": rx.OLS("y ~ x1")}, rx.Constant(), n=[10])
    capped = rx.OLS("y ~ x1")
    capped.draws = 0  # r̂ was NaN without a word
    with pytest.raises(rx.ConfigurationError, match=r"procedures\['capped'\].draws must be a "
                                                    r"whole number >= 1, got 0"):
        rx.Study(prior, {"capped": capped}, rx.Constant(), n=[10], draws=2)
    # a baseline labelled like a procedure made summaries name two "linear"s
    with pytest.raises(rx.ConfigurationError, match=r"baseline_label must be .*other than the "
                                                    r"procedure labels \['linear'\]"):
        rx.Study(prior, {"linear": rx.OLS("y ~ x1")}, rx.Constant(), n=[10],
                 baseline_label="linear")
    with pytest.raises(rx.ConfigurationError, match="evaluation must be an evaluation "
                                                    "distribution .*got 3"):
        rx.Study(3, {"linear": rx.OLS("y ~ x1")}, rx.Constant(), n=[10])


def test_results_refuse_levels_weights_and_paths_they_cannot_honour(tmp_path):
    res = rx.Study(_lottery_like(), {"linear": rx.OLS("y ~ x1 + x2"), "GP": rx.GPRegression()},
                   rx.Constant(), n=[10], replications=3).run(progress=False)
    # level 1.5 gave NaN intervals and level 0 an interval of width 0, silently
    for level in (0, 1.5, "0.9"):
        with pytest.raises(rx.ConfigurationError, match=rf"level must lie in \(0, 1\), got "
                                                        rf"{level!r}"):
            res.estimates(level=level)
    with pytest.raises(rx.ConfigurationError, match=r"level must lie in \(0, 1\), got 0"):
        res.contrast("linear", "GP", level=0)
    # an empty combination was 0 with SE 0; a NaN weight gave NaN without a word
    with pytest.raises(rx.ConfigurationError, match="non-empty mapping"):
        res.combination({})
    with pytest.raises(rx.ConfigurationError, match=r"finite numbers, got \{'GP': nan\}"):
        res.combination({"linear": 1.0, "GP": float("nan")})
    # a missing folder or a folder as the file were bare OSErrors naming a temporary file
    with pytest.raises(rx.ConfigurationError, match="folder .*missing.* does not exist"):
        res.to_netcdf(tmp_path / "missing" / "r.nc")
    with pytest.raises(rx.ConfigurationError, match="it is a folder; give a file name"):
        res.to_netcdf(tmp_path)
    assert list(tmp_path.iterdir()) == []  # nothing half-written left behind
    with pytest.raises(rx.DataError, match="variables 'loss' and 'baseline_loss'"):
        rx.Results(xr.Dataset({"a": ("x", [1, 2])}))
    # a results file that lost variables is told what it lacks ("it is not a file of
    # restrictiveness results: it holds restrictiveness results" contradicted itself)
    res.dataset.drop_vars(["failed", "error"]).to_netcdf(tmp_path / "lost.nc")
    with pytest.raises(rx.DataError, match=r"is not a file of restrictiveness results: it "
                                           r"lacks \['failed', 'error'\]$"):
        rx.load(tmp_path / "lost.nc")


def test_results_refuse_unknown_names_and_contribution_objects():
    res = rx.Study(_lottery_like(), {"linear": rx.OLS("y ~ x1 + x2"), "GP": rx.GPRegression()},
                   rx.Constant(), n=[10], replications=3).run(progress=False)
    # unknown names were xarray KeyErrors, None an AttributeError
    with pytest.raises(rx.ConfigurationError, match=r"discrepancy 'kl' not in \['mse'\]"):
        res.summary(discrepancy="kl")
    with pytest.raises(rx.ConfigurationError, match="procedure 'nope' not in"):
        res.summary(procedures=["nope"])
    # one label as a string, as discrepancy= takes one (it was split into letters: 'l' not in)
    one = res.summary(procedures="linear").as_text()
    assert one == res.summary(procedures=["linear"]).as_text()
    with pytest.raises(rx.ConfigurationError, match="takes an rx.Contributions"):
        res.with_contributions(None)
    with pytest.raises(rx.ConfigurationError, match="submodels must be a mapping .*got 'GP'"):
        rx.Contributions(full="linear", submodels="GP")
    study = rx.Study(_lottery_like(), {"linear": rx.OLS("y ~ x1")}, rx.Constant(), n=[10],
                     replications=2)
    # bool('no') showed the bar; a string client failed deep in the dask backend
    with pytest.raises(rx.ConfigurationError, match="progress must be True, False or None"):
        study.run(progress="no")
    with pytest.raises(rx.ConfigurationError, match="client must be a dask.distributed Client"):
        study.run(backend="dask", client="tcp://nowhere:8786", progress=False)
    with pytest.raises(rx.ConfigurationError, match="n_jobs must be a positive number .*True"):
        study.run(n_jobs=True, progress=False)
    with pytest.raises(rx.CheckpointError, match="checkpoint must be a directory path, got 3"):
        rx.Study(_lottery_like(), {"linear": rx.OLS("y ~ x1")}, rx.Constant(), n=[10],
                 replications=2).run(progress=False, checkpoint=3)


class _UnusedClient:
    """Stands for a dask Client; the run must not go ahead without it."""

    def submit(self, *args, **kwargs):
        raise AssertionError("not reached: the run is refused first")


def test_a_client_with_the_process_backend_is_refused():
    """client= without backend='dask' ran on the local pool and never used the cluster, with
    nothing said (the user's 100-worker cluster idle, the laptop busy)."""
    study = rx.Study(_lottery_like(), {"linear": rx.OLS("y ~ x1")}, rx.Constant(), n=[10],
                     replications=2)
    for n_jobs in (1, 2):
        with pytest.raises(rx.ConfigurationError, match="backend='dask' to run on the client"):
            study.run(client=_UnusedClient(), n_jobs=n_jobs, progress=False)
    with pytest.raises(rx.ConfigurationError, match="backend='dask' to run on the client"):
        study.run_units([0], client=_UnusedClient())


def test_the_summary_says_what_the_baseline_is():
    """The header named the baseline by its label only: 'Baseline: baseline' for the default,
    so a printed summary did not say what r̂ is relative to."""
    study = rx.Study(_lottery_like(), {"linear": rx.OLS("y ~ x1")}, rx.Constant(), n=[10],
                     replications=2)
    header = study.run(progress=False).summary().tables[0]
    assert ["Baseline:", "baseline = Constant(formula=None)"] in \
        [[str(cell).strip() for cell in row] for row in header]
    named = rx.Study(_lottery_like(), {"linear": rx.OLS("y ~ x1")}, rx.Constant("y ~ 1"),
                     n=[10], replications=2, baseline_label="mean")
    assert "mean = Constant(formula='y ~ 1')" in named.run(progress=False).summary().as_text()


def test_a_summary_of_nothing_is_refused():
    """summary(procedures=[]) or summary(discrepancy=[]) printed a table without rows (or no
    table) with nothing said."""
    res = rx.Study(_lottery_like(), {"linear": rx.OLS("y ~ x1")}, rx.Constant(), n=[10],
                   replications=2).run(progress=False)
    for kwargs in ({"procedures": []}, {"discrepancy": []}, {"procedures": ()}):
        with pytest.raises(rx.ConfigurationError, match="at least one discrepancy and one"):
            res.summary(**kwargs)
    assert "linear" in res.summary(procedures=["linear"], discrepancy=["mse"]).as_text()


def test_a_summary_refuses_a_procedure_or_discrepancy_named_twice():
    """summary(procedures=["linear", "linear"]) printed the row twice, and
    summary(discrepancy=["mse", "mse"]) the whole table twice, as if they were other
    estimates."""
    res = rx.Study(_lottery_like(), {"linear": rx.OLS("y ~ x1"), "quad": rx.OLS("y ~ x1 + x2")},
                   rx.Constant(), n=[10], replications=3).run(progress=False)
    with pytest.raises(rx.ConfigurationError, match="procedures names 'linear' more than once"):
        res.summary(procedures=["linear", "quad", "linear"])
    with pytest.raises(rx.ConfigurationError, match="discrepancy names 'mse' more than once"):
        res.summary(discrepancy=["mse", "mse"])
    table = res.summary(procedures=["quad", "linear"]).tables[1]
    r = res.restrictiveness.sel(discrepancy="mse", n=10)
    se = res.se.sel(discrepancy="mse", n=10)
    assert [row[0].data.strip() for row in table[1:]] == ["quad", "linear"]
    assert [row[1].data for row in table[1:]] == [
        f"{float(r.sel(procedure=p)):.3f} ({float(se.sel(procedure=p)):.3f})"
        for p in ("quad", "linear")]


@pytest.mark.parametrize("timeout", [-1, 0, float("nan"), "60", True, None])
def test_an_impossible_worker_timeout_is_refused_on_every_backend(timeout):
    """worker_timeout=-1 (or "60") passed unread when the replications ran on the process pool;
    dask's check, the only one, came after the run had started."""
    study = rx.Study(_lottery_like(), {"linear": rx.OLS("y ~ x1")}, rx.Constant(), n=[10],
                     replications=2)
    for n_jobs in (1, 2):
        with pytest.raises(rx.ConfigurationError, match="worker_timeout must be a positive"):
            study.run(worker_timeout=timeout, n_jobs=n_jobs, progress=False)
    with pytest.raises(rx.ConfigurationError, match="worker_timeout must be a positive"):
        study.run_units([0], worker_timeout=timeout)


class _Negative(rx.Discrepancy):
    name = "negative"

    def __init__(self, sign_for_baseline):
        self.sign_for_baseline = sign_for_baseline

    def __call__(self, rule, truth, n):
        baseline = isinstance(rule, FunctionRule)
        return -1.0 if baseline == self.sign_for_baseline else 1.0


@pytest.mark.parametrize(("baseline_negative", "who"), [(True, "the baseline"),
                                                         (False, "procedure 'linear'")])
def test_a_negative_loss_is_refused_not_averaged(baseline_negative, who):
    # -1 / -1 used to give r̂ = 1 without a word
    with pytest.raises(rx.ConfigurationError, match=rf"discrepancy \['negative'\] gave a "
                                                    rf"negative loss for {who}"):
        rx.Study(_lottery_like(), {"linear": rx.OLS("y ~ x1")}, rx.Constant(), n=[10],
                 replications=2, discrepancies=[_Negative(baseline_negative)]
                 ).run(progress=False)


class _NonFinite(rx.Discrepancy):
    """Loss ``value`` for the baseline's (repaired) rule or for the procedures', 0.5 else."""

    name = "nonfinite"

    def __init__(self, value, for_baseline):
        self.value, self.for_baseline = value, for_baseline

    def __call__(self, rule, truth, n):
        return self.value if isinstance(rule, FunctionRule) == self.for_baseline else 0.5


@pytest.mark.parametrize("value", [np.nan, np.inf])
@pytest.mark.parametrize(("for_baseline", "error", "who"),
                         [(True, rx.BaselineError, "the baseline"),
                          (False, rx.ConfigurationError, "procedure 'linear'")])
def test_a_non_finite_loss_is_refused_not_carried_into_r(value, for_baseline, error, who):
    # a procedure's NaN or inf loss gave r̂ = NaN or inf (and se NaN) without a word
    study = rx.Study(_lottery_like(), {"linear": rx.OLS("y ~ x1")}, rx.Constant(), n=[10],
                     replications=2, discrepancies=[rx.MSE(), _NonFinite(value, for_baseline)])
    with pytest.raises(error, match=rf"discrepancy \['nonfinite'\] gave a non-finite loss for "
                                    rf"{who} in replication 0, n=10 \(.*'nonfinite': {value}"):
        study.run(progress=False)


def test_results_refuse_missing_losses_and_read_rounding_below_zero_as_zero():
    res = rx.Study(_lottery_like(), {"linear": rx.OLS("y ~ x1")}, rx.Constant(), n=[10, 20],
                   replications=4).run(progress=False)
    for name, value in (("loss", np.nan), ("baseline_loss", np.inf)):
        ds = res.dataset.copy(deep=True)
        ds[name].loc[{"n": 20, "replication": 2}] = value
        with pytest.raises(rx.DataError, match=rf"{name} is NaN or infinite in 1 cells "
                                               r"\(averaged over draws\), first at .*'n': 20, "
                                               "'replication': 2"):
            rx.Results(ds)
    # A baseline loss of -1e-12 (rounding, e.g. of a KL) is within the construction's tolerance;
    # the sensitivity bounds, which need B >= 0, refused it while r̂ used it. Both read it as 0.
    rounded, zero = res.dataset.copy(deep=True), res.dataset.copy(deep=True)
    rounded["baseline_loss"].loc[{"n": 20, "replication": 1}] = -1e-12
    zero["baseline_loss"].loc[{"n": 20, "replication": 1}] = 0.0
    rounded, zero = rx.Results(rounded), rx.Results(zero)
    assert_frame_equal(rounded.sensitivity("linear", gamma=2.0),
                       zero.sensitivity("linear", gamma=2.0))
    assert rounded.restrictiveness.equals(zero.restrictiveness)
    D, B = rounded.losses()
    assert float(B.sel(n=20, replication=1).item()) == 0.0


def test_results_refuse_a_dataset_whose_layout_they_would_misread():
    # without the n coordinate the estimates were labelled n = 0, 1 without a word; repeated
    # n labels were accepted; a dimension renamed or missing failed deep in xarray
    ds = rx.Study(_lottery_like(), {"linear": rx.OLS("y ~ x1")}, rx.Constant(), n=[10, 20],
                  replications=3, discrepancies=[rx.MSE(), rx.MSE("again")]
                  ).run(progress=False).dataset
    for bad, message in ((ds.drop_vars("n"), "the Dataset has no 'n' coordinate"),
                         (ds.assign_coords(discrepancy=["mse", "mse"]),
                          r"discrepancy labels repeat: \['mse'\]"),
                         (ds.drop_vars("discrepancy"), "no 'discrepancy' coordinate"),
                         (ds.assign_coords(n=[10, 10]), r"n labels repeat: \[10\]"),
                         (ds.assign_coords(replication=[0, 1, 1]),
                          r"replication labels repeat: \[1\]"),
                         (ds.rename({"replication": "rep"}),
                          r"loss has dimensions \['procedure', 'discrepancy', 'n', 'rep'\]"),
                         (ds.assign(baseline_loss=ds["baseline_loss"].isel(n=0)),
                          r"baseline_loss has dimensions \['discrepancy', 'replication'\]")):
        with pytest.raises(rx.DataError, match=message):
            rx.Results(bad)
    assert rx.Results(ds).restrictiveness.sel(n=20, discrepancy="again").item() == \
        rx.Results(ds.isel(n=[1])).restrictiveness.sel(discrepancy="again").item()


def test_kl_on_scalar_truths_is_a_configuration_error_not_the_baselines():
    # an IndexError inside KL was reported as "the baseline ... failed"
    with pytest.raises(rx.ConfigurationError, match="KL compares probability vectors .*use MSE"):
        rx.Study(_lottery_like(), {"linear": rx.OLS("y ~ x1")}, rx.Constant(), n=[10],
                 replications=2, discrepancies=[rx.KL()]).run(progress=False)
    with pytest.raises(rx.ConfigurationError, match=r"positive integers, got \[2.5\]"):
        _lottery_like().draw([2.5], np.random.default_rng(0))


@pytest.mark.parametrize("replications", [[-1, 0], [0.5, 1], [1, 1], [], [10], 2])
def test_run_refuses_replication_indices_it_cannot_honour(replications):
    # -1 and 0.5 failed inside numpy, [] inside numpy.stack, 2 was a TypeError; [1, 1] ran the
    # same pseudo-truth twice and [10] one the study does not have
    study = rx.Study(_lottery_like(), {"linear": rx.OLS("y ~ x1")}, rx.Constant(), n=[10],
                     replications=4)
    with pytest.raises(rx.ConfigurationError, match="replications must be"):
        study.run(replications=replications, progress=False)


def test_one_replication_runs_but_has_no_standard_error():
    res = rx.Study(_lottery_like(), {"linear": rx.OLS("y ~ x1")}, rx.Constant(), n=[10],
                   replications=4).run(replications=[2], progress=False)
    with pytest.raises(rx.ConfigurationError, match="at least two replications are needed"):
        res.estimates()


def test_quick_check_takes_a_list_of_formulas_as_study_takes_a_list():
    """A list was taken for one procedure labelled 'procedure', refused as having no fit
    method. Each formula is now its own procedure, labelled by itself, with the numbers of the
    same formulas given as a mapping."""
    F = rx.EligibleSet(rx.Box(x=(0, 1)), rx.Increasing("x"), rx.Between(0, 1))
    prior = rx.MonotoneGP(F, n_eval=20)
    formulas = ["y ~ x", "y ~ x + I(x**2)"]
    listed = rx.quick_check(formulas, prior, n=[6], replications=3, progress=False)
    mapped = rx.quick_check({f: f for f in formulas}, prior, n=[6], replications=3,
                            progress=False)
    assert listed.procedures == formulas
    xr.testing.assert_equal(listed.restrictiveness, mapped.restrictiveness)
    with pytest.raises(rx.ConfigurationError, match="procedures share labels"):
        rx.quick_check(["y ~ x", "y ~ x"], prior, n=[6], replications=3, progress=False)
    with pytest.raises(rx.ConfigurationError, match="a formula, a Procedure, or a list"):
        rx.quick_check({"y ~ x"}, prior, n=[6], replications=3, progress=False)


def test_a_lone_procedure_and_a_resume_flag_that_is_not_a_bool_are_refused_by_name(tmp_path):
    """Study(prior, rx.OLS(...)) failed with "'OLS' object is not iterable"; and
    run(resume_other_versions="no") resumed under other versions (bool("no") is True)."""
    F = rx.EligibleSet(rx.Box(x=(0, 1)), rx.Increasing("x"), rx.Between(0, 1))
    prior = rx.MonotoneGP(F, n_eval=20)
    for lone in (rx.OLS("y ~ x"), "y ~ x", 3):
        with pytest.raises(rx.ConfigurationError, match="procedures must be a mapping"):
            rx.Study(prior, lone, rx.Constant(), n=[5], replications=2)
    study = rx.Study(prior, [rx.OLS("y ~ x")], rx.Constant(), n=[5], replications=2)
    for flag in ("no", 1, None):
        with pytest.raises(rx.ConfigurationError,
                           match="resume_other_versions must be True or False"):
            study.run(progress=False, checkpoint=tmp_path / "ck", resume_other_versions=flag)
    assert not (tmp_path / "ck").exists()


def test_the_summary_of_model_restrictiveness_says_one_fit_per_truth_whatever_the_draws():
    """fit_on="evaluation" fits each procedure once on the evaluation set (draws has no
    effect: the losses beyond the first draw are NaN), but the summary said 'Draws per truth:
    3' for draws=3."""
    F = rx.EligibleSet(rx.Box(x=(0, 1)), rx.Increasing("x"), rx.Between(0, 1))
    prior = rx.MonotoneGP(F, n_eval=20)

    def run(draws, fit_on):
        return rx.Study(prior, {"linear": rx.OLS("y ~ x")}, rx.Constant(), n=[5], replications=2,
                        draws=draws, fit_on=fit_on).run(progress=False)

    model = run(3, "evaluation")
    assert int(model.dataset["loss"].notnull().sum()) == 2  # one fit per replication
    assert model.summary().tables[0].data[3] == ["Draws per truth:", "1"]
    assert run(1, "evaluation").restrictiveness.equals(model.restrictiveness)
    assert run(3, "training").summary().tables[0].data[3] == ["Draws per truth:", "3"]


class GlobalDraws(rx.Procedure):
    """Draws from numpy's global random state and Python's ``random`` in its fit and in its
    rule, as user code that ignores its ``rng`` does: predicts a level from the fit's draws
    plus noise from the rule's."""

    def fit(self, sample, rng):
        import random
        level = 0.3 + 0.2 * np.random.uniform() + 0.1 * random.random()  # noqa: NPY002

        def predict(X):
            return level + 0.05 * np.random.uniform(size=len(X))  # noqa: NPY002

        return FunctionRule(predict)


def test_a_procedure_drawing_from_the_global_random_states_reproduces_at_any_worker_count():
    """A procedure drawing from np.random / random instead of its rng gave other losses on
    every rerun (the caller's global states differ) and at every worker count (each worker
    carries its own from fit to fit). Each fit and prediction now runs on the global states
    seeded from what it is; the caller's states are left as they were."""
    import random

    study = rx.Study(_lottery_like(), {"global": GlobalDraws()}, GlobalDraws(), n=[10, 20],
                     replications=3)
    runs = []
    for caller_seed, n_jobs in ((1, 1), (2, 1), (3, 2)):
        np.random.seed(caller_seed)  # noqa: NPY002
        random.seed(caller_seed)
        before = (np.random.uniform(), random.random())  # noqa: NPY002
        np.random.seed(caller_seed)  # noqa: NPY002
        random.seed(caller_seed)
        runs.append(study.run(progress=False, n_jobs=n_jobs).dataset)
        assert (np.random.uniform(), random.random()) == before  # noqa: NPY002
    losses = [ds["loss"].values for ds in runs]
    assert np.unique(losses[0]).size == losses[0].size  # every fit drew its own numbers
    for other in runs[1:]:
        np.testing.assert_array_equal(other["loss"].values, runs[0]["loss"].values)
        np.testing.assert_array_equal(other["baseline_loss"].values,
                                      runs[0]["baseline_loss"].values)


class FitsAnAdapterOnAThread(rx.Procedure):
    """Fits a scikit-learn adapter on a thread of its own and waits for it."""

    def fit(self, sample, rng):
        import threading

        from sklearn.linear_model import LinearRegression
        inner = rx.SklearnRegressor(LinearRegression())
        out = {}
        worker = threading.Thread(target=lambda: out.update(rule=inner.fit(sample, rng)))
        worker.start()
        worker.join(20)
        if worker.is_alive():
            raise RuntimeError("the adapter's fit on the procedure's thread never ended")
        return out["rule"]


def test_a_fit_waiting_for_its_own_thread_that_seeds_the_global_states_does_not_hang():
    """The study holds the global random states seeded for each fit; an adapter seeding them
    on a thread the fit started (and waits for) would wait for the fit for ever."""
    study = rx.Study(_lottery_like(), {"threaded": FitsAnAdapterOnAThread(),
                                       "ols": rx.OLS("y ~ x1 + x2")}, rx.Constant(), n=[20],
                     replications=2)
    ds = study.run(progress=False).dataset
    assert int(ds["failed"].sum()) == 0
    np.testing.assert_allclose(ds["loss"].sel(procedure="threaded").values,
                               ds["loss"].sel(procedure="ols").values, rtol=1e-10)


def test_the_sensitivity_summary_of_model_restrictiveness_says_one_fit_per_truth_too():
    """The study summary said 'Draws per truth: 1' for fit_on="evaluation" with draws=3, and
    the sensitivity panels of the same results 'Draws per truth K: 3'."""
    F = rx.EligibleSet(rx.Box(x=(0, 1)), rx.Increasing("x"), rx.Between(0, 1))

    def header(fit_on):
        res = rx.Study(rx.MonotoneGP(F, n_eval=20), {"linear": rx.OLS("y ~ x")}, rx.Constant(),
                       n=[5], replications=3, draws=3, fit_on=fit_on).run(progress=False)
        return dict(res.sensitivity_summary(["linear"]).tables[0].data)["Draws per truth K:"]

    assert [header("evaluation"), header("training")] == ["1", "3"]
