"""rx.NLS: nonlinear least squares from a formula, as a procedure and as an estimator.

Known answers and peers: scipy's ``least_squares`` from many starts (global optimum), the
built-in CPT fitter (CPT written as a formula), statsmodels' OLS on the Jacobian at the optimum
and ``curve_fit``'s covariance (standard errors), finite differences and sympy's own NumPy
printer (the compiled Jacobian), and noise-free recovery inside the box and on its faces.
"""

from __future__ import annotations

import builtins
import pickle
import re
import warnings

import numpy as np
import pandas as pd
import pytest
import scipy.optimize
import statsmodels.api as sm

import restrictiveness as rx
from restrictiveness.lottery.models import CPT
from restrictiveness.lottery.prior import lottery_prior
from restrictiveness.shared.exceptions import ConfigurationError, DataError, FormulaError
from restrictiveness.shared.expression import compile_expression, parse_nonlinear

CPT_FORMULA = ("ce ~ ((delta*p**gamma/(delta*p**gamma + (1-p)**gamma)) * z_hi**alpha"
               " + (1 - delta*p**gamma/(delta*p**gamma + (1-p)**gamma)) * z_lo**alpha)"
               "**(1/alpha)")
CPT_BOUNDS = {"alpha": (0.01, 1.0), "gamma": (0.01, 1.0), "delta": (0.01, 30.0)}
PRELEC = "ce ~ z_lo + (z_hi - z_lo) * exp(-beta * (-log(p))**alpha)"
PRELEC_BOUNDS = {"alpha": (0.05, 2.0), "beta": (0.05, 5.0)}


def _lottery_sample(n, seed):
    return lottery_prior(n_eval=20).draw([n], np.random.default_rng(seed)).sample(n)


# ---------------------------------------------------------------------------------------------
# parsing: an allow-list, never evaluation
# ---------------------------------------------------------------------------------------------

@pytest.mark.parametrize("formula, token", [
    ("y ~ __import__('os').system('echo hi')", "__import__"),
    ("y ~ a * x.__class__", "x.__class__"),
    ("y ~ np.exp(a * x)", "np.exp"),
    ("y ~ (lambda: a)()", "lambda"),
    ("y ~ a * x[0]", "x[0]"),
    ("y ~ a * open(x)", "open"),
    ("y ~ a * exp(x=x)", "positional"),
    ("y ~ a * 'text'", "'text'"),
    ("y ~ a if x else x", "where()"),
    ("y ~ a * (x > 0)", "x > 0"),
    ("y ~ a * x // 2", "operator"),
    ("y ~ a * exp", "must be called (exp(...)); a data column named 'exp' must be renamed"),
    ("y ~ a * __builtins__", "__builtins__"),
    ("y ~ a * [x]", "[x]"),
    ("y ~ where(x, a, 1)", "condition"),
    ("y ~ clip(x, a)", "3 argument"),
    ("np.log(y) ~ a * x", "response"),
    ("y ~ a * (x", "cannot be parsed"),
    # a keyword as a name (a column 'lambda': loss aversion) was only 'invalid syntax'
    ("y ~ a * lambda", "'lambda' is a Python keyword"),
    ("y ~ a * x + class", "'class' is a Python keyword"),
])
def test_unsafe_or_unknown_formulas_are_refused_naming_the_token(formula, token):
    with pytest.raises(FormulaError, match=token.replace("(", r"\(").replace(")", r"\)")
                       .replace("[", r"\[").replace("]", r"\]").replace("*", r"\*")):
        rx.NLS(formula, bounds={"a": (0, 1)})


def test_no_user_text_is_evaluated(monkeypatch):
    calls = []
    monkeypatch.setattr(builtins, "boom", lambda *a: calls.append(a), raising=False)
    with pytest.raises(FormulaError, match="'boom' is not allowed"):
        rx.NLS("y ~ boom(a) * x", bounds={"a": (0, 1)})
    assert calls == []
    # the generated source holds only the printer's own names, whatever the user wrote
    f = parse_nonlinear("y ~ amplitude * exp(-rate * my_column)", ["amplitude", "rate"])
    source = compile_expression(f).source
    for name in ("amplitude", "rate", "my_column"):
        assert name not in source
    # names that are neither columns nor parameters are refused against the data
    model = rx.NLS("y ~ a * x + q", bounds={"a": (0, 1)})
    with pytest.raises(FormulaError, match="'q' is neither a data column"):
        model.fit(rx.Sample(np.ones((3, 1)), np.ones(3), ("x",)))
    with pytest.raises(FormulaError, match="both a parameter and a data column"):
        rx.NLS("y ~ a * x", bounds={"a": (0, 1)}).fit(
            rx.Sample(np.ones((3, 2)), np.ones(3), ("x", "a")))


def test_configuration_errors_name_the_argument():
    with pytest.raises(ConfigurationError, match=r"\['b'\] have no bounds"):
        rx.NLS("y ~ a * exp(b * x)", params=["a", "b"], bounds={"a": (0, 1)})
    with pytest.raises(ConfigurationError, match="finite"):
        rx.NLS("y ~ a * x", bounds={"a": (0, np.inf)})
    with pytest.raises(ConfigurationError, match="unknown parameter"):
        rx.NLS("y ~ a * x", params=["a"], bounds={"a": (0, 1), "c": (0, 1)})
    with pytest.raises(ConfigurationError, match="jac is for function models"):
        rx.NLS("y ~ a * x", bounds={"a": (0, 1)}, jac=lambda d, a: d["x"])
    with pytest.raises(FormulaError, match="zero everywhere"):
        rx.NLS("y ~ a * x + 0 * b", bounds={"a": (0, 1), "b": (0, 1)}).fit(
            rx.Sample(np.ones((3, 1)), np.ones(3), ("x",)))
    with pytest.raises(ConfigurationError, match="positive lower bound"):
        rx.NLS("y ~ a * x", bounds={"a": (0, 1)}, scale={"a": "log"})


@pytest.mark.parametrize(("option", "value", "message"), [
    ("max_nfev", None, "max_nfev must be a whole number >= 1, got None"),
    ("n_points", 2.5, "n_points must be a whole number >= 2, got 2.5"),
    ("n_refine", 0, "n_refine must be a whole number >= 1, got 0"),
    ("seed", -1, "seed must be a whole number >= 0, got -1"),  # used to fail inside numpy
    ("seed", None, "seed must be a whole number >= 0, got None"),
    ("gtol", float("nan"), r"gtol, xtol and ftol must be positive numbers, got \(nan"),
    ("scale", "log", "scale must be a mapping"),
])
def test_options_are_refused_by_name(option, value, message):
    with pytest.raises(ConfigurationError, match=message):
        rx.NLS("y ~ a * exp(-b * x)", bounds={"a": (0, 10), "b": (0.01, 5)}, **{option: value})


def test_formulas_that_would_hang_or_overflow_the_checker_are_refused():
    # sympy evaluated 10 ** 10 ** 10 exactly: the fit never returned
    with pytest.raises(FormulaError, match=r"the constant '10 \*\* 10 \*\* 10' is not a "
                                           "finite real number"):
        rx.NLS("y ~ a * x * 10 ** 10 ** 10", bounds={"a": (0, 1)})
    with pytest.raises(FormulaError, match=r"'\(-2\) \*\* 0.5' is not a finite real number"):
        rx.NLS("y ~ a * x * (-2) ** 0.5", bounds={"a": (0, 1)})
    with pytest.raises(FormulaError, match="the constant '99999.*' is not a finite real"):
        rx.NLS("y ~ a * x * " + "9" * 400, bounds={"a": (0, 1)})  # OverflowError in compiling
    # a sum of thousands of terms was a RecursionError
    with pytest.raises(FormulaError, match="too long or too deeply nested"):
        rx.NLS("y ~ " + " + ".join(["a * x"] * 3000), bounds={"a": (0, 1)})
    # constants that are finite still fit
    x = np.linspace(0.1, 2, 20)
    fit = rx.NLS("y ~ a * x ** 2 * 2 ** -1", bounds={"a": (0, 3)}).fit(
        pd.DataFrame({"x": x, "y": 0.7 * x ** 2}))
    assert fit.params["a"] == pytest.approx(1.4, rel=1e-9)


