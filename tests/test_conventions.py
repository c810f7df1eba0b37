"""Results follow xarray's and statsmodels' habits: named DataArrays, CF attributes, numeric
fitted parameters, ``cov_params()`` a method, t inference matching statsmodels."""

import json

import numpy as np
import pandas as pd
import pytest
import statsmodels.api as sm
import xarray as xr

import restrictiveness as rx
from restrictiveness.demand.models import MNL
from restrictiveness.engine.results import fitted_params

DATA = "tests/data"


@pytest.fixture(scope="module")
def res():
    F = rx.EligibleSet(rx.Box(x=(0, 1)), rx.Increasing("x"), rx.Between(0, 1))
    procs = {"linear": rx.OLS("y ~ x"),
             "affine": rx.NLS("y ~ a + b * x", bounds={"a": (-5, 5), "b": (-5, 5)})}
    return rx.Study(rx.MonotoneGP(F, n_eval=60), procs, baseline=rx.Constant(), n=[10, 20],
                    replications=4, seed=3).run(progress=False)


def test_named_arrays_and_tidy_estimates(res):
    df = res.restrictiveness.to_dataframe()
    assert list(df.columns) == ["restrictiveness"]
    assert res.se.to_dataframe().columns.tolist() == ["se"]
    np.testing.assert_allclose(df["restrictiveness"].to_numpy(),
                               res.estimates()["estimate"].reorder_levels(
                                   ["procedure", "discrepancy", "n"]).sort_index().to_numpy())
    tidy = res.estimates().reset_index()
    assert tidy.columns.tolist() == ["discrepancy", "procedure", "n", "estimate", "se",
                                     "lower", "upper"]
    assert len(tidy) == 2 * len(res.discrepancies) * 2
    # the other DataArray the results return is named too
    flags = res.degenerate_baseline().to_dataframe()
    assert flags.columns.tolist() == ["degenerate_baseline"]
    assert not flags["degenerate_baseline"].any()   # a constant baseline does not fit every truth


def test_netcdf_has_cf_attributes_and_numeric_params(res, tmp_path):
    path = tmp_path / "r.nc"
    res.to_netcdf(path)
    with xr.open_dataset(path) as ds:
        assert ds.attrs["Conventions"].startswith("CF-1.")
        # every variable, the evaluation distribution's diagnostics (truth_violations) included
        assert "truth_violations" in ds.data_vars
        for v in ds.data_vars:
            assert ds[v].attrs["long_name"], v
        assert ds["seconds"].attrs["units"] == "s"
        p = ds["params"]
        assert p.dims == ("procedure", "parameter", "n", "replication")
        assert list(p["parameter"].values) == ["a", "b"]
        # the numbers are the ones in the JSON fit records, and NaN for the unnamed OLS
        info = json.loads(str(ds["fit_info"].sel(procedure="affine", n=20).values[1]))
        assert float(p.sel(procedure="affine", n=20, parameter="b")[1]) == info["params"]["b"]
        assert np.isnan(p.sel(procedure="linear")).all()
    assert rx.load(path).params.identical(res.params)


def test_fitted_params_none_without_names():
    info = xr.DataArray([['{"params": [1, 2]}']], dims=("procedure", "n"))
    assert fitted_params(info) is None


def test_old_files_still_load():
    old = rx.load(f"{DATA}/results_v0.nc")
    assert old.restrictiveness.name == "restrictiveness"
    assert "<table" in old._repr_html_()
    comp = rx.load_completeness(f"{DATA}/completeness_v0.nc")
    assert "<table" in comp._repr_html_()


def test_completeness_file_attributes(tmp_path):
    comp = rx.load_completeness(f"{DATA}/completeness_v0.nc")
    comp.to_netcdf(tmp_path / "c.nc")
    with xr.open_dataset(tmp_path / "c.nc") as ds:
        assert ds.attrs["Conventions"].startswith("CF-1.")
        assert ds["kappa"].attrs["units"] == "1" and ds["kappa"].attrs["long_name"]
    with xr.open_dataset(f"{DATA}/completeness_v0.nc") as old:   # the pinned file is v0
        assert "Conventions" not in old.attrs
    assert comp.dataset.attrs["Conventions"] == ds.attrs["Conventions"]


def test_sensitivity_dataset_attributes(res):
    ds = res.sensitivity_dataset(["linear-affine"])
    assert ds.attrs["Conventions"].startswith("CF-1.")
    assert ds["critical_gamma"].attrs["long_name"].startswith("critical")


@pytest.fixture(scope="module")
def demand():
    rng = np.random.default_rng(0)
    m, J = 30, 3
    price = rng.uniform(1, 3, (m, J))
    u = 1.0 - 0.8 * price
    s = np.exp(u) / (1 + np.exp(u).sum(1, keepdims=True))
    s = s * np.exp(rng.normal(0, 0.05, s.shape))
    df = pd.DataFrame({"market_ids": np.repeat(np.arange(m), J), "prices": price.ravel(),
                       "shares": s.ravel()})
    return MNL.from_formula("shares ~ prices", df).fit()


def test_demand_results_follow_statsmodels(demand):
    cov = demand.cov_params()                       # a method now, as in statsmodels
    assert isinstance(cov, pd.DataFrame) and list(cov.index) == ["Intercept", "prices"]
    # the linearised problem: OLS of the residuals on the Jacobian at the estimate
    J = demand._jacobian
    ols = sm.OLS(demand.resid, J).fit(use_t=True)
    np.testing.assert_allclose(ols.params, 0, atol=1e-6)   # first-order condition
    np.testing.assert_allclose(demand.bse.to_numpy(), ols.bse, rtol=1e-8)
    t = demand.params.to_numpy() / ols.bse
    import scipy.stats
    np.testing.assert_allclose(demand.pvalues.to_numpy(),
                               2 * scipy.stats.t.sf(np.abs(t), ols.df_resid), rtol=1e-10)
    half = ols.conf_int(0.1)[:, 1] - ols.params
    ci = demand.conf_int(0.1)
    np.testing.assert_allclose(ci["upper"] - demand.params, half, rtol=1e-8)
    assert demand.df_inference == demand.nobs - 2
    assert "t with N - k" in demand.summary().as_text()
    # predict() is the fitted values, one per row of the data, as statsmodels'
    np.testing.assert_allclose(demand.predict(), demand.fitted.predict(demand.model.X).ravel())
    np.testing.assert_array_equal(demand.predict(), demand.fittedvalues)
