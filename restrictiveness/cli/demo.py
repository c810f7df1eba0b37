"""``demo``: a small generic study on a monotone eligible set, printed as a summary."""

from __future__ import annotations

import argparse

from . import add_study_options


def register(sub) -> None:
    p = sub.add_parser(
        "demo", help="a small generic restrictiveness study (linear model vs GP regression)",
        description="Restrictiveness of a linear model and of GP regression on rules f(x1, x2) in "
                    "[0, 1], increasing in x1 and decreasing in x2, against a constant baseline.")
    add_study_options(p, n=(25, 50, 100), replications=50)
    p.set_defaults(func=run)


def run(args: argparse.Namespace) -> int:
    from ..analysis.quick import demo_study

    study = demo_study(n=args.n, replications=args.replications, seed=args.seed)
    res = study.run(n_jobs=args.jobs, progress=False if args.no_progress else None,
                    checkpoint=args.checkpoint)
    print(res.summary())
    print("\nPaired contrast linear − GP regression:")
    print(res.contrast("linear", "GP regression").round(4).to_string())
    if args.out:
        res.to_netcdf(args.out)
        print(f"\nresults written to {args.out}")
    return 0
