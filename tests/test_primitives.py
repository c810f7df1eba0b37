"""Constraints, domains, kernels and formula handling."""

from __future__ import annotations

import numpy as np
import pandas as pd
import pytest
from scipy import stats

import restrictiveness as rx
from restrictiveness.shared.formula import parse_formula

COLS = ("z_hi", "z_lo", "p")


def test_between_columns_repair_and_check():
    c = rx.Between("z_lo", "z_hi")
    X = np.array([[1.0, 0.2, 0.5], [0.5, 0.0, 0.5], [0.8, 0.1, 0.5]])
    pred = np.array([1.5, -0.1, np.nan])
    fixed = c.repair(pred, X, COLS)
    assert fixed[0] == 1.0 and fixed[1] == 0.0 and np.isnan(fixed[2])
    assert c.check(fixed, X, COLS).tolist() == [True, True, False]
    assert "z_lo <= f(x) <= z_hi" == c.describe()


def test_between_numbers_and_bad_arguments():
    assert rx.Between(0, 1).check(np.array([0.5, 2.0]), np.zeros((2, 1)), ("x",)).tolist() == [
        True, False]
    with pytest.raises(rx.ConstraintError, match="exceeds upper"):
        rx.Between(2, 1)
    with pytest.raises(rx.ConstraintError, match="'nope' is not a covariate"):
        rx.Between("nope", 1).repair(np.zeros(2), np.zeros((2, 1)), ("x",))


def test_monotone_constraints_describe_and_count_violations():
    inc = rx.Increasing("x")
    X = np.array([[0.0], [1.0], [2.0]])
    assert inc.violations(np.array([0.0, 1.0, 2.0]), X, ("x",)) == 0
    # f decreasing on a chain of 3 points violates all 3 ordered pairs
    assert inc.violations(np.array([2.0, 1.0, 0.0]), X, ("x",)) == 3
    assert rx.Decreasing("x").violations(np.array([2.0, 1.0, 0.0]), X, ("x",)) == 0
    assert inc.describe() == "f nondecreasing in x"
    with pytest.raises(rx.ConstraintError, match="repeated"):
        rx.Increasing("x", "x")


def test_simplex_checks_rows():
    s = rx.Simplex(outside=True)
    pred = np.array([[0.2, 0.3], [0.6, 0.5], [0.1, -0.1]])
    assert s.check(pred, None, ()).tolist() == [True, False, False]
    assert rx.Simplex(outside=False).check(np.array([[0.4, 0.6]]), None, ()).tolist() == [True]


def test_linear_inequality_parse():
    w = rx.LinearInequality.parse("x1 + 2*x2 >= 1")
    X = np.array([[1.0, 0.0], [0.0, 0.4], [0.0, 0.6]])
    assert w.satisfied(X, ("x1", "x2")).tolist() == [True, False, True]
    with pytest.raises(rx.DomainError, match="not linear"):
        rx.LinearInequality.parse("x1 * x2 <= 1")


def test_box_sampling_is_nested_admissible_and_uniform(rng):
    box = rx.Box(z_hi=(1 / 15, 1), z_lo=(0, 1 / 3), p=(0.05, 0.95), where=["z_lo <= z_hi"])
    seed = 7
    big = box.sample(300, np.random.default_rng(seed))
    small = box.sample(100, np.random.default_rng(seed))
    np.testing.assert_array_equal(big[:100], small)  # nested in n
    assert (big[:, 1] <= big[:, 0]).all()
    assert (big >= box.lower).all() and (big <= box.upper).all()
    # p is independent of the prize constraint: uniform on [0.05, 0.95]
    p = box.sample(2000, rng)[:, 2]
    assert stats.kstest(p, stats.uniform(0.05, 0.9).cdf).pvalue > 1e-3


