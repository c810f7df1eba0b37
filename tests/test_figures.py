"""Figures rendered with the Agg backend and inspected through their artists: labels in Greek
that never overlap, the baseline and benchmark marked, interval levels stated, r = 1 and log-n
in profiles, Γ* marked in sensitivity plots.

Set ``RX_FIGURES=dir`` to also save each figure as a PNG there (to look at them).
"""

from __future__ import annotations

import itertools
import os
from pathlib import Path

import matplotlib
import numpy as np
import pandas as pd
import pytest
import xarray as xr

from restrictiveness.analysis.frontier import plot_frontier
from restrictiveness.engine.results import Results

matplotlib.use("Agg")
import matplotlib.pyplot as plt  # noqa: E402
from matplotlib.collections import PathCollection  # noqa: E402

NS = [50, 100, 200]


@pytest.fixture(autouse=True)
def _close():
    yield
    plt.close("all")


def _save(ax, name):
    where = os.environ.get("RX_FIGURES")
    if where:
        ax.figure.savefig(Path(where) / f"fig_{name}.png", dpi=120, bbox_inches="tight")


def _texts_do_not_overlap(ax):
    renderer = ax.figure.canvas.get_renderer()
    boxes = [t.get_window_extent(renderer) for t in ax.texts]
    for a, b in itertools.combinations(boxes, 2):
        assert not a.overlaps(b), (a, b)
    return boxes


def _results(factors, m=60, seed=0):
    rng = np.random.default_rng(seed)
    base = rng.exponential(size=(1, len(NS), m)) + 0.1
    loss = np.stack([f * base * rng.lognormal(0.0, 0.3, size=base.shape) for f in factors.values()])
    ds = xr.Dataset({"loss": (("procedure", "discrepancy", "n", "replication"), loss),
                     "baseline_loss": (("discrepancy", "n", "replication"), base)},
                    coords={"procedure": list(factors), "discrepancy": ["mse"], "n": NS,
                            "replication": np.arange(m)}, attrs={"baseline": "constant"})
    return Results(ds)


def _frontier_table():
    # CPT(delta) and CPT(alpha,delta) nearly coincide, as in the paper's lottery frontier.
    idx = pd.Index(["CPT(alpha,gamma,delta)", "CPT(gamma,delta)", "CPT(alpha,delta)",
                    "CPT(delta)", "EU", "GP regression"], name="procedure")
    t = pd.DataFrame({"restrictiveness": [0.17, 0.21, 0.402, 0.405, 0.55, 0.02],
                      "restrictiveness_se": [0.01, 0.01, 0.01, 0.01, 0.02, 0.005],
                      "completeness": [0.92, 0.90, 0.801, 0.800, 0.6, 1.0],
                      "completeness_se": [0.02, 0.02, 0.02, 0.02, 0.03, 0.01],
                      "frontier": [True, True, True, False, True, True]}, index=idx)
    t.attrs.update({"n": 100, "discrepancy": "mse"})
    return t


def test_frontier_labels_greek_apart_and_references_marked():
    ax = plot_frontier(_frontier_table(), level=0.9)
    _save(ax, "frontier")
    assert [t.get_text() for t in ax.texts] == [
        "CPT(α,γ,δ)", "CPT(γ,δ)", "CPT(α,δ)", "CPT(δ)", "EU", "GP regression"]
    _texts_do_not_overlap(ax)
    # no label covers a point either
    renderer = ax.figure.canvas.get_renderer()
    pts = ax.transData.transform(_frontier_table()[["completeness", "restrictiveness"]])
    for t in ax.texts:
        box = t.get_window_extent(renderer)
        assert not any(box.contains(x, y) for x, y in pts), t.get_text()
    # each label is nearest its own point (CPT(α,γ,δ) once sat beside CPT(γ,δ)'s marker),
    # and inside the axes
    for i, t in enumerate(ax.texts):
        box = t.get_window_extent(renderer)
        gaps = [np.hypot(max(box.x0 - x, 0, x - box.x1), max(box.y0 - y, 0, y - box.y1))
                for x, y in pts]
        assert int(np.argmin(gaps)) == i, (t.get_text(), gaps)
        assert ax.bbox.x0 <= box.x0 and box.x1 <= ax.bbox.x1, t.get_text()
    verticals = sorted(ln.get_xdata()[0] for ln in ax.lines
                       if np.ptp(ln.get_xdata()) == 0 and len(ln.get_xdata()) == 2)
    horizontals = [ln.get_ydata()[0] for ln in ax.lines
                   if np.ptp(ln.get_ydata()) == 0 and len(ln.get_ydata()) == 2]
    assert verticals == [0.0, 1.0] and 1.0 in horizontals
    legend = [t.get_text() for t in ax.get_legend().get_texts()]
    assert any("benchmark" in s for s in legend) and any("baseline" in s for s in legend)
    assert any("90% normal interval" in s for s in legend)
    # the error bars have the stated level: half-width z_0.95 · se
    bars = [c for c in ax.collections if len(c.get_segments()) == 5]
    half = np.ptp(bars[0].get_segments()[0][:, 0]) / 2
    assert half == pytest.approx(1.6449 * 0.02, rel=1e-3)


def test_profile_has_r1_line_log_n_and_stated_level():
    res = _results({"CPT(alpha,delta)": 0.3, "linear": 0.6})
    ax = res.plot_profile(log_n=True, level=0.9)
    _save(ax, "profile")
    labels = [ln.get_label() for ln in ax.lines]
    assert labels[:2] == ["CPT(α,δ)", "linear"] and labels[2].startswith("baseline, r = 1")
    np.testing.assert_array_equal(ax.lines[2].get_ydata(), [1.0, 1.0])
    assert ax.get_xscale() == "log"
    assert [t.get_text() for t in ax.get_xticklabels()] == ["50", "100", "200"]
    assert "90%" in ax.get_legend().get_title().get_text()
    np.testing.assert_allclose(ax.lines[0].get_ydata(),
                               res.restrictiveness.sel(procedure="CPT(alpha,delta)",
                                                       discrepancy="mse"))
    assert res.plot_profile().get_xscale() == "linear"


def test_sensitivity_title_label_and_critical_gamma():
    res = _results({"C_delta": 0.52, "C_gamma": 0.45})
    ax = res.plot_sensitivity("C_delta-C_gamma", gamma_max=3.0, points=41)
    _save(ax, "sensitivity")
    title = ax.get_title()
    assert "C_delta" not in title and "C$_δ$ − C$_γ$" in title and "Sensitivity" in title
    assert ax.get_ylabel() != "bounds" and "bounds" in ax.get_ylabel()
    crit = res.critical_gamma("C_delta-C_gamma", gamma_max=3.0)
    marked = {float(c.get_offsets()[0, 0]) for c in ax.collections
              if isinstance(c, PathCollection) and c.get_offsets()[0, 1] == 0}
    expect = {float(g) for g in crit if np.isfinite(g) and 1 <= g <= 3}
    assert expect, "the example must have a finite Γ* to mark"
    assert marked == expect
    legend = [t.get_text() for t in ax.get_legend().get_texts()]
    assert sum(s.startswith("Γ* =") for s in legend) == len(expect)
