"""Sensitivity methods of Results (SPEC §4): comparison strings, bounds by n, contributions,
within-function averaging with NaN-padded draws, summary panels, dataset, CLI and plot."""

from __future__ import annotations

import sys

import matplotlib

matplotlib.use("Agg")

import numpy as np  # noqa: E402
import pytest  # noqa: E402
import xarray as xr  # noqa: E402

import restrictiveness as rx  # noqa: E402
from restrictiveness.cli import main  # noqa: E402
from restrictiveness.engine.results import Results, load  # noqa: E402
from restrictiveness.engine.sensitivity import (  # noqa: E402
    bounds,
    bounds_lp,
    critical_gamma,
    format_critical,
)
from restrictiveness.engine.sensitivity_results import _fmt, parse_comparison  # noqa: E402
from restrictiveness.lottery import (  # noqa: E402
    CONTRIBUTIONS,
    CPT_CONTRIBUTIONS,
    CPT_FULL,
    CPT_SUBMODELS,
)
from restrictiveness.shared.exceptions import ConfigurationError, DataError  # noqa: E402

CPT = [CPT_FULL, *CPT_SUBMODELS.values(), "CPT(delta)", "GP regression"]
NS = [50, 100, 200]


def _hand_results(rng, procedures=CPT, ns=NS, m=40, draws=None, factors=None):
    """Results built directly from a Dataset of random losses (two discrepancies)."""
    shape_b = (2, len(ns), m) + ((draws,) if draws else ())
    base = rng.exponential(size=shape_b) + 0.1
    if factors is None:
        factors = np.linspace(0.1, 0.9, len(procedures))
    loss = np.stack([f * base * rng.lognormal(0.0, 0.5, size=shape_b) for f in factors])
    coords = {"procedure": list(procedures), "discrepancy": ["mse", "mae"],
              "n": np.asarray(ns, dtype=np.int64), "replication": np.arange(m)}
    dims = ("discrepancy", "n", "replication")
    if draws:
        coords["draw"] = np.arange(draws)
        dims += ("draw",)
    ds = xr.Dataset({"loss": (("procedure",) + dims, loss), "baseline_loss": (dims, base)},
                    coords=coords, attrs={"baseline": "constant"})
    res = Results(ds)
    if all(p in procedures for p in (CPT_FULL, *CPT_SUBMODELS.values())):
        res = res.with_contributions(CPT_CONTRIBUTIONS)  # as rx.lottery.study does
    return res


def _r(res, label, disc="mse"):
    return res.restrictiveness.sel(procedure=label, discrepancy=disc).to_numpy()


@pytest.fixture(scope="module")
def cpt_res():
    return _hand_results(np.random.default_rng(0))


# ---------------------------------------------------------------------------- parsing


def test_parse_nested_parentheses_and_commas():
    procs = ["f(g(x,y),h)", "f(x)", "CPT(alpha,gamma,delta)", "CPT(delta)"]
    assert parse_comparison("f(g(x,y),h)-f(x)", procs) == {"f(g(x,y),h)": 1.0, "f(x)": -1.0}
    assert parse_comparison("CPT(delta)-CPT(alpha,gamma,delta)", procs) == {
        "CPT(delta)": 1.0, "CPT(alpha,gamma,delta)": -1.0}
    # Whitespace around terms and inside a label that still identifies it.
    assert parse_comparison(" CPT(alpha, gamma, delta) - CPT(delta) ", procs) == {
        "CPT(alpha,gamma,delta)": 1.0, "CPT(delta)": -1.0}
    assert parse_comparison("f(x)", procs) == {"f(x)": 1.0}


def test_parse_labels_with_hyphens_and_ambiguity():
    procs = ["GPT-4o", "GPT-4o-mini", "linear", "f(a-b)"]
    assert parse_comparison("GPT-4o-mini", procs) == {"GPT-4o-mini": 1.0}
    assert parse_comparison("GPT-4o-mini-linear", procs) == {"GPT-4o-mini": 1.0, "linear": -1.0}
    assert parse_comparison("GPT-4o-linear", procs) == {"GPT-4o": 1.0, "linear": -1.0}
    # A '-' inside parentheses never splits.
    assert parse_comparison("f(a-b)-linear", procs) == {"f(a-b)": 1.0, "linear": -1.0}
    with pytest.raises(ConfigurationError, match="ambiguous"):
        parse_comparison("A-B-C", ["A", "A-B", "B-C", "C"])


