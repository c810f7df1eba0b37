"""A baseline that fits every pseudo-truth to rounding makes r̂ = 0/0: reported as NaN with a
warning, by a scale-free test against the truths' scale (Discrepancy.scale)."""

from __future__ import annotations

import json
import warnings
from pathlib import Path

import numpy as np
import pytest
import xarray as xr

import restrictiveness as rx
from restrictiveness.cli import main
from restrictiveness.demand.elasticities import CrossElasticityMSE, OwnElasticityMSE, SharesMSE
from restrictiveness.demand.prior import DemandPrior
from restrictiveness.engine.checkpoint import configuration_hash
from restrictiveness.engine.inference import ratio_estimate
from restrictiveness.engine.protocol import FunctionRule
from restrictiveness.engine.records import decode_record, encode_record
from restrictiveness.shared._versions import package_versions

DATA = Path(__file__).parent / "data"
ZERO_TO_ROUNDING = "loss is zero to rounding relative to the truths' scale"


class Zero(rx.Procedure):
    """Predicts 0 everywhere: its MSE is the mean squared truth."""

    def fit(self, sample, rng):
        return FunctionRule(lambda X: np.zeros(len(X)))

    def __repr__(self):
        return "Zero()"


class QuadraticTruth(rx.PseudoTruth):
    def __init__(self, coefs, *args):
        super().__init__(*args)
        self.coefs = coefs

    def _f(self, X):
        return self.coefs @ np.stack([np.ones(len(X)), X[:, 0], X[:, 0] ** 2])

    def train_y(self, n, draw=0):
        return self._f(self.train_X(n, draw))

    def eval_y(self, n):
        return self._f(self.eval_X)


class Quadratics(rx.EvaluationDistribution):
    """Truths ``factor · (a + b x + c x²)`` with standard-normal a, b, c on [0, 1]."""

    columns = ("x",)

    def __init__(self, factor=1.0):
        self.factor = factor

    def draw(self, ns, rng, draws=1):
        coefs = self.factor * rng.standard_normal(3)
        train = [rng.random((max(ns), 1)) for _ in range(draws)]
        return QuadraticTruth(coefs, train, np.linspace(0, 1, 40)[:, None], None,
                              self.columns, self.response)

    def __repr__(self):
        return f"Quadratics(factor={self.factor!r})"


def _quadratic_study(factor, baseline):
    return rx.Study(Quadratics(factor), {"linear": rx.OLS("y ~ x"), "zero": Zero()},
                    baseline=baseline, n=[15, 30], replications=6, seed=2)


def _no_warning(call):
    with warnings.catch_warnings():
        warnings.simplefilter("error", RuntimeWarning)
        return call()


@pytest.fixture(scope="module")
def interpolating():
    """The reported case: a GP baseline fitted on the 5 evaluation points of a finite set
    reproduces every truth (mean loss 1.4e-31 against a scale of 0.44)."""
    F = rx.EligibleSet(rx.FiniteSet(np.linspace(0, 1, 5)[:, None], columns=("x",)),
                       rx.Increasing("x"), rx.Between(0, 1))
    study = rx.Study(rx.MonotoneGP(F, n_eval=5),
                     {"linear": rx.OLS("y ~ x"), "GP": rx.GPRegression("y ~ x")},
                     baseline=rx.GPRegression("y ~ x"), n=[30], replications=6, seed=1,
                     fit_on="evaluation")
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")  # the GP fits' own numerical warnings
        return study.run(progress=False)


def test_an_interpolating_baseline_gives_nan_and_a_warning_naming_the_procedures(interpolating):
    res = interpolating
    B = res.dataset["baseline_loss"].values
    assert B.mean() < 1e-29 and res.dataset["truth_scale"].values.mean() > 0.1
    with pytest.warns(RuntimeWarning, match=ZERO_TO_ROUNDING) as caught:
        r, se = res.restrictiveness, res.se
    assert np.isnan(r.values).all() and np.isnan(se.values).all()
    message = str(caught[0].message)
    assert "'linear'" in message and "'GP'" in message and "GPRegression" in message
    assert caught[0].filename == __file__  # points at the user's line, not the package
    assert res.degenerate_baseline().values.tolist() == [[True]]
    text = res.summary().as_text()  # r̂ is cached: warned above, once
    assert "nan (nan)" in text and "zero to rounding" in text


def test_contrasts_and_sensitivity_bounds_of_an_interpolating_baseline_are_nan(interpolating):
    res = interpolating
    with pytest.warns(RuntimeWarning, match="combination.*'linear'.*'GP'") as caught:
        con = res.contrast("linear", "GP")
    assert caught[0].filename == __file__
    assert np.isnan(con.to_numpy()).all()
    with pytest.warns(RuntimeWarning, match="sensitivity bounds of.*'linear'") as caught:
        sens = res.sensitivity("linear", "GP")
    assert caught[0].filename == __file__
    assert np.isnan(sens.to_numpy()).all()
    with pytest.warns(RuntimeWarning, match="critical Γ.*'linear'"):
        crit = res.critical_gamma("linear")
    assert np.isnan(crit.to_numpy()).all()


