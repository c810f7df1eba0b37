"""The failure protocol (SPEC §6) on hand-made predictions: which rows get the baseline's
prediction, how many are counted, and when a fit counts as failed."""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np
import pytest

import restrictiveness as rx
from restrictiveness.engine.failures import GuardedRule, repair
from restrictiveness.engine.protocol import FunctionRule

X = np.array([[0.1], [0.4], [0.6], [0.9]])
COLUMNS = ("x",)
BASE = FunctionRule(lambda X: np.full(len(X), 0.5))


@dataclass(frozen=True)
class AtMost(rx.Constraint):
    """A check-only restriction (no repair): predictions must not exceed the covariate."""

    column: str

    def check(self, pred, X, columns):
        return pred <= X[:, list(columns).index(self.column)]


def test_rows_failing_a_check_only_constraint_get_the_baselines_prediction():
    rule = FunctionRule(lambda X: np.array([0.0, 0.5, 0.5, 1.0]))     # rows 1 and 3 exceed x
    guard = GuardedRule(rule, BASE, [AtMost("x")], COLUMNS)
    np.testing.assert_array_equal(guard.predict(X), [0.0, 0.5, 0.5, 0.5])
    np.testing.assert_array_equal(guard.last_replaced, [False, True, False, True])
    assert (guard.replaced, guard.failed) == (2, False)
    assert guard.error == "2 invalid prediction row(s)"


def test_a_row_with_any_non_finite_entry_is_replaced_whole():
    """Share predictions (markets × products): one NaN or inf in a market replaces the market."""
    shares = np.array([[0.1, 0.2], [np.nan, 0.3], [0.4, np.inf], [0.3, 0.3]])
    base = FunctionRule(lambda X: np.full((len(X), 2), 0.25))
    guard = GuardedRule(FunctionRule(lambda X: shares), base, [], COLUMNS)
    np.testing.assert_array_equal(guard.predict(X),
                                  [[0.1, 0.2], [0.25, 0.25], [0.25, 0.25], [0.3, 0.3]])
    assert guard.replaced == 2
    pred, ok = repair(shares, X, [], COLUMNS)
    np.testing.assert_array_equal(ok, [True, False, False, True])


def test_repair_clips_before_rows_are_judged():
    """Between repairs by clipping: predictions outside [0, 1] are clipped, not replaced."""
    rule = FunctionRule(lambda X: np.array([-0.5, 0.2, 1.5, np.nan]))
    guard = GuardedRule(rule, BASE, [rx.Between(0, 1)], COLUMNS)
    np.testing.assert_array_equal(guard.predict(X), [0.0, 0.2, 1.0, 0.5])
    assert guard.replaced == 1


def test_an_infinite_prediction_gets_the_baselines_not_a_clipped_bound():
    """SPEC §6: a non-finite prediction gets the baseline's prediction; clipping +inf to the
    upper bound (and -inf to the lower) would score it as an eligible prediction."""
    rule = FunctionRule(lambda X: np.array([np.inf, 0.2, -np.inf, 0.7]))
    guard = GuardedRule(rule, BASE, [rx.Between(0, 1)], COLUMNS)
    np.testing.assert_array_equal(guard.predict(X), [0.5, 0.2, 0.5, 0.7])
    np.testing.assert_array_equal(guard.last_replaced, [True, False, True, False])
    assert guard.replaced == 2
    # a row of several predictions with one infinite entry is replaced whole, not clipped
    rows = np.array([[0.2, np.inf], [0.2, 0.3], [-np.inf, 0.4], [0.1, 0.1]])
    base = FunctionRule(lambda X: np.full((len(X), 2), 0.5))
    guard = GuardedRule(FunctionRule(lambda X: rows), base, [rx.Between(0, 1)], COLUMNS)
    np.testing.assert_array_equal(guard.predict(X),
                                  [[0.5, 0.5], [0.2, 0.3], [0.5, 0.5], [0.1, 0.1]])


@dataclass(frozen=True)
class Normalised(rx.Constraint):
    """Rows rescaled to sum to 1 by their repair (0/0 for a row of zeros); checks nothing."""

    def repair(self, pred, X, columns):
        with np.errstate(invalid="ignore"):
            return pred / pred.sum(axis=1, keepdims=True)