def test_parse_cpt_contributions():
    sub = CPT_SUBMODELS
    spec = CPT_CONTRIBUTIONS
    assert parse_comparison("C_alpha", CPT, spec) == {sub["alpha"]: 1.0, CPT_FULL: -1.0}
    assert parse_comparison("C_γ", CPT, spec) == {sub["gamma"]: 1.0, CPT_FULL: -1.0}
    # The full model cancels in a contrast of contributions.
    assert parse_comparison("C_delta-C_gamma", CPT, spec) == {"CPT(alpha,gamma)": 1.0,
                                                               "CPT(alpha,delta)": -1.0}
    assert parse_comparison("C_delta - GP regression", CPT, spec) == {
        "CPT(alpha,gamma)": 1.0, CPT_FULL: -1.0, "GP regression": -1.0}
    # Without a specification C_q is not a term: it is an unknown label.
    with pytest.raises(ConfigurationError, match=r"unknown procedure label\(s\) \['C_alpha'\]"):
        parse_comparison("C_alpha", CPT)


def test_contributions_of_any_nested_family():
    spec = rx.Contributions("M(a,b,c)", {"a": "M(b,c)", "b": "M(a,c)", "c": "M(a,b)"},
                            symbols={"β": "b"})
    labels = ["M(a,b,c)", "M(b,c)", "M(a,c)", "M(a,b)"]
    assert spec.report == ("C_a", "C_b", "C_c")
    assert parse_comparison("C_β-C_{c}", labels, spec) == {"M(a,c)": 1.0, "M(a,b)": -1.0}
    assert rx.Contributions.from_json(spec.to_json()) == spec
    with pytest.raises(ConfigurationError, match="unknown parameter"):
        rx.Contributions("M", {"a": "M0"}, symbols={"x": "z"})
    # C_q = r_{-q} - r_full: the full model as a submodel gave C_q = 0, one label for two
    # parameters C_a = C_b, silently
    with pytest.raises(ConfigurationError, match=r"the full model 'M\(a,b\)' is also given"):
        rx.Contributions("M(a,b)", {"a": "M(a,b)", "b": "M(a)"})
    with pytest.raises(ConfigurationError, match=r"\['M\(b\)'\] are given for more than one"):
        rx.Contributions("M(a,b)", {"a": "M(b)", "b": "M(b)"})


def test_parse_errors_name_the_problem():
    with pytest.raises(ConfigurationError, match=r"unknown procedure label\(s\) \['foo'\]"):
        parse_comparison("CPT(delta)-foo", CPT)
    with pytest.raises(ConfigurationError, match=r"\['bar', 'baz'\]"):
        parse_comparison("bar-CPT(delta)-baz", CPT)
    with pytest.raises(ConfigurationError, match=r"CPT\(alpha,gamma\)"):
        parse_comparison("C_delta", ["CPT(alpha,gamma,delta)", "linear"], CPT_CONTRIBUTIONS)
    with pytest.raises(ConfigurationError, match="cancels to zero"):
        parse_comparison("CPT(delta)-CPT(delta)", CPT)
    with pytest.raises(ConfigurationError, match="must be a string"):
        parse_comparison(3, CPT)


# ---------------------------------------------------------------------------- bounds


@pytest.mark.parametrize("comparison", ["CPT(delta)", "CPT(delta)-CPT(alpha,gamma,delta)",
                                        "C_delta-C_gamma", "GP regression-CPT(delta)"])
def test_gamma_one_is_the_point_estimate(cpt_res, comparison):
    w = parse_comparison(comparison, cpt_res.procedures, cpt_res.contribution_spec)
    expected = sum(c * _r(cpt_res, p) for p, c in w.items())
    tab = cpt_res.sensitivity(comparison, gamma=1.0)
    assert tab.index.tolist() == NS
    for col in ("estimate", "lower", "upper"):
        np.testing.assert_allclose(tab[col], expected, rtol=1e-12, atol=1e-15)


