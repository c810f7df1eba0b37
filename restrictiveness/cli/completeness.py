"""``completeness lottery|demand``: completeness on real data (SPEC §5)."""

from __future__ import annotations

import argparse

from ..shared.exceptions import ConfigurationError


def register(sub) -> None:
    p = sub.add_parser(
        "completeness", help="completeness of the paper's models on real data",
        description="Cross-validated completeness κ̂ (se) of the paper's models against a baseline "
                    "and a flexible benchmark on real data.")
    p.add_argument("application", choices=["lottery", "demand"])
    p.add_argument("--data", metavar="PATH",
                   help="lottery: path of Bruhin et al. (2010) ch03_data.csv (not shipped)")
    p.add_argument("--folds", type=int, default=None,
                   help="cross-validation folds (default: 10 for lottery, 5 for demand)")
    p.add_argument("--repeats", type=int, default=5, help="demand: repetitions of K-fold")
    p.add_argument("--seed", type=int, default=0, help="fold seed (default 0)")
    p.add_argument("--out", metavar="FILE.nc", help="write the results to NetCDF")
    p.set_defaults(func=run)


def run(args: argparse.Namespace) -> int:
    if args.application == "lottery":
        if not args.data:
            raise ConfigurationError("completeness lottery needs --data PATH of ch03_data.csv "
                                     "(Bruhin et al. 2010; not shipped, replication use only)")
        from ..lottery import completeness

        res = completeness(args.data, folds=args.folds or 10, seed=args.seed)
    else:
        from ..demand import completeness

        res = completeness(folds=args.folds or 5, repeats=args.repeats, seed=args.seed)
    print(res.summary())
    if args.out:
        res.to_netcdf(args.out)
        print(f"\nresults written to {args.out}")
    return 0