def test_unidentified_parameters_get_nan_standard_errors_not_the_pseudo_inverses():
    """a and b enter only as a * b: the pseudo-inverse of JᵀJ reported bse = 0 for both (and
    t = inf). They are NaN now, with a warning naming them; c keeps its standard error, the
    one of the model with a * b as one parameter (s² still divides by N − 3)."""
    x = np.linspace(0, 1, 40)
    data = pd.DataFrame({"x": x, "y": 0.3 + 2 * x + 0.05 * np.cos(17 * x)})
    with pytest.warns(RuntimeWarning, match=r"parameters \['a', 'b'\] are not identified"):
        res = rx.NLS("y ~ c + a * b * x", bounds={"a": (0.1, 10), "b": (0.1, 5),
                                                  "c": (-1, 1)}).fit(data)
        bse = res.bse
    assert np.isnan(bse["a"]) and np.isnan(bse["b"])
    ref = rx.NLS("y ~ c + d * x", bounds={"d": (0, 10), "c": (-1, 1)}).fit(data)
    assert bse["c"] == pytest.approx(ref.bse["c"] * np.sqrt(38 / 37), rel=1e-6)
    assert res.params["a"] * res.params["b"] == pytest.approx(ref.params["d"], rel=1e-6)


def test_estimation_data_errors_name_the_column_and_alpha_is_checked():
    model = rx.NLS("y ~ a * exp(-b * x)", bounds={"a": (0, 10), "b": (0.01, 5)})
    x = np.linspace(0.1, 3, 30)
    data = pd.DataFrame({"x": x, "y": 2 * np.exp(-0.7 * x) + 0.01 * np.cos(9 * x)})
    # a formula column the data lack was a bare KeyError from pandas
    with pytest.raises(FormulaError, match="'x' is neither a data column.*columns are "
                                           r"\['w', 'y'\]"):
        model.fit(data.rename(columns={"x": "w"}))
    # text columns were a bare ValueError from numpy
    with pytest.raises(DataError, match="column 'x' is not numeric"):
        model.fit(data.assign(x=["u"] * 30))
    with pytest.raises(DataError, match="column 'y' is not numeric"):
        model.fit(data.assign(y=["u"] * 30))
    res = model.fit(data)
    with pytest.raises(ConfigurationError, match=r"alpha must lie in \(0, 1\), got '0.05'"):
        res.conf_int("0.05")
    with pytest.raises(ConfigurationError, match=r"alpha must lie in \(0, 1\), got 1.5"):
        res.conf_int(1.5)


# ---------------------------------------------------------------------------------------------
# the compiled values and Jacobian
# ---------------------------------------------------------------------------------------------

FORMULAS = [
    ("y ~ a * exp(-b * x) + c * log1p(x**2)", {"a": 1.3, "b": 0.7, "c": -0.4}),
    ("y ~ where(x > c, a * (x - c), b * (c - x)**2) + tanh(a * x)", {"a": 0.8, "b": 1.7, "c": 0.4}),
    ("y ~ abs(x - a) + maximum(b * x, c) - minimum(x, a * b) + clip(a * x, b, c + 1)",
     {"a": 0.6, "b": 0.3, "c": 0.2}),
    ("y ~ expm1(a * x) / (1 + sqrt(b + x**2)) + arctan(c * x) + expit(a - x)",
     {"a": 0.5, "b": 1.2, "c": 2.0}),
    ("y ~ where((x > a) & (x < b) | (x > 1.7), b * log(x + c), sin(pi * a * x))",
     {"a": 0.5, "b": 1.2, "c": 0.3}),
    (CPT_FORMULA.replace("ce ~", "y ~"), {"alpha": 0.55, "gamma": 0.6, "delta": 1.4}),
    ("y ~ minimum(maximum(a * x, b), c + 1) + where(maximum(x, a) > b, c * x, a)",
     {"a": 0.6, "b": 0.9, "c": 0.3}),
    ("y ~ a * sqrt((x - b)**2) + c / x**2 + (x**2)**(1/4)", {"a": 0.6, "b": 0.9, "c": 0.3}),
]


@pytest.mark.parametrize("formula, theta", FORMULAS, ids=range(len(FORMULAS)))
def test_jacobian_matches_finite_differences_and_sympy_numpy_printer(formula, theta):
    f = parse_nonlinear(formula, list(theta))
    c = compile_expression(f)
    rng = np.random.default_rng(1)
    X = rng.uniform(0.05, 1.95, (200, len(f.variables)))
    if "z_lo" in f.variables:   # lotteries, including zero low prizes (z**α with z = 0)
        X = np.column_stack([rng.uniform(0.05, 0.95, 200), rng.uniform(0.3, 1, 200),
                             np.where(rng.random(200) < 0.3, 0.0, rng.uniform(0, 0.3, 200))])
    t = np.array(list(theta.values()))
    val, J = c.values(t, X, jacobian=True)
    assert np.isfinite(val).all() and np.isfinite(J).all()
    value_np, jac_np = c.numpy_functions()
    np.testing.assert_allclose(val, value_np(t, X), rtol=1e-12, atol=1e-14)
    np.testing.assert_allclose(J, jac_np(t, X), rtol=1e-10, atol=1e-12)
    for k in range(len(t)):
        h = 1e-6
        up, down = t.copy(), t.copy()
        up[k] += h
        down[k] -= h
        fd = (c.values(up, X) - c.values(down, X)) / (2 * h)
        kink = np.abs(fd - J[:, k]) > 1e-5 * (1 + np.abs(J[:, k]))
        assert kink.mean() < 0.03     # finite differences straddle a kink at a few points only


def test_minimum_maximum_and_clip_are_numpys():
    """The formula's minimum, maximum and clip are numpy's (the issue's 'numpy functions').
    minimum(log(x - a), 1) was 1 where the log is undefined (numpy: NaN), so a fit ran through
    undefined values (y = 1 at x = 0.5, 1, 2, 3: a = 1, SSR 1.09, the model NaN at two of the
    four observations); clip(x, lo, hi) with lo > hi was lo (numpy: hi); and a minimum of a
    maximum, a capped floor, was refused as 'the term ITE(...) cannot be compiled'."""
    x = np.array([0.5, 1.0, 2.0, 3.0])
    X = x[:, None]
    cases = [("y ~ minimum(log(x - a), b)", (1.5, 1.0),
              lambda a, b: np.minimum(np.log(x - a), b)),
             ("y ~ maximum(b, log(x - a))", (1.5, 1.0),
              lambda a, b: np.maximum(b, np.log(x - a))),
             ("y ~ clip(x, a, b)", (2.5, 1.5), lambda a, b: np.clip(x, a, b)),
             ("y ~ clip(log(x - a), b, 1)", (0.9, -1.0), lambda a, b: np.clip(np.log(x - a), b, 1)),
             ("y ~ minimum(maximum(x, a), b)", (0.8, 2.5),
              lambda a, b: np.minimum(np.maximum(x, a), b))]
    for formula, theta, numpy_f in cases:
        model = rx.NLS(formula, bounds={"a": (-3, 3), "b": (-3, 3)})
        with np.errstate(invalid="ignore"):
            np.testing.assert_array_equal(model.values(X, theta), numpy_f(*theta))
    np.testing.assert_array_equal(rx.NLS("y ~ clip(x, a, b)", bounds={"a": (0, 3), "b": (0, 3)})
                                  .values(X, (2.5, 1.5)), [1.5, 1.5, 1.5, 1.5])
    df = pd.DataFrame({"x": x, "y": 1.0})
    res = rx.NLS.from_formula("y ~ minimum(log(x - a), b)", df,
                              bounds={"a": (0, 3), "b": (-2, 2)}).fit()
    # a < 0.5 keeps the model defined: a on its lower bound, b = 1 fits x = 3 exactly
    assert res.params.tolist() == pytest.approx([0.0, 1.0], abs=1e-8)
    assert res.ssr == pytest.approx((1 - np.log(0.5)) ** 2 + 1 + (1 - np.log(2)) ** 2, rel=1e-9)
    res = rx.NLS.from_formula("y ~ minimum(maximum(x, a), b)", df.assign(y=[1, 1, 2, 2.5]),
                              bounds={"a": (0, 3), "b": (0, 3)}).fit()
    assert res.params.tolist() == pytest.approx([1.0, 2.5], abs=1e-8) and res.ssr < 1e-20