def test_bounds_at_gamma_one_are_the_estimate_to_the_bit():
    # "Γ = 1 returns the point estimate" and lower <= estimate <= upper, with no rounding
    # slack: the bounds were an ulp above the estimate column in most comparisons
    res = _hand_results(np.random.default_rng(5), m=97)
    for comp in ["CPT(delta)", "CPT(delta)-CPT(alpha,gamma,delta)", "C_delta-C_gamma",
                 "GP regression-CPT(delta)", "CPT(alpha,gamma)"]:
        for disc in ("mse", "mae"):
            tab = res.sensitivity(comp, gamma=[1.0, 1.25, 2.0], discrepancy=disc)
            one = tab.xs(1.0, level="gamma")
            assert (one["lower"] == one["estimate"]).all()
            assert (one["upper"] == one["estimate"]).all()
            assert ((tab["lower"] <= tab["estimate"]) & (tab["estimate"] <= tab["upper"])).all()
    single = res.sensitivity("CPT(delta)", gamma=1.0)
    assert (single["lower"].to_numpy() == _r(res, "CPT(delta)")).all()


def test_a_minus_b_forms_agree(cpt_res):
    s1 = cpt_res.sensitivity("CPT(delta)-CPT(alpha,gamma,delta)", gamma=2.5)
    s2 = cpt_res.sensitivity("CPT(delta)", "CPT(alpha,gamma,delta)", gamma=2.5)
    s3 = cpt_res.sensitivity({"CPT(delta)": 1, "CPT(alpha,gamma,delta)": -1}, gamma=2.5)
    np.testing.assert_allclose(s1.to_numpy(), s2.to_numpy(), rtol=0, atol=0)
    np.testing.assert_allclose(s1.to_numpy(), s3.to_numpy(), rtol=0, atol=0)


def test_bounds_match_lp_and_grid(cpt_res):
    ds = cpt_res.dataset
    D = ds["loss"].sel(discrepancy="mae")
    B = ds["baseline_loss"].sel(discrepancy="mae")
    grid = np.array([1.0, 1.5, 2.0, 3.0])
    tab = cpt_res.sensitivity("C_delta-C_gamma", gamma=grid, discrepancy="mae")
    assert tab.index.names == ["n", "gamma"]
    for n in NS:
        num = (D.sel(procedure="CPT(alpha,gamma)", n=n) - D.sel(procedure="CPT(alpha,delta)", n=n))
        lo, hi = bounds_lp(num.to_numpy(), None, B.sel(n=n).to_numpy(), grid)
        part = tab.xs(n, level="n")
        np.testing.assert_allclose(part["lower"], lo, rtol=1e-7, atol=1e-9)
        np.testing.assert_allclose(part["upper"], hi, rtol=1e-7, atol=1e-9)
        assert (np.diff(part["lower"]) <= 1e-12).all() and (np.diff(part["upper"]) >= -1e-12).all()
    # The scalar call gives the grid's Γ = 2 row.
    single = cpt_res.sensitivity("C_delta-C_gamma", gamma=2.0, discrepancy="mae")
    np.testing.assert_allclose(single.to_numpy(), tab.xs(2.0, level="gamma").to_numpy())


def test_critical_gamma_by_n(cpt_res):
    for comp in ["C_delta-C_gamma", "CPT(alpha,delta)-CPT(alpha,gamma)", "C_alpha"]:
        crit = cpt_res.critical_gamma(comp, gamma_max=3.0)
        w = parse_comparison(comp, cpt_res.procedures, cpt_res.contribution_spec)
        D, B = cpt_res.losses()
        for n in NS:
            num = sum(c * D.sel(procedure=p, discrepancy="mse", n=n) for p, c in w.items())
            expected = critical_gamma(num.to_numpy(), None,
                                      B.sel(discrepancy="mse", n=n).to_numpy(), gamma_max=3.0)
            assert crit.loc[n] == expected
            g = crit.loc[n]
            if 1.0 < g < np.inf:  # the lower bound crosses zero there
                assert cpt_res.sensitivity(comp, gamma=g).loc[n, "lower"] <= 1e-12
                assert cpt_res.sensitivity(comp, gamma=g - 2e-3).loc[n, "lower"] > 0
    # The reverse comparison is negative under uniform weights.
    assert (cpt_res.critical_gamma("CPT(alpha,gamma,delta)-CPT(delta)") == 1.0).all()