def test_box_refuses_one_inequality_given_as_where_instead_of_a_list():
    """where="z_lo <= z_hi" was read letter by letter: "inequality 'z' must have the form
    'lhs <= rhs'", naming a letter the user never wrote as an inequality; where="" was no
    inequality at all."""
    for where in ("z_lo <= z_hi", ""):
        with pytest.raises(rx.DomainError, match=r"where takes a list of inequalities, e\.g\. "
                                                 rf"\[{where!r}\]"):
            rx.Box(z_hi=(0, 1), z_lo=(0, 1), where=where)
    listed = rx.Box(z_hi=(0, 1), z_lo=(0, 1), where=["z_lo <= z_hi"])
    np.testing.assert_array_equal(listed.admissible(np.array([[0.5, 0.2], [0.2, 0.5]])),
                                  [True, False])


def test_box_with_empty_region_raises():
    box = rx.Box(x=(0, 1), y=(0, 1), where=["x + y >= 3"])
    with pytest.raises(rx.DomainError, match="cannot be drawn"):
        box.sample(10, np.random.default_rng(0))


def test_finite_set_sampling_and_errors(rng):
    dom = rx.FiniteSet(np.arange(4.0)[:, None], ("x",), weights=[1, 1, 1, 5])
    X = dom.sample(4000, rng)
    assert abs((X[:, 0] == 3).mean() - 5 / 8) < 0.03
    with pytest.raises(rx.DomainError, match="cannot draw n=5 distinct"):
        rx.FiniteSet(np.arange(4.0)[:, None], ("x",), replace=False).sample(5, rng)


def test_matern32_formula_and_lengthscales():
    k = rx.Matern32(variance=10, lengthscale=(1.0, 2.0))
    x, y = np.array([[0.0, 0.0]]), np.array([[0.3, 0.8]])
    r = np.sqrt(0.3**2 + 0.4**2)
    assert np.isclose(k(x, y)[0, 0], 10 * (1 + np.sqrt(3) * r) * np.exp(-np.sqrt(3) * r))
    assert np.isclose(rx.Matern52()(x, x)[0, 0], 1.0)
    assert np.isclose(rx.SquaredExponential(lengthscale=2.0)(x, np.array([[2.0, 0.0]]))[0, 0],
                      np.exp(-0.5))
    with pytest.raises(ValueError, match="variance"):
        rx.Matern32(variance=-1)


@pytest.mark.parametrize("kernel", [rx.Matern32, rx.Matern52, rx.SquaredExponential])
def test_kernels_refuse_bad_arguments_with_named_errors(kernel, rng):
    with pytest.raises(rx.ConfigurationError, match=f"{kernel.__name__}: variance"):
        kernel(variance=0.0)
    with pytest.raises(rx.ConfigurationError, match="lengthscale must be positive"):
        kernel(lengthscale=(1.0, -1.0))
    # two length scales for three covariates: refused by name, not a numpy broadcasting error
    k = kernel(lengthscale=(1.0, 2.0))
    with pytest.raises(rx.ConfigurationError, match="lengthscale has 2 values for 3 covariates"):
        k(np.zeros((2, 3)))
    with pytest.raises(rx.ConfigurationError, match="lengthscale has 2 values for 3 covariates"):
        k.spectral_frequencies(3, 5, rng)
    # one length scale serves every covariate: the same as repeating it
    x, y = np.array([[0.0, 0.0, 0.0]]), np.array([[0.3, 0.8, -0.2]])
    assert kernel(lengthscale=0.7)(x, y) == kernel(lengthscale=(0.7, 0.7, 0.7))(x, y)


@pytest.mark.parametrize("kernel", [rx.Matern32, rx.Matern52, rx.SquaredExponential])
@pytest.mark.parametrize("lengthscale", [np.array([[1.0, 2.0]]), ((1.0, 2.0),), np.ones((2, 2)),
                                         ()])