def test_sensitivity_tables_of_an_interpolating_baseline_print_nan(interpolating, tmp_path,
                                                                   capsys):
    # Panel C passed the NaN Γ* to format_critical, which raised "value is NaN; expected a
    # critical Γ": the summary, and the sensitivity command on such a file, failed outright
    res = interpolating
    with pytest.warns(RuntimeWarning, match=ZERO_TO_ROUNDING):
        text = res.sensitivity_summary(["linear-GP", "linear"]).as_text()
    panel_c = text.split("Panel C: Critical values")[1].splitlines()
    rows = [line.split() for line in panel_c if line.startswith(("linear-GP", "linear "))]
    assert rows == [["linear-GP", "nan"], ["linear", "nan"]]
    path = tmp_path / "interpolating.nc"
    res.to_netcdf(path)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", RuntimeWarning)
        assert main(["sensitivity", str(path), "--compare", "linear-GP"]) == 0
    assert "Panel C" in capsys.readouterr().out


def test_the_mse_scale_is_the_loss_of_predicting_zero():
    res = _quadratic_study(1.0, rx.Constant()).run(progress=False)
    np.testing.assert_array_equal(res.dataset["truth_scale"].sel(discrepancy="mse").values,
                                  res.dataset["loss"].sel(procedure="zero",
                                                          discrepancy="mse").values)


def test_demand_scales_are_the_losses_of_zero_shares_and_of_price_blind_shares():
    truth = DemandPrior(n_types=16, n_eval=2, n_train=5).draw([5], np.random.default_rng(0))
    zero = FunctionRule(lambda X: np.zeros(np.shape(X)[:2]))
    # shares that ignore prices have zero elasticities
    flat = FunctionRule(lambda X: np.full(np.shape(X)[:2], 0.1))
    assert SharesMSE().scale(truth, 5) == SharesMSE()(zero, truth, 5) > 0
    for disc in (OwnElasticityMSE(), CrossElasticityMSE()):
        assert disc.scale(truth, 5) == disc(flat, truth, 5) > 0
    assert rx.KL().scale(truth, 5) == 1.0


def test_a_legitimate_study_is_unchanged_and_silent():
    res = _quadratic_study(1.0, rx.Constant()).run(progress=False)
    r, se = _no_warning(lambda: (res.restrictiveness, res.se))
    D, B = res.losses()
    r0, se0 = ratio_estimate(D.transpose("procedure", "discrepancy", "n", "replication").values,
                             B.values[None])
    np.testing.assert_array_equal(r.values, r0)
    np.testing.assert_array_equal(se.values, se0)
    # the same results without the scale (as files written before it) report the same
    old = rx.Results(res.dataset.drop_vars("truth_scale"))
    xr.testing.assert_identical(old.restrictiveness, r)
    for call in (lambda x: x.contrast("linear", "zero"), lambda x: x.sensitivity("linear"),
                 lambda x: x.critical_gamma("linear")):
        pd_new, pd_old = _no_warning(lambda c=call: c(res)), call(old)
        np.testing.assert_array_equal(pd_new.to_numpy(), pd_old.to_numpy())


@pytest.mark.parametrize("baseline, degenerate", [(rx.Constant(), False),
                                                  (rx.OLS("y ~ x + I(x**2)"), True)])
def test_scaling_the_truths_by_1e_20_changes_neither_r_nor_the_verdict(baseline, degenerate):
    """An absolute threshold would call the scaled legitimate study (B̄ ~ 1e-41) degenerate;
    the quadratic OLS baseline reproduces quadratic truths at either scale."""
    verdicts, estimates = [], []
    for factor in (1.0, 1e-20):
        res = _quadratic_study(factor, baseline).run(progress=False)
        verdicts.append(res.degenerate_baseline().values.tolist())
        with warnings.catch_warnings(record=True) as caught:
            warnings.simplefilter("always")
            estimates.append(res.restrictiveness.values)
        assert any(ZERO_TO_ROUNDING in str(w.message) for w in caught) == degenerate
    assert verdicts[0] == verdicts[1] == [[degenerate, degenerate]]
    np.testing.assert_allclose(estimates[1], estimates[0], rtol=1e-9)
    assert np.isnan(estimates[0]).all() == degenerate