def test_discrepancy_selection(cpt_res):
    a = cpt_res.sensitivity("CPT(delta)", gamma=1.0, discrepancy="mae")["estimate"]
    np.testing.assert_allclose(a, _r(cpt_res, "CPT(delta)", "mae"), rtol=1e-12)
    with pytest.raises(ConfigurationError, match="'kl'"):
        cpt_res.sensitivity("CPT(delta)", discrepancy="kl")
    with pytest.raises(ConfigurationError, match=r"\['nope'\]"):
        cpt_res.sensitivity({"nope": 1.0})


# ---------------------------------------------------------------------------- contributions


def test_contributions_are_differences_of_restrictiveness(cpt_res):
    tab = cpt_res.contributions()
    assert list(dict.fromkeys(tab.index.get_level_values("contribution"))) == list(CONTRIBUTIONS)
    r = {q: _r(cpt_res, sub) for q, sub in CPT_SUBMODELS.items()}
    full = _r(cpt_res, CPT_FULL)
    c = {q: r[q] - full for q in r}
    expected = {"C_alpha": c["alpha"], "C_gamma": c["gamma"], "C_delta": c["delta"],
                "C_delta-C_gamma": c["delta"] - c["gamma"],
                "C_delta-C_alpha": c["delta"] - c["alpha"],
                "C_gamma-C_alpha": c["gamma"] - c["alpha"]}
    for name, value in expected.items():
        np.testing.assert_allclose(tab.loc[name, "estimate"], value, rtol=1e-12)
    # SEs are those of the paired contrasts on common draws.
    for q, sub in CPT_SUBMODELS.items():
        np.testing.assert_allclose(tab.loc[f"C_{q}", "se"],
                                   cpt_res.contrast(sub, CPT_FULL)["se"], rtol=1e-12)
    np.testing.assert_allclose(tab.loc["C_delta-C_gamma", "se"],
                               cpt_res.contrast("CPT(alpha,gamma)", "CPT(alpha,delta)")["se"],
                               rtol=1e-12)
    with pytest.raises(ConfigurationError, match="define no parameter contributions"):
        _hand_results(np.random.default_rng(1), ["a", "b"], factors=[0.2, 0.4]).contributions()
    with pytest.raises(ConfigurationError, match=r"\['CPT\(alpha,gamma,delta\)'"):
        _hand_results(np.random.default_rng(1), ["a", "b"]).with_contributions(CPT_CONTRIBUTIONS)


# ---------------------------------------------------------------------------- draws (K > 1)


def test_nan_padded_draws_average_within_function():
    rng = np.random.default_rng(3)
    res = _hand_results(rng, ["three", "one"], ns=[30, 60], m=25, draws=3, factors=[0.3, 0.6])
    res.dataset["loss"].loc[{"procedure": "one", "draw": [1, 2]}] = np.nan
    D = res.dataset["loss"].sel(discrepancy="mse").transpose("procedure", "n", "replication",
                                                               "draw").to_numpy()
    B = res.dataset["baseline_loss"].sel(discrepancy="mse").to_numpy()
    one, three, base = D[1][..., 0], D[0].mean(-1), B.mean(-1)  # hand within-function averages
    tab1 = res.sensitivity("one-three", gamma=1.0)
    np.testing.assert_allclose(tab1["estimate"], one.mean(1) / base.mean(1)
                               - three.mean(1) / base.mean(1), rtol=1e-12)
    np.testing.assert_allclose(tab1["estimate"], _r(res, "one") - _r(res, "three"), rtol=1e-12)
    tab2 = res.sensitivity("one-three", gamma=2.0)
    for i in range(2):
        lo, hi = bounds_lp(one[i] - three[i], None, base[i], 2.0)
        np.testing.assert_allclose(tab2.iloc[i][["lower", "upper"]], [lo, hi], rtol=1e-7)
        # The array function's own 2-D nanmean path agrees.
        lo2, hi2 = bounds(D[1, i], D[0, i], B[i], 2.0)
        np.testing.assert_allclose(tab2.iloc[i][["lower", "upper"]], [lo2, hi2], rtol=1e-12)
    # A replication with no finite draw (in both discrepancies) is refused when the results are
    # built, naming the first cell.
    res.dataset["loss"].loc[{"procedure": "one", "n": 60, "replication": 4}] = np.nan
    with pytest.raises(DataError, match="loss is NaN or infinite in 2 cells .*'procedure': "
                                        "'one', 'discrepancy': 'mse', 'n': 60, 'replication': 4"):
        rx.Results(res.dataset)


