"""Formulas honoured everywhere: patsy designs (transforms, splines, categorical terms,
interactions) with their training state at prediction, variables read by patsy's parser,
formulas a procedure cannot honour refused, and procedures that accept DataFrames."""

from __future__ import annotations

import re

import numpy as np
import pandas as pd
import patsy
import pytest
import statsmodels.formula.api as smf
from sklearn.linear_model import LinearRegression

import restrictiveness as rx
from restrictiveness.demand.learners import GridGP
from restrictiveness.lottery.estimation import LotteryNLSResults
from restrictiveness.shared.exceptions import ConfigurationError, DataError, FormulaError
from restrictiveness.shared.formula import parse_formula


def _frame(seed=0, n=60):
    rng = np.random.default_rng(seed)
    df = pd.DataFrame({"x1": rng.uniform(0.1, 3, n), "x2": rng.uniform(0, 1, n),
                       "g": rng.choice(["a", "b", "c"], n)})
    df["y"] = np.log(df["x1"]) + df["x2"] ** 2 + (df["g"] == "b") + 0.1 * rng.standard_normal(n)
    return df


def test_variables_come_from_patsys_parser():
    f = parse_formula("y ~ bs(x, df=3) + np.log(x1):C(g, Treatment('a')) + center(w) + "
                      "I(v ** 2) + Q('odd name')")
    assert f.response == "y"
    assert f.covariates == ("x", "x1", "g", "w", "v", "odd name")
    assert not f.plain and parse_formula("y ~ a + b").plain
    assert parse_formula("y ~ 1").intercept_only
    with pytest.raises(FormulaError, match="single column name"):
        parse_formula("np.log(y) ~ x")
    # formulas see numpy and patsy's functions only, not the package's module globals
    with pytest.raises(FormulaError, match=r"\['pd'\]"):
        parse_formula("y ~ pd.x").design(pd.DataFrame({"y": [1.0], "x": [1.0]}))


def test_gp_regression_honours_a_transform():
    rng = np.random.default_rng(1)
    X = np.column_stack([rng.uniform(0.1, 3, 40), rng.uniform(0, 1, 40)])
    s = rx.Sample(X, np.sin(X[:, 0]) + X[:, 1], ("x1", "x2"))
    Xq = np.column_stack([rng.uniform(0.1, 3, 25), rng.uniform(0, 1, 25)])
    logged = rx.GPRegression("y ~ np.log(x1) + x2").fit(s).predict(Xq)
    plain = rx.GPRegression("y ~ x1 + x2").fit(s).predict(Xq)
    assert np.abs(logged - plain).max() > 1e-3
    # exactly a GP on the transformed column
    T = np.column_stack([np.log(X[:, 0]), X[:, 1]])
    direct = rx.GPRegression().fit(rx.Sample(T, s.y, ("l1", "x2")))
    np.testing.assert_allclose(logged, direct.predict(np.column_stack([np.log(Xq[:, 0]),
                                                                        Xq[:, 1]])),
                               rtol=1e-12, atol=1e-12)
    # plain formulas are the selected columns, in formula order
    swapped = rx.GPRegression("y ~ x2 + x1").fit(s).predict(Xq)
    ref = rx.GPRegression().fit(rx.Sample(X[:, ::-1], s.y, ("x2", "x1"))).predict(Xq[:, ::-1])
    np.testing.assert_allclose(swapped, ref, rtol=1e-12)


def test_ols_with_a_spline_keeps_its_knots_at_prediction():
    df = _frame(2)
    new = _frame(3, 15)
    s = rx.Sample(df[["x1", "x2"]].to_numpy(), df["y"].to_numpy(), ("x1", "x2"))
    rule = rx.OLS("y ~ bs(x1, df=3) + x2").fit(s, np.random.default_rng(0))
    ref = smf.ols("y ~ bs(x1, df=3) + x2", df).fit()
    np.testing.assert_allclose(rule.predict(new[["x1", "x2"]].to_numpy()), ref.predict(new),
                               rtol=1e-10)
    # and the same through a study's validation
    F = rx.EligibleSet(rx.Box(x1=(0.1, 3), x2=(0, 1)), rx.Increasing("x1"))
    rx.OLS("y ~ bs(x1, df=3) + x2").validate(F.columns, "y")


