"""``completeness lottery|demand``: completeness on real data (SPEC §5)."""

from __future__ import annotations

import argparse

from ..shared.exceptions import ConfigurationError
from .options import Outputs, add_command, add_output_options, count, failure_status, input_file
from .options import seed as seed_type


def register(sub) -> None:
    p = add_command(
        sub, "completeness", help="completeness of the paper's models on real data",
        description="Cross-validated completeness κ̂ (se) of the paper's models against a baseline "
                    "and a flexible benchmark on real data.",
        examples=["completeness lottery --data PATH/ch03_data.csv --out lottery_kappa.nc",
                  "completeness demand --folds 5 --repeats 5 --table csv kappa.csv"])
    p.add_argument("application", choices=["lottery", "demand"])
    p.add_argument("--data", metavar="PATH", type=input_file,
                   help="lottery: path of Bruhin et al. (2010) ch03_data.csv (not shipped)")
    p.add_argument("--folds", type=count(2, "cross-validation needs two folds"), default=None,
                   help="cross-validation folds, at least 2 (default: 10 for lottery, 5 for "
                        "demand)")
    p.add_argument("--repeats", type=count(1), default=None,
                   help="demand: repetitions of K-fold (default 5)")
    p.add_argument("--seed", type=seed_type, default=0, help="fold seed (default 0)")
    add_output_options(p)
    p.set_defaults(func=run)


def run(args: argparse.Namespace) -> int:
    if args.application == "lottery":
        if not args.data:
            raise ConfigurationError("completeness lottery needs --data PATH of ch03_data.csv "
                                     "(Bruhin et al. 2010; not shipped, replication use only)")
        if args.repeats is not None:
            raise ConfigurationError("--repeats applies to completeness demand only (the "
                                     "lottery design is one K-fold split over responses)")
    elif args.data:
        raise ConfigurationError("--data applies to completeness lottery only (demand uses the "
                                 "shipped Nevo cereal data)")
    with Outputs(args) as outputs:
        if args.application == "lottery":
            from ..lottery import completeness as lottery_completeness

            res = lottery_completeness(args.data, folds=args.folds or 10, seed=args.seed)
        else:
            from ..demand import completeness as demand_completeness

            res = demand_completeness(folds=args.folds or 5, repeats=args.repeats or 5,
                                      seed=args.seed)
        print(res.summary())
        outputs.write(res, res.summary(), table=res.estimates,
                      plot=lambda ax: res.plot_estimates(ax=ax))
    est = res.estimates()
    return failure_status(int(est["failed_folds"].sum()), int(est["invalid_rows"].sum()), args)
