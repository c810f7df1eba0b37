"""Cluster identifiers given as a pandas Series are aligned with the data by index label.

statsmodels' ``cov_kwds={"groups": s}`` takes a Series by position; here a Series whose index is
a permutation of the data's (or a superset of it) gives the same clusters as the column itself,
and one that lacks rows of the data, or cannot be aligned, is refused by name.
"""

import numpy as np
import pandas as pd
import pytest

import restrictiveness as rx
from restrictiveness.lottery.models import CPT


def _data(seed=5, n=120, clusters=12):
    rng = np.random.default_rng(seed)
    zh, zl = rng.uniform(0.4, 1.0, n), rng.uniform(0.0, 1 / 3, n)
    X = np.c_[zh, zl, rng.uniform(0.05, 0.95, n)]
    # cluster-level shocks make the clustered SEs differ from the heteroskedastic ones
    g = rng.integers(0, clusters, len(X))
    ce = X[:, 1] + (X[:, 0] - X[:, 1]) * (0.4 + 0.3 * X[:, 2]) + 0.05 * rng.standard_normal(
        clusters)[g] + 0.01 * rng.standard_normal(len(X))
    df = pd.DataFrame({"ce": ce, "z_hi": X[:, 0], "z_lo": X[:, 1], "p": X[:, 2], "id": g})
    return df.set_index(pd.Index(np.arange(100, 100 + len(df)), name="row"))


ESTIMATORS = {
    "NLS": lambda df, groups: rx.NLS(
        "ce ~ z_lo + (z_hi - z_lo) * exp(-beta * (-log(p))**alpha)",
        bounds={"alpha": (0.05, 2.0), "beta": (0.05, 5.0)}).fit(
            df, cov_type="cluster", groups=groups),
    "CPT": lambda df, groups: CPT.from_formula("ce ~ z_hi + z_lo + p", df,
                                               free=("alpha", "gamma")).fit(
        cov_type="cluster", groups=groups),
    "OLS": lambda df, groups: rx.OLS("ce ~ z_hi + z_lo + p").fit(
        df, cov_type="cluster", groups=groups),
}


@pytest.mark.parametrize("name", ESTIMATORS)
def test_groups_series_is_aligned_by_index(name):
    """A shuffled Series gives the column's clusters; before, it was used by position (the
    clusters were a random relabelling of the rows and the standard errors wrong)."""
    estimate, df = ESTIMATORS[name], _data()
    by_column = estimate(df, "id")
    shuffled = df["id"].sample(frac=1.0, random_state=0)
    assert not shuffled.index.equals(df.index)
    wider = pd.concat([shuffled, pd.Series([99, 98], index=[1, 2])])  # extra labels: ignored
    for groups in (shuffled, wider):
        np.testing.assert_allclose(estimate(df, groups).bse, by_column.bse, rtol=1e-10)
    # what position would have given: other clusters, other standard errors
    positional = estimate(df, shuffled.to_numpy())
    assert not np.allclose(positional.bse, by_column.bse, rtol=1e-3)


@pytest.mark.parametrize("name", ESTIMATORS)
def test_groups_series_that_cannot_be_aligned_is_refused(name):
    estimate, df = ESTIMATORS[name], _data()
    with pytest.raises(rx.DataError, match=r"groups is a Series whose index lacks 1 of the "
                                           r"data's row labels \(e\.g\. \[100\]\)"):
        estimate(df, df["id"].iloc[1:])
    repeated = df["id"].set_axis(np.r_[101, 101, np.arange(102, 100 + len(df))])
    with pytest.raises(rx.DataError, match="index differs from the data's and is not unique"):
        estimate(df, repeated)


@pytest.mark.parametrize("name", ESTIMATORS)
def test_missing_cluster_identifiers_are_refused_naming_their_rows(name):
    """The message named no row ("groups contains missing values"): now the count and the
    data's row labels, as df.loc finds them; an array without data's labels: positions."""
    estimate, df = ESTIMATORS[name], _data()
    holes = df.assign(id=df["id"].astype(float))
    holes.loc[[102, 117], "id"] = np.nan
    with pytest.raises(rx.DataError, match=r"groups contains missing values in 2 row\(s\) "
                                           r"\(index \[102, 117\]\)"):
        estimate(holes, "id")
    with pytest.raises(rx.DataError, match=r"in 2 row\(s\) \(index \[102, 117\]\)"):
        estimate(holes, holes["id"].to_numpy())