def test_kernels_refuse_a_lengthscale_that_is_not_flat(kernel, lengthscale):
    # a (1, d) array was a bare TypeError ("only 0-dimensional arrays can be converted"), a
    # nested tuple was accepted and failed at evaluation with numpy's "input operand has more
    # dimensions", and () was accepted: a kernel with no length scale at all
    with pytest.raises(rx.ConfigurationError,
                       match=f"{kernel.__name__}: lengthscale must be one number or a flat "
                             r"sequence of one per covariate, got [^@]* of shape \("):
        kernel(lengthscale=lengthscale)
    # the same scales given flat are honoured: per covariate, as documented
    k = kernel(lengthscale=(1.0, 2.0))
    x, y = np.zeros((1, 2)), np.array([[0.6, 1.6]])
    assert k(x, y)[0, 0] == pytest.approx(float(kernel()(np.zeros((1, 1)), np.ones((1, 1)))[0, 0]))


def test_sample_refuses_mismatched_arrays_with_data_error():
    with pytest.raises(rx.DataError, match="same number of observations"):
        rx.Sample(np.zeros((3, 2)), np.zeros(2), ("a", "b"))
    with pytest.raises(rx.DataError, match="last axis of X must match columns"):
        rx.Sample(np.zeros((3, 2)), np.zeros(3), ("a",))


@pytest.mark.parametrize("kernel", [rx.Matern32(lengthscale=(0.7, 1.3)), rx.Matern52(),
                                    rx.SquaredExponential(lengthscale=0.5)])
def test_random_fourier_features_reproduce_the_kernel(kernel, rng):
    x = np.array([[0.0, 0.0], [0.4, -0.2], [1.0, 0.5]])
    D = 200_000
    omega = kernel.spectral_frequencies(2, D, rng)
    b = rng.uniform(0, 2 * np.pi, D)
    phi = np.sqrt(2.0 / D) * np.cos(x @ omega.T + b)
    np.testing.assert_allclose(phi @ phi.T, kernel(x) / kernel.variance, atol=0.01)


def test_formula_missing_column_and_nan():
    df = pd.DataFrame({"y": [1.0, 2.0], "x": [0.0, np.nan]})
    f = parse_formula("y ~ x + z")
    assert f.response == "y" and f.covariates == ("x", "z")
    with pytest.raises(rx.FormulaError, match=r"\['z'\]"):
        f.design(df)
    with pytest.raises(rx.DataError, match="missing values"):
        parse_formula("y ~ x").design(df)
    with pytest.raises(rx.FormulaError, match="non-empty"):
        parse_formula("")


def test_formula_design_builder_keeps_state():
    train = pd.DataFrame({"x": [1.0, 2.0, 3.0]})
    X, build = parse_formula("~ center(x)").design_builder(train)
    np.testing.assert_allclose(X[:, 1], [-1.0, 0.0, 1.0])
    np.testing.assert_allclose(build(pd.DataFrame({"x": [4.0]}))[:, 1], [2.0])


def test_each_fitted_rule_has_its_own_info():
    """A rule that writes into ``info`` without assigning it writes into its own dict."""

    class Rule(rx.Fitted):
        def predict(self, X):
            return np.zeros(len(X))

    a, b = Rule(), Rule()
    a.info["rounds"] = 3
    assert a.info == {"rounds": 3} and b.info == {} and Rule().info == {}
    b.info = {"params": [1.0]}
    assert b.info == {"params": [1.0]} and a.info == {"rounds": 3}


