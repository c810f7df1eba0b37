"""Mixed-logit speed: share kernel vs its NumPy twin vs pyblp, Jacobian kernel vs twin, and the
MXL fit at n = 100 markets (dogbox vs trf within the 400-evaluation budget).

Run ``python benchmarks/bench_mxl.py`` (add ``--draws 5`` for more fit comparisons,
``--no-prior`` to fit only shares simulated from a known MXL). pyblp is optional: without it the
pyblp column is skipped.

"Shares for given parameters" is timed apples to apples: 100 markets × 24 products, the same
512 antithetic nodes and the same (β, L) for every implementation; pyblp's number is
``ProblemResults.compute_shares(delta=...)`` on a problem whose agent data carry our nodes, and
its shares are checked against ours.
"""

from __future__ import annotations

import argparse
import os
import time

import numpy as np
import pandas as pd

from restrictiveness.demand import _logit_nb as nb
from restrictiveness.demand.models import (
    DEFAULT_FORMULA,
    MARKET_COLUMNS,
    DemandFit,
    MixedLogit,
    _standard_nodes,
    market_design,
)
from restrictiveness.shared.sample import Sample


def best_of(f, repeat=50):
    f()
    ts = []
    for _ in range(repeat):
        t = time.perf_counter()
        f()
        ts.append(time.perf_counter() - t)
    return min(ts)


def markets(n, rng):
    return np.stack([rng.uniform(0.05, 0.2, (n, 24)), rng.uniform(0, 20, (n, 24)),
                     rng.integers(0, 2, (n, 24)).astype(float)], axis=2)


def pyblp_shares(X, delta, L, z, rng):
    """pyblp's shares at the same delta, Cholesky root and nodes; returns (shares, timer)."""
    import pyblp

    pyblp.options.verbose = False
    n, J, _ = X.shape
    zf = np.concatenate([z, -z])
    ours = nb.mxl_shares(delta, market_design(DEFAULT_FORMULA, X)[0], np.arange(4), z @ L.T)
    products = pd.DataFrame({"market_ids": np.repeat(np.arange(n), J),
                             "prices": X[:, :, 0].ravel(), "sugar": X[:, :, 1].ravel(),
                             "mushy": X[:, :, 2].ravel(), "shares": ours.ravel()})
    for k in range(6):   # instruments are required by the Problem, unused here
        products[f"demand_instruments{k}"] = rng.standard_normal(n * J)
    agents = pd.DataFrame({"market_ids": np.repeat(np.arange(n), len(zf)),
                           "weights": 1 / len(zf)})
    for k in range(zf.shape[1]):
        agents[f"nodes{k}"] = np.tile(zf[:, k], n)
    form = pyblp.Formulation("1 + prices + sugar + mushy")
    problem = pyblp.Problem((form, form), products, agent_data=agents)
    results = problem.solve(sigma=L, optimization=pyblp.Optimization("return"), method="1s")
    d = delta.reshape(-1, 1)
    shares = results.compute_shares(delta=d).reshape(n, J)
    return shares, lambda: results.compute_shares(delta=d)


def kernel_table(rng):
    n = 100
    X = markets(n, rng)
    W, _ = market_design(DEFAULT_FORMULA, X)
    W = np.ascontiguousarray(W)
    beta = np.array([-3.0, -10.0, 0.05, 0.3])
    L = np.diag([0.5, 1.0, 0.04, 0.4])
    L[2, 0] = 0.01
    z = np.ascontiguousarray(_standard_nodes(4, 256, 20260207))
    nu = np.ascontiguousarray(z @ L.T)
    delta = np.ascontiguousarray(W @ beta)
    ridx = np.arange(4, dtype=np.int64)
    lrow, lcol = (a.astype(np.int64) for a in np.tril_indices(4))
    rows = []
    t_nb = best_of(lambda: nb.mxl_shares(delta, W, ridx, nu))
    t_np = best_of(lambda: nb.mxl_shares_numpy(delta, W, ridx, nu), 5)
    row = {"quantity": "shares (100 markets x 512 nodes)", "numba [ms]": 1e3 * t_nb,
           "numpy [ms]": 1e3 * t_np, "numpy/numba": t_np / t_nb}
    try:
        s_pb, timer = pyblp_shares(X, delta, L, z, rng)
        t_pb = best_of(timer, 5)
        err = np.abs(s_pb - nb.mxl_shares(delta, W, ridx, nu)).max()
        row.update({"pyblp [ms]": 1e3 * t_pb, "pyblp/numba": t_pb / t_nb,
                    "max |pyblp - ours|": err})
    except ImportError:
        pass
    rows.append(row)
    t_nb = best_of(lambda: nb.mxl_jacobian(delta, W, ridx, nu, z, lrow, lcol))
    t_np = best_of(lambda: nb.mxl_jacobian_numpy(delta, W, ridx, nu, z, lrow, lcol), 3)
    rows.append({"quantity": "shares + Jacobian (14 params)", "numba [ms]": 1e3 * t_nb,
                 "numpy [ms]": 1e3 * t_np, "numpy/numba": t_np / t_nb})
    return pd.DataFrame(rows).set_index("quantity")