def test_forms_sympy_rewrites_compile_and_keep_numpys_values():
    """a / x**2 on data with x = 0 ended the fit with numba's bare ZeroDivisionError (a negative
    integer power; 1 / 0 was already inf); sqrt((x - b)**2), which sympy rewrites as Abs, was
    refused as 'the term Abs(...) cannot be compiled'; log(-2), complex to sympy, as 'the term
    I ...'. Now: numpy's inf (the fit refuses a model not finite on the data), the absolute
    value with its derivative, and a message that names a complex constant."""
    X = np.array([[0.0], [0.5], [2.0]])
    inverse_square = rx.NLS("y ~ a / x**2 + b * (x - 1)**-3", bounds={"a": (0.5, 2), "b": (0, 1)})
    with np.errstate(divide="ignore"):
        np.testing.assert_array_equal(inverse_square.values(X, [1.0, 0.0]), [np.inf, 4.0, 0.25])
    df = pd.DataFrame({"x": [0.0, 1.0, 2.0, 3.0], "y": [5.0, 1.0, 0.25, 0.11]})
    with pytest.raises(DataError, match="not finite at any of the"):
        rx.NLS.from_formula("y ~ a * x ** -2", df, bounds={"a": (0.5, 3)}).fit()
    res = rx.NLS.from_formula("y ~ a * x ** -2", df.iloc[1:], bounds={"a": (0.5, 3)}).fit()
    x, y = df["x"].to_numpy()[1:], df["y"].to_numpy()[1:]
    assert res.params["a"] == pytest.approx((y @ x**-2) / (x**-2 @ x**-2), rel=1e-10)
    distance = rx.NLS("y ~ a * sqrt((x - b)**2)", bounds={"a": (0, 2), "b": (0, 2)})
    f, J = distance.values(X, [1.5, 1.0], jacobian=True)
    np.testing.assert_allclose(f, 1.5 * np.abs(X[:, 0] - 1.0), rtol=1e-15)
    np.testing.assert_allclose(J, np.c_[np.abs(X[:, 0] - 1.0), -1.5 * np.sign(X[:, 0] - 1.0)],
                               rtol=1e-15)
    x = np.linspace(0, 2, 21)
    fit = distance.fit(rx.Sample(x[:, None], 0.7 * np.abs(x - 1.3), ("x",)))
    assert fit.params == pytest.approx({"a": 0.7, "b": 1.3}, rel=1e-9)
    for formula in ("y ~ a * log(-2) + x", "y ~ a * x ** sqrt(-1)"):
        with pytest.raises(FormulaError, match="has a complex constant"):
            rx.NLS(formula, bounds={"a": (0, 1)}).values(X, [0.5])


def test_log_scale_callback_applies_the_chain_rule():
    c = compile_expression(parse_nonlinear("y ~ a * exp(-b * x)", ["a", "b"]))
    X = np.linspace(0, 2, 7)[:, None]
    t = np.array([1.5, 0.8])
    _, J = c.values(t, X, jacobian=True)
    r, Jlog = c.resjac(np.log(t), (np.ascontiguousarray(X), np.zeros(7), np.ones(2, np.int64)),
                       True)
    np.testing.assert_allclose(Jlog, J * t, rtol=1e-14)
    np.testing.assert_allclose(r, c.values(t, X), rtol=1e-14)


@pytest.mark.parametrize("formula, params, linear", [
    ("y ~ a * exp(-b * x) + c", "a b c", (True, False, True)),
    ("y ~ (a + b * x) / (1 + c * x)", "a b c", (True, True, False)),
    # linear in a and in b, not in both (∂²f/∂a∂b ≠ 0): the first declared is taken
    ("y ~ a * b * exp(-c * x)", "a b c", (True, False, False)),
    ("y ~ b * a * exp(-c * x)", "b a c", (True, False, False)),
    ("y ~ a * x + a**2", "a", (False,)),
    ("y ~ a * exp(a * x) + b * x", "a b", (False, True)),
    # c moves the switch as well as the level (sympy's ∂f/∂c is 1), wherever it is declared
    ("y ~ where(x > c, a, b * x) + c", "a b c", (True, True, False)),
    ("y ~ where(x > c, a, b * x) + c", "c a b", (False, True, True)),
    ("y ~ a * abs(x - c) + b", "a b c", (True, True, False)),
])
def test_the_parameters_a_formula_is_jointly_linear_in(formula, params, linear):
    c = compile_expression(parse_nonlinear(formula, params.split()))
    assert c.linear == linear


# ---------------------------------------------------------------------------------------------
# fits: recovery, bounds, global optimum
# ---------------------------------------------------------------------------------------------

@pytest.mark.parametrize("truth", [
    {"alpha": 0.7, "beta": 1.3},     # interior
    {"alpha": 2.0, "beta": 0.9},     # on the upper face of alpha
    {"alpha": 0.4, "beta": 0.05},    # on the lower face of beta
    {"alpha": 0.05, "beta": 5.0},    # a corner
])
def test_recovers_known_parameters_inside_the_box_and_on_its_faces(truth):
    s = _lottery_sample(100, 3)
    model = rx.NLS(PRELEC, bounds=PRELEC_BOUNDS)
    y = model.values(model._design(s.X, s.columns), [truth["alpha"], truth["beta"]])
    fit = model.fit(rx.Sample(s.X, y, s.columns, "ce"))
    assert fit.ssr < 1e-24
    for q, v in truth.items():
        if v in PRELEC_BOUNDS[q]:
            assert fit.params[q] == v and q in fit.info["at_bound"]   # exactly on the face
        else:
            assert fit.params[q] == pytest.approx(v, rel=1e-8)
    assert fit.info["converged"]


def test_truth_outside_the_box_gives_the_constrained_optimum_exactly_on_the_bound():
    s = _lottery_sample(80, 4)
    wide = rx.NLS(PRELEC, bounds={"alpha": (0.05, 4.0), "beta": (0.05, 5.0)})
    y = wide.values(wide._design(s.X, s.columns), [3.0, 0.8])
    fit = rx.NLS(PRELEC, bounds=PRELEC_BOUNDS).fit(rx.Sample(s.X, y, s.columns, "ce"))
    assert fit.params["alpha"] == 2.0
    # the conditional optimum in beta at alpha = 2, by a one-dimensional bounded search
    one = scipy.optimize.minimize_scalar(
        lambda b: np.sum((wide.values(wide._design(s.X, s.columns), [2.0, b]) - y) ** 2),
        bounds=(0.05, 5.0), method="bounded", options={"xatol": 1e-12})
    assert fit.params["beta"] == pytest.approx(one.x, rel=1e-6)


FAMILIES = [
    ("y ~ a * exp(-b * x) + c", {"a": (-3, 3), "b": (0.01, 10), "c": (-1, 1)}),
    ("y ~ a / (1 + exp(-b * (x - c)))", {"a": (0, 3), "b": (0.1, 30), "c": (0, 2)}),
    ("y ~ a * sin(b * x + c)", {"a": (0, 2), "b": (0.5, 8), "c": (-3, 3)}),
    ("y ~ a * x**b + c * x", {"a": (-2, 2), "b": (0.1, 3), "c": (-1, 1)}),
    (PRELEC.replace("ce ~", "y ~"), PRELEC_BOUNDS),
]


def _random_problem(rng, formula, bounds):
    model = rx.NLS(formula, bounds=bounds)
    if "z_lo" in formula:
        s = _lottery_sample(60, int(rng.integers(1 << 30)))
        X, cols = s.X, s.columns
    else:
        X, cols = rng.uniform(0, 2, (60, 1)), ("x",)
    design = model._design(X, cols)
    # truths inside, on and outside the box; noisy labels
    theta = [rng.uniform(lo - 0.2 * (hi - lo), hi + 0.2 * (hi - lo)) for lo, hi in bounds.values()]
    theta = [max(t, 0.011) if lo > 0 else t for t, (lo, _) in zip(theta, bounds.values(),
                                                                   strict=True)]
    wide = rx.NLS(formula, bounds={q: (min(lo, t) - 1, max(hi, t) + 1) if lo <= 0 else
                                   (min(lo, t) / 2, max(hi, t) * 2)
                                   for (q, (lo, hi)), t in zip(bounds.items(), theta, strict=True)})
    y = wide.values(design, theta)
    y = y + 0.1 * np.std(y) * rng.standard_normal(len(y))
    return model, design, y, X, cols


def _scipy_multistart(model, design, y, rng, starts):
    lo = np.array([b[0] for b in model.bounds.values()])
    hi = np.array([b[1] for b in model.bounds.values()])
    best = np.inf
    for _ in range(starts):
        res = scipy.optimize.least_squares(
            lambda t: model.values(design, t) - y, rng.uniform(lo, hi),
            jac=lambda t: model.values(design, t, jacobian=True)[1], bounds=(lo, hi),
            method="trf", xtol=1e-15, ftol=1e-15, gtol=1e-15, max_nfev=2000)
        best = min(best, 2 * res.cost)
    return best


def _assert_never_worse_than_scipy(problems_per_family, starts, seed):
    rng = np.random.default_rng(seed)
    worst = -np.inf
    for formula, bounds in FAMILIES:
        for _ in range(problems_per_family):
            model, design, y, X, cols = _random_problem(rng, formula, bounds)
            ours = model.fit(rx.Sample(X, y, cols, "y")).ssr
            theirs = _scipy_multistart(model, design, y, rng, starts)
            worst = max(worst, (ours - theirs) / theirs)
            assert ours <= theirs * (1 + 1e-8), (formula, ours, theirs)
    return worst