@pytest.mark.parametrize(("build", "error", "message"), [
    # each of these used to pass silently (or fail later with a bare exception)
    (lambda: rx.Box(x="01"), rx.DomainError, r"interval of 'x' must be a pair \(low, high\), "
                                             "got '01'"),
    (lambda: rx.Box(x=(0, 1, 2)), rx.DomainError, r"must be a pair .*got \(0, 1, 2\)"),
    (lambda: rx.Box({"x": (0, 1)}, x=(0, 2)), rx.DomainError,
     r"\['x'\] given both in ranges and as keyword arguments"),
    (lambda: rx.Box(x=(0, 1)).sample(2.5, np.random.default_rng(0)), rx.DomainError,
     "cannot sample 2.5 points; size must be a whole number >= 0"),
    (lambda: rx.LinearInequality({"x": "a"}), rx.DomainError,
     r"finite numbers as coefficients .*\{'x': 'a'\}"),
    (lambda: rx.LinearInequality({"x": np.nan}), rx.DomainError, r"\{'x': nan\}"),
    (lambda: rx.FiniteSet(np.zeros((2, 1)), ("x",), weights=np.array([np.nan, 1.0])),
     rx.DomainError, "weights must be finite and nonnegative"),
    (lambda: rx.FiniteSet(np.zeros((3, 2)), ("x", "x")), rx.DomainError,
     r"columns must be distinct names, got \('x', 'x'\)"),
    (lambda: rx.Increasing(["x", "y"]), rx.ConstraintError,
     r"column names as separate strings.*got \(\['x', 'y'\],\)"),
    (lambda: rx.Between(None, 1), rx.ConstraintError,
     "lower must be a finite number or a column name, got None"),
    (lambda: rx.Between(1, 1), rx.ConstraintError, r"lower equals upper \(1\)"),
    # every prediction was clipped to the column itself, the baseline's too: r̂ = 0/0, and a
    # warning that told the user to use rx.Constant(), which they were using
    (lambda: rx.Between("x", "x"), rx.ConstraintError,
     "lower and upper are the same column 'x'; the only eligible rule is f\\(x\\) = x"),
    (lambda: rx.Simplex(atol=-1), rx.ConstraintError, "atol must be a finite number >= 0"),
    (lambda: rx.EligibleSet(None), rx.ConstraintError, "first argument must be a Domain"),
    (lambda: rx.EligibleSet(rx.Box(x=(0, 1)), "increasing"), rx.ConstraintError,
     r"constraints must be Constraint objects .*got \['increasing'\]"),
    (lambda: rx.Matern32(lengthscale="1"), rx.ConfigurationError,
     "variance and lengthscale must be numbers"),
    (lambda: rx.Box.from_frame(pd.DataFrame({"x": [0.0, 1.0]}), ["x"], pad="0.1"),
     rx.DomainError, "pad must be a nonnegative number, got '0.1'"),  # was a numpy TypeError
    (lambda: rx.FiniteSet(np.array([[0.0], [1.0]]), ("x",), replace="no"), rx.DomainError,
     "replace must be True or False, got 'no'"),  # bool('no') drew with replacement
])
def test_domains_and_constraints_refuse_what_they_cannot_honour(build, error, message):
    with pytest.raises(error, match=message):
        build()


@pytest.mark.parametrize("build", [
    lambda: rx.FiniteSet(np.array([[0.5]]), ("x",)),
    lambda: rx.FiniteSet(np.full((3, 2), 0.5), ("x", "y")),  # one point given three times
    lambda: rx.FiniteSet(np.array([[0.0], [1.0]]), ("x",), weights=[0.0, 1.0]),
    lambda: rx.FiniteSet.from_frame(pd.DataFrame({"x": [2.0, 2.0, 2.0]}), ["x"]),
])
def test_one_point_finite_set_is_refused(build):
    """A support with one distinct point of positive weight is refused: the truths are one number
    each, a constant baseline fits them to rounding, and a study reported r̂ = 1.000 (0.000) for
    every procedure from losses of 1e-16 (0/0)."""
    with pytest.raises(rx.ConfigurationError,
                       match=r"restrictiveness needs variation in the covariates, but the support "
                             r"has 1 distinct point with positive weight .*r̂ would be 0/0"):
        build()
    two = rx.FiniteSet(np.array([[0.0], [1.0]]), ("x",), weights=[1.0, 3.0])  # two points: fine
    assert two.weights.tolist() == [0.25, 0.75]


