"""``demo``: a small generic study on a monotone eligible set, printed as a summary."""

from __future__ import annotations

import argparse

from .options import (
    Outputs,
    add_command,
    add_study_options,
    check_study_args,
    estimates_table,
    run_study,
    study_status,
)


def register(sub) -> None:
    p = add_command(
        sub, "demo", help="a small generic restrictiveness study (linear model vs GP regression)",
        description="Restrictiveness of a linear model and of GP regression on rules f(x1, x2) in "
                    "[0, 1], increasing in x1 and decreasing in x2, against a constant baseline.",
        examples=["demo", "demo -M 200 --n 50 100 --out demo.nc --plot demo.png"])
    add_study_options(p, n=(25, 50, 100), replications=50)
    p.set_defaults(func=run)


def run(args: argparse.Namespace) -> int:
    from ..analysis.quick import demo_study

    check_study_args(args)
    with Outputs(args) as outputs:
        study = demo_study(n=args.n, replications=args.replications, seed=args.seed)
        res = run_study(study, args)
        print(res.summary())
        print("\nPaired contrast linear − GP regression:")
        print(res.contrast("linear", "GP regression").round(4).to_string())
        outputs.write(res, res.summary(), table=lambda: estimates_table(res),
                      plot=lambda ax: res.plot_profile(ax=ax))
    return study_status(res, args)