def test_fit_is_never_worse_than_scipy_least_squares_multistart():
    _assert_never_worse_than_scipy(problems_per_family=4, starts=10, seed=5)


@pytest.mark.slow
def test_fit_is_never_worse_than_scipy_least_squares_multistart_many_problems():
    # 5 families x 25 = 125 random bounded problems, scipy from 30 random starts each
    _assert_never_worse_than_scipy(problems_per_family=25, starts=30, seed=6)


# ---------------------------------------------------------------------------------------------
# CPT written as a formula
# ---------------------------------------------------------------------------------------------

def _cpt_agreement(samples_per_n, seed):
    nls = rx.NLS(CPT_FORMULA, bounds=CPT_BOUNDS)
    worst = -np.inf
    for n in (50, 100, 200):
        for m in range(samples_per_n):
            s = _lottery_sample(n, seed + 1000 * n + m)
            ours, builtin = nls.fit(s), CPT().fit(s)
            rel = (ours.ssr - builtin.ssr) / builtin.ssr
            worst = max(worst, rel)
            assert rel <= 1e-8, (n, m, ours.params, builtin.params)
    return worst


def test_cpt_as_a_formula_reaches_the_builtin_fit():
    _cpt_agreement(samples_per_n=8, seed=11)


@pytest.mark.slow
def test_cpt_as_a_formula_reaches_the_builtin_fit_on_many_samples():
    _cpt_agreement(samples_per_n=100, seed=12)   # 300 samples from the lottery prior


def _cpt_study_agreement(n, replications):
    procs = {"CPT": CPT(), "CPT as NLS": rx.NLS(CPT_FORMULA, bounds=CPT_BOUNDS)}
    res = rx.lottery.study(procs, n=n, replications=replications, seed=3, n_eval=300).run(
        progress=False)
    r = res.restrictiveness.squeeze("discrepancy")
    np.testing.assert_allclose(r.sel(procedure="CPT as NLS"), r.sel(procedure="CPT"), atol=1e-6)
    assert int(res.dataset["failed"].sum()) == 0


def test_cpt_as_a_formula_has_the_builtin_restrictiveness_in_a_study():
    _cpt_study_agreement(n=[50], replications=6)


@pytest.mark.slow
def test_cpt_as_a_formula_has_the_builtin_restrictiveness_in_a_full_study():
    _cpt_study_agreement(n=[50, 100, 200], replications=50)


# ---------------------------------------------------------------------------------------------
# estimation on data: standard errors against statsmodels and curve_fit
# ---------------------------------------------------------------------------------------------

def _lottery_frame(seed=21, n=400, clusters=40):
    rng = np.random.default_rng(seed)
    s = _lottery_sample(n, seed)
    model = rx.NLS(PRELEC, bounds=PRELEC_BOUNDS)
    y = model.values(model._design(s.X, s.columns), [0.6, 1.2])
    df = pd.DataFrame(s.X, columns=s.columns)
    df["ce"] = y + 0.02 * rng.standard_normal(n)
    df["id"] = rng.integers(0, clusters, n)
    return df


def test_standard_errors_match_statsmodels_on_the_jacobian_and_curve_fit():
    df = _lottery_frame()
    est = rx.NLS.from_formula(PRELEC, df, bounds=PRELEC_BOUNDS)
    res = est.fit()
    assert res.at_bound == [] and res.converged
    f, J = est.model.values(est.design, res.params.to_numpy(), jacobian=True)
    e = df["ce"].to_numpy() - f
    lin = sm.OLS(e, J)                # at an interior optimum the OLS coefficients are ~0
    assert np.abs(lin.fit().params).max() < 1e-8
    np.testing.assert_allclose(res.bse, lin.fit().bse, rtol=1e-9)
    np.testing.assert_allclose(est.fit("HC1").bse, lin.fit(cov_type="HC1").bse, rtol=1e-9)
    clustered = est.fit("cluster", groups="id")
    np.testing.assert_allclose(clustered.bse, lin.fit(cov_type="cluster", cov_kwds={
        "groups": df["id"].to_numpy()}).bse, rtol=1e-9)
    assert clustered.n_clusters == df["id"].nunique()
    assert clustered.df_inference == clustered.n_clusters - 1
    # curve_fit with numerical derivatives: its own optimum and covariance
    popt, pcov = scipy.optimize.curve_fit(
        lambda X, a, b: X[:, 1] + (X[:, 0] - X[:, 1]) * np.exp(-b * (-np.log(X[:, 2])) ** a),
        df[["z_hi", "z_lo", "p"]].to_numpy(), df["ce"].to_numpy(), p0=[1.0, 1.0],
        bounds=([0.05, 0.05], [2.0, 5.0]), xtol=1e-15, ftol=1e-15, gtol=1e-15)
    np.testing.assert_allclose(res.params, popt, rtol=1e-6)
    np.testing.assert_allclose(res.bse, np.sqrt(np.diag(pcov)), rtol=1e-5)
    # t inference with N - k degrees of freedom
    from scipy import stats
    t = res.params / res.bse
    np.testing.assert_allclose(res.pvalues, 2 * stats.t.sf(np.abs(t), len(df) - 2))
    ci = res.conf_int(0.1)
    q = stats.t.ppf(0.95, len(df) - 2)
    np.testing.assert_allclose(ci["upper"], res.params + q * res.bse)
    assert list(res.cov_params().index) == ["alpha", "beta"]


def test_results_summary_predict_and_dataframe_fit():
    df = _lottery_frame(seed=22)
    res = rx.NLS(PRELEC, bounds=PRELEC_BOUNDS).fit(df, cov_type="cluster", groups="id")
    assert isinstance(res, rx.NLSResults)
    text = res.summary().as_text()
    for token in ("NLS Estimation Results", "alpha", "beta", "Clustered", "No. Clusters",
                  "G - 1", "converged"):
        assert token in text
    assert "\\begin{tabular}" in res.summary().as_latex()
    np.testing.assert_allclose(res.predict(df.iloc[:5]), res.fittedvalues[:5], rtol=1e-14)
    with pytest.raises(ConfigurationError, match="groups"):
        rx.NLS.from_formula(PRELEC, df, bounds=PRELEC_BOUNDS).fit(cov_type="cluster")
    with pytest.raises(ConfigurationError, match="cov_type"):
        rx.NLS.from_formula(PRELEC, df, bounds=PRELEC_BOUNDS).fit(cov_type="HC3")
    with pytest.raises(DataError, match="more observations"):
        rx.NLS.from_formula(PRELEC, df.iloc[:2], bounds=PRELEC_BOUNDS).fit()
    with pytest.raises(DataError, match="missing values"):
        rx.NLS.from_formula(PRELEC, df.assign(p=np.nan), bounds=PRELEC_BOUNDS)


# ---------------------------------------------------------------------------------------------
# function models
# ---------------------------------------------------------------------------------------------

def prelec(d, alpha, beta):
    return d["z_lo"] + (d["z_hi"] - d["z_lo"]) * np.exp(-beta * (-np.log(d["p"])) ** alpha)


def prelec_jac(d, alpha, beta):
    m = -np.log(d["p"])
    w = np.exp(-beta * m ** alpha)
    spread = d["z_hi"] - d["z_lo"]
    return np.column_stack([spread * w * (-beta * m ** alpha * np.log(m)),
                            spread * w * -m ** alpha])


@pytest.mark.parametrize("jac", [prelec_jac, None], ids=["analytic", "finite-differences"])
def test_function_models_match_the_formula(jac):
    df = _lottery_frame(seed=23, n=200)
    formula = rx.NLS.from_formula(PRELEC, df, bounds=PRELEC_BOUNDS).fit("HC1")
    model = rx.NLS(prelec, bounds=PRELEC_BOUNDS, jac=jac, response="ce")
    assert model.params == ("alpha", "beta")
    res = model.fit(df, cov_type="HC1")
    np.testing.assert_allclose(res.params, formula.params, rtol=1e-7)
    np.testing.assert_allclose(res.bse, formula.bse, rtol=1e-9 if jac else 1e-5)
    s = rx.Sample(df[["z_hi", "z_lo", "p"]].to_numpy(), df["ce"].to_numpy(),
                  ("z_hi", "z_lo", "p"), "ce")
    fit = model.fit(s)
    np.testing.assert_allclose(fit.predict(s.X[:3]), formula.fittedvalues[:3], rtol=1e-7)
    assert "tests.test_nls.prelec" in repr(model) or "test_nls.prelec" in repr(model)


def prelec_vector(X, theta):
    """The same model, called with the data and the parameter vector."""
    alpha, beta = theta
    return X["z_lo"] + (X["z_hi"] - X["z_lo"]) * np.exp(-beta * (-np.log(X["p"])) ** alpha)