class _OneDraw(rx.OLS):
    """OLS run on the first training draw only (NaN-padded in the results)."""

    draws = 1


@pytest.fixture(scope="module")
def tiny_study():
    F = rx.EligibleSet(rx.Box(x1=(0, 1), x2=(0, 1)), rx.Increasing("x1"), rx.Decreasing("x2"),
                       rx.Between(0, 1))
    procs = {"OLS(x1,x2)": rx.OLS("y ~ x1 + x2"), "OLS(x1)": _OneDraw("y ~ x1")}
    study = rx.Study(rx.MonotoneGP(F, n_eval=60), procs, baseline=rx.Constant(), n=[10, 20],
                     replications=8, draws=3, seed=1)
    return study.run(progress=False)


def test_study_with_fewer_draws(tiny_study):
    loss = tiny_study.dataset["loss"]  # (its NaN padding: test_study_values)
    tab = tiny_study.sensitivity("OLS(x1)-OLS(x1,x2)", gamma=1.0)
    expected = _r(tiny_study, "OLS(x1)") - _r(tiny_study, "OLS(x1,x2)")
    np.testing.assert_allclose(tab["estimate"], expected, rtol=1e-12)
    np.testing.assert_allclose(tab["lower"], expected, rtol=1e-12)
    # Γ = 2 by the LP on the hand-averaged (first-draw) losses.
    d1 = loss.sel(procedure="OLS(x1)", discrepancy="mse", draw=0)
    d2 = loss.sel(procedure="OLS(x1,x2)", discrepancy="mse").mean("draw")
    b = tiny_study.dataset["baseline_loss"].sel(discrepancy="mse").mean("draw")
    lo, hi = bounds_lp((d1 - d2).sel(n=20).to_numpy(), None, b.sel(n=20).to_numpy(), 2.0)
    got = tiny_study.sensitivity("OLS(x1)-OLS(x1,x2)", gamma=2.0).loc[20]
    np.testing.assert_allclose([got["lower"], got["upper"]], [lo, hi], rtol=1e-7)


# ---------------------------------------------------------------------------- reporting


