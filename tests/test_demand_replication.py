"""Tables 3–4 of the paper (M = 200 demand systems; n = 50, 100, 200), with the mixed logit
fitted as the paper did (``rx.demand.study``'s default: ``MixedLogit(**PAPER_MXL)``, scipy's
dogbox under 400 evaluations per fit). Fitted to convergence instead, MXL's cross-price r̂ is
about 0.08 higher (0.476 against the paper's 0.416 at n = 100, 2.5 combined SE; issue 15,
``benchmarks/bench_demand_paper_setting.py``). Slow: about 20 minutes with two workers (2,220
CPU s; the dogbox fits take about four times the compiled fit's time). Run with
``python -m pytest -m slow tests/test_demand_replication.py``."""

from __future__ import annotations

import json
from importlib import resources

import numpy as np
import pytest

import restrictiveness as rx


@pytest.mark.slow
def test_tables_3_4_within_three_combined_standard_errors():
    ref = json.loads(resources.files("restrictiveness").joinpath(
        "data/reference_tables.json").read_text())
    table = ref["table_4_demand_profiles"]
    res = rx.demand.study(replications=200, seed=0).run(n_jobs=-1, progress=False)
    r, se = res.restrictiveness, res.se
    cells = []
    for model in ("MNL", "NL", "MXL"):
        for i, n in enumerate(table["n"]):
            for d, disc in enumerate(("shares", "own", "cross")):
                paper = table["shares_own_cross"][model][i][d]
                ours = float(r.sel(procedure=model, n=n, discrepancy=disc))
                s = float(se.sel(procedure=model, n=n, discrepancy=disc))
                # the paper prints SEs only at n = 100: use ours for both (SPEC's rule)
                cells.append((model, n, disc, ours, paper, (ours - paper) / np.hypot(s, s)))
    # the whole table first (seen with -s), so a failure shows every cell, not the first
    for model, n, disc, ours, paper, z in cells:
        print(f"{model:4s} n={n:3d} {disc:6s} ours {ours:.3f} paper {paper:.3f} z {z:+.2f}")
    assert all(abs(z) <= 3 for *_, z in cells), [c for c in cells if abs(c[-1]) > 3]
    shares = r.sel(discrepancy="shares")
    cross = r.sel(discrepancy="cross")
    assert (shares.sel(procedure="NL") < shares.sel(procedure="MNL")).all()
    assert (shares.sel(procedure="MXL") < shares.sel(procedure="MNL")).all()
    assert (cross.sel(procedure="MXL") > cross.sel(procedure="MNL")).all()