def test_a_checkpoint_written_without_the_scale_loads_and_reports_as_before(tmp_path):
    """Records of the previous layout (no truth_scale) resume without recomputation; the
    scale is unknown there, so even an interpolating baseline is reported as before."""
    study = _quadratic_study(1.0, rx.OLS("y ~ x + I(x**2)"))
    fresh = study.run(progress=False, replications=[0, 1, 2])
    ck = tmp_path / "ck"
    study.run(progress=False, replications=[0, 1, 2], checkpoint=ck)
    key = configuration_hash(study.configuration())
    for file in sorted(ck.glob("replication-*.npz")):
        record = decode_record(file.read_bytes(), key)
        record.truth_scale = None  # what the encoder wrote before the scale existed
        with np.load(file, allow_pickle=False) as z:  # the checkpoint's own identity fields
            meta = json.loads(str(z["__meta__"]))
        identity = {k: meta[k] for k in ("procedure_order", "code_sha256")}
        file.write_bytes(encode_record(record, key, package_versions(), identity))
    with warnings.catch_warnings():
        warnings.simplefilter("error")  # a rejected record would warn and be recomputed
        resumed = study.run(progress=False, replications=[0, 1, 2], checkpoint=ck)
        r = resumed.restrictiveness
    assert np.isnan(resumed.dataset["truth_scale"].values).all()
    assert not resumed.degenerate_baseline().values.any()
    D, B = fresh.losses()
    np.testing.assert_array_equal(r.values, ratio_estimate(
        D.transpose("procedure", "discrepancy", "n", "replication").values, B.values[None])[0])
    with pytest.warns(RuntimeWarning, match=ZERO_TO_ROUNDING):
        assert np.isnan(fresh.restrictiveness.values).all()


def test_a_results_file_written_before_the_scale_loads_and_reports_as_before():
    res = rx.load(DATA / "results_v0.nc")
    assert "truth_scale" not in res.dataset
    assert not res.degenerate_baseline().values.any()
    r = _no_warning(lambda: res.restrictiveness)
    assert np.isfinite(r.values).all()


@pytest.mark.parametrize("scale", [None, np.nan, 1.0], ids=["no-scale", "unknown-scale", "scale"])
def test_a_baseline_loss_of_exactly_zero_is_degenerate_whatever_the_scale(scale):
    """B̄ = 0 exactly is 0/0 at any scale. Without the scale (files before it, discrepancies
    without one) r̂ was inf and NaN with numpy's bare divide warnings, the bounds a DataError
    "denominator is zero in every replication"; with it, a Dataset without a configuration
    (built by hand) failed its warning with KeyError 'configuration'. Now every estimate there
    is NaN with the package's warning, and the other n keep their values."""
    D = np.array([[[[1.0, 2.0, 3.0], [0.5, 1.0, 1.5]]], [[[0.0, 0.0, 1.0], [0.0, 0.0, 0.0]]]])
    B = np.array([[[2.0, 2.0, 4.0], [0.0, 0.0, 0.0]]])  # n = 10 fine, n = 20 all zero
    data = {"loss": (("procedure", "discrepancy", "n", "replication"), D),
            "baseline_loss": (("discrepancy", "n", "replication"), B)}
    if scale is not None:
        data["truth_scale"] = (("discrepancy", "n", "replication"), np.full(B.shape, scale))
    res = rx.Results(xr.Dataset(data, coords={"procedure": ["a", "b"], "discrepancy": ["mse"],
                                              "n": [10, 20], "replication": [0, 1, 2]},
                                attrs={"baseline": "zero"}))
    assert res.degenerate_baseline().values.tolist() == [[False, True]]
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        r = res.restrictiveness.sel(discrepancy="mse").values
        contrast = res.contrast("a", "b")
        bounds = res.sensitivity("a", "b", gamma=2.0)
        crit = res.critical_gamma("a", "b")
    messages = [str(w.message) for w in caught]
    assert len(messages) == 4 and all("is NaN for discrepancy 'mse' at n=[20]: the baseline "
                                      "zero's loss is zero" in m for m in messages), messages
    np.testing.assert_array_equal(r, [[6 / 8, np.nan], [1 / 8, np.nan]])
    assert contrast.loc[10, "estimate"] == 5 / 8 and np.isnan(contrast.loc[20]).all()
    assert bounds.loc[10, "estimate"] == pytest.approx(5 / 8, rel=1e-15)
    assert np.isnan(bounds.loc[20]).all()
    # Γ = 2, M = 3: the vertices put 2 on one replication and 1/2 on the others; with
    # a − b = (1, 2, 2) and B = (2, 2, 4) they give 4/7, 5.5/7 and 5.5/10
    assert bounds.loc[10, "lower"] == pytest.approx(5.5 / 10, rel=1e-15)
    assert bounds.loc[10, "upper"] == pytest.approx(5.5 / 7, rel=1e-15)
    assert crit.loc[10] == np.inf and np.isnan(crit.loc[20])