def test_categorical_terms_and_interactions_in_learners_on_dataframes():
    df, new = _frame(4), _frame(5, 10)
    formula = "y ~ C(g) + x1:x2 + np.log(x1)"
    sk = rx.SklearnRegressor(LinearRegression(), formula).fit(df).predict(new)
    ols = smf.ols(formula, df).fit().predict(new)
    np.testing.assert_allclose(sk, ols, rtol=1e-8)     # full dummy coding, no intercept column
    gp = rx.GPRegression(formula, noise=1e-6).fit(df)
    assert np.abs(gp.predict(df) - df["y"]).max() < 1e-3
    with pytest.raises(DataError, match="predict on a DataFrame"):
        gp.predict(new[["x1", "x2"]].to_numpy())


def test_ols_on_the_intercept_alone_fits_a_sample_as_the_constant_does():
    """OLS('y ~ 1') (least squares over constants, the SPEC's baseline) failed every fit on a
    study's sample, patsy unable to count the rows of a mapping it reads no column from: r̂
    was 1 only because every fit fell back to the baseline, and as a baseline it stopped the
    study. Its prediction is the sample mean, so its r̂ against Constant() is exactly 1 with
    no failure, and as the baseline it gives Constant()'s r̂."""
    sample = rx.Sample(np.array([[0.0], [1.0], [3.0]]), np.array([1.0, 2.0, 6.0]), ("x",))
    rule = rx.OLS("y ~ 1").fit(sample, np.random.default_rng(0))
    np.testing.assert_allclose(rule.predict(np.array([[5.0], [-1.0]])), [3.0, 3.0], rtol=1e-14)
    F = rx.EligibleSet(rx.Box(x=(0, 1)), rx.Increasing("x"), rx.Between(0, 1))

    def study(baseline):
        return rx.Study(rx.MonotoneGP(F, n_eval=20), {"mean": rx.OLS("y ~ 1"),
                                                      "linear": rx.OLS("y ~ x")},
                        baseline, n=[5], replications=3)

    res = study(rx.Constant()).run(progress=False)
    assert int(res.dataset["failed"].sum()) == 0
    np.testing.assert_allclose(res.restrictiveness.sel(procedure="mean"), 1.0, rtol=1e-12)
    as_baseline = study(rx.OLS("y ~ 1")).run(progress=False)
    np.testing.assert_allclose(as_baseline.restrictiveness, res.restrictiveness, rtol=1e-12)


def test_formulas_a_procedure_cannot_honour_are_refused():
    with pytest.raises(FormulaError, match="can only be 'y ~ 1'"):
        rx.Constant("y ~ x1")
    cols = ("x1", "x2")
    with pytest.raises(FormulaError, match="no covariates"):
        rx.GPRegression("y ~ 1").validate(cols, "y")
    with pytest.raises(FormulaError, match="no covariates"):
        rx.SklearnRegressor(LinearRegression(), "y ~ 1").validate(cols, "y")
    with pytest.raises(FormulaError, match="bare column names"):
        rx.lottery.CPT(formula="ce ~ np.log(z_hi) + z_lo + p")
    with pytest.raises(FormulaError, match="bare column names"):
        rx.lottery.ExpectedValue("ce ~ z_hi + z_lo + p + z_hi:p")
    with pytest.raises(FormulaError, match=r"\['z'\]"):
        rx.GPRegression("y ~ z").validate(cols, "y")
    with pytest.raises(FormulaError, match="a formula naming the response"):
        rx.GPRegression().fit(_frame())


