"""Which MXL fit reproduces the paper's Tables 3–4 (issue 15)? On the same draws as
``python -m restrictiveness replicate demand`` (seed 0), the mixed logit fitted

* by the package default — the compiled bounded Levenberg–Marquardt, 400 evaluations per fit,
  which converges to the optimum (``MixedLogit()``), and
* as SPEC §7 describes the paper's fit — scipy's ``least_squares(method="dogbox")`` with the
  analytic Jacobian, at most 400 residual evaluations for the fit's starts together, starts put
  on a bound they are within rounding of, both starts always (``MixedLogit(**PAPER_MXL)``);

with r̂ (se) for shares, own- and cross-price elasticities beside the paper's, the distance in
combined SEs, the paired difference between the two fits, and the objectives each reached on
every draw (the converged fit should never be worse than the budget-limited one).

Run: ``python benchmarks/bench_demand_paper_setting.py -M 200 --jobs 2 --checkpoint ckpt
--out paper_setting.nc [--first 0 --last 99]`` (a checkpoint lets the replications run in
pieces; ``--checkpoint ckpt --done`` reports the replications it holds so far);
``--report paper_setting.nc`` only prints the tables of a finished run. ``--settings`` adds
``MXL[dogbox400/start]``, scipy's dogbox with 400 evaluations for each start (the fit before
issue 15, less its stall).
"""

from __future__ import annotations

import argparse
import json
import time
from pathlib import Path

import numpy as np

import restrictiveness as rx
from restrictiveness.cli.replicate import reference_tables

SETTINGS = {"MXL[lm]": dict(),
            "MXL[dogbox400]": dict(rx.demand.PAPER_MXL),
            # the fit before issue 15 (400 evaluations for each of the two starts), less its stall
            "MXL[dogbox400/start]": dict(method="dogbox", budget="start", reflect=False,
                                         starts="both")}
DEFAULT_SETTINGS = ["MXL[lm]", "MXL[dogbox400]"]
DISCREPANCIES = ("shares", "own", "cross")


def make_study(replications: int, ns: list[int], seed: int, settings=DEFAULT_SETTINGS):
    procs = {label: rx.demand.MixedLogit(**SETTINGS[label]) for label in settings}
    return rx.demand.study(procedures=procs, n=ns, replications=replications, seed=seed)


def costs(res, label: str, n: int) -> np.ndarray:
    info = res.dataset["fit_info"].sel(procedure=label, n=n).values
    return np.array([json.loads(str(t)) for t in info])


def report(res) -> None:
    paper = reference_tables()["table_4_demand_profiles"]
    ref = dict(zip(paper["n"], paper["shares_own_cross"]["MXL"], strict=True))
    M = res.dataset.sizes["replication"]
    print(f"M = {M} replications (seed as the CLI's); r̂ (se) [paper] "
          "(paper − ours in combined SE, √2·se)")
    labels = [p for p in SETTINGS if p in res.procedures]
    for n in res.ns:
        for label in labels:
            cells = []
            for d, disc in enumerate(DISCREPANCIES):
                r = float(res.restrictiveness.sel(procedure=label, n=n, discrepancy=disc))
                s = float(res.se.sel(procedure=label, n=n, discrepancy=disc))
                p = ref[n][d] if n in ref else np.nan
                z = (r - p) / np.hypot(s, s)
                cells.append(f"{disc} {r:.3f} ({s:.3f}) [{p:.3f}] ({z:+.1f})")
            print(f"n = {n:3d} {label:<15} " + "   ".join(cells))
        if "MXL[lm]" not in labels:
            continue
        for other in labels[1:]:
            diffs = []
            for disc in DISCREPANCIES:
                c = res.contrast(other, "MXL[lm]", disc)
                diffs.append(f"{disc} {c.loc[n, 'estimate']:+.3f} ({c.loc[n, 'se']:.3f})")
            print(f"n = {n:3d} {other} − lm, paired: " + "   ".join(diffs))
            _objectives(res, n, other)


def _objectives(res, n: int, other: str) -> None:
    """The objective each fit reached: the converged LM against a budget-limited dogbox."""
    lm, db = costs(res, "MXL[lm]", n), costs(res, other, n)
    c_lm = np.array([d["cost"] for d in lm])
    c_db = np.array([d["cost"] for d in db])
    rel = c_lm / c_db - 1
    print(f"n = {n:3d} objective lm/dogbox − 1: min {rel.min():.1e}, median "
          f"{np.median(rel):.1e}, max {rel.max():.1e}; lm worse by > 1e-8 on "
          f"{int((rel > 1e-8).sum())} of {len(rel)}; dogbox: budget exhausted in "
          f"{np.mean([not d['converged'] for d in db]):.0%}, ends at MNL in "
          f"{sum(d['start'] == 'MNL (L = 0)' for d in db)}; lm converged in "
          f"{np.mean([d['converged'] for d in lm]):.0%}")


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("-M", "--replications", type=int, default=200)
    ap.add_argument("-n", type=int, nargs="+", default=[50, 100, 200])
    ap.add_argument("--first", type=int, default=0)
    ap.add_argument("--last", type=int, help="last replication to run (default M − 1)")
    ap.add_argument("--jobs", type=int, default=2)
    ap.add_argument("--seed", type=int, default=0)
    ap.add_argument("--settings", nargs="+", default=DEFAULT_SETTINGS, choices=list(SETTINGS))
    ap.add_argument("--checkpoint")
    ap.add_argument("--out", default="paper_setting.nc")
    ap.add_argument("--done", action="store_true",
                    help="with --checkpoint: report the finished replications it holds")
    ap.add_argument("--report", metavar="FILE.nc", help="print the tables of a finished run")
    args = ap.parse_args()
    if args.report is not None:
        report(rx.load(args.report))
        return
    study = make_study(args.replications, args.n, args.seed, args.settings)
    if args.done:   # report the replications a checkpoint holds, computing nothing
        path = Path(args.checkpoint)
        reps = sorted(int(f.stem.split("-")[1]) for f in path.glob("replication-*.npz"))
        report(study.run(n_jobs=1, checkpoint=path, replications=reps,
                         resume_other_versions=True))
        return
    last = args.replications - 1 if args.last is None else args.last
    t0 = time.perf_counter()
    res = study.run(n_jobs=args.jobs, progress=False, checkpoint=args.checkpoint,
                    replications=range(args.first, last + 1), resume_other_versions=True)
    print(f"replications {args.first}–{last}, n = {args.n}, {args.jobs} jobs: "
          f"{(time.perf_counter() - t0) / 60:.1f} min wall")
    res.to_netcdf(args.out)
    report(res)


if __name__ == "__main__":
    main()