def test_function_models_taking_a_parameter_vector():
    df = _lottery_frame(seed=24, n=150)
    formula = rx.NLS.from_formula(PRELEC, df, bounds=PRELEC_BOUNDS).fit()
    model = rx.NLS(prelec_vector, params=["alpha", "beta"], bounds=PRELEC_BOUNDS,
                   response="ce")
    res = model.fit(df)
    np.testing.assert_allclose(res.params, formula.params, rtol=1e-7)
    np.testing.assert_allclose(res.bse, formula.bse, rtol=1e-5)
    with pytest.raises(ConfigurationError, match="response="):
        rx.NLS(prelec_vector, params=["alpha", "beta"], bounds=PRELEC_BOUNDS).fit(df)


def test_a_function_whose_arguments_cannot_take_the_parameters_is_refused():
    """f(data, a) with params=["a", "b"] was called f(data, theta), the vector as a, and
    failed inside the fit with numpy's "operands could not be broadcast together"; f(data, p,
    q) with params=["a", "b"] with "missing 1 required positional argument"."""
    df = _lottery_frame(seed=24, n=60)
    for function, names in ((lambda d, alpha: d["z_lo"] * alpha, "['alpha'] but not ['beta']"),
                            (lambda d, a, b: d["z_lo"] * a * b, "['a', 'b'] but not "
                                                                "['alpha', 'beta']")):
        with pytest.raises(ConfigurationError, match=re.escape(
                f"cannot take the parameters ['alpha', 'beta']: it names {names}; give params= "
                "its argument names")):
            rx.NLS(function, params=["alpha", "beta"], bounds=PRELEC_BOUNDS, response="ce")
    with pytest.raises(ConfigurationError, match=r"the jac .* names \['alpha'\] but not"):
        rx.NLS(prelec, bounds=PRELEC_BOUNDS, jac=lambda d, alpha: None, response="ce")
    # what each form means is still read: by name (defaults allowed), or one vector
    formula = rx.NLS.from_formula(PRELEC, df, bounds=PRELEC_BOUNDS).fit()
    for function in (lambda d, alpha, beta, unit=1.0: unit * prelec(d, alpha, beta),
                     lambda d, theta, unit=1.0: unit * prelec_vector(d, theta)):
        res = rx.NLS(function, params=["alpha", "beta"], bounds=PRELEC_BOUNDS,
                     response="ce").fit(df)
        np.testing.assert_allclose(res.params, formula.params, rtol=1e-7)


def test_a_function_model_does_not_see_the_response_in_estimation():
    """The function received every numeric column, the response too: a * data["ce"] fitted it
    exactly (a = 1, SSR 0, R² = 1), silently; a formula naming the response is refused."""
    df = _lottery_frame(seed=26, n=80)
    seen = []

    def peeks(data, a):
        seen.append(list(data.columns))
        return a * data["ce"]

    with pytest.raises(rx.ModelFunctionError, match="raised KeyError: 'ce'"):
        rx.NLS(peeks, bounds={"a": (0, 5)}, response="ce").fit(df)
    assert seen[0] == [c for c in df.columns if c != "ce"]
    # the covariates are all there: the same fit as the formula's
    formula = rx.NLS.from_formula(PRELEC, df, bounds=PRELEC_BOUNDS).fit()
    res = rx.NLS(prelec, bounds=PRELEC_BOUNDS, response="ce").fit(df)
    np.testing.assert_allclose(res.params, formula.params, rtol=1e-7)
    np.testing.assert_allclose(res.ssr, formula.ssr, rtol=1e-12)


def test_an_error_in_a_model_function_is_wrapped_with_its_context():
    """An exception of the user's function (or jac) is a ModelFunctionError naming the
    function, its role and the parameters, with the original as __cause__; before, the bare
    ZeroDivisionError came out of the optimiser with nothing saying which function or where."""
    df = _lottery_frame(seed=25, n=40)

    def fragile(data, alpha, beta):
        if alpha > 1.5:
            raise ZeroDivisionError("alpha above 1.5")
        return prelec(data, alpha, beta)

    def broken_jac(data, alpha, beta):
        raise KeyError("dprelec")

    with pytest.raises(rx.ModelFunctionError,
                       match=r"NLS: the model function .*fragile raised ZeroDivisionError: alpha "
                             r"above 1\.5, at parameters \{'alpha': [0-9.]+, 'beta': ") as info:
        rx.NLS(fragile, bounds=PRELEC_BOUNDS, response="ce").fit(df)
    assert isinstance(info.value.__cause__, ZeroDivisionError)
    assert str(info.value.__cause__) == "alpha above 1.5"
    with pytest.raises(rx.ModelFunctionError,
                       match=r"NLS: the jac .*broken_jac raised KeyError: 'dprelec', at "
                             r"parameters \{'alpha': 1\.0, 'beta': 2\.0\}") as info:
        rx.NLS(prelec, bounds=PRELEC_BOUNDS, jac=broken_jac, response="ce").values(
            df, [1.0, 2.0], jacobian=True)
    assert isinstance(info.value.__cause__, KeyError)


@pytest.mark.parametrize("signal", [KeyboardInterrupt, SystemExit])
def test_interrupts_in_a_model_function_pass_through_unwrapped(signal):
    def interrupted(data, alpha, beta):
        raise signal()

    with pytest.raises(signal) as info:
        rx.NLS(interrupted, bounds=PRELEC_BOUNDS, response="ce").fit(_lottery_frame(seed=26))
    assert info.type is signal and info.value.__cause__ is None


# ---------------------------------------------------------------------------------------------
# as a procedure
# ---------------------------------------------------------------------------------------------

def test_procedure_protocol_pickling_and_records():
    model = pickle.loads(pickle.dumps(rx.NLS(PRELEC, bounds=PRELEC_BOUNDS)))
    s = _lottery_sample(60, 8)
    fit = model.fit(s, np.random.default_rng(0))
    again = model.fit(s, np.random.default_rng(99))          # deterministic: rng unused
    assert fit.params == again.params
    info = fit.info
    assert info["screened"] == 128 + 4 * 32 + 4       # interior, four faces, four corners
    assert info["evaluations"] > info["screened"] and len(info["starts"]) >= 5
    assert info["underdetermined"] is False and info["converged"] is True
    assert min(r[4] for r in info["starts"]) == pytest.approx(fit.ssr)
    # columns are found by name: permuted columns give the same fit and predictions
    perm = [2, 0, 1]
    s2 = rx.Sample(s.X[:, perm], s.y, tuple(s.columns[i] for i in perm), "ce")
    fit2 = model.fit(s2)
    assert fit2.params == pytest.approx(fit.params, rel=1e-12)
    np.testing.assert_allclose(fit2.predict(s2.X), fit.predict(s.X), rtol=1e-12)
    # fewer observations than parameters: still a least-squares rule, flagged
    tiny = model.fit(rx.Sample(s.X[:1], s.y[:1], s.columns, "ce"))
    assert tiny.info["underdetermined"] and tiny.ssr < 1e-20


def test_in_a_study_and_quick_check():
    F = rx.EligibleSet(rx.Box(x=(0, 1)), rx.Increasing("x"), rx.Between(0, 1))
    prior = rx.MonotoneGP(F, n_eval=100)
    logistic = rx.NLS("y ~ 1 / (1 + exp(-b * (x - c)))", bounds={"b": (0.1, 50), "c": (-1, 2)})
    res = rx.quick_check({"logistic": logistic, "linear": "y ~ x"}, prior, n=[20],
                         replications=6, progress=False)
    r = res.restrictiveness.squeeze()
    assert 0 < float(r.sel(procedure="logistic")) < 1.2
    serial = rx.Study(prior, {"logistic": logistic}, rx.Constant(), n=[20], replications=4,
                      seed=2).run(progress=False)
    parallel = rx.Study(prior, {"logistic": logistic}, rx.Constant(), n=[20], replications=4,
                        seed=2).run(n_jobs=2, progress=False)
    np.testing.assert_array_equal(serial.dataset["loss"], parallel.dataset["loss"])
    with pytest.raises(FormulaError, match="'z' is neither"):
        rx.Study(prior, {"bad": rx.NLS("y ~ b * z", bounds={"b": (0, 1)})}, rx.Constant(),
                 n=[20], replications=2)