@pytest.mark.parametrize("make", [
    lambda f: rx.SklearnRegressor(LinearRegression(), f), lambda f: rx.AutoML(formula=f),
    lambda f: rx.GPRegression(f), lambda f: rx.OLS(f)], ids=["sklearn", "automl", "gp", "ols"])
@pytest.mark.parametrize("formula", ["y ~ x1 +", "y ~ ~ x1", ["y ~ x1"]])
def test_a_formula_that_cannot_be_read_is_refused_when_the_procedure_is_made(make, formula):
    """SklearnRegressor and AutoML kept a formula they could not parse (a typo, a list) until
    their first fit, as OLS and GPRegression do not."""
    with pytest.raises(FormulaError, match="formula"):
        make(formula)


def test_a_function_patsy_does_not_know_is_named_as_a_function_not_a_column():
    """'y ~ log(x1)' (R's spelling) was refused at the fit as naming a column 'log' the data
    do not have, which sent the user looking for a column."""
    with pytest.raises(FormulaError, match=r"calls log\(\), which is not a formula function; "
                                           r"use numpy's \(np.log\)"):
        rx.OLS("y ~ x2 + log(x1)")
    with pytest.raises(FormulaError, match=r"calls exp\(\).*\(np.exp\)"):
        rx.GPRegression("y ~ exp(x1):C(g)")
    with pytest.raises(FormulaError, match=r"calls f\(\), which is not a formula function; "
                                           r"use numpy's or patsy's"):
        rx.parse_formula("y ~ f(x1)")
    # patsy's and numpy's functions, and calls of what they return, are formulas as before
    assert rx.parse_formula('y ~ np.log(x1) + bs(x2, df=3) + C(g, Treatment("b")) + '
                            "I(x1 ** 2) + center(x2)").covariates == ("x1", "x2", "g")


def test_gp_regression_refuses_a_constraint_it_cannot_impose_on_its_predictions():
    """GPRegression(constraints=[Increasing('x')]) predicted exactly as without it (sin(8x),
    decreasing on half the interval): its constraints act by their repair, which monotonicity
    and Simplex do not define. Between still clips, and a user's constraint with a repair is
    applied."""
    from dataclasses import dataclass

    x = np.linspace(0, 1, 8)
    s = rx.Sample(x[:, None], np.sin(8 * x), ("x",))
    for c in (rx.Increasing("x"), rx.Decreasing("x"), rx.Simplex()):
        with pytest.raises(ConfigurationError, match=f"cannot impose {type(c).__name__}"):
            rx.GPRegression(constraints=[c])

    @dataclass(frozen=True)
    class Floor(rx.Constraint):
        level: float

        def check(self, pred, X, columns):
            return pred >= self.level

        def repair(self, pred, X, columns):
            return np.maximum(pred, self.level)

        def describe(self):
            return f"f >= {self.level}"

    Xq = np.linspace(0, 1, 9)[:, None]
    free = rx.GPRegression().fit(s).predict(Xq)
    floored = rx.GPRegression(constraints=[Floor(0.0)]).fit(s).predict(Xq)
    clipped = rx.GPRegression(constraints=[rx.Between(0, 0.5)]).fit(s).predict(Xq)
    np.testing.assert_array_equal(floored, np.maximum(free, 0.0))
    np.testing.assert_array_equal(clipped, np.clip(free, 0.0, 0.5))
    assert free.min() < 0 and free.max() > 0.5