def test_dataset_and_summary_panels(cpt_res):
    comps = ["C_alpha", "C_delta-C_gamma", "CPT(alpha,gamma,delta)-CPT(delta)"]
    ds = cpt_res.sensitivity_dataset(comps, gamma=2.0, gamma_max=3.0)
    assert set(ds.data_vars) == {"estimate", "lower", "upper", "critical_gamma"}
    assert ds["estimate"].dims == ("comparison", "n")
    assert ds["comparison"].to_numpy().tolist() == comps
    for comp in comps:
        tab = cpt_res.sensitivity(comp, gamma=2.0)
        np.testing.assert_array_equal(ds["lower"].sel(comparison=comp), tab["lower"])
        np.testing.assert_array_equal(ds["critical_gamma"].sel(comparison=comp),
                                      cpt_res.critical_gamma(comp))
    text = cpt_res.sensitivity_summary(comps).as_text()
    for panel in ("Panel A", "Panel B", "Panel C"):
        assert panel in text
    for comp in comps:
        cells = [_fmt(float(ds["estimate"].sel(comparison=comp, n=n))) for n in NS]
        assert any(ln.startswith(comp) and ln.split()[-3:] == cells for ln in text.splitlines())
        interval = (f"[{_fmt(float(ds['lower'].sel(comparison=comp, n=NS[0])))}, "
                    f"{_fmt(float(ds['upper'].sel(comparison=comp, n=NS[0])))}]")
        assert interval in text
        crit = [format_critical(float(ds["critical_gamma"].sel(comparison=comp, n=n)), 3.0)
                for n in NS]
        assert any(ln.startswith(comp) and ln.replace("> 3", ">3").split()[-3:]
                   == [c.replace("> 3", ">3") for c in crit] for ln in text.splitlines())
    # The reverse full-minus-δ comparison is negative, so its Γ* prints as 1.
    assert (ds["critical_gamma"].sel(comparison=comps[2]) == 1.0).all()
    with pytest.raises(ConfigurationError, match="duplicates"):
        cpt_res.sensitivity_dataset(["C_alpha", "C_alpha"])
    with pytest.raises(ConfigurationError, match="scalar"):
        cpt_res.sensitivity_dataset(["C_alpha"], gamma=[1.5, 2.0])


def test_fmt_small_values():
    assert _fmt(-0.00007) == "-0.00007"
    assert _fmt(-0.00002) == "-0.00002"
    assert _fmt(0.0731) == "0.073"
    assert _fmt(0.0) == "0.000"


def test_plot_lines(cpt_res):
    import matplotlib.pyplot as plt

    ax = cpt_res.plot_sensitivity("C_delta-C_gamma", gamma_max=3.0, points=21)
    try:
        assert len(ax.lines) == 2 * len(NS)
        grid = cpt_res.sensitivity("C_delta-C_gamma", gamma=np.linspace(1, 3, 21))
        lower = grid.xs(NS[1], level="n")["lower"].to_numpy()
        upper = grid.xs(NS[1], level="n")["upper"].to_numpy()
        np.testing.assert_allclose(ax.lines[2].get_ydata(), lower)
        np.testing.assert_allclose(ax.lines[3].get_ydata(), upper)
        np.testing.assert_allclose(ax.lines[0].get_xdata(), np.linspace(1, 3, 21))
    finally:
        plt.close(ax.figure)


def test_plot_without_matplotlib_names_the_extra(cpt_res, monkeypatch):
    monkeypatch.setitem(sys.modules, "matplotlib.pyplot", None)
    with pytest.raises(ImportError, match=r"restrictiveness\[plot\]"):
        cpt_res.plot_sensitivity("C_alpha")


# ---------------------------------------------------------------------------- CLI


def test_cli_round_trip(tiny_study, tmp_path, capsys):
    path, out = tmp_path / "tiny.nc", tmp_path / "sens.nc"
    tiny_study.to_netcdf(path)
    comps = ["OLS(x1)-OLS(x1,x2)", "OLS(x1,x2)"]
    rc = main(["sensitivity", str(path), "--compare", *comps, "--gamma", "1.5",
               "--out", str(out)])
    assert rc == 0
    text = capsys.readouterr().out
    for panel in ("Panel A", "Panel B: Sensitivity intervals at Γ = 1.5", "Panel C"):
        assert panel in text
    assert "OLS(x1)-OLS(x1,x2)" in text
    ds = xr.open_dataset(out, engine="netcdf4").load()
    assert set(ds.data_vars) == {"estimate", "lower", "upper", "critical_gamma"}
    assert ds["comparison"].to_numpy().tolist() == comps
    assert ds.attrs["gamma"] == 1.5
    expected = load(path).sensitivity_dataset(comps, gamma=1.5)
    xr.testing.assert_allclose(ds, expected)
    # Errors come back as exit status 2 with the unknown label named.
    rc = main(["sensitivity", str(path), "--compare", "OLS(x1)-OLS(x3)"])
    assert rc == 2
    assert "OLS(x3)" in capsys.readouterr().err