@pytest.mark.parametrize("cov_type", ["nonrobust", "HC1", "cluster"])
def test_inference_equals_statsmodels_ols_on_a_linear_model(cov_type):
    """A linear formula is its own linearisation: params, bse, t-based p-values, conf_int(alpha)
    and R² equal statsmodels' OLS with ``use_t=True`` (df N − k, or G − 1 with clusters)."""
    rng = np.random.default_rng(5)
    df = pd.DataFrame({"x": rng.random(60), "g": rng.integers(0, 7, 60)})
    df["y"] = 0.1 + 0.3 * df["x"] + 0.3 * rng.standard_normal(60)
    est = rx.NLS.from_formula("y ~ a + b * x", df, bounds={"a": (-10, 10), "b": (-10, 10)})
    kw = {"groups": "g"} if cov_type == "cluster" else {}
    res = est.fit(cov_type, **kw)
    sm_kw = {"cov_kwds": {"groups": df["g"].to_numpy()}} if cov_type == "cluster" else {}
    ols = sm.OLS(df["y"], sm.add_constant(df["x"])).fit(cov_type=cov_type, use_t=True, **sm_kw)
    np.testing.assert_allclose(res.params, ols.params, rtol=1e-8)
    np.testing.assert_allclose(res.bse, ols.bse, rtol=1e-8)
    assert 1e-4 < ols.pvalues.min() and ols.pvalues.max() < 0.9  # p-values of moderate size
    np.testing.assert_allclose(res.pvalues, ols.pvalues, rtol=1e-7)
    for alpha in (0.1, 0.05, 0.01):
        np.testing.assert_allclose(res.conf_int(alpha).to_numpy(),
                                   ols.conf_int(alpha).to_numpy(), rtol=1e-8)
    assert res.rsquared == pytest.approx(ols.rsquared, rel=1e-10)
    assert res.df_inference == (df["g"].nunique() - 1 if cov_type == "cluster" else 58)


@pytest.mark.parametrize("spread", [3e-7, 1e-7])
def test_standard_errors_of_a_nearly_collinear_model_equal_statsmodels(spread):
    """(JᵀJ)⁺ was computed as pinv(JᵀJ), which squares J's condition number and cuts its
    singular values below 3e-8 of the largest: on x2 = x1 + spread·z (cond(J) 1e7 and 3e7) the
    standard errors were 0.6% and 5.9% below statsmodels' OLS (42,262 for 42,522; 120,043 for
    127,565), and beyond a condition number of 3e7 a direction the data barely inform was
    dropped, leaving small finite standard errors. They now come from J's own SVD."""
    rng = np.random.default_rng(0)
    x1 = rng.uniform(1, 2, 60)
    x2, u = x1 + spread * rng.standard_normal(60), rng.standard_normal(60)
    df = pd.DataFrame({"x1": x1, "x2": x2, "y": x1 + 2 * x2 + 0.1 * u})
    res = rx.NLS.from_formula("y ~ a * x1 + b * x2", df,
                              bounds={"a": (-1e12, 1e12), "b": (-1e12, 1e12)}).fit()
    ols = sm.OLS(df["y"], df[["x1", "x2"]]).fit()
    assert res.ssr == pytest.approx(ols.ssr, rel=1e-6)   # the fit reaches the optimum
    assert np.linalg.cond(df[["x1", "x2"]]) == pytest.approx(3e-7 / spread * 1.01e7, rel=0.02)
    np.testing.assert_allclose(res.bse, ols.bse, rtol=1e-6)


def _decay(data, a, b):
    return a * np.exp(-b * data["x"])


#: Noise-free data from ``_decay`` with a = 2, b = 0.7 (the jac-check tests).
DECAY_X = np.linspace(0, 3, 30)
DECAY = rx.Sample(DECAY_X[:, None], 2 * np.exp(-0.7 * DECAY_X), ("x",))


def test_a_jac_that_is_not_the_derivative_is_refused():
    """Before: the fitter trusted a wrong jac and stopped at a wrong point without a word
    (here a = 2.169, b = 0.799, "converged", on noise-free data from a = 2, b = 0.7)."""
    sample, model = DECAY, _decay

    def jac(data, a, b):
        e = np.exp(-b * data["x"])
        return np.column_stack([e, -a * data["x"] * e])

    def wrong(data, a, b):  # e.g. the sign of the b column lost
        e = np.exp(-b * data["x"])
        return np.column_stack([e, a * data["x"] * e])

    bounds = {"a": (0, 10), "b": (0.01, 5)}
    fit = rx.NLS(model, bounds=bounds, jac=jac, response="y").fit(sample)
    assert fit.params == pytest.approx({"a": 2.0, "b": 0.7}, rel=1e-9)
    with pytest.raises(ConfigurationError, match=r"NLS: jac .*wrong is not the derivative of "
                                                 r"the model function for \['b'\]"):
        rx.NLS(model, bounds=bounds, jac=wrong, response="y").fit(sample)


def test_an_exact_jac_is_kept_when_the_differences_round():
    """A large level with a small slope (y = 1e6 + b x^3 on x <= 0.1): the central differences
    round off by about eps |f| / h = 4e-5 against a derivative of at most 1e-3, and an exact
    jac was refused as 'not the derivative'. The fit now uses it and equals the fit without."""
    x = np.linspace(0, 0.1, 25)
    sample = rx.Sample(x[:, None], 1e6 + 0.5 * x ** 3, ("x",))

    def model(data, a, b):
        return a + b * data["x"] ** 3

    def jac(data, a, b):
        return np.column_stack([np.ones_like(data["x"]), data["x"] ** 3])

    bounds = {"a": (0, 1e7), "b": (-10, 10)}
    with warnings.catch_warnings():
        # a on a linear scale near 1e6 gave "overflow encountered in exp" in every fit
        warnings.simplefilter("error", RuntimeWarning)
        with_jac = rx.NLS(model, bounds=bounds, jac=jac, response="y").fit(sample)
        without = rx.NLS(model, bounds=bounds, response="y").fit(sample)
    assert with_jac.params["b"] == pytest.approx(0.5, rel=1e-4)
    assert with_jac.params["b"] == pytest.approx(without.params["b"], rel=1e-4)


def test_a_jac_a_few_percent_off_is_refused():
    """A jac 5% off in one column still leads the search to the optimum (the normal equations
    hold whatever a column's scale), so the estimate looks right; its standard errors would
    be 5% off. It is refused."""
    sample, model = DECAY, _decay

    def off(data, a, b):
        e = np.exp(-b * data["x"])
        return np.column_stack([e, -1.05 * a * data["x"] * e])

    with pytest.raises(ConfigurationError, match=r"jac .*off is not the derivative of the "
                                                 r"model function for \['b'\]"):
        rx.NLS(model, bounds={"a": (0, 10), "b": (0.01, 5)}, jac=off, response="y").fit(sample)


def test_a_function_model_on_a_bound_has_the_formulas_standard_errors():
    """On a bound the finite differences are one-sided (the model may not exist beyond it),
    over the step actually taken; the formula's derivatives are exact. Here a's optimum
    (about 2) lies beyond its upper bound 1.5."""
    x = np.linspace(0, 3, 40)
    df = pd.DataFrame({"x": x, "y": 2 * np.exp(-0.7 * x) + 0.02 * np.cos(7 * x)})
    bounds = {"a": (0, 1.5), "b": (0.01, 5)}

    def model(data, a, b):
        return a * np.exp(-b * data["x"])

    formula = rx.NLS.from_formula("y ~ a * exp(-b * x)", df, bounds=bounds).fit("HC1")
    function = rx.NLS(model, bounds=bounds, response="y").fit(df, cov_type="HC1")
    assert formula.params["a"] == function.params["a"] == 1.5
    np.testing.assert_allclose(function.params, formula.params, rtol=1e-8)
    np.testing.assert_allclose(function.bse, formula.bse, rtol=1e-4)


def test_an_estimate_on_a_log_scale_lower_bound_is_the_bound_exactly():
    """b in (0.01, 5) is searched on the log scale; data that grow put its optimum below 0.01.
    The estimate is 0.01 itself, not exp(log 0.01) = 0.010000000000000004, an ulp above the
    bound (which then reads as inside the box)."""
    x = np.linspace(0, 3, 30)
    sample = rx.Sample(x[:, None], 2 * np.exp(0.3 * x), ("x",))

    def model(data, a, b):
        return a * np.exp(-b * data["x"])

    bounds = {"a": (0, 10), "b": (0.01, 5)}
    for nls in (rx.NLS("y ~ a * exp(-b * x)", bounds=bounds),
                rx.NLS(model, bounds=bounds, response="y")):
        assert nls.logscale.tolist() == [0, 1]
        fit = nls.fit(sample)
        assert fit.params["b"] == 0.01 and fit.info["at_bound"] == ["b"]


# ---------------------------------------------------------------------------------------------
# inputs that cannot be honoured are refused, not converted
# ---------------------------------------------------------------------------------------------