@pytest.mark.parametrize("make, message", [
    (lambda: rx.GPRegression(noise=float("nan")), "noise must be a nonnegative variance, got nan"),
    (lambda: rx.GPRegression(noise=-1.0), "noise must be a nonnegative"),
    (lambda: rx.GPRegression(mean="median"), "mean must be 'zero' or 'sample', got 'median'"),
    (lambda: rx.AutoML(time_budget=0), "time_budget must be positive seconds"),
    (lambda: rx.AutoML(max_iter=0), "max_iter must be an integer of at least 1"),
    (lambda: rx.AutoML(max_iter=2.5), r"max_iter must be an integer .*got 2\.5"),
    (lambda: GridGP().set_params(nugget=1e-3), "GridGP has no parameter 'nugget'"),
    # these were bare TypeErrors, silent truncations or strings split into characters
    (lambda: rx.GPRegression(noise="0.1"), "noise must be a nonnegative variance, got '0.1'"),
    (lambda: rx.GPRegression(kernel="m32"), "kernel must be a Kernel"),
    (lambda: rx.GPRegression(constraints="between"),
     "constraints must be a sequence of Constraint objects.*got 'between'"),
    (lambda: rx.GPRegression(constraints=rx.Between(0, 1)),
     r"constraints must be a sequence .*got Between\(lower=0, upper=1\)"),
    (lambda: rx.AutoML(max_iter=None), "max_iter must be an integer of at least 1 .*got None"),
    (lambda: rx.AutoML(time_budget="10"), "time_budget must be positive seconds or None, "
                                          "got '10'"),
    (lambda: rx.AutoML(n_jobs=0), "n_jobs must be a positive number of threads, or -1"),
    (lambda: rx.AutoML(n_jobs=1.5), "n_jobs must be a whole number >= -1, got 1.5"),
    (lambda: rx.AutoML(estimator_list="lgbm"),
     r"estimator_list must be a non-empty list of FLAML learner names .*got 'lgbm'"),
    (lambda: rx.SklearnRegressor(LinearRegression),
     r"must be an instance, e.g. LinearRegression\(\), not the class"),
    (lambda: rx.SklearnRegressor("lr"), r"fit\(X, y\) and predict\(X\) methods, got 'lr'"),
    (lambda: rx.FunctionRule(3), "FunctionRule takes a function"),
])
def test_settings_a_procedure_cannot_honour_are_refused(make, message):
    with pytest.raises(ConfigurationError, match=message):
        make()


def test_procedures_accept_dataframes():
    df = _frame(6)
    res = rx.OLS("y ~ np.log(x1) + C(g)").fit(df, np.random.default_rng(0))
    ref = smf.ols("y ~ np.log(x1) + C(g)", df).fit()
    np.testing.assert_allclose(res.params, ref.params, rtol=1e-12)
    df["cl"] = np.arange(len(df)) % 7
    clustered = rx.OLS("y ~ x1 + x2").fit(df, cov_type="cluster", groups="cl")
    ref = smf.ols("y ~ x1 + x2", df).fit(cov_type="cluster", cov_kwds={"groups": df["cl"]},
                                         use_t=True)
    np.testing.assert_allclose(clustered.bse, ref.bse, rtol=1e-12)
    np.testing.assert_allclose(clustered.pvalues, ref.pvalues, rtol=1e-10)
    with pytest.raises(DataError, match="missing values"):
        rx.OLS("y ~ x1").fit(df.assign(x1=np.nan))
    assert rx.Constant("y ~ 1").fit(df).predict(df)[0] == pytest.approx(df["y"].mean())
    # lottery models: estimation results on a DataFrame, EV a rule
    rng = np.random.default_rng(7)
    lot = pd.DataFrame({"z_hi": rng.uniform(0.5, 1, 50), "z_lo": rng.uniform(0, 0.3, 50),
                        "p": rng.uniform(0.1, 0.9, 50)})
    lot["ce"] = lot["z_lo"] + (lot["z_hi"] - lot["z_lo"]) * lot["p"] ** 1.3
    fit = rx.lottery.CPT(free=("gamma", "delta")).fit(lot, cov_type="HC1")
    assert isinstance(fit, LotteryNLSResults) and fit.cov_type == "HC1"
    np.testing.assert_allclose(fit.predict(lot), fit.fittedvalues)
    ev = rx.lottery.ExpectedValue().fit(lot)
    np.testing.assert_allclose(ev.predict(lot), lot["p"] * lot["z_hi"]
                               + (1 - lot["p"]) * lot["z_lo"])