def test_lottery_study_defines_cpt_contributions_when_it_runs_them():
    full = rx.lottery.study(replications=2, n=[20], n_eval=50)
    assert full.contributions is CPT_CONTRIBUTIONS
    cpt = rx.lottery.CPT(free=("alpha",))
    assert rx.lottery.study({cpt.label: cpt}, replications=2).contributions is None
    with pytest.raises(ConfigurationError, match=r"does not run"):
        rx.Study(rx.lottery.lottery_prior(n_eval=50), {cpt.label: cpt},
                 baseline=rx.lottery.ExpectedValue(), contributions=CPT_CONTRIBUTIONS)


def test_weights_that_name_no_comparison_are_refused_not_bounded_at_zero(cpt_res):
    # {} and all-zero weights were bounded by [-0.0, 0.0] at every n, silently
    for weights in ({}, {"CPT(delta)": 0.0}, {"CPT(delta)": 0, "GP regression": 0.0}):
        with pytest.raises(ConfigurationError, match="no nonzero coefficient"):
            cpt_res.sensitivity(weights)
        with pytest.raises(ConfigurationError, match="no nonzero coefficient"):
            cpt_res.critical_gamma(weights)
    # a coefficient that is not a finite number (was a bare ValueError, or NaN blamed on losses)
    for bad in ("a", float("nan"), float("inf"), None, True):
        with pytest.raises(ConfigurationError, match="not finite numbers"):
            cpt_res.sensitivity({"CPT(delta)": 1.0, "GP regression": bad})
    # a zero coefficient beside nonzero ones drops out: the same numbers as the label alone
    with_zero = cpt_res.sensitivity({"CPT(delta)": 1.0, "GP regression": 0}, gamma=2.0)
    alone = cpt_res.sensitivity("CPT(delta)", gamma=2.0)
    np.testing.assert_array_equal(with_zero.to_numpy(), alone.to_numpy())
    np.testing.assert_allclose(alone["estimate"], _r(cpt_res, "CPT(delta)"), rtol=1e-12)


def test_sensitivity_tables_refuse_a_gamma_given_as_text(cpt_res):
    # sensitivity() refused "2"; the Dataset read it as 2.0 and the summary failed formatting
    for call in (cpt_res.sensitivity, cpt_res.sensitivity_dataset, cpt_res.sensitivity_summary):
        with pytest.raises(ConfigurationError, match="gamma must be a number"):
            call(["CPT(delta)"] if call != cpt_res.sensitivity else "CPT(delta)", gamma="2")
    ds = cpt_res.sensitivity_dataset(["CPT(delta)"], gamma=np.float32(2.0))
    tab = cpt_res.sensitivity("CPT(delta)", gamma=2.0)
    np.testing.assert_array_equal(ds["lower"].sel(comparison="CPT(delta)").values, tab["lower"])


def test_a_grid_as_gamma_max_is_refused_by_name(cpt_res):
    # Γ_max ends the Γ* search: a grid there was a bare "too many values to unpack"
    a, b = np.array([1.0, -2.0, 3.0]), np.ones(3)
    with pytest.raises(ConfigurationError, match="gamma_max must be one number"):
        critical_gamma(a, None, b, gamma_max=[2.0, 3.0])
    with pytest.raises(ConfigurationError, match="gamma_max must be one number"):
        cpt_res.critical_gamma("C_delta-C_gamma", gamma_max=[2.0, 3.0])
    with pytest.raises(ConfigurationError, match="gamma_max must be one number"):
        cpt_res.sensitivity_summary(["C_delta-C_gamma"], gamma_max=(2.0, 3.0))
    with pytest.raises(ConfigurationError, match="gamma_max must be one number"):
        cpt_res.plot_sensitivity("C_delta-C_gamma", gamma_max=[2.0, 3.0])
    # one number of any numeric type still ends the search where a float does
    assert critical_gamma(a, None, b, gamma_max=np.float32(3.0)) == critical_gamma(a, None, b)