def test_a_row_the_repair_makes_non_finite_gets_the_baselines():
    shares = np.array([[1.0, 3.0], [0.0, 0.0], [2.0, 2.0], [1.0, 1.0]])
    base = FunctionRule(lambda X: np.full((len(X), 2), 0.5))
    guard = GuardedRule(FunctionRule(lambda X: shares), base, [Normalised()], COLUMNS)
    np.testing.assert_array_equal(guard.predict(X),
                                  [[0.25, 0.75], [0.5, 0.5], [0.5, 0.5], [0.5, 0.5]])
    np.testing.assert_array_equal(guard.last_replaced, [False, True, False, False])


def test_replaced_rows_accumulate_over_prediction_calls():
    rule = FunctionRule(lambda X: np.where(X[:, 0] > 0.5, np.nan, X[:, 0]))
    guard = GuardedRule(rule, BASE, [], COLUMNS)
    guard.predict(X)
    guard.predict(X[:3])
    assert guard.replaced == 2 + 1 and not guard.failed


def test_replaced_rows_at_the_same_locations_count_once_the_most_replaced():
    """Every discrepancy asks for the predictions at the evaluation points: a failed fit's rows
    were counted once per discrepancy. Locations asked for again count once (the call that
    replaced the most rows, for a rule that changes its mind); other locations add theirs."""
    calls = iter([[np.nan, 0.2, 0.3, 0.4], [np.nan, np.nan, 0.3, np.nan],
                  [0.1, 0.2, 0.3, 0.4], [np.nan, 0.2, np.nan], [0.1, np.nan, 0.3, 0.4]])
    guard = GuardedRule(FunctionRule(lambda X: np.array(next(calls))), BASE, [], COLUMNS)
    for locations in [X, X.copy(), X, X[:3], X[::-1]]:
        guard.predict(locations)
    assert guard.replaced == 3 + 2 + 1
    failed = GuardedRule(None, BASE, [], COLUMNS, error="fit: boom")
    for locations in [X, X.copy(), X[:3], X[::-1]]:
        failed.predict(locations)
    assert failed.replaced == 4 + 3 + 4


def test_a_failed_fit_counts_its_rows_once_whatever_the_number_of_discrepancies():
    """40 evaluation points: a failed fit replaces 40 rows, a rule with every fourth prediction
    NaN 10, under one discrepancy or two (before: 80 and 20 with two)."""
    class Quarter(rx.Procedure):
        def __repr__(self) -> str:
            return "Quarter()"

        def fit(self, sample, rng):
            return FunctionRule(lambda X: np.where(np.arange(len(X)) % 4 == 0, np.nan,
                                                   X[:, :2].mean(axis=1)))

    one = rx.lottery.study({"fit": _Failing("fit"), "predict": _Failing("predict"),
                            "quarter": Quarter()}, n=[10], replications=2, seed=0, n_eval=40)
    two = rx.Study(one.evaluation, one.procedures, one.baseline, n=[10], replications=2, seed=0,
                   discrepancies=[one.discrepancies[0], rx.MSE("mse again")])
    for study in (one, two):
        with pytest.warns(rx.FailureWarning):
            res = study.run(progress=False)
        invalid = res.dataset["invalid"].sel(n=10)
        np.testing.assert_array_equal(invalid.values, [[40, 40], [40, 40], [10, 10]])
        assert "quarter 20 invalid prediction rows replaced" in res.failure_report()


def test_a_failed_fit_uses_the_baseline_everywhere_and_counts_every_row_of_every_call():
    guard = GuardedRule(None, BASE, [rx.Between(0, 1)], COLUMNS, error="fit: boom")
    np.testing.assert_array_equal(guard.predict(X), np.full(4, 0.5))
    guard.predict(X[:3])
    assert (guard.failed, guard.replaced, guard.error) == (True, 4 + 3, "fit: boom")
    np.testing.assert_array_equal(guard.last_replaced, [True, True, True])


def test_a_prediction_that_raises_fails_the_fit_from_then_on():
    def predict(X):
        raise ValueError("no")

    guard = GuardedRule(FunctionRule(predict), BASE, [], COLUMNS)
    np.testing.assert_array_equal(guard.predict(X), np.full(4, 0.5))
    assert (guard.failed, guard.replaced, guard.fitted) == (True, 4, None)
    assert guard.error == "predict: ValueError: no"