def test_predict_refuses_covariates_of_another_shape_or_with_nan():
    x = np.linspace(0, 1, 20)
    sample = rx.Sample(np.c_[x, x ** 2], 1 + x, ("x1", "x2"))
    for proc in (rx.OLS("y ~ x1"), rx.GPRegression(), rx.SklearnRegressor(LinearRegression())):
        rule = proc.fit(sample, np.random.default_rng(0))
        # five columns for two gave numbers (OLS) or numpy/sklearn errors
        with pytest.raises(DataError, match=r"shape \(m, 2\), the columns \['x1', 'x2'\]; "
                                            r"got shape \(2, 5\)"):
            rule.predict(np.ones((2, 5)))
        with pytest.raises(DataError, match=r"got shape \(2,\)"):
            rule.predict(np.ones(2))
    # patsy's own error for NaN at prediction
    with pytest.raises(DataError, match="'y ~ np.exp\\(x1\\)': the data contain missing values"):
        rx.OLS("y ~ np.exp(x1)").fit(sample).predict(np.array([[np.nan, 0.0]]))


def test_samples_refuse_nan_labels_and_ambiguous_names():
    X = np.ones((3, 1))
    with pytest.raises(DataError, match="labels y contain NaN or infinite values"):
        rx.Sample(X, np.array([1.0, np.nan, 2.0]), ("x",))  # OLS fitted NaN coefficients
    with pytest.raises(DataError, match="columns must be distinct names, got 'x'"):
        rx.Sample(X, np.ones(3), "x")
    with pytest.raises(DataError, match=r"distinct names, got \('x', 'x'\)"):
        rx.Sample(np.ones((3, 2)), np.ones(3), ("x", "x"))
    with pytest.raises(DataError, match="response must be a name other than the columns, "
                                        "got 'x'"):
        rx.Sample(X, np.ones(3), ("x",), response="x")


def test_gp_regression_merges_repeated_locations_of_draws_with_replacement():
    """Draws with replacement from a finite support repeat locations; the noise-free kernel
    matrix was then singular and every fit failed (r̂ = 1, the baseline's). With the repeats
    merged, the GP interpolates the support it has seen: here all of it, so r̂ = 0."""
    X = np.array([[0.0], [0.5], [1.0], [0.5], [0.0]])
    y = np.array([0.1, 0.4, 0.9, 0.4, 0.1])
    rule = rx.GPRegression().fit(rx.Sample(X, y, ("x",)))
    np.testing.assert_allclose(rule.predict(X[:3]), y[:3], atol=1e-10)
    # the same as a fit on the distinct locations, whatever their order
    once = rx.GPRegression().fit(rx.Sample(X[:3], y[:3], ("x",)))
    grid = np.linspace(0, 1, 11)[:, None]
    np.testing.assert_allclose(rule.predict(grid), once.predict(grid), rtol=1e-12)
    support = rx.FiniteSet(np.linspace(0, 1, 5)[:, None], ("x",))
    prior = rx.MonotoneGP(rx.EligibleSet(support, rx.Increasing("x"), rx.Between(0, 1)))
    res = rx.Study(prior, {"GP": rx.GPRegression()}, rx.Constant(), n=[20],
                   replications=3).run(progress=False)
    assert int(res.dataset["failed"].sum()) == 0
    assert float(res.restrictiveness.max()) < 1e-12


