"""The restrictiveness–completeness frontier table and figure."""

from __future__ import annotations

from types import SimpleNamespace

import matplotlib
import numpy as np
import pandas as pd
import pytest
import xarray as xr

from restrictiveness.analysis.frontier import frontier_table, plot_frontier
from restrictiveness.shared.exceptions import ConfigurationError, DataError

matplotlib.use("Agg")


def _fake(r, k, ns=(50, 100)):
    procs = list(r)
    arr = xr.DataArray(np.array([[[r[p]] * len(ns)] for p in procs]),
                       coords={"procedure": procs, "discrepancy": ["mse"], "n": list(ns)},
                       dims=("procedure", "discrepancy", "n"))
    res = SimpleNamespace(ns=list(ns), discrepancies=["mse"], procedures=procs,
                          restrictiveness=arr, se=arr * 0 + 0.01)
    comp = SimpleNamespace(procedures=list(k), kappa=pd.Series(k), kappa_se=pd.Series(k) * 0 + 0.02)
    return res, comp


def test_dominance_and_values():
    res, comp = _fake({"A": 0.5, "B": 0.3, "C": 0.2, "D": 0.6},
                      {"A": 0.9, "B": 0.8, "C": 0.95, "D": 0.5, "E": 1.0})
    t = frontier_table(res, comp)
    assert list(t.index) == ["A", "B", "C", "D"]  # E has no restrictiveness
    assert t.attrs["n"] == 100
    # B (0.3, 0.8) is dominated by A (0.5, 0.9); A, C, D are not dominated
    assert t["frontier"].to_dict() == {"A": True, "B": False, "C": True, "D": True}
    assert t.loc["C", "completeness"] == 0.95 and t.loc["A", "restrictiveness_se"] == 0.01


def test_errors_and_plot():
    res, comp = _fake({"A": 0.5, "B": 0.3}, {"A": 0.9, "B": 0.8})
    with pytest.raises(ConfigurationError, match="n=7"):
        frontier_table(res, comp, n=7)
    with pytest.raises(ConfigurationError, match="not in both"):
        frontier_table(res, comp, procedures=["A", "Z"])
    # no label in common ("GP" against "GP regression"): both lists named, not "procedures []"
    res2, comp2 = _fake({"GP": 0.1, "CPT": 0.2}, {"GP regression": 1.0, "EV": 0.0})
    with pytest.raises(ConfigurationError, match=r"no procedure is in both results: the "
                                                 r"restrictiveness results have \['GP', 'CPT'\], "
                                                 r"the completeness results \['GP regression', "
                                                 r"'EV'\]"):
        frontier_table(res2, comp2)
    ax = plot_frontier(frontier_table(res, comp))
    assert ax.get_ylabel().startswith("restrictiveness") and len(ax.texts) == 2


def test_frontier_table_refuses_other_objects():
    res, comp = _fake({"A": 0.5}, {"A": 0.9})
    # None or a string was an AttributeError from inside
    with pytest.raises(ConfigurationError, match="takes restrictiveness Results .* got "
                                                 "SimpleNamespace and NoneType"):
        frontier_table(res, None)
    with pytest.raises(ConfigurationError, match="got str and SimpleNamespace"):
        frontier_table("res.nc", comp)
    # a missing table was a TypeError, one without the columns a KeyError
    with pytest.raises(ConfigurationError, match="plot_frontier takes the table of "
                                                 r"frontier_table\(...\).*got NoneType"):
        plot_frontier(None)
    with pytest.raises(ConfigurationError, match="got DataFrame"):
        plot_frontier(pd.DataFrame({"a": [1.0]}))


def test_a_procedure_with_a_nan_estimate_is_refused_not_put_on_the_frontier():
    # NaN compared False both ways: B was reported on the frontier and dominated nothing,
    # though at κ̂ = 0.95 it would dominate A (0.4, 0.9) had its r̂ been 0.5
    res, comp = _fake({"A": 0.4, "B": float("nan")}, {"A": 0.9, "B": 0.95})
    with pytest.raises(DataError, match=r"\['B'\] is not finite"):
        frontier_table(res, comp)
    res, comp = _fake({"A": 0.4, "B": 0.5}, {"A": 0.9, "B": float("nan")})
    with pytest.raises(DataError, match="place on the frontier is unknown"):
        frontier_table(res, comp)
    # leaving it out gives the table of the rest; a NaN SE alone is no obstacle
    res, comp = _fake({"A": 0.4, "B": float("nan")}, {"A": 0.9, "B": 0.95})
    comp.kappa_se = pd.Series({"A": float("nan"), "B": 0.02})
    t = frontier_table(res, comp, procedures=["A"])
    assert t["frontier"].to_dict() == {"A": True} and t.loc["A", "restrictiveness"] == 0.4


def test_an_unknown_discrepancy_or_a_repeated_procedure_is_refused_clearly():
    res, comp = _fake({"A": 0.4, "B": 0.3}, {"A": 0.9, "B": 0.8})
    with pytest.raises(ConfigurationError, match=r"discrepancy 'kl' is not in .*\['mse'\]"):
        frontier_table(res, comp, discrepancy="kl")
    with pytest.raises(ConfigurationError, match="duplicates"):
        frontier_table(res, comp, procedures=["A", "A"])
    with pytest.raises(ConfigurationError, match=r"n='100' is not in"):
        frontier_table(res, comp, n="100")


def test_an_empty_table_is_not_plotted_as_empty_axes():
    res, comp = _fake({"A": 0.4, "B": 0.3}, {"A": 0.9, "B": 0.8})
    table = frontier_table(res, comp)
    with pytest.raises(ConfigurationError, match="no procedure to plot"):
        plot_frontier(table.iloc[:0])
    ax = plot_frontier(table.iloc[:1])
    assert [t.get_text() for t in ax.texts] == ["A"]


def test_one_procedure_given_as_a_string_is_one_label():
    """procedures="A" was read letter by letter: "procedures ['A'] ..." for a one-letter label
    passed by luck, "procedures ['l', 'i', ...] are not in both results" for any other."""
    res, comp = _fake({"linear": 0.5, "B": 0.3}, {"linear": 0.9, "B": 0.8})
    t = frontier_table(res, comp, procedures="linear")
    assert list(t.index) == ["linear"]
    assert t.loc["linear", ["restrictiveness", "completeness"]].tolist() == [0.5, 0.9]
    assert bool(t.loc["linear", "frontier"])