@pytest.mark.parametrize("returned", [X[:, 0] + 1j, X[:, 0] + 0j, np.array(["0.5"] * 4),
                                      np.array(["0.5"] * 4, dtype=object),
                                      np.array([0.5, 0.5, 0.5, 0.5 + 0j], dtype=object)],
                         ids=["complex", "complex-real", "text", "text-objects",
                              "complex-among-objects"])
def test_complex_or_text_predictions_fail_the_fit_instead_of_being_cast(returned):
    """A float cast would drop the imaginary part (with only NumPy's ComplexWarning) or read
    "0.5" as a number, and score the rule on numbers it never gave."""
    guard = GuardedRule(FunctionRule(lambda X: returned), BASE, [rx.Between(0, 1)], COLUMNS)
    np.testing.assert_array_equal(guard.predict(X), np.full(4, 0.5))
    assert (guard.failed, guard.replaced) == (True, 4)
    assert guard.error.startswith("predict: DataError: predict: predictions are ")


@pytest.mark.parametrize("returned", [X[:, 0] > 0.1, np.array([True, 0.2, 0.3, 0.4], dtype=object),
                                      [np.True_, np.False_, np.True_, np.True_]],
                         ids=["bool", "bool-among-objects", "numpy-bools"])
def test_boolean_predictions_fail_the_fit_instead_of_being_scored_as_0_and_1(returned):
    """A rule returning a comparison (``X[:, 0] > 0.1``) in place of values was scored on the
    numbers 1.0 and 0.0, which it never predicted (SPEC §6: a prediction that is not a real
    value fails, the baseline's is used and the failure counted)."""
    guard = GuardedRule(FunctionRule(lambda X: returned), BASE, [rx.Between(0, 1)], COLUMNS)
    np.testing.assert_array_equal(guard.predict(X), np.full(4, 0.5))
    assert (guard.failed, guard.replaced) == (True, 4)
    assert guard.error == ("predict: DataError: predict: predictions are booleans (True/False); "
                           "a prediction rule must return real numbers (.astype(float) if 0 "
                           "and 1 are meant)")
    numbers = GuardedRule(FunctionRule(lambda X: np.asarray(returned, dtype=float)), BASE,
                          [rx.Between(0, 1)], COLUMNS)
    np.testing.assert_array_equal(numbers.predict(X), np.asarray(returned, dtype=float))
    assert not numbers.failed


def test_an_adapter_and_a_baseline_with_complex_predictions_are_refused():
    from sklearn.dummy import DummyRegressor

    class ComplexMean(DummyRegressor):
        def predict(self, X):
            return super().predict(X) + 1j

    s = rx.Sample(X, np.array([0.2, 0.4, 0.6, 0.8]), COLUMNS)
    rule = rx.SklearnRegressor(ComplexMean()).fit(s, np.random.default_rng(0))
    with pytest.raises(rx.DataError, match="ComplexMean: predictions are complex"):
        rule.predict(X)
    guard = GuardedRule(None, FunctionRule(lambda X: X[:, 0] + 1j), [], COLUMNS)
    with pytest.raises(rx.DataError, match="the baseline: predictions are complex"):
        guard.predict(X)


class _Failing(rx.Procedure):
    """Fails in ``fit`` or in its rule's ``predict``, as ``where`` says."""

    def __init__(self, where: str) -> None:
        self.where = where

    def __repr__(self) -> str:
        return f"_Failing({self.where!r})"

    def fit(self, sample, rng):
        if self.where == "fit":
            raise ValueError("no fit")

        def predict(X):
            raise ValueError("no predict")
        return FunctionRule(predict)


def test_a_rule_failing_in_predict_counts_the_rows_a_failed_fit_counts():
    """Either way the baseline predicts every evaluation point once per discrepancy: 40 rows
    here, one discrepancy. A rule that raised in predict was counted twice (80): its first,
    failing call and the recomputation of every discrepancy with the baseline."""
    study = rx.lottery.study({"fit": _Failing("fit"), "predict": _Failing("predict")},
                             n=[10], replications=2, seed=0, n_eval=40)
    assert len(study.discrepancies) == 1
    with pytest.warns(rx.FailureWarning, match="predict failed in 2 of 2 fits"):
        res = study.run(progress=False)
    invalid = res.dataset["invalid"].sel(n=10)
    np.testing.assert_array_equal(invalid.sel(procedure="fit").values, [40, 40])
    np.testing.assert_array_equal(invalid.sel(procedure="predict").values, [40, 40])
    np.testing.assert_array_equal(res.dataset["failed"].sel(n=10).values, [[1, 1], [1, 1]])
    # every fit failed: the report says so and why, not also the 80 rows the baseline filled
    every = "failed in 2 of 2 fits (n=10: 2 of 2), every fit: its r̂ only repeats the baseline's"
    assert res.failure_report() == (
        "the baseline's predictions replaced failed fits or invalid predictions: "
        f"fit {every}; first error: fit: ValueError: no fit | "
        f"predict {every}; first error: predict: ValueError: no predict "
        "(see the summary notes and results.failures())")