def test_data_with_a_repeated_column_name_are_refused():
    """pandas returns both columns of a repeated name: OLS fitted both as one 2-column term,
    NLS silently took the first."""
    df = _frame()
    twice = pd.concat([df, df[["x1"]].iloc[::-1].reset_index(drop=True)], axis=1)
    for fit in (lambda: rx.OLS("y ~ x1 + x2").fit(twice),
                lambda: rx.GPRegression("y ~ x1").fit(twice),
                lambda: rx.NLS("y ~ a * x1", bounds={"a": (0, 2)}).fit(twice)):
        with pytest.raises(DataError, match=r"more than one column named \['x1'\]"):
            fit()
    # a repeated column the formula does not use is harmless, except to statsmodels
    rule = rx.GPRegression("y ~ x2").fit(twice)
    np.testing.assert_allclose(rule.predict(df.iloc[:3]), df["y"].iloc[:3], atol=1e-4)
    with pytest.raises(DataError, match=r"OLS estimation: .*more than one column named \['x1'\]"):
        rx.OLS("y ~ x2").fit(twice)  # was an AttributeError inside statsmodels


def test_predicting_on_a_dataframe_reads_only_the_columns_the_rule_needs():
    """A DataFrame with a text column beside the covariates crashed the plain-formula GP (and
    its constraint repair) with numpy's ValueError; strings that look like numbers in a
    covariate were converted silently."""
    rng = np.random.default_rng(4)
    X = rng.uniform(0, 1, (15, 3))
    sample = rx.Sample(X, X[:, 0] + X[:, 1] ** 2, ("a", "b", "g"))
    new = pd.DataFrame({"label": ["p", "q"], "b": [0.2, 0.7], "a": [0.3, 0.9]})
    expected = rx.GPRegression("y ~ a + b").fit(sample).predict(
        np.column_stack([new["a"], new["b"], [5.0, 5.0]]))  # g is not used
    for proc in (rx.GPRegression("y ~ a + b"),
                 rx.GPRegression("y ~ a + b", constraints=[rx.Between(-10, 10)]),
                 rx.SklearnRegressor(LinearRegression(), "y ~ a + b")):
        got = proc.fit(sample).predict(new)
        if isinstance(proc, rx.GPRegression):
            np.testing.assert_allclose(got, expected, rtol=1e-12)
        else:
            beta = np.linalg.lstsq(np.column_stack([np.ones(15), X[:, :2]]), sample.y,
                                   rcond=None)[0]
            np.testing.assert_allclose(got, beta[0] + new[["a", "b"]].to_numpy() @ beta[1:],
                                       rtol=1e-10)
    with pytest.raises(DataError, match="column 'a' is not numeric"):
        rx.GPRegression("y ~ a + b").fit(sample).predict(new.assign(a=["0.3", "0.9"]))
    with pytest.raises(DataError, match=r"lacks the column\(s\) \['g'\]"):
        rx.GPRegression().fit(sample).predict(new)


def test_a_learner_formula_without_covariates_is_refused_on_a_sample_too():
    """GPRegression('y ~ 1') was refused on a DataFrame but fitted a constant on a Sample."""
    sample = rx.Sample(np.linspace(0, 1, 6)[:, None], np.arange(6.0), ("x",))
    for proc in (rx.GPRegression("y ~ 1"), rx.SklearnRegressor(LinearRegression(), "y ~ 1")):
        with pytest.raises(FormulaError, match="leaves no covariates"):
            proc.fit(sample)
        with pytest.raises(FormulaError, match="leaves no covariates"):
            proc.fit(pd.DataFrame({"x": sample.X[:, 0], "y": sample.y}))


def test_constant_refuses_what_is_neither_a_sample_nor_a_dataframe():
    """Constant().fit(array) was an AttributeError."""
    with pytest.raises(DataError, match="Constant.fit takes a Sample or a pandas DataFrame"):
        rx.Constant().fit(np.ones((3, 1)))
    assert rx.Constant().fit(rx.Sample(np.zeros((3, 1)), np.array([1.0, 2, 6]), ("x",))
                             ).predict(np.zeros((1, 1))).tolist() == [3.0]