def fit_samples(draws, use_prior, rng):
    """(name, Sample) pairs at n = 100: a known MXL, then pseudo-truths from the demand prior."""
    out = []
    X = markets(100, rng)
    proc = MixedLogit()
    d_names = market_design(DEFAULT_FORMULA, X)[1]
    ex = proc._extra(d_names)
    from restrictiveness.demand.models import _Design

    d = _Design(DEFAULT_FORMULA, X, MARKET_COLUMNS)
    true = np.r_[-3, -10, 0.05, 0.3, 0.5, 0, 1.0, 0, 0, 0.02, 0, 0, 0, 0.5]
    truth = DemandFit("MXL", true, proc.parameter_names(d_names), d, MARKET_COLUMNS,
                      extra={k: ex[k] for k in ("K", "ridx", "lrow", "lcol", "z")})
    out.append(("known MXL", Sample(X, truth.predict(X), MARKET_COLUMNS, "shares")))
    if use_prior:
        try:
            from restrictiveness.demand.prior import DemandPrior

            prior = DemandPrior()
            for k in range(draws):
                t = prior.draw([100], rng)
                out.append((f"prior draw {k}", Sample(t.train_locations[0][:100],
                                                      t.train_y(100), MARKET_COLUMNS,
                                                      "shares")))
        except Exception as exc:   # the prior is another module; report and go on
            print(f"(demand prior unavailable: {exc!r})")
    return out


def fit_table(samples):
    rows = []
    for name, s in samples:
        row = {"sample": name}
        for method in ("dogbox", "trf"):
            t, c = time.perf_counter(), time.process_time()
            fit = MixedLogit(method=method).fit(s, np.random.default_rng(0))
            row[f"{method} wall [s]"] = time.perf_counter() - t
            row[f"{method} cpu [s]"] = time.process_time() - c
            row[f"{method} SSR"] = 2 * fit.info["cost"]
            row[f"{method} nfev"] = fit.info["nfev"]
        rows.append(row)
    df = pd.DataFrame(rows).set_index("sample")
    df["SSR trf/dogbox"] = df["trf SSR"] / df["dogbox SSR"]
    return df


def main():
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--draws", type=int, default=3, help="prior pseudo-truths to fit")
    ap.add_argument("--no-prior", action="store_true", help="skip the demand-prior samples")
    ap.add_argument("--no-fits", action="store_true", help="time the kernels only")
    args = ap.parse_args()
    rng = np.random.default_rng(12345)
    pd.set_option("display.width", 160)
    pd.set_option("display.float_format", lambda v: f"{v:.4g}")
    print(f"MXL share kernels (best of repeats; load average {os.getloadavg()[0]:.1f} on "
          f"{os.cpu_count()} cores)")
    print(kernel_table(rng).to_string())
    if args.no_fits:
        return
    print("\nMXL fits at n = 100 (2 starts x max_nfev = 400; nfev includes the MNL stage;"
          " cpu = process CPU time, the wall time on a busy machine is longer)")
    print(fit_table(fit_samples(args.draws, not args.no_prior, rng)).to_string())


if __name__ == "__main__":
    main()