def test_one_comparison_typed_two_ways_is_refused_not_shown_twice(cpt_res):
    """'C_delta-C_gamma' and 'CPT(alpha,gamma)-CPT(alpha,delta)' (or 'A-B' and 'A - B') are
    one comparison: the panels showed its row twice under two labels; a mapping among the
    comparisons was "unhashable type: 'dict'"."""
    same = ["C_delta-C_gamma", "CPT(alpha,gamma) - CPT(alpha,delta)"]
    for method in (cpt_res.sensitivity_dataset, cpt_res.sensitivity_summary):
        with pytest.raises(ConfigurationError, match="are the same comparison"):
            method(same)
        with pytest.raises(ConfigurationError, match="comparisons are strings"):
            method(["C_alpha", {"CPT(delta)": 1.0}])
    ds = cpt_res.sensitivity_dataset(["C_delta-C_gamma", "C_delta"])
    d = cpt_res.combination({"CPT(alpha,gamma)": 1.0, "CPT(alpha,delta)": -1.0})
    np.testing.assert_allclose(ds["estimate"].sel(comparison="C_delta-C_gamma"), d["estimate"],
                               rtol=1e-13)


def test_a_grid_repeating_a_gamma_is_refused_not_shown_twice(cpt_res):
    """gamma=[2, 1.5, 2.0] gave the (n, gamma) index the rows of Γ = 2 twice, so .loc[(n, 2)]
    returned two rows; a plot up to Γ = 1 drew 101 copies of Γ = 1 (singular axis)."""
    with pytest.raises(ConfigurationError, match=r"gamma repeats \[2.0\]"):
        cpt_res.sensitivity("C_alpha", gamma=[2, 1.5, 2.0])
    with pytest.raises(ConfigurationError, match="gamma_max must be above 1"):
        cpt_res.plot_sensitivity("C_alpha", gamma_max=1.0)
    grid = cpt_res.sensitivity("C_alpha", gamma=[2.0, 1.5])
    assert grid.index.tolist() == [(n, g) for n in NS for g in (2.0, 1.5)]
    D, B = cpt_res.losses()
    num = (D.sel(procedure=CPT_SUBMODELS["alpha"]) - D.sel(procedure=CPT_FULL)).sel(
        discrepancy="mse", n=NS[0]).values
    lo, hi = bounds(num, None, B.sel(discrepancy="mse", n=NS[0]).values, 1.5)
    np.testing.assert_allclose(grid.loc[(NS[0], 1.5)].tolist(), [num.mean() / B.sel(
        discrepancy="mse", n=NS[0]).values.mean(), lo, hi], rtol=1e-14)


def test_a_contribution_reported_twice_is_refused_not_shown_twice_or_dropped():
    """report=("C_a", "C_{a}") gave the contributions table two rows of one contribution;
    report=("C_a", "C_a") showed it once without a word, and report="C_a" was read letter by
    letter ("comparison 'C' names unknown procedure label(s)")."""
    labels = ["M(a,b)", "M(b)", "M(a)"]
    res = _hand_results(np.random.default_rng(3), procedures=labels, ns=[10, 20], m=12)
    family = ("M(a,b)", {"a": "M(b)", "b": "M(a)"})
    with pytest.raises(ConfigurationError, match=r"report names \['C_a'\] more than once"):
        rx.Contributions(*family, report=("C_a", "C_b", "C_a"))
    with pytest.raises(ConfigurationError, match="got the string 'C_a'"):
        rx.Contributions(*family, report="C_a")
    typed_twice = res.with_contributions(rx.Contributions(*family, report=("C_a", "C_{a}")))
    with pytest.raises(ConfigurationError, match="'C_a' and 'C_{a}' are the same comparison"):
        typed_twice.contributions()
    tab = res.with_contributions(rx.Contributions(*family, report=("C_a", "C_a-C_b"))
                                 ).contributions()
    assert tab.index.tolist() == [(c, n) for c in ("C_a", "C_a-C_b") for n in (10, 20)]
    np.testing.assert_array_equal(tab.loc["C_a"].to_numpy(),
                                  res.contrast("M(b)", "M(a,b)").to_numpy())
    np.testing.assert_array_equal(tab.loc["C_a-C_b"].to_numpy(),
                                  res.contrast("M(b)", "M(a)").to_numpy())