def test_nan_from_a_transform_is_not_called_missing_data():
    """np.log of a negative covariate was reported as 'the data contain missing values', which
    the data did not have."""
    df = pd.DataFrame({"x": [-1.0, 0.5, 2.0, 3.0], "y": [1.0, 2.0, 3.0, 5.0]})
    for fit in (lambda: rx.OLS("y ~ np.log(x)").fit(df),
                lambda: rx.GPRegression("y ~ np.log(x)").fit(df)):
        with pytest.raises(DataError, match="a transform gives NaN"):
            fit()
    rule = rx.GPRegression("y ~ np.log(x)").fit(df.iloc[1:])
    with pytest.raises(DataError, match="a transform gives NaN"):
        rule.predict(pd.DataFrame({"x": [-2.0]}))
    with pytest.raises(DataError, match="the data contain missing values"):
        rule.predict(pd.DataFrame({"x": [np.nan]}))
    np.testing.assert_allclose(rule.predict(df.iloc[1:]), df.y.iloc[1:], rtol=1e-9)


def test_a_fit_to_a_sample_refuses_a_formula_naming_another_response():
    # "z ~ x" fitted to a sample whose labels are y fitted y without a word: a study refuses
    # the formula up front (validate), a direct fit must too, whatever the procedure
    X = np.array([[0.0, 1.0], [1.0, 2.0], [2.0, 4.0], [3.0, 1.0]])
    s = rx.Sample(X, 1.0 + 2.0 * X[:, 0], ("x", "w"))
    lottery = np.array([[1.0, 0.0, 0.5], [0.5, 0.1, 0.2], [0.8, 0.2, 0.9], [0.3, 0.3, 0.4]])
    ev = lottery[:, 1] + (lottery[:, 0] - lottery[:, 1]) * lottery[:, 2]
    lotteries = rx.Sample(lottery, ev, ("z_hi", "z_lo", "p"), "y")
    markets = rx.demand.market_sample(pd.DataFrame({
        "market_ids": [1, 1, 2, 2, 3, 3], "product_ids": [1, 2] * 3,
        "shares": [0.3, 0.2, 0.25, 0.15, 0.2, 0.3], "prices": [1.0, 1.5, 1.1, 1.4, 1.2, 0.9],
        "sugar": [2.0, 4.0, 2.0, 4.0, 3.0, 5.0], "mushy": [0, 1, 0, 1, 1, 0]}))
    cases = [
        (rx.OLS("z ~ x"), s, "formula 'z ~ x' names the response 'z'"),
        (rx.OLS("w ~ x"), s, "formula 'w ~ x' names the response 'w'"),  # a covariate
        (rx.Constant("z ~ 1"), s, "formula 'z ~ 1' names the response 'z'"),
        (rx.GPRegression("z ~ x"), s, "formula 'z ~ x' names the response 'z'"),
        (rx.SklearnRegressor(LinearRegression(), "z ~ x"), s, "names the response 'z'"),
        (rx.NLS("z ~ a * x", bounds={"a": (0, 5)}), s, "NLS formula 'z ~ a * x' names the "
                                                          "response 'z'"),
        (rx.NLS(lambda d, a: a * d["x"], response="z", bounds={"a": (0, 5)}), s,
         "NLS names the response 'z'"),
        (rx.lottery.CPT(free=("alpha",), formula="ce ~ z_hi + z_lo + p"), lotteries,
         "names the response 'ce'"),
        (rx.demand.MNL("y ~ prices"), markets, "names the response 'y'"),
    ]
    for procedure, sample, message in cases:
        with pytest.raises(FormulaError, match=re.escape(message) + ".*sample's response is "
                                               f"'{sample.response}'"):
            procedure.fit(sample, np.random.default_rng(0))
    # the response named, or none (a one-sided formula), fits the sample's labels
    for formula in ("y ~ x", "~ x"):
        np.testing.assert_allclose(rx.OLS(formula).fit(s).info["params"], [1.0, 2.0])
    fit = rx.lottery.CPT(free=("alpha",), formula="y ~ z_hi + z_lo + p").fit(lotteries)
    assert fit.params["alpha"] == pytest.approx(1.0, abs=1e-6)
    assert list(rx.demand.MNL("shares ~ prices").fit(markets).info["params"]) == [
        "Intercept", "prices"]


