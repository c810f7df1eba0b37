"""Mixed-logit speed: share kernel vs its NumPy twin vs pyblp, Jacobian and second-order-term
kernels vs twins, and the MXL fit at n = 100 markets on prior samples: the compiled fit (default
options), the compiled fit from both SPEC starts always (``starts="both"``, the default before
the adaptive second start) and scipy's dogbox with 400 evaluations per start from both starts
and no reflected starts (the fit before issue 15, less its stall), side by side (CPU time,
evaluations, objective reached).

Run ``python benchmarks/bench_mxl.py [--samples 60] [--n 100] [--csv out.csv]`` (``--no-fits``
for the kernels only; ``--profile K`` adds where a compiled fit's time goes on the first K
samples: evaluations per start, the fraction of trial steps the optimiser accepts, and the cost
of an evaluation with and without the Jacobian, and with the exact second-order term;
``--budget start`` gives the compiled fit the reference's 400 evaluations per start instead of
the package default's 400 per fit). pyblp is optional: without it the pyblp column is
skipped. Targets (issue 15): median fit under 0.3 s,
90th percentile under 1 s, objective never worse than dogbox's by more than 1e-8 relative.

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
from restrictiveness.demand import fitting
from restrictiveness.demand.models import (
    DEFAULT_FORMULA,
    MARKET_COLUMNS,
    MixedLogit,
    _problem,
    _standard_nodes,
    market_design,
)
from restrictiveness.shared._lsq_nb import python_lm
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
    args = nb._jacobian_args(delta, W, ridx, nu, z, lrow, lcol, None)
    y = np.full(delta.shape, 0.02)
    t_nb = best_of(lambda: nb.shares_jacobian_second_nb(*args, y))
    t_np = best_of(lambda: nb.shares_jacobian_second_numpy(*args, y), 1)
    rows.append({"quantity": "... + second-order term", "numba [ms]": 1e3 * t_nb,
                 "numpy [ms]": 1e3 * t_np, "numpy/numba": t_np / t_nb})
    return pd.DataFrame(rows).set_index("quantity")


def prior_samples(count, n=100, seed=0):
    """Training samples of the first ``count`` replications of a demand study with this seed
    (the same pseudo-truths and markets as ``rx.demand.study(seed=seed)``)."""
    from restrictiveness.demand.prior import DemandPrior
    from restrictiveness.engine.study import truth_rng

    prior = DemandPrior(n_train=n)
    for m in range(count):
        t = prior.draw([n], truth_rng(seed, m))
        yield m, Sample(t.train_locations[0][:n], t.train_y(n), MARKET_COLUMNS, "shares")


def timed_fit(proc, sample):
    t, c = time.perf_counter(), time.process_time()
    fit = proc.fit(sample, None)
    return fit, time.perf_counter() - t, time.process_time() - c


def fit_table(count, n, budget="fit"):
    """The compiled fit (default options but ``budget``), the same from both SPEC starts always
    and scipy's dogbox with 400 evaluations per start from both starts (the fit before issue 15,
    less its stall), on prior samples."""
    fits = {"lm": MixedLogit(budget=budget), "lm both": MixedLogit(budget=budget, starts="both"),
            "dogbox": MixedLogit(method="dogbox", budget="start", max_nfev=400, reflect=False,
                                 starts="both")}
    timed_fit(fits["lm"], next(prior_samples(1, n))[1])   # compile / load the cache
    rows = []
    for m, sample in prior_samples(count, n):
        row = {"replication": m}
        for k, proc in fits.items():
            fit, wall, cpu = timed_fit(proc, sample)
            row.update({f"{k} cpu [s]": cpu, f"{k} wall [s]": wall,
                        f"{k} nfev": fit.info["nfev"], f"{k} converged": fit.info["converged"],
                        f"{k} cost": fit.info["cost"]})
        row["MNL cost"] = fit.info["mnl_cost"]
        rows.append(row)
        print(f"  replication {m}: lm {row['lm cpu [s]']:.2f} s ({row['lm nfev']} evaluations), "
              f"lm both {row['lm both cpu [s]']:.2f} s ({row['lm both nfev']}), dogbox "
              f"{row['dogbox cpu [s]']:.2f} s; cost lm/dogbox - 1 = "
              f"{row['lm cost'] / row['dogbox cost'] - 1:+.2e}", flush=True)
    return pd.DataFrame(rows).set_index("replication")


#: Relative gaps to a start's final objective at which --profile counts evaluations.
TAIL_TOLERANCES = (1e-3, 1e-6, 1e-8)


def profile_table(count, n):
    """Where the compiled fit's time goes on the first ``count`` samples: per sample the fit's
    CPU time, its evaluations (MNL stage apart), the evaluations of the two SPEC starts and how
    many of their trial points were accepted (the same solver run as Python around the compiled
    callback, which records every evaluation), and the CPU time of one evaluation with the
    Jacobian (the optimiser's callback) and of the shares alone, at the fitted parameters; and
    how many of the starts' evaluations came before each came within 1e-3, 1e-6 and 1e-8 of its
    final objective (the rest is the convergence tail)."""
    proc = MixedLogit()
    timed_fit(proc, next(prior_samples(1, n))[1])
    costs = []

    def recording(x, data):
        r, J = nb.mxl_resjac_root(x, data)
        costs.append(float(r @ r))
        return r, J

    def recording_second(x, data):
        r, J, S = nb.mxl_resjac_root_second(x, data)
        costs.append(float(r @ r))
        return r, J, S

    twin = python_lm(recording, "bench_recording", recording_second)
    rows = []
    for m, sample in prior_samples(count, n):
        fit, _, cpu = timed_fit(proc, sample)
        X, y, design, W, _, present = proc._prepare(sample)
        prob = _problem("MXL", W, y, proc._extra(design.names), present)
        diag = prob.lo[len(fit.info["mnl_params"]):] == 0.0     # Cholesky diagonals
        spec = accepted = 0
        reach = {tol: 0 for tol in TAIL_TOLERANCES}
        for c in (0.5, 1.0):
            x0 = prob.encode(np.r_[fit.info["mnl_params"], np.where(diag, c, 0.0)])
            costs.clear()
            twin(x0, prob.x_lo, prob.x_hi, prob.free, prob.data, fitting.MAX_NFEV,
                 fitting.GTOL, fitting.XTOL, fitting.FTOL)
            # a trial is accepted exactly when it lowers the best objective so far
            best = np.minimum.accumulate(costs)
            spec += len(costs)
            accepted += int(np.sum(np.asarray(costs[1:]) < best[:-1]))
            for tol in TAIL_TOLERANCES:   # evaluations until within tol of the start's end
                reach[tol] += int(np.argmax(best <= best[-1] * (1 + tol))) + 1
        x = prob.encode(fit.params)
        d, nuT = nb._mean_utility_and_nodes(fit.params, prob.data[0], prob.data[4],
                                            prob.data[5], prob.data[6], len(prob.data[3]))
        t_full = best_of(lambda x=x, prob=prob: nb.mxl_resjac_root(x, prob.data), 10)
        t_second = best_of(lambda x=x, prob=prob: nb.mxl_resjac_root_second(x, prob.data), 10)
        t_res = best_of(lambda d=d, nuT=nuT, prob=prob: nb.mean_probabilities_nb(
            d, prob.data[1], nuT, prob.data[7]), 10)
        rows.append({"replication": m, "fit cpu [s]": cpu, "evaluations": fit.info["nfev"],
                     "starts": len(fit.info["starts"]), "SPEC starts' evaluations": spec,
                     "accepted fraction": accepted / max(spec - 2, 1),
                     **{f"to {tol:.0e}": reach[tol] for tol in TAIL_TOLERANCES},
                     "evaluation [ms]": 1e3 * t_full, "with S [ms]": 1e3 * t_second,
                     "shares only [ms]": 1e3 * t_res})
    df = pd.DataFrame(rows).set_index("replication")
    print(f"\nWhere an MXL fit's time goes (n = {n}, first {count} samples)")
    print(df.to_string())
    per_eval = df["evaluation [ms]"].median() / 1e3
    print(f"  median: {df['evaluations'].median():.0f} evaluations x "
          f"{1e3 * per_eval:.2f} ms = {df['evaluations'].median() * per_eval:.3f} s of a "
          f"{df['fit cpu [s]'].median():.3f} s fit; trial steps accepted "
          f"{df['accepted fraction'].median():.0%}; the shares alone are "
          f"{df['shares only [ms]'].median() / df['evaluation [ms]'].median():.0%} of an "
          f"evaluation, the exact second-order term adds "
          f"{df['with S [ms]'].median() / df['evaluation [ms]'].median() - 1:.0%}")
    total = df["SPEC starts' evaluations"].sum()
    print("  the SPEC starts' evaluations until within a relative tolerance of where each start "
          "ends: " + ", ".join(f"{tol:.0e}: {df[f'to {tol:.0e}'].sum() / total:.0%}"
                               for tol in TAIL_TOLERANCES)
          + f" of {total}")
    return df


def summarise(df, n, budget):
    q = [0.0, 0.1, 0.5, 0.9, 1.0]
    print(f"\nMXL fit at n = {n}: {len(df)} prior samples (first replications of seed 0); lm "
          f"budget={budget!r}, 'lm both' the same from both SPEC starts always, dogbox 400 "
          f"evaluations per start")
    fits = ("lm", "lm both", "dogbox")
    for k in fits:
        t = df[f"{k} cpu [s]"]
        print(f"  {k:>7}: CPU median {t.median():.3f} s, 90th percentile {t.quantile(0.9):.3f} s,"
              f" max {t.max():.3f} s; evaluations median {df[f'{k} nfev'].median():.0f}, 90th "
              f"percentile {df[f'{k} nfev'].quantile(0.9):.0f}; converged "
              f"{df[f'{k} converged'].mean():.0%}")
    print(f"  speed-up (dogbox / lm, median CPU): "
          f"{df['dogbox cpu [s]'].median() / df['lm cpu [s]'].median():.1f}x")
    for a, b in (("lm", "dogbox"), ("lm", "lm both"), ("lm both", "dogbox")):
        rel = df[f"{a} cost"] / df[f"{b} cost"] - 1
        print(f"  objective {a} / {b} - 1, quantiles " + ", ".join(
            f"{int(100 * p)}%: {v:+.2e}" for p, v in zip(q, rel.quantile(q), strict=True))
            + f"; worse by more than 1e-8 relative: {(rel > 1e-8).sum()} of {len(df)}, better: "
              f"{(rel < -1e-8).sum()}")
    print("  fits ending at the MNL objective: " + ", ".join(
        f"{k} {(df[f'{k} cost'] >= df['MNL cost']).sum()}" for k in fits))


def main():
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--samples", type=int, default=60, help="prior pseudo-truths to fit")
    ap.add_argument("--n", type=int, default=100, help="training markets")
    ap.add_argument("--no-fits", action="store_true", help="time the kernels only")
    ap.add_argument("--csv", help="write the per-sample table here")
    ap.add_argument("--profile", type=int, default=0, metavar="K",
                    help="also profile the compiled fit on the first K samples")
    ap.add_argument("--budget", choices=["fit", "start", "converge"], default="fit",
                    help="the compiled fit's budget (default 'fit', the package default; "
                         "'start' gives it the dogbox reference's 400 per start)")
    args = ap.parse_args()
    rng = np.random.default_rng(12345)
    pd.set_option("display.width", 160)
    pd.set_option("display.float_format", lambda v: f"{v:.4g}")
    print(f"MXL share kernels (best of repeats; load average {os.getloadavg()[0]:.1f} on "
          f"{os.cpu_count()} cores)")
    print(kernel_table(rng).to_string())
    if args.profile:
        profile_table(args.profile, args.n)
    if args.no_fits:
        return
    df = fit_table(args.samples, args.n, args.budget)
    if args.csv:
        df.to_csv(args.csv)
    summarise(df, args.n, args.budget)
    print(f"load average {os.getloadavg()[0]:.1f} on {os.cpu_count()} cores")


if __name__ == "__main__":
    main()