def test_a_fit_that_returns_none_fails_saying_so():
    """A fit that forgot its ``return`` failed every fit with no first error: the summary said
    'failed in 3 of 3 fits' and nothing about why."""
    class Forgot(rx.Procedure):
        def fit(self, sample, rng):
            self.rule = rx.OLS("y ~ x").fit(sample, rng)   # no return

        def __repr__(self):
            return "Forgot()"

    F = rx.EligibleSet(rx.Box(x=(0, 1)), rx.Increasing("x"), rx.Between(0, 1))
    with pytest.warns(rx.FailureWarning, match="first error: fit: returned None"):
        res = rx.Study(rx.MonotoneGP(F, n_eval=20), {"forgot": Forgot()}, rx.Constant(), n=[5],
                       replications=2).run(progress=False)
    fails = res.failures().loc[("forgot", 5)]
    assert (fails["failed"], fails["fits"]) == (2, 2)
    assert fails["first_error"] == ("fit: returned None, not a fitted rule (does fit end with "
                                    "return?)")
    np.testing.assert_array_equal(res.dataset["loss"], res.dataset["baseline_loss"].expand_dims(
        procedure=["forgot"]))


@pytest.mark.parametrize("returned, shape", [(lambda X: 0.5, r"\(\)"),
                                             (lambda X: np.full(len(X) - 1, 0.5), r"\(3,\)")])
def test_a_baseline_without_one_prediction_per_row_is_refused_naming_its_shape(returned, shape):
    """A scalar was "IndexError: tuple index out of range" from the repair, a short vector a
    broadcasting error about three shapes; neither said the baseline returned the wrong
    number of predictions."""
    guard = GuardedRule(FunctionRule(returned), FunctionRule(returned), [rx.Between(0, 1)],
                        COLUMNS)
    with pytest.raises(ValueError, match=rf"the baseline's predictions have shape {shape}; it "
                                         r"must return one prediction per row of X \(4 rows\)"):
        guard.baseline_predict(X)


def test_ignoring_a_warning_category_makes_user_calls_on_other_threads_wait():
    """The package silenced a warning with catch_warnings while a fit ran on another thread
    (Study(concurrency=N)): a fit starting inside the block took its filters for the caller's,
    and the last fit to end restored them for good."""
    import threading
    import warnings

    from restrictiveness.engine.failures import ignoring, user_code

    entered, finish = threading.Event(), threading.Event()

    def fit():
        with user_code():
            entered.set()
            finish.wait(10)

    with warnings.catch_warnings():
        before = list(warnings.filters)
        fitting = threading.Thread(target=fit)
        with ignoring(DeprecationWarning):
            fitting.start()
            started_inside = entered.wait(0.5)
        finish.set()
        fitting.join(10)
        assert not started_inside
        assert warnings.filters == before


def test_a_pool_workers_termination_stops_the_run_whatever_handler_is_registered_by_then():
    """The worker's SIGTERM handler raises WorkerTerminated; a fit whose ``finally`` replaced
    the SIGTERM handler while it unwound (restoring its own, or SIG_DFL) left no registered
    handler in the traceback, and the termination had to be known by its type to stop the
    run instead of being recorded as the fit's failure."""
    import signal

    from restrictiveness.engine.failures import WorkerTerminated, reraise_fatal

    previous = signal.signal(signal.SIGTERM, signal.SIG_DFL)
    try:
        with pytest.raises(WorkerTerminated):
            reraise_fatal(WorkerTerminated(143))
        reraise_fatal(SystemExit(0))  # a fit's own sys.exit: recorded by the caller
    finally:
        signal.signal(signal.SIGTERM, previous)