@pytest.mark.parametrize(("option", "value", "message"), [
    ("n_eval", 0, "n_eval must be a whole number >= 1, got 0"),  # was ZeroDivisionError
    ("n_eval", None, "n_eval must be a whole number >= 1, got None"),
    ("max_sweeps", 0, "max_sweeps must be a whole number >= 1, got 0"),  # unprojected draws
    ("jitter", -1, "jitter must be a finite number >= 0, got -1"),  # was LinAlgError at run
    ("tol", 0, "tol must be a finite number > 0, got 0"),
    ("response", "x", r"response must be a name other than the covariates \['x'\], got 'x'"),
    ("kernel", "matern", "kernel must be a Kernel"),  # was TypeError at run
    ("kernel", rx.Matern32(lengthscale=(1.0, 2.0)), "lengthscale has 2 values for 1 covariates"),
])
def test_monotone_gp_options_are_refused_by_name(option, value, message):
    eligible = rx.EligibleSet(rx.Box(x=(0, 1)), rx.Increasing("x"), rx.Between(0, 1))
    with pytest.raises(rx.ConfigurationError, match=message):
        rx.MonotoneGP(eligible, **{option: value})
    with pytest.raises(rx.ConfigurationError, match="takes an rx.EligibleSet"):
        rx.MonotoneGP(rx.Box(x=(0, 1)))


def test_between_columns_that_cross_on_the_domain_are_refused():
    # where lo > hi no rule is eligible; the draws lay outside their own bounds and every
    # procedure's predictions there were "invalid", silently changing r̂
    crossing = rx.EligibleSet(rx.Box(lo=(0, 1), hi=(0, 1)), rx.Between("lo", "hi"))
    with pytest.raises(rx.ConstraintError, match=r"lower bound exceeds the upper bound at \d+ "
                                                 r"of 30 points.*where=\['lo <= hi'\]"):
        rx.MonotoneGP(crossing, n_eval=20).draw([10], np.random.default_rng(0))
    ordered = rx.EligibleSet(rx.Box(lo=(0, 1), hi=(0, 1), where=["lo <= hi"]),
                             rx.Between("lo", "hi"))
    truth = rx.MonotoneGP(ordered, n_eval=20).draw([10], np.random.default_rng(0))
    X, y = truth.eval_X, truth.eval_y(10)
    assert ((X[:, 0] <= y) & (y <= X[:, 1])).all()


def test_monotone_gp_refuses_a_jitter_that_swamps_the_kernel_variance():
    """The jitter is absolute: with variance 1e-30 and the default 1e-4 the truths were the
    jitter's white noise (scale 3e-5) without a word. Up to 1% of the variance is accepted."""
    eligible = rx.EligibleSet(rx.Box(x=(0, 1)), rx.Increasing("x"))
    with pytest.raises(rx.ConfigurationError,
                       match=r"jitter=0.0001 is more than 1% of the kernel's variance 1e-30"):
        rx.MonotoneGP(eligible, kernel=rx.Matern32(variance=1e-30))
    rx.MonotoneGP(eligible, kernel=rx.Matern32(variance=1e-2), jitter=1e-4)      # exactly 1%
    with pytest.raises(rx.ConfigurationError, match="more than 1%"):
        rx.MonotoneGP(eligible, kernel=rx.Matern32(variance=1e-2), jitter=1.0001e-4)


def test_monotone_gp_truths_scale_with_variance_and_jitter_together():
    """Scaling the kernel's variance and the jitter by c scales the latent field by √c; with no
    link or bounds, and the projection's absolute stopping rule (SPEC §6: a sweep's change below
    1e-6) scaled by √c, the projected truths scale by √c too (the projection is equivariant)."""
    eligible = rx.EligibleSet(rx.Box(x=(0, 1)), rx.Increasing("x"))

    def truth(c):
        prior = rx.MonotoneGP(eligible, kernel=rx.Matern32(variance=c), jitter=1e-6 * c,
                              tol=1e-6 * np.sqrt(c), n_eval=40)
        return prior.draw([10], np.random.default_rng(3)).eval_y(10)
    np.testing.assert_allclose(truth(1e-20), 1e-10 * truth(1.0), rtol=1e-8, atol=0)