def test_non_numeric_data_columns_are_refused_not_converted():
    """Strings that look like numbers and numeric categories were read as numbers: a
    categorical column of rounded values was fitted on its category values, silently."""
    x = np.linspace(1, 3, 12)
    df = pd.DataFrame({"x": x, "y": 2.0 * x})
    bounds = {"b": (0, 5)}
    est = rx.NLS.from_formula("y ~ b * x", df, bounds=bounds).fit()
    assert est.params["b"] == pytest.approx(2.0, rel=1e-10)
    for bad in (df.x.astype(str), pd.Series(pd.Categorical(df.x))):
        with pytest.raises(DataError, match="column 'x' is not numeric"):
            rx.NLS.from_formula("y ~ b * x", df.assign(x=bad), bounds=bounds)
        with pytest.raises(DataError, match="column 'x' is not numeric"):
            est.predict(pd.DataFrame({"x": bad.iloc[:2]}))
    with pytest.raises(DataError, match="column 'y' is not numeric"):
        rx.NLS.from_formula("y ~ b * x", df.assign(y=df.y.astype(str)), bounds=bounds)
    # integers and booleans are numbers
    flags = pd.DataFrame({"d": [True, False, True, False], "y": [3.0, 1.0, 3.0, 1.0]})
    res = rx.NLS.from_formula("y ~ a + b * d", flags, bounds={"a": (-5, 5), "b": (-5, 5)}).fit()
    np.testing.assert_allclose(res.params, [1.0, 2.0], atol=1e-9)


@pytest.mark.parametrize("bounds", [{"b": "05"}, [(0, 5)], "b05"])
def test_bounds_that_are_not_pairs_in_a_mapping_are_refused(bounds):
    """bounds={"b": "05"} was read as the box (0, 5); a list of bare pairs gave a message about
    parameter names."""
    with pytest.raises(ConfigurationError, match="bounds"):
        rx.NLS("y ~ b * x", bounds=bounds)


def test_bounds_given_as_name_pairs_are_the_mapping_they_list():
    listed = rx.NLS("y ~ a + b * x", bounds=[("a", (-1, 1)), ("b", (0, 5))])
    assert listed.bounds == rx.NLS("y ~ a + b * x", bounds={"a": (-1, 1), "b": (0, 5)}).bounds


@pytest.mark.parametrize("output", [["1.0"] * 8, None, np.ones(8) * (1 + 1j)])
def test_a_model_function_returning_other_than_real_numbers_is_refused(output):
    """Strings crashed with a bare ValueError, None became one NaN ('returned 1 predictions')
    and complex values lost their imaginary part, silently."""
    df = pd.DataFrame({"x": np.linspace(0, 1, 8), "y": np.linspace(1, 2, 8)})

    def model(data, b):
        return output

    with pytest.raises(rx.ModelFunctionError, match="must return real numbers"):
        rx.NLS(model, bounds={"b": (0, 1)}, response="y").fit(df)


@pytest.mark.parametrize("copy_on_write", [True, False])  # False: pandas 2.x's shallow copy
@pytest.mark.parametrize("write", ["column", "loc"])
def test_a_model_function_that_transforms_its_data_in_place_sees_the_data_each_call(
        write, copy_on_write, monkeypatch):
    """data["x"] = np.log(data["x"]) inside the function changed the frame every later call
    received: the fit failed ('not finite at any screening point') or, for a transform that
    stays finite, went wrong silently. Under pandas 2.x a shallow copy did not protect a
    write through .loc (the fit gave a = 1.88, b = 1 for a truth of 0.7, 0.2)."""
    from restrictiveness.procedures import nls

    monkeypatch.setattr(nls, "_COPY_ON_WRITE", copy_on_write and nls._COPY_ON_WRITE)
    x = np.linspace(1, 3, 20)
    df = pd.DataFrame({"x": x, "y": 2 * np.log(x) + 1})
    seen = []

    def shifted(data, a, b):
        seen.append(np.shares_memory(data["x"].to_numpy(), df["x"].to_numpy()))
        if write == "column":   # the user's transform, in place
            data["x"] = data["x"] + 1.0
        else:
            data.loc[:, "x"] += 1.0
        return a * np.log(data["x"].to_numpy()) + b

    res = rx.NLS(shifted, bounds={"a": (0, 5), "b": (-5, 5)}, response="y").fit(df)
    expected = np.linalg.lstsq(np.column_stack([np.log(x + 1), np.ones(20)]), df.y,
                               rcond=None)[0]
    np.testing.assert_allclose(res.params, expected, rtol=1e-7)
    assert df.x.tolist() == x.tolist()
    if not nls._COPY_ON_WRITE:  # without copy-on-write, each call had its own copy
        assert not any(seen)


def test_the_response_on_the_right_hand_side_is_refused():
    """y ~ a * y + b fitted the response on itself (a = 1, b = 0, SSR 0), silently; so did a
    patsy formula y ~ y + x."""
    with pytest.raises(FormulaError, match="'y' also appears on the right-hand side"):
        rx.NLS("y ~ a * y + b", bounds={"a": (0, 2), "b": (-1, 1)})
    with pytest.raises(FormulaError, match="'y' also appears on the right-hand side"):
        rx.OLS("y ~ y + x")
    with pytest.raises(FormulaError, match="'y' is also a parameter"):
        rx.NLS("y ~ y * x", bounds={"y": (0, 2)})


def test_a_column_named_like_a_constant_is_refused_not_replaced_by_it():
    """A data column 'pi' (a probability, a profit) in 'y ~ a * pi' was read as 3.14159...: the
    fit of y = 3 pi gave a = 0.503 (the mean of 3 pi / 3.14159 by least squares), without a
    word, on data, in studies and on samples. A parameter named pi is the parameter."""
    pi = np.random.default_rng(0).uniform(0, 1, 50)
    df = pd.DataFrame({"pi": pi, "y": 3 * pi})
    with pytest.raises(FormulaError, match=r"\['pi'\] name both a data column and a constant"):
        rx.NLS.from_formula("y ~ a * pi", df, bounds={"a": (-10, 10)})
    with pytest.raises(FormulaError, match="name both a data column and a constant"):
        rx.NLS("y ~ a * pi", bounds={"a": (-10, 10)}).fit(rx.Sample(pi[:, None], 3 * pi, ("pi",)))
    with pytest.raises(FormulaError, match="name both a data column and a constant"):
        rx.NLS("y ~ a * sin(pi * x) + pi", bounds={"a": (-1, 1)}).validate(["x", "pi"], "y")
    # the constant where no column has its name, the parameter where one is declared
    x = np.linspace(0, 1, 20)
    fit = rx.NLS("y ~ a * sin(pi * x)", bounds={"a": (-5, 5)}).fit(
        rx.Sample(x[:, None], 2 * np.sin(np.pi * x), ("x",)))
    assert fit.params["a"] == pytest.approx(2.0, rel=1e-9)
    res = rx.NLS.from_formula("y ~ pi * x", df.rename(columns={"pi": "x"}),
                              bounds={"pi": (-10, 10)}).fit()
    assert res.params["pi"] == pytest.approx(3.0, rel=1e-9)


def test_clusters_on_data_without_rows_are_refused_by_name():
    """cov_type='cluster' on an empty frame was numpy's 'zero-size array to reduction'."""
    df = pd.DataFrame({"x": [0.0, 1.0, 2.0, 3.0], "y": [1.0, 3.0, 5.0, 8.0]}).iloc[:0]
    with pytest.raises(DataError, match="at least two clusters"):
        rx.NLS.from_formula("y ~ a + b * x", df, bounds={"a": (-9, 9), "b": (-9, 9)}).fit(
            cov_type="cluster", groups=[])
    with pytest.raises(DataError, match="at least two clusters"):
        rx.OLS("y ~ x").fit(df, cov_type="cluster", groups=[])


def test_a_function_model_failing_on_missing_values_names_them():
    """A function model fitted on data with NaN in a covariate failed with 'check the formula's
    domain', which sent the user looking at the model rather than at the data."""
    x = np.linspace(0.1, 3, 30)
    df = pd.DataFrame({"x": x, "y": 2 * np.exp(-0.7 * x)})
    df.loc[2, "x"] = np.nan

    def model(data, a, b):
        return a * np.exp(-b * data["x"].to_numpy())

    with pytest.raises(DataError, match=r"missing values \(NaN\) in \['x'\]"):
        rx.NLS(model, bounds={"a": (0, 10), "b": (0.01, 5)}, response="y").fit(df)