def test_text_at_prediction_in_a_column_that_was_numbers_is_named():
    """A formula fitted on numbers and asked to predict at text failed inside patsy with
    "AttributeError: 'DataFrame' object has no attribute 'dtype'"."""
    df = pd.DataFrame({"y": [3.0, 5.0, 7.0, 9.0], "x": [1.0, 2.0, 3.0, 4.0]})
    rules = {"sklearn": rx.SklearnRegressor(LinearRegression(), "y ~ np.log(x) + x").fit(df),
             "plain": rx.SklearnRegressor(LinearRegression(), "y ~ x").fit(df),
             "gp": rx.GPRegression("y ~ x + I(x ** 2)").fit(df)}
    for rule in rules.values():
        for bad in (pd.Series(["6"]), pd.Series([6.0], dtype=object)):
            with pytest.raises(DataError, match=r"at new data: column 'x' is not numeric"):
                rule.predict(pd.DataFrame({"x": bad}))
    # numbers still predict: y = 1 + 2x exactly (log x gets weight 0), and the GP interpolates
    assert rules["sklearn"].predict(pd.DataFrame({"x": [6.0]}))[0] == pytest.approx(13.0)
    np.testing.assert_allclose(rules["gp"].predict(df), df["y"], atol=1e-6)


@pytest.mark.parametrize("formula, message", [
    ("y ~ np.lg(x1)", "numpy has no np.lg"),
    ("y ~ np.linalg.nrm(x1) + x2", "numpy has no np.linalg.nrm"),
    ("y ~ bs(x1, dff=3)", r"bs\(\) cannot take these arguments \(got an unexpected keyword "
                          "argument 'dff'\\)"),
    ("y ~ center(x1, 2)", r"center\(\) cannot take these arguments \(too many positional"),
    ("y ~ C(x1, Treatment(ref=1))", r"Treatment\(\) cannot take these arguments"),
])
def test_a_call_that_cannot_succeed_is_refused_before_a_study_runs(formula, message):
    """patsy finds a misspelled numpy function or a wrong keyword only when it evaluates the
    formula: the study validated it, failed every fit, and reported r̂ = 1.000 (the
    baseline's) after all its replications."""
    F = rx.EligibleSet(rx.Box(x1=(0, 1), x2=(0, 1)), rx.Increasing("x1", "x2"),
                       rx.Between(0, 1))
    with pytest.raises(rx.FormulaError, match=f"formula {re.escape(repr(formula))}: {message}"):
        rx.Study(rx.MonotoneGP(F, n_eval=30), {"p": rx.OLS(formula)}, rx.Constant(), n=[10],
                 replications=2)


def test_calls_are_checked_when_the_procedure_is_built_and_good_ones_honoured():
    """The typo is refused by the constructor (it was accepted, and failed at the fit); what
    the check lets through is what patsy evaluates: the same design as by hand."""
    with pytest.raises(rx.FormulaError, match="standardize"):
        rx.OLS("y ~ bs(x1, 3) + standardize(x2, ddf=1) + np.power(x1, 2)")
    df = pd.DataFrame({"x1": np.linspace(0.1, 2, 12), "x2": np.linspace(1, 0, 12) ** 2})
    df["y"] = np.sin(df.x1) + df.x2
    fitted = rx.OLS("y ~ bs(x1, 3) + standardize(x2, ddof=1) + np.power(x1, 2)").fit(df)
    x2 = (df.x2 - df.x2.mean()) / df.x2.std(ddof=1)
    spline = patsy.dmatrix("bs(x1, df=3) - 1", df)
    A = np.column_stack([np.ones(12), spline, x2, df.x1 ** 2])
    beta = np.linalg.lstsq(A, df.y, rcond=None)[0]
    np.testing.assert_allclose(fitted.predict(df), A @ beta, rtol=1e-10, atol=1e-12)