def test_an_infinite_derivative_on_the_box_does_not_end_the_fit_or_fake_a_standard_error():
    """sqrt(a) with a in (0, 4): at the corner a = 0 the compiled Jacobian divided by zero and
    numba raised ZeroDivisionError, ending every fit; at an estimate a = 0 the infinite
    derivative gave a standard error of exactly 0 (one parameter) or NaN for all of them."""
    x = np.linspace(0.1, 3, 30)
    df = pd.DataFrame({"x": x, "y": 0.5 - 0.1 * x + 0.01 * np.sin(7 * x)})
    with pytest.warns(RuntimeWarning, match=r"not finite at the estimate for \['a'\]"):
        res = rx.NLS.from_formula("y ~ sqrt(a) * x + b", df,
                                  bounds={"a": (0, 4), "b": (-2, 2)}).fit()
        bse = res.bse
    # decreasing data: the best a is its bound 0, and b is then the mean
    assert res.params["a"] == 0.0 and res.at_bound == ["a"]
    assert res.params["b"] == pytest.approx(df.y.mean(), rel=1e-9)
    assert np.isnan(bse["a"])
    # b's standard error with a held at its bound: s / sqrt(N), s² = SSR / (N - k)
    assert bse["b"] == pytest.approx(np.sqrt(res.ssr / 28 / 30), rel=1e-10)
    # a rising sample puts a inside the box: sqrt(a) = 0.3 recovered
    rising = rx.NLS.from_formula("y ~ sqrt(a) * x + b", df.assign(y=0.5 + 0.3 * x),
                                 bounds={"a": (0, 4), "b": (-2, 2)}).fit()
    np.testing.assert_allclose(rising.params, [0.09, 0.5], rtol=1e-9)


def test_a_refinement_that_says_converged_is_at_a_stationary_point_of_a_badly_scaled_model():
    # y = a e^{bx} + c with x in the thousands and a on the linear scale: cond(J) reaches 1e30
    # along the way. The LM's scaling D² (the largest diag(JᵀJ) seen) kept the Jacobian of the
    # start, where a e^{bx} was 1e17 times larger, so every later step was damped to nothing
    # and the step test reported convergence at up to 1e25 times scipy's objective, with the
    # residuals still along a Jacobian column (cosine 0.9999). Each start's refinement (what
    # rx.NLS runs from every start it chooses) against scipy's trf from the same start.
    import functools

    from restrictiveness.shared._lsq_nb import CONVERGED, STATIONARY
    from restrictiveness.shared._multistart_nb import multistart_for
    from restrictiveness.shared.expression import callback_type

    rng = np.random.default_rng(0)
    x = np.linspace(1000, 5000, 60)
    y = 0.05 * np.exp(1e-3 * x) + 3 + rng.normal(0, 0.5, x.size)
    bounds = {"a": (1e-6, 1e3), "b": (-0.01, 0.01), "c": (-100.0, 100.0)}
    model = rx.NLS("y ~ a * exp(b * x) + c", bounds=bounds, scale={"a": "linear"})
    refine = functools.partial(multistart_for(callback_type()),
                               compile_expression(model._formula).resjac)
    lo, hi = model._box()
    stalled = 0
    for start in lo + rng.random((40, 3)) * (hi - lo):
        _, ssr, rec, _ = refine((x[:, None], y, model.logscale), start[None, :],
                                np.zeros(1, np.int64), lo, hi, np.ones(3, np.int64),
                                np.zeros(3, np.int64), 1, 0.1,
                                model.max_nfev, model.gtol, model.xtol, model.ftol)
        status, optimality = int(rec[0, 8]), rec[0, 9]
        ref = scipy.optimize.least_squares(
            lambda t: t[0] * np.exp(t[1] * x) + t[2] - y, start, bounds=(lo, hi), method="trf",
            x_scale="jac", xtol=1e-15, ftol=1e-15, gtol=1e-15, max_nfev=10_000)
        if status in CONVERGED:
            assert optimality <= STATIONARY, (start, status, optimality)
        if ssr > 2 * ref.cost * (1 + 1e-6):
            stalled += 1
    # the objective's optimum (14.564) from every start but local optima at a's bound
    assert stalled <= 2


@pytest.mark.parametrize("start, message", [
    ({"a": 1.0}, r"start must give every parameter \['a', 'b'\]: missing \['b'\]"),
    ({"a": 1.0, "b": 0.5, "c": 1.0}, r"unknown \['c'\]"),
    ({"a": 1.0, "b": 9.0}, r"start\['b'\] = 9.0 is outside its bounds \(0.01, 5.0\)"),
    ({"a": "x", "b": 0.5}, r"start\['a'\] must be a number, got 'x'"),
    ({"a": float("nan"), "b": 0.5}, r"start\['a'\] = nan is outside its bounds"),
    ("a=1", r"start must be a mapping"),
    ([], r"start must be a mapping .* got \[\]"),  # an empty list: no start, silently
])
def test_a_start_must_name_every_parameter_inside_its_bounds(start, message):
    with pytest.raises(rx.ConfigurationError, match=message):
        rx.NLS("y ~ a * exp(-b * x)", bounds={"a": (0, 10), "b": (0.01, 5)}, start=start)


def test_the_user_s_starts_are_refined_last_and_a_non_finite_one_refused():
    x = np.linspace(0, 3, 30)
    model = rx.NLS("y ~ a * exp(-b * x)", bounds={"a": (0, 10), "b": (0.01, 5)},
                   start=[{"a": 3.0, "b": 1.5}, {"a": 10.0, "b": 0.01}])
    fit = model.fit_arrays(x[:, None], 2 * np.exp(-0.7 * x), columns=["x"])
    assert [row[:2] for row in fit.info["starts"][-2:]] == [[3.0, 1.5], [10.0, 0.01]]
    assert fit.info["starts"][-2][2:4] == pytest.approx([2.0, 0.7], rel=1e-9)
    assert fit.info["screened"] == 262  # the doctest's 260 screening points and the two starts
    logs = rx.NLS("y ~ a * log(x - b)", bounds={"a": (0, 10), "b": (-5, 5)},
                  start={"a": 1.0, "b": 2.0})
    with pytest.raises(rx.DataError, match=r"not finite at start \{'a': 1.0, 'b': 2.0\}"):
        logs.fit_arrays(x[:, None] + 1, x, columns=["x"])


def test_an_amplitude_searched_on_the_log_scale_is_projected_in_its_natural_scale():
    # a in (0.01, 100) is searched on the log scale: the screening's best point, where the
    # first refinement starts, has the least-squares amplitude given its rate b₀,
    # Σ y e^{−b₀x} / Σ e^{−2b₀x}, not a least-squares step in log a
    x = np.linspace(0, 3, 30)
    y = 2 * np.exp(-0.7 * x) + 0.02 * np.cos(7 * x)
    model = rx.NLS("y ~ a * exp(-b * x)", bounds={"a": (0.01, 100), "b": (0.1, 5)})
    assert model.logscale.tolist() == [1, 0]
    a0, b0 = model.fit_arrays(x[:, None], y, columns=["x"]).info["starts"][0][:2]
    e = np.exp(-b0 * x)
    assert a0 == pytest.approx((e @ y) / (e @ e), rel=1e-12)


def test_an_optimum_the_user_s_start_reaches_wins_a_tie_to_rounding_but_not_a_worse_one():
    # two exponentials trade places: the screening reached the swapped optimum, whose SSR was
    # 5.6e-18 (3e-15 relative) below the one from the user's start, and won; the user's order
    # (b < d) is kept now, with its refinement's status
    rng = np.random.default_rng(0)
    x = np.linspace(0, 5, 40)
    y = 2 * np.exp(-0.5 * x) + np.exp(-2.0 * x) + 0.01 * rng.standard_normal(40)
    model = rx.NLS("y ~ a*exp(-b*x) + c*exp(-d*x)",
                   bounds={"a": (-5, 5), "b": (0.01, 5), "c": (-5, 5), "d": (0.01, 5)},
                   start={"a": 2.0, "b": 0.4, "c": 1.0, "d": 2.5})
    fit = model.fit_arrays(x[:, None], y, columns=["x"])
    rows = fit.info["starts"]
    swapped = [r for r in rows[:-1] if r[5] > r[7]]            # an end with b > d
    best_swapped = min(r[8] for r in swapped)
    assert 0 < rows[-1][8] - best_swapped <= 1e-14 * best_swapped
    assert fit.theta.tolist() == rows[-1][4:8] and fit.theta[1] < fit.theta[3]
    assert fit.info["status"] == rx.procedures.nls.STATUS[rows[-1][10]]
    # a start that reaches a worse local optimum (sin's other frequencies) does not win
    t = np.linspace(0, 10, 50)
    wave = rx.NLS("y ~ sin(b * x)", bounds={"b": (0.1, 5)}, start={"b": 4.0})
    fit = wave.fit_arrays(t[:, None], np.sin(1.3 * t), columns=["x"])
    assert fit.info["starts"][-1][2] > 1.0 and fit.theta[0] == pytest.approx(1.3, rel=1e-10)
